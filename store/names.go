package store

// Every bucket and key name the store uses is declared in this file, so the
// on-disk layout can be read in one place. Buckets are created only by
// migrations (schema.go); a new bucket means a new migration.
//
// Encodings used below:
//   - u64: 8-byte big-endian unsigned integer.
//   - JSON: encoding/json of an unexported record type in the named file.
//   - text: the UTF-8 bytes of a Go string.

var (
	// bucketMeta holds database-wide metadata.
	//   key keySchemaVersion -> u64 schema version (see schema.go).
	bucketMeta = []byte("meta")

	// bucketBundles holds agent model bundles, content-addressed.
	//   key: text, lowercase hex SHA-256 of the value (64 bytes)
	//   value: the raw bundle bytes, exactly as fetched.
	bucketBundles = []byte("bundles")

	// bucketSlots holds the agent's model slots (slot.go).
	//   key keyActive | keyPrevious | keyFailed | keyShadow -> JSON slotRecord
	//   (keyShadow: the candidate scored in shadow, state InstallShadow).
	bucketSlots = []byte("slots")

	// bucketReleases holds the highest release counter ever installed per
	// model, for anti-rollback checks.
	//   key: text model ID -> u64 highest release.
	bucketReleases = []byte("releases")

	// bucketDevice holds small device-wide state.
	//   key keySession -> u64 session counter (last value returned).
	//   key keyHighestJobSeq -> u64 highest job sequence ever recorded
	//     (job.go); kept when PruneJobs deletes the jobs themselves. Absent
	//     in databases written before it existed: then the jobs are scanned.
	//   key keyInstance -> u64 random, non-zero: the database's instance ID
	//     (device.go); drawn on first use, so absent in a new database.
	bucketDevice = []byte("device")

	// bucketJobs holds one idempotency record per deployment job (job.go).
	//   key: text rollout ID, one 0x00 byte, u64 sequence number
	//   value: JSON jobRecord.
	bucketJobs = []byte("jobs")

	// bucketOutbox holds queued outgoing MQTT messages (outbox.go). The
	// bucket's own sequence (NextSequence) numbers the messages.
	//   key: u64 message sequence number, so cursor order is FIFO
	//   value: binary outbox record (encodeOutboxRecord).
	bucketOutbox = []byte("outbox")

	// bucketOutboxMeta holds running totals of bucketOutbox, kept in the same
	// transaction as every outbox change so they never need a rescan.
	//   key keyOutboxCount   -> u64 number of queued messages
	//   key keyOutboxBytes   -> u64 sum of len(value) over bucketOutbox
	//   key keyOutboxDropped -> u64 messages dropped to respect the bound, ever
	//   key keyReserve       -> Options.Reserve zero bytes: the ballast whose
	//     pages essential writes get when the disk is full (reserve.go);
	//     absent while released
	bucketOutboxMeta = []byte("outbox_meta")

	// bucketStats holds named statistics snapshots (stat.go).
	//   key: text name -> opaque caller bytes; names in use: StatSamples,
	//   StatHistory.
	bucketStats = []byte("stats")

	// Fleet document collections (collection.go); see collectionBuckets.
	//   key: text document key -> JSON document of the caller's type.

	// bucketFleetModels holds the fleet's model registry, keyed by model ID.
	bucketFleetModels = []byte("fleet_models")
	// bucketFleetBundles holds the fleet's bundle metadata, keyed by the
	// bundle's SHA-256 hex (raw bytes may live in bucketBundles).
	bucketFleetBundles = []byte("fleet_bundles")
	// bucketFleetDevices holds the fleet's device inventory, keyed by device ID.
	bucketFleetDevices = []byte("fleet_devices")
	// bucketFleetRollouts holds the fleet's rollouts, keyed by rollout ID.
	bucketFleetRollouts = []byte("fleet_rollouts")

	// From schema 2, the fleet's operators and audit trail, also
	// collections (operator.go, audit.go):
	// bucketFleetOperators holds the operators and machine credentials,
	// keyed by operator name (JSON Operator, DecodeOperator).
	bucketFleetOperators = []byte("fleet_operators")
	// bucketFleetOperatorTokens indexes them by credential: key the
	// lowercase hex SHA-256 of a token -> JSON string, the operator's name.
	bucketFleetOperatorTokens = []byte("fleet_operator_tokens")
	// bucketFleetAudit is the append-only audit trail: key the record's
	// sequence number as 20 decimal digits -> JSON AuditRecord
	// (DecodeAudit).
	bucketFleetAudit = []byte("fleet_audit")
	// bucketFleetAuditMeta holds the trail's bounds: key "bounds" -> JSON
	// auditBounds (the oldest sequence kept and the next one).
	bucketFleetAuditMeta = []byte("fleet_audit_meta")

	// From schema 3: bucketFleetHealth holds each device's model health
	// over time (health.go): key "<device>/m/<YYYYMMDDHH>" -> JSON minute
	// points of that hour, "<device>/h/<YYYYMMDD>" -> JSON hour points of
	// that day (UTC).
	bucketFleetHealth = []byte("fleet_health")

	// From schema 4: bucketFleetConsoleSessions holds the web console's
	// sessions (consolesession.go): key the lowercase hex SHA-256 of the
	// session ID -> JSON ConsoleSession. The ID itself is never stored.
	bucketFleetConsoleSessions = []byte("fleet_console_sessions")

	// From schema 5: bucketFleetTrainJobs holds the fleet's remote-training
	// jobs (package fleet, train.go): key "job/" and the job's sequence as
	// 20 decimal digits -> JSON job record; key "next" -> JSON number, the
	// last sequence given.
	bucketFleetTrainJobs = []byte("fleet_train_jobs")

	// From schema 6: bucketFleetWindows holds the windows devices kept for
	// labelling and their labels (package fleet, windows.go): key "w/",
	// the device ID, "/" and the reading's Unix milliseconds as 13
	// decimal digits -> JSON api.FieldWindow; key "count" -> JSON counts
	// of the windows stored, labelled and not.
	bucketFleetWindows = []byte("fleet_windows")
)

// StatSamples names the agent's ring of windows kept for retraining in
// bucketStats (JSON wire.SampleSet, written by package agent).
const StatSamples = "samples"

// StatHistory names the agent's history of recent windows for dry runs
// (JSON wire.SampleSet) in bucketStats.
const StatHistory = "history"

// StatLabels names the windows the agent's label source labelled that the
// fleet has not taken yet (JSON, written by package agent) in bucketStats.
const StatLabels = "labels"

// Keys inside the fixed-key buckets above.
var (
	keySchemaVersion = []byte("schema_version")

	keyActive   = []byte("active")
	keyPrevious = []byte("previous")
	keyFailed   = []byte("failed")
	keyShadow   = []byte("shadow")

	keySession       = []byte("session")
	keyHighestJobSeq = []byte("highest_job_seq")
	keyInstance      = []byte("instance")

	keyOutboxCount   = []byte("count")
	keyOutboxBytes   = []byte("bytes")
	keyOutboxDropped = []byte("dropped")
	keyReserve       = []byte("reserve")
)

// collectionBuckets maps each Collection to its bucket. Index = Collection.
var collectionBuckets = [...][]byte{
	FleetModels:   bucketFleetModels,
	FleetBundles:  bucketFleetBundles,
	FleetDevices:  bucketFleetDevices,
	FleetRollouts: bucketFleetRollouts,

	FleetOperators:      bucketFleetOperators,
	FleetOperatorTokens: bucketFleetOperatorTokens,
	FleetAudit:          bucketFleetAudit,
	FleetAuditMeta:      bucketFleetAuditMeta,

	FleetHealth: bucketFleetHealth,

	FleetConsoleSessions: bucketFleetConsoleSessions,

	FleetTrainJobs: bucketFleetTrainJobs,

	FleetWindows: bucketFleetWindows,
}

// schemaV6Buckets lists the buckets created by the sixth migration.
var schemaV6Buckets = [][]byte{bucketFleetWindows}

// schemaV5Buckets lists the buckets created by the fifth migration.
var schemaV5Buckets = [][]byte{bucketFleetTrainJobs}

// schemaV4Buckets lists the buckets created by the fourth migration.
var schemaV4Buckets = [][]byte{bucketFleetConsoleSessions}

// schemaV3Buckets lists the buckets created by the third migration.
var schemaV3Buckets = [][]byte{bucketFleetHealth}

// schemaV2Buckets lists the buckets created by the second migration.
var schemaV2Buckets = [][]byte{
	bucketFleetOperators,
	bucketFleetOperatorTokens,
	bucketFleetAudit,
	bucketFleetAuditMeta,
}

// schemaV1Buckets lists the buckets created by the first migration.
var schemaV1Buckets = [][]byte{
	bucketMeta,
	bucketBundles,
	bucketSlots,
	bucketReleases,
	bucketDevice,
	bucketJobs,
	bucketOutbox,
	bucketOutboxMeta,
	bucketStats,
	bucketFleetModels,
	bucketFleetBundles,
	bucketFleetDevices,
	bucketFleetRollouts,
}
