package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Version is the agent's version (internal/buildinfo), "major.minor.patch"
// as bundles' minimum agent versions are.
var Version = buildinfo.Version

// Options are what Run takes from its caller besides the config. A nil
// *Options and zero fields mean defaults.
type Options struct {
	// Dialer connects to the broker; nil means paho with cfg.MQTT.
	Dialer Dialer
	// Logger; nil means slog's default logger.
	Logger *slog.Logger
	// SensorEnv is passed to the sensors (tests pass fakes); nil: hardware.
	SensorEnv *sensors.Env
	// Notify sends a systemd notification; nil means daemon.SdNotify
	// (which does nothing outside systemd).
	Notify func(state string) (bool, error)
	// Now is the clock for command and bundle expiry; nil means time.Now.
	Now func() time.Time
	// StartFresh replaces a damaged database (store.DamagedError) by an
	// empty one, keeping the damaged file aside (trit-agent run
	// --start-fresh): the gateway then starts as a new device.
	StartFresh bool
	// Reload, when a value arrives (SIGHUP), makes the agent re-read its
	// configuration with LoadConfig and apply it (reload.go).
	Reload <-chan os.Signal
	// LoadConfig reads the configuration for a reload; nil: no reloads.
	LoadConfig func() (*Config, error)
	// LogLevel, if not nil, is the logger's level; a reload sets it.
	LogLevel *slog.LevelVar
}

// Agent is a running trit-agent.
type Agent struct {
	cfg     *Config
	log     *slog.Logger
	db      *store.DB
	dialer  Dialer
	topics  wire.Topics
	target  wire.Target
	cmdKeys atomic.Pointer[wire.KeySet]
	relKeys atomic.Pointer[bundle.KeySet]
	in      atomic.Pointer[input] // replaced by reload
	// live is what a reload changes besides the input and keys.
	live     atomic.Pointer[liveConfig]
	reloaded chan struct{} // wakes the telemetry loop after a reload
	// applied is the configuration in force, for the next reload to
	// compare with (its goroutine only; a.cfg never changes).
	applied *Config
	loop    *loop
	sess    *session
	pub     *publisher
	inst    *installer
	notify  func(string) (bool, error)
	now     func() time.Time
	telSeq  uint64
	// confusionLeftOut is the shadow command ("rollout#seq") whose
	// confusion matrix the telemetry loop last left out, so the warning
	// is logged once a shadow (queueTelemetry's goroutine only).
	confusionLeftOut string
	// requests carries fleet requests from the MQTT handler to serveRequests.
	requests chan []byte
	// fetches are bundles awaited by dry runs, by hash (fetchMu).
	fetchMu sync.Mutex
	fetches map[string]chan []byte
	// instance is the database's instance ID (store.Instance), in every
	// state and will: a new database is a new life of the device.
	instance string
	// clock stamps states and events (wire.Clock).
	clock *deviceClock
	// unloadable is the committed model that did not load (runCommitted),
	// nil while it runs: the state reports it beside what runs instead.
	unloadable atomic.Pointer[wire.UnloadableModel]
	// stateMu makes a state's stamp and its contents one step: a state
	// stamped later never describes an earlier moment than one stamped
	// before it.
	stateMu sync.Mutex
}

// Run runs the agent until ctx is done. It returns an error only for a
// failure at start-up (database, keys, sensors config); once running, every
// fault (broker, sensor, bad bundle) is logged, reported and retried.
func Run(ctx context.Context, cfg *Config, opt *Options) error {
	var o Options
	if opt != nil {
		o = *opt
	}
	a := &Agent{cfg: cfg, log: o.Logger, dialer: o.Dialer, notify: o.Notify, now: o.Now}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.log = a.log.With("device", cfg.DeviceID)
	if a.notify == nil {
		a.notify = func(s string) (bool, error) { return daemon.SdNotify(false, s) }
	}
	if a.now == nil {
		a.now = time.Now
	}
	var err error
	if a.topics, err = wire.NewTopics(cfg.Fleet); err != nil {
		return err
	}
	a.target = wire.Target{Fleet: cfg.Fleet, Device: cfg.DeviceID}
	if err := a.loadKeys(cfg); err != nil {
		return err
	}
	a.live.Store(newLive(cfg))
	a.applied = cfg
	a.reloaded = make(chan struct{}, 1)
	if a.dialer == nil {
		d, err := NewPahoDialer(&cfg.MQTT)
		if err != nil {
			return err
		}
		d.MaxPacket = MaxPacket(cfg.Install.MaxBundleBytes)
		a.dialer = d
		if cn := wire.ClientCertName(d.TLS); cn != "" && cn != cfg.DeviceID {
			a.log.Warn("mqtt.cert_file names another identity: trit's Mosquitto configuration makes the certificate's common name the client ID and user name, and its ACL then refuses this device's topics; issue the certificate with `tritctl certs client --id "+cfg.DeviceID+"`",
				"common_name", cn, "device_id", cfg.DeviceID)
		}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	a.db, err = store.Open(cfg.DBPath(), &store.Options{OutboxMaxBytes: cfg.Telemetry.OutboxMaxBytes, StartFresh: o.StartFresh})
	if errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("%w\nTo start this gateway as a new device, run trit-agent run --start-fresh once, or move the file aside; see docs/OPERATIONS.md \"Recovery\"", err)
	}
	if err != nil {
		return err
	}
	defer a.db.Close()
	if aside := a.db.MovedAside(); aside != "" {
		a.log.Warn("the database was damaged: it was moved aside and the agent starts with an empty one (session 1, no model, no anti-rollback floor)",
			"db", cfg.DBPath(), "damaged_file", aside)
	}
	if a.instance, err = a.db.Instance(); err != nil {
		// Not fatal: the states then carry no instance, as older agents'.
		a.log.Error("cannot read the database instance ID", "err", err)
	}
	if a.clock, err = newDeviceClock(a.db.NextSession); err != nil {
		// Not fatal: states and events then carry no clock, as older agents'.
		a.log.Error("cannot reserve a boot number for the device clock", "err", err)
	}
	in, err := openInput(cfg.Sensors, cfg.Features, o.SensorEnv)
	if err != nil {
		return err
	}
	a.in.Store(in)
	defer func() { a.in.Load().Close() }()
	a.loop = &loop{in: &a.in, stats: newStats(time.Now()), log: a.log}
	if m := cfg.Models; m.SamplesMaxBytes > 0 {
		a.loop.samples = newSampleRing(m.SamplesMaxBytes, m.SampleEvery, m.LowMargin)
		if data, err := a.db.Stat(store.StatSamples); err == nil && data != nil && !a.loop.samples.restore(data) {
			a.log.Warn("stored samples do not decode; starting with none")
		}
	}
	if ls := cfg.LabelSource; ls != nil {
		if !slices.Contains(in.channels, ls.Channel) {
			return &ConfigError{Key: "label_source.channel", Msg: fmt.Sprintf("%q: no configured sensor provides it (the sensors give %s)", ls.Channel, strings.Join(in.channels, ", "))}
		}
		a.loop.labels = newLabelRing(*ls)
		if data, err := a.db.Stat(store.StatLabels); err == nil && data != nil && !a.loop.labels.restore(data) {
			a.log.Warn("stored labelled windows do not decode; starting with none")
		}
		// Whatever the source labelled since the last interval is stored
		// when the agent stops, so a restart loses none of it.
		defer a.storeLabels()
	}
	if m := cfg.Models; m.HistoryMaxBytes > 0 {
		a.loop.history = newSampleRing(m.HistoryMaxBytes, 1, -1)
		if data, err := a.db.Stat(store.StatHistory); err == nil && data != nil && !a.loop.history.restore(data) {
			a.log.Warn("stored window history does not decode; starting with none")
		}
	}
	a.requests = make(chan []byte, 4)
	a.fetches = map[string]chan []byte{}
	a.sess = newSession(a)
	a.pub = newPublisher(a)
	a.inst = &installer{a: a, box: newInbox(), retry: make(chan struct{}, 1)}
	a.log.Info("trit-agent starting", "version", Version, "fleet", cfg.Fleet, "db", cfg.DBPath(), "broker", strings.Join(cfg.MQTT.Addresses(), " "))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	spawn(func(ctx context.Context) { a.loop.run(ctx) })
	a.recoverInstall(ctx)
	a.loadShadow()
	spawn(a.pruneJobs)
	spawn(a.sess.run)
	spawn(a.pub.run)
	spawn(a.inst.run)
	spawn(a.telemetry)
	spawn(a.watchdog)
	spawn(a.serveRequests)
	a.notify(daemon.SdNotifyReady)
	a.log.Info("trit-agent ready")
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-o.Reload:
			a.reload(ctx, &o)
		}
	}
	a.notify(daemon.SdNotifyStopping)
	a.log.Info("trit-agent stopping")
	a.in.Load().Close() // interrupts a sensor read
	wg.Wait()
	return nil
}

// recoverInstall finishes an install interrupted by a crash or power loss:
// a model left pending its health check is checked again now, then
// committed or rolled back. Otherwise the committed model runs, or the
// previous one if it does not load (runCommitted).
func (a *Agent) recoverInstall(ctx context.Context) {
	active, _, err := a.db.Slots()
	if err != nil {
		a.log.Error("cannot read the model slots", "err", err)
		return
	}
	if active == nil || active.State != store.InstallPending {
		a.runCommitted()
		return
	}
	a.log.Warn("resuming an interrupted install: health check", "model", active.ModelID, "release", active.Release, "rollout", active.RolloutID)
	ref, jerr := a.inst.healthCheck(ctx, active.Hash, nil, nil)
	if active.RolloutID != "" && ctx.Err() == nil {
		cmd := &wire.Command{Rollout: active.RolloutID, Seq: active.Seq, Bundle: active.Hash}
		a.inst.finish(cmd, jerr, ref)
	}
}

// dispatch routes an incoming message; it runs on the MQTT client's
// goroutine and never blocks.
func (a *Agent) dispatch(m Message) {
	t, err := wire.ParseTopic(m.Topic)
	if err != nil || t.Fleet != a.cfg.Fleet {
		a.log.Warn("message on an unexpected topic ignored", "topic", m.Topic)
		return
	}
	switch {
	case t.Kind == wire.KindDesired && t.Device == a.cfg.DeviceID:
		if len(m.Payload) == 0 {
			return // retained command cleared
		}
		a.inst.box.putDesired(m.Payload)
	case t.Kind == wire.KindAcks && t.Device == a.cfg.DeviceID:
		a.pub.ack(m.Payload)
	case t.Kind == wire.KindRequests && t.Device == a.cfg.DeviceID:
		select {
		case a.requests <- m.Payload:
		default:
			a.log.Warn("request dropped: too many waiting")
		}
	case t.Kind == wire.KindBundle:
		a.inst.box.putBundle(t.Hash, m.Payload)
		a.fetchMu.Lock()
		if c := a.fetches[t.Hash]; c != nil {
			select {
			case c <- m.Payload:
			default:
			}
		}
		a.fetchMu.Unlock()
	default:
		a.log.Warn("message on an unexpected topic ignored", "topic", m.Topic)
	}
}

// emit queues a job event in the outbox and, if record, records the job.
// The event is queued first: after a crash in between, the job runs again
// and the event is sent twice (receivers dedupe by ID), never lost.
func (a *Agent) emit(ev *wire.Event, record bool) {
	ev.Device = a.cfg.DeviceID
	ev.Time = a.now().UnixMilli()
	ev.Clock = a.clock.stamp()
	payload, err := marshalEvent(ev)
	if err == nil {
		// A priority message: telemetry never pushes it out of the outbox,
		// and it is written from the store's reserve when the disk is full.
		err = a.db.Enqueue(store.OutboxMsg{Topic: a.topics.Events(a.cfg.DeviceID), Payload: payload, QoS: 1, Priority: true})
	}
	if err != nil {
		a.log.Error("job event not queued", "id", ev.ID, "err", err)
	}
	if record {
		err := a.db.PutJob(store.Job{RolloutID: ev.Rollout, Seq: ev.Seq, State: ev.State, Reason: ev.Reason})
		if err != nil && !errors.Is(err, store.ErrJobFinished) {
			a.log.Error("job not recorded", "id", ev.ID, "err", err)
		}
	}
	a.log.Info("job event", "id", ev.ID, "code", ev.Code)
	a.pub.kickNow()
}

// serveRequests answers the fleet's signed requests, one at a time.
func (a *Agent) serveRequests(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-a.requests:
			a.serveRequest(ctx, p)
		}
	}
}

// serveRequest verifies one request and queues its response. A request
// that does not verify gets no answer beyond a log line.
func (a *Agent) serveRequest(ctx context.Context, payload []byte) {
	req, err := wire.VerifyRequest(payload, a.cmdKeys.Load(), a.target, a.now())
	if err != nil {
		a.log.Warn("request refused", "err", err)
		return
	}
	resp := &wire.Response{Device: a.cfg.DeviceID, ID: req.ID, Kind: req.Kind}
	switch {
	case req.Kind == wire.RequestPlan:
		resp.Plan, err = a.plan(ctx, req.Bundle)
		if err != nil {
			resp.Error = err.Error()
		}
	case req.Kind == wire.RequestLabels:
		if a.loop.labels == nil {
			resp.Error = "this device has no label source ([label_source])"
			break
		}
		a.loop.labels.ack(req.After) // the fleet stores those
		resp.Labels = a.loop.labels.set()
	case a.loop.samples == nil:
		resp.Error = "this device keeps no samples (models.samples_max_bytes = -1)"
	default:
		set := a.loop.samples.set()
		if r := a.loop.cur.Load(); r != nil {
			ref := r.ref
			set.Model = &ref
		}
		if len(set.Features) == 0 {
			resp.Error = "no samples kept yet"
			break
		}
		resp.Samples = set
	}
	data, err := resp.Marshal()
	for err == nil && len(data) > wire.MaxResponseSize && resp.Samples != nil && len(resp.Samples.Samples) > 0 {
		// Estimates bound the ring below one message; never send more.
		k := max(1, len(resp.Samples.Samples)/10)
		resp.Samples.Samples = resp.Samples.Samples[k:]
		resp.Samples.Dropped += uint64(k)
		data, err = resp.Marshal()
	}
	for err == nil && len(data) > wire.MaxResponseSize && resp.Labels != nil && len(resp.Labels.Windows) > 1 {
		// The oldest first; the rest wait for the next request.
		resp.Labels.Windows = resp.Labels.Windows[:len(resp.Labels.Windows)*9/10]
		resp.Labels.More = true
		data, err = resp.Marshal()
	}
	if err == nil {
		err = a.db.Enqueue(store.OutboxMsg{Topic: a.topics.Responses(a.cfg.DeviceID), Payload: data, QoS: 1})
	}
	if err != nil {
		a.log.Error("response not queued", "id", req.ID, "err", err)
		return
	}
	a.log.Info("request answered", "id", req.ID, "kind", req.Kind, "bytes", len(data))
	a.pub.kickNow()
}

// storeLabels writes the label source's waiting windows to the database
// if they changed.
func (a *Agent) storeLabels() {
	if a.loop.labels == nil {
		return
	}
	if data, ok := a.loop.labels.encodeIfDirty(); ok {
		if err := a.db.PutStat(store.StatLabels, data); err != nil {
			a.log.Warn("labelled windows not stored", "err", err)
		}
	}
}

// state builds the device's State payload.
func (a *Agent) state(session uint64, online bool) ([]byte, error) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	s := &wire.State{Device: a.cfg.DeviceID, Session: session, Online: online, Instance: a.instance, Clock: a.clock.stamp(), Time: a.now().Unix(),
		AgentVersion: Version, Hardware: a.live.Load().hardware, Labels: a.live.Load().labels, Health: "ok"}
	if ls := a.cfg.LabelSource; ls != nil {
		s.LabelSource = ls.Name
	}
	if seq, err := a.highestSeq(); err == nil {
		s.HighestSeq = seq
	}
	active, previous, err := a.db.Slots()
	cur := a.loop.cur.Load()
	u := a.unloadable.Load()
	if err == nil && active != nil && u != nil && u.Bundle == active.Hash && (cur == nil || cur.ref.Bundle != active.Hash) {
		// The committed model does not load (runCommitted): the state
		// names what runs instead, if anything, and what does not load.
		s.Unloadable = u
		if cur != nil {
			r := cur.ref
			s.Model = &r
			s.Health = "degraded"
		}
		if previous != nil && (cur == nil || cur.ref.Bundle != previous.Hash) {
			r := refOf(previous)
			s.Previous = &r
		}
	} else if err == nil {
		if active != nil {
			r := refOf(active)
			s.Model = &r
		}
		if previous != nil {
			r := refOf(previous)
			s.Previous = &r
		}
	}
	if sh, err := a.db.Shadow(); err == nil && sh != nil {
		r := refOf(sh)
		s.Shadow = &r
	}
	if s.Model == nil || cur == nil {
		s.Health = "no-model"
	}
	for _, h := range a.in.Load().health() {
		s.Sensors = append(s.Sensors, wire.SensorHealth{Sensor: h.Sensor, State: string(h.State), Since: h.Since.Unix(), LastError: h.LastError, Failures: h.Failures})
		if h.State != sensors.StateOK {
			s.Health = "degraded"
		}
	}
	if st, err := a.db.OutboxStats(); err == nil {
		s.Outbox = &wire.OutboxInfo{Count: st.Count, Bytes: st.Bytes, Dropped: st.Dropped, MaxBytes: st.MaxBytes}
	}
	return s.Marshal()
}

// telemetry queues a report every telemetry.interval and republishes the
// state when sensor health changes (checked every healthCheckEvery) or the
// outbox dropped messages (so the fleet sees data loss in the retained
// state, not only in telemetry that may itself be dropped).
func (a *Agent) telemetry(ctx context.Context) {
	interval := a.live.Load().interval
	tick := time.NewTicker(interval)
	defer tick.Stop()
	healthTick := time.NewTicker(healthCheckEvery)
	defer healthTick.Stop()
	var sw sensorWatch
	var lastDropped uint64
	failures := newRepeatLimiter(telemetryErrorEvery)
	statFailures := newRepeatLimiter(telemetryErrorEvery)
	if st, err := a.db.OutboxStats(); err == nil {
		lastDropped = st.Dropped
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.reloaded:
			if d := a.live.Load().interval; d != interval {
				interval = d
				tick.Reset(d)
			}
			continue
		case <-healthTick.C:
			if a.checkSensors(&sw) {
				a.sess.publishState(ctx)
			}
			continue
		case <-tick.C:
		}
		_, _, session := a.sess.current()
		if session == 0 {
			session, _ = a.db.Session()
		}
		// Never below the process's boot number: a report made before the
		// first connection would otherwise carry the previous process's
		// last session, whose seq 1, 2, … are already taken.
		boot := a.clock.bootSession()
		t := &wire.Telemetry{Device: a.cfg.DeviceID, Session: max(session, boot, 1), Boot: boot}
		cut, counted := a.loop.stats.snapshot(time.Now, t)
		// Intervals a model change cut short go first, each its own report
		// naming the model that made its predictions.
		for i := range cut {
			c := &cut[i]
			a.telSeq++
			c.Device, c.Session, c.Boot, c.Seq = t.Device, t.Session, t.Boot, a.telSeq
			a.queueTelemetry(c, failures)
		}
		a.telSeq++
		t.Seq = a.telSeq
		if r := a.loop.cur.Load(); r != nil {
			a.warnExpired(r)
			if r.sc.drift != nil {
				t.Drift = r.sc.drift.report()
			}
			if counted == nil {
				counted = r // no prediction: the errors, if any, are the active model's
			}
		}
		if counted != nil {
			ref := counted.ref
			t.Model = &ref
		}
		if sh := a.loop.shadow.Load(); sh != nil {
			t.Shadow = sh.report()
		}
		dropsChanged, maxBytes := false, uint64(0)
		if st, err := a.db.OutboxStats(); err == nil {
			t.Dropped, maxBytes = st.Dropped, st.MaxBytes
			dropsChanged = st.Dropped != lastDropped
			lastDropped = st.Dropped
		}
		a.storeLabels()
		for name, ring := range map[string]*sampleRing{store.StatSamples: a.loop.samples, store.StatHistory: a.loop.history} {
			if ring == nil {
				continue
			}
			if data, ok := ring.encodeIfDirty(); ok {
				if err := a.db.PutStat(name, data); err != nil {
					// A full disk fails every interval: rate-limited as telemetry.
					if log, since := statFailures.fail(time.Now()); log {
						a.log.Warn("kept windows not stored; repeats are counted, not logged", "ring", name, "err", err, "failed_since_last_log", since)
					}
				} else {
					statFailures.ok()
				}
			}
		}
		a.queueTelemetry(t, failures)
		a.pub.kickNow()
		if a.checkSensors(&sw) || dropsChanged {
			if dropsChanged {
				a.log.Warn("outbox full: oldest queued messages dropped", "dropped_total", lastDropped, "max_bytes", maxBytes)
			}
			a.sess.publishState(ctx)
		}
	}
}

// queueTelemetry puts t in the outbox, its class counts cut to what the
// fleet accepts (marshalTelemetry). A full disk fails every report:
// failures says so once, then at most every telemetryErrorEvery with a
// count, and once more when it ends.
func (a *Agent) queueTelemetry(t *wire.Telemetry, failures *repeatLimiter) {
	msg := "telemetry not queued (is the disk full?); repeats are counted, not logged"
	payload, leftOut, err := marshalTelemetry(t)
	if leftOut && t.Shadow != nil {
		if k := fmt.Sprintf("%s#%d", t.Shadow.Rollout, t.Shadow.Seq); k != a.confusionLeftOut {
			a.confusionLeftOut = k
			a.log.Warn("shadow report sent without its confusion matrix: with it the report is above the fleet's cap; a divergence gate on this rollout cannot pass",
				"rollout", t.Shadow.Rollout, "max_bytes", wire.MaxTelemetrySize)
		}
	}
	if err == nil {
		err = a.db.Enqueue(store.OutboxMsg{Topic: a.topics.Telemetry(a.cfg.DeviceID), Payload: payload, QoS: 1})
	} else {
		msg = "telemetry not queued; repeats are counted, not logged"
	}
	if err != nil {
		if log, since := failures.fail(time.Now()); log {
			a.log.Error(msg, "err", err, "failed_since_last_log", since, "seq", t.Seq)
		}
	} else if n := failures.ok(); n > 0 {
		a.log.Info("telemetry queued again", "reports_lost", n)
	}
}

// watchdog pings systemd's watchdog at half its interval, but only while
// the inference loop makes progress, so a hung loop gets the agent
// restarted (WatchdogSec in systemd/trit-agent.service).
func (a *Agent) watchdog(ctx context.Context) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		last := time.Unix(0, a.loop.progress.Load())
		if time.Since(last) < interval {
			a.notify(daemon.SdNotifyWatchdog)
		} else {
			a.log.Error("inference loop made no progress; not feeding the watchdog", "last_cycle", last)
		}
	}
}
