package training

import (
	"fmt"
	"math"
	"strings"
)

// Warnings say when a validation score cannot be trusted as a forecast of
// the model on later data. Each names what was seen and what to do; none
// stops training. Thresholds:
const (
	warnRecall  = 10.0 // a class recalled this rarely (percent) is "near zero"
	warnMinRows = 5    // …when it has at least this many rows
	warnSpread  = 10.0 // forward folds whose balanced accuracy spreads this much (points, SD) disagree
	warnGap     = 10.0 // validation this far (points) above the test score is "far above"
)

// validationWarnings returns the warnings of the chosen candidate's
// validation scores: a class it almost never recognises, and forward
// folds that disagree.
func validationWarnings(sel selection, classes []string, rows []int) []string {
	var out []string
	var weak []string
	for c, r := range sel.Recall {
		if !math.IsNaN(r) && r < warnRecall && c < len(rows) && rows[c] >= warnMinRows {
			weak = append(weak, fmt.Sprintf("%q %.1f%% of %d rows", className(classes, c), r, rows[c]))
		}
	}
	if len(weak) > 0 {
		out = append(out, fmt.Sprintf("near-zero recall on the validation rows: %s; the model barely recognises %s — more labelled rows of %s, or a longer recording, would help",
			strings.Join(weak, ", "), plural(len(weak), "this class", "these classes"), plural(len(weak), "it", "them")))
	}
	if len(sel.Folds) > 1 && sel.Spread > warnSpread {
		f := make([]string, len(sel.Folds))
		for i, b := range sel.Folds {
			f[i] = fmt.Sprintf("%.1f%%", b)
		}
		out = append(out, fmt.Sprintf("the validation folds disagree: balanced accuracy %s from the earliest to the latest period (spread %.1f points); expect the model's accuracy on later data to vary as much",
			strings.Join(f, ", "), sel.Spread))
	}
	return out
}

// TestWarnings returns the warnings of a model's score on test rows
// against its validation score (val, the chosen candidate; nil without a
// search): a class it almost never recognises on the test rows, and a
// validation score far above the test score — the data moved, or
// validation leaked.
//
// It does not know how val was validated, so its advice on a gap covers
// every case; Result.TestWarnings gives only the advice that applies.
func TestWarnings(val *SearchPoint, ev *Evaluation) []string {
	return testWarnings(val, ev, -1)
}

// TestWarnings is TestWarnings for r's chosen candidate, with the advice
// on a gap that fits how it was validated: rows already validated forward
// in time (or on groups left out) are not told to say they are a
// recording.
func (r *Result) TestWarnings(ev *Evaluation) []string {
	return testWarnings(r.Selected, ev, r.heldKind)
}

// testWarnings is TestWarnings; kind is how val was validated, -1 unknown.
func testWarnings(val *SearchPoint, ev *Evaluation, kind foldKind) []string {
	var out []string
	var weak []string
	for _, c := range ev.PerClass {
		if c.Rows >= warnMinRows && c.Recall < warnRecall {
			weak = append(weak, fmt.Sprintf("%q %.1f%% of %d rows", c.Class, c.Recall, c.Rows))
		}
	}
	if len(weak) > 0 {
		out = append(out, fmt.Sprintf("near-zero recall on the test rows: %s", strings.Join(weak, ", ")))
	}
	if val != nil && val.Balanced-ev.Balanced > warnGap {
		why := "later data that drifted, or validation rows too close to the training rows (give --time-ordered if the rows are a recording)"
		switch kind {
		case forwardFolds:
			why = "the validation was already on later periods of the recording, so the test period itself differs: drift, or a season or state the training rows never saw (train on rows that include it, or retrain as it changes)"
		case groupFolds:
			why = "the validation was already on groups left out of training, so the test rows differ otherwise: later data that drifted, or groups unlike every training group"
		}
		out = append(out, fmt.Sprintf("validation (balanced accuracy %.1f%%) is far above the test score (%.1f%%): the test rows are unlike the rows validated on — %s",
			val.Balanced, ev.Balanced, why))
	}
	return out
}

func className(classes []string, c int) string {
	if c < len(classes) {
		return classes[c]
	}
	return fmt.Sprint(c)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
