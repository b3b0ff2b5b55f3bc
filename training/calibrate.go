package training

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// Confidence and unknown (docs/TRAINING.md): the shipped model carries an
// inference.Calibration fitted on the validation rows of the search —
// the held-out predictions of the chosen candidate's fold fits, which
// are predictions of rows the model did not see:
//
//  1. bins: edges at the quantiles calibrationQuantiles of the held-out
//     margins (the first at half the unknown target, so the confidence
//     threshold can fall there), duplicates dropped;
//  2. each bin's accuracy, made non-decreasing in the margin by pooling
//     adjacent violators (isotonic regression, weighted by rows), rounded
//     to a byte; adjacent bins with equal bytes merged (the bundle wants
//     them strictly ascending);
//  3. the minimum confidence: the largest bin confidence such that the
//     held-out rows in the bins below it are at most half the target;
//  4. the maximum novelty: the novelty of the validation rows under the
//     final model's fingerprint at the (1 − target/2) quantile, so at most
//     about half the target is unknown on novelty.
//
// Together at most Config.UnknownTarget (default 2%) of the validation
// windows are unknown.

// DefaultUnknownTarget is the share of validation windows the unknown
// thresholds aim at when Config.UnknownTarget is 0.
const DefaultUnknownTarget = 0.02

// heldOut is one held-out prediction: its margin and whether it was right.
type heldOut struct {
	margin  float32
	correct bool
}

// margin is the best score less the second best (Model.PredictOutcome's
// margin, from Predict's scores).
func margin(scores []float32, class int) float32 {
	second := float32(math.Inf(-1))
	for c, s := range scores {
		if c != class && s > second {
			second = s
		}
	}
	return scores[class] - second
}

// calibrationQuantiles place the bin edges (besides target/2, first).
var calibrationQuantiles = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// fitCalibration fits the margin bins and the minimum confidence on held
// (see above); nil when there are too few rows to calibrate (fewer than
// minCalibrationRows).
func fitCalibration(held []heldOut, target float64) *inference.Calibration {
	if len(held) < minCalibrationRows {
		return nil
	}
	ms := make([]float32, len(held))
	for i, h := range held {
		ms[i] = h.margin
	}
	slices.Sort(ms)
	var edges []float32
	for _, q := range append([]float64{target / 2}, calibrationQuantiles...) {
		e := ms[min(len(ms)-1, int(q*float64(len(ms))))]
		if e <= 0 || (len(edges) > 0 && e <= edges[len(edges)-1]) {
			continue
		}
		edges = append(edges, e)
	}
	cal := &inference.Calibration{Edges: edges}
	n, right := make([]float64, len(edges)+1), make([]float64, len(edges)+1)
	for _, h := range held {
		b := cal.Bin(h.margin)
		n[b]++
		if h.correct {
			right[b]++
		}
	}
	// Drop empty bins (an edge no row reached past): merge into the next.
	for b := 0; b < len(n); {
		if n[b] == 0 {
			n, right = slices.Delete(n, b, b+1), slices.Delete(right, b, b+1)
			if b < len(cal.Edges) {
				cal.Edges = slices.Delete(cal.Edges, b, b+1)
			} else if b > 0 {
				cal.Edges = cal.Edges[:b-1]
			}
			continue
		}
		b++
	}
	// Pool adjacent violators: blocks of bins with one pooled accuracy.
	type block struct {
		n, right float64
		bins     int
	}
	var blocks []block
	for b := range n {
		blocks = append(blocks, block{n[b], right[b], 1})
		for len(blocks) > 1 {
			a, c := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.right/a.n < c.right/c.n {
				break
			}
			blocks = append(blocks[:len(blocks)-2], block{a.n + c.n, a.right + c.right, a.bins + c.bins})
		}
	}
	// One bin per block (the blocks' first edges), then merge equal bytes.
	var outEdges []float32
	var conf []uint8
	var rows []float64
	b := 0
	for i, bl := range blocks {
		c := uint8(math.Round(255 * bl.right / bl.n))
		if i > 0 && c <= conf[len(conf)-1] {
			rows[len(rows)-1] += bl.n
		} else {
			if i > 0 {
				outEdges = append(outEdges, cal.Edges[b-1])
			}
			conf, rows = append(conf, c), append(rows, bl.n)
		}
		b += bl.bins
	}
	cal.Edges, cal.Confidence = outEdges, conf
	// The minimum confidence: unknown below bin k, rows in bins < k at
	// most target/2 of all.
	total, below := float64(len(held)), 0.0
	for k := 1; k < len(conf); k++ {
		below += rows[k-1]
		if below > target/2*total {
			break
		}
		cal.MinConfidence = conf[k]
	}
	return cal
}

// A calibration adds at most 62 bytes to a bundle (12 bins: 1 + 4·11 +
// 12 + 1 + 3 bytes, and the planes byte format 5 adds to one-plane
// trees); the budget's Reserve (512 bytes by default, for the info section
// too) holds it: the search sizes models without it.

// minCalibrationRows is the fewest held-out rows a calibration is fitted
// on.
const minCalibrationRows = 100

// noveltyThreshold is the novelty of the rows of sets under m (which has
// a fingerprint) at the (1 − share) quantile; 0 (never) without rows.
func noveltyThreshold(m *inference.Model, sets []*data.Dataset, share float64, workers int) uint32 {
	var nov []uint32
	var mu sync.Mutex
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for _, ds := range sets {
		var wg sync.WaitGroup
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []uint32
				for i := g; i < ds.N; i += workers {
					o, _ := m.PredictOutcome(nil, nil, ds.Row(i), inference.Thresholds{})
					mine = append(mine, o.Novelty)
				}
				mu.Lock()
				nov = append(nov, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	if len(nov) == 0 {
		return 0
	}
	slices.Sort(nov)
	return max(1, nov[min(len(nov)-1, int(math.Ceil((1-share)*float64(len(nov))))-1)])
}

// calibrateResult adds a calibration to res.Spec from the search's
// held-out predictions and validation rows (nothing without them), and
// rebuilds res.Model.
func calibrateResult(res *Result, target float64, workers int) error {
	cal := fitCalibration(res.held, target)
	if cal == nil {
		return nil
	}
	if res.Spec.Fingerprint != nil {
		cal.MaxNovelty = noveltyThreshold(res.Model, res.valSets, target/2, workers)
	}
	spec := *res.Spec
	spec.Calibration = cal
	m, err := inference.New(&spec)
	if err != nil {
		return err
	}
	res.Spec, res.Model = &spec, m
	res.held, res.valSets = nil, nil
	return nil
}

// sortHeld orders held-out predictions by margin (ties: wrong first), for
// tests and reports.
func sortHeld(h []heldOut) {
	slices.SortFunc(h, func(a, b heldOut) int {
		if c := cmp.Compare(a.margin, b.margin); c != 0 {
			return c
		}
		switch {
		case a.correct == b.correct:
			return 0
		case !a.correct:
			return -1
		}
		return 1
	})
}
