package fleet

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Resync republishes the bundles of rollouts that are not done, and only
// those: a broker that lost its retained messages gets them back.
func TestServiceResync(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	v1, v2 := f.addBundle(t, 1), f.addBundle(t, 2)
	for id, h := range map[string]string{"old": v1, "new": v2} {
		if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: id, Bundle: h, Devices: []string{"gw-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Control("old", "abort", "superseded"); err != nil {
		t.Fatal(err)
	}
	f.pub.take("/bundles/")
	f.svc.Resync()
	got := f.pub.take("/bundles/")
	if len(got) != 1 || !strings.HasSuffix(got[0].topic, v2) || !got[0].retained {
		t.Fatalf("resync published %v, want only %s retained", got, v2[:12])
	}
}

// Every rollout publishes its bundle again, even one published for an
// earlier rollout: the broker may have lost it since (a restarted embedded
// broker keeps nothing; Mosquitto loses what it had not saved). Before,
// the registry's Published flag stopped it, and a second rollout of the
// same bundle after a restart waited for a download that never came
// (issue 42).
func TestEveryRolloutPublishesItsBundle(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	f.online(t, "gw-2", nil)
	hash := f.addBundle(t, 1)
	for _, id := range []string{"gw-1", "gw-2"} {
		if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "to-" + id, Bundle: hash, Devices: []string{id}}); err != nil {
			t.Fatal(err)
		}
		if got := f.pub.take("/bundles/"); len(got) != 1 || !strings.HasSuffix(got[0].topic, hash) || !got[0].retained {
			t.Fatalf("rollout to %s published %v, want its bundle retained", id, got)
		}
	}
}

// A tick reads only rollouts that are not done and writes one back only
// when its step changed something: a paused rollout, or a finished one,
// costs no write (the database file is not touched).
func TestTickWritesOnlyChanges(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	hash := f.addBundle(t, 1)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: "r", Bundle: hash, Devices: []string{"gw-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Control("r", "pause", "wait"); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	before, err := os.Stat(f.db.(*store.DB).Path())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.clk.t = f.clk.t.Add(time.Second)
		f.svc.Tick()
	}
	after, _ := os.Stat(f.db.(*store.DB).Path())
	if !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("ticks over a paused rollout wrote to the database")
	}
	if _, err := f.svc.Control("r", "resume", ""); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	f.report(t, f.commands(t)[0], wire.JobSucceeded)
	f.svc.Tick()
	if r, _ := f.svc.GetRollout("r"); r.State != api.RolloutCompleted {
		t.Fatalf("rollout %s", r.State)
	}
	if ids, _ := f.svc.runningIDs(); len(ids) != 0 {
		t.Fatalf("done rollouts still indexed as running: %v", ids)
	}
}
