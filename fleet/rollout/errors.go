package rollout

import "errors"

// ErrInvalid reports an invalid rollout definition or operation: a policy
// out of range, a pause of a finished rollout, an approval the two-person
// rule refuses. The service returns it and its callers test for it by
// this name; the API and the console map it to a 400.
var ErrInvalid = errors.New("fleet: invalid rollout")
