package training

import (
	"runtime"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/internal/splitmix"
)

// The drift fingerprint (inference.Fingerprint) a bundle ships: the
// training rows' firing rates of up to fingerprintColumns kept columns —
// every kept threshold column up to fingerprintThresholds, then random-
// feature columns evenly spread — measured on at most fitRows rows.
const (
	fingerprintColumns    = 256
	fingerprintThresholds = 128
)

// fingerprintIndexes returns which kept columns (indexes into spec.Kept)
// the fingerprint samples.
func fingerprintIndexes(spec *inference.ModelSpec) []int32 {
	nt := spec.NumThresholds()
	kt := 0
	for kt < len(spec.Kept) && int(spec.Kept[kt]) < nt {
		kt++
	}
	spread := func(from, to, n int) []int32 {
		var out []int32
		if n <= 0 || to <= from {
			return nil
		}
		if n >= to-from {
			for i := from; i < to; i++ {
				out = append(out, int32(i))
			}
			return out
		}
		for k := range n {
			out = append(out, int32(from+k*(to-from)/n))
		}
		return out
	}
	idx := spread(0, kt, fingerprintThresholds)
	return append(idx, spread(kt, len(spec.Kept), fingerprintColumns-len(idx))...)
}

// fingerprint measures spec's fingerprint on the rows of ds (a seeded
// subset of at most fitRows); nil when the model keeps no column.
func fingerprint(spec *inference.ModelSpec, ds *data.Dataset, seed uint64, workers int) (*inference.Fingerprint, error) {
	cols := fingerprintIndexes(spec)
	if len(cols) == 0 {
		return nil, nil
	}
	m, err := inference.New(spec)
	if err != nil {
		return nil, err
	}
	rows := make([]int, ds.N)
	for i := range rows {
		rows[i] = i
	}
	if ds.N > fitRows {
		rows = splitmix.New(seed^seedRowsPrint).Sample(ds.N, fitRows)
	}
	fp := &inference.Fingerprint{Columns: cols, Rates: make([]uint8, len(cols))}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	parts := make([][]uint32, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts := make([]uint32, len(cols))
			z := make([]uint64, (len(spec.Kept)+63)/64)
			for k := g; k < len(rows); k += workers {
				m.EmbedKept(z, ds.Row(rows[k])) // lengths match: cannot fail
				fp.Count(counts, z)
			}
			parts[g] = counts
		}()
	}
	wg.Wait()
	for i := range cols {
		var n uint32
		for _, p := range parts {
			n += p[i]
		}
		fp.Rates[i] = uint8((255*uint64(n) + uint64(len(rows))/2) / uint64(len(rows)))
	}
	return fp, nil
}
