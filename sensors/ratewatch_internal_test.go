package sensors

import (
	"testing"
	"time"
)

// TestRateWatchNeedsTwoWindows: one stall (a window far below the rate)
// changes nothing; two windows in a row do, either way; a sensor with no
// configured rate is never slow.
func TestRateWatchNeedsTwoWindows(t *testing.T) {
	now := time.Unix(0, 0)
	w := newRateWatch(1000)
	changes := 0
	read := func(d time.Duration, every time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(every) {
			if w.tick(now) {
				changes++
			}
		}
	}
	read(5*time.Second, time.Millisecond)
	now = now.Add(3 * time.Second) // a stall: one window of ~400 Hz
	read(5*time.Second, time.Millisecond)
	if w.slow || changes != 0 {
		t.Fatalf("one stall: slow %v after %d changes", w.slow, changes)
	}
	read(6100*time.Millisecond, 1250*time.Microsecond) // 800 Hz: two whole windows after a mixed one
	if !w.slow || changes != 1 || w.describe() != "reads 800 Hz of the configured 1 kHz" {
		t.Fatalf("at 800 Hz: slow %v after %d changes, %q", w.slow, changes, w.describe())
	}
	read(6100*time.Millisecond, 1040*time.Microsecond) // 962 Hz: between the bounds
	if !w.slow || changes != 1 {
		t.Fatalf("at 96%%: slow %v after %d changes, want still slow", w.slow, changes)
	}
	read(6100*time.Millisecond, time.Millisecond)
	if w.slow || changes != 2 {
		t.Fatalf("back at 1 kHz: slow %v after %d changes", w.slow, changes)
	}
	none := newRateWatch(0)
	for i := range 100 {
		if none.tick(time.Unix(int64(i*100), 0)) {
			t.Fatal("a sensor without a rate changed verdict")
		}
	}
	for hz, want := range map[float64]string{1820: "1.82 kHz", 20000: "20 kHz", 500: "500 Hz", 0.5: "0.5 Hz", 1000: "1 kHz"} {
		if got := FormatRate(hz); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", hz, got, want)
		}
	}
}
