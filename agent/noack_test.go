package agent

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// TestFleetNeverAcks: events wait in the outbox until the fleet acks them
// and are re-sent meanwhile; a fleet that never acks fills the outbox up
// to its bound, after which the oldest messages are dropped and counted,
// and the retained state reports the count and the bound. Telemetry, which
// leaves the outbox on the broker's PUBACK, keeps flowing.
func TestFleetNeverAcks(t *testing.T) {
	const bound = 3000
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	f.noAck = true
	cfg := testConfig(t, k, broker.URL())
	cfg.Telemetry.OutboxMaxBytes = bound
	startAgent(t, cfg, nil)

	h := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	if ev := f.terminal(f.deploy(h, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %+v", ev)
	}
	// Unacknowledged events are sent again (ack_retry is 1 s here).
	f.waitFor("an event re-sent", 10*time.Second, func() bool {
		seen := map[string]int{}
		for _, e := range f.events {
			seen[e.ID]++
			if seen[e.ID] > 1 {
				return true
			}
		}
		return false
	})
	// More jobs: each adds events that are never acked.
	for i := range 6 {
		f.terminal(f.deploy(hashOf([]byte{byte(i)}), "missing", cmdOpts{expired: true}), 20*time.Second)
	}
	f.waitFor("a state reporting drops and the bound", 15*time.Second, func() bool {
		st := latest(f.states)
		return st != nil && st.Outbox != nil && st.Outbox.Dropped > 0 && st.Outbox.MaxBytes == bound
	})
	st := latest(f.states)
	if st.Outbox.Bytes > bound {
		t.Errorf("outbox holds %d bytes, above its bound %d", st.Outbox.Bytes, bound)
	}
	t.Logf("outbox: %+v", *st.Outbox)
	f.waitFor("telemetry reporting the drops", 10*time.Second, func() bool {
		for _, tm := range f.telemetry {
			if tm.Dropped > 0 {
				return true
			}
		}
		return false
	})
}
