// Package fleet is trit-fleet's service: it keeps the model and bundle
// registry, the device inventory, the rollouts, the shadow gates, the
// remote-training jobs, the operators and the audit trail (fleet/access)
// in its store (store.Database), takes device messages in (Deliver), steps the rollouts
// (Tick) and publishes bundles and signed deployment commands through a
// Publisher. It knows no transport and no process: package fleet/server
// is the shell around it (CLI, configuration, broker adapters, the HTTP
// API), and fleet/console its web console.
//
// The rollout engine is package fleet/rollout: a plain, persisted value
// whose decisions (who to notify, when to stop, the abort criterion
// evaluated once in AbortStatus) depend only on its own fields and the
// time given, so a restarted service resumes every rollout exactly. The
// service and its callers (the server, the console) use its names
// directly: rollout.Rollout, rollout.Report, rollout.AbortStatus.
//
// Lock order (lockorder_test.go checks it against the source): a
// goroutine holding one of these takes only those after it.
//  1. Service.mu serialises the changes to rollouts: the intake's batches,
//     the tick's steps, an operator's create, pause, resume, abort. It is
//     taken before a store transaction begins, never inside one.
//  2. A store transaction (Database.Update, View; leaderUpdate): its
//     writer lock is the database's, and a transaction waiting for
//     Service.mu while its holder waits for the writer would deadlock.
//  3. leadership.mu, the lease's deadline and term: read under Service.mu
//     by a step (leaderUpdate) and by ReleaseLead.
//
// Leaves, each held only for its own fields, taking no other lock and
// calling nothing that does: intake.mu, fairQueue.mu, extras.mu,
// labelPuller.mu, requests.mu, trainer.mu, windowDamage.mu. (The audit
// trail's and the sign-in throttle's locks are fleet/access's, leaves
// too.)
package fleet
