package training

import (
	"math"
	"testing"

	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// driftingSeries returns n readings of a recording that drifts: the label
// is [x + u > 0] for a measured signal x and an unmeasured offset u that
// wanders slowly, and three nuisance sensors wander slowly too, so they
// say when a reading was taken. Neighbouring readings share u, so within
// a stretch of time the nuisance sensors predict the label far better than
// x does — a model that memorises them scores very well on a random
// sample of the rows and at chance on later ones, where they wander to
// values never seen; the rule x > 0 carries forward.
func driftingSeries(n int, seed uint64) *data.Dataset {
	r := splitmix.New(seed)
	gauss := func() float64 {
		return math.Sqrt(-2*math.Log(1-r.Float64())) * math.Cos(2*math.Pi*r.Float64())
	}
	ds := &data.Dataset{Name: "drifting", N: n, D: 4, Classes: []string{"off", "on"},
		Features: []string{"x", "z1", "z2", "z3"}, Y: make([]int32, n)}
	u := 0.0
	z := [3]float64{}
	for i := range n {
		u = 0.95*u + 0.3*gauss()
		for j := range z {
			z[j] += 0.05 * gauss()
		}
		x := gauss()
		ds.X = append(ds.X, float32(x), float32(z[0]+0.01*gauss()), float32(z[1]+0.01*gauss()), float32(z[2]+0.01*gauss()))
		if x+u > 0 {
			ds.Y[i] = 1
		}
	}
	return ds
}

// TestRecordedOrderBeatsRandomValidation: on a drifting recording (no time
// column), random validation picks a model that memorises the time of day
// and fails on later rows; the default detects the recording, validates
// forward and picks one that carries forward.
func TestRecordedOrderBeatsRandomValidation(t *testing.T) {
	all := driftingSeries(2400, 11)
	train, test, err := data.SplitLatestCount(all, 800)
	if err != nil {
		t.Fatal(err)
	}
	if o := data.DetectOrder(train); !o.Recorded {
		t.Fatalf("the recording is not detected: %s", o)
	}
	run := func(shuffled bool) (*Result, *Evaluation) {
		tr := train.Subset(data.TimeOrder(train))
		tr.Shuffled = shuffled
		res, err := Train(tr, &Config{Budget: 2048, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Evaluate(res.Model, test, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("shuffled=%v: %s; %v σ=%g C=%g: validation %.1f%%, later rows %.1f%% (%s)", shuffled, res.Validation,
			res.Structure, res.Sigma, res.C, res.Selected.Balanced, ev.Balanced, res.Structure.Embedding())
		return res, ev
	}
	rres, rev := run(true)
	dres, dev := run(false)
	if rres.Selected.Balanced-rev.Balanced < 10 {
		t.Errorf("random validation: %.1f%% on validation, %.1f%% later; want the memoriser's gap of ≥ 10 points", rres.Selected.Balanced, rev.Balanced)
	}
	if dev.Balanced < rev.Balanced+5 {
		t.Errorf("default: %.1f%% on later rows, random validation %.1f%%; want ≥ 5 points better", dev.Balanced, rev.Balanced)
	}
	if gap, rgap := dres.Selected.Balanced-dev.Balanced, rres.Selected.Balanced-rev.Balanced; gap > rgap/2 {
		t.Errorf("default: validation %.1f%% vs later rows %.1f%%, a gap of %.1f points; random validation's is %.1f: forward validation should forecast the later score far better",
			dres.Selected.Balanced, dev.Balanced, gap, rgap)
	}
}
