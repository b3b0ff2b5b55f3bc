package fleet

// The service's rollout operations: create (checked against the
// inventory and the registry), read, pause/resume/abort, roll back.
// Package fleet/rollout is the engine they drive; tick.go steps it.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// MaxRolloutDevices bounds the devices of one rollout (its record is one
// document, rewritten as it progresses).
const MaxRolloutDevices = 100000

// MaxUnknownDevices bounds the devices of one rollout that are not in the
// inventory (allow_unknown): each is given a record (its command counter)
// when it is notified, so 40,000 made-up IDs made 40,000 records of
// devices that never existed.
const MaxUnknownDevices = 1000

// CreateRollout checks a request, publishes its bundle if needed and stores
// the new rollout; the next Tick starts notifying devices.
//
// Device IDs must be in the inventory unless req.AllowUnknown. A rollback
// (req.Rollback) may only send a bundle each of its devices ran before —
// its current or previous model as it last reported, or one it installed in
// an earlier rollout of this fleet — since the rollback flag lets a device
// install a release below its highest: it must not become a way around the
// devices' anti-rollback check to any old bundle.
//
// A device whose last report says it cannot run the bundle — its agent is
// older than the bundle's minimum agent version (a model with trees needs
// 0.3.0), or its hardware label differs from the bundle's — is refused by
// name before anything is sent: its agent would refuse the bundle, and the
// failures would count towards the rollout's abort policy.
func (s *Service) CreateRollout(req api.RolloutRequest) (*rollout.Rollout, error) {
	return s.CreateRolloutBy(req, "")
}

// CreateRolloutBy is CreateRollout on behalf of operator by, who is
// recorded as its creator; with the two-person rule on
// (Options.TwoPerson) it then waits for another person's approval before
// its first device is notified (approval.go).
func (s *Service) CreateRolloutBy(req api.RolloutRequest, by string) (*rollout.Rollout, error) {
	return s.CreateRolloutAs(req, access.Principal{Name: by})
}

// CreateRolloutAs is CreateRolloutBy for principal p, whose role decides
// whether it may make an emergency rollback (req.Emergency).
func (s *Service) CreateRolloutAs(req api.RolloutRequest, p access.Principal) (*rollout.Rollout, error) {
	return s.createRollout(req, p, nil)
}

// ErrEmergency refuses an emergency rollback to a role without
// access.PermEmergency (a 403).
var ErrEmergency = errors.New("fleet: emergency rollback refused")

// createRollout is CreateRolloutAs; hold, if not nil, sets the new
// rollout's approval instead of the service's rule (a retraining
// policy's rollout, policy.go).
func (s *Service) createRollout(req api.RolloutRequest, p access.Principal, hold func(*rollout.Rollout)) (*rollout.Rollout, error) {
	by := p.Name
	if req.Emergency {
		switch {
		case !req.Rollback:
			return nil, fmt.Errorf("%w: emergency applies to a rollback only", rollout.ErrInvalid)
		case !p.Role.Can(access.PermEmergency):
			return nil, fmt.Errorf("%w: %s (role %s) may not make an emergency rollback; the roles %s may, else it waits for a second person's approval",
				ErrEmergency, by, cmp.Or(string(p.Role), "none"), access.RolesText(access.PermEmergency))
		}
	}
	if err := wire.CheckRolloutID(req.ID); err != nil {
		return nil, fmt.Errorf("%w: rollout ID: %v", rollout.ErrInvalid, err)
	}
	// A unique prefix names a bundle, as git's abbreviated hashes do.
	full, err := s.reg.Resolve(req.Bundle)
	if err != nil {
		return nil, err
	}
	req.Bundle = full
	info, data, err := s.reg.Bundle(req.Bundle)
	if err != nil {
		return nil, err
	}
	devices := req.Devices
	if len(devices) == 0 {
		if len(req.Selector) == 0 {
			return nil, fmt.Errorf("%w: give device IDs or a label selector", rollout.ErrInvalid)
		}
		if devices, err = inventory.Select(s.db, req.Selector); err != nil {
			return nil, err
		}
		if len(devices) == 0 {
			return nil, fmt.Errorf("%w: no target devices: selector %s matches no device in the inventory ('tritctl devices list' shows their labels)",
				rollout.ErrInvalid, rollout.SelectorText(req.Selector))
		}
	}
	if len(devices) > MaxRolloutDevices {
		return nil, fmt.Errorf("%w: %d devices, at most %d in one rollout", rollout.ErrInvalid, len(devices), MaxRolloutDevices)
	}
	for _, d := range devices {
		if err := wire.CheckID(d); err != nil {
			return nil, fmt.Errorf("%w: device %q: %v", rollout.ErrInvalid, fault.Clip(d, 80), err)
		}
	}
	known, err := s.inventory(devices)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, d := range devices {
		if known[d] == nil {
			unknown = append(unknown, d)
		}
	}
	if req.AllowUnknown && len(unknown) > MaxUnknownDevices {
		return nil, fmt.Errorf("%w: %d devices not in the inventory, at most %d in one rollout with allow_unknown (each gets a record before it ever reports): %s",
			rollout.ErrInvalid, len(unknown), MaxUnknownDevices, listIDs(unknown))
	}
	if !req.AllowUnknown {
		if len(unknown) > 0 {
			return nil, fmt.Errorf("%w: %d device(s) not in the inventory: %s (a typo? give allow_unknown, tritctl --allow-unknown, to target devices that have not reported yet)",
				rollout.ErrInvalid, len(unknown), listIDs(unknown))
		}
	}
	if err := checkCompatible(info, devices, known); err != nil {
		return nil, err
	}
	if req.Rollback {
		if err := s.checkRollbackTarget(info, devices, known); err != nil {
			return nil, err
		}
	} else if err := checkNotOlder(info, devices, known); err != nil {
		return nil, err
	}
	now := s.opt.Now()
	r, err := rollout.New(req.ID, req.Bundle, devices, req.Pace, req.Abort, now)
	if err != nil {
		return nil, err
	}
	r.ModelID, r.Release, r.Selector, r.Rollback = info.ModelID, info.Release, req.Selector, req.Rollback
	r.TrainCounts = info.TrainCounts
	r.CreatedBy = by
	if req.Timeout > 0 {
		if err := r.SetTimeout(req.Timeout); err != nil {
			return nil, err
		}
	}
	if len(req.Retries) > 0 {
		if err := r.SetRetries(req.Retries); err != nil {
			return nil, err
		}
	}
	if sh := req.Shadow; sh != nil {
		if err := r.SetShadow(sh); err != nil {
			return nil, err
		}
		// Devices count a shadow's classes for models of at most
		// wire.MaxShadowClasses classes: a divergence gate on a larger
		// candidate could never pass (api.ShadowPolicy.Judge).
		if (sh.MaxDivergence > 0 || sh.MaxTrainDivergence > 0) && len(info.Classes) > wire.MaxShadowClasses {
			return nil, fmt.Errorf("%w: max_divergence and max_train_divergence cannot be judged for a model of %d classes: devices report a shadow's class counts for at most %d",
				rollout.ErrInvalid, len(info.Classes), wire.MaxShadowClasses)
		}
	}
	if err := s.setGate(r, &req, s.reg.Calibrated(info, data)); err != nil {
		return nil, err
	}
	s.requireApproval(r, req.Emergency, now)
	if hold != nil {
		hold(r)
	}
	// Every time, not once per bundle: a broker keeps no promise about
	// retained messages across its restarts (the embedded broker keeps
	// nothing, Mosquitto loses what it had not saved), so a bundle sent for
	// an earlier rollout may be gone. 30 KB is cheap to send again.
	if err := s.PublishBundle(req.Bundle); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.db.Update(func(tx store.Tx) error {
		var existing rollout.Rollout
		if ok, err := tx.Get(store.FleetRollouts, r.ID, &existing); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: rollout %s already exists", rollout.ErrInvalid, r.ID)
		}
		return tx.Put(store.FleetRollouts, r.ID, r)
	})
	if err != nil {
		return nil, err
	}
	if s.running != nil {
		s.running[r.ID] = true
	}
	s.log.Info("rollout created", "rollout", r.ID, "bundle", r.Bundle, "model", r.ModelID, "release", r.Release, "devices", len(devices), "rollback", r.Rollback, "by", by)
	if r.Approval != nil && r.Approval.Emergency {
		s.log.Warn("emergency rollback: no second person approved it", "rollout", r.ID, "by", by, "devices", len(devices))
	}
	return r, nil
}

// inventory returns the records of the given devices that exist.
func (s *Service) inventory(ids []string) (map[string]*inventory.Device, error) {
	out := make(map[string]*inventory.Device, len(ids))
	err := s.db.View(func(tx store.Tx) error {
		for _, id := range ids {
			d := &inventory.Device{}
			ok, err := tx.Get(store.FleetDevices, id, d)
			if fault.IsDamaged(err) {
				return fault.Damaged(store.FleetDevices, id, err)
			}
			if err != nil {
				return err
			}
			if ok {
				out[id] = d
			}
		}
		return nil
	})
	return out, err
}

// ranBefore returns, per device, the bundles it is known to have run: its
// current and previous model as it last reported them (and a committed one
// that no longer loads), and the bundles of the rollouts in which it
// succeeded.
func (s *Service) ranBefore(devices []string, known map[string]*inventory.Device) (map[string]map[string]bool, error) {
	out := make(map[string]map[string]bool, len(devices))
	for _, id := range devices {
		ran := map[string]bool{}
		if d := known[id]; d != nil {
			for _, m := range []*wire.ModelRef{d.Model, d.Previous, unloadableRef(d)} {
				if m != nil {
					ran[m.Bundle] = true
				}
			}
		}
		out[id] = ran
	}
	err := s.db.ForEach(store.FleetRollouts, func(key string, raw []byte) error {
		var r rollout.Rollout
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("rollout %s: %w", key, err)
		}
		for id, ran := range out {
			if p := r.Devices[id]; p != nil && p.State == api.DeviceSucceeded {
				ran[r.Bundle] = true
			}
		}
		return nil
	})
	return out, err
}

// checkNotOlder refuses a rollout (not a rollback) that devices would
// refuse as older than what they installed: an agent takes a release of a
// model only above the highest it installed, or the very bundle it runs
// (anti-rollback; only a signed rollback may go back). Re-rolling the
// release a rollback went back from is the common case. It goes by each
// device's last report (its current and previous model, and a committed
// one that does not load: its active bundle, which it takes again), not by the
// fleet's history: a device whose database was wiped reports neither and
// takes any release.
func checkNotOlder(info *api.BundleInfo, devices []string, known map[string]*inventory.Device) error {
	var older []string
	top := uint64(0)
	for _, id := range devices {
		d := known[id]
		if d == nil {
			continue
		}
		h := uint64(0)
		for _, m := range []*wire.ModelRef{d.Model, d.Previous, unloadableRef(d)} {
			if m != nil && m.ID == info.ModelID {
				h = max(h, m.Release)
			}
		}
		// The agent takes its active bundle again: the one it runs, or
		// its committed one that does not load (delivered again, it
		// replaces the damaged copy).
		active := d.Model != nil && d.Model.Bundle == info.Hash ||
			d.Unloadable != nil && d.Unloadable.Bundle == info.Hash
		if info.Release < h || (info.Release == h && !active) {
			older = append(older, fmt.Sprintf("%s (release %d)", id, h))
			top = max(top, h)
		}
	}
	if len(older) > 0 {
		return fmt.Errorf("%w: %d device(s) already installed %s release %d or later, and an agent refuses a release not above the highest it installed: %s; publish release %d or later (or, to go back, make a rollback)",
			rollout.ErrInvalid, len(older), info.ModelID, info.Release, listIDs(older), top+1)
	}
	return nil
}

// unloadableRef is the device's committed model that does not load, nil
// if none.
func unloadableRef(d *inventory.Device) *wire.ModelRef {
	if d.Unloadable == nil {
		return nil
	}
	return &d.Unloadable.ModelRef
}

// checkCompatible refuses a rollout to devices whose last report says they
// cannot run the bundle: an agent older than its minimum agent version, or
// another hardware label than the one it was built for. Devices that have
// not said (no report, or no version or label in it) pass: their agents
// check the same on install.
func checkCompatible(info *api.BundleInfo, devices []string, known map[string]*inventory.Device) error {
	compat := bundle.Compat{MinAgentVersion: info.MinAgent, Hardware: info.Hardware}
	var old, other []string
	for _, id := range devices {
		d := known[id]
		if d == nil {
			continue
		}
		if d.AgentVersion != "" && compat.MinAgentVersion != "" {
			if err := compat.CheckAgent(d.AgentVersion); errors.Is(err, bundle.ErrAgentTooOld) {
				old = append(old, fmt.Sprintf("%s (agent %s)", id, fault.Clip(d.AgentVersion, 32)))
			}
		}
		if compat.Hardware != "" && d.Hardware != "" && d.Hardware != compat.Hardware {
			other = append(other, fmt.Sprintf("%s (%s)", id, fault.Clip(d.Hardware, 32)))
		}
	}
	var why []string
	if len(old) > 0 {
		why = append(why, fmt.Sprintf("%d device(s) run an agent older than %s, which bundle %.12s needs: %s; upgrade their trit-agent package first",
			len(old), compat.MinAgentVersion, info.Hash, listIDs(old)))
	}
	if len(other) > 0 {
		why = append(why, fmt.Sprintf("%d device(s) are not %q hardware, which bundle %.12s is built for: %s",
			len(other), compat.Hardware, info.Hash, listIDs(other)))
	}
	if len(why) > 0 {
		return fmt.Errorf("%w: %s; or leave them out of the rollout", rollout.ErrInvalid, strings.Join(why, "; "))
	}
	return nil
}

// checkRollbackTarget refuses a rollback to a bundle some device never ran.
func (s *Service) checkRollbackTarget(info *api.BundleInfo, devices []string, known map[string]*inventory.Device) error {
	ran, err := s.ranBefore(devices, known)
	if err != nil {
		return err
	}
	var never []string
	for _, id := range devices {
		if !ran[id][info.Hash] {
			never = append(never, id)
		}
	}
	if len(never) > 0 {
		return fmt.Errorf("%w: a rollback may only send a bundle its devices ran before, and %d device(s) never ran %s release %d (bundle %.12s): %s; deploy a new release instead, or roll back those devices to what they ran",
			rollout.ErrInvalid, len(never), info.ModelID, info.Release, info.Hash, listIDs(never))
	}
	return nil
}

// GetRollout returns a stored rollout.
func (s *Service) GetRollout(id string) (*rollout.Rollout, error) {
	if err := wire.CheckRolloutID(id); err != nil {
		return nil, fmt.Errorf("%w: rollout ID: %v", rollout.ErrInvalid, err)
	}
	var r rollout.Rollout
	ok, err := s.db.Get(store.FleetRollouts, id, &r)
	if fault.IsDamaged(err) {
		return nil, fault.Damaged(store.FleetRollouts, id, err)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: rollout %s", fault.ErrNotFound, id)
	}
	return &r, nil
}

// Rollouts returns every rollout that decodes, newest first
// (RolloutsAndDamaged also names those that do not).
func (s *Service) Rollouts() ([]rollout.Rollout, error) {
	out, _, err := s.RolloutsAndDamaged()
	return out, err
}

// RolloutsAndDamaged returns every rollout that decodes, newest first,
// and the records that do not (damaged.go).
func (s *Service) RolloutsAndDamaged() ([]rollout.Rollout, []api.Damaged, error) {
	var out []rollout.Rollout
	bad, err := fault.DecodeAll(s.db.ForEach, store.FleetRollouts, func(_ string, r *rollout.Rollout) { out = append(out, *r) })
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, bad, err
}

// RolloutList is GET /v1/rollouts: the rollouts that decode, newest
// first, then an entry per damaged record with its key as ID and Damaged
// set.
func (s *Service) RolloutList() ([]rollout.Rollout, error) {
	out, bad, err := s.RolloutsAndDamaged()
	for _, b := range bad {
		out = append(out, rollout.Rollout{Rollout: api.Rollout{ID: b.Key, Damaged: b.Error}})
	}
	return out, err
}

// Control pauses, resumes or aborts a rollout.
func (s *Service) Control(id, op, reason string) (*rollout.Rollout, error) {
	r, err := s.changeRollout(id, func(r *rollout.Rollout, now time.Time) error {
		switch op {
		case "pause":
			return r.Pause(reason, now)
		case "resume":
			return r.Resume(now)
		case "abort":
			return r.AbortNow(reason, now)
		}
		return fmt.Errorf("%w: unknown operation %q", rollout.ErrInvalid, op)
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("rollout "+op, "rollout", id, "reason", reason)
	return r, nil
}

// changeRollout applies change to rollout id in one transaction and stores
// the result: an operator's action, against the state the tick last wrote.
func (s *Service) changeRollout(id string, change func(r *rollout.Rollout, now time.Time) error) (*rollout.Rollout, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r rollout.Rollout
	err := s.db.Update(func(tx store.Tx) error {
		ok, err := tx.Get(store.FleetRollouts, id, &r)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: rollout %s", fault.ErrNotFound, id)
		}
		if err := change(&r, s.opt.Now()); err != nil {
			return err
		}
		return tx.Put(store.FleetRollouts, id, &r)
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Rollback creates a new rollout, newID, that sends the devices of rollout
// id the bundle they ran before it, with the rollback flag, with the same
// pace and abort policy. The target is the previous model the devices that
// installed id's bundle report (the most common one, if they differ), or,
// if none did, the model's release before id's; CreateRollout then refuses
// it unless every device ran it. The original rollout is aborted if it is
// still running. The rollback has no creator (RollbackAs names one).
func (s *Service) Rollback(id, newID string) (*rollout.Rollout, error) {
	return s.RollbackAs(id, newID, access.Principal{}, false)
}

// RollbackAs is Rollback on behalf of p, its creator; emergency asks for
// an emergency rollback (approval.go), which p's role must allow.
func (s *Service) RollbackAs(id, newID string, p access.Principal, emergency bool) (*rollout.Rollout, error) {
	if err := wire.CheckRolloutID(id); err != nil {
		return nil, fmt.Errorf("%w: rollout ID: %v", rollout.ErrInvalid, err)
	}
	if emergency && !p.Role.Can(access.PermEmergency) {
		return nil, fmt.Errorf("%w: %s (role %s) may not make an emergency rollback; the roles %s may, else it waits for a second person's approval",
			ErrEmergency, p.Name, cmp.Or(string(p.Role), "none"), access.RolesText(access.PermEmergency))
	}
	orig, err := s.GetRollout(id)
	if err != nil {
		return nil, err
	}
	target, err := s.rollbackTarget(orig)
	if err != nil {
		return nil, err
	}
	if !orig.State.Done() {
		if _, err := s.Control(id, "abort", "rolled back by "+newID); err != nil {
			return nil, err
		}
	}
	return s.createRollout(api.RolloutRequest{ID: newID, Bundle: target, Devices: orig.Order, Pace: orig.Pace,
		Abort: orig.Abort, Timeout: orig.Timeout, Retries: orig.Retries, Rollback: true, AllowUnknown: true, Emergency: emergency}, p, nil)
}

// rollbackTarget picks the bundle a rollback of orig sends.
func (s *Service) rollbackTarget(orig *rollout.Rollout) (string, error) {
	known, err := s.inventory(orig.Order)
	if err != nil {
		return "", err
	}
	votes := map[string]int{}
	for _, id := range orig.Order {
		d := known[id]
		if d != nil && d.Model != nil && d.Model.Bundle == orig.Bundle && d.Previous != nil && d.Previous.Bundle != orig.Bundle {
			votes[d.Previous.Bundle]++
		}
	}
	best, n := "", 0
	for h, v := range votes {
		if v > n || v == n && h < best {
			best, n = h, v
		}
	}
	if best != "" {
		return best, nil
	}
	prev, _, err := s.reg.Previous(orig.ModelID, orig.Release)
	return prev, err
}
