package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/inference"
)

// mixRows draws n rows of the agents' three features uniformly in [lo, hi].
func mixRows(rng *rand.Rand, n int, lo, hi float64) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, len(features))
		for j := range rows[i] {
			rows[i][j] = float32(lo + (hi-lo)*rng.Float64())
		}
	}
	return rows
}

func writeRows(t *testing.T, path string, rows [][]float32) {
	t.Helper()
	var b strings.Builder
	b.WriteString(strings.Join(features, ",") + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f\n", r[0], r[1], r[2])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fingerprint sets spec's drift fingerprint to the firing rates of its
// first 128 kept columns on rows, as training does on its training rows.
func fingerprint(t *testing.T, spec *inference.ModelSpec, rows [][]float32) {
	t.Helper()
	m, err := inference.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	k := min(128, len(spec.Kept))
	fp := &inference.Fingerprint{Columns: make([]int32, k), Rates: make([]uint8, k)}
	counts := make([]uint32, k)
	for i := range k {
		fp.Columns[i] = int32(i)
	}
	z := make([]uint64, (len(spec.Kept)+63)/64)
	for _, r := range rows {
		if err := m.EmbedKept(z, r); err != nil {
			t.Fatal(err)
		}
		fp.Count(counts, z)
	}
	for i, c := range counts {
		fp.Rates[i] = uint8(math.Round(255 * float64(c) / float64(len(rows))))
	}
	spec.Fingerprint = fp
}

// TestDriftAlert: two agents run a model whose bundle fingerprints its
// training inputs. One replays inputs like them, in a loop; the other
// replays them once and then inputs of another mix (every feature moved to
// the top of its range). The second one's drift score rises past the
// fleet's alert threshold and the fleet reports it (inventory, /metrics);
// the first one's stays below it.
func TestDriftAlert(t *testing.T) {
	const threshold = 0.03
	w := newWorld(t)
	w.driftAlert = threshold
	w.startFleet()
	rng := rand.New(rand.NewPCG(7, 8))
	train := mixRows(rng, 400, -1, 1)
	steadyFile, shiftFile := filepath.Join(w.dir, "steady.csv"), filepath.Join(w.dir, "shift.csv")
	writeRows(t, steadyFile, train)
	writeRows(t, shiftFile, append(mixRows(rng, 150, -1, 1), mixRows(rng, 5000, 0.4, 1)...))
	steady := w.startAgentsTuned("steady", 1, nil, func(a *agentTuning) {
		a.replay, a.rate, a.telemetry, a.driftWindows = steadyFile, 50, time.Second, 50
	})[0]
	shift := w.startAgentsTuned("shift", 1, nil, func(a *agentTuning) {
		a.replay, a.rate, a.telemetry, a.driftWindows, a.once = shiftFile, 50, time.Second, 50, true
	})[0]
	w.waitKnown([]string{steady, shift})
	spec := w.specOf(1)
	fingerprint(t, spec, train)
	h := w.publish(w.signed(spec, "vib", 1))
	w.rollout(api.RolloutRequest{ID: "fp", Bundle: h, Devices: []string{steady, shift}})
	if r := w.waitRollout("fp", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("rollout %s: %v", r.State, r.Counts())
	}
	var steadyMax, shiftFirst, shiftLast float64
	w.waitInventory("the shifted device drifting", 90*time.Second, func(ds map[string]inventory.Device) bool {
		if d := ds[steady].Drift; d != nil && d.Windows >= 50 {
			steadyMax = math.Max(steadyMax, d.Score)
			if ds[steady].Drifting {
				t.Fatalf("the steady device is reported drifting: %+v", d)
			}
		}
		d := ds[shift]
		if d.Drift != nil {
			if shiftFirst == 0 {
				shiftFirst = d.Drift.Score
			}
			shiftLast = d.Drift.Score
		}
		return d.Drifting && steadyMax > 0
	})
	t.Logf("drift: steady device at most %.4f; shifted device %.4f at first, %.4f when reported (threshold %g)", steadyMax, shiftFirst, shiftLast, threshold)
	d := w.devices()[shift]
	if len(d.Drift.Top) == 0 || d.Drift.Top[0].JS <= 0 {
		t.Errorf("drift report names no drifted bit: %+v", d.Drift)
	}
	m := w.rawCall("/metrics")
	if !strings.Contains(m, `trit_fleet_device_drift{device="`+shift+`"}`) || !strings.Contains(m, "trit_fleet_devices_drifting 1") ||
		!strings.Contains(m, "trit_fleet_drift_alerts_total 1") {
		t.Errorf("/metrics does not report the drift:\n%s", grepLines(m, "drift"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
