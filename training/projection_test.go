package training

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// TestPrincipalDirectionsWide: with fewer rows than features the
// directions come from the Gram matrix, and they are the covariance's
// (the same up to sign, by variance).
func TestPrincipalDirectionsWide(t *testing.T) {
	const m, d = 30, 50
	r := splitmix.New(3)
	a := mat.NewDense(m, d, nil)
	for i := range m {
		// Rows spread most along the first features: distinct variances.
		for j := range d {
			a.Set(i, j, (2*r.Float64()-1)*float64(d-j))
		}
	}
	// Centre the rows, as fitProjection does.
	for j := range d {
		s := 0.0
		for i := range m {
			s += a.At(i, j)
		}
		for i := range m {
			a.Set(i, j, a.At(i, j)-s/m)
		}
	}
	wide, err := principalDirections(a, m, d)
	if err != nil {
		t.Fatal(err)
	}
	// The covariance way, on the same rows.
	var cov mat.SymDense
	cov.SymOuterK(1/float64(m), a.T())
	var eig mat.EigenSym
	if !eig.Factorize(&cov, true) {
		t.Fatal("no eigen-decomposition")
	}
	var full mat.Dense
	eig.VectorsTo(&full)
	rows, cols := wide.Dims()
	if rows != d || cols > m-1 || cols < m-2 {
		t.Fatalf("%d×%d directions, want %d rows and the rank (%d) of columns", rows, cols, d, m-1)
	}
	for k := range 5 {
		dot := mat.Dot(wide.ColView(cols-1-k), full.ColView(d-1-k))
		if math.Abs(math.Abs(dot)-1) > 1e-6 {
			t.Fatalf("direction %d: |cos| = %g, want 1", k, math.Abs(dot))
		}
	}
}

// wide returns n rows of d uniform features, labels alternating.
func wide(n, d int) *data.Dataset {
	r := splitmix.New(uint64(n * d))
	ds := &data.Dataset{Name: "wide", N: n, D: d, Classes: []string{"a", "b"}, Y: make([]int32, n)}
	ds.X = make([]float32, n*d)
	for i := range ds.X {
		ds.X[i] = float32(r.Float64())
	}
	for i := range ds.Y {
		ds.Y[i] = int32(i % 2)
	}
	return ds
}

// TestWideDataRefusedOrTrained: 10,000 features cannot fit the default
// budget (the scaler alone is 40,000 bytes): refused at once, saying what
// to give instead; with that budget, the search runs on the Gram matrix
// instead of a 10,000² covariance.
func TestWideDataRefusedOrTrained(t *testing.T) {
	ds := wide(40, 10000)
	_, err := Train(ds, &Config{Seed: 1})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "cannot hold a model of 10000 features") || !strings.Contains(err.Error(), "--budget") {
		t.Fatalf("10,000 features at the default budget: %v", err)
	}
	if testing.Short() {
		return
	}
	res, err := Train(wide(40, 3000), &Config{Seed: 1, Budget: 80000, Embedding: "projection"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Spec.NumFeatures() != 3000 || res.Spec.Projection == nil || res.Spec.Projection.Out() > 39 {
		t.Fatalf("%d features, projection %v: want 3000 onto at most the 39 directions 40 rows span", res.Spec.NumFeatures(), res.Spec.Projection)
	}
}
