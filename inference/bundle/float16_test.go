package bundle

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trit-iot/trit/inference"
)

// halfValue computes the value of a finite half from its definition, in
// float64, independently of halfToFloat32.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	if e == 0 {
		return sign * m * math.Pow(2, -24)
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

func TestHalfExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := halfToFloat32(h)
		exp, man := h>>10&0x1f, h&0x3ff
		switch {
		case exp == 0x1f && man != 0:
			if f == f {
				t.Fatalf("half %#04x is NaN, converted to %g", h, f)
			}
			if back := float32ToHalf(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		case exp == 0x1f:
			if !math.IsInf(float64(f), 0) || math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("half %#04x is ±Inf, converted to %g", h, f)
			}
		default:
			if want := halfValue(h); float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("half %#04x = %g, converted to %g", h, want, f)
			}
			if !isHalf(f) {
				t.Fatalf("isHalf(%g) = false for half %#04x", f, h)
			}
		}
		if back := float32ToHalf(f); back != h {
			t.Fatalf("half %#04x -> %g -> %#04x", h, f, back)
		}
	}
}

// TestHalfRounding checks round-to-nearest-even at every boundary: for each
// pair of adjacent halves a < b, the midpoint goes to the even one and the
// float32s just either side of it go to the nearer one.
func TestHalfRounding(t *testing.T) {
	for i := range 0x7c00 { // every positive finite half and its successor
		a, b := uint16(i), uint16(i+1)
		fa, fb := halfToFloat32(a), halfToFloat32(b)
		if b == 0x7c00 {
			fb = 65536 // where the next half would be: overflow boundary
		}
		mid := (fa + fb) / 2 // exact: float32 has 13 more bits
		even := a
		if a&1 == 1 {
			even = b
		}
		below := math.Nextafter32(mid, 0)
		above := math.Nextafter32(mid, float32(math.Inf(1)))
		for _, c := range []struct {
			f    float32
			want uint16
		}{{mid, even}, {below, a}, {above, b}} {
			for _, sign := range []float32{1, -1} {
				want := c.want
				if sign < 0 {
					want |= 0x8000
				}
				if got := float32ToHalf(sign * c.f); got != want {
					t.Fatalf("float32ToHalf(%g) = %#04x, want %#04x", sign*c.f, got, want)
				}
			}
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff},
		{65519.996, 0x7bff},
		{65520, 0x7c00}, // ties to even: rounds up to Inf
		{1e10, 0x7c00},
		{-1e10, 0xfc00},
		{float32(math.Inf(1)), 0x7c00},
		{0x1p-25, 0},        // exactly half the smallest subnormal: ties to 0
		{0x1.000002p-25, 1}, // just above: the smallest subnormal
		{0x1p-30, 0},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.1, 0x2e66},
	} {
		if got := float32ToHalf(c.f); got != c.want {
			t.Errorf("float32ToHalf(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestCompactScalerBounds(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		d := 1 + rnd.IntN(50)
		sc := inference.Scaler{Lo: make([]float32, d), Hi: make([]float32, d)}
		scale := math.Pow(10, float64(rnd.IntN(10)-5))
		for i := range d {
			a, b := float32(rnd.NormFloat64()*scale), float32(rnd.NormFloat64()*scale)
			sc.Lo[i], sc.Hi[i] = min(a, b), max(a, b)
		}
		orig := inference.Scaler{Lo: append([]float32(nil), sc.Lo...), Hi: append([]float32(nil), sc.Hi...)}
		got := CompactScaler(sc)
		for i := range d {
			if sc.Lo[i] != orig.Lo[i] || sc.Hi[i] != orig.Hi[i] {
				t.Fatal("CompactScaler modified its input")
			}
			lo, hi := got.Lo[i], got.Hi[i]
			if !isHalf(lo) || !isHalf(hi) {
				t.Fatalf("feature %d: [%g, %g] are not float16 values", i, lo, hi)
			}
			if lo > orig.Lo[i] || hi < orig.Hi[i] {
				t.Fatalf("feature %d: [%g, %g] does not contain [%g, %g]", i, lo, hi, orig.Lo[i], orig.Hi[i])
			}
			// Tight: the next half inwards would not contain the original.
			if halfToFloat32(halfNext(float32ToHalf(lo))) <= orig.Lo[i] {
				t.Fatalf("feature %d: lo %g is not the largest half <= %g", i, lo, orig.Lo[i])
			}
			if halfToFloat32(halfPrev(float32ToHalf(hi))) >= orig.Hi[i] {
				t.Fatalf("feature %d: hi %g is not the smallest half >= %g", i, hi, orig.Hi[i])
			}
		}
		// Snapping is idempotent and the result encodes as float16.
		again := CompactScaler(got)
		for i := range d {
			if again.Lo[i] != got.Lo[i] || again.Hi[i] != got.Hi[i] {
				t.Fatalf("CompactScaler is not idempotent at feature %d", i)
			}
		}
		if form, err := chooseScalerForm(got); err != nil || form != scalerHalf {
			t.Fatalf("snapped scaler: form %d, %v", form, err)
		}
	}
}

func TestCompactScalerWideStaysFloat32(t *testing.T) {
	sc := inference.Scaler{Lo: []float32{0.1, -70000}, Hi: []float32{0.3, 7200.7}}
	got := CompactScaler(sc)
	for i := range sc.Lo {
		if got.Lo[i] != sc.Lo[i] || got.Hi[i] != sc.Hi[i] {
			t.Fatalf("wide scaler changed at %d: [%g, %g] -> [%g, %g]", i, sc.Lo[i], sc.Hi[i], got.Lo[i], got.Hi[i])
		}
	}
	if form, err := chooseScalerForm(got); err != nil || form != scalerFloat32 {
		t.Fatalf("wide scaler: form %d, %v; want float32", form, err)
	}
	// At the edge of the range everything still fits float16.
	edge := CompactScaler(inference.Scaler{Lo: []float32{-MaxHalf}, Hi: []float32{MaxHalf}})
	if edge.Lo[0] != -MaxHalf || edge.Hi[0] != MaxHalf {
		t.Fatalf("±MaxHalf snapped to [%g, %g]", edge.Lo[0], edge.Hi[0])
	}
}

func TestChooseScalerFormRefusesUnsnapped(t *testing.T) {
	_, err := chooseScalerForm(inference.Scaler{Lo: []float32{0}, Hi: []float32{0.1}})
	if err == nil {
		t.Fatal("0.1 accepted as a float16 value")
	}
}
