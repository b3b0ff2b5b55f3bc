package inference

import (
	"errors"
	"math"
	"testing"
)

func TestFingerprintDrift(t *testing.T) {
	f := &Fingerprint{Columns: []int32{0, 3, 70}, Rates: []uint8{0, 255, 128}}
	if err := f.Validate(71); err != nil {
		t.Fatal(err)
	}
	// Rows that fire exactly as in training: no drift.
	counts := make([]uint32, 3)
	z := make([]uint64, 2)
	z[0] = 1 << 3 // column 3 on, column 0 off
	for i := range 100 {
		z[1] = 0
		if i%2 == 0 {
			z[1] = 1 << (70 - 64)
		}
		f.Count(counts, z)
	}
	if counts[0] != 0 || counts[1] != 100 || counts[2] != 50 {
		t.Fatalf("counts %v", counts)
	}
	if d := f.Drift(nil, counts, 100); d > 1e-4 {
		t.Fatalf("drift %g on inputs like the training data", d)
	}
	// Column 0 now always fires and column 3 never: JS = 1 bit each.
	per := make([]float64, 3)
	d := f.Drift(per, []uint32{100, 0, 50}, 100)
	if math.Abs(per[0]-1) > 1e-9 || math.Abs(per[1]-1) > 1e-9 || per[2] > 1e-4 || math.Abs(d-2.0/3) > 1e-4 {
		t.Fatalf("drift %g, per column %v", d, per)
	}
	if top := MostDrifted(per, 2); top[0] != 0 || top[1] != 1 {
		t.Fatalf("most drifted %v", top)
	}
	if f.Drift(nil, counts, 0) != 0 {
		t.Fatal("drift of no input")
	}
}

func TestFingerprintValidate(t *testing.T) {
	for name, f := range map[string]*Fingerprint{
		"lengths":    {Columns: []int32{1, 2}, Rates: []uint8{1}},
		"order":      {Columns: []int32{2, 1}, Rates: []uint8{1, 1}},
		"past kept":  {Columns: []int32{10}, Rates: []uint8{1}},
		"duplicates": {Columns: []int32{3, 3}, Rates: []uint8{1, 1}},
		"negative":   {Columns: []int32{-1}, Rates: []uint8{1}},
		"too many":   {Columns: make([]int32, MaxFingerprint+1), Rates: make([]uint8, MaxFingerprint+1)},
	} {
		if err := f.Validate(10); !errors.Is(err, ErrFingerprint) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPredictEmbedMatchesEmbedKept(t *testing.T) {
	spec := pipelineSpec(t, 17, 9, 200, 3, true)
	m, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, -2, 3, 0.5, 0, 7, -1, 2, 4}
	a, b := make([]uint64, (len(spec.Kept)+63)/64), make([]uint64, (len(spec.Kept)+63)/64)
	m.EmbedKept(a, x)
	c1, _ := m.PredictEmbed(nil, b, x)
	c2, _ := m.Predict(nil, x)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("PredictEmbed bits differ from EmbedKept")
		}
	}
	if c1 != c2 {
		t.Fatal("PredictEmbed class differs from Predict")
	}
	if n := testing.AllocsPerRun(50, func() { m.PredictEmbed(nil, b, x) }); n != 0 {
		t.Fatalf("PredictEmbed allocates %v times", n)
	}
}
