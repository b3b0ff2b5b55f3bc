package training

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// Confidence and unknown (docs/TRAINING.md): the shipped model carries an
// inference.Calibration fitted on the validation rows of the search —
// the held-out predictions of the chosen candidate's fold fits, which
// are predictions of rows the model did not see: every fold's, so that
// the confidence averages over the periods (or groups) validated on
// rather than betting on one — a latest fold that happened to be easy
// would claim certainty the next period does not have. How well that
// carries to later data is what training states, measured forward
// (statedECE).
//
//  1. bins: edges at the quantiles calibrationQuantiles of the held-out
//     margins (the first at the confidence's share of the unknown
//     target, so the confidence threshold can fall there), duplicates
//     dropped;
//  2. each bin's accuracy, made non-decreasing in the margin by pooling
//     adjacent violators (isotonic regression, weighted by rows), as
//     (right + 1)/(rows + 2) — Laplace's rule of succession, so no bin
//     claims certainty (or its absence) that a finite count cannot show
//     — rounded to a byte, at most 254 (a byte of 255 would say 100%)
//     and at least chance, 1/classes (chanceByte); adjacent bins with
//     equal bytes merged (the bundle wants them strictly ascending);
//  3. the minimum confidence: the largest bin confidence such that the
//     held-out rows in the bins below it are at most the confidence's
//     share of the target (1 − noveltyShare);
//  4. the maximum novelty: the novelty of the validation rows under the
//     final model (its fingerprint's bits and, Outside, its features past
//     the scaler's training range) at the (1 − noveltyShare·target)
//     quantile, so at most about that share is unknown on novelty.
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
	soft    float32   // the class scores' softmax share of the predicted class
	y       int32     // the row's class
	scores  []float32 // its class scores (Predict's), for the decision offsets
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

// noveltyShare is the part of the unknown target given to novelty; the
// rest goes to low confidence. Across the shift suite's recordings the
// margin is what tells the later periods' errors: the low-margin share of
// each tenth of a test period rises and falls with its error rate
// (Pearson r 0.36 to 0.93 on six of seven recordings) and singles out the
// wrong answers (AUC 0.51 to 0.98), where the novelty's rate moved against
// the errors on four of them (r −0.75 to 0.29; docs/TRAINING.md
// "Confidence and unknown"). So novelty keeps a small share: the windows
// far from anything trained on, which no margin can vouch for.
const noveltyShare = 0.125

// calibrationQuantiles place the bin edges (besides the confidence's
// share of the target, first).
var calibrationQuantiles = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// fitCalibration fits the margin bins and the minimum confidence on held
// (see above) for a model of the given number of classes, target being
// the share of windows to be unknown on low confidence; nil when there are
// too few rows to calibrate (fewer than minCalibrationRows).
func fitCalibration(held []heldOut, target float64, classes int) *inference.Calibration {
	if len(held) < minCalibrationRows {
		return nil
	}
	ms := make([]float32, len(held))
	for i, h := range held {
		ms[i] = h.margin
	}
	slices.Sort(ms)
	var edges []float32
	for _, q := range append([]float64{target}, calibrationQuantiles...) {
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
	floor := chanceByte(classes)
	for i, bl := range blocks {
		c := uint8(min(254, max(floor, math.Round(255*(bl.right+1)/(bl.n+2)))))
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
	// The lowest margins keep a bin of their own when pooling merged them
	// into a larger one (they were right as often as wider margins on
	// these rows): they are still the least certain answers, and a bin of
	// their own — one byte below the next — is what lets the minimum
	// confidence below make them unknown.
	if len(edges) > 0 && len(conf) > 0 && conf[0] > 0 && (len(outEdges) == 0 || outEdges[0] > edges[0]) {
		n0, r0 := 0.0, 0.0
		for _, h := range held {
			if h.margin < edges[0] {
				n0++
				if h.correct {
					r0++
				}
			}
		}
		if n0 > 0 && n0 < rows[0] {
			c0 := uint8(min(float64(conf[0]-1), math.Round(255*(r0+1)/(n0+2))))
			outEdges = append([]float32{edges[0]}, outEdges...)
			conf = append([]uint8{c0}, conf...)
			rows = append([]float64{n0, rows[0] - n0}, rows[1:]...)
		}
	}
	cal.Edges, cal.Confidence = outEdges, conf
	// The minimum confidence: unknown below bin k, rows in bins < k at
	// most the target.
	total, below := float64(len(held)), 0.0
	for k := 1; k < len(conf); k++ {
		below += rows[k-1]
		if below > target*total {
			break
		}
		cal.MinConfidence = conf[k]
	}
	return cal
}

// chanceByte is the confidence byte of chance among classes, 255/classes
// rounded up: the floor of every bin but the lowest margins' own (step 2).
// The model answers the class it scores highest; if its scores order the
// classes as their probabilities do, that class's probability is at least
// 1/classes at every margin. A bin the held-out rows put below chance says
// the model's answers there were worse than a guess — on a recording, a
// period where its ranking was wrong (eeg-eye-state: the training rows'
// common class is every row of its first fold and none of its latest) —
// and a wrong ranking is not a rate that carries forward: the next
// period's answers there were at chance (eeg-eye-state's test minutes:
// 50.3% right in a bin the folds put at 46.3%).
func chanceByte(classes int) float64 {
	return math.Ceil(255 / float64(max(classes, 1)))
}

// A calibration adds at most 63 bytes to a bundle (12 bins: 1 + 4·11 +
// 12 + 1 + 4 bytes, and the planes byte format 5 adds to one-plane
// trees); the budget's Reserve (512 bytes by default, for the info section
// too) holds it: the search sizes models without it.

// minCalibrationRows is the fewest held-out rows a calibration is fitted
// on.
const minCalibrationRows = 100

// novelties returns the novelty of the rows of sets under m (as
// PredictOutcome computes it), sorted.
func novelties(m *inference.Model, sets []*data.Dataset, workers int) []uint32 {
	nov := slices.Concat(noveltyRows(m, sets, workers)...)
	slices.Sort(nov)
	return nov
}

// quantileU32 is the q quantile (upper nearest rank) of sorted v.
func quantileU32(v []uint32, q float64) uint32 {
	return v[min(len(v)-1, max(0, int(math.Ceil(q*float64(len(v))))-1))]
}

// outsideWeight is the out-of-range weight W for a model whose
// fingerprint novelties on the validation rows are nov (sorted; nil
// without a fingerprint): the spread of the fingerprint novelty, its 99th
// percentile less its median, so one feature past its training range
// weighs as much as the gap between a typical window's bits and an
// unusual one's. Without a fingerprint only the ratio of the term to the
// threshold matters, and W is 160 (10 bits, the rarity of a training
// value past the robust scaler's 0.1% quantile).
func outsideWeight(nov []uint32) uint16 {
	if len(nov) == 0 {
		return 160
	}
	w := int(quantileU32(nov, 0.99)) - int(quantileU32(nov, 0.5))
	return uint16(min(inference.MaxOutsideWeight, max(16, w)))
}

// calibrateResult adds a calibration to res.Spec from the search's
// held-out predictions and validation rows (nothing without them), with
// the decision offsets given (nil: none), and rebuilds res.Model.
func calibrateResult(res *Result, target float64, workers int, offsets []int32) error {
	rows := slices.Concat(res.held...)
	if len(rows) < minCalibrationRows {
		return nil
	}
	// The novelty of every validation row under the final model, with the
	// out-of-range term weighted by the fingerprint part's spread.
	var fp []uint32 // the fingerprint's novelties (res.Model has no calibration yet)
	if res.Spec.Fingerprint != nil {
		fp = novelties(res.Model, res.valSets, workers)
	}
	outside := outsideWeight(fp)
	probe := *res.Spec
	probe.Calibration = &inference.Calibration{Confidence: []uint8{255}, Outside: outside}
	pm, err := inference.New(&probe)
	if err != nil {
		return err
	}
	byRow := noveltyRows(pm, res.valSets, workers)
	share := 0.0
	top, rest, informative := noveltyTells(byRow, res.held)
	if informative {
		share = noveltyShare
		res.Notes = append(res.Notes, fmt.Sprintf("unknown: low confidence, and novelty for the most novel %.2g%% of windows (on the held-out rows the most novel tenth was %.1f%% right, the rest %.1f%%)", 100*target*share, top, rest))
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("unknown: low confidence alone; novelty did not mark the held-out errors (the most novel tenth of the held-out rows was %.1f%% right, the rest %.1f%%), so it is reported (and feeds the drift alerts) but decides nothing", top, rest))
	}
	confTarget := target * (1 - share)
	classes := len(res.Spec.Classes)
	cal := fitCalibration(rows, confTarget, classes)
	if cal == nil {
		return nil
	}
	if shipped, raw, how, ok := statedECE(res.held, res.heldKind, confTarget, classes); ok {
		res.CalibrationError = shipped
		res.Notes = append(res.Notes, fmt.Sprintf("confidence: calibration error %.2f%% on held-out rows the calibration was not fitted on (%s), the raw softmax's %.2f%%", shipped, how, raw))
		if shipped >= raw {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the calibrated confidence is no better calibrated than the raw softmax on the held-out rows (%.2f%% against %.2f%%): too few or too uniform validation rows", shipped, raw))
		}
	}
	cal.Outside, cal.Offsets = outside, offsets
	if all := slices.Concat(byRow...); share > 0 && len(all) > 0 {
		slices.Sort(all)
		cal.MaxNovelty = max(1, quantileU32(all, 1-target*share))
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

// noveltyRows returns the novelty of every row of sets under m, in row
// order per set.
func noveltyRows(m *inference.Model, sets []*data.Dataset, workers int) [][]uint32 {
	out := make([][]uint32, len(sets))
	for k, ds := range sets {
		out[k] = make([]uint32, ds.N)
		eachRow(ds.N, workers, func(i int) {
			o, _ := m.PredictOutcome(nil, nil, ds.Row(i), inference.Thresholds{})
			out[k][i] = o.Novelty
		})
	}
	return out
}

// noveltyTells reports whether novelty marks errors on the held-out rows:
// the accuracy (percent) of the most novel tenth of them (by the final
// model's novelty, paired row for row with the fold fits' predictions)
// and of the rest, and whether the first is below the second by more than
// a point. A novelty that rises with departing inputs but not with wrong
// answers (sensors that drift while the classes stay apart) would only
// silence right answers.
func noveltyTells(nov [][]uint32, held [][]heldOut) (top, rest float64, ok bool) {
	type pair struct {
		nov   uint32
		right bool
	}
	var all []pair
	for k := range min(len(nov), len(held)) {
		for i := range min(len(nov[k]), len(held[k])) {
			all = append(all, pair{nov[k][i], held[k][i].correct})
		}
	}
	if len(all) < 100 {
		return 0, 0, false
	}
	slices.SortStableFunc(all, func(a, b pair) int { return cmp.Compare(b.nov, a.nov) })
	n := len(all) / 10
	acc := func(ps []pair) float64 {
		r := 0
		for _, p := range ps {
			if p.right {
				r++
			}
		}
		return 100 * float64(r) / float64(len(ps))
	}
	top, rest = acc(all[:n]), acc(all[n:])
	return top, rest, top+1 < rest
}

// statedECE measures the calibration the way it is fitted, on rows it
// did not see, and says how: for a recording, fitted on every fold but
// the latest and measured on the latest — later data, as the shipped one
// will meet (calibrationRows); for groups, each fold's rows under the
// calibration of the other folds' (groups it did not see); otherwise, or
// when those are too few, each alternate half under the other half's.
// Returned as expected calibration errors (percent) of the calibrated
// confidence and of the raw softmax on the same rows; ok is false when
// there are too few rows to calibrate.
func statedECE(held [][]heldOut, kind foldKind, target float64, classes int) (shipped, raw float64, how string, ok bool) {
	var parts [][2][]heldOut // (fit on, measure on)
	switch {
	case kind == forwardFolds && len(held) > 1:
		parts = [][2][]heldOut{{slices.Concat(held[:len(held)-1]...), held[len(held)-1]}}
		how = "the latest fold under a calibration of the earlier ones"
	case kind == groupFolds && len(held) > 1:
		for k := range held {
			parts = append(parts, [2][]heldOut{slices.Concat(slices.Concat(held[:k], held[k+1:])...), held[k]})
		}
		how = "each fold's groups under a calibration of the other folds'"
	}
	if shipped, raw, ok = crossECE(parts, target, classes); ok {
		return shipped, raw, how, true
	}
	var half [2][]heldOut
	for i, h := range slices.Concat(held...) {
		half[i%2] = append(half[i%2], h)
	}
	shipped, raw, ok = crossECE([][2][]heldOut{{half[1], half[0]}, {half[0], half[1]}}, target, classes)
	return shipped, raw, "each half's rows under the other half's fit", ok
}

// crossECE fits a calibration on each part's first rows and measures its
// confidences on the second's; the expected calibration errors, percent,
// of all those confidences and of the raw softmax on the same rows. ok is
// false without parts, or when one is too small to calibrate.
func crossECE(parts [][2][]heldOut, target float64, classes int) (shipped, raw float64, ok bool) {
	var conf, soft []float64
	var correct []bool
	for _, p := range parts {
		cal := fitCalibration(p[0], target, classes)
		if cal == nil || len(p[1]) == 0 {
			return 0, 0, false
		}
		for _, h := range p[1] {
			conf = append(conf, float64(cal.Confidence[cal.Bin(h.margin)])/255)
			soft = append(soft, float64(h.soft))
			correct = append(correct, h.correct)
		}
	}
	if len(conf) == 0 {
		return 0, 0, false
	}
	return ece(conf, correct), ece(soft, correct), true
}
