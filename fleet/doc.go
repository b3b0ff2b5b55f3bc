// Package fleet is trit-fleet's service: it keeps the model and bundle
// registry, the device inventory, the rollouts, the shadow gates, the
// remote-training jobs, the operators and the audit trail in its store
// (store.Database), takes device messages in (Deliver), steps the rollouts
// (Tick) and publishes bundles and signed deployment commands through a
// Publisher. It knows no transport and no process: package fleet/server
// is the shell around it (CLI, configuration, broker adapters, the HTTP
// API), and fleet/console its web console.
//
// rollout.go holds the rollout engine: a plain, persisted value whose
// decisions (who to notify, when to stop) depend only on its own fields and
// the time given, so a restarted service resumes every rollout exactly.
// abort.go is its abort criterion, evaluated once (AbortStatus): the
// engine acts on that evaluation and the console shows it.
package fleet
