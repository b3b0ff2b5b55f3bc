package inventory

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

var testNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// offer applies m to d as the intake does and reports whether it was
// applied (false: refused as a copy).
func offer(d *Device, m *wire.Telemetry) bool {
	if d.TelemetrySeen(m) {
		return false
	}
	d.ApplyTelemetry(m, testNow)
	return true
}

// TestTelemetryCopiesNeverApplied: reports applied in any order count
// once each, and a copy of one is refused however late it comes — the
// 64-report window this replaced applied a copy more than 64 reports
// below the highest again (issue 39: 302 reports stored for 300); a
// restarted agent's reports (a new boot) are new.
func TestTelemetryCopiesNeverApplied(t *testing.T) {
	d := &Device{}
	report := func(boot, session, seq uint64) *wire.Telemetry {
		return &wire.Telemetry{Boot: boot, Session: session, Seq: seq, Predictions: 1}
	}
	order := []uint64{3, 1, 2, 7, 5, 70, 6, 4, 69, 8, 200}
	for _, seq := range order {
		if !offer(d, report(5, 6, seq)) {
			t.Fatalf("report %d refused as a copy on its first arrival (order %v)", seq, order)
		}
	}
	for _, seq := range order {
		if offer(d, report(5, 6, seq)) {
			t.Errorf("a copy of report %d was applied again", seq)
		}
	}
	// The same process in a later session: its sequence runs on.
	if !offer(d, report(5, 9, 201)) || offer(d, report(5, 9, 201)) || offer(d, report(5, 6, 201)) {
		t.Error("report 201 of the process's next session: not applied once")
	}
	if d.Predictions != uint64(len(order))+1 {
		t.Errorf("%d predictions, want %d", d.Predictions, len(order)+1)
	}
	// Restarted: a new boot, its sequence from 1 again.
	if !offer(d, report(10, 10, 1)) || offer(d, report(10, 11, 1)) || !offer(d, report(10, 11, 2)) {
		t.Error("a restarted agent's reports not handled as new")
	}
	if d.TelemetrySession != 11 || d.TelemetrySeq != 2 {
		t.Errorf("newest report: session %d seq %d, want 11 and 2", d.TelemetrySession, d.TelemetrySeq)
	}

	// Agents before Boot: reports identified by (session, seq).
	d = &Device{}
	for _, m := range [][2]uint64{{5, 1}, {5, 2}, {6, 4}, {7, 6}, {5, 3}, {6, 5}} {
		if !offer(d, report(0, m[0], m[1])) {
			t.Errorf("report %d of session %d refused as a copy on its first arrival", m[1], m[0])
		}
	}
	for _, m := range [][2]uint64{{5, 1}, {5, 3}, {6, 4}, {6, 5}, {7, 6}} {
		if offer(d, report(0, m[0], m[1])) {
			t.Errorf("a copy of report %d of session %d was applied again", m[1], m[0])
		}
	}
	if !offer(d, report(0, 8, 1)) {
		t.Error("a restarted agent's first report refused")
	}
}

// TestTelemetryBounded: more gaps than the record keeps runs fold the
// oldest into the floor: copies are still refused, the count of missing
// reports is unchanged by the folding, and the record stays bounded.
func TestTelemetryBounded(t *testing.T) {
	d := &Device{}
	for i := uint64(0); i < 3*api.MaxTelemetryRuns; i++ {
		if !offer(d, &wire.Telemetry{Boot: 1, Session: 1, Seq: 2*i + 1}) { // every other report
			t.Fatalf("report %d refused", 2*i+1)
		}
		if len(d.TelemetryRuns) > api.MaxTelemetryRuns {
			t.Fatalf("%d runs kept", len(d.TelemetryRuns))
		}
		if d.TelemetryMissing != i {
			t.Fatalf("after report %d: %d missing, want %d", 2*i+1, d.TelemetryMissing, i)
		}
	}
	for i := uint64(0); i < 3*api.MaxTelemetryRuns; i++ {
		if offer(d, &wire.Telemetry{Boot: 1, Session: 1, Seq: 2*i + 1}) {
			t.Fatalf("a copy of report %d applied", 2*i+1)
		}
	}
	// A late report in a gap still kept fills it; one below the floor is
	// refused (taken as applied): the bound's cost.
	top := 2 * 3 * uint64(api.MaxTelemetryRuns)
	if !offer(d, &wire.Telemetry{Boot: 1, Session: 1, Seq: top - 2}) {
		t.Error("a late report in a kept gap refused")
	}
	if offer(d, &wire.Telemetry{Boot: 1, Session: 1, Seq: 2}) {
		t.Error("a report below the floor applied")
	}
	if d.TelemetryMissing != 3*api.MaxTelemetryRuns-2 {
		t.Errorf("%d missing, want %d", d.TelemetryMissing, 3*api.MaxTelemetryRuns-2)
	}
}

// TestTelemetryGapsCounted: a report above the highest counts the reports
// it skipped as missing, a late one takes its gap back, a copy changes
// nothing, and a restarted agent whose first report is not its seq 1 lost
// the ones before; a record's first report counts nothing (it may follow
// a restored backup). Issue 42: Mosquitto dropped 16 of 286 honest
// reports and nothing showed it.
func TestTelemetryGapsCounted(t *testing.T) {
	d := &Device{}
	for _, c := range []struct {
		boot, session, seq, missing uint64
	}{
		{1, 1, 7, 0},    // the record's first report
		{1, 1, 8, 0},    // the next
		{1, 1, 11, 2},   // 9 and 10 skipped
		{1, 1, 10, 1},   // 10 arrives late
		{1, 1, 10, 1},   // a copy of it
		{1, 1, 100, 89}, // 12 … 99 skipped (88), 9 still missing
		{1, 1, 99, 88},  // late
		{1, 2, 101, 88}, // reconnected, the sequence runs on
		{3, 3, 4, 91},   // restarted: 1, 2, 3 of the new process lost
		{3, 3, 2, 90},   // one of them late
		{1, 2, 9, 89},   // the first process's last gap, very late
	} {
		offer(d, &wire.Telemetry{Boot: c.boot, Session: c.session, Seq: c.seq})
		if d.TelemetryMissing != c.missing {
			t.Fatalf("after report %d of boot %d: %d missing, want %d", c.seq, c.boot, d.TelemetryMissing, c.missing)
		}
	}
}

// TestTelemetryLatestFromNewest: a late report adds its predictions but
// does not replace the latest interval's figures.
func TestTelemetryLatestFromNewest(t *testing.T) {
	d := &Device{}
	offer(d, &wire.Telemetry{Boot: 1, Session: 1, Seq: 2, Predictions: 5, Counts: map[string]uint64{"new": 5}})
	offer(d, &wire.Telemetry{Boot: 1, Session: 1, Seq: 1, Predictions: 3, Counts: map[string]uint64{"old": 3}})
	if d.Predictions != 8 || d.Counts["new"] != 5 || d.TelemetrySeq != 2 {
		t.Errorf("predictions %d, counts %v, newest %d; want 8, the newest's counts, 2", d.Predictions, d.Counts, d.TelemetrySeq)
	}
}

// TestTelemetryUpgradedRecord: a record kept by an earlier fleet (a
// window below its highest report) becomes a floor there.
func TestTelemetryUpgradedRecord(t *testing.T) {
	d := &Device{}
	d.TelemetrySession, d.TelemetrySeq, d.TelemetryWindow, d.TelemetryMissing = 4, 30, 0b1011, 2
	if offer(d, &wire.Telemetry{Session: 4, Seq: 30}) || offer(d, &wire.Telemetry{Session: 4, Seq: 3}) {
		t.Error("a report at or below the old record's highest applied")
	}
	if !offer(d, &wire.Telemetry{Session: 4, Seq: 31}) || d.TelemetryWindow != 0 || d.TelemetryMissing != 2 {
		t.Errorf("the next report: window %b, missing %d; want applied, 0, 2", d.TelemetryWindow, d.TelemetryMissing)
	}
	if !offer(d, &wire.Telemetry{Boot: 6, Session: 7, Seq: 1}) {
		t.Error("an upgraded agent's first report refused")
	}
}

// TestTelemetryOtherCounts: the classes a report leaves out (a model of
// more classes than a report names) are kept with the latest counts and
// counted in the health history under api.HealthOther, so the counts
// still add up to the predictions.
func TestTelemetryOtherCounts(t *testing.T) {
	d := &Device{}
	m := &wire.Telemetry{Boot: 1, Session: 1, Seq: 1, Predictions: 10, Counts: map[string]uint64{"a": 5, "b": 2},
		Other: &wire.OtherCounts{Classes: 3, Predictions: 3}}
	if !offer(d, m) {
		t.Fatal("report refused")
	}
	if d.CountsOther == nil || *d.CountsOther != *m.Other || len(d.Counts) != 2 {
		t.Fatalf("counts %v, other %+v; want %v, %+v", d.Counts, d.CountsOther, m.Counts, m.Other)
	}
	var p api.HealthPoint
	addToPoint(&p, m)
	if p.Predictions != 10 || p.Counts["a"] != 5 || p.Counts["b"] != 2 || p.Counts[api.HealthOther] != 3 {
		t.Fatalf("health point %+v, want a 5, b 2, %s 3 of 10", p, api.HealthOther)
	}
	// The next report names every class: nothing left out any more.
	m = &wire.Telemetry{Boot: 1, Session: 1, Seq: 2, Predictions: 1, Counts: map[string]uint64{"a": 1}}
	if !offer(d, m) || d.CountsOther != nil {
		t.Fatalf("counts_other %+v after a report without", d.CountsOther)
	}
}
