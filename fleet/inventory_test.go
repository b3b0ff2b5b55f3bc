package fleet

import (
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/wire"
)

// rolloutOne creates rollout id of a new release to device, sends its
// command and returns it.
func (f *fixture) rolloutOne(t *testing.T, id, device string, release uint64) *wire.Command {
	t.Helper()
	hash := f.addBundle(t, release)
	if _, err := f.svc.CreateRollout(api.RolloutRequest{ID: id, Bundle: hash, Devices: []string{device}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	cs := f.commands(t)
	if len(cs) != 1 {
		t.Fatalf("rollout %s sent %d commands, want 1", id, len(cs))
	}
	return cs[0]
}

// deliverEvent hands a device's job event to the service.
func (f *fixture) deliverEvent(t *testing.T, ev *wire.Event) {
	t.Helper()
	if ev.Time == 0 {
		ev.Time = f.clk.t.UnixMilli()
	}
	raw, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Deliver(f.svc.Topics().Events(ev.Device), raw)
	f.svc.Drain()
}

// A command altered after signing (its sequence 17 → 1017) is refused by
// the device, whose REJECTED event echoes the altered rollout and
// sequence. The fleet never sent that job: the event must not become the
// device's last job, whatever sequence it names, and every later real job
// must. (Before the fleet checked events against its own record, the
// highest echoed sequence won, and `devices show` reported the forgery
// after any number of later rollouts.)
func TestForgedCommandCannotPinLastJob(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	c := f.rolloutOne(t, "r1", "gw-1", 1)
	f.report(t, c, wire.JobSucceeded)

	for _, forged := range []struct {
		rollout string
		seq     uint64
	}{
		{"att-tamper", c.Seq + 1000}, // a rollout the fleet never had
		{"r1", c.Seq + 1000},         // a real rollout, a sequence never sent
	} {
		f.deliverEvent(t, &wire.Event{Device: "gw-1", Rollout: forged.rollout, Seq: forged.seq, State: wire.JobRejected,
			Code: wire.CodeCommandSignature, Reason: "signature does not verify", Bundle: c.Bundle})
		f.pub.take("/acks") // acknowledged like any event, so the device stops re-sending it
		d, err := inventory.DeviceByID(f.db, "gw-1")
		if err != nil {
			t.Fatal(err)
		}
		if j := d.LastJob; j == nil || j.Rollout != "r1" || j.Seq != c.Seq || j.State != wire.JobSucceeded {
			t.Fatalf("after an event about %s/%d the fleet never sent: last job %+v, want r1/%d SUCCEEDED", forged.rollout, forged.seq, j, c.Seq)
		}
	}
	if d, _ := inventory.DeviceByID(f.db, "gw-1"); d.ForeignJobs != 2 || d.LastForeignJob == nil || d.LastForeignJob.Rollout != "r1" || d.LastForeignJob.Seq != c.Seq+1000 {
		t.Fatalf("foreign job events %d, last %+v; want 2, the latest r1/%d", d.ForeignJobs, d.LastForeignJob, c.Seq+1000)
	}
	for i, id := range []string{"r2", "r3", "r4"} {
		f.clk.t = f.clk.t.Add(time.Minute)
		c := f.rolloutOne(t, id, "gw-1", uint64(i+2))
		f.report(t, c, wire.JobSucceeded)
		d, err := inventory.DeviceByID(f.db, "gw-1")
		if err != nil {
			t.Fatal(err)
		}
		if j := d.LastJob; j == nil || j.Rollout != id || j.Seq != c.Seq || j.State != wire.JobSucceeded {
			t.Fatalf("after rollout %s: last job %+v, want %s/%d SUCCEEDED", id, j, id, c.Seq)
		}
	}
}

// A job event about a command the fleet never sent changes nothing but
// its count, the device's command counter included: a forged highest_seq
// of 4 + 2^32 moved the counter (within raiseSeq's jump bound) before the
// event was checked, reconciliation then took the device's unfinished
// command for superseded and never re-sent it, and the rollout timed out.
func TestForeignEventMovesNoCounter(t *testing.T) {
	f := newFixture(t)
	f.online(t, "gw-1", nil)
	c := f.rolloutOne(t, "r1", "gw-1", 1) // notified, unfinished
	before, err := inventory.DeviceByID(f.db, "gw-1")
	if err != nil {
		t.Fatal(err)
	}
	f.deliverEvent(t, &wire.Event{Device: "gw-1", Rollout: "att", Seq: c.Seq + 1, State: wire.JobRejected,
		Code: wire.CodeCommandSignature, Reason: "signature does not verify", HighestSeq: c.Seq + 1<<32})
	f.pub.take("/acks")
	d, err := inventory.DeviceByID(f.db, "gw-1")
	if err != nil {
		t.Fatal(err)
	}
	if d.LastSeq != before.LastSeq || d.ForeignJobs != 1 {
		t.Fatalf("after a foreign event: command counter %d (was %d), foreign jobs %d; want the counter unchanged, 1 counted", d.LastSeq, before.LastSeq, d.ForeignJobs)
	}
	r, err := f.svc.GetRollout("r1")
	if err != nil || r.Devices["gw-1"].State != api.DeviceNotified {
		t.Fatalf("rollout r1: %+v, %v; want gw-1 still notified", r.Devices["gw-1"], err)
	}
	f.clk.t = f.clk.t.Add(time.Minute)
	f.svc.Resync() // a full reconciliation pass at the next tick
	f.svc.Tick()
	if cs := f.commands(t); len(cs) != 1 || cs[0].Seq != c.Seq || cs[0].Rollout != "r1" {
		t.Fatalf("reconciliation re-sent %+v, want r1's command (seq %d) again", cs, c.Seq)
	}
}
