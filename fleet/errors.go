package fleet

// The errors the service returns are fleet/fault's (fault.ErrBadRequest,
// ErrNotFound, ErrDamaged) and the rollout engine's (rollout.ErrInvalid),
// under those names everywhere; this file holds what only the service's
// own messages need.

import (
	"fmt"
	"strings"
)

// maxListed bounds the device IDs quoted in one error message.
const maxListed = 10

// listIDs renders up to maxListed IDs, "and N more" after.
func listIDs(ids []string) string {
	if len(ids) <= maxListed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxListed], ", "), len(ids)-maxListed)
}
