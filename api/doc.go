// Package api holds the types of trit-fleet's HTTP JSON API, shared by the
// service (package fleet, which serves them) and its clients (tritctl, the
// end-to-end tests), and Client, a typed client for it. It is the one
// definition of the API's JSON: a field added here is served and read.
//
// Routes (every one needs a bearer token — an operator's or the
// api.token_file's — and a role that may use it, else 403; docs/FLEET.md
// "Operators, roles and the audit trail"; operators' and the audit
// trail's routes are in operator.go and audit.go):
//
//	GET  /v1/devices                    []Device
//	GET  /v1/devices/{id}               Device
//	DELETE /v1/devices/{id}             forget a device
//	POST /v1/devices/{id}/reset         accept its next state; Device
//	GET  /v1/devices/{id}/samples?wait=20s   wire.SampleSet (504 if the device does not answer)
//	POST /v1/plan                       body: PlanRequest; PlanResult
//	GET  /v1/bundles                    []BundleEntry: each bundle and the devices running it
//	POST /v1/bundles                    body: a signed bundle (application/octet-stream); BundleInfo
//	GET  /v1/rollouts                   []Rollout, newest first
//	POST /v1/rollouts                   body: RolloutRequest; Rollout
//	GET  /v1/rollouts/{id}              Rollout
//	POST /v1/rollouts/{id}/pause|resume|abort   body: ControlRequest (optional); Rollout
//	POST /v1/rollouts/{id}/rollback     body: RollbackRequest; Rollout
//	POST /v1/rollouts/{id}/approve      Rollout (the two-person rule: not by its creator)
//	POST /v1/train                      body: TrainRequest; TrainJob
//	GET  /v1/train                      []TrainJob, newest first
//	GET  /v1/train/{id}                 TrainJob
//	GET  /v1/train/{id}/bundle          the unsigned bundle (application/octet-stream)
//	POST /v1/train/{id}/cancel          TrainJob
//	GET  /v1/backup                     a consistent copy of the database
//	GET  /metrics                       Prometheus metrics
//
// Errors are an Error body with a status that says whose fault it was: 400
// bad request, 401 no or wrong token, 404 unknown, 409 conflict, 429 too
// many training jobs, 500 the service's.
package api

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
}
