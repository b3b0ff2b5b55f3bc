package training

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/ternary"
)

// embedRows computes every embedding column of base (see
// inference.Embedder) for the raw rows of ds, as a column-major bit matrix,
// in parallel over stripes of 64 rows: exactly the bits Predict computes.
func embedRows(base *inference.ModelSpec, ds *data.Dataset, workers int) (*ternary.Columns, error) {
	e, err := inference.NewEmbedder(base)
	if err != nil {
		return nil, fmt.Errorf("training: embedding: %w", err)
	}
	p, n, d := e.Columns(), ds.N, ds.D
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
			rows := make([][]uint64, 64)
			for r := range rows {
				rows[r] = make([]uint64, (p+63)/64)
			}
			for s := range next {
				base := s * 64
				cnt := min(64, n-base)
				for r := range cnt {
					i := base + r
					e.Embed(rows[r], ds.X[i*d:(i+1)*d]) // lengths match: cannot fail
				}
				cols.SetRows64(base, rows[:cnt])
			}
		}()
	}
	wg.Wait()
	return cols, nil
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
