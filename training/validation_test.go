package training

import (
	"testing"

	"github.com/trit-iot/trit/training/data"
)

// indexed returns a dataset whose single feature is the row index, so a
// fold's rows say where they came from.
func indexed(labels []int32, classes int) *data.Dataset {
	ds := &data.Dataset{Name: "indexed", D: 1, N: len(labels), Y: labels}
	for c := range classes {
		ds.Classes = append(ds.Classes, string(rune('a'+c)))
	}
	for i := range labels {
		ds.X = append(ds.X, float32(i))
	}
	return ds
}

func maxRow(ds *data.Dataset) float32 {
	m := float32(-1)
	for _, v := range ds.X {
		m = max(m, v)
	}
	return m
}

func minRow(ds *data.Dataset) float32 {
	m := float32(1 << 30)
	for _, v := range ds.X {
		m = min(m, v)
	}
	return m
}

func TestTimeOrderedValidationNeverLooksBack(t *testing.T) {
	labels := make([]int32, 1000)
	for i := range labels {
		labels[i] = int32(i / 50 % 3) // classes in runs, as sensor states are
	}
	ds := indexed(labels, 3)
	for _, folds := range []int{0, 2, 5} {
		c, err := (&Config{TimeOrdered: true, Folds: folds}).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		fs, how, _, err := c.validation(ds)
		if err != nil {
			t.Fatal(err)
		}
		if want := max(folds, defaultTimeFolds); folds == 0 && len(fs) != want || folds > 0 && len(fs) != folds {
			t.Fatalf("folds=%d: %d folds (%s)", folds, len(fs), how)
		}
		for i, f := range fs {
			if f.train.N == 0 || f.val.N == 0 {
				t.Fatalf("folds=%d fold %d: %d training and %d validation rows", folds, i, f.train.N, f.val.N)
			}
			if maxRow(f.train) >= minRow(f.val) {
				t.Fatalf("folds=%d fold %d (%s): training row %v is not before validation row %v", folds, i, how, maxRow(f.train), minRow(f.val))
			}
		}
	}
}

func TestTimeOrderedValidationSwitchesToFolds(t *testing.T) {
	// The last 40% of rows are all class 0, as in a sensor series that ends
	// with an empty room: one hold-out would only ever see class 0.
	labels := make([]int32, 1000)
	for i := range 600 {
		labels[i] = int32(i / 40 % 2)
	}
	ds := indexed(labels, 2)
	c, _ := (&Config{TimeOrdered: true}).withDefaults()
	fs, how, notes, err := c.validation(ds)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != defaultTimeFolds || len(notes) == 0 {
		t.Fatalf("got %d folds (%s), notes %q; want %d forward-chaining folds and a note", len(fs), how, notes, defaultTimeFolds)
	}
	seen := map[int32]bool{}
	for _, f := range fs {
		for _, y := range f.val.Y {
			seen[y] = true
		}
	}
	if !seen[1] {
		t.Fatal("no fold validates on class 1")
	}
}

func TestRandomValidationIsStratified(t *testing.T) {
	labels := make([]int32, 1000)
	for i := range 100 {
		labels[i*10] = 1
	}
	ds := indexed(labels, 2)
	ds.Shuffled = true // its feature, the row index, would look recorded
	c, _ := (&Config{}).withDefaults()
	fs, _, _, err := c.validation(ds)
	if err != nil {
		t.Fatal(err)
	}
	ones := 0
	for _, y := range fs[0].val.Y {
		ones += int(y)
	}
	if fs[0].val.N != 200 || ones != 20 {
		t.Fatalf("hold-out of %d rows with %d of class 1, want 200 and 20", fs[0].val.N, ones)
	}
}

// TestGroupedValidationLeavesGroupsOut: rows with groups are validated on
// whole groups their fold did not train on — even when they are also a
// recording — and every group is validated on once; the groups' sizes are
// balanced over the folds.
func TestGroupedValidationLeavesGroupsOut(t *testing.T) {
	labels := make([]int32, 900)
	groups := make([]int32, 900)
	for i := range labels {
		labels[i] = int32(i / 30 % 2)
		groups[i] = int32(i / 100) // 9 groups of 100 rows, in blocks as a file sorted by site
	}
	ds := indexed(labels, 2)
	ds.Groups, ds.Ordered = groups, true
	for g := range 9 {
		ds.GroupNames = append(ds.GroupNames, string(rune('A'+g)))
	}
	c, err := (&Config{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	fs, pl, err := c.validationPlan(ds)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != defaultGroupFolds || !pl.shifted || pl.how != "3 folds of whole groups (9 groups)" {
		t.Fatalf("%d folds, %q, shifted %v", len(fs), pl.how, pl.shifted)
	}
	validated := map[int32]int{}
	for i, f := range pl.rows {
		trained := map[int32]bool{}
		for _, r := range f.Train {
			trained[groups[r]] = true
		}
		for _, r := range f.Valid {
			if trained[groups[r]] {
				t.Fatalf("fold %d validates on group %d, which it trained on", i, groups[r])
			}
			validated[groups[r]]++
		}
		if len(f.Valid) != 300 || len(f.Train) != 600 {
			t.Fatalf("fold %d: %d validation and %d training rows, want 300 and 600", i, len(f.Valid), len(f.Train))
		}
	}
	if len(validated) != 9 {
		t.Fatalf("validated groups %v", validated)
	}
	// One group: validated as its rows' order says.
	for i := range groups {
		groups[i] = 0
	}
	if _, pl, err = c.validationPlan(ds); err != nil || pl.how != "3 forward folds over the latest 30% of rows (time order)" {
		t.Fatalf("one group: %q %v", pl.how, err)
	}
}
