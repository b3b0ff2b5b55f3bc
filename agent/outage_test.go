package agent

import (
	"os"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire/mqtttest"
)

// outageEnv overrides the 30 s broker outage of TestBrokerOutage for quick
// local runs, e.g. TRIT_OUTAGE=3s.
const outageEnv = "TRIT_OUTAGE"

// TestBrokerOutage stops the broker while the agent produces telemetry, then
// restarts it: every report made during the outage arrives (none lost).
func TestBrokerOutage(t *testing.T) {
	outage := 30 * time.Second
	if v := os.Getenv(outageEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", outageEnv, v, err)
		}
		outage = d
	}
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	startAgent(t, cfg, nil)
	h := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	f.terminal(f.deploy(h, "r1", cmdOpts{}), 20*time.Second)
	f.waitFor("telemetry", 10*time.Second, func() bool { return len(f.telemetry) >= 3 })

	broker.Stop()
	t.Logf("broker stopped for %v", outage)
	time.Sleep(outage)
	f.mu.Lock()
	before := maxSeq(f)
	f.mu.Unlock()
	broker.Restart()
	// Reports made during the outage: interval 200 ms.
	produced := uint64(outage / cfg.Telemetry.Interval.Duration)
	target := before + produced
	f.waitFor("telemetry produced during the outage", 60*time.Second, func() bool { return maxSeq(f) >= target })

	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[uint64]bool{}
	var last, inversions uint64
	for _, tm := range f.telemetry {
		if seen[tm.Seq] {
			continue // a QoS 1 redelivery
		}
		if tm.Seq < last {
			inversions++
		}
		seen[tm.Seq], last = true, max(last, tm.Seq)
	}
	for s := uint64(1); s <= last; s++ {
		if !seen[s] {
			t.Fatalf("telemetry seq %d of 1..%d never arrived: lost", s, last)
		}
	}
	// The agent drains its outbox strictly in order, but this subscriber
	// (the test's fleet) also lost its connection; Mosquitto may then
	// deliver its queued backlog after newer messages, so arrival order
	// is logged rather than asserted.
	if inversions > 0 {
		t.Logf("%d reports arrived after a newer one (subscriber-side reordering)", inversions)
	}
	t.Logf("received telemetry 1..%d in order, %d during the %v outage (agent log says why if not)", last, last-before, outage)
}

func maxSeq(f *fleet) uint64 {
	var m uint64
	for _, tm := range f.telemetry {
		m = max(m, tm.Seq)
	}
	return m
}
