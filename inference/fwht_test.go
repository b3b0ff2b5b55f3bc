package inference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// hadamard returns the explicit n×n Sylvester matrix, row-major.
func hadamard(n int) []float64 {
	h := []float64{1}
	for k := 1; k < n; k *= 2 {
		next := make([]float64, 4*k*k)
		for i := range k {
			for j := range k {
				v := h[i*k+j]
				next[i*2*k+j] = v
				next[i*2*k+j+k] = v
				next[(i+k)*2*k+j] = v
				next[(i+k)*2*k+j+k] = -v
			}
		}
		h = next
	}
	return h
}

func TestFWHTMatchesHadamardMatrix(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := 2; n <= 512; n *= 2 {
		h := hadamard(n)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rnd.NormFloat64())
		}
		want := make([]float64, n)
		for i := range n {
			for j := range n {
				want[i] += h[i*n+j] * float64(x[j])
			}
		}
		got := append([]float32(nil), x...)
		FWHT(got)
		// Each output is a sum of n terms of size ~1 in float32: allow
		// log2(n) roundings of the running magnitude.
		tol := 1e-6 * math.Sqrt(float64(n)) * float64(log2(n)+1) * 4
		for i := range n {
			if d := math.Abs(float64(got[i]) - want[i]); d > tol {
				t.Fatalf("n=%d: (Hx)[%d] = %g, want %g (|diff| %g > %g)", n, i, got[i], want[i], d, tol)
			}
		}
	}
}

func TestFWHTInvolution(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for n := 2; n <= MaxFWHT; n *= 4 {
		x := make([]float32, n)
		for i := range x {
			// Small integers keep every intermediate exact in float32, so
			// H(Hx) = n·x holds exactly.
			x[i] = float32(rnd.IntN(17) - 8)
		}
		y := append([]float32(nil), x...)
		FWHT(y)
		FWHT(y)
		for i := range x {
			if y[i] != float32(n)*x[i] {
				t.Fatalf("n=%d: H(Hx)[%d] = %g, want %g", n, i, y[i], float32(n)*x[i])
			}
		}
	}
}

func TestFWHTRejectsBadLengths(t *testing.T) {
	for _, n := range []int{0, 1, 3, 6, 100, 2 * MaxFWHT} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("FWHT accepted length %d", n)
				}
			}()
			FWHT(make([]float32, n))
		}()
	}
}

func TestFWHTAllocatesNothing(t *testing.T) {
	x := make([]float32, 1024)
	if a := testing.AllocsPerRun(100, func() { FWHT(x) }); a != 0 {
		t.Fatalf("FWHT allocates %v times per call", a)
	}
}

// naiveFWHT is the reference loop from FWHT's doc comment.
func naiveFWHT(x []float32) {
	for h := 1; h < len(x); h *= 2 {
		for i := 0; i < len(x); i += 2 * h {
			for j := i; j < i+h; j++ {
				x[j], x[j+h] = x[j]+x[j+h], x[j]-x[j+h]
			}
		}
	}
}

func TestFWHTBitIdenticalToReferenceLoop(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for n := 2; n <= 4096; n *= 2 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rnd.NormFloat64())
		}
		a, b := append([]float32(nil), x...), append([]float32(nil), x...)
		FWHT(a)
		naiveFWHT(b)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("n=%d: element %d: %g vs reference %g", n, i, a[i], b[i])
			}
		}
	}
}

// BenchmarkFWHT times FWHT (with the fast path where there is one), the
// same without it ("go": the radix-4 Go loops) and the reference loop
// ("naive").
//
//	go test -run '^$' -bench FWHT -count 5 ./inference
func BenchmarkFWHT(b *testing.B) {
	for _, n := range []int{64, 256, 1024, 4096} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		b.Run(itoa(n), func(b *testing.B) {
			for b.Loop() {
				FWHT(x)
			}
		})
		b.Run(itoa(n)+"/go", func(b *testing.B) { // the Go loops, no fast path
			for b.Loop() {
				fwht(&goKernels, x)
			}
		})
		b.Run(itoa(n)+"/naive", func(b *testing.B) {
			for b.Loop() {
				naiveFWHT(x)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
