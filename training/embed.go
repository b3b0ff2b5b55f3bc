package training

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/linear"
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
	var cols *ternary.Columns
	if same := sharedPlanes(base); same != nil {
		if cols, err = ternary.NewSharedColumns(n, same); err != nil {
			return nil, fmt.Errorf("training: embedding: %w", err)
		}
	} else {
		cols = ternary.NewColumns(n, p)
	}
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

// sharedPlanes maps each embedding column of base to the stored column
// holding its bits when base's trees have several leaf planes: every plane
// of a leaf is the same bit (inference.Trees), so the planes above the first
// share its storage and the trees take a plane's memory, not planes times
// it. nil when nothing is shared.
func sharedPlanes(base *inference.ModelSpec) []int32 {
	planes := base.Trees.NumPlanes()
	if planes < 2 {
		return nil
	}
	nt, nl := base.NumThresholds(), base.Trees.Leaves()
	same := make([]int32, base.Columns())
	for j := range same {
		switch {
		case j < nt+nl:
			same[j] = int32(j)
		case j < nt+planes*nl:
			same[j] = int32(nt + (j-nt)%nl)
		default:
			same[j] = int32(j - (planes-1)*nl)
		}
	}
	return same
}

// denseSigns returns rows of cols as ±1 values times their column's
// multiplier (nil: 1), row-major, for the linear SVM that starts the
// ternary solver.
func denseSigns[T linear.Value](cols *ternary.Columns, rows []int, mult []int32) []T {
	p := cols.P
	out := make([]T, len(rows)*p)
	for k, i := range rows {
		dst := out[k*p : (k+1)*p]
		for j := range p {
			v := int32(2*int(cols.Bit(i, j)) - 1)
			if mult != nil {
				v *= mult[j]
			}
			dst[j] = T(v)
		}
	}
	return out
}
