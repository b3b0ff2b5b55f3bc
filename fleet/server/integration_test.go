package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// fleetFiles writes keys, a token and a configuration for Serve.
type fleetFiles struct {
	dir, token          string
	releaseKey, cmdPub  string
	releasePriv, config string
}

func writeFleetFiles(t *testing.T, broker string) *fleetFiles {
	t.Helper()
	dir := t.TempDir()
	f := &fleetFiles{dir: dir, token: "integration-test-token-0123456789"}
	f.releasePriv, f.releaseKey = filepath.Join(dir, "release.key"), filepath.Join(dir, "release.pub")
	cmdPriv := filepath.Join(dir, "command.key")
	f.cmdPub = filepath.Join(dir, "command.pub")
	if err := bundle.GenerateKey(f.releasePriv, f.releaseKey); err != nil {
		t.Fatal(err)
	}
	if err := bundle.GenerateKey(cmdPriv, f.cmdPub); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(f.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.config = fmt.Sprintf(`
fleet = "it"
database = %q
[mqtt]
broker = %q
[api]
listen = "127.0.0.1:0"
token_file = %q
[keys]
command_key = %q
release_keys = [%q]
[rollouts]
tick = "100ms"
`, filepath.Join(dir, "db", "fleet.db"), broker, filepath.Join(dir, "token"), cmdPriv, f.releaseKey)
	return f
}

// serve starts Serve in the background and returns the API address.
func serve(t *testing.T, config string) (string, context.CancelFunc) {
	t.Helper()
	cfg, err := ParseConfig("test.toml", config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Ready, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), ready) }()
	select {
	case r := <-ready:
		t.Cleanup(func() { cancel(); <-done })
		return r.API, cancel
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatal("Serve did not become ready")
	}
	return "", nil
}

// simDevice is a minimal device on a real broker: it verifies commands and
// bundles as an agent does and reports job events, and nothing more. The
// agent's own integration tests cover the real install path.
type simDevice struct {
	t        *testing.T
	id       string
	c        mqtt.Client
	topics   wire.Topics
	cmdKeys  *wire.KeySet
	relKeys  *bundle.KeySet
	mu       sync.Mutex
	bundles  map[string][]byte
	installs int
}

func startDevice(t *testing.T, brokerURL, id string, files *fleetFiles, opts ...func(*mqtt.ClientOptions)) *simDevice {
	t.Helper()
	cmdKeys, err := wire.LoadKeySet(files.cmdPub)
	if err != nil {
		t.Fatal(err)
	}
	relKeys, err := bundle.LoadKeySet(files.releaseKey)
	if err != nil {
		t.Fatal(err)
	}
	topics, _ := wire.NewTopics("it")
	d := &simDevice{t: t, id: id, topics: topics, cmdKeys: cmdKeys, relKeys: relKeys, bundles: map[string][]byte{}}
	o := mqtt.NewClientOptions().AddBroker(brokerURL).SetClientID(id).SetCleanSession(false).SetOrderMatters(false)
	for _, f := range opts {
		f(o)
	}
	d.c = mqtt.NewClient(o)
	if tok := d.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("%s: connect: %v", id, tok.Error())
	}
	t.Cleanup(func() { d.c.Disconnect(100) })
	st := &wire.State{Device: id, Session: 1, Online: true, Labels: map[string]string{"ring": "test"}, Health: "ok"}
	raw, _ := st.Marshal()
	d.publish(topics.State(id), true, raw)
	d.subscribe(topics.Desired(id), d.onCommand)
	return d
}

func (d *simDevice) publish(topic string, retained bool, payload []byte) {
	if tok := d.c.Publish(topic, 1, retained, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		d.t.Errorf("%s: publish %s: %v", d.id, topic, tok.Error())
	}
}

func (d *simDevice) subscribe(filter string, h func(mqtt.Message)) {
	tok := d.c.Subscribe(filter, 1, func(_ mqtt.Client, m mqtt.Message) { go h(m) })
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		d.t.Fatalf("%s: subscribe %s: %v", d.id, filter, tok.Error())
	}
}

func (d *simDevice) event(c *wire.Command, s wire.JobState) {
	ev := &wire.Event{Device: d.id, Rollout: c.Rollout, Seq: c.Seq, State: s, Bundle: c.Bundle, Time: time.Now().UnixMilli()}
	raw, _ := ev.Marshal()
	d.publish(d.topics.Events(d.id), false, raw)
}

func (d *simDevice) onCommand(m mqtt.Message) {
	c, err := wire.VerifyCommand(m.Payload(), d.cmdKeys, wire.Target{Fleet: "it", Device: d.id}, time.Now())
	if err != nil {
		d.t.Errorf("%s: command refused: %v", d.id, err)
		return
	}
	d.event(c, wire.JobQueued)
	got := make(chan []byte, 1)
	d.subscribe(d.topics.Bundle(c.Bundle), func(m mqtt.Message) {
		select {
		case got <- m.Payload():
		default:
		}
	})
	var data []byte
	select {
	case data = <-got:
	case <-time.After(10 * time.Second):
		d.t.Errorf("%s: bundle %s never arrived", d.id, c.Bundle[:12])
		return
	}
	d.event(c, wire.JobDownloading)
	if _, err := bundle.Decode(data, &bundle.DecodeOptions{Trusted: d.relKeys}); err != nil {
		d.t.Errorf("%s: bundle refused: %v", d.id, err)
		return
	}
	d.mu.Lock()
	d.installs++
	d.mu.Unlock()
	d.event(c, wire.JobSucceeded)
}

func callAPI(t *testing.T, addr, token, method, path string, body []byte) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out
}

// TestFleetOverMosquitto runs trit-fleet's Serve against a real Mosquitto
// with simulated devices: upload a signed bundle, roll it out in two phases
// through the HTTP API, and watch every device succeed.
func TestFleetOverMosquitto(t *testing.T) {
	b := mqtttest.Start(t)
	testFleetOver(t, "", b.URL(), []string{b.URL()})
}

// testFleetOver is TestFleetOverMosquitto on database (a PostgreSQL URL,
// or the bbolt file if it is ""), with trit-fleet connected to
// fleetBroker and device i to deviceBrokers[i % len]. It returns the
// running fleet's API address and token.
func testFleetOver(t *testing.T, database, fleetBroker string, deviceBrokers []string) (addr, token string) {
	return testFleetOverWith(t, database, fleetBroker, deviceBrokers, nil, nil)
}

// testFleetOverWith is testFleetOver with edit applied to the fleet's
// configuration file and device's MQTT options for each device (both may
// be nil).
func testFleetOverWith(t *testing.T, database, fleetBroker string, deviceBrokers []string,
	edit func(dir, config string) string, device func(id string) []func(*mqtt.ClientOptions)) (addr, token string) {
	files := writeFleetFiles(t, fleetBroker)
	config := files.config
	if edit != nil {
		config = edit(files.dir, config)
	}
	if database != "" {
		config = strings.Replace(config, fmt.Sprintf("database = %q", filepath.Join(files.dir, "db", "fleet.db")), fmt.Sprintf("database = %q", database), 1)
	}
	addr, _ = serve(t, config)

	var devices []*simDevice
	for i := range 6 {
		id := fmt.Sprintf("sim-%d", i)
		var opts []func(*mqtt.ClientOptions)
		if device != nil {
			opts = device(id)
		}
		devices = append(devices, startDevice(t, deviceBrokers[i%len(deviceBrokers)], id, files, opts...))
	}
	// The inventory fills from the devices' retained states. The bound is
	// for a loaded machine: six sessions through a three-node NATS cluster
	// took over 10 s at load 20; the loop ends as soon as they are in.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ds []inventory.Device
		json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/devices", nil), &ds)
		if len(ds) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inventory has %d devices, want 6", len(ds))
		}
		time.Sleep(50 * time.Millisecond)
	}

	priv, err := bundle.LoadPrivateKey(files.releasePriv)
	if err != nil {
		t.Fatal(err)
	}
	var info api.BundleInfo
	json.Unmarshal(callAPI(t, addr, files.token, "POST", "/v1/bundles", fleettest.SignedBundle(t, "vib", 1, priv)), &info)
	req := fmt.Sprintf(`{"id":"it-1","bundle":%q,"selector":{"ring":"test"},"pace":{"phases":[{"count":2},{"percent":100}]},"abort":{"on":"any","threshold_percent":0,"min_executed":1}}`, info.Hash)
	callAPI(t, addr, files.token, "POST", "/v1/rollouts", []byte(req))

	deadline = time.Now().Add(30 * time.Second)
	for {
		var r rollout.Rollout
		json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/rollouts/it-1", nil), &r)
		if r.State == api.RolloutCompleted {
			if r.Successes != 6 {
				t.Fatalf("completed with %d successes", r.Successes)
			}
			break
		}
		if r.State.Done() || time.Now().After(deadline) {
			t.Fatalf("rollout %s (%s), counts %v", r.State, r.Reason, r.Counts())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range devices {
		d.mu.Lock()
		if d.installs != 1 {
			t.Errorf("%s installed %d times", d.id, d.installs)
		}
		d.mu.Unlock()
	}
	metrics := callAPI(t, addr, files.token, "GET", "/metrics", nil)
	if !strings.Contains(string(metrics), `trit_fleet_jobs_finished_total{result="succeeded"} 6`) {
		t.Errorf("metrics do not count 6 successes:\n%s", metrics)
	}
	return addr, files.token
}
