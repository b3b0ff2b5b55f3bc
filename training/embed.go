package training

import (
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/ternary"
)

// scaleRows applies sc to every row of x (n rows of d features) and returns
// the scaled copy, with the same arithmetic Predict uses.
func scaleRows(sc inference.Scaler, x []float32, n, d int) ([]float32, error) {
	out := make([]float32, len(x))
	for i := range n {
		if err := sc.Apply(out[i*d:(i+1)*d], x[i*d:(i+1)*d]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// embedColumns computes the binary embedding of n scaled rows as a
// column-major bit matrix, in parallel over stripes of 64 rows. Each row's
// bits come from Transform.Embed: exactly the bits Predict computes.
func embedColumns(tr *inference.Transform, xs []float32, n, d, workers int) *ternary.Columns {
	p := tr.Spec().P
	cols := ternary.NewColumns(n, p)
	stripes := (n + 63) / 64
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	next := make(chan int, stripes)
	for s := range stripes {
		next <- s
	}
	close(next)
	for range min(workers, stripes) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := tr.NewWorkspace()
			rows := make([][]uint64, 64)
			for r := range rows {
				rows[r] = make([]uint64, (p+63)/64)
			}
			for s := range next {
				base := s * 64
				cnt := min(64, n-base)
				for r := range cnt {
					i := base + r
					tr.Embed(rows[r], xs[i*d:(i+1)*d], ws)
				}
				cols.SetRows64(base, rows[:cnt])
			}
		}()
	}
	wg.Wait()
	return cols
}

// denseSigns returns rows of cols as ±1 float32 values, row-major, for the
// full-precision linear SVM.
func denseSigns(cols *ternary.Columns, rows []int) []float32 {
	p := cols.P
	out := make([]float32, len(rows)*p)
	for k, i := range rows {
		dst := out[k*p : (k+1)*p]
		for j := range p {
			dst[j] = float32(2*int(cols.Bit(i, j)) - 1)
		}
	}
	return out
}
