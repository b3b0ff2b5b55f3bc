// Package fleet is trit-fleet's service: it keeps the model and bundle
// registry, the device inventory, the rollouts, the shadow gates, the
// remote-training jobs, the operators and the audit trail in its store
// (store.Database), takes device messages in (Deliver), steps the rollouts
// (Tick) and publishes bundles and signed deployment commands through a
// Publisher. It knows no transport and no process: package fleet/server
// is the shell around it (CLI, configuration, broker adapters, the HTTP
// API), and fleet/console its web console.
//
// The rollout engine is package fleet/rollout: a plain, persisted value
// whose decisions (who to notify, when to stop, the abort criterion
// evaluated once in AbortStatus) depend only on its own fields and the
// time given, so a restarted service resumes every rollout exactly.
// engine.go names its types here for the service's callers.
package fleet
