package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// damagedFixture is a fixture whose database has had one byte of gw-2's
// record changed on disk (its label value "damage-me" loses its closing
// quote), as a flipped bit would: gw-1 and gw-3 are intact, all three
// labelled site=lab, and a bundle is registered.
func damagedFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	var hash string
	db := fleettest.DamagedStore(t, func(db *store.DB) {
		f := newFixtureOn(t, db)
		f.online(t, "gw-1", map[string]string{"site": "lab"})
		f.online(t, "gw-2", map[string]string{"site": "lab", "tag": "damage-me"})
		f.online(t, "gw-3", map[string]string{"site": "lab"})
		hash = f.addBundle(t, 1)
	}, `"damage-me"`)
	return newFixtureOn(t, db), hash
}

// TestDamagedDeviceRecordBreaksNothingElse: one changed byte in one
// device record made every list that reads the inventory fail (the API
// answered 500 for the devices and bundles lists, the console and selector
// rollouts), and devices forget could not delete it. Now the record is
// listed as damaged with its key, everything else works around it, the
// messages of the other devices in the same batch are stored, and forget
// deletes it.
func TestDamagedDeviceRecordBreaksNothingElse(t *testing.T) {
	f, hash := damagedFixture(t)

	ds, bad, err := inventory.All(f.db)
	if err != nil {
		t.Fatalf("Inventory: %v", err)
	}
	if len(ds) != 2 || len(bad) != 1 || bad[0].Key != "gw-2" || bad[0].Collection != store.FleetDevices.String() || bad[0].Error == "" {
		t.Fatalf("inventory %d devices, damaged %+v; want gw-1, gw-3 and gw-2 damaged", len(ds), bad)
	}
	list, err := inventory.DeviceList(f.db)
	if err != nil || len(list) != 3 || list[2].ID != "gw-2" || list[2].Damaged == "" {
		t.Fatalf("device list %+v, %v; want gw-2 listed as damaged", list, err)
	}
	if _, err := inventory.DeviceByID(f.db, "gw-2"); !errors.Is(err, fault.ErrDamaged) || !strings.Contains(err.Error(), "tritctl devices forget gw-2") {
		t.Errorf("DeviceByID(gw-2): %v; want ErrDamaged saying how to delete it", err)
	}
	if _, err := inventory.ResetDevice(f.db, "gw-2"); !errors.Is(err, fault.ErrDamaged) {
		t.Errorf("inventory.ResetDevice(gw-2): %v; want ErrDamaged", err)
	}

	r, err := f.svc.CreateRollout(api.RolloutRequest{ID: "lab", Bundle: hash, Selector: map[string]string{"site": "lab"}})
	if err != nil {
		t.Fatalf("selector rollout: %v", err)
	}
	if !slices.Equal(r.Order, []string{"gw-1", "gw-3"}) {
		t.Errorf("selector rollout picked %v, want gw-1 and gw-3", r.Order)
	}

	// One batch with gw-2's state between the others': theirs are stored.
	for _, id := range []string{"gw-1", "gw-2", "gw-3"} {
		raw, _ := (&wire.State{Device: id, Session: 2, Online: true, Health: "degraded", Labels: map[string]string{"site": "lab"}}).Marshal()
		f.svc.Deliver(f.svc.Topics().State(id), raw)
	}
	f.svc.Drain()
	for _, id := range []string{"gw-1", "gw-3"} {
		if d, err := inventory.DeviceByID(f.db, id); err != nil || d.Session != 2 || d.Health != "degraded" {
			t.Errorf("%s after the batch: %+v, %v; want its new state stored", id, d, err)
		}
	}

	if err := inventory.ForgetDevice(f.db, "gw-2"); err != nil {
		t.Fatalf("forget gw-2: %v", err)
	}
	if _, bad, _ := inventory.All(f.db); len(bad) != 0 {
		t.Fatalf("damaged after forget: %+v", bad)
	}
	f.state(t, &wire.State{Device: "gw-2", Session: 3, Online: true, Health: "ok"})
	if d, err := inventory.DeviceByID(f.db, "gw-2"); err != nil || !d.Online {
		t.Fatalf("gw-2 after it was forgotten and reported: %+v, %v; want a new record", d, err)
	}
}

// TestDamagedRolloutAndBundleRecords: a rollout or bundle record that does
// not decode is skipped by the lists (the tick too) and named.
func TestDamagedRolloutAndBundleRecords(t *testing.T) {
	var hash string
	f := newFixtureOn(t, fleettest.DamagedStore(t, func(db *store.DB) {
		f := newFixtureOn(t, db)
		f.online(t, "gw-1", nil)
		hash = f.addBundle(t, 1)
		for _, id := range []string{"ok-1", "damage-me"} {
			if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: id, Bundle: hash, Devices: []string{"gw-1"}}); err != nil {
				t.Fatal(err)
			}
		}
	}, `"id":"damage-me"`, `"published":true`))

	rs, bad, err := f.svc.RolloutsAndDamaged()
	if err != nil || len(rs) != 1 || rs[0].ID != "ok-1" || len(bad) != 1 || bad[0].Key != "damage-me" {
		t.Fatalf("rollouts %d, damaged %+v, %v; want ok-1 and damage-me damaged", len(rs), bad, err)
	}
	if _, err := f.svc.GetRollout("damage-me"); !errors.Is(err, fault.ErrDamaged) {
		t.Errorf("GetRollout(damage-me): %v, want ErrDamaged", err)
	}
	ids, err := f.svc.runningIDs()
	if err != nil || !slices.Equal(ids, []string{"ok-1"}) {
		t.Errorf("running rollouts %v, %v; want ok-1 (the damaged one skipped)", ids, err)
	}
	bs, badBundles, err := f.svc.Registry().BundlesAndDamaged()
	if err != nil || len(bs) != 0 || len(badBundles) != 1 || badBundles[0].Key != hash {
		t.Errorf("bundles %d, damaged %+v, %v; want the bundle's record damaged", len(bs), badBundles, err)
	}
	all := append(append([]api.Damaged(nil), bad...), badBundles...)
	if text := DamagedAlert(all, 0); !strings.Contains(text, "2 stored records do not decode") || !strings.Contains(text, "fleet_rollouts damage-me") {
		t.Errorf("console alert %q", text)
	}
}

// breakTime stores coll's document key again with its time field (at the
// top level) unreadable: a changed byte inside the time's text, or a
// number where its string belongs.
func breakTime(t *testing.T, db store.Database, coll store.Collection, key, field string, number bool) {
	t.Helper()
	var doc map[string]json.RawMessage
	if ok, err := db.Get(coll, key, &doc); !ok || err != nil {
		t.Fatalf("%s %s: %v, %v", coll, key, ok, err)
	}
	var at string
	if err := json.Unmarshal(doc[field], &at); err != nil || len(at) < 20 {
		t.Fatalf("%s %s: %s is %s, not a time", coll, key, field, doc[field])
	}
	if number {
		doc[field] = json.RawMessage("1763726400")
	} else {
		doc[field] = json.RawMessage(`"` + at[:15] + "$" + at[16:] + `"`) // 12:00 → 12:0$
	}
	if err := db.Put(coll, key, doc); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedTimeInRecords: a record whose stored time does not read (a
// changed byte in its text, or a number in its place) is damaged like a
// record that is not JSON. It was not: the device's own record answered
// a plain error (500) instead of 409 naming it, and a batch holding a
// message from that device stored none of the others'.
func TestDamagedTimeInRecords(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"gw-1", "gw-2", "gw-3", "gw-4"} {
		f.online(t, id, map[string]string{"site": "lab"})
	}
	hash := f.addBundle(t, 1)
	for _, id := range []string{"ok-1", "byte", "number"} {
		if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: id, Bundle: hash, Devices: []string{"gw-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	breakTime(t, f.db, store.FleetDevices, "gw-2", "last_seen", false)
	breakTime(t, f.db, store.FleetDevices, "gw-3", "last_seen", true)
	breakTime(t, f.db, store.FleetRollouts, "byte", "started", false)
	breakTime(t, f.db, store.FleetRollouts, "number", "started", true)

	for _, id := range []string{"gw-2", "gw-3"} {
		if _, err := inventory.DeviceByID(f.db, id); !errors.Is(err, fault.ErrDamaged) || !strings.Contains(err.Error(), "tritctl devices forget "+id) {
			t.Errorf("DeviceByID(%s): %v; want ErrDamaged saying how to delete it", id, err)
		}
	}
	for _, id := range []string{"byte", "number"} {
		if _, err := f.svc.GetRollout(id); !errors.Is(err, fault.ErrDamaged) {
			t.Errorf("GetRollout(%s): %v; want ErrDamaged", id, err)
		}
	}
	// One batch with both damaged devices' states between the others'.
	for _, id := range []string{"gw-1", "gw-2", "gw-3", "gw-4"} {
		raw, _ := (&wire.State{Device: id, Session: 2, Online: true, Health: "degraded", Labels: map[string]string{"site": "lab"}}).Marshal()
		f.svc.Deliver(f.svc.Topics().State(id), raw)
	}
	f.svc.Drain()
	for _, id := range []string{"gw-1", "gw-4"} {
		if d, err := inventory.DeviceByID(f.db, id); err != nil || d.Session != 2 || d.Health != "degraded" {
			t.Errorf("%s after the batch: %+v, %v; want its new state stored", id, d, err)
		}
	}
	if ds, bad, err := inventory.All(f.db); err != nil || len(ds) != 2 || len(bad) != 2 {
		t.Errorf("inventory: %d devices, damaged %+v, %v; want gw-2 and gw-3 damaged", len(ds), bad, err)
	}
	if err := inventory.ForgetDevice(f.db, "gw-3"); err != nil {
		t.Errorf("forget gw-3: %v", err)
	}
}

// TestDamagedWindowAndTrainJobRecords: one stored window or training job
// whose time does not read is skipped and named, never the end of a
// list. Before, GET /v1/windows, the console's Labels page, retraining
// and the retraining policies failed on it; storing past the window bound
// failed (the oldest unlabelled could not be chosen); and the training
// jobs were listed as none, while no job could be queued or taken.
func TestDamagedWindowAndTrainJobRecords(t *testing.T) {
	defer func(b int) { windowBound = b }(windowBound)
	windowBound = 6
	dir := t.TempDir()
	fleettest.WriteRings(t, dir, "small.csv", 200)
	f := newFixture(t, func(o *Options) { o.TrainingDir = dir })
	hash := f.addBundle(t, 1)
	s := f.svc
	if _, _, err := s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_000_000, 5)); err != nil {
		t.Fatal(err)
	}
	id := func(i int) string { return api.WindowID("gw-1", 1_700_000_000_000+int64(i)*1000) }
	if _, err := s.Label(api.LabelRequest{Labels: []api.Label{lbl(id(4), "fault")}}, "alice"); err != nil {
		t.Fatal(err)
	}
	breakTime(t, f.db, store.FleetWindows, windowKey(id(0)), "time", false)
	breakTime(t, f.db, store.FleetWindows, windowKey(id(1)), "time", true)
	var before [2]json.RawMessage
	for i := range before {
		f.db.Get(store.FleetWindows, windowKey(id(i)), &before[i])
	}

	l, err := s.Windows(api.WindowQuery{})
	if err != nil || l.Total != 3 || len(l.Damaged) != 2 || l.Damaged[0].Key != windowKey(id(0)) || l.Damaged[1].Key != windowKey(id(1)) ||
		l.Damaged[0].Collection != "fleet_windows" || l.Damaged[1].Error == "" {
		t.Fatalf("windows: %+v, %v; want 3 and windows 0 and 1 damaged", l, err)
	}
	yes := true
	if l, err := s.Windows(api.WindowQuery{Model: "vib", Labelled: &yes}); err != nil || l.Total != 1 || l.Windows[0].ID != id(4) {
		t.Fatalf("labelled windows: %+v, %v", l, err)
	}
	_, err = s.Label(api.LabelRequest{Labels: []api.Label{lbl(id(2), "fault"), lbl(id(0), "normal")}}, "alice")
	if !errors.Is(err, fault.ErrDamaged) || !strings.Contains(err.Error(), "window "+id(0)+" (label 2)") {
		t.Errorf("labelling a damaged window: %v; want ErrDamaged naming it", err)
	}
	// The ring again (its windows stored, two damaged), then 3 more past
	// the bound of 6: the two good unlabelled ones go, oldest first; the
	// damaged ones stay as they were (they may hold a label).
	if added, _, err := s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_000_000, 5)); err != nil || added != 0 {
		t.Fatalf("the ring again: %d added, %v; want 0", added, err)
	}
	added, skipped, err := s.StoreWindows("gw-2", sampleSet(hash, 1_800_000_000_000, 3))
	if err != nil || added != 3 || skipped != 0 {
		t.Fatalf("past the bound: %d added, %d skipped, %v; want 3, 0", added, skipped, err)
	}
	if l, err := s.Windows(api.WindowQuery{}); err != nil || l.Total != 4 || l.Windows[0].ID != id(4) || len(l.Damaged) != 2 {
		t.Fatalf("after the bound: %+v, %v; want window 4 and gw-2's 3, two damaged", l, err)
	}
	for i := range before {
		var after json.RawMessage
		if ok, _ := f.db.Get(store.FleetWindows, windowKey(id(i)), &after); !ok || string(after) != string(before[i]) {
			t.Errorf("damaged window %d: %s, want kept as %s", i, after, before[i])
		}
	}

	// Training jobs: train-1 done, train-2 and train-3 with a broken time.
	at := t0.Format(time.RFC3339)
	for seq := 1; seq <= 3; seq++ {
		job := fmt.Sprintf(`{"seq":%d,"job":{"id":"train-%d","request":{"dataset":"small.csv"},"state":"failed","started":%q,"finished":%q},"beat":%q}`, seq, seq, at, at, at)
		if err := f.db.Put(store.FleetTrainJobs, trainKey(uint64(seq)), json.RawMessage(job)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.db.Put(store.FleetTrainJobs, trainNextKey, 3); err != nil {
		t.Fatal(err)
	}
	breakTime(t, f.db, store.FleetTrainJobs, trainKey(2), "beat", false)
	breakTime(t, f.db, store.FleetTrainJobs, trainKey(3), "beat", true)
	jobs := s.TrainingJobs()
	if len(jobs) != 3 || jobs[0].ID != "train-1" || jobs[0].Damaged != "" || jobs[1].ID != "train-2" || jobs[1].Damaged == "" || jobs[2].ID != "train-3" || jobs[2].Damaged == "" {
		t.Fatalf("training jobs %+v; want train-1, then train-2 and train-3 damaged", jobs)
	}
	if _, err := s.TrainingJob("train-3"); !errors.Is(err, fault.ErrDamaged) || !strings.Contains(err.Error(), "fleet_train_jobs record job/00000000000000000003") {
		t.Errorf("TrainingJob(train-3): %v; want ErrDamaged naming it", err)
	}
	j, err := s.StartTraining(api.TrainRequest{Dataset: "small.csv", Format: "dense", LabelColumn: -1, Sigma: 0.5, C: 10, P: 64, ModelID: "rings", Release: 1})
	if err != nil || j.ID != "train-4" {
		t.Fatalf("StartTraining: %+v, %v; want train-4", j, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if j, err = s.TrainingJob("train-4"); err != nil || j.State.Done() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("train-4 still %s after a minute", j.State)
		}
	}
	if err != nil || j.State != api.TrainSucceeded {
		t.Fatalf("train-4: %+v, %v; want it run to success beside the damaged jobs", j, err)
	}
	// A damaged counter: no sequence is guessed at.
	if err := f.db.Put(store.FleetTrainJobs, trainNextKey, "4"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTraining(api.TrainRequest{Dataset: "small.csv", Format: "dense", LabelColumn: -1, ModelID: "rings", Release: 2}); !errors.Is(err, fault.ErrDamaged) || !strings.Contains(err.Error(), "fleet_train_jobs record next") {
		t.Errorf("StartTraining with a damaged counter: %v; want ErrDamaged naming it", err)
	}
}

// TestDamagedWindowsAndJobsCounted: trit_fleet_damaged_records counted
// damaged devices, rollouts and bundles only; a damaged field window or
// training job, skipped and named in its list, was in no metric. Now
// fleet_windows and fleet_train_jobs are counted as GET /v1/windows and
// GET /v1/train name them: jobs at every scrape, windows (up to
// MaxWindows documents) at most every damagedWindowsEvery or when a
// listing read them all.
func TestDamagedWindowsAndJobsCounted(t *testing.T) {
	f := newFixture(t)
	hash := f.addBundle(t, 1)
	s := f.svc
	if _, _, err := s.StoreWindows("gw-1", sampleSet(hash, 1_700_000_000_000, 4)); err != nil {
		t.Fatal(err)
	}
	id := func(i int) string { return api.WindowID("gw-1", 1_700_000_000_000+int64(i)*1000) }
	at := t0.Format(time.RFC3339)
	for seq := 1; seq <= 2; seq++ {
		job := fmt.Sprintf(`{"seq":%d,"job":{"id":"train-%d","request":{"dataset":"small.csv"},"state":"failed","started":%q,"finished":%q},"beat":%q}`, seq, seq, at, at, at)
		if err := f.db.Put(store.FleetTrainJobs, trainKey(uint64(seq)), json.RawMessage(job)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(coll string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		prefix := `trit_fleet_damaged_records{collection="` + coll + `"} `
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if n, ok := strings.CutPrefix(line, prefix); ok {
				return n
			}
		}
		return "absent"
	}
	for _, coll := range []string{"fleet_windows", "fleet_train_jobs", "fleet_devices", "fleet_rollouts", "fleet_bundles"} {
		if n := count(coll); n != "0" {
			t.Errorf("%s intact: %s damaged, want 0", coll, n)
		}
	}
	breakTime(t, f.db, store.FleetWindows, windowKey(id(0)), "time", false)
	breakTime(t, f.db, store.FleetWindows, windowKey(id(1)), "time", true)
	breakTime(t, f.db, store.FleetTrainJobs, trainKey(2), "beat", false)
	if n := count("fleet_train_jobs"); n != "1" {
		t.Errorf("fleet_train_jobs: %s damaged, want 1 (train-2)", n)
	}
	if n := count("fleet_windows"); n != "0" {
		t.Errorf("fleet_windows within a minute of the last count: %s, want the count kept (0)", n)
	}
	f.clk.t = f.clk.t.Add(damagedWindowsEvery)
	if n := count("fleet_windows"); n != "2" {
		t.Errorf("fleet_windows a minute later: %s damaged, want 2", n)
	}
	breakTime(t, f.db, store.FleetWindows, windowKey(id(2)), "time", false)
	l, err := s.Windows(api.WindowQuery{Device: "gw-9"}) // any query reads every window
	if err != nil || len(l.Damaged) != 3 {
		t.Fatalf("windows: %+v, %v; want 3 damaged", l, err)
	}
	if n := count("fleet_windows"); n != "3" {
		t.Errorf("fleet_windows after a listing: %s damaged, want the listing's 3", n)
	}
	// The console's overview raises them with the others.
	jobs, windows, err := s.DamagedJobsAndWindows()
	if err != nil || len(jobs) != 1 || jobs[0].Key != trainKey(2) || windows != 3 {
		t.Fatalf("DamagedJobsAndWindows: %+v, %d, %v; want train-2's record and 3 windows", jobs, windows, err)
	}
	if text := DamagedAlert(jobs, windows); !strings.Contains(text, "4 stored records do not decode") ||
		!strings.Contains(text, "fleet_train_jobs "+trainKey(2)) || !strings.Contains(text, "3 field windows") {
		t.Errorf("console alert %q", text)
	}
}
