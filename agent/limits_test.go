package agent

import (
	"testing"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// TestRolloutIDLimitsAgree: the store bounded rollout IDs at 1,024 bytes
// and the protocol at 128; a job the agent accepts must be storable, and
// the store must refuse nothing the protocol allows. One limit.
func TestRolloutIDLimitsAgree(t *testing.T) {
	if store.MaxRolloutIDLen != wire.MaxRolloutIDLen {
		t.Fatalf("store.MaxRolloutIDLen %d, wire.MaxRolloutIDLen %d", store.MaxRolloutIDLen, wire.MaxRolloutIDLen)
	}
}
