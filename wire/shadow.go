package wire

import (
	"fmt"
	"math"
	"math/bits"
)

// ShadowReport is what a device measured of a candidate model it runs in
// shadow (a Command with Mode ModeShadow) beside its active model, over
// every window since the shadow started. The candidate never changes an
// output; these counts are its whole effect.
type ShadowReport struct {
	Rollout string `json:"rollout"` // the shadow command's rollout and sequence
	Seq     uint64 `json:"seq"`
	Bundle  string `json:"bundle"` // the candidate's bundle hash
	// Windows scored by both models, and how many got the same class label.
	Windows uint64 `json:"windows"`
	Agree   uint64 `json:"agree"`
	// Confusion[i][j] counts the windows the active model classed as
	// ActiveClasses[i] and the candidate as CandidateClasses[j]; its row
	// and column sums are the two models' class histograms. Omitted when a
	// model has more than MaxShadowClasses classes.
	ActiveClasses    []string   `json:"active_classes,omitempty"`
	CandidateClasses []string   `json:"candidate_classes,omitempty"`
	Confusion        [][]uint64 `json:"confusion,omitempty"`
	// Windows whose normalised margin (Margin) was below LowMargin, per
	// model.
	ActiveLowMargin    uint64  `json:"active_low_margin"`
	CandidateLowMargin uint64  `json:"candidate_low_margin"`
	LowMargin          float64 `json:"low_margin"`
	// Windows each model reported unknown (calibrated bundles, format 5,
	// under the device's thresholds), and whether each is calibrated: an
	// uncalibrated model reports nothing unknown. Absent (false, 0) from
	// agents before 0.5.0 and for uncalibrated models.
	ActiveUnknown       uint64 `json:"active_unknown,omitempty"`
	CandidateUnknown    uint64 `json:"candidate_unknown,omitempty"`
	ActiveCalibrated    bool   `json:"active_calibrated,omitempty"`
	CandidateCalibrated bool   `json:"candidate_calibrated,omitempty"`
	// The confidences (×255) summed over the windows each model answered
	// (did not report unknown), calibrated models only; absent from
	// agents before they reported them (CandidateAnswered false).
	ActiveConfidence    uint64 `json:"active_confidence,omitempty"`
	CandidateConfidence uint64 `json:"candidate_confidence,omitempty"`
	ConfidenceReported  bool   `json:"confidence_reported,omitempty"`
	// Of the windows reported unknown, those only the active model and
	// those only the candidate reported unknown (with UnknownPaired; absent
	// from earlier agents). The two unknown shares are of the same
	// windows, so their difference is judged on these discordant windows
	// alone, as a paired test does: most windows one model finds
	// ambiguous the other does too.
	ActiveOnlyUnknown    uint64 `json:"active_only_unknown,omitempty"`
	CandidateOnlyUnknown uint64 `json:"candidate_only_unknown,omitempty"`
	UnknownPaired        bool   `json:"unknown_paired,omitempty"`
}

// MeanConfidences are each model's mean confidence over the windows it
// answered; ok false for a model that answered none, was not
// calibrated, or when the agent did not report them.
func (r *ShadowReport) MeanConfidences() (active float64, aok bool, candidate float64, cok bool) {
	if !r.ConfidenceReported {
		return 0, false, 0, false
	}
	if n := r.Windows - r.ActiveUnknown; r.ActiveCalibrated && n > 0 {
		active, aok = float64(r.ActiveConfidence)/255/float64(n), true
	}
	if n := r.Windows - r.CandidateUnknown; r.CandidateCalibrated && n > 0 {
		candidate, cok = float64(r.CandidateConfidence)/255/float64(n), true
	}
	return active, aok, candidate, cok
}

// UnknownRates are each model's share of windows reported unknown.
func (r *ShadowReport) UnknownRates() (active, candidate float64) {
	if r.Windows == 0 {
		return 0, 0
	}
	return float64(r.ActiveUnknown) / float64(r.Windows), float64(r.CandidateUnknown) / float64(r.Windows)
}

// MaxShadowClasses bounds the classes of a ShadowReport's confusion matrix.
const MaxShadowClasses = 32

// Agreement is Agree/Windows (0 without windows).
func (r *ShadowReport) Agreement() float64 {
	if r.Windows == 0 {
		return 0
	}
	return float64(r.Agree) / float64(r.Windows)
}

// LowMarginRate is the candidate's share of low-margin windows.
func (r *ShadowReport) LowMarginRate() float64 {
	if r.Windows == 0 {
		return 0
	}
	return float64(r.CandidateLowMargin) / float64(r.Windows)
}

// ActiveLowMarginRate is the active model's share of low-margin windows.
func (r *ShadowReport) ActiveLowMarginRate() float64 {
	if r.Windows == 0 {
		return 0
	}
	return float64(r.ActiveLowMargin) / float64(r.Windows)
}

// ClassesCounted reports whether the report carries its confusion matrix,
// from which the class histograms and both divergences come. A device
// leaves it out when a model has more than MaxShadowClasses classes or
// the report would be above its cap with it: the divergence is then not
// known, not 0.
func (r *ShadowReport) ClassesCounted() bool { return len(r.Confusion) > 0 }

// Histograms returns each model's windows per class label, from the
// confusion matrix (nil without one).
func (r *ShadowReport) Histograms() (active, candidate map[string]uint64) {
	if !r.ClassesCounted() {
		return nil, nil
	}
	active, candidate = map[string]uint64{}, map[string]uint64{}
	for i, row := range r.Confusion {
		for j, n := range row {
			active[r.ActiveClasses[i]] += n
			candidate[r.CandidateClasses[j]] += n
		}
	}
	return active, candidate
}

// Divergence is the Jensen–Shannon divergence, in bits (0 … 1), between
// the active model's and the candidate's class distributions over the same
// windows, classes matched by label; 0 without a confusion matrix.
func (r *ShadowReport) Divergence() float64 {
	a, c := r.Histograms()
	return JensenShannon(a, c)
}

// JensenShannon returns the Jensen–Shannon divergence in bits (0 … 1)
// between two histograms keyed by label: JS(P, Q) = H(M) − (H(P)+H(Q))/2
// with M = (P+Q)/2 and H the Shannon entropy. Empty histograms give 0.
func JensenShannon(p, q map[string]uint64) float64 {
	var np, nq float64
	for _, n := range p {
		np += float64(n)
	}
	for _, n := range q {
		nq += float64(n)
	}
	if np == 0 || nq == 0 {
		return 0
	}
	h := func(x float64) float64 {
		if x <= 0 {
			return 0
		}
		return -x * math.Log2(x)
	}
	var js float64
	seen := map[string]bool{}
	add := func(k string) {
		if seen[k] {
			return
		}
		seen[k] = true
		a, b := float64(p[k])/np, float64(q[k])/nq
		js += h((a+b)/2) - (h(a)+h(b))/2
	}
	for k := range p {
		add(k)
	}
	for k := range q {
		add(k)
	}
	return min(max(js, 0), 1)
}

func (r *ShadowReport) check() error {
	if err := CheckRolloutID(r.Rollout); err != nil {
		return err
	}
	if err := CheckHash(r.Bundle); err != nil {
		return err
	}
	if r.ActiveUnknown > r.Windows || r.CandidateUnknown > r.Windows {
		return fmt.Errorf("%d and %d unknown windows of %d", r.ActiveUnknown, r.CandidateUnknown, r.Windows)
	}
	switch {
	case !r.UnknownPaired && (r.ActiveOnlyUnknown > 0 || r.CandidateOnlyUnknown > 0):
		return fmt.Errorf("active_only_unknown and candidate_only_unknown without unknown_paired")
	case !r.UnknownPaired:
	// Both models unknown on the same windows: what is left of each
	// model's unknown windows once its own are taken out.
	case r.ActiveOnlyUnknown > r.ActiveUnknown || r.CandidateOnlyUnknown > r.CandidateUnknown ||
		r.ActiveUnknown-r.ActiveOnlyUnknown != r.CandidateUnknown-r.CandidateOnlyUnknown:
		return fmt.Errorf("%d and %d windows only one model reported unknown, of %d and %d unknown: the rest must be the same windows",
			r.ActiveOnlyUnknown, r.CandidateOnlyUnknown, r.ActiveUnknown, r.CandidateUnknown)
	}
	if above255Times(r.ActiveConfidence, r.Windows) || above255Times(r.CandidateConfidence, r.Windows) {
		return fmt.Errorf("confidence sums above 255 × the %d windows", r.Windows)
	}
	if r.Agree > r.Windows || r.ActiveLowMargin > r.Windows || r.CandidateLowMargin > r.Windows {
		return fmt.Errorf("counts above the %d windows", r.Windows)
	}
	if !(r.LowMargin >= 0 && r.LowMargin <= 1) {
		return fmt.Errorf("low_margin %v, want 0..1", r.LowMargin)
	}
	if len(r.ActiveClasses) > MaxShadowClasses || len(r.CandidateClasses) > MaxShadowClasses {
		return fmt.Errorf("more than %d classes", MaxShadowClasses)
	}
	if len(r.Confusion) == 0 {
		return nil
	}
	if len(r.Confusion) != len(r.ActiveClasses) {
		return fmt.Errorf("confusion has %d rows for %d active classes", len(r.Confusion), len(r.ActiveClasses))
	}
	var sum uint64
	for _, row := range r.Confusion {
		if len(row) != len(r.CandidateClasses) {
			return fmt.Errorf("confusion row has %d columns for %d candidate classes", len(row), len(r.CandidateClasses))
		}
		for _, n := range row {
			if n > r.Windows-sum { // sum ≤ Windows: no wrap, as sum+n could
				return fmt.Errorf("confusion adds up to more than %d windows", r.Windows)
			}
			sum += n
		}
	}
	return nil
}

// DriftReport is a device's drift score: how far the firing rates of its
// active model's fingerprinted embedding bits, over its recent windows,
// are from the rates on the training data (inference.Fingerprint.Drift).
type DriftReport struct {
	// Score is the mean Jensen–Shannon divergence in bits (0 … 1).
	Score float64 `json:"score"`
	// Windows the observed rates are over (an exponentially forgetting
	// count, so recent windows weigh most).
	Windows uint64 `json:"windows"`
	// Top lists the most drifted bits, largest divergence first.
	Top []DriftBit `json:"top,omitempty"`
}

// MaxDriftBits bounds DriftReport.Top.
const MaxDriftBits = 8

// DriftBit is one fingerprinted bit's drift.
type DriftBit struct {
	Column int32 `json:"column"` // index into the model's kept columns
	// Feature is the input feature a threshold bit tests (empty for a
	// random-feature bit).
	Feature string  `json:"feature,omitempty"`
	Train   float64 `json:"train"` // firing rate on the training data
	Now     float64 `json:"now"`   // firing rate on the device
	JS      float64 `json:"js"`    // divergence in bits
}

func (r *DriftReport) check() error {
	unit := func(x float64) bool { return x >= 0 && x <= 1 }
	if !unit(r.Score) {
		return fmt.Errorf("score %v, want 0..1", r.Score)
	}
	if len(r.Top) > MaxDriftBits {
		return fmt.Errorf("%d bits, at most %d", len(r.Top), MaxDriftBits)
	}
	for _, b := range r.Top {
		if b.Column < 0 || !unit(b.Train) || !unit(b.Now) || !unit(b.JS) || len(b.Feature) > 128 {
			return fmt.Errorf("bit %d: rates and divergence must be 0..1, feature at most 128 bytes", b.Column)
		}
	}
	return nil
}

// above255Times reports whether x > 255·windows, exactly: 255·windows
// computed in 64 bits wraps above 2⁶⁴/255 windows and would refuse a report
// whose sums are within the bound.
func above255Times(x, windows uint64) bool {
	hi, lo := bits.Mul64(255, windows)
	return hi == 0 && x > lo
}
