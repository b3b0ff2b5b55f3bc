package inference

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"
)

// fingerprint hashes every generated parameter of tr, so any change to what
// a generator version produces — or any architecture that produces something
// else — shows up as a different hash.
func fingerprint(tr *Transform) string {
	h := sha256.New()
	w := func(v any) { binary.Write(h, binary.LittleEndian, v) }
	for _, b := range tr.blocks {
		w(b.sign)
		w(b.perm)
		w(b.gauss)
		w(b.scale)
	}
	w(tr.offset)
	w(tr.turn)
	w(tr.half)
	w(tr.t)
	return hex.EncodeToString(h.Sum(nil))
}

// TestGeneratorV1Golden pins GeneratorV1. The hashes were recorded on
// linux/amd64; the same test runs on arm64 and 32-bit arm under qemu
// (make test-arm), which is what proves regeneration is bit-for-bit portable.
// If this fails, the generator changed: that needs a new generator version,
// never an updated hash.
func TestGeneratorV1Golden(t *testing.T) {
	for _, c := range []struct {
		spec TransformSpec
		want string
	}{
		{TransformSpec{GeneratorV1, 1, 1, 256, 2048}, "da0f8268019519afcce440ca78f8ceeff9c108486ca99261e480d41c7ff7534a"},
		{TransformSpec{GeneratorV1, 0xdeadbeef, 0.125, 54, 1000}, "aa2e785ef869391326cb80bb50169d1fb567339ac77643907505f271bd3e8b6e"},
		{TransformSpec{GeneratorV1, 7, 4, 784, 3000}, "9bb2f7dbeb62e69fee23d3e2b6ad430a425b148e4739427256c31e39bb2ede95"},
	} {
		tr, err := NewTransform(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := fingerprint(tr); got != c.want {
			t.Errorf("%+v: fingerprint %s, want %s", c.spec, got, c.want)
		}
	}
}

func TestTransformPrefixStable(t *testing.T) {
	small, _ := NewTransform(TransformSpec{GeneratorV1, 5, 1, 100, 300})
	large, _ := NewTransform(TransformSpec{GeneratorV1, 5, 1, 100, 1000})
	x := make([]float32, 100)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	a, b := make([]float32, 300), make([]float32, 1000)
	small.Project(a, x, small.NewWorkspace())
	large.Project(b, x, large.NewWorkspace())
	for j := range a {
		if a[j] != b[j] || small.offset[j] != large.offset[j] || small.half[j] != large.half[j] {
			t.Fatalf("column %d differs between p=300 and p=1000", j)
		}
	}
}

func TestTransformSpecValidation(t *testing.T) {
	for _, s := range []TransformSpec{
		{0, 1, 1, 10, 10},
		{GeneratorV1, 1, 0, 10, 10},
		{GeneratorV1, 1, -1, 10, 10},
		{GeneratorV1, 1, math.NaN(), 10, 10},
		{GeneratorV1, 1, math.Inf(1), 10, 10},
		{GeneratorV1, 1, 1, 0, 10},
		{GeneratorV1, 1, 1, MaxD + 1, 10},
		{GeneratorV1, 1, 1, 10, 0},
		{GeneratorV1, 1, 1, 10, MaxP + 1},
	} {
		if _, err := NewTransform(s); err == nil {
			t.Errorf("NewTransform(%+v) accepted an invalid spec", s)
		}
	}
}

// rows returns the explicit projection matrix R̃ᵀ (P×d, row-major) by
// projecting the basis vectors of the padded input space.
func rows(tr *Transform) []float64 {
	d, p := tr.d, tr.spec.P
	out := make([]float64, p*d)
	ws := tr.NewWorkspace()
	u := make([]float32, p)
	for j := range d {
		e := make([]float32, d)
		e[j] = 1
		tr.Project(u, e[:tr.spec.D], ws)
		for i := range p {
			out[i*d+j] = float64(u[i])
		}
	}
	return out
}

// TestFastfoodRowDistribution checks that the rows of the Fastfood matrix
// behave like rows of a dense N(0, σ⁻²) matrix: squared norms with mean d/σ²
// and the variance of a χ²_d/σ², entries with variance σ⁻² and Gaussian
// tails.
func TestFastfoodRowDistribution(t *testing.T) {
	const sigma, d, p = 0.5, 64, 8192
	tr, err := NewTransform(TransformSpec{GeneratorV1, 11, sigma, d, p})
	if err != nil {
		t.Fatal(err)
	}
	r := rows(tr)
	var n1, n2 float64
	var e2 float64
	within1 := 0
	for i := range p {
		var sq float64
		for j := range d {
			v := r[i*d+j] * sigma
			sq += v * v
			e2 += v * v
			if math.Abs(v) <= 1 {
				within1++
			}
		}
		n1 += sq
		n2 += sq * sq
	}
	meanSq := n1 / p
	varSq := n2/p - meanSq*meanSq
	// χ²_d: mean d, variance 2d. Standard error of the mean √(2d/p) ≈ 0.125.
	if math.Abs(meanSq-d) > 0.7 {
		t.Errorf("mean σ²‖row‖² = %.3f, want %d", meanSq, d)
	}
	if math.Abs(varSq/(2*d)-1) > 0.1 {
		t.Errorf("variance of σ²‖row‖² = %.2f, want %d", varSq, 2*d)
	}
	if v := e2 / (p * d); math.Abs(v-1) > 0.02 {
		t.Errorf("entry variance ×σ² = %.4f, want 1", v)
	}
	// P(|N(0,1)| <= 1) = 0.6827.
	if f := float64(within1) / (p * d); math.Abs(f-0.6827) > 0.01 {
		t.Errorf("fraction of entries within one σ⁻¹ = %.4f, want 0.6827", f)
	}
}

// TestEmbedIntervalMatchesCos compares the cos-free interval test with the
// definition sign(cos(u+b)+t) evaluated in float64. They may differ only
// where cos(u+b)+t is within rounding of 0; the test counts those cases.
func TestEmbedIntervalMatchesCos(t *testing.T) {
	rnd := rand.New(rand.NewPCG(12, 13))
	const d, p, n = 50, 4096, 500
	boundary := 0
	for _, sigma := range []float64{1.0 / 32, 0.5, 1, 8} {
		tr, _ := NewTransform(TransformSpec{GeneratorV1, 99, sigma, d, p})
		ws := tr.NewWorkspace()
		x := make([]float32, d)
		u := make([]float32, p)
		z := make([]uint64, (p+63)/64)
		for range n {
			for i := range x {
				x[i] = float32(2*rnd.Float64() - 1)
			}
			tr.Project(u, x, ws)
			tr.Embed(z, x, ws)
			for j := range p {
				c := math.Cos(float64(u[j])+tr.Offset(j)) + float64(tr.Threshold(j))
				want := c >= 0
				got := z[j/64]>>(j%64)&1 == 1
				if got == want {
					continue
				}
				// The float64 reduction of u+b mod 2π is exact to about
				// 1e-15·|u+b|; cos moves by at most that much.
				if math.Abs(c) > 1e-13*(1+math.Abs(float64(u[j]))) {
					t.Fatalf("σ=%g column %d: interval test %v, cos form %v with cos(u+b)+t = %g (u = %g)", sigma, j, got, want, c, u[j])
				}
				boundary++
			}
		}
	}
	t.Logf("%d boundary disagreements in %d bits", boundary, 4*n*p)
}

// hammingExpectation is E[d_H(z, z')/p] for BCSIK with a Gaussian kernel
// value k between the two inputs (Raginsky & Lazebnik 2009, eq. for h_k):
// (8/π²) Σ_{m≥1} (1 - k^{m²}) / (4m² - 1).
func hammingExpectation(k float64) float64 {
	var s float64
	for m := 1; m < 200; m++ {
		mm := float64(m * m)
		s += (1 - math.Pow(k, mm)) / (4*mm - 1)
	}
	return 8 / (math.Pi * math.Pi) * s
}

// TestEmbeddingPreservesGaussianKernel checks the paper's Lemma 1 on pairs of
// points at many distances: h₁(k) - δ <= d_H/p <= h₂(k) + δ, with
// h₁(u) = 4/π²·(1-u) and h₂(u) = min(½√(1-u), 4/π²·(1-2u/3)). With n = 40
// points, p = 8192 and ε = 0.01 the lemma's condition p >= log(n²/ε)/(2δ²)
// holds for δ = 0.03. It also checks the tighter statement that d_H/p is
// close to its expectation.
func TestEmbeddingPreservesGaussianKernel(t *testing.T) {
	const d, p, n, sigma, delta = 16, 8192, 40, 1.0, 0.03
	tr, _ := NewTransform(TransformSpec{GeneratorV1, 2024, sigma, d, p})
	ws := tr.NewWorkspace()
	rnd := rand.New(rand.NewPCG(14, 15))
	pts := make([][]float32, n)
	codes := make([][]uint64, n)
	for i := range pts {
		// Points along a random walk so that pair distances span the whole
		// kernel range, from k ≈ 1 to k ≈ 0.
		pts[i] = make([]float32, d)
		if i > 0 {
			copy(pts[i], pts[i-1])
		}
		for j := range d {
			pts[i][j] += float32(rnd.NormFloat64() * 0.15)
		}
		codes[i] = make([]uint64, p/64)
		tr.Embed(codes[i], pts[i], ws)
	}
	h1 := func(u float64) float64 { return 4 / (math.Pi * math.Pi) * (1 - u) }
	h2 := func(u float64) float64 {
		return math.Min(0.5*math.Sqrt(1-u), 4/(math.Pi*math.Pi)*(1-2*u/3))
	}
	var maxDev float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			var d2 float64
			for f := range d {
				v := float64(pts[i][f] - pts[j][f])
				d2 += v * v
			}
			k := math.Exp(-d2 / (2 * sigma * sigma))
			ham := 0
			for w := range codes[i] {
				ham += popcount(codes[i][w] ^ codes[j][w])
			}
			got := float64(ham) / p
			if got < h1(k)-delta || got > h2(k)+delta {
				t.Errorf("pair (%d,%d): k = %.4f, d_H/p = %.4f outside [%.4f, %.4f]", i, j, k, got, h1(k)-delta, h2(k)+delta)
			}
			maxDev = math.Max(maxDev, math.Abs(got-hammingExpectation(k)))
		}
	}
	if maxDev > delta {
		t.Errorf("max |d_H/p - E[d_H/p]| = %.4f over all pairs, want <= %g", maxDev, delta)
	}
	t.Logf("max deviation from the expected Hamming distance: %.4f", maxDev)
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// referenceProject is the projection written as the separate loops of the
// definition V_k x = S H G Π H B x, each product rounded to float32.
func referenceProject(tr *Transform, x []float32) []float32 {
	d, p := tr.d, tr.spec.P
	out := make([]float32, p)
	for k, blk := range tr.blocks {
		a := make([]float32, d)
		copy(a, x)
		for i := range a {
			a[i] *= blk.sign[i]
		}
		naiveFWHT(a)
		b := make([]float32, d)
		for i := range b {
			b[i] = float32(blk.gauss[i] * a[blk.perm[i]])
		}
		naiveFWHT(b)
		for i := 0; i < d && k*d+i < p; i++ {
			out[k*d+i] = float32(b[i] * blk.scale[i])
		}
	}
	return out
}

func TestProjectBitIdenticalToReferenceLoops(t *testing.T) {
	rnd := rand.New(rand.NewPCG(16, 17))
	for _, s := range []TransformSpec{{GeneratorV1, 1, 0.7, 1, 5}, {GeneratorV1, 2, 1, 3, 40}, {GeneratorV1, 3, 2, 256, 2048}, {GeneratorV1, 4, 0.1, 54, 1000}} {
		tr, _ := NewTransform(s)
		x := make([]float32, s.D)
		for i := range x {
			x[i] = float32(rnd.NormFloat64())
		}
		got := make([]float32, s.P)
		tr.Project(got, x, tr.NewWorkspace())
		want := referenceProject(tr, x)
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%+v: u[%d] = %g, reference %g", s, j, got[j], want[j])
			}
		}
	}
}

// TestEmbeddingGolden pins the projections and bits of fixed inputs; the
// same test under qemu (make test-arm) proves they are bit-identical on
// arm64 and 32-bit arm.
func TestEmbeddingGolden(t *testing.T) {
	for _, c := range []struct {
		spec TransformSpec
		want string
	}{
		{TransformSpec{GeneratorV1, 1, 1, 256, 2048}, "47b8874f266da36f283de47284b2f6692c6abe3dc5c9ef99f12b8e610c6a0108"},
		{TransformSpec{GeneratorV1, 3, 0.03125, 54, 2048}, "e01cddadfbc9f810e2941ddcb877bdfbc87489f78ba4d424a8d9d309262e4dac"},
		{TransformSpec{GeneratorV1, 9, 8, 784, 1500}, "2c25e463361079d86df3876102c9d5c1a6c9f24964e56ad2cf8a5152f3c30a92"},
	} {
		tr, _ := NewTransform(c.spec)
		ws := tr.NewWorkspace()
		h := sha256.New()
		x := make([]float32, c.spec.D)
		u := make([]float32, c.spec.P)
		z := make([]uint64, (c.spec.P+63)/64)
		for n := range 50 {
			for i := range x {
				// Deterministic inputs in [-1, 1] from integer arithmetic.
				x[i] = float32(int32((uint32(n*7919+i*104729)*2654435761)>>8)) / (1 << 23)
			}
			tr.Project(u, x, ws)
			tr.Embed(z, x, ws)
			binary.Write(h, binary.LittleEndian, u)
			binary.Write(h, binary.LittleEndian, z)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != c.want {
			t.Errorf("%+v: embedding fingerprint %s, want %s", c.spec, got, c.want)
		}
	}
}
