package fleet

import (
	"sync/atomic"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
)

// Reconciliation. A device's latest deployment command is desired state
// that the fleet keeps asserting, not a message fired once: a retained
// command is lost when the broker loses its retained messages (Mosquitto
// killed between autosaves; the embedded broker, which keeps nothing on
// disk, at any restart of trit-fleet), and a publish can fail (the broker
// down at the tick that notified the device, a crash between the commit
// and the publish). So the fleet publishes again:
//
//   - after every (re)connection of its own (Resync), once: the command of
//     every device whose job is unfinished, online or not, so the broker
//     holds it again before the device returns;
//   - every Options.Reconcile: the command of every online device whose
//     job is unfinished and was sent at least one period before, so a
//     device that returns to find no command has it within one period of
//     its online state reaching the fleet. Offline devices get nothing
//     periodically: each copy would wait in their broker session.
//
// A device's job is unfinished when, in a rollout that is not done
// (running or paused), it is notified, queued, downloading or installing
// (not shadowing: its shadow command has ended on the device), it is not
// about to be sent a new sequence (Resend), and its sequence is still the
// device's latest (Device.LastSeq: no later command was sent, and the
// device has seen none). The command re-sent is the one sent — same
// rollout, sequence, bundle, mode and times, so the same bytes — and the
// agent handles it by (rollout, seq): it ignores a command whose job
// ended, resumes one it had begun, runs one it never saw.
//
// Cost is bounded: a pass handles at most reconcileBudget candidates per
// tick and goes on at the next, so a fleet of 10,000 devices with
// unfinished jobs is re-asserted over a few ticks instead of stalling one
// (docs/PROTOCOL.md, "Reconciliation", has the figures).
//
// Invariants:
//   - Only Tick (the service loop) runs a pass; Resync, from the
//     connection's goroutine, only asks for one (reconciler.full), so a
//     re-sent command never races the step that sends a newer one.
//   - A pass sends only a command that, when its tick read the store, was
//     its device's latest and unfinished (device messages are applied on
//     the same loop, never in between).

// DefaultReconcile is how often the commands of online devices with an
// unfinished job are re-asserted unless configured (rollouts.reconcile).
const DefaultReconcile = time.Minute

// reconcileBudget bounds the candidates one tick of a pass handles.
const reconcileBudget = 1000

// reconciler is the service's reconciliation state.
type reconciler struct {
	full atomic.Bool // Resync asked for a full pass
	// The rest is the service loop's own.
	pass   *reconcilePass // in progress, nil if none
	last   time.Time      // when the last pass started
	budget int            // candidates per tick; 0: reconcileBudget (tests lower it)
	sent   int            // commands re-sent by the pass in progress
}

// reconcilePass is one pass over the running rollouts, in order of rollout
// ID and, within one, of its devices.
type reconcilePass struct {
	full    bool      // every unfinished job, not only online devices' older ones
	at      time.Time // when it started
	rollout string    // where it goes on: this rollout …
	next    int       // … at this index of its Order
}

// unfinished reports whether p is a job whose command may still be needed:
// sent, and not yet ended on the device.
func unfinished(p *api.DeviceProgress) bool {
	switch p.State {
	case api.DeviceNotified, api.DeviceQueued, api.DeviceDownloading, api.DeviceInstalling:
		return !p.Resend && p.Seq > 0
	}
	return false
}

// reconcile starts a pass when one is due and runs the pass in progress
// for one tick's budget.
func (s *Service) reconcile(now time.Time) {
	rc := &s.recon
	if rc.last.IsZero() {
		rc.last = now // the first period starts with the service
	}
	switch {
	case rc.full.Swap(false):
		// A full pass replaces one in progress: it covers more.
		rc.pass, rc.last, rc.sent = &reconcilePass{full: true, at: now}, now, 0
	case rc.pass == nil && now.Sub(rc.last) >= s.opt.Reconcile:
		rc.pass, rc.last, rc.sent = &reconcilePass{at: now}, now, 0
	}
	if rc.pass == nil {
		return
	}
	budget := rc.budget
	if budget <= 0 {
		budget = reconcileBudget
	}
	done, err := s.reassert(rc.pass, now, budget)
	if err != nil {
		// Most often the broker is gone: the next (re)connection asks for
		// a full pass anyway.
		s.log.Warn("reconciliation stopped; desired commands are re-sent at the next connection or period",
			"full", rc.pass.full, "resent", rc.sent, "err", err)
		rc.pass = nil
		return
	}
	if done {
		if rc.sent > 0 || rc.pass.full {
			s.log.Info("desired commands re-asserted", "full", rc.pass.full, "resent", rc.sent)
		}
		rc.pass = nil
	}
}

// candidate is a command a pass may re-send.
type candidate struct {
	r      *rollout.Rollout
	n      rollout.Notification
	issued time.Time
}

// reassert handles up to budget candidates of pass p from where it
// stopped, publishing the commands that are still their device's latest
// (and, for a periodic pass, of online devices). It reports whether the
// pass is done; an error ends the pass.
func (s *Service) reassert(p *reconcilePass, now time.Time, budget int) (done bool, err error) {
	ids, err := s.runningIDs()
	if err != nil {
		return false, err
	}
	var todo []candidate
	done = true
scan:
	for _, id := range ids {
		if id < p.rollout {
			continue
		}
		var r rollout.Rollout
		ok, err := s.db.Get(store.FleetRollouts, id, &r)
		if err != nil {
			return false, err
		}
		if !ok || r.State.Done() {
			continue
		}
		start := 0
		if id == p.rollout {
			start = p.next
		}
		for i := start; i < len(r.Order); i++ {
			if len(todo) == budget {
				p.rollout, p.next, done = id, i, false
				break scan
			}
			dev := r.Order[i]
			d := r.Devices[dev]
			if !unfinished(d) {
				continue
			}
			// A full pass skips only what was sent since it started (on
			// this connection); a periodic one what is younger than a period.
			if p.full && !d.NotifiedAt.Before(p.at) || !p.full && d.NotifiedAt.After(p.at.Add(-s.opt.Reconcile)) {
				continue
			}
			todo = append(todo, candidate{r: &r, n: rollout.Notification{Device: dev, Seq: d.Seq, Shadow: d.Stage == api.StageShadow}, issued: d.NotifiedAt})
		}
	}
	if len(todo) == 0 {
		return done, nil
	}
	// What the inventory says of each device: its latest sequence and
	// whether it is online (a partial decode of its record).
	type head struct {
		LastSeq uint64 `json:"last_seq"`
		Online  bool   `json:"online"`
	}
	heads := make([]head, len(todo))
	err = s.db.View(func(tx store.Tx) error {
		for i, c := range todo {
			if _, err := tx.Get(store.FleetDevices, c.n.Device, &heads[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	for i, c := range todo {
		if h := heads[i]; h.LastSeq != c.n.Seq || !p.full && !h.Online {
			continue
		}
		if err := s.sendCommand(c.r, c.n, c.issued); err != nil {
			return false, err
		}
		s.recon.sent++
	}
	return done, nil
}
