package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Retraining policies: the loop that runs itself up to the approval
// (docs/FLEET.md "Closing the loop"). A policy watches one model on a
// group of devices (those matching its selector that run the model) and,
// every Every, looks at the group's drift score and unknown share and at
// the windows labelled for the model since it last acted. When at least
// MinLabels new labels exist and one of its thresholds is crossed, it
// starts a retraining job (retrain.go). A better challenger is left for
// an operator to sign offline — the release key never comes online — and
// once its signed release is published, the policy opens a rollout on
// the group that shadows it and holds the promotion for an operator's
// approval (api.Approval.Promotion). When that rollout ends, the policy
// watches again.
//
// A policy's state is a document of the store (collection fleet_windows,
// key "policy/<model>"), so every replica and a restarted fleet see it;
// only the leading replica steps policies, at its tick. The stages:
//
//	watching ──trigger──▶ training ──better──▶ signing ──published──▶ shadowing ──rollout done──▶ watching
//	              ▲            └──refused, failed──────────────┐                     │
//	              └────────────────────────────────────────────┴─────────────────────┘
//
// Invariants: one job and one rollout at most per policy at a time; a new
// trigger needs MinLabels windows labelled after the policy's last
// trigger (Since), so a refused challenger is not retrained on the same
// labels; every stage change is logged and its reason kept (Why).

// RetrainPolicy is one model's retraining policy ([[retrain]] in
// fleet.toml).
type RetrainPolicy struct {
	Model    string            // the model ID
	Selector map[string]string // the group: devices matching it that run the model; empty: every device that runs it
	Dataset  string            // the original training data, in the training data directory, or standard:NAME
	// MinLabels is the number of windows labelled since the last trigger
	// a trigger needs (default DefaultPolicyLabels).
	MinLabels int
	// The thresholds; a zero one is not checked, and at least one must be
	// set. Drift: the group's mean drift score at or above it. Unknown:
	// the group's mean share (0 … 1) of windows reported unknown at or
	// above it. Accuracy: the model's accuracy (percent) on the windows
	// labelled since the last trigger — the label against the class the
	// device predicted — below it.
	Drift, Unknown, Accuracy float64
	// Every is how often the thresholds are looked at (default
	// DefaultPolicyEvery).
	Every time.Duration
	// Shadow is the gates of the challenger's shadow (the rollout's
	// --min-agreement and the others; zero fields are not checked).
	Shadow api.ShadowPolicy
}

// Defaults of a policy.
const (
	DefaultPolicyLabels = 50
	DefaultPolicyEvery  = 10 * time.Minute
)

// Policy stages (api.PolicyState.Stage).
const (
	PolicyWatching  = "watching"
	PolicyTraining  = "training"
	PolicySigning   = "challenger ready: sign offline"
	PolicyShadowing = "shadowing, waiting for approval"
)

const policyKeyPrefix = "policy/"

// CheckPolicy returns an error saying what is wrong with p.
func CheckPolicy(p *RetrainPolicy) error {
	switch {
	case p.Model == "" || len(p.Model) > 255:
		return errors.New("model: give the model ID (1 … 255 bytes)")
	case p.Dataset == "":
		return errors.New("dataset: give the model's original training data (a path in training.data_dir, or standard:NAME)")
	case p.MinLabels < 0:
		return fmt.Errorf("min_labels %d: want 1 or more (0: %d)", p.MinLabels, DefaultPolicyLabels)
	case p.Drift < 0 || p.Drift > 1, p.Unknown < 0 || p.Unknown > 1, p.Accuracy < 0 || p.Accuracy > 100:
		return fmt.Errorf("thresholds drift %g (0 … 1), unknown %g (0 … 1), accuracy %g (0 … 100): out of range", p.Drift, p.Unknown, p.Accuracy)
	case p.Drift == 0 && p.Unknown == 0 && p.Accuracy == 0:
		return errors.New("give at least one threshold: drift, unknown or accuracy")
	case p.Every < 0:
		return fmt.Errorf("every %v: want a positive duration", p.Every)
	}
	for k, v := range p.Selector {
		if k == "" || v == "" {
			return fmt.Errorf("selector %q=%q: want label=value", k, v)
		}
	}
	return nil
}

// policyState reads the state of p's model; a policy never stepped is
// watching since now.
func (s *Service) policyState(model string, now time.Time) (*api.PolicyState, error) {
	st := &api.PolicyState{Model: model, Stage: PolicyWatching, Since: now, Changed: now}
	if _, err := s.db.Get(store.FleetWindows, policyKeyPrefix+model, st); err != nil {
		return nil, err
	}
	return st, nil
}

// Policies returns every configured policy's state.
func (s *Service) Policies() ([]api.PolicyState, error) {
	now := s.opt.Now().UTC()
	var out []api.PolicyState
	for _, p := range s.opt.Policies {
		st, err := s.policyState(p.Model, now)
		if err != nil {
			return nil, err
		}
		st.Rule = policyRule(&p)
		out = append(out, *st)
	}
	return out, nil
}

// stepPolicies steps every policy once (the leader's tick).
func (s *Service) stepPolicies(now time.Time) {
	for i := range s.opt.Policies {
		p := &s.opt.Policies[i]
		if err := s.stepPolicy(p, now.UTC()); err != nil {
			s.log.Error("retraining policy step failed", "model", p.Model, "err", err)
		}
	}
}

// stepPolicy advances one policy by at most one stage and stores its
// state when it changed or was evaluated.
func (s *Service) stepPolicy(p *RetrainPolicy, now time.Time) error {
	st, err := s.policyState(p.Model, now)
	if err != nil {
		return err
	}
	before := *st
	switch st.Stage {
	case PolicyTraining:
		s.policyTraining(st, now)
	case PolicySigning:
		s.policySigning(p, st, now)
	case PolicyShadowing:
		s.policyShadowing(st, now)
	default:
		if !st.Checked.IsZero() && now.Sub(st.Checked) < cmp.Or(p.Every, DefaultPolicyEvery) {
			return nil
		}
		s.policyWatching(p, st, now)
	}
	if st.Stage != before.Stage {
		st.Changed = now
		s.log.Info("retraining policy", "model", p.Model, "stage", st.Stage, "why", fault.Clip(st.Why, fault.MaxLogField))
	}
	if *st == before {
		return nil
	}
	return s.db.Put(store.FleetWindows, policyKeyPrefix+p.Model, st)
}

// policyGroup returns the devices of p's group and the bundle most of
// them run.
func (s *Service) policyGroup(p *RetrainPolicy) ([]inventory.Device, string, error) {
	all, err := inventory.Devices(s.db)
	if err != nil {
		return nil, "", err
	}
	var group []inventory.Device
	runs := map[string]int{}
	for _, d := range all {
		if d.Model == nil || d.Model.ID != p.Model || !d.Matches(p.Selector) {
			continue
		}
		group = append(group, d)
		runs[d.Model.Bundle]++
	}
	bundles := slices.Sorted(maps.Keys(runs))
	active := ""
	for _, b := range bundles {
		if active == "" || runs[b] > runs[active] {
			active = b
		}
	}
	return group, active, nil
}

// policyWatching evaluates p's thresholds and starts a retraining job
// when they say so.
func (s *Service) policyWatching(p *RetrainPolicy, st *api.PolicyState, now time.Time) {
	st.Checked = now
	group, active, err := s.policyGroup(p)
	if err != nil {
		st.Why = "could not read the inventory: " + err.Error()
		return
	}
	st.Devices = len(group)
	var drift, unknown float64
	var nDrift, nUnknown int
	for _, d := range group {
		if d.Drift != nil {
			drift += d.Drift.Score
			nDrift++
		}
		if u, ok := d.UnknownRate(); ok {
			unknown += u
			nUnknown++
		}
	}
	st.Drift, st.Unknown = ratio(drift, nDrift), ratio(unknown, nUnknown)
	yes := true
	list, err := s.Windows(api.WindowQuery{Model: p.Model, Labelled: &yes})
	if err != nil {
		st.Why = "could not read the labelled windows: " + err.Error()
		return
	}
	right := 0
	st.NewLabels = 0
	for _, w := range list.Windows {
		if w.LabelledAt.After(st.Since) {
			st.NewLabels++
			right += btoi(w.Label == w.Predicted)
		}
	}
	st.Accuracy = nil
	if st.NewLabels > 0 {
		a := 100 * float64(right) / float64(st.NewLabels)
		st.Accuracy = &a
	}
	var crossed, held []string
	check := func(name string, set bool, over bool, figure string) {
		switch {
		case !set:
		case over:
			crossed = append(crossed, figure)
		default:
			held = append(held, figure)
		}
	}
	check("drift", p.Drift > 0 && nDrift > 0, st.Drift >= p.Drift, fmt.Sprintf("drift %.3f (threshold %.3f)", st.Drift, p.Drift))
	check("unknown", p.Unknown > 0 && nUnknown > 0, st.Unknown >= p.Unknown, fmt.Sprintf("unknown %.1f%% (threshold %.1f%%)", 100*st.Unknown, 100*p.Unknown))
	check("accuracy", p.Accuracy > 0 && st.Accuracy != nil, st.Accuracy != nil && *st.Accuracy < p.Accuracy,
		fmt.Sprintf("accuracy on the new labels %.1f%% (threshold %.1f%%)", deref(st.Accuracy), p.Accuracy))
	need := cmp.Or(p.MinLabels, DefaultPolicyLabels)
	switch {
	case len(group) == 0:
		st.Why = fmt.Sprintf("no device runs model %s in the group %s", p.Model, rollout.SelectorText(p.Selector))
		return
	case len(crossed) == 0:
		st.Why = "no threshold crossed: " + strings.Join(held, ", ")
		return
	case st.NewLabels < need:
		st.Why = fmt.Sprintf("%s crossed, but %d of the %d new labels needed", strings.Join(crossed, ", "), st.NewLabels, need)
		return
	}
	job, err := s.StartTraining(api.TrainRequest{Dataset: p.Dataset, ModelID: p.Model, Retrain: true, Active: active})
	if err != nil {
		st.Why = fmt.Sprintf("%s crossed with %d new labels; the retraining could not start: %v", strings.Join(crossed, ", "), st.NewLabels, err)
		return
	}
	st.Stage, st.Job, st.Trigger, st.Since = PolicyTraining, job.ID, now, now
	st.Why = fmt.Sprintf("%s crossed with %d new labels: retraining (job %s)", strings.Join(crossed, ", "), st.NewLabels, job.ID)
}

// policyTraining waits for the policy's job.
func (s *Service) policyTraining(st *api.PolicyState, now time.Time) {
	j, err := s.TrainingJob(st.Job)
	switch {
	case err != nil:
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("retraining job %s: %v", st.Job, err)
	case !j.State.Done():
	case j.State != api.TrainSucceeded || j.Retrain == nil:
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("retraining job %s %s: %s", st.Job, j.State, j.Error)
	case !j.Retrain.Better:
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("retraining job %s proposed no challenger: %s", st.Job, j.Retrain.Why)
	default:
		st.Stage, st.Challenger, st.Release = PolicySigning, j.Bundle, j.Request.Release
		if st.Release == 0 {
			st.Release = j.Retrain.ActiveRelease + 1
		}
		st.Why = fmt.Sprintf("challenger ready (job %s, release %d): %s; sign it offline and publish it: tritctl remote-train … or GET /v1/train/%s/bundle, tritctl bundle sign, tritctl publish",
			st.Job, st.Release, j.Retrain.Why, st.Job)
	}
}

// policySigning waits for the challenger's signed release and opens its
// rollout: shadow on the group, promotion held for an approval.
func (s *Service) policySigning(p *RetrainPolicy, st *api.PolicyState, now time.Time) {
	m, err := s.reg.Model(p.Model)
	if err != nil {
		return // not even one release yet: nothing published
	}
	hash, ok := m.Releases[st.Release]
	if !ok {
		return
	}
	group, _, err := s.policyGroup(p)
	if err != nil || len(group) == 0 {
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("release %d published, but no device of the group runs model %s to shadow it", st.Release, p.Model)
		return
	}
	ids := make([]string, len(group))
	for i, d := range group {
		ids[i] = d.ID
	}
	shadow := p.Shadow
	shadow.Phases = 1
	id := rolloutIDFor(p.Model, st.Release)
	r, err := s.createRollout(api.RolloutRequest{ID: id, Bundle: hash, Devices: ids, Pace: api.Pace{Phases: []api.Phase{{Percent: 100}}}, Shadow: &shadow},
		access.Principal{Name: "policy:" + p.Model}, func(r *rollout.Rollout) { r.Approval = &api.Approval{After: len(r.Order), Promotion: true} })
	if err != nil {
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("release %d published; its rollout could not be opened: %v", st.Release, err)
		return
	}
	st.Stage, st.Rollout = PolicyShadowing, r.ID
	st.Why = fmt.Sprintf("release %d (bundle %s) shadowed on %d devices by rollout %s; it is promoted only once an operator approves it (tritctl rollout approve %s)",
		st.Release, hash[:12], len(ids), r.ID, r.ID)
}

// rolloutIDFor names the rollout of model's release: "retrain-", the
// model ID's characters that a rollout ID allows, "-r" and the release.
func rolloutIDFor(model string, release uint64) string {
	clean := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, model)
	id := fmt.Sprintf("retrain-%s-r%d", clean, release)
	if wire.CheckRolloutID(id) != nil {
		id = fmt.Sprintf("retrain-r%d", release)
	}
	return id
}

// policyShadowing waits for the policy's rollout to end.
func (s *Service) policyShadowing(st *api.PolicyState, now time.Time) {
	r, err := s.GetRollout(st.Rollout)
	switch {
	case err != nil:
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("rollout %s: %v", st.Rollout, err)
	case r.State.Done():
		st.Stage, st.Why = PolicyWatching, fmt.Sprintf("rollout %s %s: %s", r.ID, r.State, r.Reason)
	}
}

func ratio(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// policyRule describes p in words.
func policyRule(p *RetrainPolicy) string {
	var th []string
	if p.Drift > 0 {
		th = append(th, fmt.Sprintf("drift ≥ %.3f", p.Drift))
	}
	if p.Unknown > 0 {
		th = append(th, fmt.Sprintf("unknown ≥ %.1f%%", 100*p.Unknown))
	}
	if p.Accuracy > 0 {
		th = append(th, fmt.Sprintf("accuracy on new labels < %.1f%%", p.Accuracy))
	}
	return fmt.Sprintf("model %s on %s: %s, with at least %d new labels; checked every %v; original data %s",
		p.Model, rollout.SelectorText(p.Selector), strings.Join(th, " or "), cmp.Or(p.MinLabels, DefaultPolicyLabels), cmp.Or(p.Every, DefaultPolicyEvery), p.Dataset)
}
