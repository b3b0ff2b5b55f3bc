package retrain

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// small is a quick training configuration for the tests.
func small() *training.Config {
	return &training.Config{P: 256, Sigma: 1, C: 1, Seed: 1, Workers: 2}
}

func trainOn(t *testing.T, ds *data.Dataset) *inference.Model {
	t.Helper()
	res, err := training.Train(ds, small())
	if err != nil {
		t.Fatal(err)
	}
	return res.Model
}

// windowsOf returns rows [from, to) of ds, every step-th, as labelled windows.
func windowsOf(ds *data.Dataset, from, to, step int) []Window {
	var ws []Window
	for i := from; i < to; i += step {
		ws = append(ws, Window{Time: ds.Times[i] / 1e6, X: slices.Clone(ds.Row(i)), Label: ds.Classes[ds.Y[i]]})
	}
	return ws
}

func TestCopies(t *testing.T) {
	// Few windows: the newest weighs MaxCopies original rows, the oldest a quarter of that.
	c, b := Copies(10000, 100, 16)
	if b != 16 || c[99] != 16 || c[0] != 4 || !slices.IsSorted(c) {
		t.Fatalf("copies %v, B %d", c, b)
	}
	// As many windows as original rows: once each.
	c, b = Copies(500, 2000, 16)
	if b != 1 || slices.Max(c) != 1 || slices.Min(c) != 1 {
		t.Fatalf("copies %v, B %d", c, b)
	}
	// B = 2·N_orig/n between the bounds.
	if _, b = Copies(400, 100, 16); b != 8 {
		t.Fatalf("B %d, want 8", b)
	}
}

// turned takes a stream whose class boundary turns by 90° and returns
// the rows before its latest 2,500 (orig), a model trained on them
// (active) and 200 labelled windows of the late concept.
func turned(t *testing.T) (orig *data.Dataset, active *inference.Model, ws []Window) {
	t.Helper()
	stream := RotatingStream(4000, math.Pi/2, 1)
	orig, _, err := data.SplitLatestCount(stream, 2500)
	if err != nil {
		t.Fatal(err)
	}
	return orig, trainOn(t, orig), windowsOf(stream, 2600, 4000, 7)
}

// TestRetrainMixesOldAndNew: on a stream whose class boundary turns, a
// model trained on the early rows is wrong on the late ones; the
// challenger trained on those rows plus labelled late windows is better
// on the newest windows, is refitted on all of them, and its training
// rows are the original rows and the windows' copies.
func TestRetrainMixesOldAndNew(t *testing.T) {
	orig, active, ws := turned(t)
	out, err := Run(context.Background(), active, orig, ws, &Config{Train: small()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Newest != 50 || out.Windows != 200 || out.OriginalRows != 1500 {
		t.Fatalf("newest %d of %d windows, %d original rows; want 50 of 200, 1500", out.Newest, out.Windows, out.OriginalRows)
	}
	copies, b := Copies(1500, 150, DefaultMaxCopies)
	sum := 0
	for _, k := range copies {
		sum += k
	}
	if out.TrainedRows != 1500+sum || out.MaxCopies != b {
		t.Fatalf("trained on %d rows (B %d), want %d original + %d copies (B %d)", out.TrainedRows, out.MaxCopies, 1500, sum, b)
	}
	if !out.Better || out.Model == nil || !out.Refitted {
		t.Fatalf("challenger not proposed: %s", out.Why)
	}
	if out.Challenger.Accuracy < out.Active.Accuracy+10 {
		t.Fatalf("challenger %.2f%% against the active model's %.2f%% on the newest windows: want 10 points better", out.Challenger.Accuracy, out.Active.Accuracy)
	}
	// The refit knows the newest windows too, and the old concept where it still holds.
	if out.Model.Model.Classes()[0] != "high" || out.Model.Model.NumFeatures() != 2 {
		t.Fatalf("refit classes %q, %d features", out.Model.Model.Classes(), out.Model.Model.NumFeatures())
	}
	fresh := windowSet(active, windowsOf(RotatingStream(4000, math.Pi/2, 9), 3800, 4000, 1)) // rows no model saw
	late, err := Score(out.Model.Model, fresh, 2)
	if err != nil {
		t.Fatal(err)
	}
	before, err := Score(active, fresh, 2)
	if err != nil {
		t.Fatal(err)
	}
	if late.Accuracy < before.Accuracy+15 {
		t.Fatalf("refit: %.2f%% on the last 200 rows, the active model %.2f%%: want 15 points better", late.Accuracy, before.Accuracy)
	}
	t.Logf("last 200 rows: active %.2f%%, refit %.2f%%; newest windows: active %.2f%%, scored challenger %.2f%%", before.Accuracy, late.Accuracy, out.Active.Accuracy, out.Challenger.Accuracy)
}

// TestRetrainRefusesNoBetter: windows the active model already gets all
// right leave the challenger nothing to win: it is refused.
func TestRetrainRefusesNoBetter(t *testing.T) {
	stream := RotatingStream(3000, 0, 2)
	active := trainOn(t, stream.Subset(seq(0, 1500)))
	var ws []Window
	for i := 1500; i < 3000 && len(ws) < 120; i++ {
		x := stream.Row(i)
		if math.Abs(float64(x[0])) < 0.3 { // near the boundary (the class is the sign of a)
			continue
		}
		label := "low"
		if x[0] > 0 {
			label = "high"
		}
		ws = append(ws, Window{Time: int64(i), X: slices.Clone(x), Label: label})
	}
	out, err := Run(context.Background(), active, stream.Subset(seq(0, 1500)), ws, &Config{Train: small()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Active.Accuracy != 100 {
		t.Fatalf("active %.2f%% on windows away from the boundary, want 100%%", out.Active.Accuracy)
	}
	if out.Better || out.Model != nil || out.Refitted {
		t.Fatalf("challenger proposed though not better: %s", out.Why)
	}
	if out.Why == "" || out.Scored == nil {
		t.Fatalf("no reason or no scored fit: %+v", out)
	}
	// With AcceptTies the same tie is taken.
	tied, err := Run(context.Background(), active, stream.Subset(seq(0, 1500)), ws, &Config{Train: small(), AcceptTies: true, NoRefit: true})
	if err != nil {
		t.Fatal(err)
	}
	if tied.Challenger.Accuracy != 100 || !tied.Better || tied.Model != tied.Scored || !strings.Contains(tied.Why, "accepted") {
		t.Fatalf("tie not accepted: %+v", tied)
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestRetrainBadInput(t *testing.T) {
	stream := RotatingStream(600, 0, 3)
	active := trainOn(t, stream)
	ws := windowsOf(stream, 0, 600, 50)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		orig *data.Dataset
		ws   []Window
	}{
		{"unknown class", stream, append(slices.Clone(ws), Window{X: []float32{0, 0}, Label: "sideways"})},
		{"short window", stream, append(slices.Clone(ws), Window{X: []float32{0}, Label: "high"})},
		{"one window", stream, ws[:1]},
		{"no original", nil, ws},
		{"other features", renamed(stream), ws},
	} {
		if _, err := Run(ctx, active, tt.orig, tt.ws, &Config{Train: small()}); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", tt.name, err)
		}
	}
}

func renamed(ds *data.Dataset) *data.Dataset {
	c := ds.Subset(seq(0, ds.N))
	c.Features = []string{"a", "c"}
	return c
}

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		wins, losses int
		want         float64
	}{
		{0, 0, 1}, {0, 3, 1}, {1, 0, 0.5}, {5, 0, 1.0 / 32}, {6, 1, 8.0 / 128}, {7, 1, 9.0 / 256},
		{2, 2, 11.0 / 16}, // P(X ≥ 2 | n = 4) = (6 + 4 + 1)/16
	} {
		if got := signTest(c.wins, c.losses); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("signTest(%d, %d) = %g, want %g", c.wins, c.losses, got, c.want)
		}
	}
	if p := signTest(1000, 900); !(p > 0 && p < 0.02) {
		t.Errorf("signTest(1000, 900) = %g, want about 0.013", p)
	}
}

// TestRetrainWantsEvidence: the challenger of TestRetrainMixesOldAndNew
// wins on many of the newest windows; at a sign-test level its wins do
// not reach, the same challenger is refused, and the reason says so.
func TestRetrainWantsEvidence(t *testing.T) {
	orig, active, ws := turned(t)
	out, err := Run(context.Background(), active, orig, ws, &Config{Train: small(), NoRefit: true})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Better || out.Wins <= out.Losses || out.P > DefaultMaxP || !strings.Contains(out.Why, "sign test") {
		t.Fatalf("at the default level: better %v, %d wins, %d losses, p %g: %s", out.Better, out.Wins, out.Losses, out.P, out.Why)
	}
	strict, err := Run(context.Background(), active, orig, ws, &Config{Train: small(), NoRefit: true, MaxP: out.P / 2})
	if err != nil {
		t.Fatal(err)
	}
	if strict.Better || strict.Model != nil || !strings.Contains(strict.Why, "not enough windows") {
		t.Fatalf("at level %g (p %g): better %v: %s", out.P/2, strict.P, strict.Better, strict.Why)
	}
	if _, err := Run(context.Background(), active, orig, ws, &Config{Train: small(), MaxP: 2}); !errors.Is(err, ErrInput) {
		t.Fatalf("level 2: %v, want ErrInput", err)
	}
}
