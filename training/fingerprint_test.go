package training

import (
	"testing"
)

// TestFingerprintSeesDrift: inputs like the training rows score near 0,
// shifted inputs far from it, and the most drifted bits are threshold
// bits of the shifted feature.
func TestFingerprintSeesDrift(t *testing.T) {
	ds := blobs(2000, 4, 3, 7)
	res, err := Train(ds, &Config{Budget: 3000, Weights: "ternary", Thresholds: 16, Sigma: 1, C: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	fp := res.Spec.Fingerprint
	if fp == nil || len(fp.Columns) == 0 {
		t.Fatal("no fingerprint")
	}
	drift := func(shift float32) (float64, []float64) {
		counts := make([]uint32, len(fp.Columns))
		z := make([]uint64, (len(res.Spec.Kept)+63)/64)
		x := make([]float32, ds.D)
		for i := range ds.N {
			copy(x, ds.Row(i))
			x[2] += shift
			if _, err := res.Model.PredictEmbed(nil, z, x); err != nil {
				t.Fatal(err)
			}
			fp.Count(counts, z)
		}
		per := make([]float64, len(fp.Columns))
		return fp.Drift(per, counts, ds.N), per
	}
	same, _ := drift(0)
	moved, per := drift(1.5)
	t.Logf("drift %.5f on the training rows, %.4f with feature 2 shifted", same, moved)
	if same > 0.001 || moved < 50*same || moved < 0.02 {
		t.Fatalf("drift %.5f unshifted, %.5f shifted", same, moved)
	}
	// Feature 2's thresholds are columns 32…47 of the embedding (16 per
	// feature, fewer if quantiles coincide): the top bit must be one.
	top := fp.Columns[mostDriftedIndex(per)]
	col := res.Spec.Kept[top]
	feature, seen := -1, 0
	for f, list := range res.Spec.Thresholds {
		if int(col) < seen+len(list) {
			feature = f
			break
		}
		seen += len(list)
	}
	if feature != 2 {
		t.Fatalf("most drifted bit is embedding column %d (feature %d), want a threshold of feature 2", col, feature)
	}
}

func mostDriftedIndex(per []float64) int {
	best := 0
	for i, v := range per {
		if v > per[best] {
			best = i
		}
	}
	return best
}
