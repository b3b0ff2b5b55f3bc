package sensors

import (
	"fmt"
	"strconv"
	"time"
)

// A sensor that delivers fewer readings than its configured rate feeds
// windows that span more time than the model was trained on (band energies
// land in the wrong bands), so Retrying measures the rate it delivers and
// reports the sensor StateSlow while it falls short.
const (
	// rateWindow is the least span of one measurement (and rateWindowSamples
	// the least number of configured periods in it).
	rateWindow        = 2 * time.Second
	rateWindowSamples = 20
	// A window below slowBelow of the configured rate counts as slow, one
	// at okFrom or more as keeping it; in between changes nothing.
	slowBelow = 0.90
	okFrom    = 0.97
	// rateWindowsToChange consecutive windows change the verdict, so one
	// stall (a GC pause, a busy minute on a shared machine) does not.
	rateWindowsToChange = 2
)

// rateWatch measures the readings per second a sensor delivers, by the
// clock, over consecutive windows, and decides whether it keeps its
// configured rate. Invariant: slow changes only after rateWindowsToChange
// consecutive windows agree.
type rateWatch struct {
	want   float64 // configured rate; 0: none, never slow
	window time.Duration
	start  time.Time // of the current window; zero: none started
	n      int       // readings since start
	runs   int       // consecutive windows contradicting slow
	slow   bool
	got    float64 // readings per second over the last full window
	ended  uint64  // full windows so far
}

func newRateWatch(want float64) rateWatch {
	w := rateWatch{want: want}
	if want > 0 {
		w.window = max(rateWindow, time.Duration(rateWindowSamples/want*float64(time.Second)))
	}
	return w
}

// tick counts one reading delivered at now and reports whether the
// verdict (slow) changed.
func (w *rateWatch) tick(now time.Time) bool {
	if w.want <= 0 {
		return false
	}
	if w.start.IsZero() {
		w.start = now // this reading opens the window; those after it count
		return false
	}
	w.n++
	el := now.Sub(w.start)
	if el < w.window {
		return false
	}
	w.got = float64(w.n) / el.Seconds()
	w.start, w.n = now, 0
	w.ended++
	contradicts := w.got < slowBelow*w.want
	if w.slow {
		contradicts = w.got >= okFrom*w.want
	}
	if !contradicts {
		w.runs = 0
		return false
	}
	if w.runs++; w.runs < rateWindowsToChange {
		return false
	}
	w.slow, w.runs = !w.slow, 0
	return true
}

// restart forgets the current window and the verdict: the time a sensor
// spends failed or being reopened is not a rate.
func (w *rateWatch) restart() {
	*w = newRateWatch(w.want)
}

// describe says how far short of its rate the sensor is.
func (w *rateWatch) describe() string {
	return fmt.Sprintf("reads %s of the configured %s", FormatRate(w.got), FormatRate(w.want))
}

// FormatRate writes a rate in Hz with three significant digits at most:
// "1.8 kHz", "20 kHz", "500 Hz", "0.5 Hz".
func FormatRate(hz float64) string {
	unit := "Hz"
	if hz >= 1000 {
		hz, unit = hz/1000, "kHz"
	}
	return strconv.FormatFloat(hz, 'g', 3, 64) + " " + unit
}
