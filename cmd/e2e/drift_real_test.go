package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// TestDriftEEGReal: a model trained on eeg-eye-state's training period
// (the first 70% of the recording, PROVENANCE.md) runs on an agent that
// replays the whole recording, training period then test period. Its drift
// score stays low while the replay is in the training period and rises in
// the test period, where the class mix changes (47% → 74% eyes open) and
// every classifier falls below a constant prediction. Needs TRIT_DATA
// and TRIT_E2E_REAL (make drift-real, outside make test: it takes about
// a minute); skipped without them.
//
// The replay's position is the agent's prediction count (one window per
// row, no feature pipeline). The first 3,000 rows of each period are left
// out: the rates are over the last ~1,500-3,000 windows.
func TestDriftEEGReal(t *testing.T) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" || os.Getenv("TRIT_E2E_REAL") == "" {
		t.Skip("TRIT_DATA and TRIT_E2E_REAL not set (make drift-real): about a minute of training and replay")
	}
	train, test, err := data.LoadStandard(dir, "eeg-eye-state")
	if err != nil {
		t.Fatal(err)
	}
	res, err := training.Train(train, &training.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Spec.Fingerprint == nil {
		t.Fatal("training wrote no drift fingerprint")
	}
	raw, err := res.Bundle(train, training.BundleMeta{ModelID: "eeg", Release: 1})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.Sign(raw, w0(t).releasePriv)
	if err != nil {
		t.Fatal(err)
	}
	w := w0(t)
	// The recording as the agent's replay file: the training rows, then
	// the test rows, raw values under the model's feature names.
	var b strings.Builder
	b.WriteString(strings.Join(train.Features, ",") + "\n")
	for _, ds := range []*data.Dataset{train, test} {
		for i := range ds.N {
			row := ds.X[i*ds.D : (i+1)*ds.D]
			for j, v := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%g", v)
			}
			b.WriteByte('\n')
		}
	}
	recording := filepath.Join(w.dir, "eeg.csv")
	if err := os.WriteFile(recording, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// Install the model while the agent replays the first rows slowly,
	// then restart it on the whole recording from the top.
	w.startFleet()
	warm := w.startAgentsTuned("eeg", 1, nil, func(a *agentTuning) { a.replay, a.rate, a.telemetry = recording, 20, 250*time.Millisecond })[0]
	w.waitKnown([]string{warm})
	h := w.publish(signed)
	w.rollout(api.RolloutRequest{ID: "eeg", Bundle: h, Devices: []string{warm}})
	if r := w.waitRollout("eeg", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("rollout %s: %v", r.State, r.Counts())
	}
	w.stopAgent(warm)
	time.Sleep(time.Second)
	// The drift memory, in windows: ~12 s of the 128 Hz recording, longer
	// than its eye-state runs.
	const memory = 1500
	base := w.devices()[warm].Predictions
	w.startAgentsTuned("eeg", 1, nil, func(a *agentTuning) {
		a.replay, a.rate, a.telemetry, a.once, a.driftWindows = recording, 500, 250*time.Millisecond, true, memory
	})
	var trainDrift, testDrift, trainTop, testTop []float64
	total := uint64(train.N + test.N)
	w.waitInventory("the whole recording replayed", 2*time.Minute, func(ds map[string]inventory.Device) bool {
		d := ds[warm]
		row := d.Predictions - base
		if d.Drift != nil {
			top := 0.0
			if len(d.Drift.Top) > 0 {
				top = d.Drift.Top[0].JS
			}
			switch {
			case row >= 2*memory && row < uint64(train.N):
				trainDrift, trainTop = append(trainDrift, d.Drift.Score), append(trainTop, top)
			case row >= uint64(train.N)+2*memory && row <= total:
				testDrift, testTop = append(testDrift, d.Drift.Score), append(testTop, top)
			}
		}
		return row+50 >= total
	})
	if len(trainDrift) < 5 || len(testDrift) < 3 {
		t.Fatalf("%d drift readings in the training period, %d in the test period: too few", len(trainDrift), len(testDrift))
	}
	trainMax := slices.Max(trainDrift)
	testMed := median(testDrift)
	t.Logf("eeg-eye-state drift: training period max %.4f (median %.4f, %d readings); test period median %.4f, max %.4f (%d readings)",
		trainMax, median(trainDrift), len(trainDrift), testMed, slices.Max(testDrift), len(testDrift))
	t.Logf("most drifted bit: training period max %.4f, test period median %.4f; model: %+v, %d fingerprint columns",
		slices.Max(trainTop), median(testTop), res.Structure, len(res.Spec.Fingerprint.Columns))
	if !(testMed > trainMax) {
		t.Errorf("drift in the test period (median %.4f) does not rise above the training period's maximum %.4f", testMed, trainMax)
	}
}

// w0 returns the test's world, made on first use.
func w0(t *testing.T) *world {
	t.Helper()
	if worlds[t] == nil {
		worlds[t] = newWorld(t)
	}
	return worlds[t]
}

var worlds = map[*testing.T]*world{}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)/2]
}
