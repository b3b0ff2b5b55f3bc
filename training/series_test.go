package training

import (
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/linear"
)

// linearAccuracy trains a linear SVM (with bias) on the robustly scaled raw
// features of train, C chosen on the latest 20% of its rows, and returns
// its test accuracy: what a user would get from a linear model.
func linearAccuracy(t *testing.T, train, test *data.Dataset) float64 {
	t.Helper()
	sc := data.FitRobustScaler(train)
	sc.Clip = true
	scale := func(ds *data.Dataset) []float32 {
		out := make([]float32, len(ds.X))
		for i := range ds.N {
			sc.Apply(out[i*ds.D:(i+1)*ds.D], ds.Row(i))
		}
		return out
	}
	signs := func(ds *data.Dataset) []int8 {
		y := make([]int8, ds.N)
		for i, c := range ds.Y {
			y[i] = int8(2*c - 1)
		}
		return y
	}
	acc := func(m *linear.Model, x []float32, ds *data.Dataset) float64 {
		ok := 0
		for i := range ds.N {
			if (m.Decision(x[i*ds.D:(i+1)*ds.D]) >= 0) == (ds.Y[i] == 1) {
				ok++
			}
		}
		return 100 * float64(ok) / float64(ds.N)
	}
	n := train.N * 4 / 5
	older, latest, err := data.SplitLatestCount(train, train.N-n)
	if err != nil {
		t.Fatal(err)
	}
	best, bestC := -1.0, 1.0
	for _, c := range PaperCGrid() {
		m, err := linear.Train(scale(older), older.N, older.D, signs(older), &linear.Options{C: c, Bias: 1})
		if err != nil {
			t.Fatal(err)
		}
		if a := acc(m, scale(latest), latest); a > best {
			best, bestC = a, c
		}
	}
	m, err := linear.Train(scale(train), train.N, train.D, signs(train), &linear.Options{C: bestC, Bias: 1})
	if err != nil {
		t.Fatal(err)
	}
	return acc(m, scale(test), test)
}

// TestNearLinearTimeSeries is the office-logger case: nearly linear,
// time-ordered, with spikes. Default training must not collapse to the
// majority class and must come close to a linear model on the raw
// features.
func TestNearLinearTimeSeries(t *testing.T) {
	all := OfficeSeries(6000, 4)
	train, test, err := data.SplitLatestCount(all, 2000)
	if err != nil {
		t.Fatal(err)
	}
	lin := linearAccuracy(t, train, test)
	majority := 0
	for _, y := range test.Y {
		majority += int(1 - y)
	}
	majorityAcc := 100 * float64(majority) / float64(test.N)
	res, err := Train(train, &Config{TimeOrdered: true, Seed: 1, Budget: 2048})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(res.Model, test, 0)
	if err != nil {
		t.Fatal(err)
	}
	recall1 := 100 * float64(ev.Confusion[1][1]) / float64(ev.Confusion[1][0]+ev.Confusion[1][1])
	t.Logf("trit %.2f%% (occupied recall %.1f%%; %+v σ=%g C=%g, %s), linear SVM %.2f%%, majority %.2f%%", ev.Accuracy, recall1, res.Structure, res.Sigma, res.C, res.Validation, lin, majorityAcc)
	if recall1 < 50 {
		t.Errorf("occupied recall %.1f%%: the model (nearly) collapsed to the majority class", recall1)
	}
	if ev.Accuracy < lin-1.5 {
		t.Errorf("trit %.2f%% is more than 1.5 points below a linear SVM's %.2f%%", ev.Accuracy, lin)
	}
	if _, err := inference.New(res.Spec); err != nil {
		t.Fatal(err)
	}
}
