package fleet

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Publisher is what the service needs of an MQTT connection: publishing.
// Incoming messages reach the service through Service.Deliver, which the
// connection's subscription handlers call. The paho adapter and a
// recording fake for tests implement it.
type Publisher interface {
	Publish(topic string, qos byte, retained bool, payload []byte) error
}

// Options configure a Service. Zero values mean the defaults.
type Options struct {
	// CommandTTL is how long a deployment command stays valid; default 24 h.
	CommandTTL time.Duration
	// Tick is how often rollouts are stepped; default 1 s.
	Tick time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// Queue bounds the incoming messages waiting to be handled; default 4096.
	Queue int
	// TrainingDir is where datasets for remote training live; "" disables
	// training on the fleet.
	TrainingDir string
	// DriftAlert is the drift score at or above which a device is
	// reported as drifting (a warning in the log, a metric); 0 disables.
	DriftAlert float64
	// Replica names this process among the replicas of a shared store
	// (lead.go); default DefaultReplicaID().
	Replica string
	// LeaseTTL is how long the leader's lease lasts after its last
	// renewal; default DefaultLeaseTTL. Replicas of one database should
	// agree on it.
	LeaseTTL time.Duration
	// UnknownAlert is the share of a telemetry interval's windows reported
	// unknown at or above which a device is reported uncertain; 0
	// disables.
	UnknownAlert float64
	// Reconcile is how often the desired command of every online device
	// whose job is unfinished is published again (reconcile.go); default
	// DefaultReconcile.
	Reconcile time.Duration
	// Audit bounds the audit trail (audit.go); zero fields: the store's
	// defaults.
	Audit store.AuditLimits
	// TwoPerson makes every new rollout (but rollbacks) wait, past its
	// first phase, or past TwoPersonDevices devices when it has no phases
	// (default 1), for an operator other than its creator to approve it
	// (approval.go).
	TwoPerson        bool
	TwoPersonDevices int
}

// Service is trit-fleet's core: registry, inventory and rollouts over one
// store, driven by incoming device messages and a ticker.
type Service struct {
	db      Store
	reg     *Registry
	topics  wire.Topics
	pub     Publisher
	cmdKey  ed25519.PrivateKey
	opt     Options
	log     *slog.Logger
	in      *intake
	mu      sync.Mutex // serialises rollout changes between the loop and API calls
	metrics *Metrics
	audit   *Audit // the audit trail (audit.go)
	trainer *trainer
	// reqs matches devices' responses to waiting requests (Samples).
	reqs requests
	// running indexes the rollouts that are not done, so a tick reads only
	// those; nil until the first Tick loads it (guarded by mu).
	running map[string]bool
	// recon re-asserts the devices' desired commands (reconcile.go).
	recon reconciler
	// leader is this replica's view of the rollout lease (lead.go).
	leader leadership
}

// NewService returns a service for fleet that signs deployment commands
// with cmdKey (the fleet's online key) and accepts bundles through reg.
func NewService(db Store, reg *Registry, fleet string, pub Publisher, cmdKey ed25519.PrivateKey, opt *Options) (*Service, error) {
	topics, err := wire.NewTopics(fleet)
	if err != nil {
		return nil, err
	}
	if len(cmdKey) != ed25519.PrivateKeySize {
		return nil, errors.New("fleet: the command signing key is not an Ed25519 private key")
	}
	var o Options
	if opt != nil {
		o = *opt
	}
	if o.CommandTTL <= 0 {
		o.CommandTTL = 24 * time.Hour
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.Reconcile <= 0 {
		o.Reconcile = DefaultReconcile
	}
	if o.Replica == "" {
		o.Replica = DefaultReplicaID()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if _, shared := db.(Leases); shared && o.LeaseTTL < 2*o.Tick {
		return nil, fmt.Errorf("fleet: the rollout lease (%v) must last at least two ticks (%v): it is renewed once a tick", o.LeaseTTL, o.Tick)
	}
	return &Service{db: db, reg: reg, topics: topics, pub: pub, cmdKey: cmdKey, opt: o, log: o.Logger, audit: NewAudit(db, o.Audit, o.Logger, o.Now),
		in: newIntake(o.Queue), metrics: newMetrics(),
		trainer: &trainer{dir: o.TrainingDir, runner: o.Replica + "/" + randomHex(8)}}, nil
}

// Topics returns the fleet's topic builder.
func (s *Service) Topics() wire.Topics { return s.topics }

// Registry returns the bundle registry.
func (s *Service) Registry() *Registry { return s.reg }

// Subscriptions lists the topic filters the service's connection must
// subscribe to (QoS 1), each delivering to Deliver.
func (s *Service) Subscriptions() []string {
	return []string{s.topics.AllDevices(wire.KindState), s.topics.AllDevices(wire.KindEvents), s.topics.AllDevices(wire.KindTelemetry),
		s.topics.AllDevices(wire.KindResponses)}
}

// Tick steps every running rollout once and sends the deployment commands
// it asks for, then goes on re-asserting desired commands (reconcile) —
// if this replica leads (lead.go); otherwise it does nothing. The
// rollout's new state and the devices' sequence counters are stored before
// the commands are published; a command lost to a crash in between is
// published by the reconciliation after the restart. Only rollouts that
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
				State api.RolloutState `json:"state"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				return fmt.Errorf("rollout %s: %w", key, err)
			}
			if !head.State.Done() {
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
	var probe Rollout
	ok, err := s.db.Get(store.FleetRollouts, id, &probe)
	if err != nil {
		return err
	}
	if !ok || probe.State.Done() {
		delete(s.running, id)
		return nil
	}
	if n := probe.Step(now, func(string) uint64 { return 1 }); len(n) == 0 && !probe.changed {
		return nil
	}
	var r Rollout
	var sends []Notification
	var before api.RolloutState
	err = s.db.Update(func(tx store.Tx) error {
		r = Rollout{}
		if ok, err := tx.Get(store.FleetRollouts, id, &r); err != nil || !ok {
			return err
		}
		before = r.State
		var seqErr error
		sends = r.Step(now, func(device string) uint64 {
			d, err := getDevice(tx, device)
			if err != nil {
				seqErr = err
				return 0
			}
			if d.LastSeq == math.MaxUint64 {
				seqErr = fmt.Errorf("device %s: command sequence exhausted", device)
				return 0
			}
			d.LastSeq++
			d.noteSent(id, d.LastSeq)
			if err := tx.Put(store.FleetDevices, device, d); err != nil {
				seqErr = err
			}
			return d.LastSeq
		})
		if seqErr != nil {
			return seqErr
		}
		return tx.Put(store.FleetRollouts, id, &r)
	})
	if err != nil {
		return err
	}
	if r.State.Done() {
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
func (s *Service) sendCommand(r *Rollout, n Notification, issued time.Time) error {
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

// PublishBundle publishes a registered bundle, retained, on its
// content-addressed topic.
func (s *Service) PublishBundle(hash string) error {
	_, data, err := s.reg.Bundle(hash)
	if err != nil {
		return err
	}
	if err := s.pub.Publish(s.topics.Bundle(hash), 1, true, data); err != nil {
		return fmt.Errorf("fleet: publish bundle %s: %w", hash[:12], err)
	}
	return s.reg.MarkPublished(hash)
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
		if errors.Is(err, ErrNotFound) {
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

// maxRolloutDevices bounds the devices of one rollout (its record is one
// document, rewritten as it progresses).
const maxRolloutDevices = 100000

// maxListed bounds the device IDs quoted in one error message.
const maxListed = 10

// listIDs renders up to maxListed IDs, "and N more" after.
func listIDs(ids []string) string {
	if len(ids) <= maxListed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxListed], ", "), len(ids)-maxListed)
}

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
func (s *Service) CreateRollout(req api.RolloutRequest) (*Rollout, error) {
	return s.CreateRolloutBy(req, "")
}

// CreateRolloutBy is CreateRollout on behalf of operator by, who is
// recorded as its creator; with the two-person rule on
// (Options.TwoPerson) it then waits for another operator's approval past
// its first phase (approval.go).
func (s *Service) CreateRolloutBy(req api.RolloutRequest, by string) (*Rollout, error) {
	if err := wire.CheckRolloutID(req.ID); err != nil {
		return nil, fmt.Errorf("%w: rollout ID: %v", ErrRollout, err)
	}
	// A unique prefix names a bundle, as git's abbreviated hashes do.
	full, err := s.reg.Resolve(req.Bundle)
	if err != nil {
		return nil, err
	}
	req.Bundle = full
	info, _, err := s.reg.Bundle(req.Bundle)
	if err != nil {
		return nil, err
	}
	devices := req.Devices
	if len(devices) == 0 {
		if len(req.Selector) == 0 {
			return nil, fmt.Errorf("%w: give device IDs or a label selector", ErrRollout)
		}
		if devices, err = Select(s.db, req.Selector); err != nil {
			return nil, err
		}
	}
	if len(devices) > maxRolloutDevices {
		return nil, fmt.Errorf("%w: %d devices, at most %d in one rollout", ErrRollout, len(devices), maxRolloutDevices)
	}
	for _, d := range devices {
		if err := wire.CheckID(d); err != nil {
			return nil, fmt.Errorf("%w: device %q: %v", ErrRollout, clip(d, 80), err)
		}
	}
	known, err := s.inventory(devices)
	if err != nil {
		return nil, err
	}
	if !req.AllowUnknown {
		var unknown []string
		for _, d := range devices {
			if known[d] == nil {
				unknown = append(unknown, d)
			}
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("%w: %d device(s) not in the inventory: %s (a typo? give allow_unknown, tritctl --allow-unknown, to target devices that have not reported yet)",
				ErrRollout, len(unknown), listIDs(unknown))
		}
	}
	if err := checkCompatible(info, devices, known); err != nil {
		return nil, err
	}
	if req.Rollback {
		if err := s.checkRollbackTarget(info, devices, known); err != nil {
			return nil, err
		}
	}
	now := s.opt.Now()
	r, err := NewRollout(req.ID, req.Bundle, devices, req.Pace, req.Abort, now)
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
	if req.Shadow != nil {
		if err := r.SetShadow(req.Shadow); err != nil {
			return nil, err
		}
	}
	s.requireApproval(r)
	if !info.Published {
		if err := s.PublishBundle(req.Bundle); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.db.Update(func(tx store.Tx) error {
		var existing Rollout
		if ok, err := tx.Get(store.FleetRollouts, r.ID, &existing); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: rollout %s already exists", ErrRollout, r.ID)
		}
		return tx.Put(store.FleetRollouts, r.ID, r)
	})
	if err != nil {
		return nil, err
	}
	if s.running != nil {
		s.running[r.ID] = true
	}
	s.log.Info("rollout created", "rollout", r.ID, "bundle", r.Bundle, "model", r.ModelID, "release", r.Release, "devices", len(devices), "rollback", r.Rollback)
	return r, nil
}

// inventory returns the records of the given devices that exist.
func (s *Service) inventory(ids []string) (map[string]*Device, error) {
	out := make(map[string]*Device, len(ids))
	err := s.db.View(func(tx store.Tx) error {
		for _, id := range ids {
			d := &Device{}
			ok, err := tx.Get(store.FleetDevices, id, d)
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
// current and previous model as it last reported them, and the bundles of
// the rollouts in which it succeeded.
func (s *Service) ranBefore(devices []string, known map[string]*Device) (map[string]map[string]bool, error) {
	out := make(map[string]map[string]bool, len(devices))
	for _, id := range devices {
		ran := map[string]bool{}
		if d := known[id]; d != nil {
			for _, m := range []*wire.ModelRef{d.Model, d.Previous} {
				if m != nil {
					ran[m.Bundle] = true
				}
			}
		}
		out[id] = ran
	}
	err := s.db.ForEach(store.FleetRollouts, func(key string, raw []byte) error {
		var r Rollout
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

// checkRollbackTarget refuses a rollback to a bundle some device never ran.
// checkCompatible refuses a rollout to devices whose last report says they
// cannot run the bundle: an agent older than its minimum agent version, or
// another hardware label than the one it was built for. Devices that have
// not said (no report, or no version or label in it) pass: their agents
// check the same on install.
func checkCompatible(info *api.BundleInfo, devices []string, known map[string]*Device) error {
	compat := bundle.Compat{MinAgentVersion: info.MinAgent, Hardware: info.Hardware}
	var old, other []string
	for _, id := range devices {
		d := known[id]
		if d == nil {
			continue
		}
		if d.AgentVersion != "" && compat.MinAgentVersion != "" {
			if err := compat.CheckAgent(d.AgentVersion); errors.Is(err, bundle.ErrAgentTooOld) {
				old = append(old, fmt.Sprintf("%s (agent %s)", id, clip(d.AgentVersion, 32)))
			}
		}
		if compat.Hardware != "" && d.Hardware != "" && d.Hardware != compat.Hardware {
			other = append(other, fmt.Sprintf("%s (%s)", id, clip(d.Hardware, 32)))
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
		return fmt.Errorf("%w: %s; or leave them out of the rollout", ErrRollout, strings.Join(why, "; "))
	}
	return nil
}

func (s *Service) checkRollbackTarget(info *api.BundleInfo, devices []string, known map[string]*Device) error {
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
			ErrRollout, len(never), info.ModelID, info.Release, info.Hash, listIDs(never))
	}
	return nil
}

// GetRollout returns a stored rollout.
func (s *Service) GetRollout(id string) (*Rollout, error) {
	if err := wire.CheckRolloutID(id); err != nil {
		return nil, fmt.Errorf("%w: rollout ID: %v", ErrRollout, err)
	}
	var r Rollout
	ok, err := s.db.Get(store.FleetRollouts, id, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: rollout %s", ErrNotFound, id)
	}
	return &r, nil
}

// Rollouts returns every rollout, newest first.
func (s *Service) Rollouts() ([]Rollout, error) {
	var out []Rollout
	err := s.db.ForEach(store.FleetRollouts, func(key string, raw []byte) error {
		var r Rollout
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("rollout %s: %w", key, err)
		}
		out = append(out, r)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, err
}

// Control pauses, resumes or aborts a rollout.
func (s *Service) Control(id, op, reason string) (*Rollout, error) {
	r, err := s.changeRollout(id, func(r *Rollout, now time.Time) error {
		switch op {
		case "pause":
			return r.Pause(reason, now)
		case "resume":
			return r.Resume(now)
		case "abort":
			return r.AbortNow(reason, now)
		}
		return fmt.Errorf("%w: unknown operation %q", ErrRollout, op)
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("rollout "+op, "rollout", id, "reason", reason)
	return r, nil
}

// changeRollout applies change to rollout id in one transaction and stores
// the result: an operator's action, against the state the tick last wrote.
func (s *Service) changeRollout(id string, change func(r *Rollout, now time.Time) error) (*Rollout, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r Rollout
	err := s.db.Update(func(tx store.Tx) error {
		ok, err := tx.Get(store.FleetRollouts, id, &r)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: rollout %s", ErrNotFound, id)
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
// still running.
func (s *Service) Rollback(id, newID string) (*Rollout, error) {
	if err := wire.CheckRolloutID(id); err != nil {
		return nil, fmt.Errorf("%w: rollout ID: %v", ErrRollout, err)
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
	return s.CreateRollout(api.RolloutRequest{ID: newID, Bundle: target, Devices: orig.Order, Pace: orig.Pace,
		Abort: orig.Abort, Timeout: orig.Timeout, Retries: orig.Retries, Rollback: true, AllowUnknown: true})
}

// rollbackTarget picks the bundle a rollback of orig sends.
func (s *Service) rollbackTarget(orig *Rollout) (string, error) {
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
