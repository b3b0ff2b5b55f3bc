// Package store is trit's persistent state, the only package that uses bbolt.
//
// One file holds, for the gateway agent, content-addressed model bundles, the
// active/previous model slots, the highest release installed per model, the
// device session counter, deployment job records and a bounded outbox of
// MQTT messages; and for the fleet service, JSON document collections.
// names.go lists every bucket and key with its encoding.
//
// Conventions, after bbolt's own:
//   - Open waits at most Options.Timeout for the file lock, then fails with
//     ErrLocked; a nil *Options means defaults.
//   - The schema version lives in the meta bucket; pending migrations run in
//     one write transaction at Open, and a file from a newer program is
//     ErrSchemaTooNew.
//   - Each method is one short transaction. Values are copied out before the
//     transaction ends, since bbolt memory is invalid afterwards.
//   - Errors wrap sentinels (ErrNotFound, ErrLocked, ...); a stored value that
//     cannot be decoded is a *CorruptError naming bucket and key.
//   - Open checks the file before writing to it (file.go): an empty,
//     truncated or structurally damaged file, or one without trit's schema,
//     is a *DamagedError naming the file, left as it was; Options.StartFresh
//     moves it aside and starts empty. A missing file is created atomically.
//     bbolt panics on damaged pages; every transaction runs in a guard that
//     turns such a panic into an error instead of ending the process.
//   - A reserve of free space (reserve.go) keeps essential writes (job
//     events and records, the session counter, model slots) working when
//     the disk is full; ordinary ones (telemetry, bundles) never use it.
//   - Backup and WriteTo copy the database while it is in use.
//
// Slot invariant (see slot.go): at every commit point there is an active slot
// whose bundle bytes are stored, unless no model was ever installed. A crash
// leaves the old model or the new one active, never neither and never half.
package store
