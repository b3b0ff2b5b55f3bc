package fleet

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// healthReport is a telemetry report of 600 windows, 30 of them unknown,
// with a drift score and a latency.
func healthReport(seq uint64) *wire.Telemetry {
	return &wire.Telemetry{Device: "gw-1", Session: 1, Seq: seq, From: 1, To: 2, Predictions: 600,
		Counts:     map[string]uint64{"normal": 500, "fault": 100},
		Latency:    &wire.Latency{P50: 40, P90: 50, P99: 60, Max: 70},
		Drift:      &wire.DriftReport{Score: 0.01 * float64(seq%5), Windows: 600},
		Confidence: &wire.ConfidenceReport{Unknown: 30, Novel: 30, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 100, 200, 300}, Mean: 0.85}}
}

// healthKeys lists the FleetHealth documents and their JSON bytes.
func healthKeys(t *testing.T, db store.Database) (keys []string, bytes int) {
	t.Helper()
	err := db.ForEach(store.FleetHealth, func(key string, raw []byte) error {
		keys = append(keys, key)
		bytes += len(raw)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, bytes
}

// TestHealthHistory: reports in one minute add up to one point, the next
// minute starts another, and the hour point holds both; the unknown
// rate, mean confidence, drift and latency come through.
func TestHealthHistory(t *testing.T) {
	f := newFixture(t)
	f.clk.t = t0.Add(10 * time.Second)
	f.telemetry(t, healthReport(1))
	f.clk.t = t0.Add(40 * time.Second)
	f.telemetry(t, healthReport(2))
	f.clk.t = t0.Add(3 * time.Minute)
	f.telemetry(t, healthReport(3))
	h, err := inventory.DeviceHealthHistory(f.db, "gw-1", f.clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Minutes) != 2 || len(h.Hours) != 1 {
		t.Fatalf("%d minute and %d hour points, want 2 and 1", len(h.Minutes), len(h.Hours))
	}
	m := h.Minutes[0]
	u, _ := m.UnknownRate()
	c, _ := m.MeanConfidence()
	if m.Time != t0.Unix() || m.Predictions != 1200 || m.Counts["fault"] != 200 || u != 0.05 || c < 0.8499 || c > 0.8501 || m.Drift != 0.02 || m.LatencyP50 != 40 {
		t.Errorf("first minute %+v", m)
	}
	if hr := h.Hours[0]; hr.Time != t0.Unix() || hr.Predictions != 1800 || hr.Windows != 1800 || hr.Unknown != 90 {
		t.Errorf("hour %+v", hr)
	}
}

// TestHealthPointsInRecord: the points of the latest report's minute and
// hour are in the device's record, and no health document is written
// while that minute lasts; a report in a later minute moves the finished
// minute to its hour's document, one in a later hour the finished hour to
// its day's. Every reader — the device's history, the group's recent
// health by minute and by hour, the confidence gate's hour points — sees
// the record's points beside the documents' (it fails if any leaves them
// out). A clock that goes back starts the earlier minute again, and moving
// it merges it into the document's point of that minute.
func TestHealthPointsInRecord(t *testing.T) {
	f := newFixture(t)
	history := func() *api.DeviceHealth {
		t.Helper()
		h, err := inventory.DeviceHealthHistory(f.db, "gw-1", f.clk.t)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	recent := func(byMinute bool) []api.HealthPoint {
		t.Helper()
		pts, err := inventory.RecentHealth(f.db, []string{"gw-1"}, f.clk.t, byMinute)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	hourPoints := func(h time.Time) []api.HealthPoint {
		t.Helper()
		var pts []api.HealthPoint
		if err := f.db.View(func(tx store.Tx) (err error) { pts, err = inventory.HourPoints(tx, "gw-1", h); return err }); err != nil {
			t.Fatal(err)
		}
		return pts
	}
	f.clk.t = t0.Add(5 * time.Second)
	f.telemetry(t, healthReport(1))
	f.clk.t = t0.Add(50 * time.Second)
	f.telemetry(t, healthReport(2))
	if keys, _ := healthKeys(t, f.db); len(keys) != 0 {
		t.Fatalf("documents written within the first minute: %v", keys)
	}
	if h := history(); len(h.Minutes) != 1 || h.Minutes[0].Predictions != 1200 || len(h.Hours) != 1 || h.Hours[0].Predictions != 1200 {
		t.Fatalf("history of the record's points: %+v", h)
	}
	if m, hr, pts := recent(true), recent(false), hourPoints(t0); len(m) != 1 || m[0].Predictions != 1200 || len(hr) != 1 || hr[0].Predictions != 1200 || len(pts) != 1 || pts[0].Windows != 1200 {
		t.Fatalf("recent by minute %+v, by hour %+v, the gate's hour points %+v", m, hr, pts)
	}

	// The next minute: the first moves to the hour's document.
	f.clk.t = t0.Add(70 * time.Second)
	f.telemetry(t, healthReport(3))
	keys, _ := healthKeys(t, f.db)
	if !slices.Equal(keys, []string{store.HealthHourKey("gw-1", "2026112112")}) {
		t.Fatalf("documents after the second minute: %v", keys)
	}
	if h := history(); len(h.Minutes) != 2 || h.Minutes[0].Predictions != 1200 || h.Minutes[1].Predictions != 600 || h.Hours[0].Predictions != 1800 {
		t.Fatalf("history after the second minute: %+v", h)
	}

	// The clock goes back to the first minute, then on again: one point
	// of that minute, in its document.
	f.clk.t = t0.Add(30 * time.Second)
	f.telemetry(t, healthReport(4))
	if h := history(); len(h.Minutes) != 2 || h.Minutes[0].Predictions != 1800 {
		t.Fatalf("history with the clock back: %+v", h.Minutes)
	}
	f.clk.t = t0.Add(2 * time.Minute)
	f.telemetry(t, healthReport(5))
	if pts := hourPoints(t0); len(pts) != 3 || pts[0].Predictions != 1800 || pts[1].Predictions != 600 || pts[2].Predictions != 600 {
		t.Fatalf("the hour's points: %+v", pts)
	}

	// The next hour: the first hour moves to the day's document.
	f.clk.t = t0.Add(time.Hour + time.Second)
	f.telemetry(t, healthReport(6))
	keys, _ = healthKeys(t, f.db)
	if !slices.Equal(keys, []string{store.HealthDayKey("gw-1", "20261121"), store.HealthHourKey("gw-1", "2026112112")}) {
		t.Fatalf("documents in the next hour: %v", keys)
	}
	if h := history(); len(h.Hours) != 2 || h.Hours[0].Predictions != 3000 || h.Hours[1].Predictions != 600 || len(h.Minutes) != 4 {
		t.Fatalf("history in the next hour: %d minutes, hours %+v", len(h.Minutes), h.Hours)
	}
	if hr := recent(false); len(hr) != 2 || hr[0].Predictions != 3000 || hr[1].Predictions != 600 {
		t.Fatalf("recent by hour in the next hour: %+v", hr)
	}
}

// TestHealthDocumentBeforeUpgrade: a document that already holds the
// current minute's point (written when every report went to the
// documents) and a record without points: the history counts both once,
// and moving the record's point adds it to the document's.
func TestHealthDocumentBeforeUpgrade(t *testing.T) {
	f := newFixture(t)
	f.clk.t = t0.Add(5 * time.Second)
	if err := f.db.Update(func(tx store.Tx) error {
		return tx.Put(store.FleetHealth, store.HealthHourKey("gw-1", "2026112112"), map[string]any{"points": []api.HealthPoint{{Time: t0.Unix(), Predictions: 7}}})
	}); err != nil {
		t.Fatal(err)
	}
	f.telemetry(t, healthReport(1))
	h, err := inventory.DeviceHealthHistory(f.db, "gw-1", f.clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Minutes) != 1 || h.Minutes[0].Predictions != 607 {
		t.Fatalf("minutes %+v, want one point of 607 predictions", h.Minutes)
	}
	f.clk.t = t0.Add(time.Minute)
	f.telemetry(t, healthReport(2))
	var pts []api.HealthPoint
	if err := f.db.View(func(tx store.Tx) (err error) { pts, err = inventory.HourPoints(tx, "gw-1", t0); return err }); err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].Predictions != 607 || pts[1].Predictions != 600 {
		t.Fatalf("the hour's points %+v", pts)
	}
}

// TestHealthHistoryBounds: a report every minute for 26 hours keeps the
// last 24 hours of minutes (older hour documents deleted as new ones are
// written), every hour, and at most 25 + 2 documents; 40 days later the
// old days are gone too, and forgetting the device deletes its history.
func TestHealthHistoryBounds(t *testing.T) {
	f := newFixture(t)
	start := t0
	for i := range 26 * 60 {
		f.clk.t = start.Add(time.Duration(i)*time.Minute + 5*time.Second)
		f.telemetry(t, healthReport(uint64(i+1)))
	}
	h, err := inventory.DeviceHealthHistory(f.db, "gw-1", f.clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Minutes) != 24*60 || len(h.Hours) != 26 {
		t.Fatalf("%d minute and %d hour points, want 1440 and 26", len(h.Minutes), len(h.Hours))
	}
	keys, bytes := healthKeys(t, f.db)
	if len(keys) > 25+2 {
		t.Errorf("%d documents, want at most 25 hour and 2 day documents: %v", len(keys), keys)
	}
	t.Logf("a device reporting every minute: %d documents, %d bytes of JSON for its last 24 hours by minute and %d hours", len(keys), bytes, len(h.Hours))
	// The hour points' JSON a month holds: 31 days of 24.
	one, _ := json.Marshal(h.Hours[0])
	t.Logf("an hour point: %d bytes of JSON; a minute point: %d", len(one), func() int { b, _ := json.Marshal(h.Minutes[0]); return len(b) }())

	f.clk.t = start.AddDate(0, 0, 40)
	f.telemetry(t, healthReport(9999))
	keys, _ = healthKeys(t, f.db)
	if len(keys) != 0 {
		t.Errorf("40 days later: %v, want none (the new minute and hour are in the record)", keys)
	}
	if h, _ := inventory.DeviceHealthHistory(f.db, "gw-1", f.clk.t); len(h.Minutes) != 1 || len(h.Hours) != 1 {
		t.Errorf("40 days later: %d minutes, %d hours, want 1 and 1", len(h.Minutes), len(h.Hours))
	}
	if err := inventory.ForgetDevice(f.db, "gw-1"); err != nil {
		t.Fatal(err)
	}
	if keys, _ := healthKeys(t, f.db); len(keys) != 0 {
		t.Errorf("forgotten device's history left: %v", keys)
	}
}

// TestGroupHealth: a selector's devices' points add up period by period,
// agreement is the mean over the devices with a shadow report; no
// selector is a bad request.
func TestGroupHealth(t *testing.T) {
	f := newFixture(t)
	for _, d := range []struct{ id, site string }{{"gw-1", "north"}, {"gw-2", "north"}, {"gw-3", "south"}} {
		f.state(t, &wire.State{Device: d.id, Session: 1, Online: true, Health: "ok", Labels: map[string]string{"site": d.site}})
	}
	f.clk.t = t0.Add(10 * time.Second)
	for i, id := range []string{"gw-1", "gw-2", "gw-3"} {
		tm := healthReport(uint64(i + 1))
		tm.Device = id
		if i != 1 { // gw-2 shadows nothing: the mean is gw-1's (0.9) alone
			tm.Shadow = &wire.ShadowReport{Rollout: "r1", Seq: 1, Bundle: strings.Repeat("a", 64), Windows: 100, Agree: uint64(90 - 80*i/2)}
		}
		f.telemetry(t, tm)
	}
	g, err := inventory.GroupHealthHistory(f.db, map[string]string{"site": "north"}, f.clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Devices) != 2 || len(g.Minutes) != 1 || len(g.Hours) != 1 {
		t.Fatalf("group %+v", g)
	}
	if m := g.Minutes[0]; m.Predictions != 1200 || m.Unknown != 60 || m.Windows != 1200 || m.Counts["fault"] != 200 || m.Drift != 0.02 {
		t.Errorf("summed minute %+v", m)
	}
	for _, p := range []api.HealthPoint{g.Minutes[0], g.Hours[0]} {
		if p.Agreement == nil || *p.Agreement != 0.9 {
			t.Errorf("group agreement %v, want gw-1's 0.9 (gw-2 has no shadow, gw-3 is not in the group)", p.Agreement)
		}
	}
	all, err := inventory.SumHealthHistory(f.db, []string{"gw-1", "gw-2", "gw-3"}, f.clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if m := all.Minutes[0]; m.Predictions != 1800 || m.Agreement == nil || *m.Agreement != 0.5 {
		t.Errorf("the three devices' minute %+v, want 1800 predictions, agreement (0.9+0.1)/2", m)
	}
	ids := []string{"gw-1", "gw-2", "gw-3"}
	if recent, err := inventory.RecentHealth(f.db, ids, f.clk.t, true); err != nil || !reflect.DeepEqual(recent, all.Minutes) {
		t.Errorf("the last 24 hours by minute %+v (%v), want %+v", recent, err, all.Minutes)
	}
	if recent, err := inventory.RecentHealth(f.db, ids, f.clk.t, false); err != nil || !reflect.DeepEqual(recent, all.Hours) {
		t.Errorf("the last 24 hours by hour %+v (%v), want %+v", recent, err, all.Hours)
	}
	// A day later the minute and the hour have left the last 24 hours.
	if recent, err := inventory.RecentHealth(f.db, ids, f.clk.t.Add(25*time.Hour), false); err != nil || len(recent) != 0 {
		t.Errorf("25 hours later, by hour: %+v (%v), want nothing", recent, err)
	}
	if _, err := inventory.RecentHealth(f.db, make([]string, api.MaxGroupHealthDevices+1), f.clk.t, false); !errors.Is(err, fault.ErrBadRequest) {
		t.Errorf("%d devices: %v, want a bad request", api.MaxGroupHealthDevices+1, err)
	}
	if _, err := inventory.GroupHealthHistory(f.db, nil, f.clk.t); err == nil {
		t.Error("no selector: accepted")
	}
}
