package inference

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDetLogAccuracy(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		x := math.Exp(rnd.Float64()*80 - 40)
		if got, want := detLog(x), math.Log(x); math.Abs(got-want) > 4e-16*math.Max(1, math.Abs(want)) {
			t.Fatalf("detLog(%g) = %.17g, want %.17g", x, got, want)
		}
	}
	// No subnormals: the generator never takes the log of one (its uniforms
	// are multiples of 2⁻⁵³), and amd64's assembly math.Log is itself wrong
	// there (it returns -709.09 for 5e-324, whose log is -744.44).
	for _, x := range []float64{1, 2, 0.5, 0x1p-53, math.SmallestNonzeroFloat64 * 0x1p52, math.MaxFloat64, 1 - 1e-16, 1 + 1e-15} {
		if got, want := detLog(x), math.Log(x); math.Abs(got-want) > 4e-16*math.Max(1, math.Abs(want)) {
			t.Errorf("detLog(%g) = %.17g, want %.17g", x, got, want)
		}
	}
}

func TestDetAcosAccuracy(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	check := func(x float64) {
		// acos is ill-conditioned near ±1 (d/dx acos = -1/√(1-x²)), and
		// package math's own result is off by that factor there.
		tol := 1e-15 * (1 + 1/math.Sqrt(math.Max(1-x*x, 1e-300)))
		if got, want := detAcos(x), math.Acos(x); math.Abs(got-want) > tol {
			t.Fatalf("detAcos(%g) = %.17g, want %.17g", x, got, want)
		}
	}
	for _, x := range []float64{-1, -0.7, -0.5, 0, 0.5, 0.66, 0.7, 0.7000001, 1} {
		check(x)
	}
	for range 100000 {
		check(2*rnd.Float64() - 1)
	}
}

func TestGaussianAndChiMoments(t *testing.T) {
	r := stream(42, 0)
	const n = 200000
	var s1, s2, s4 float64
	for range n {
		g := r.gauss()
		s1 += g
		s2 += g * g
		s4 += g * g * g * g
	}
	mean, vr, kurt := s1/n, s2/n, s4/n
	// Standard errors: mean 1/√n ≈ 0.0022, variance √(2/n) ≈ 0.0032, fourth moment √(96/n) ≈ 0.022.
	if math.Abs(mean) > 0.011 || math.Abs(vr-1) > 0.016 || math.Abs(kurt-3) > 0.11 {
		t.Fatalf("Gaussian moments: mean %.4f, variance %.4f, E[g⁴] %.4f; want 0, 1, 3", mean, vr, kurt)
	}
	for _, k := range []int{2, 16, 256} {
		var c1, c2 float64
		const m = 50000
		for range m {
			c := r.chi(k)
			c1 += c
			c2 += c * c
		}
		// E[χ²] = k exactly; E[χ] = √2 Γ((k+1)/2)/Γ(k/2).
		lg1, _ := math.Lgamma(float64(k+1) / 2)
		lg2, _ := math.Lgamma(float64(k) / 2)
		wantMean := math.Sqrt2 * math.Exp(lg1-lg2)
		gotMean, gotSq := c1/m, c2/m
		if math.Abs(gotMean-wantMean) > 5*math.Sqrt(0.5/m) || math.Abs(gotSq-float64(k)) > 5*math.Sqrt(2*float64(k)/m) {
			t.Errorf("χ_%d: mean %.4f (want %.4f), E[χ²] %.3f (want %d)", k, gotMean, wantMean, gotSq, k)
		}
	}
}

func TestIntnUnbiasedAndInRange(t *testing.T) {
	r := stream(1, 0)
	const n, draws = 7, 700000
	var counts [n]int
	for range draws {
		v := r.intn(n)
		if v >= n {
			t.Fatalf("intn(%d) = %d", n, v)
		}
		counts[v]++
	}
	for v, c := range counts {
		// Binomial sd = √(draws·(1/7)·(6/7)) ≈ 293; allow 5 sd.
		if math.Abs(float64(c)-draws/n) > 1500 {
			t.Errorf("value %d drawn %d times, want about %d", v, c, draws/n)
		}
	}
}
