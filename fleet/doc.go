// Package fleet is trit-fleet, the central service: it keeps the model and
// bundle registry, the device inventory and the rollouts in the store,
// publishes bundles and signed deployment commands over MQTT, and serves
// tritctl's HTTP API.
//
// rollout.go holds the rollout engine: a plain, persisted value whose
// decisions (who to notify, when to stop) depend only on its own fields and
// the time given, so a restarted service resumes every rollout exactly.
package fleet
