package agent

import (
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// queuedTelemetry runs the agent's telemetry path, stats to outbox, on
// the predictions of model r (class → count) and returns what the fleet
// decodes of the queued report.
func queuedTelemetry(t *testing.T, predictions map[string]uint64) *wire.Telemetry {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topics, _ := wire.NewTopics("f")
	a := &Agent{cfg: &Config{DeviceID: "gw-1"}, log: testLogger(t), db: db, topics: topics}
	now := time.Unix(1_750_000_000, 0)
	s := newStats(now)
	r := &running{ref: wire.ModelRef{ID: "m", Release: 1, Bundle: strings.Repeat("a", 64)}}
	for class, n := range predictions {
		for range n {
			s.record(r, class, now, time.Millisecond)
		}
	}
	tel := &wire.Telemetry{Device: "gw-1", Session: 1, Boot: 1, Seq: 1}
	s.snapshot(at(now.Add(10*time.Second)), tel)
	tel.Model = &r.ref
	a.queueTelemetry(tel, newRepeatLimiter(time.Minute))
	queued, err := db.Peek(10)
	if err != nil || len(queued) != 1 {
		t.Fatalf("%d reports queued, %v; want 1", len(queued), err)
	}
	back, err := wire.DecodeTelemetry(queued[0].Payload)
	if err != nil {
		t.Fatalf("the fleet refuses the report of %d classes: %v", len(predictions), err)
	}
	return back
}

// TestTelemetryOfManyClassesReachesTheFleet: a bundle may have 4,096
// classes, a report name at most wire.MaxTelemetryClasses (256) in 16 KiB.
// The agent sent every class it counted, and the fleet refused the
// report: a model of more than 256 classes seen in one interval (or
// fewer with long labels) never had its telemetry applied. The agent now
// names the most predicted classes that fit and sums the rest in
// counts_other, so the report adds up.
func TestTelemetryOfManyClassesReachesTheFleet(t *testing.T) {
	for _, c := range []struct {
		name    string
		classes int
		label   func(i int) string
		named   int // classes the report names; 0: every class
	}{
		{"20 classes", 20, func(i int) string { return fmt.Sprintf("class-%d", i) }, 0},
		{"256 classes", 256, func(i int) string { return fmt.Sprintf("c%03d", i) }, 0},
		{"4,096 classes", 4096, func(i int) string { return fmt.Sprintf("c%04d", i) }, wire.MaxTelemetryClasses},
		// 64-byte labels (the longest a bundle has) fit 200 or so in 16 KiB.
		{"256 classes of 64 bytes", 256, func(i int) string { return fmt.Sprintf("%064d", i) }, -1},
		// '<' is six bytes in JSON: a few dozen such labels fill a report.
		{"4,096 classes of 64 '<'", 4096, func(i int) string { return strings.Repeat("<", 60) + fmt.Sprintf("%04d", i) }, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			predictions := map[string]uint64{}
			var total uint64
			for i := range c.classes {
				predictions[c.label(i)] = uint64(1 + i%7)
				total += uint64(1 + i%7)
			}
			back := queuedTelemetry(t, predictions)
			if back.Predictions != total {
				t.Fatalf("%d predictions, want %d", back.Predictions, total)
			}
			var sum uint64
			for class, n := range back.Counts {
				if predictions[class] != n {
					t.Fatalf("class %q counted %d, want %d", class, n, predictions[class])
				}
				sum += n
			}
			switch {
			case c.named == 0 && (len(back.Counts) != c.classes || back.Other != nil):
				t.Fatalf("%d classes named, counts_other %+v; want all %d, none", len(back.Counts), back.Other, c.classes)
			case c.named > 0 && len(back.Counts) != c.named:
				t.Fatalf("%d classes named, want %d", len(back.Counts), c.named)
			case c.named < 0 && (len(back.Counts) < 8 || len(back.Counts) >= c.classes):
				t.Fatalf("%d classes named of %d", len(back.Counts), c.classes)
			}
			if c.named == 0 {
				return
			}
			// The rest adds up, and the named classes are the most predicted.
			if o := back.Other; o == nil || int(o.Classes)+len(back.Counts) != c.classes || sum+o.Predictions != total {
				t.Fatalf("counts_other %+v with %d classes named (%d predictions); want the other %d classes, %d predictions",
					o, len(back.Counts), sum, c.classes-len(back.Counts), total-sum)
			}
			least := slices.Min(slices.Collect(maps.Values(back.Counts)))
			for class, n := range predictions {
				if _, named := back.Counts[class]; !named && n > least {
					t.Fatalf("class %q (%d predictions) left out, while one of %d is named", class, n, least)
				}
			}
		})
	}
}

// TestMarshalTelemetryTooLarge: a report above the cap even without class
// counts is an error that says so, not a payload the fleet refuses.
func TestMarshalTelemetryTooLarge(t *testing.T) {
	tel := &wire.Telemetry{Device: "gw-1", Session: 1, Seq: 1, Predictions: 300,
		Last: &wire.Prediction{Class: strings.Repeat("x", wire.MaxTelemetrySize)}, Counts: map[string]uint64{}}
	for i := range 300 {
		tel.Counts[fmt.Sprint(i)] = 1
	}
	_, _, err := marshalTelemetry(tel)
	if err == nil || !strings.Contains(err.Error(), "without its 300 class counts, above the 16384 bytes the fleet accepts") {
		t.Fatalf("got %v", err)
	}
}

// TestShadowConfusionLeftOutWhenTooLarge: a shadow of two models of 32
// classes with 64-byte labels full of '<' (six bytes each in JSON) has a
// confusion matrix and class lists of more than 16 KiB on their own. The
// agent logged "telemetry not queued" every interval, and the fleet saw
// neither the shadow's windows nor the device's counts until the
// rollout timed out. Now the report goes without the matrix (as for a
// model of more than wire.MaxShadowClasses classes), says so once per
// shadow command, and the fleet refuses to pass a divergence gate on it.
func TestShadowConfusionLeftOutWhenTooLarge(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	topics, _ := wire.NewTopics("f")
	logs := &lockedBuffer{}
	a := &Agent{cfg: &Config{DeviceID: "gw-1"}, log: slog.New(slog.NewTextHandler(logs, nil)), db: db, topics: topics}
	label := func(i int) string { return strings.Repeat("<", 60) + fmt.Sprintf("%04d", i) }
	report := func(seq uint64, bigLabels bool) *wire.Telemetry {
		sh := &wire.ShadowReport{Rollout: "r1", Seq: 7, Bundle: strings.Repeat("b", 64), Windows: 32 * 32 * 1_000_000, LowMargin: 0.1}
		for i := range wire.MaxShadowClasses {
			l := fmt.Sprintf("c%d", i)
			if bigLabels {
				l = label(i)
			}
			sh.ActiveClasses = append(sh.ActiveClasses, l)
			sh.CandidateClasses = append(sh.CandidateClasses, l)
			row := make([]uint64, wire.MaxShadowClasses)
			for j := range row {
				row[j] = 1_000_000
			}
			sh.Confusion = append(sh.Confusion, row)
			sh.Agree += row[i]
		}
		tel := &wire.Telemetry{Device: "gw-1", Session: 1, Boot: 1, Seq: seq, From: 1, To: 2, Predictions: 64,
			Counts: map[string]uint64{}, Shadow: sh}
		for i := range 32 {
			tel.Counts[label(i)] = 2
		}
		return tel
	}
	limiter := newRepeatLimiter(time.Minute)
	// Short labels: the matrix fits and is sent.
	a.queueTelemetry(report(1, false), limiter)
	for seq := uint64(2); seq <= 3; seq++ {
		a.queueTelemetry(report(seq, true), limiter)
	}
	queued, err := db.Peek(10)
	if err != nil || len(queued) != 3 {
		t.Fatalf("%d reports queued, %v; want 3 (log: %s)", len(queued), err, logs.b.String())
	}
	for i, q := range queued {
		back, err := wire.DecodeTelemetry(q.Payload)
		if err != nil {
			t.Fatalf("report %d: the fleet refuses it: %v", i+1, err)
		}
		sh := back.Shadow
		if sh == nil || sh.Windows != 32*32*1_000_000 {
			t.Fatalf("report %d: shadow %+v", i+1, sh)
		}
		if got, want := len(sh.Confusion) > 0, i == 0; got != want {
			t.Fatalf("report %d: confusion sent %v, want %v", i+1, got, want)
		}
		if i > 0 && (len(back.Counts) == 0 || sh.ActiveClasses != nil) {
			t.Fatalf("report %d: %d class counts, active classes %d; want the counts kept and the lists left out with the matrix", i+1, len(back.Counts), len(sh.ActiveClasses))
		}
	}
	if n := logs.count("shadow report sent without its confusion matrix"); n != 1 {
		t.Fatalf("warned %d times, want once per shadow command: %s", n, logs.b.String())
	}
	if n := logs.count("telemetry not queued"); n != 0 {
		t.Fatalf("reports lost: %s", logs.b.String())
	}
}
