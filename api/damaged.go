package api

// Damaged names a stored record that does not decode: the lists skip it
// and name it (fleet/damaged.go). In GET /v1/devices, /v1/rollouts and
// /v1/bundles a damaged record is an entry with only its key (id or hash)
// and Damaged set.
type Damaged struct {
	Collection string `json:"collection"` // the store's collection: fleet_devices, fleet_rollouts, fleet_bundles
	Key        string `json:"key"`
	Error      string `json:"error"` // why it does not decode
}
