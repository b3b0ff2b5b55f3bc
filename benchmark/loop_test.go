package benchmark

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/retrain"
)

func TestBlockRows(t *testing.T) {
	rows := blockRows(10, 3)
	if !slices.Equal(rows, []int{3, 3, 4}) || blockStart(10, 3, 3) != 10 || blockStart(10, 3, 1) != 3 {
		t.Fatalf("blocks %v", rows)
	}
	ds := &data.Dataset{N: 4, Y: []int32{0, 0, 0, 1}, Classes: []string{"a", "b"}}
	acc, bal := overall(ds, []int32{0, 0, 1, 1})
	if acc != 75 || math.Abs(bal-(100*(2.0/3+1)/2)) > 1e-9 {
		t.Fatalf("accuracy %v, balanced %v", acc, bal)
	}
}

// TestLoopBeatsStaticOnDrift replays a generated stream whose class
// boundary turns by 90° over the test period: the static model falls
// towards chance, and the loop with 20% labels per block must be better
// over the test period; its labels are the planned ones, its blocks the
// test period's.
func TestLoopBeatsStaticOnDrift(t *testing.T) {
	train, test, cfg, static := rotatingStatic(t, 256)
	st, err := staticRun(static.Model, test, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	run, plan, err := replayTrit(context.Background(), static.Model, train, test,
		loopConfig{blocks: 6, frac: 20, minNew: 10, seed: 1, train: cfg, log: &log, name: "rotating"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("static %.2f%% %v; loop %.2f%% %v\n%s", st.Accuracy, st.Blocks, run.Accuracy, run.Blocks, log.String())
	if len(run.Blocks) != 6 || run.Blocks[0] != st.Blocks[0] {
		t.Fatalf("blocks %v, static %v: the first block is served by the static model in both", run.Blocks, st.Blocks)
	}
	if run.Accuracy < st.Accuracy+5 {
		t.Fatalf("loop %.2f%%, static %.2f%%: want the loop 5 points better on the drifting stream", run.Accuracy, st.Accuracy)
	}
	// 20% of each of the first five blocks of 750 rows: 150 labels each,
	// a retraining after each.
	if run.Labelled != 750 || run.Retrains != 5 || len(plan.Steps) != 5 || run.Promoted == 0 {
		t.Fatalf("%d labelled, %d retrains (%d promoted), %d steps", run.Labelled, run.Retrains, run.Promoted, len(plan.Steps))
	}
	last := plan.Steps[4]
	if len(last.Rows) != 750 || len(last.Copies) != 750 || !slices.IsSorted(last.Rows) || last.Rows[749] >= 3750 {
		t.Fatalf("last step: %d rows (last %d), %d copies", len(last.Rows), last.Rows[len(last.Rows)-1], len(last.Copies))
	}
	var table bytes.Buffer
	writeLoopTable(&table, []*LoopReport{{Dataset: "rotating", TrainRows: train.N, TestRows: test.N, Blocks: blockRows(test.N, 6), Runs: []LoopRun{*st, *run}}})
	if !strings.Contains(table.String(), "| rotating |") || !strings.Contains(table.String(), "| 20% |") {
		t.Fatalf("table:\n%s", table.String())
	}
}

// rotatingStatic is the loop tests' recording: a stream of 6,000 rows
// whose class boundary turns by 90°, its earliest 1,500 rows to train on
// and its latest 4,500 to replay, and the static model of p random
// features trained on the first part.
func rotatingStatic(t *testing.T, p int) (train, test *data.Dataset, cfg *training.Config, static *training.Result) {
	t.Helper()
	train, test, err := data.SplitLatestCount(retrain.RotatingStream(6000, math.Pi/2, 4), 4500)
	if err != nil {
		t.Fatal(err)
	}
	cfg = &training.Config{P: p, Sigma: 1, C: 1, Seed: 1, Workers: 2}
	if static, err = training.Train(train, cfg); err != nil {
		t.Fatal(err)
	}
	return train, test, cfg, static
}

// TestLoopRetrainSettings: --newest and --max-copies reach trit's
// retraining (the newest windows it judges on) and the peers' weights (the
// plan's copies), so a default of the retraining can be judged on the
// replay without a build of one's own.
func TestLoopRetrainSettings(t *testing.T) {
	train, test, cfg, static := rotatingStatic(t, 128)
	// 1,500 training rows; two test blocks of 2,250: 450 labels after the
	// first, one retraining.
	run, plan, err := replayTrit(context.Background(), static.Model, train, test,
		loopConfig{blocks: 2, frac: 20, minNew: 10, seed: 1, train: cfg, name: "rotating", rc: retrain.Config{Newest: 0.5, MaxCopies: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if run.Retrains != 1 || len(run.Notes) != 1 || len(plan.Steps) != 1 {
		t.Fatalf("%d retrains, notes %q, %d steps", run.Retrains, run.Notes, len(plan.Steps))
	}
	if !strings.Contains(run.Notes[0], " 225 newest labelled windows") {
		t.Errorf("note %q: want half of the 450 labels held out as the newest (--newest 0.5)", run.Notes[0])
	}
	// 2·1,500 original rows / 450 windows ≈ 7 copies, capped at 3: the
	// newest window 3, the oldest about 3/4 (at least 1).
	if c := plan.Steps[0].Copies; slices.Max(c) != 3 || c[len(c)-1] != 3 || c[0] != 1 {
		t.Errorf("copies %v: want the newest window at the cap of 3 and the oldest at 1", c)
	}

	for _, bad := range [][]string{{"--max-copies", "0"}, {"--newest", "1"}, {"--newest", "0"}} {
		_, stderr, code := runBench(t, append([]string{"loop", "--standard", "occupancy", "--methods", ""}, bad...)...)
		if code != 2 || !strings.Contains(stderr, bad[0]) {
			t.Errorf("loop %v: exit %d, stderr %q: want a usage error naming %s", bad, code, stderr, bad[0])
		}
	}
}

func TestChooseLabels(t *testing.T) {
	stream := retrain.RotatingStream(1000, 0, 5)
	res, err := training.Train(stream, &training.Config{P: 128, Sigma: 1, C: 1, Seed: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	rng := newTestRand()
	rows, err := chooseLabels(res.Model, stream, 100, 300, 5, rng)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 || !slices.IsSorted(rows) || rows[0] < 100 || rows[9] >= 300 {
		t.Fatalf("rows %v", rows)
	}
	// Half of them are the block's lowest-margin windows (the model is
	// uncalibrated: nothing is unknown).
	margins := make([]float32, 0, 200)
	scores := make([]float32, 2)
	for r := 100; r < 300; r++ {
		o, err := res.Model.PredictOutcome(scores, nil, stream.Row(r), res.Model.Thresholds())
		if err != nil {
			t.Fatal(err)
		}
		margins = append(margins, o.Margin)
	}
	fifth := slices.Sorted(slices.Values(margins))[4]
	low := 0
	for _, r := range rows {
		if margins[r-100] <= fifth {
			low++
		}
	}
	if low < 5 {
		t.Fatalf("%d of %v among the 5 lowest margins, want at least 5", low, rows)
	}
}

func newTestRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
