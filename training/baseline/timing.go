package baseline

import (
	"time"

	"github.com/trit-iot/trit/training/data"
)

// TimePerSample measures the single-goroutine inference time of cl per
// input row, in seconds: scaling, embedding and the classifier, as on a
// gateway. It cycles over the rows of ds until at least minDuration has
// passed (and every row was seen once, up to 10,000 rows), and returns the
// mean. It returns 0 for an empty ds.
func TimePerSample(cl Classifier, ds *data.Dataset, minDuration time.Duration) (float64, error) {
	if ds.N == 0 {
		return 0, nil
	}
	pr := cl.NewPredictor()
	rows := min(ds.N, 10000)
	// Warm up caches and lazily built tables once.
	if _, err := pr.Predict(ds.Row(0)); err != nil {
		return 0, err
	}
	n := 0
	start := time.Now()
	for {
		for i := range rows {
			if _, err := pr.Predict(ds.Row(i)); err != nil {
				return 0, err
			}
		}
		n += rows
		if el := time.Since(start); el >= minDuration {
			return el.Seconds() / float64(n), nil
		}
	}
}
