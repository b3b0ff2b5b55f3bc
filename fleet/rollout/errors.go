package rollout

import "errors"

// ErrInvalid reports an invalid rollout definition or operation: a policy
// out of range, a pause of a finished rollout, an approval the two-person
// rule refuses. The service's callers know it as fleet.ErrRollout (the
// same value), which the API and the console map to a 400.
var ErrInvalid = errors.New("fleet: invalid rollout")
