package baseline

import (
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
)

// featureMatrix maps n raw rows (row i is x[i*d:(i+1)*d]) through the
// scaler and fm into a row-major n×p float32 matrix, in parallel over
// blocks of rows. The result does not depend on the worker count.
func featureMatrix(fm featureMap, sc *inference.Scaler, x []float32, n, d, workers int) ([]float32, error) {
	p := fm.dim()
	out := make([]float32, n*p)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	const block = 256
	blocks := (n + block - 1) / block
	next := make(chan int, blocks)
	for b := range blocks {
		next <- b
	}
	close(next)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range min(workers, max(blocks, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fm.newScratch()
			xs := make([]float32, d)
			for b := range next {
				for i := b * block; i < min(n, (b+1)*block); i++ {
					if err := sc.Apply(xs, x[i*d:(i+1)*d]); err != nil {
						errs[w] = err
						return
					}
					fm.mapRow(out[i*p:(i+1)*p], xs, s)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
