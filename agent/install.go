package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// crashHook, when set (by tests only), is called at named points of an
// install so a test can kill the process exactly there.
var crashHook func(point string)

func crashPoint(name string) {
	if crashHook != nil {
		crashHook(name)
	}
}

// inbox receives desired commands and bundles from the MQTT handler without
// blocking it: only the latest desired command and the awaited bundle are
// kept.
type inbox struct {
	mu      sync.Mutex
	desired []byte
	want    string // hash of the bundle being fetched
	bundle  []byte
	dNote   chan struct{}
	bNote   chan struct{}
}

func newInbox() *inbox {
	return &inbox{dNote: make(chan struct{}, 1), bNote: make(chan struct{}, 1)}
}

func (b *inbox) putDesired(p []byte) {
	b.mu.Lock()
	b.desired = p
	b.mu.Unlock()
	notify(b.dNote)
}

func (b *inbox) takeDesired() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.desired
	b.desired = nil
	return p
}

func (b *inbox) putBundle(hash string, p []byte) {
	b.mu.Lock()
	if hash != b.want {
		b.mu.Unlock()
		return
	}
	b.bundle = p
	b.mu.Unlock()
	notify(b.bNote)
}

func (b *inbox) expect(hash string) {
	b.mu.Lock()
	b.want, b.bundle = hash, nil
	b.mu.Unlock()
	select { // drop a stale notification
	case <-b.bNote:
	default:
	}
}

func (b *inbox) takeBundle() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.bundle
	b.bundle = nil
	return p
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// jobError ends a job in FAILED or REJECTED with a reason code.
type jobError struct {
	state      wire.JobState
	code       string
	err        error
	highestSeq uint64 // superseded: the device's highest sequence
}

func (e *jobError) Error() string { return fmt.Sprintf("%s (%s): %v", e.state, e.code, e.err) }

func reject(code string, format string, args ...any) *jobError {
	return &jobError{state: wire.JobRejected, code: code, err: fmt.Errorf(format, args...)}
}

func failJob(code string, format string, args ...any) *jobError {
	return &jobError{state: wire.JobFailed, code: code, err: fmt.Errorf(format, args...)}
}

// installer runs deployment commands one at a time.
type installer struct {
	a   *Agent
	box *inbox
	// retry asks for the committed model to be run again if it did not
	// load (a reload may have fixed why), between two installs.
	retry chan struct{}
}

func (in *installer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in.retry:
			in.a.retryCommitted(ctx)
			continue
		case <-in.box.dNote:
		}
		if p := in.box.takeDesired(); p != nil {
			in.handle(ctx, p)
		}
	}
}

// handle processes one desired-command payload.
func (in *installer) handle(ctx context.Context, payload []byte) {
	a := in.a
	raw, err := wire.DecodeCommand(payload)
	if err != nil {
		a.log.Warn("deployment command refused: malformed", "err", err)
		return
	}
	// The retained command is delivered again on every connection: a job
	// that already ended is done, whatever its expiry says now.
	if j, err := a.db.Job(raw.Rollout, raw.Seq); err == nil && j.State.Terminal() {
		a.log.Debug("deployment command already handled", "rollout", raw.Rollout, "seq", raw.Seq, "state", j.State)
		return
	}
	// Verify the value just decoded: the command is decoded once.
	if err := raw.Verify(a.cmdKeys.Load(), a.target, a.now()); err != nil {
		code := wire.CodeCommandInvalid
		switch {
		case errors.Is(err, wire.ErrUnknownKey), errors.Is(err, wire.ErrSignature):
			code = wire.CodeCommandSignature
		case errors.Is(err, wire.ErrExpired):
			code = wire.CodeCommandExpired
		}
		// Not recorded as a job: an unverified command must not be able to
		// mark the real (rollout, seq) as finished.
		a.log.Warn("deployment command rejected", "rollout", raw.Rollout, "seq", raw.Seq, "code", code, "err", err)
		a.emit(&wire.Event{Rollout: raw.Rollout, Seq: raw.Seq, State: wire.JobRejected, Code: code, Reason: err.Error(), Bundle: raw.Bundle}, false)
		return
	}
	cmd := raw
	log := a.log.With("rollout", cmd.Rollout, "seq", cmd.Seq, "bundle", cmd.Bundle[:12])
	if max, err := a.highestSeq(); err == nil && cmd.Seq < max {
		// The event carries our highest sequence: a fleet whose counter fell
		// behind (a restored database) sends the command again above it.
		jerr := reject(wire.CodeSuperseded, "sequence %d is below %d, already received", cmd.Seq, max)
		jerr.highestSeq = max
		in.finish(cmd, jerr, nil)
		return
	}
	log.Info("deployment command accepted", "rollback", cmd.Rollback, "mode", cmd.Mode, "expires", cmd.Expiry().Format(time.RFC3339))
	var ref *wire.ModelRef
	var jerr *jobError
	if cmd.Mode == wire.ModeShadow {
		jerr = in.shadow(ctx, cmd)
	} else {
		ref, jerr = in.install(ctx, cmd)
	}
	if ctx.Err() != nil {
		return // shutting down: the job resumes at the next start
	}
	in.finish(cmd, jerr, ref)
}

// finish emits the terminal event of a job and records it.
func (in *installer) finish(cmd *wire.Command, jerr *jobError, ref *wire.ModelRef) {
	a := in.a
	ev := &wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, Bundle: cmd.Bundle, State: wire.JobSucceeded, Model: ref}
	if jerr != nil {
		ev.State, ev.Code, ev.Reason, ev.HighestSeq = jerr.state, jerr.code, jerr.err.Error(), jerr.highestSeq
		a.log.Warn("install ended", "rollout", cmd.Rollout, "seq", cmd.Seq, "state", ev.State, "code", ev.Code, "reason", ev.Reason)
	} else if ref != nil {
		a.log.Info("install succeeded", "rollout", cmd.Rollout, "seq", cmd.Seq, "model", ref.ID, "release", ref.Release)
	} else {
		a.log.Info("shadow started", "rollout", cmd.Rollout, "seq", cmd.Seq, "bundle", cmd.Bundle[:12])
	}
	a.emit(ev, true)
	a.sess.publishState(context.Background())
}

// install runs the state machine up to, not including, the terminal event.
func (in *installer) install(ctx context.Context, cmd *wire.Command) (*wire.ModelRef, *jobError) {
	a := in.a
	a.emit(&wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, State: wire.JobQueued, Bundle: cmd.Bundle}, true)

	data, err := a.db.Bundle(cmd.Bundle)
	if err != nil {
		a.emit(&wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, State: wire.JobDownloading, Bundle: cmd.Bundle}, true)
		var jerr *jobError
		data, jerr = in.download(ctx, cmd)
		if jerr != nil {
			return nil, jerr
		}
	}
	b, bind, jerr := in.check(cmd, data)
	if jerr != nil {
		return nil, jerr
	}
	a.emit(&wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, State: wire.JobInstalling, Bundle: cmd.Bundle}, true)
	crashPoint("before-put")
	if _, err := a.db.PutBundle(data); err != nil {
		return nil, failJob(wire.CodeStore, "store bundle: %v", err)
	}
	crashPoint("before-activate")
	meta := store.SlotMeta{ModelID: b.Header.ModelID, Release: b.Header.Release, RolloutID: cmd.Rollout, Seq: cmd.Seq, Rollback: cmd.Rollback}
	err = a.db.Activate(cmd.Bundle, meta)
	switch {
	case errors.Is(err, store.ErrAlreadyActive):
		active, _, serr := a.db.Slots()
		if serr == nil && active.State == store.InstallCommitted {
			// Committed, but maybe not running: a stored copy that
			// did not load at start (damaged; PutBundle just replaced
			// it). SUCCEEDED must mean the model runs.
			if cur := a.loop.cur.Load(); cur == nil || cur.ref.Bundle != active.Hash {
				r, code, lerr := a.load(active)
				if lerr != nil {
					return nil, failJob(code, "the active model does not load: %v", lerr)
				}
				a.loop.swap(r)
				a.unloadable.Store(nil)
				a.log.Info("model loaded", "model", active.ModelID, "release", active.Release, "bundle", active.Hash[:12])
			}
			ref := refOf(active)
			return &ref, nil
		}
		// pending: a previous run crashed before the health check ended
	case errors.Is(err, store.ErrReleaseTooOld):
		return nil, reject(wire.CodeReleaseTooOld, "%v", err)
	case err != nil:
		return nil, failJob(wire.CodeStore, "activate: %v", err)
	}
	if sh := a.loop.shadow.Load(); sh != nil && sh.bundle == cmd.Bundle {
		a.loop.shadow.Store(nil) // promoted: Activate cleared its slot
	}
	crashPoint("after-activate")
	return in.healthCheck(ctx, cmd.Bundle, b, bind)
}

// shadow runs a shadow command: the bundle is fetched and verified exactly
// as for an install and stored, then scored beside the active model on
// every window; nothing the device outputs changes. SUCCEEDED means the
// candidate is being scored (its reports come in telemetry).
func (in *installer) shadow(ctx context.Context, cmd *wire.Command) *jobError {
	a := in.a
	a.emit(&wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, State: wire.JobQueued, Bundle: cmd.Bundle}, true)
	active, _, err := a.db.Slots()
	switch {
	case err != nil:
		return failJob(wire.CodeStore, "%v", err)
	case active == nil:
		return reject(wire.CodeNoActive, "no active model to score a shadow candidate against")
	case active.Hash == cmd.Bundle:
		return reject(wire.CodeCommandInvalid, "bundle %.12s is the active model; nothing to shadow", cmd.Bundle)
	}
	data, err := a.db.Bundle(cmd.Bundle)
	if err != nil {
		a.emit(&wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, State: wire.JobDownloading, Bundle: cmd.Bundle}, true)
		var jerr *jobError
		if data, jerr = in.download(ctx, cmd); jerr != nil {
			return jerr
		}
	}
	b, bind, jerr := in.check(cmd, data)
	if jerr != nil {
		return jerr
	}
	a.emit(&wire.Event{Rollout: cmd.Rollout, Seq: cmd.Seq, State: wire.JobInstalling, Bundle: cmd.Bundle}, true)
	if _, err := a.db.PutBundle(data); err != nil {
		return failJob(wire.CodeStore, "store bundle: %v", err)
	}
	meta := store.SlotMeta{ModelID: b.Header.ModelID, Release: b.Header.Release, RolloutID: cmd.Rollout, Seq: cmd.Seq}
	if err := a.db.SetShadow(cmd.Bundle, meta); err != nil {
		return failJob(wire.CodeStore, "shadow slot: %v", err)
	}
	slot, err := a.db.Shadow()
	if err != nil || slot == nil {
		return failJob(wire.CodeStore, "shadow slot after set: %v", err)
	}
	r, code, err := a.run(b, bind, slot)
	if err != nil {
		a.loop.shadow.Store(nil)
		if cerr := a.db.ClearShadow(); cerr != nil {
			a.log.Error("cannot clear the shadow slot", "err", cerr)
		}
		return failJob(code, "%v", err)
	}
	a.startShadow(r, slot)
	return nil
}

// startShadow scores r beside the active model from now on.
func (a *Agent) startShadow(r *running, slot *store.Slot) {
	a.loop.shadow.Store(&shadowRun{r: r, rollout: slot.RolloutID, seq: slot.Seq, bundle: slot.Hash, lowMin: a.cfg.Models.LowMargin})
}

// loadShadow resumes scoring the stored shadow candidate, if any, at start.
func (a *Agent) loadShadow() {
	slot, err := a.db.Shadow()
	if err != nil || slot == nil {
		if err != nil {
			a.log.Error("cannot read the shadow slot", "err", err)
		}
		return
	}
	r, _, err := a.load(slot)
	if err != nil {
		a.log.Error("shadow candidate does not load; dropped", "model", slot.ModelID, "release", slot.Release, "err", err)
		if err := a.db.ClearShadow(); err != nil {
			a.log.Error("cannot clear the shadow slot", "err", err)
		}
		return
	}
	a.startShadow(r, slot)
	a.log.Info("shadow candidate resumed", "model", slot.ModelID, "release", slot.Release, "bundle", slot.Hash[:12])
}

// download fetches the bundle from its retained topic.
func (in *installer) download(ctx context.Context, cmd *wire.Command) ([]byte, *jobError) {
	a := in.a
	topic := a.topics.Bundle(cmd.Bundle)
	in.box.expect(cmd.Bundle)
	a.sess.want(ctx, topic)
	defer a.sess.unwant(context.Background(), topic)
	defer in.box.expect("")
	timer := time.NewTimer(a.cfg.Install.DownloadTimeout.Duration)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, failJob(wire.CodeDownloadTimeout, "agent stopping")
	case <-timer.C:
		return nil, failJob(wire.CodeDownloadTimeout, "bundle not received on %s within %v", topic, a.cfg.Install.DownloadTimeout.Duration)
	case <-in.box.bNote:
	}
	return in.box.takeBundle(), nil
}

// check verifies a bundle against the command and this device, without
// changing anything. It returns the decoded bundle and its binding to the
// sensors, which the health check runs (nothing is decoded or bound twice).
func (in *installer) check(cmd *wire.Command, data []byte) (*bundle.Bundle, *binding, *jobError) {
	a := in.a
	if max := a.cfg.Install.MaxBundleBytes; len(data) > max {
		return nil, nil, reject(wire.CodeOversize, "bundle is %d bytes, this device accepts at most %d", len(data), max)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != cmd.Bundle {
		return nil, nil, reject(wire.CodeHashMismatch, "bundle bytes hash to %s, the command names %s", got, cmd.Bundle)
	}
	b, err := bundle.Decode(data, &bundle.DecodeOptions{MaxSize: a.cfg.Install.MaxBundleBytes, Trusted: a.relKeys.Load(), Now: a.now})
	switch {
	case errors.Is(err, bundle.ErrUnknownKey), errors.Is(err, bundle.ErrSignature), errors.Is(err, bundle.ErrUnsigned):
		return nil, nil, reject(wire.CodeBundleSignature, "%v", err)
	case errors.Is(err, bundle.ErrTooLarge):
		return nil, nil, reject(wire.CodeOversize, "%v", err)
	case err != nil:
		return nil, nil, reject(wire.CodeBundleInvalid, "%v", err)
	}
	if err := b.Compat.CheckAgent(Version); err != nil {
		return nil, nil, reject(wire.CodeIncompatible, "%v", err)
	}
	if hw, mine := b.Compat.Hardware, a.live.Load().hardware; hw != "" && hw != mine {
		return nil, nil, reject(wire.CodeIncompatible, "bundle is for hardware %q, this device is %q", hw, mine)
	}
	bind, err := a.in.Load().bind(b.Compat.Features, b.Spec.NumFeatures())
	if err != nil {
		return nil, nil, reject(wire.CodeIncompatible, "features: %v", err)
	}
	if !cmd.Rollback {
		highest, err := a.db.HighestRelease(b.Header.ModelID)
		if err != nil {
			return nil, nil, failJob(wire.CodeStore, "%v", err)
		}
		active, _, _ := a.db.Slots()
		same := active != nil && active.Hash == cmd.Bundle
		if b.Header.Release < highest || (b.Header.Release == highest && highest > 0 && !same) {
			return nil, nil, reject(wire.CodeReleaseTooOld, "model %q release %d is not above %d, already installed (only a signed rollback may go back)",
				b.Header.ModelID, b.Header.Release, highest)
		}
	}
	return b, bind, nil
}

// healthCheck runs the active (pending) model, bundle hash as check
// decoded and bound it (b nil: an install resumed at start-up, decoded from
// the store): self-test, then health_cycles inference cycles. It commits on
// success and rolls back to the previous model otherwise.
func (in *installer) healthCheck(ctx context.Context, hash string, b *bundle.Bundle, bind *binding) (*wire.ModelRef, *jobError) {
	a := in.a
	active, _, err := a.db.Slots()
	if err != nil || active == nil {
		return nil, failJob(wire.CodeStore, "no active slot after activate: %v", err)
	}
	if active.Hash != hash {
		return nil, failJob(wire.CodeStore, "the active slot holds bundle %.12s, not %.12s", active.Hash, hash)
	}
	var r *running
	var code string
	if b != nil {
		r, code, err = a.run(b, bind, active)
	} else { // an install resumed at start-up: decode the stored bundle
		r, code, err = a.load(active)
	}
	if err == nil {
		old := a.loop.swap(r)
		crashPoint("during-health")
		err = in.cycles(ctx, r)
		if err != nil {
			code = wire.CodeHealthCheck
			a.loop.swap(old)
		}
	}
	if ctx.Err() != nil {
		return nil, failJob(wire.CodeHealthCheck, "agent stopping")
	}
	if err == nil {
		if err := a.db.Commit(); err != nil {
			return nil, failJob(wire.CodeStore, "commit: %v", err)
		}
		crashPoint("after-commit")
		a.unloadable.Store(nil)
		ref := refOf(active)
		ref.Install = string(store.InstallCommitted)
		return &ref, nil
	}
	a.log.Warn("health check failed; rolling back", "model", active.ModelID, "release", active.Release, "err", err)
	if rerr := a.db.Rollback(); rerr != nil {
		a.loop.swap(nil)
		return nil, failJob(code, "%v; and no rollback possible (%v): inference stopped", err, rerr)
	}
	a.runCommitted()
	if a.loop.cur.Load() == nil {
		return nil, failJob(code, "%v; rolled back to the previous model, which does not load: inference stopped", err)
	}
	return nil, failJob(code, "%v; rolled back to the previous model", err)
}

// cycles waits until r completed health_cycles inference cycles, failing at
// the first failed cycle or at health_timeout.
func (in *installer) cycles(ctx context.Context, r *running) error {
	cfg := in.a.cfg.Install
	deadline := time.Now().Add(cfg.HealthTimeout.Duration)
	for {
		if f := r.failed.Load(); f > 0 {
			return fmt.Errorf("%d inference cycle(s) failed with the new model", f)
		}
		if r.ok.Load() >= uint64(cfg.HealthCycles) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d inference cycles completed within %v", r.ok.Load(), cfg.HealthCycles, cfg.HealthTimeout.Duration)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// load builds the running model of a stored slot: decode (trusted keys),
// build, self-test, bind to the sensors.
func (a *Agent) load(s *store.Slot) (*running, string, error) {
	data, err := a.db.Bundle(s.Hash)
	if err != nil {
		return nil, wire.CodeStore, err
	}
	// Expiry gates installs only (check): a committed model whose bundle
	// expires later keeps running, see docs/OPERATIONS.md "Bundle expiry".
	b, err := bundle.Decode(data, &bundle.DecodeOptions{MaxSize: len(data), Trusted: a.relKeys.Load(), Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		return nil, wire.CodeBundleInvalid, err
	}
	bind, err := a.in.Load().bind(b.Compat.Features, b.Spec.NumFeatures())
	if err != nil {
		return nil, wire.CodeIncompatible, err
	}
	return a.run(b, bind, s)
}

// run builds the running model of a decoded, bound bundle in slot s and
// self-tests it.
func (a *Agent) run(b *bundle.Bundle, bind *binding, s *store.Slot) (*running, string, error) {
	m, err := inference.New(b.Spec)
	if err != nil {
		return nil, wire.CodeBundleInvalid, err
	}
	if err := bundle.SelfTest(m, b); err != nil {
		return nil, wire.CodeSelfTest, err
	}
	r := &running{model: m, bind: bind, names: b.Compat.Features, d: b.Spec.NumFeatures(), ref: refOf(s), expires: b.Header.ExpiresAt,
		sc: newScoring(m, a.cfg.Models.DriftWindows), th: thresholdsFor(m, a.cfg.Models), calibrated: m.Calibrated()}
	a.warnExpired(r)
	a.warnUncalibrated(r)
	return r, "", nil
}

// warnUncalibrated logs, once per loaded model, that the configuration's
// unknown thresholds do not apply to it: a model without a calibration
// reports no confidence and nothing unknown (thresholdsFor), so an
// operator who set models.min_confidence or models.max_novelty would
// otherwise see no unknown windows and not know why.
func (a *Agent) warnUncalibrated(r *running) {
	mc := a.cfg.Models
	if r.calibrated || (mc.MinConfidence == nil && mc.MaxNovelty == nil) {
		return
	}
	a.log.Warn("models.min_confidence and models.max_novelty do not apply to this model: its bundle has no calibration, so it reports no confidence and nothing unknown (train it with a calibration, the default, for unknown windows)",
		"model", r.ref.ID, "release", r.ref.Release)
}

// warnExpired logs, once per loaded model, that its bundle has expired.
func (a *Agent) warnExpired(r *running) {
	if r.expires.IsZero() || !a.now().After(r.expires) || !r.expiredLogged.CompareAndSwap(false, true) {
		return
	}
	a.log.Warn("the running model's bundle has expired; it keeps running (expiry only refuses installs): deploy a newer release",
		"model", r.ref.ID, "release", r.ref.Release, "expired_at", r.expires.UTC().Format(time.RFC3339))
}

// runCommitted puts the committed active model into the loop (none if
// there is none). When it does not load — its stored bundle is damaged (its
// bytes no longer match their hash, it does not decode, its signature
// fails) or no longer fits the configuration — the previous model runs
// instead if it loads: the device goes on classifying with the newest model
// it verified. Nothing stored changes: the damaged copy stays, for
// inspection, until a delivery of the same bundle replaces it and runs it
// (installer.install). One error line says what does not load and what
// runs instead; the state reports both (wire.State.Unloadable).
func (a *Agent) runCommitted() {
	active, previous, err := a.db.Slots()
	if err != nil {
		a.log.Error("cannot read the model slots; running no model", "err", err)
		a.loop.swap(nil)
		return
	}
	if active == nil {
		a.unloadable.Store(nil)
		a.loop.swap(nil)
		a.log.Info("no model installed; waiting for a deployment")
		return
	}
	r, _, err := a.load(active)
	if err == nil {
		a.unloadable.Store(nil)
		a.loop.swap(r)
		a.log.Info("model loaded", "model", active.ModelID, "release", active.Release, "bundle", active.Hash[:12])
		return
	}
	a.unloadable.Store(&wire.UnloadableModel{ModelRef: refOf(active), Error: cutText(err.Error(), wire.MaxUnloadableError)})
	args := []any{"model", active.ModelID, "release", active.Release, "bundle", active.Hash, "err", err}
	if previous == nil {
		a.loop.swap(nil)
		a.log.Error("active model does not load and there is no previous model: running no model", args...)
		return
	}
	if cur := a.loop.cur.Load(); cur != nil && cur.ref.Bundle == previous.Hash {
		r = cur // already the fallback (a retry after a reload)
	} else if r, _, err = a.load(previous); err != nil {
		a.loop.swap(nil)
		args = append(args, "previous_model", previous.ModelID, "previous_release", previous.Release, "previous_bundle", previous.Hash, "previous_err", err)
		a.log.Error("active model does not load, nor does the previous one: running no model", args...)
		return
	}
	a.loop.swap(r)
	args = append(args, "running_model", previous.ModelID, "running_release", previous.Release, "running_bundle", previous.Hash[:12])
	a.log.Error("active model does not load: running the previous model instead", args...)
}

// retryCommitted runs the committed active model again if it did not load
// and nothing was installed since: after a reload, which may have fixed
// what made it fail (release keys, sensors). It runs on the installer's
// goroutine, between installs.
func (a *Agent) retryCommitted(ctx context.Context) {
	u := a.unloadable.Load()
	if u == nil {
		return
	}
	active, _, err := a.db.Slots()
	if err != nil || active == nil || active.Hash != u.Bundle || active.State != store.InstallCommitted {
		return
	}
	a.runCommitted()
	a.sess.publishState(ctx)
}

func refOf(s *store.Slot) wire.ModelRef {
	return wire.ModelRef{ID: s.ModelID, Release: s.Release, Bundle: s.Hash, Install: string(s.State)}
}

// highestSeq is the highest command sequence this device recorded; it
// reads one counter (store.HighestJobSeq), not the job table, and survives
// pruning.
func (a *Agent) highestSeq() (uint64, error) {
	seq, err := a.db.HighestJobSeq()
	if err != nil {
		return 0, err
	}
	if active, _, err := a.db.Slots(); err == nil && active != nil {
		seq = max(seq, active.Seq)
	}
	return seq, nil
}

// pruneJobs deletes finished job records older than install.job_retention
// at start-up and then daily, so months of deployments do not grow the
// database without bound.
func (a *Agent) pruneJobs(ctx context.Context) {
	tick := time.NewTicker(24 * time.Hour)
	defer tick.Stop()
	for {
		n, err := a.db.PruneJobs(time.Now().Add(-a.cfg.Install.JobRetention.Duration))
		switch {
		case err != nil:
			a.log.Error("pruning old job records failed", "err", err)
		case n > 0:
			a.log.Info("old job records pruned", "count", n, "older_than", a.cfg.Install.JobRetention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
