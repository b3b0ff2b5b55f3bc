package training

import (
	"math"
	"strings"
	"testing"

	"github.com/trit-iot/trit/training/data"
)

// TestValidationWarnings: a class recalled near zero on validation and
// folds that disagree are each said, with their figures; a healthy
// selection says nothing.
func TestValidationWarnings(t *testing.T) {
	classes := []string{"empty", "one", "two"}
	healthy := selection{Recall: []float64{99, 90, 85}, Folds: []float64{91, 93, 90}, Spread: 1.5}
	if w := validationWarnings(healthy, classes, []int{500, 100, 50}); len(w) != 0 {
		t.Fatalf("a healthy selection warns: %q", w)
	}
	sick := selection{Recall: []float64{99, 4, 85}, Folds: []float64{98, 60, 75}, Spread: 19}
	w := validationWarnings(sick, classes, []int{500, 100, 50})
	if len(w) != 2 || !strings.Contains(w[0], `"one" 4.0% of 100 rows`) || !strings.Contains(w[1], "98.0%, 60.0%, 75.0%") {
		t.Fatalf("warnings %q", w)
	}
	// Too few rows of the class to say.
	if w := validationWarnings(selection{Recall: []float64{99, 0, 85}}, classes, []int{500, 3, 50}); len(w) != 0 {
		t.Fatalf("3 rows: %q", w)
	}
}

// TestTestWarnings: on test rows, a class recalled near zero, and a
// validation score far above the test score.
func TestTestWarnings(t *testing.T) {
	ev := &Evaluation{Balanced: 36.2, PerClass: []ClassScore{{Class: "0", Rows: 2745, Recall: 100}, {Class: "2", Rows: 93, Recall: 0}, {Class: "3", Rows: 201, Recall: 8.5}}}
	w := TestWarnings(&SearchPoint{Balanced: 98.4}, ev)
	if len(w) != 2 || !strings.Contains(w[0], `"2" 0.0% of 93 rows, "3" 8.5% of 201 rows`) || !strings.Contains(w[1], "98.4%") || !strings.Contains(w[1], "36.2%") {
		t.Fatalf("warnings %q", w)
	}
	ev = &Evaluation{Balanced: 90, PerClass: []ClassScore{{Class: "a", Rows: 50, Recall: 91}, {Class: "b", Rows: 50, Recall: 89}}}
	if w := TestWarnings(&SearchPoint{Balanced: 92}, ev); len(w) != 0 {
		t.Fatalf("healthy: %q", w)
	}
}

// TestTestWarningsAdvice: the advice on a validation score far above the
// test score fits how the candidates were validated — rows already
// validated forward in time are not told to give --time-ordered.
func TestTestWarningsAdvice(t *testing.T) {
	ev := &Evaluation{Balanced: 60, PerClass: []ClassScore{{Class: "a", Rows: 50, Recall: 60}, {Class: "b", Rows: 50, Recall: 60}}}
	sel := &SearchPoint{Balanced: 97}
	for _, c := range []struct {
		kind        foldKind
		want, never string
	}{
		{sampleFolds, "give --time-ordered if the rows are a recording", ""},
		{forwardFolds, "the validation was already on later periods of the recording", "--time-ordered"},
		{groupFolds, "the validation was already on groups left out of training", "--time-ordered"},
	} {
		w := (&Result{Selected: sel, heldKind: c.kind}).TestWarnings(ev)
		if len(w) != 1 || !strings.Contains(w[0], c.want) || c.never != "" && strings.Contains(w[0], c.never) {
			t.Errorf("folds of kind %d: %q; want %q and no %q", c.kind, w, c.want, c.never)
		}
	}
}

// TestTrainWarnsOfStuckColumns: training on a recording says which columns
// hold one value inside their range over its earliest stretch (a gap
// filled in), with the flag that leaves them out; shuffled or grouped rows
// have no earliest stretch, and say nothing of it.
func TestTrainWarnsOfStuckColumns(t *testing.T) {
	recording := func() *data.Dataset {
		const n, d = 400, 3
		ds := &data.Dataset{N: n, D: d, X: make([]float32, n*d), Y: make([]int32, n), Classes: []string{"off", "on"},
			Features: []string{"vicprice", "load", "hour"}, Ordered: true}
		for i := range n {
			x := float32(math.Sin(float64(i) / 5))
			ds.X[i*d], ds.X[i*d+1], ds.X[i*d+2] = x/2, x, float32(i%24)
			if i < 200 {
				ds.X[i*d] = 0.1 // filled in
			}
			if x > 0 {
				ds.Y[i] = 1
			}
		}
		return ds
	}
	cfg := &Config{P: 128, Sigma: 1, C: 1, Seed: 1}
	res, err := Train(recording(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "vicprice") {
			got = append(got, w)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `column "vicprice" holds one value inside its range over the earliest 200 of the 400 rows (50.0%)`) || !strings.Contains(got[0], "--ignore-column vicprice") {
		t.Fatalf("warnings %q, want one on vicprice's earliest 200 rows", res.Warnings)
	}

	shuffled := recording()
	shuffled.Ordered, shuffled.Shuffled = false, true
	grouped := recording()
	grouped.Groups = make([]int32, grouped.N)
	for i := range grouped.Groups {
		grouped.Groups[i] = int32(i % 4)
	}
	grouped.GroupNames = []string{"a", "b", "c", "d"}
	for name, ds := range map[string]*data.Dataset{"shuffled": shuffled, "grouped": grouped} {
		res, err := Train(ds, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, w := range res.Warnings {
			if strings.Contains(w, "vicprice") {
				t.Errorf("%s rows: %q", name, w)
			}
		}
	}
}
