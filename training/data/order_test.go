package data

import (
	"math"
	"strings"
	"testing"

	"github.com/trit-iot/trit/training/internal/splitmix"
)

// recording returns n rows of a simulated sensor log: a machine that stays
// in each of k states for a while (mean stay `stay` rows), three features
// that drift slowly around a level set by the state, plus noise.
func recording(n, k, stay int, seed uint64) *Dataset {
	r := splitmix.New(seed)
	d := &Dataset{Name: "rec", N: n, D: 3}
	for c := range k {
		d.Classes = append(d.Classes, string(rune('a'+c)))
	}
	state := 0
	drift := [3]float64{}
	for range n {
		if r.Intn(stay) == 0 {
			state = r.Intn(k)
		}
		for j := range drift {
			drift[j] = 0.99*drift[j] + 0.1*gauss(r)
			d.X = append(d.X, float32(float64(state)+drift[j]+0.3*gauss(r)))
		}
		d.Y = append(d.Y, int32(state))
	}
	return d
}

// gauss is a standard normal deviate (Box–Muller).
func gauss(r *splitmix.Source) float64 {
	return math.Sqrt(-2*math.Log(1-r.Float64())) * math.Cos(2*math.Pi*r.Float64())
}

// shuffled returns d's rows in a seeded random order.
func shuffled(d *Dataset, seed uint64) *Dataset {
	r := splitmix.New(seed)
	perm := make([]int, d.N)
	for i := range perm {
		perm[i] = i
	}
	for i := d.N - 1; i > 0; i-- {
		j := r.Intn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return d.Subset(perm)
}

func TestDetectOrderRecordedAndShuffled(t *testing.T) {
	for _, tt := range []struct {
		n, k, stay int
	}{{2000, 2, 50}, {500, 4, 20}, {10000, 3, 200}, {300, 2, 10}} {
		rec := recording(tt.n, tt.k, tt.stay, uint64(tt.n))
		if o := DetectOrder(rec); !o.Recorded || o.Grouped {
			t.Errorf("n=%d k=%d stay=%d: a recording not detected: %s", tt.n, tt.k, tt.stay, o)
		}
		for seed := range uint64(5) {
			if o := DetectOrder(shuffled(rec, seed)); o.Recorded {
				t.Errorf("n=%d k=%d stay=%d seed %d: shuffled rows detected as a recording: %s", tt.n, tt.k, tt.stay, seed, o)
			}
		}
	}
}

// TestDetectOrderFeaturesAlone: labels that change at nearly every row (a
// fast alternation) but features that drift slowly still make a recording.
func TestDetectOrderFeaturesAlone(t *testing.T) {
	rec := recording(3000, 2, 1000, 7)
	r := splitmix.New(1)
	for i := range rec.Y {
		rec.Y[i] = int32(r.Intn(2))
	}
	o := DetectOrder(rec)
	if !o.Recorded || math.Abs(o.LabelZ) > orderZ {
		t.Fatalf("slowly drifting features with random labels: %s", o)
	}
}

// TestDetectOrderGroupedByClass: a file sorted by label (LIBSVM's cod-rna,
// w8a) is no time order: reported as grouped, not recorded.
func TestDetectOrderGroupedByClass(t *testing.T) {
	rec := recording(3000, 3, 50, 3)
	var byClass []int
	for c := range int32(3) {
		for i, y := range rec.Y {
			if y == c {
				byClass = append(byClass, i)
			}
		}
	}
	o := DetectOrder(rec.Subset(byClass))
	if !o.Grouped || o.Recorded || !strings.Contains(o.String(), "grouped by class") {
		t.Fatalf("rows sorted by label: %s", o)
	}
}

func TestDetectOrderTooFewRows(t *testing.T) {
	o := DetectOrder(recording(orderMinRows-1, 2, 5, 1))
	if o.Recorded || !strings.Contains(o.String(), "too few") {
		t.Fatalf("%d rows: %s", orderMinRows-1, o)
	}
}

// TestDetectOrderIgnoresNaN: missing values neither count as neighbours nor
// make the statistic NaN.
func TestDetectOrderIgnoresNaN(t *testing.T) {
	rec := recording(2000, 2, 50, 9)
	for i := 0; i < len(rec.X); i += 7 {
		rec.X[i] = float32(math.NaN())
	}
	o := DetectOrder(rec)
	if !o.Recorded || math.IsNaN(o.Autocorr) {
		t.Fatalf("with missing values: %s", o)
	}
}
