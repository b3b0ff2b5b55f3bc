package linear

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// FuzzTrain feeds arbitrary shapes, labels, options and float32 bit
// patterns (NaN, ±Inf, subnormals, ±3e38) to Train and TrainOneVsRest. They
// must never panic, must fail exactly when the input is invalid, and on
// success must return finite weights of the right length.
func FuzzTrain(f *testing.F) {
	// Valid problems: blobs and XOR, with several option combinations.
	x, y := blobs(1, 6, 3, 2, 1)
	f.Add(fuzzInput(6, 3, [4]byte{0, 1, 0, 0}, y, x))
	f.Add(fuzzInput(6, 3, [4]byte{1, 3, 4, 1}, y, x))
	x, y = xorData(1, 7)
	f.Add(fuzzInput(7, 2, [4]byte{1, 0, 3, 1}, y, x))
	// Invalid ones: NaN, a zero label, a short x, bad options.
	f.Add(fuzzInput(2, 1, [4]byte{0, 0, 0, 0}, []int8{1, -1}, []float32{float32(math.NaN()), 1}))
	f.Add(fuzzInput(2, 1, [4]byte{0, 0, 0, 0}, []int8{1, 0}, []float32{3e38, -3e38}))
	f.Add(fuzzInput(3, 2, [4]byte{0, 0, 0, 0}, []int8{1, -1, 1}, []float32{1, 2, 3}))
	f.Add(fuzzInput(1, 1, [4]byte{2, 2, 5, 2}, []int8{1}, []float32{1e-45}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 6 {
			return
		}
		n, p := int(data[0]%8)-1, int(data[1]%6)
		opt := &Options{
			Loss:    Loss(data[2] % 3),                                     // 2 is invalid
			Bias:    []float32{0, 1, -1, 0.5}[data[3]%4],                   // −1 is invalid
			C:       []float64{0, 1, -1, 0.01, 100, math.NaN()}[data[4]%6], // −1, NaN invalid
			Eps:     []float64{0, 1e-3, -1}[data[5]%3],                     // −1 is invalid
			MaxIter: 50,
		}
		data = data[6:]
		valid := n > 0 && p > 0 && opt.Loss != 2 && opt.Bias >= 0 && (opt.C == 0 || opt.C > 0) && opt.Eps >= 0
		var y []int8
		var labels []int32
		for i := 0; i < max(n, 0) && len(data) > 0; i++ {
			v := int8(data[0]%3) - 1
			valid = valid && v != 0
			y = append(y, v)
			labels = append(labels, int32(v+1))
			data = data[1:]
		}
		valid = valid && len(y) == n
		var x []float32
		for len(data) >= 4 && len(x) < max(n*p, 0) {
			v := math.Float32frombits(binary.LittleEndian.Uint32(data))
			valid = valid && !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
			x = append(x, v)
			data = data[4:]
		}
		valid = valid && len(x) == n*p

		m, err := Train(x, n, p, y, opt)
		if (err == nil) != valid {
			t.Fatalf("valid input = %v, but Train error = %v", valid, err)
		}
		if err != nil {
			if !errors.Is(err, ErrShape) && !errors.Is(err, ErrLabel) &&
				!errors.Is(err, ErrNonFinite) && !errors.Is(err, ErrOption) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		checkFinite(t, m, p)
		ms, err := TrainOneVsRest(x, n, p, labels, 3, opt)
		if err != nil {
			t.Fatalf("TrainOneVsRest on valid input: %v", err)
		}
		for _, m := range ms {
			checkFinite(t, m, p)
		}
	})
}

func checkFinite(t *testing.T, m *Model, p int) {
	t.Helper()
	if len(m.W) != p {
		t.Fatalf("len(W) = %d, want %d", len(m.W), p)
	}
	for j, v := range append(m.W, m.Bias) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("weight %d = %v", j, v)
		}
	}
}

// fuzzInput encodes a problem in FuzzTrain's format: n+1, p, option
// selectors (loss, bias, C, eps), labels as y+1, then x little-endian.
func fuzzInput(n, p int, sel [4]byte, y []int8, x []float32) []byte {
	b := []byte{byte(n + 1), byte(p)}
	b = append(b, sel[:]...)
	for _, v := range y {
		b = append(b, byte(v+1))
	}
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
