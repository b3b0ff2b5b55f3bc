package inference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The fast paths (simd_amd64.go, simd_arm64.go) against the pure-Go
// reference loops, bit for bit, on random inputs of every size: each
// test builds what it checks with the kernels it names (cpu, a variant
// of it, goKernels), so they run in parallel. Where there is no fast path
// both sides are the reference and the tests still pin that the pure-Go
// path runs.

func TestFastPathAvailability(t *testing.T) {
	t.Parallel()
	t.Logf("fast path: %s, in use: %v", simdName, cpu.simd)
	if simdName == "none" && cpu.simd {
		t.Fatal("the fast path is on without an implementation")
	}
}

func TestFWHTFastPathMatchesReferenceEverySize(t *testing.T) {
	t.Parallel()
	testFWHT(t, &cpu)
}

// testFWHT checks FWHT with the kernels k against the reference loop.
func testFWHT(t *testing.T, k *kernels) {
	rnd := rand.New(rand.NewPCG(31, 32))
	for n := 2; n <= MaxFWHT; n *= 2 {
		for trial := range 3 {
			x := make([]float32, n)
			for i := range x {
				switch trial {
				case 0:
					x[i] = float32(rnd.NormFloat64())
				case 1: // wide magnitudes: rounding differs with any reordering
					x[i] = float32(rnd.NormFloat64() * math.Exp(rnd.NormFloat64()*8))
				default: // exact cancellations produce zeros of both signs
					x[i] = float32(rnd.IntN(3) - 1)
				}
			}
			fast, ref := append([]float32(nil), x...), append([]float32(nil), x...)
			fwht(k, fast)
			naiveFWHT(ref)
			for i := range fast {
				if math.Float32bits(fast[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("n=%d trial %d: element %d: %g (%#x) vs reference %g (%#x)", n, trial, i, fast[i], math.Float32bits(fast[i]), ref[i], math.Float32bits(ref[i]))
				}
			}
		}
	}
}

func TestEmbedFastPathMatchesReference(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(33, 34))
	for _, d := range []int{1, 3, 7, 8, 9, 16, 24, 54, 100, 256, 784} {
		for _, p := range []int{1, 63, 64, 65, 200, 1000, 3*nextPow2(d) + 5} {
			for _, keep := range []string{"all", "some", "run"} {
				t.Run(fmt.Sprintf("d=%d/p=%d/%s", d, p, keep), func(t *testing.T) {
					testEmbedFastPath(t, cpu, rnd, d, p, keep)
				})
			}
		}
	}
}

// testEmbedFastPath checks a model's kept bits with the kernels k against
// the same model's with the Go loops.
func testEmbedFastPath(t *testing.T, k kernels, rnd *rand.Rand, d, p int, keep string) {
	// Threshold columns in front put the transform's bits at an offset in
	// the kept bits: unaligned, or 0 or 64 (the bits written straight into
	// the kept bits' words) when every column is kept.
	th := make([][]float32, d)
	switch lead := rnd.IntN(3); lead {
	case 0:
		for i := range th {
			for k := range rnd.IntN(3) {
				th[i] = append(th[i], float32(k)-0.5)
			}
		}
	default:
		for k := range 64 * (lead - 1) {
			th[0] = append(th[0], float32(k)/64-0.5)
		}
	}
	base := &ModelSpec{Classes: []string{"a", "b", "c"}, Thresholds: th,
		Scaler:    Scaler{Lo: make([]float32, d), Hi: make([]float32, d)},
		Transform: TransformSpec{Generator: GeneratorV1, Seed: rnd.Uint64(), Sigma: 0.2 + 3*rnd.Float64(), D: d, P: p}}
	for i := range d {
		base.Scaler.Lo[i], base.Scaler.Hi[i] = -1, 1
	}
	cols := base.Columns()
	weights := make([][]int8, 3)
	lo, hi := rnd.IntN(cols), rnd.IntN(cols)
	for c := range weights {
		weights[c] = make([]int8, cols)
		for j := range weights[c] {
			switch keep {
			case "all":
				weights[c][j] = 1
			case "some":
				weights[c][j] = int8(rnd.IntN(9) / 4) // mostly zero
			case "run":
				if j >= min(lo, hi) && j <= max(lo, hi) {
					weights[c][j] = -1
				}
			}
		}
	}
	weights[0][cols-1] = 1 // at least one kept column
	spec, err := NewSpec(base, weights, []float32{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := newModel(spec, k)
	if err != nil {
		t.Fatal(err)
	}
	goModel, err := newModel(spec, goKernels)
	if err != nil {
		t.Fatal(err)
	}
	words := (len(spec.Kept) + 63) / 64
	fast, ref := make([]uint64, words), make([]uint64, words)
	x := make([]float32, d)
	for trial := range 20 {
		for i := range x {
			x[i] = float32(rnd.NormFloat64())
			if trial%4 == 3 { // far outside the scaler's range: large phases
				x[i] *= 1e5
			}
		}
		if err := m.EmbedKept(fast, x); err != nil {
			t.Fatal(err)
		}
		if err := goModel.EmbedKept(ref, x); err != nil {
			t.Fatal(err)
		}
		for w := range fast {
			if fast[w] != ref[w] {
				t.Fatalf("trial %d: kept bits word %d: %#x, reference %#x", trial, w, fast[w], ref[w])
			}
		}
	}
}

func TestProjectionFastPathMatchesReference(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(35, 36))
	for _, in := range []int{1, 5, 64, 100, 256, 784} {
		for _, out := range []int{1, 7, 8, 9, 48} {
			p := &Projection{Scale: make([]float32, out), Bias: make([]float32, out)}
			words := (in + 63) / 64
			for k := range out {
				w := randomTernary(rnd, in, rnd.Float64())
				s, nz := make([]uint64, words), make([]uint64, words)
				PackTernary(s, nz, w)
				p.Sign, p.NonZero = append(p.Sign, s), append(p.NonZero, nz)
				p.Scale[k] = float32(rnd.NormFloat64())
				if k%2 == 0 {
					p.Bias[k] = float32(rnd.NormFloat64())
				}
			}
			pr, err := NewProjector(p, in)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, in)
			fast, ref := make([]float32, out), make([]float32, out)
			for trial := range 10 {
				for i := range x {
					switch rnd.IntN(4) {
					case 0:
						x[i] = 0
					case 1:
						x[i] = float32(math.Copysign(0, -1))
					default:
						x[i] = float32(rnd.NormFloat64())
					}
				}
				pr.Apply(fast, x)
				pr.pr.apply(&goKernels, ref, x)
				for k := range fast {
					if math.Float32bits(fast[k]) != math.Float32bits(ref[k]) {
						t.Fatalf("in=%d out=%d trial %d: output %d = %g (%#x), reference %g (%#x)", in, out, trial, k, fast[k], math.Float32bits(fast[k]), ref[k], math.Float32bits(ref[k]))
					}
				}
			}
		}
	}
}

func TestTernaryDotFastPathMatchesReference(t *testing.T) {
	t.Parallel()
	testTernaryDot(t, &cpu)
}

// testTernaryDot checks TernaryDot with the kernels k against the Go
// loop and the definition.
func testTernaryDot(t *testing.T, k *kernels) {
	rnd := rand.New(rand.NewPCG(37, 38))
	for _, n := range []int{1, 63, 64, 65, 255, 256, 257, 1000, 4097, 22656} {
		words := (n + 63) / 64
		for _, zf := range []float64{0, 0.4, 1} {
			s, nz, z := make([]uint64, words), make([]uint64, words), make([]uint64, words)
			w := randomTernary(rnd, n, zf)
			PackTernary(s, nz, w)
			want := 0
			for j, v := range w {
				z[j/64] |= uint64(rnd.IntN(2)) << (j % 64)
				want += int(v) * int(2*(z[j/64]>>(j%64)&1)-1)
			}
			got, ref := ternaryDot(k, z, s, nz), ternaryDot(&goKernels, z, s, nz)
			if got != want || ref != want {
				t.Fatalf("n=%d zero fraction %g: fast path %d, Go loop %d, definition %d", n, zf, got, ref, want)
			}
		}
	}
}

// The interval test's fast path decides most columns in float32 and the
// rest in float64 (see bitsGo); this drives both on columns of a real
// transform: ordinary phases, phases within a few float32 ulps of the
// interval's ends (where only the float64 pass can decide), huge, NaN
// and infinite ones.
func TestIntervalBitsFastPathMatchesReference(t *testing.T) {
	t.Parallel()
	if !cpu.embedSIMD() {
		t.Skip("no fast interval test on " + simdName)
	}
	testIntervalBits(t, cpu)
}

// allColumns returns the columns 0 to n−1.
func allColumns(n int) []int32 {
	cols := make([]int32, n)
	for i := range cols {
		cols[i] = int32(i)
	}
	return cols
}

// fastPhase is bitsSIMD's float32 pass for column i of plan (see bitsGo):
// the phase p and the scaled distance e to the interval's end; the pass
// decides the column, bit e < 0, when |e| > max(|p|, 1).
func fastPhase(plan *columnPlan, i int, u float32) (p, e float32) {
	p = float32(u * plan.s32[i]) // rounded, as VMULPS does: never fused with the sum
	q := p + plan.t32[i]
	f := float32(math.Abs(float64(q - float32(math.RoundToEven(float64(q))))))
	return p, f*edgeScale + plan.e32[i]
}

// testIntervalBits checks the interval test's fast path with the kernels
// k against bitsGo.
func testIntervalBits(t *testing.T, k kernels) {
	rnd := rand.New(rand.NewPCG(39, 40))
	tr, err := newTransform(TransformSpec{Generator: GeneratorV1, Seed: 7, Sigma: 1, D: 16, P: 4096}, k)
	if err != nil {
		t.Fatal(err)
	}
	cols := allColumns(tr.spec.P)
	plan := tr.columnPlan(cols)
	n := len(cols)
	u := make([]float32, n)
	fast, ref := make([]uint64, n/64), make([]uint64, n/64)
	edges := 0
	for trial := range 40 {
		for i := range u {
			s := float64(plan.scale[i])
			switch mode := (trial + i) % 8; {
			case trial%4 == 0 || mode < 2 || i/64%3 == 0: // an ordinary phase (every third word: all)
				u[i] = float32(rnd.NormFloat64() * 3 / s)
			case mode < 6: // a phase at an end of the interval, ± a few ulps (mode 2, 3) or ± about the float32 pass's margin (4, 5)
				k := float64(rnd.IntN(9) - 4)
				end := k + plan.half[i]
				if mode%2 == 0 {
					end = k - plan.half[i]
				}
				phase := end - plan.turn[i]
				if mode >= 4 {
					phase += float64(2*rnd.IntN(2)-1) * (0.8 + 0.4*rnd.Float64()) * 0x1p-19 * max(math.Abs(phase), 1)
				}
				u[i] = float32(phase * 2 * math.Pi / s)
				for range rnd.IntN(7) - 3 {
					if mode < 4 {
						u[i] = math.Nextafter32(u[i], float32(math.Inf(1)))
					}
				}
			case mode == 6: // huge
				u[i] = float32(rnd.NormFloat64() * math.Exp(rnd.Float64()*80))
			default:
				u[i] = [...]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0}[rnd.IntN(4)]
			}
		}
		clear(ref)
		bitsGo(ref, u, plan.scale, plan.turn, plan.half)
		tr.k.bitsSIMD(fast, u, plan.scale, plan.turn, plan.half, plan.s32, plan.t32, plan.e32)
		for w := range fast {
			if fast[w] != ref[w] {
				for b := range 64 {
					if i := 64*w + b; fast[w]>>b&1 != ref[w]>>b&1 {
						p, e := fastPhase(plan, i, u[i])
						t.Logf("col %d: u %g scale %g turn %g half %g: float32 pass p %g e %g", i, u[i], plan.scale[i], plan.turn[i], plan.half[i], p, e)
					}
				}
				t.Fatalf("trial %d: word %d: %#x, reference %#x", trial, w, fast[w], ref[w])
			}
		}
		for i := range u { // count the columns the float32 pass cannot decide
			if p, e := fastPhase(plan, i, u[i]); !(math.Abs(float64(e)) > max(math.Abs(float64(p)), 1)) {
				edges++
			}
		}
	}
	if edges < 1000 {
		t.Errorf("only %d columns were left to the float64 pass; the test does not reach it", edges)
	}
	t.Logf("%d of %d columns decided in float64", edges, 40*n)
}
