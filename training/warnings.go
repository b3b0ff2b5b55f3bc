package training

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/trit-iot/trit/training/data"
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

// stuckWarnings warns of a recording's columns that hold one value over a
// long stretch at its start or end (data.StuckRuns): one warning per
// stretch that columns share (the same end, length and kind of value).
// Whether a stretch was a gap is for the user to tell; the warning says
// what was seen and how to check it. The fix is the user's too: a search
// that dropped such columns itself would trust validation periods in
// which they vary, and on electricity those preferred keeping them while
// the later rows did not (docs/TRAINING.md "When validation cannot be
// trusted").
func stuckWarnings(ds *data.Dataset) []string {
	type stretch struct {
		latest  bool
		rows    int
		missing bool
	}
	var keys []stretch
	cols := map[stretch][]string{}
	for _, r := range data.StuckRuns(ds) {
		k := stretch{r.Latest, r.Rows, r.Value != r.Value}
		if cols[k] == nil {
			keys = append(keys, k)
		}
		name := fmt.Sprintf("feature %d", r.Feature+1)
		if r.Feature < len(ds.Features) && ds.Features[r.Feature] != "" {
			name = ds.Features[r.Feature]
		}
		cols[k] = append(cols[k], name)
	}
	var out []string
	for _, k := range keys {
		names := cols[k]
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = strconv.Quote(n)
		}
		list := strings.Join(quoted, ", ")
		if len(quoted) > 1 {
			list = strings.Join(quoted[:len(quoted)-1], ", ") + " and " + quoted[len(quoted)-1]
		}
		what := plural(len(names), "holds one value inside its range", "each hold one value inside their range")
		if k.missing {
			what = plural(len(names), "is missing", "are missing")
		}
		share := 100 * float64(k.rows) / float64(ds.N)
		subject := plural(len(names), "column ", "columns ") + list
		ignore := "--ignore-column " + strings.Join(names, ",")
		if k.latest {
			out = append(out, fmt.Sprintf("%s %s over the latest %d of the %d rows (%.1f%%), after varying before them: a sensor that stopped, or a gap filled in, looks like this, and the latest validation folds score the model on those rows; if the readings were not real, train without %s (%s) or on the rows before",
				subject, what, k.rows, ds.N, share, plural(len(names), "it", "them"), ignore))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s over the earliest %d of the %d rows (%.1f%%) and %s after them: a gap filled in (readings that began late) looks like this, and the model learns %s from the later rows alone; if the readings were not real, also train without %s (%s) and compare the two models on later rows (--test)",
			subject, what, k.rows, ds.N, share, plural(len(names), "varies", "vary"), plural(len(names), "it", "them"), plural(len(names), "it", "them"), ignore))
	}
	return out
}
