package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

const (
	testFleet  = "plant-a"
	testDevice = "gw-001"
)

// keys holds a test's key files and private keys.
type keys struct {
	dir                string
	release, command   ed25519.PrivateKey
	releasePub, cmdPub string             // PEM paths
	other              ed25519.PrivateKey // trusted by nobody
}

func newKeys(t testing.TB) *keys {
	t.Helper()
	k := &keys{dir: t.TempDir()}
	gen := func(name string) (ed25519.PrivateKey, string) {
		priv, pub := filepath.Join(k.dir, name+".key"), filepath.Join(k.dir, name+".pub")
		if err := bundle.GenerateKey(priv, pub); err != nil {
			t.Fatal(err)
		}
		p, err := bundle.LoadPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		return p, pub
	}
	k.release, k.releasePub = gen("release")
	k.command, k.cmdPub = gen("command")
	k.other, _ = gen("other")
	return k
}

// testFeatures are the channels of the replay file and the model's inputs.
var testFeatures = []string{"x1", "x2", "x3"}

// writeReplay writes a CSV recording with testFeatures as columns.
func writeReplay(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(strings.Join(testFeatures, ",") + "\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f\n", rng.Float64()*2-1, rng.Float64()*2-1, rng.Float64()*2-1)
	}
	path := filepath.Join(dir, "replay.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type bundleOpts struct {
	modelID  string
	release  uint64
	features []string // nil: testFeatures
	hardware string
	signer   ed25519.PrivateKey
	seed     uint64
	expires  time.Time // zero: never
	created  time.Time // zero: an hour ago
	p        int       // embedding bits; zero: 64 (a bundle of a few hundred bytes)
	weights  uint64    // seeds the weights; zero: seed+release
	trees    int       // depth-3 oblivious trees before the random features (a format-3 bundle); zero: none
	planes   int       // the trees' leaf planes (more than 1: a format-4 bundle)
	// cal, when set, calibrates the model (a format-5 bundle) beside a
	// fingerprint of every kept column at rate 128/255.
	cal *inference.Calibration
}

// makeBundle builds a small signed two-class model bundle.
func makeBundle(t testing.TB, o bundleOpts) []byte {
	t.Helper()
	if o.modelID == "" {
		o.modelID = "vib"
	}
	if o.features == nil {
		o.features = testFeatures
	}
	if o.created.IsZero() {
		o.created = time.Now().Add(-time.Hour)
	}
	d, p := len(o.features), 64
	if o.p > 0 {
		p = o.p
	}
	ws := o.seed + o.release
	if o.weights != 0 {
		ws = o.weights
	}
	rng := rand.New(rand.NewPCG(ws, 9))
	var trees *inference.Trees
	if o.trees > 0 {
		trees = &inference.Trees{Depth: 3, Planes: o.planes}
		for range o.trees * trees.Depth {
			trees.Feature = append(trees.Feature, uint16(rng.IntN(d)))
			trees.Value = append(trees.Value, float32(rng.IntN(9)-4)/4) // float16-exact
		}
	}
	w := make([]int8, trees.Columns()+p)
	for j := range w {
		w[j] = int8(rng.IntN(3)) - 1
	}
	w[0] = 1
	sc := inference.Scaler{Lo: make([]float32, d), Hi: make([]float32, d)}
	for i := range d {
		sc.Lo[i], sc.Hi[i] = -1, 1
	}
	spec, err := inference.NewSpec(&inference.ModelSpec{Classes: []string{"normal", "fault"}, Scaler: sc, Trees: trees,
		Transform: inference.TransformSpec{Generator: inference.GeneratorV1, Seed: 42 + o.seed, Sigma: 1, D: d, P: p}},
		[][]int8{w}, []float32{0.5})
	if err != nil {
		t.Fatal(err)
	}
	spec.Features = o.features
	minAgent := "0.1.0"
	if o.cal != nil {
		fp := &inference.Fingerprint{}
		for i := range min(len(spec.Kept), inference.MaxFingerprint) {
			fp.Columns, fp.Rates = append(fp.Columns, int32(i)), append(fp.Rates, 128)
		}
		spec.Fingerprint, spec.Calibration, minAgent = fp, o.cal, bundle.MinAgentVersionFor(&inference.ModelSpec{Calibration: o.cal})
	}
	raw, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: o.modelID, Release: o.release, CreatedAt: o.created, ExpiresAt: o.expires},
		Compat: bundle.Compat{Features: o.features, MinAgentVersion: minAgent, Hardware: o.hardware},
		Spec:   spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.Sign(raw, o.signer)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// testConfig returns a validated config for a broker URL with short timings.
func testConfig(t testing.TB, k *keys, broker string) *Config {
	t.Helper()
	dir := t.TempDir()
	c := &Config{
		DeviceID: testDevice, Fleet: testFleet, StateDir: filepath.Join(dir, "state"),
		ReleaseKeys: []string{k.releasePub}, CommandKeys: []string{k.cmdPub},
		MQTT: MQTTConfig{Broker: broker, Timeout: Duration{Duration: 2 * time.Second}, ReconnectMin: Duration{Duration: 100 * time.Millisecond},
			ReconnectMax: Duration{Duration: time.Second}, KeepAlive: Duration{Duration: 2 * time.Second}},
		Install:   InstallConfig{DownloadTimeout: Duration{Duration: 5 * time.Second}, HealthCycles: 3, HealthTimeout: Duration{Duration: 5 * time.Second}},
		Telemetry: TelemetryConfig{Interval: Duration{Duration: 200 * time.Millisecond}, AckRetry: Duration{Duration: time.Second}},
		Sensors:   []sensors.Config{{Kind: "replay", Name: "s", File: writeReplay(t, dir), Rate: 50, Loop: true}},
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("TRIT_AGENT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startAgent runs an agent in-process; the returned stop waits for Run.
func startAgent(t testing.TB, cfg *Config, opt *Options) (stop func()) {
	t.Helper()
	if opt == nil {
		opt = &Options{}
	}
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, opt) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Errorf("agent did not stop within 15s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fleet is the test's stand-in for trit-fleet: a paho client that publishes
// bundles and signed commands, collects events, telemetry and states, and
// acknowledges events.
type fleet struct {
	t      testing.TB
	c      mqtt.Client
	topics wire.Topics
	k      *keys
	seq    uint64
	noAck  bool

	mu        sync.Mutex
	events    []*wire.Event
	telemetry []*wire.Telemetry
	states    []*wire.State
	responses []*wire.Response
	changed   chan struct{}
}

func newFleet(t testing.TB, broker string, k *keys) *fleet {
	t.Helper()
	return newFleetWith(t, broker, k, nil)
}

// newFleetWith is newFleet with extra client options (TLS, credentials).
func newFleetWith(t testing.TB, broker string, k *keys, opts func(*mqtt.ClientOptions)) *fleet {
	t.Helper()
	tp, _ := wire.NewTopics(testFleet)
	f := &fleet{t: t, topics: tp, k: k, changed: make(chan struct{}, 1)}
	o := mqtt.NewClientOptions().AddBroker(broker).SetClientID("fleet-test").SetCleanSession(false).
		SetAutoReconnect(true).SetMaxReconnectInterval(200 * time.Millisecond).SetConnectRetry(true).
		SetConnectRetryInterval(200 * time.Millisecond).SetResumeSubs(true).SetKeepAlive(2 * time.Second).
		SetOrderMatters(true)
	if opts != nil {
		opts(o)
	}
	o.SetOnConnectHandler(func(c mqtt.Client) {
		for _, kind := range []wire.Kind{wire.KindEvents, wire.KindTelemetry, wire.KindState, wire.KindResponses} {
			c.Subscribe(tp.AllDevices(kind), 1, f.handle)
		}
	})
	f.c = mqtt.NewClient(o)
	if tok := f.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("fleet connect: %v", tok.Error())
	}
	t.Cleanup(func() { f.c.Disconnect(100) })
	// Wait until the subscriptions are in place.
	deadline := time.Now().Add(5 * time.Second)
	for !f.c.IsConnectionOpen() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	return f
}

func (f *fleet) handle(c mqtt.Client, m mqtt.Message) {
	tp, err := wire.ParseTopic(m.Topic())
	if err != nil {
		return
	}
	f.mu.Lock()
	switch tp.Kind {
	case wire.KindEvents:
		if ev, err := wire.DecodeEvent(m.Payload()); err == nil {
			f.events = append(f.events, ev)
			if !f.noAck {
				a, _ := (&wire.Ack{Device: ev.Device, IDs: []string{ev.ID}}).Marshal()
				c.Publish(f.topics.Acks(ev.Device), 1, false, a)
			}
		} else {
			f.t.Errorf("bad event from agent: %v", err)
		}
	case wire.KindTelemetry:
		if tm, err := wire.DecodeTelemetry(m.Payload()); err == nil {
			f.telemetry = append(f.telemetry, tm)
		} else {
			f.t.Errorf("bad telemetry from agent: %v", err)
		}
	case wire.KindResponses:
		if r, err := wire.DecodeResponse(m.Payload()); err == nil {
			f.responses = append(f.responses, r)
		} else {
			f.t.Errorf("bad response from agent: %v", err)
		}
	case wire.KindState:
		if len(m.Payload()) == 0 {
			break
		}
		if st, err := wire.DecodeState(m.Payload()); err == nil {
			f.states = append(f.states, st)
		} else {
			f.t.Errorf("bad state from agent: %v", err)
		}
	}
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fleet) publish(topic string, payload []byte, retained bool) {
	f.t.Helper()
	tok := f.c.Publish(topic, 1, retained, payload)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		f.t.Fatalf("fleet publish %s: %v", topic, tok.Error())
	}
}

func (f *fleet) publishBundle(data []byte) string {
	h := hashOf(data)
	f.publish(f.topics.Bundle(h), data, true)
	return h
}

type cmdOpts struct {
	expired  bool
	rollback bool
	signer   ed25519.PrivateKey
	mode     string // wire.ModeShadow for a shadow command
}

// deploy publishes a signed command for bundle hash and returns it.
func (f *fleet) deploy(hash, rollout string, o cmdOpts) *wire.Command {
	f.t.Helper()
	f.seq++
	now := time.Now().Unix()
	c := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: hash, Rollout: rollout, Seq: f.seq,
		IssuedAt: now - 60, ExpiresAt: now + 3600, Rollback: o.rollback, Mode: o.mode}
	if o.expired {
		c.IssuedAt, c.ExpiresAt = now-7200, now-3600
	}
	signer := o.signer
	if signer == nil {
		signer = f.k.command
	}
	if err := c.Sign(signer); err != nil {
		f.t.Fatal(err)
	}
	b, _ := c.Marshal()
	f.publish(f.topics.Desired(testDevice), b, true)
	return c
}

// waitFor waits until cond (called with the lock held) is true.
func (f *fleet) waitFor(what string, d time.Duration, cond func() bool) {
	f.t.Helper()
	deadline := time.After(d)
	for {
		f.mu.Lock()
		ok := cond()
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			f.mu.Lock()
			var evs []string
			for _, e := range f.events {
				evs = append(evs, e.ID+" "+e.Code+" "+e.Reason)
			}
			f.mu.Unlock()
			f.t.Fatalf("timed out after %v waiting for %s; events so far:\n%s", d, what, strings.Join(evs, "\n"))
		}
	}
}

// terminal waits for the terminal event of command c and returns it.
func (f *fleet) terminal(c *wire.Command, d time.Duration) *wire.Event {
	f.t.Helper()
	var got *wire.Event
	f.waitFor(fmt.Sprintf("terminal event of %s/%d", c.Rollout, c.Seq), d, func() bool {
		for _, e := range f.events {
			if e.Rollout == c.Rollout && e.Seq == c.Seq && e.State.Terminal() {
				got = e
				return true
			}
		}
		return false
	})
	return got
}

// lastBoot is the boot number of the newest agent process whose state
// arrived so far (0: none): telemetry with a higher Boot is from a process
// started after it.
func (f *fleet) lastBoot() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var boot uint64
	for _, st := range f.states {
		boot = max(boot, st.Clock.Boot())
	}
	return boot
}

// waitPredictions waits until the telemetry reports that match counts at
// least n predictions. The loop records a window's prediction before it
// keeps the window (samples, labels), so n predictions reported mean n-1
// windows kept at least. A loaded machine makes its windows later, never
// fewer: tests wait for them instead of sleeping.
func (f *fleet) waitPredictions(what string, n uint64, match func(*wire.Telemetry) bool) {
	f.t.Helper()
	f.waitFor(fmt.Sprintf("%d predictions %s", n, what), 30*time.Second, func() bool {
		var got uint64
		for _, tm := range f.telemetry {
			if match(tm) {
				got += tm.Predictions
			}
		}
		return got >= n
	})
}

// withRelease1 starts a broker, a test fleet and an in-process agent,
// installs release 1 of the test model, stops the agent, and returns the
// fleet, keys, the agent's config and release 1's hash, for tests of what
// happens to the next install.
func withRelease1(t *testing.T) (*fleet, *keys, *Config, string) {
	t.Helper()
	broker := mqtttest.Start(t)
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	v1 := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	stop := startAgent(t, cfg, nil)
	if ev := f.terminal(f.deploy(v1, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install v1: %+v", ev)
	}
	stop()
	return f, k, cfg, v1
}
