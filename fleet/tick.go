package fleet

// The rollout loop's tick: each running rollout stepped and its
// deployment commands signed and published; Resync after a reconnection.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Tick steps every running rollout once and sends the deployment commands
// it asks for, then goes on re-asserting desired commands (reconcile) —
// if this replica leads (lead.go); otherwise it does nothing. The
// rollout's new state and the devices' sequence counters are stored before
// the commands are published; a command lost to a crash in between is
// published by the reconciliation after the restart; then devices' label
// sources are asked for their labelled windows (labelsource.go) and the
// retraining policies are stepped (policy.go). Only rollouts that
// are not done are read (an index kept in memory), and one is written
// back only when the step changed it.
func (s *Service) Tick() {
	now := s.opt.Now()
	s.takeTraining() // a job queued through another replica (train.go)
	if !s.lead(now) {
		return
	}
	ids, err := s.runningIDs()
	if err != nil {
		s.log.Error("listing rollouts failed", "err", err)
		return
	}
	for _, id := range ids {
		if err := s.stepRollout(id, now); err != nil {
			s.log.Error("rollout step failed", "rollout", id, "err", err)
		}
	}
	s.reconcile(now)
	s.pullLabels(now)
	s.stepPolicies(now)
}

// runningIDs returns the rollouts that are not done, sorted, loading the
// index from the store the first time.
func (s *Service) runningIDs() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		running := map[string]bool{}
		err := s.db.ForEach(store.FleetRollouts, func(key string, raw []byte) error {
			var head struct {
				State      api.RolloutState `json:"state"`
				GateFailed bool             `json:"gate_failed"`
			}
			if err := json.Unmarshal(raw, &head); err != nil { // damaged: listed as such, never stepped
				s.log.Error("rollout record does not decode; it is skipped", "rollout", fault.Clip(key, 128), "err", fault.Clip(err.Error(), fault.MaxLogField))
				return nil
			}
			if !head.State.Done() || head.GateFailed {
				running[key] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		s.running = running
	}
	ids := make([]string, 0, len(s.running))
	for id := range s.running {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

func (s *Service) stepRollout(id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A dry run on a copy first: most ticks change nothing, and then
	// nothing is written (a write transaction is an fsync).
	var probe rollout.Rollout
	ok, err := s.db.Get(store.FleetRollouts, id, &probe)
	if err != nil {
		return err
	}
	if ok && probe.State.Done() && probe.GateFailed {
		// Its confidence gate failed after devices installed it: they are
		// rolled back (gate.go). Kept running until then, so a restart in
		// between does it too.
		s.mu.Unlock() // autoRollback creates a rollout, which takes mu
		s.autoRollback(&probe)
		s.mu.Lock()
	}
	if !ok || probe.State.Done() {
		delete(s.running, id)
		return nil
	}
	if n := probe.Step(now, func(string) uint64 { return 1 }); len(n) == 0 && !probe.Changed() {
		return nil
	}
	var r rollout.Rollout
	var sends []rollout.Notification
	var before api.RolloutState
	// Fenced: a replica that lost the lease since its tick began steps
	// nothing (lead.go).
	err = s.leaderUpdate(func(tx store.Tx) error {
		r = rollout.Rollout{}
		if ok, err := tx.Get(store.FleetRollouts, id, &r); err != nil || !ok {
			return err
		}
		before = r.State
		var seqErr error
		sends = r.Step(now, func(device string) uint64 {
			d, err := inventory.Get(tx, device)
			if err != nil {
				seqErr = err
				return 0
			}
			if d.LastSeq == math.MaxUint64 {
				seqErr = fmt.Errorf("device %s: command sequence exhausted", device)
				return 0
			}
			d.LastSeq++
			d.NoteSent(id, d.LastSeq)
			if err := tx.Put(store.FleetDevices, device, d); err != nil {
				seqErr = err
			}
			return d.LastSeq
		})
		if seqErr != nil {
			return seqErr
		}
		for _, n := range sends {
			// The confidence gate's baseline: what the canary reported
			// with its active model over the hour before.
			if d := r.Devices[n.Device]; r.Gated(n.Device) && d.Verify == nil {
				v, err := gateBaseline(tx, n.Device, now)
				if err != nil {
					return err
				}
				d.Verify = v
			}
		}
		return tx.Put(store.FleetRollouts, id, &r)
	})
	if err != nil {
		return err
	}
	if r.State.Done() && !r.GateFailed {
		delete(s.running, id)
	}
	if r.State != before {
		s.log.Info("rollout state changed", "rollout", id, "from", before, "to", r.State, "reason", r.Reason)
	}

	for _, n := range sends {
		if err := s.sendCommand(&r, n, now); err != nil {
			s.log.Error("deployment command not sent", "rollout", id, "device", n.Device, "seq", n.Seq, "err", err)
		}
	}
	return nil
}

// sendCommand signs and publishes one deployment command, issued at the
// time the device was notified, retained on the device's desired topic so
// an offline device receives it when it returns. The same notification
// gives the same bytes (Ed25519 signatures are deterministic), so a
// command re-asserted by the reconciliation is the one first sent.
func (s *Service) sendCommand(r *rollout.Rollout, n rollout.Notification, issued time.Time) error {
	c := &wire.Command{Fleet: s.topics.Fleet(), Device: n.Device, Bundle: r.Bundle, Rollout: r.ID, Seq: n.Seq,
		IssuedAt: issued.Unix(), ExpiresAt: issued.Add(s.opt.CommandTTL).Unix(), Rollback: r.Rollback}
	if n.Shadow {
		c.Mode = wire.ModeShadow
	}
	if err := c.Sign(s.cmdKey); err != nil {
		return err
	}
	raw, err := c.Marshal()
	if err != nil {
		return err
	}
	s.metrics.commands.Add(1)
	return s.pub.Publish(s.topics.Desired(n.Device), 1, true, raw)
}

// Resync publishes again, retained, the bundle of every rollout that is not
// done, and asks the next ticks for a full reconciliation pass: the
// desired command of every device whose job is unfinished, online or not
// (reconcile.go). It runs on every (re)connection: a broker that lost its
// retained messages (Mosquitto killed between autosaves, the embedded
// broker restarted with trit-fleet, a replaced broker) would otherwise
// leave devices waiting for a bundle or a command that never comes.
// Publishing the same bytes again is harmless.
func (s *Service) Resync() {
	defer s.recon.full.Store(true)
	ids, err := s.runningIDs()
	if err != nil {
		s.log.Error("resync: listing rollouts failed", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, id := range ids {
		r, err := s.GetRollout(id)
		if errors.Is(err, fault.ErrNotFound) {
			continue
		}
		if err != nil {
			s.log.Error("resync: reading a rollout failed", "rollout", id, "err", err)
			continue
		}
		if r.State.Done() || seen[r.Bundle] {
			continue
		}
		seen[r.Bundle] = true
		if err := s.PublishBundle(r.Bundle); err != nil {
			s.log.Error("resync: bundle not republished", "bundle", r.Bundle, "rollout", r.ID, "err", err)
		}
	}
}
