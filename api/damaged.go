package api

// Damaged names a stored record that does not decode: the lists skip it
// and name it (fleet/damaged.go). In GET /v1/devices, /v1/rollouts,
// /v1/bundles and /v1/train a damaged record is an entry with only its key
// (id or hash; a training job's ID) and Damaged set; GET /v1/windows lists
// the damaged windows in WindowList.Damaged.
type Damaged struct {
	Collection string `json:"collection"` // the store's collection: fleet_devices, fleet_rollouts, fleet_bundles, fleet_windows, fleet_train_jobs
	Key        string `json:"key"`
	Error      string `json:"error"` // why it does not decode
}
