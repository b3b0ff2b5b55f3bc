package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

func TestServiceControl(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1"}}); !errors.Is(err, rollout.ErrInvalid) {
		t.Fatalf("duplicate rollout ID: %v", err)
	}
	if _, err := f.svc.Control("r", "pause", "maintenance"); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if c := f.commands(t); len(c) != 0 {
		t.Fatalf("paused rollout sent %d commands", len(c))
	}
	if _, err := f.svc.Control("r", "resume", ""); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	if c := f.commands(t); len(c) != 1 {
		t.Fatalf("resumed rollout sent %d commands", len(c))
	}
	if _, err := f.svc.Control("r", "explode", ""); !errors.Is(err, rollout.ErrInvalid) {
		t.Fatalf("unknown operation: %v", err)
	}
	if _, err := f.svc.Control("nope", "pause", ""); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("unknown rollout: %v", err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "x", Bundle: strings.Repeat("0", 64), Devices: []string{"gw-1"}}); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("unknown bundle: %v", err)
	}
}

// A rollback may only send a bundle its devices ran before; the flag with
// any other registered bundle is refused, naming the devices.
func TestRollbackOnlyToWhatDevicesRan(t *testing.T) {
	f := newFixture(t)
	v1, v2, v3 := f.addBundle(t, 1), f.addBundle(t, 2), f.addBundle(t, 3)
	// gw-1 ran v1 then v3 (it skipped v2); gw-2 runs v3 after v2.
	f.state(t, &wire.State{Device: "gw-1", Session: 1, Online: true,
		Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: v3}, Previous: &wire.ModelRef{ID: "vib", Release: 1, Bundle: v1}})
	f.state(t, &wire.State{Device: "gw-2", Session: 1, Online: true,
		Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: v3}, Previous: &wire.ModelRef{ID: "vib", Release: 2, Bundle: v2}})
	_, err := f.svc.CreateRollout(api.RolloutRequest{ID: "back", Bundle: v2, Devices: []string{"gw-1", "gw-2"}, Rollback: true})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "gw-1") || strings.Contains(err.Error(), "gw-2") {
		t.Fatalf("rollback to v2, which gw-1 never ran: %v", err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "back-1", Bundle: v1, Devices: []string{"gw-1"}, Rollback: true}); err != nil {
		t.Fatalf("rollback of gw-1 to v1, which it ran: %v", err)
	}
	// Not a rollback: a release below what a device installed is refused
	// up front (its agent would refuse it), naming the devices.
	_, err = f.svc.CreateRollout(api.RolloutRequest{ID: "fwd", Bundle: v2, Devices: []string{"gw-1", "gw-2"}})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "gw-1 (release 3), gw-2 (release 3)") || !strings.Contains(err.Error(), "publish release 4 or later") {
		t.Fatalf("release 2 to devices on release 3: %v", err)
	}
	// A bundle a device installed in an earlier rollout counts too: gw-3
	// has no model yet, so any release goes forward.
	f.state(t, &wire.State{Device: "gw-3", Session: 1, Online: true})
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "fwd", Bundle: v2, Devices: []string{"gw-3"}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	for _, c := range f.commands(t) {
		if c.Rollout == "fwd" && c.Device == "gw-3" {
			f.report(t, c, wire.JobSucceeded)
		}
	}
	f.svc.Tick()
	f.state(t, &wire.State{Device: "gw-3", Session: 1, Online: true, Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: v3}})
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "back-2", Bundle: v2, Devices: []string{"gw-3"}, Rollback: true}); err != nil {
		t.Fatalf("rollback to a bundle gw-3 installed in rollout fwd: %v", err)
	}
}

// Re-rolling the release a rollback went back from is refused: the
// device's agent refuses a release not above the highest it installed
// unless it runs that very bundle (it reported release 3 as its previous
// model, release 2 as its current). The bundle a device runs may be sent
// again (a no-op, or a repair of a damaged copy).
func TestRolloutOfOlderReleaseRefused(t *testing.T) {
	f := newFixture(t)
	v2, v3 := f.addBundle(t, 2), f.addBundle(t, 3)
	f.state(t, &wire.State{Device: "gw-1", Session: 1, Online: true,
		Model: &wire.ModelRef{ID: "vib", Release: 2, Bundle: v2}, Previous: &wire.ModelRef{ID: "vib", Release: 3, Bundle: v3}})
	f.state(t, &wire.State{Device: "gw-2", Session: 1, Online: true,
		Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: v3}, Previous: &wire.ModelRef{ID: "vib", Release: 2, Bundle: v2}})
	_, err := f.svc.CreateRollout(api.RolloutRequest{ID: "again", Bundle: v3, Devices: []string{"gw-1", "gw-2"}})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "1 device(s) already installed vib release 3 or later") ||
		!strings.Contains(err.Error(), "gw-1 (release 3)") || strings.Contains(err.Error(), "gw-2") {
		t.Fatalf("release 3 again to gw-1, rolled back from it: %v", err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "same", Bundle: v3, Devices: []string{"gw-2"}}); err != nil {
		t.Fatalf("the bundle gw-2 runs, sent again: %v", err)
	}
}

// TestRolloutToDeviceWithUnloadableModel: a device whose committed release
// 3 does not load (its stored copy is damaged) runs release 2 and says so.
// Release 3 may be sent to it again (its agent takes its active bundle
// again, and the new copy replaces the damaged one), release 2 may not
// (its agent installed release 3), and its state does not claim release 3
// runs.
func TestRolloutToDeviceWithUnloadableModel(t *testing.T) {
	f := newFixture(t)
	v2, v3 := f.addBundle(t, 2), f.addBundle(t, 3)
	f.state(t, &wire.State{Device: "gw-1", Session: 1, Online: true, Health: "degraded",
		Model:      &wire.ModelRef{ID: "vib", Release: 2, Bundle: v2, Install: "committed"},
		Unloadable: &wire.UnloadableModel{ModelRef: wire.ModelRef{ID: "vib", Release: 3, Bundle: v3, Install: "committed"}, Error: "content does not match its hash"}})
	ds, err := inventory.Devices(f.db)
	if err != nil || len(ds) != 1 || ds[0].Model.Bundle != v2 || ds[0].Unloadable == nil || ds[0].Unloadable.Bundle != v3 {
		t.Fatalf("inventory %+v, %v: want release 2 running, release 3 unloadable", ds, err)
	}
	_, err = f.svc.CreateRollout(api.RolloutRequest{ID: "older", Bundle: v2, Devices: []string{"gw-1"}})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "gw-1 (release 3)") {
		t.Fatalf("release 2 to a device that installed release 3: %v", err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "repair", Bundle: v3, Devices: []string{"gw-1"}}); err != nil {
		t.Fatalf("release 3 again, to repair it: %v", err)
	}
	f.svc.Tick()
	for _, c := range f.commands(t) {
		if c.Rollout != "repair" {
			continue
		}
		ev := &wire.Event{Device: c.Device, Rollout: c.Rollout, Seq: c.Seq, State: wire.JobSucceeded, Bundle: c.Bundle, Time: f.clk.t.UnixMilli(),
			Model: &wire.ModelRef{ID: "vib", Release: 3, Bundle: v3, Install: "committed"}}
		raw, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		f.svc.Deliver(f.svc.Topics().Events(c.Device), raw)
		f.svc.Drain()
	}
	if ds, _ := inventory.Devices(f.db); ds[0].Model.Bundle != v3 || ds[0].Unloadable != nil {
		t.Fatalf("after release 3 was installed again: model %+v, unloadable %+v", ds[0].Model, ds[0].Unloadable)
	}
}

// Devices not in the inventory are refused (a typo never reports), unless
// the request allows them.
func TestRolloutUnknownDevices(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	hash := f.addBundle(t, 1)
	_, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1", "gw-l"}})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "gw-l") || !strings.Contains(err.Error(), "allow") {
		t.Fatalf("unknown device: %v", err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1", "gw-new"}, AllowUnknown: true}); err != nil {
		t.Fatalf("allow_unknown: %v", err)
	}
	// allow_unknown is bounded: each unknown device gets a record when it
	// is notified (40,000 made-up IDs made 40,000 such records).
	many := []string{"gw-1"}
	for i := range MaxUnknownDevices + 1 {
		many = append(many, fmt.Sprintf("new-%05d", i))
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "many", Bundle: hash, Devices: many, AllowUnknown: true}); !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "at most 1000") {
		t.Fatalf("allow_unknown with %d unknown devices: %v", MaxUnknownDevices+1, err)
	}
	if ds, _ := inventory.Devices(f.db); len(ds) != 1 {
		t.Fatalf("%d inventory records after a refused rollout, want 1", len(ds))
	}
	for _, bad := range []string{"", "abc", strings.Repeat("A", 64)} {
		if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "x", Bundle: bad, Devices: []string{"gw-1"}}); !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "SHA-256") {
			t.Errorf("bundle %q: %v", bad, err)
		}
	}
}

// TestRolloutBundlePrefix: a rollout names its bundle by a unique prefix of
// its hash, such as the 12 digits tritctl rollout status prints; it used to
// be "not found". A prefix of several bundles is an error naming them.
func TestRolloutBundlePrefix(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	h1 := f.addBundle(t, 1)
	r, err := f.svc.CreateRollout(api.RolloutRequest{ID: "short", Bundle: h1[:12], Devices: []string{"gw-1"}})
	if err != nil {
		t.Fatalf("12-digit prefix: %v", err)
	}
	if r.Bundle != h1 {
		t.Fatalf("rollout bundle %s, want the full hash %s", r.Bundle, h1)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "none", Bundle: "0000" + h1[:8], Devices: []string{"gw-1"}}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("prefix of no bundle: %v, want ErrNotFound", err)
	}
	// Two records whose hashes share their first 6 digits: that prefix
	// is ambiguous, one more digit is not.
	a, b := "abcdef1"+strings.Repeat("0", 57), "abcdef2"+strings.Repeat("0", 57)
	for _, h := range []string{a, b} {
		if err := f.db.Put(store.FleetBundles, h, &api.BundleInfo{Hash: h}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = f.svc.reg.Resolve("abcdef")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if got, err := f.svc.reg.Resolve("abcdef2"); err != nil || got != b {
		t.Errorf("unique prefix: %s %v, want %s", got, err, b)
	}
}

// A rollout is refused, naming the devices, when their last report says
// they cannot run the bundle: an agent older than its minimum agent version
// (a tree model needs 0.3.0) or another hardware label. Devices that have
// not said pass (their agents check on install).
func TestRolloutRefusesIncompatibleDevices(t *testing.T) {
	f := newFixture(t)
	for id, v := range map[string]string{"gw-old": "0.2.5", "gw-new": "0.3.0", "gw-next": "1.0.0"} {
		f.state(t, &wire.State{Device: id, Session: 1, Online: true, Health: "ok", AgentVersion: v, Hardware: "pi4"})
	}
	f.state(t, &wire.State{Device: "gw-quiet", Session: 1, Online: true, Health: "ok"})
	f.state(t, &wire.State{Device: "gw-zero", Session: 1, Online: true, Health: "ok", AgentVersion: "0.3.0", Hardware: "pi-zero"})
	add := func(compat bundle.Compat, release uint64) string {
		t.Helper()
		info, err := f.svc.Registry().Add(fleettest.SignedBundleFor(t, "vib", release, f.release, compat))
		if err != nil {
			t.Fatal(err)
		}
		return info.Hash
	}
	trees := add(bundle.Compat{MinAgentVersion: "0.3.0"}, 1)
	_, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r1", Bundle: trees, Devices: []string{"gw-old", "gw-new", "gw-next", "gw-quiet"}})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), "gw-old (agent 0.2.5)") || !strings.Contains(err.Error(), "0.3.0") ||
		strings.Contains(err.Error(), "gw-new") || strings.Contains(err.Error(), "gw-next") || strings.Contains(err.Error(), "gw-quiet") {
		t.Fatalf("agent 0.2.5 and a bundle needing 0.3.0: %v", err)
	}
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r2", Bundle: trees, Devices: []string{"gw-new", "gw-next", "gw-quiet", "gw-zero"}}); err != nil {
		t.Fatalf("agents that can run it: %v", err)
	}
	pi4 := add(bundle.Compat{MinAgentVersion: "0.1.0", Hardware: "pi4"}, 2)
	_, err = f.svc.CreateRollout(api.RolloutRequest{ID: "r3", Bundle: pi4, Devices: []string{"gw-new", "gw-zero", "gw-quiet"}})
	if !errors.Is(err, rollout.ErrInvalid) || !strings.Contains(err.Error(), `gw-zero (pi-zero)`) || !strings.Contains(err.Error(), `"pi4"`) ||
		strings.Contains(err.Error(), "gw-new") || strings.Contains(err.Error(), "gw-quiet") {
		t.Fatalf("a pi4 bundle to a pi-zero: %v", err)
	}
	// Left out, the rest of the rollout starts.
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r4", Bundle: pi4, Devices: []string{"gw-new", "gw-quiet"}}); err != nil {
		t.Fatal(err)
	}
}
