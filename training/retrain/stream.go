package retrain

import (
	"math"
	"math/rand/v2"

	"github.com/trit-iot/trit/training/data"
)

// RotatingStream returns a generated recording that drifts: n rows in
// time order of two features uniform on [−1, 1]², the class "high" where
// the feature vector's projection on a direction is positive, else "low";
// the direction turns by turn radians from the first row to the last
// (steadily), so a model trained on the early rows is more and more wrong
// on later ones, and 2% of the labels are flipped. Deterministic for a
// seed; for tests of retraining and of the replay.
func RotatingStream(n int, turn float64, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 0x7472697421))
	ds := &data.Dataset{Name: "rotating-stream", N: n, D: 2, X: make([]float32, 0, 2*n), Y: make([]int32, n),
		Classes: []string{"high", "low"}, Features: []string{"a", "b"}, Ordered: true, Times: make([]int64, n)}
	for i := range n {
		a, b := 2*r.Float64()-1, 2*r.Float64()-1
		phi := turn * float64(i) / float64(max(n-1, 1))
		y := int32(1)
		if a*math.Cos(phi)+b*math.Sin(phi) > 0 {
			y = 0
		}
		if r.Float64() < 0.02 {
			y = 1 - y
		}
		ds.X = append(ds.X, float32(a), float32(b))
		ds.Y[i] = y
		ds.Times[i] = int64(i) * 60e9 // one a minute
	}
	return ds
}
