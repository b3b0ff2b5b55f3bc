package training

import (
	"os"
	"testing"

	"github.com/trit-iot/trit/training/data"
)

// BenchmarkTrainUSPS measures one training run on the full usps training
// set (7,291 rows, 10 classes) at p = 2048 with the σ and C the default search picks (σ = 8, C = 0.001): embedding,
// linear-SVM initialisation and the ten ternary solves. It needs TRIT_DATA.
//
//	TRIT_DATA=../shared/data go test -run '^$' -bench TrainUSPS -benchtime 3x ./training
func BenchmarkTrainUSPS(b *testing.B) {
	dir := os.Getenv("TRIT_DATA")
	if dir == "" {
		b.Skip("TRIT_DATA not set")
	}
	train, test, err := data.LoadStandard(dir, "usps")
	if err != nil {
		b.Fatal(err)
	}
	var acc float64
	for b.Loop() {
		res, err := Train(train, &Config{P: 2048, Sigma: 8, C: 0.001, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		ev, _ := Evaluate(res.Model, test, 0)
		acc = ev.Accuracy
	}
	b.ReportMetric(acc, "test-accuracy-%")
}
