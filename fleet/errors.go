package fleet

// Errors and bounds the service's operations share with their callers
// (the HTTP API, the console).

import (
	"fmt"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/rollout"
	"strings"
)

// MaxLogField bounds a request path or error message in the service log
// (fault.MaxLogField).
const MaxLogField = fault.MaxLogField

// Clip shortens s to at most n bytes for a log line or an error message,
// saying how long it was (fault.Clip).
func Clip(s string, n int) string { return fault.Clip(s, n) }

// ErrBadRequest marks errors in what the client sent (an HTTP 400): the
// value fleet/fault owns, so that errors.Is holds whichever package
// returned it (fleet/inventory's reads return it too).
var ErrBadRequest = fault.ErrBadRequest

// BadRequest is an ErrBadRequest saying what was wrong.
func BadRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// ErrNotFound: no such device, bundle, model, rollout, job or operator
// (fault.ErrNotFound, the same value).
var ErrNotFound = fault.ErrNotFound

// maxListed bounds the device IDs quoted in one error message.
const maxListed = 10

// listIDs renders up to maxListed IDs, "and N more" after.
func listIDs(ids []string) string {
	if len(ids) <= maxListed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxListed], ", "), len(ids)-maxListed)
}

// ErrRollout reports an invalid rollout definition or operation: the
// rollout engine's sentinel (rollout.ErrInvalid), the same value, so that
// errors.Is holds whichever name the caller uses.
var ErrRollout = rollout.ErrInvalid
