package inventory

import (
	"math"
	"slices"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// Telemetry copies and gaps. A report is identified by its process and
// sequence: (Boot, Seq), or (Session, Seq) from agents before Boot
// (wire.Telemetry). The record keeps every report applied as runs of
// consecutive sequence numbers per process (api.TelemetryRun), so a copy
// — a report another replica already applied, a redelivery however late —
// is refused exactly, and reports may still arrive in any order (replicas
// handle messages concurrently, a redelivery comes late). The runs are
// bounded (api.MaxTelemetryRuns): past the bound the oldest run is folded
// into the floor, below which every report is taken as applied. So a copy
// is never applied twice; what the bound costs is a real report arriving
// after more than api.MaxTelemetryRuns newer gaps or processes, which is then
// refused as if it were a copy (it stays counted missing).
//
// Gaps: TelemetryMissing counts the sequence numbers not applied between
// a process's runs, and below its first run (a process's reports start at
// 1) — except below the first report the record ever applied (it may
// follow a restored backup) and, for agents before Boot, whose sequence
// runs on across their sessions, below each session's first.
//
// Invariants: TelemetryRuns is sorted by (Key, From), its runs are
// disjoint and never adjacent within one process, every run lies above
// TelemetryFloor, and TelemetryMissing = TelemetryMissingBefore + the gaps
// the runs show (telemetryGaps).

// telemetryPos is a report's place in the device's order of reports.
type telemetryPos struct{ key, seq uint64 }

func (p telemetryPos) less(o telemetryPos) bool {
	return p.key < o.key || p.key == o.key && p.seq < o.seq
}

func runOf(m *wire.Telemetry) api.TelemetryRun {
	r := api.TelemetryRun{Boot: m.Boot, From: m.Seq, To: m.Seq}
	if m.Boot == 0 {
		r.Session = m.Session
	}
	return r
}

func sameProcess(a, b api.TelemetryRun) bool { return a.Boot == b.Boot && a.Session == b.Session }

func posOf(m *wire.Telemetry) telemetryPos {
	r := runOf(m)
	return telemetryPos{r.Key(), m.Seq}
}

// upgradeTelemetry turns a record kept by a fleet before the runs (a
// 64-report window) into a floor at its highest report: what is at or
// below it is taken as applied.
func (d *Device) upgradeTelemetry() {
	if d.TelemetryWindow == 0 && d.TelemetryFrom == 0 && (d.TelemetrySeq == 0 || len(d.TelemetryRuns) > 0 || d.TelemetryFloor != nil) {
		return
	}
	d.TelemetryFloor = &api.TelemetryRun{Session: d.TelemetrySession, From: d.TelemetrySeq, To: d.TelemetrySeq}
	d.TelemetryFirst = d.TelemetrySession
	d.TelemetryMissingBefore = d.TelemetryMissing
	d.TelemetryWindow, d.TelemetryFrom = 0, 0
}

// TelemetrySeen reports whether m is a copy of a report already applied
// (or one at or below the floor).
func (d *Device) TelemetrySeen(m *wire.Telemetry) bool {
	d.upgradeTelemetry()
	p, r := posOf(m), runOf(m)
	if f := d.TelemetryFloor; f != nil && !(telemetryPos{f.Key(), f.To}).less(p) {
		return true
	}
	for _, x := range d.TelemetryRuns {
		if sameProcess(x, r) && x.From <= m.Seq && m.Seq <= x.To {
			return true
		}
	}
	return false
}

// newestTelemetry is the newest report applied, and whether there is one.
func (d *Device) newestTelemetry() (telemetryPos, bool) {
	if n := len(d.TelemetryRuns); n > 0 {
		r := d.TelemetryRuns[n-1]
		return telemetryPos{r.Key(), r.To}, true
	}
	if f := d.TelemetryFloor; f != nil {
		return telemetryPos{f.Key(), f.To}, true
	}
	return telemetryPos{}, false
}

// markTelemetry records m as applied (TelemetrySeen said it is not) and
// reports whether it is the newest report applied so far: only the newest
// sets the record's latest-interval fields.
func (d *Device) markTelemetry(m *wire.Telemetry) (newest bool) {
	d.upgradeTelemetry()
	p, r := posOf(m), runOf(m)
	top, any := d.newestTelemetry()
	newest = !any || top.less(p)
	if !any {
		d.TelemetryFirst = p.key
	}
	runs := d.TelemetryRuns
	i, _ := slices.BinarySearchFunc(runs, p, func(x api.TelemetryRun, p telemetryPos) int {
		if (telemetryPos{x.Key(), x.From}).less(p) {
			return -1
		}
		return 1
	})
	// runs[i-1] starts below m, runs[i] above it.
	joinLow := i > 0 && sameProcess(runs[i-1], r) && runs[i-1].To+1 == m.Seq
	joinHigh := i < len(runs) && sameProcess(runs[i], r) && m.Seq+1 == runs[i].From
	switch {
	case joinLow && joinHigh:
		runs[i-1].To = runs[i].To
		runs = slices.Delete(runs, i, i+1)
	case joinLow:
		runs[i-1].To = m.Seq
	case joinHigh:
		runs[i].From = m.Seq
	default:
		runs = slices.Insert(runs, i, r)
	}
	for len(runs) > api.MaxTelemetryRuns {
		before := d.telemetryGaps(runs)
		f := runs[0]
		f.From = f.To
		d.TelemetryFloor = &f
		runs = slices.Delete(runs, 0, 1)
		d.TelemetryMissingBefore = satAdd(d.TelemetryMissingBefore, before-min(before, d.telemetryGaps(runs)))
	}
	d.TelemetryRuns = runs
	d.TelemetryMissing = satAdd(d.TelemetryMissingBefore, d.telemetryGaps(runs))
	if newest {
		d.TelemetrySession, d.TelemetrySeq = m.Session, m.Seq
	}
	return newest
}

// telemetryGaps counts the sequence numbers the runs show missing (see
// the rule at the top of this file).
func (d *Device) telemetryGaps(runs []api.TelemetryRun) uint64 {
	var n uint64
	for i, r := range runs {
		switch f := d.TelemetryFloor; {
		case i > 0 && sameProcess(runs[i-1], r):
			n = satAdd(n, r.From-runs[i-1].To-1)
		case f != nil && sameProcess(*f, r):
			n = satAdd(n, r.From-min(r.From, f.To+1))
		case r.Boot != 0 && r.Key() != d.TelemetryFirst:
			n = satAdd(n, r.From-1)
		}
	}
	return n
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
