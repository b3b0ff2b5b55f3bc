package training

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training/data"
)

// ConfidenceReport is how a model's confidence and unknown outcome did on
// labelled data (EvaluateConfidence).
type ConfidenceReport struct {
	Calibrated bool                 `json:"calibrated"` // the model carries a calibration
	Thresholds inference.Thresholds `json:"thresholds"` // the unknown thresholds used
	Rows       int                  `json:"rows"`
	Unknown    int                  `json:"unknown"`            // windows unknown (either test)
	LowConf    int                  `json:"unknown_confidence"` // unknown on confidence
	Novel      int                  `json:"unknown_novelty"`    // unknown on novelty
	Coverage   float64              `json:"coverage"`           // percent of windows answered
	Accuracy   float64              `json:"accuracy"`           // percent right, every window
	Answered   float64              `json:"answered_accuracy"`  // percent right among the answered
	// ECE is the expected calibration error of the shipped confidence
	// (Σ over 15 equal-width bins of |accuracy − mean confidence| weighted
	// by rows), percent; RawECE the same for the uncalibrated score: the
	// softmax of the class scores (the top class's share).
	ECE    float64 `json:"ece"`
	RawECE float64 `json:"raw_ece"`
	// Reliability: per shipped confidence value, its rows and their
	// accuracy (the reliability diagram).
	Reliability []ReliabilityBin `json:"reliability,omitempty"`
	// Curve is the accuracy on the most confident windows (ranked by
	// confidence, then margin) at each coverage.
	Curve []CoveragePoint `json:"accuracy_vs_coverage"`
	// Segments is the unknown rate, percent, in each tenth of the rows in
	// their order (a test period's start to its end; on a recording's
	// training split the last three tenths are its validation period).
	Segments []float64 `json:"unknown_by_tenth"`
	// ErrorSegments is the error rate, percent, of every window (answered
	// or not) in the same tenths; UnknownErrorCorrelation the Pearson
	// correlation between the two over the tenths (NaN-free: 0 when
	// either is constant). An unknown that rises with drift rises where
	// the errors do.
	ErrorSegments           []float64 `json:"error_by_tenth"`
	UnknownErrorCorrelation float64   `json:"unknown_error_correlation"`
	// UnknownAccuracy is the accuracy, percent, of the model's own
	// answers on the windows it marks unknown (0 without any): an
	// unknown worth having is less accurate than the answered.
	UnknownAccuracy float64 `json:"unknown_accuracy"`
}

// ReliabilityBin is one confidence value's rows and accuracy.
type ReliabilityBin struct {
	Confidence float64 `json:"confidence"` // percent
	Rows       int     `json:"rows"`
	Accuracy   float64 `json:"accuracy"` // percent
}

// CoveragePoint is the accuracy on the Coverage percent most confident
// windows.
type CoveragePoint struct {
	Coverage float64 `json:"coverage"`
	Accuracy float64 `json:"accuracy"`
}

// curveCoverages are the coverages of ConfidenceReport.Curve, percent.
var curveCoverages = []float64{100, 98, 95, 90, 80, 70, 60, 50}

// segments is the number of ConfidenceReport.Segments.
const segments = 10

// eceBins is the number of equal-width bins of the ECE.
const eceBins = 15

// EvaluateConfidence predicts every row of ds with m under the unknown
// thresholds th (Model.PredictOutcome) and reports coverage, accuracy on
// the answered windows, calibration and accuracy-vs-coverage. ds's
// classes must be the model's, in order (as Evaluate).
func EvaluateConfidence(m *inference.Model, ds *data.Dataset, th inference.Thresholds, workers int) (*ConfidenceReport, error) {
	if ds.D != m.NumFeatures() {
		return nil, fmt.Errorf("training: %s has %d features, the model takes %d", ds.Name, ds.D, m.NumFeatures())
	}
	if len(ds.Classes) > len(m.Classes()) {
		return nil, fmt.Errorf("training: %s has %d classes, the model %d", ds.Name, len(ds.Classes), len(m.Classes()))
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]inference.Outcome, ds.N)
	raw := make([]float64, ds.N)
	nc := len(m.Classes())
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scores := make([]float32, nc)
			for i := g; i < ds.N; i += workers {
				out[i], _ = m.PredictOutcome(scores, nil, ds.Row(i), th)
				raw[i] = softmaxTop(scores, out[i].Class)
			}
		}()
	}
	wg.Wait()
	r := &ConfidenceReport{Calibrated: m.Calibrated(), Thresholds: th, Rows: ds.N}
	if ds.N == 0 {
		return r, nil
	}
	right, answeredRight, unknownRight := 0, 0, 0
	conf := make([]float64, ds.N)
	correct := make([]bool, ds.N)
	byConf := map[uint8][2]int{}
	for i, o := range out {
		correct[i] = int32(o.Class) == ds.Y[i]
		conf[i] = float64(o.Confidence) / 255
		if correct[i] {
			right++
		}
		v := byConf[o.Confidence]
		v[0]++
		if correct[i] {
			v[1]++
		}
		byConf[o.Confidence] = v
		switch {
		case o.Unknown:
			r.Unknown++
			if correct[i] {
				unknownRight++
			}
			if th.MinConfidence > 0 && o.Confidence < th.MinConfidence {
				r.LowConf++
			}
			if th.MaxNovelty > 0 && o.Novelty > th.MaxNovelty {
				r.Novel++
			}
		case correct[i]:
			answeredRight++
		}
	}
	r.Accuracy = 100 * float64(right) / float64(ds.N)
	r.Coverage = 100 * float64(ds.N-r.Unknown) / float64(ds.N)
	if ds.N > r.Unknown {
		r.Answered = 100 * float64(answeredRight) / float64(ds.N-r.Unknown)
	}
	if r.Unknown > 0 {
		r.UnknownAccuracy = 100 * float64(unknownRight) / float64(r.Unknown)
	}
	if r.Calibrated {
		r.ECE = ece(conf, correct)
		keys := make([]uint8, 0, len(byConf))
		for k := range byConf {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := byConf[k]
			r.Reliability = append(r.Reliability, ReliabilityBin{Confidence: 100 * float64(k) / 255, Rows: v[0], Accuracy: 100 * float64(v[1]) / float64(v[0])})
		}
	}
	r.RawECE = ece(raw, correct)
	order := make([]int, ds.N)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(out[b].Confidence, out[a].Confidence); c != 0 {
			return c
		}
		return cmp.Compare(out[b].Margin, out[a].Margin)
	})
	for _, cov := range curveCoverages {
		n := max(1, int(math.Round(cov/100*float64(ds.N))))
		k := 0
		for _, i := range order[:n] {
			if correct[i] {
				k++
			}
		}
		r.Curve = append(r.Curve, CoveragePoint{Coverage: cov, Accuracy: 100 * float64(k) / float64(n)})
	}
	for q := range segments {
		from, to := q*ds.N/segments, (q+1)*ds.N/segments
		u, wrong := 0, 0
		for i, o := range out[from:to] {
			if o.Unknown {
				u++
			}
			if !correct[from+i] {
				wrong++
			}
		}
		if to > from {
			r.Segments = append(r.Segments, 100*float64(u)/float64(to-from))
			r.ErrorSegments = append(r.ErrorSegments, 100*float64(wrong)/float64(to-from))
		}
	}
	r.UnknownErrorCorrelation = pearson(r.Segments, r.ErrorSegments)
	return r, nil
}

// pearson is the correlation of x and y (equal lengths); 0 when either
// does not vary.
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// softmaxTop is the softmax share of class c among the scores: the
// uncalibrated confidence ECE compares the shipped one with.
func softmaxTop(scores []float32, c int) float64 {
	top := float64(scores[c])
	var sum float64
	for _, s := range scores {
		sum += math.Exp(float64(s) - top)
	}
	return 1 / sum
}

// ece is the expected calibration error, percent, of confidences in
// [0, 1] against correct, over eceBins equal-width bins.
func ece(conf []float64, correct []bool) float64 {
	var n, sumC, right [eceBins]float64
	for i, c := range conf {
		b := min(eceBins-1, int(c*eceBins))
		n[b]++
		sumC[b] += c
		if correct[i] {
			right[b]++
		}
	}
	var e float64
	for b := range eceBins {
		if n[b] > 0 {
			e += n[b] / float64(len(conf)) * math.Abs(right[b]/n[b]-sumC[b]/n[b])
		}
	}
	return 100 * e
}
