package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/agent"
	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/wire/mqtttest"
)

const fleetName = "e2e"

// features are the replay file's columns and the models' inputs.
var features = []string{"x1", "x2", "x3"}

// world is one broker, one fleet service and any number of agents, all
// real code: trit-fleet's Serve and trit-agent's Run in this process,
// talking through a real Mosquitto on a loopback port.
type world struct {
	t                  testing.TB
	dir                string
	broker             *mqtttest.Broker
	releasePriv        ed25519.PrivateKey
	releaseSet         *bundle.KeySet
	releasePub, cmdPub string
	cmdKey, token      string
	api                string
	stopFleet          context.CancelFunc
	fleetDone          chan error
	replay             string
	mu                 sync.Mutex
	agents             map[string]context.CancelFunc
	stopped            map[string]chan struct{} // closed when an agent's Run returned
	agentDone          sync.WaitGroup
	logFile            *os.File // the fleet's and agents' log (logger)
	fleetQueue         int      // the fleet's mqtt.queue; 0: its default
	fleetNATS          []string // the fleet's mqtt.nats (NATS client addresses); nil: none
	fleetDatabase      string   // the fleet's database (a postgres:// URL); "": a bbolt file in dir
	// mqttURLs, when set, replace the world's Mosquitto for the fleet (the
	// first) and the simulated agents (spread over all): a NATS cluster.
	mqttURLs []string
	// driftAlert is the fleet's alerts.drift (0: none); set before startFleet.
	driftAlert float64
	// twoPerson is the fleet's rollouts.two_person; set before startFleet.
	twoPerson bool
}

// logTail is how many of the world's log lines a failing test prints.
const logTail = 200

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logger is the log of the world's fleet and agents: with TRIT_E2E_LOG
// set, standard error; otherwise a file in the world's directory whose
// last logTail lines a failing test prints (newWorldBroker), so that an
// intermittent failure is explained by the run that had it.
func (w *world) logger() *slog.Logger {
	if os.Getenv("TRIT_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(w.logFile, nil))
}

func newWorld(t testing.TB) *world { return newWorldBroker(t, "") }

// newWorldBroker is newWorld with a Mosquitto configuration template
// (mqtttest.StartConfig); "" is mqtttest's default.
func newWorldBroker(t testing.TB, brokerConf string) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), agents: map[string]context.CancelFunc{}, stopped: map[string]chan struct{}{},
		token: "e2e-api-token-0123456789abcdef"}
	if brokerConf == "" {
		w.broker = mqtttest.Start(t)
	} else {
		w.broker = mqtttest.StartConfig(t, brokerConf)
	}
	relPriv := filepath.Join(w.dir, "release.key")
	w.releasePub = filepath.Join(w.dir, "release.pub")
	w.cmdKey, w.cmdPub = filepath.Join(w.dir, "command.key"), filepath.Join(w.dir, "command.pub")
	for _, pair := range [][2]string{{relPriv, w.releasePub}, {w.cmdKey, w.cmdPub}} {
		if err := bundle.GenerateKey(pair[0], pair[1]); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if w.releasePriv, err = bundle.LoadPrivateKey(relPriv); err != nil {
		t.Fatal(err)
	}
	if w.releaseSet, err = bundle.LoadKeySet(w.releasePub); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "token"), []byte(w.token), 0o600); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(strings.Join(features, ",") + "\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		fmt.Fprintf(&b, "%.3f,%.3f,%.3f\n", rng.Float64()*2-1, rng.Float64()*2-1, rng.Float64()*2-1)
	}
	w.replay = filepath.Join(w.dir, "replay.csv")
	if err := os.WriteFile(w.replay, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if w.logFile, err = os.Create(filepath.Join(w.dir, "e2e.log")); err != nil {
		t.Fatal(err)
	}
	// Registered before close, so it runs after it: every line is in.
	t.Cleanup(func() {
		w.logFile.Close()
		if t.Failed() {
			if log, err := os.ReadFile(w.logFile.Name()); err == nil {
				t.Logf("the fleet's and agents' log, its last %d lines:\n%s", logTail, tail(string(log), logTail))
			}
		}
	})
	t.Cleanup(w.close)
	return w
}

// startFleet runs trit-fleet's Serve (again, after stopFleet: same
// database, same API address when possible).
func (w *world) startFleet() {
	w.t.Helper()
	w.startFleetConf(func(c string) string { return c })
}

// fleetConfig is the fleet's configuration file for an API address.
func (w *world) fleetConfig(listen string) string {
	return w.replicaConfig(listen, "", w.mqttURL(0))
}

// replicaConfig is fleetConfig for replica name ("": the fleet's one
// process) connecting to broker.
func (w *world) replicaConfig(listen, name, broker string) string {
	nats := ""
	if len(w.fleetNATS) > 0 {
		var quoted []string
		for _, u := range w.fleetNATS {
			quoted = append(quoted, strconv.Quote(u))
		}
		nats = "nats = [" + strings.Join(quoted, ", ") + "]\n"
	}
	db, replica, clientID := filepath.Join(w.dir, "fleet", "fleet.db"), "", "trit-fleet"
	if w.fleetDatabase != "" {
		db = w.fleetDatabase
	}
	if name != "" {
		replica, clientID = fmt.Sprintf("replica = %q\n", name), "trit-fleet-"+name
	}
	return fmt.Sprintf(`
fleet = %q
database = %q
%s[mqtt]
broker = %q
client_id = %q
queue = %d
%s[api]
listen = %q
token_file = %q
[keys]
command_key = %q
release_keys = [%q]
[rollouts]
tick = "200ms"
two_person = %t
[alerts]
drift = %g
`, fleetName, db, replica, broker, clientID, w.fleetQueue, nats, listen, filepath.Join(w.dir, "token"), w.cmdKey, w.releasePub, w.twoPerson, w.driftAlert)
}

// mqttURL is the broker address of client i: the world's Mosquitto, or
// mqttURLs[i % len] when set.
func (w *world) mqttURL(i int) string {
	if len(w.mqttURLs) > 0 {
		return w.mqttURLs[i%len(w.mqttURLs)]
	}
	return w.broker.URL()
}

// startFleetProcess runs the trit-fleet binary bin as a child process and
// returns its PID; it is stopped (SIGTERM) at cleanup, and killed if the
// test process dies first (a go test -timeout).
func (w *world) startFleetProcess(bin string) int {
	w.t.Helper()
	pid, api := w.startFleetReplica(bin, "", w.mqttURL(0))
	w.api = api
	return pid
}

// startFleetReplica runs trit-fleet replica name ("": the fleet's one
// process) on broker, as startFleetProcess, and returns its PID and API
// address.
func (w *world) startFleetReplica(bin, name, broker string) (int, string) {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	api := l.Addr().String()
	l.Close()
	conf := filepath.Join(w.dir, "fleet"+name+".toml")
	if err := os.WriteFile(conf, []byte(w.replicaConfig(api, name, broker)), 0o600); err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Getenv("TRIT_E2E_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", api); err == nil {
			c.Close()
			return cmd.Process.Pid, api
		}
		if time.Now().After(deadline) {
			w.t.Fatal("trit-fleet did not start listening")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawCall GETs path and returns the body.
func (w *world) rawCall(path string) string {
	w.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+w.api+path, nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

// restartFleet stops the fleet service and starts it again on the same
// database.
func (w *world) restartFleet() {
	w.t.Helper()
	w.stopFleet()
	if err := <-w.fleetDone; err != nil {
		w.t.Fatalf("fleet stopped with %v", err)
	}
	w.startFleet()
}

// agentTuning is what tests vary between agents' configurations.
type agentTuning struct {
	rate         float64       // sensor readings per second
	telemetry    time.Duration // telemetry interval
	broker       string        // broker URL; "" is the world's broker
	brokers      []string      // more addresses of the same broker (mqtt.brokers)
	ca           string        // mqtt.ca_file: the broker's CA; "" none
	password     string        // with a password the agent logs in as its device ID; "" anonymous
	replay       string        // replay file; "" the world's
	once         bool          // play the replay once, not in a loop
	driftWindows int           // models.drift_windows; 0 the default
	history      int           // models.history_max_bytes; 0 none
}

// startAgents starts n agents named prefix-000 … with the given labels.
func (w *world) startAgents(prefix string, n int, labels map[string]string) []string {
	w.t.Helper()
	return w.startAgentsTuned(prefix, n, labels, nil)
}

// startAgentsTuned is startAgents with tune applied to the defaults.
func (w *world) startAgentsTuned(prefix string, n int, labels map[string]string, tune func(*agentTuning)) []string {
	w.t.Helper()
	at := agentTuning{rate: 20, telemetry: 2 * time.Second, broker: w.broker.URL(), replay: w.replay}
	if tune != nil {
		tune(&at)
	}
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		ids[i] = id
		cfg := &agent.Config{
			DeviceID: id, Fleet: fleetName, StateDir: filepath.Join(w.dir, "agents", id), Labels: labels,
			ReleaseKeys: []string{w.releasePub}, CommandKeys: []string{w.cmdPub},
			MQTT: agent.MQTTConfig{Broker: at.broker, Brokers: at.brokers, CAFile: at.ca, Timeout: agent.Duration{Duration: 10 * time.Second},
				ReconnectMin: agent.Duration{Duration: 200 * time.Millisecond}, ReconnectMax: agent.Duration{Duration: 2 * time.Second}},
			Install:   agent.InstallConfig{HealthCycles: 3, HealthTimeout: agent.Duration{Duration: 20 * time.Second}, DownloadTimeout: agent.Duration{Duration: 30 * time.Second}},
			Telemetry: agent.TelemetryConfig{Interval: agent.Duration{Duration: at.telemetry}, AckRetry: agent.Duration{Duration: 5 * time.Second}},
			Sensors:   []sensors.Config{{Kind: "replay", Name: "vib", File: at.replay, Rate: at.rate, Loop: !at.once}},
			Models:    agent.ModelsConfig{DriftWindows: at.driftWindows, HistoryMaxBytes: at.history},
		}
		if at.password != "" {
			cfg.MQTT.Username, cfg.MQTT.PasswordFile = id, filepath.Join(w.dir, id+".mqtt-password")
			if err := os.WriteFile(cfg.MQTT.PasswordFile, []byte(at.password+"\n"), 0o600); err != nil {
				w.t.Fatal(err)
			}
		}
		w.runAgent(cfg, w.logger())
	}
	return ids
}

// runAgent validates cfg and runs its agent until stopAgent or the
// world's end, logging to log.
func (w *world) runAgent(cfg *agent.Config, log *slog.Logger) {
	w.t.Helper()
	id := cfg.DeviceID
	if err := cfg.Validate(); err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	w.mu.Lock()
	w.agents[id], w.stopped[id] = cancel, stopped
	w.mu.Unlock()
	w.agentDone.Add(1)
	go func() {
		defer w.agentDone.Done()
		defer close(stopped)
		if err := agent.Run(ctx, cfg, &agent.Options{Logger: log}); err != nil {
			w.t.Errorf("agent %s: %v", id, err)
		}
	}()
}

// stopAgent stops one agent and waits until its Run returned (its
// database is closed).
func (w *world) stopAgent(id string) {
	w.t.Helper()
	w.mu.Lock()
	cancel, stopped := w.agents[id], w.stopped[id]
	w.mu.Unlock()
	cancel()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		w.t.Fatalf("agent %s did not stop", id)
	}
}

// agentDB is an agent's database file.
func (w *world) agentDB(id string) string { return filepath.Join(w.dir, "agents", id, "agent.db") }

// fleetDB is the fleet's database file.
func (w *world) fleetDB() string { return filepath.Join(w.dir, "fleet", "fleet.db") }

// stopFleetService stops the fleet service and waits until it returned.
func (w *world) stopFleetService() {
	w.t.Helper()
	w.stopFleet()
	if err := <-w.fleetDone; err != nil {
		w.t.Fatalf("fleet stopped with %v", err)
	}
	w.stopFleet = nil
}

func (w *world) close() {
	w.mu.Lock()
	for _, cancel := range w.agents {
		cancel()
	}
	w.mu.Unlock()
	w.agentDone.Wait()
	if w.stopFleet != nil {
		w.stopFleet()
		<-w.fleetDone
	}
}

// bundle builds and signs release of model id for the agents' features.
func (w *world) bundle(id string, release uint64) []byte {
	w.t.Helper()
	spec, err := bundletest.Spec(release, len(features), 256, []string{"normal", "fault"})
	if err != nil {
		w.t.Fatal(err)
	}
	spec.Features = features
	data, err := bundletest.Signed(spec, id, release, time.Now().Add(-time.Minute), w.releasePriv)
	if err != nil {
		w.t.Fatal(err)
	}
	return data
}

// call sends an API request and decodes the JSON answer into out.
func (w *world) call(method, path string, body []byte, out any) {
	w.t.Helper()
	req, _ := http.NewRequest(method, "http://"+w.api+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			w.t.Fatal(err)
		}
	}
}

// publish uploads a bundle and returns its hash.
func (w *world) publish(data []byte) string {
	w.t.Helper()
	var info api.BundleInfo
	w.call("POST", "/v1/bundles", data, &info)
	return info.Hash
}

// rollout creates a rollout from a request.
func (w *world) rollout(req api.RolloutRequest) {
	w.t.Helper()
	raw, _ := json.Marshal(req)
	w.call("POST", "/v1/rollouts", raw, nil)
}

// waitRollout polls a rollout until it is done or timeout passes, calling
// during (if not nil) on every poll.
func (w *world) waitRollout(id string, timeout time.Duration, during func(*rollout.Rollout)) *rollout.Rollout {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var r rollout.Rollout
		w.call("GET", "/v1/rollouts/"+id, nil, &r)
		if during != nil {
			during(&r)
		}
		if r.State.Done() {
			return &r
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("rollout %s still %s after %v: %v", id, r.State, timeout, r.Counts())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// devices returns the fleet's inventory.
func (w *world) devices() map[string]inventory.Device {
	w.t.Helper()
	var ds []inventory.Device
	w.call("GET", "/v1/devices", nil, &ds)
	out := map[string]inventory.Device{}
	for _, d := range ds {
		out[d.ID] = d
	}
	return out
}

// waitKnown waits until every device of ids is in the fleet's inventory: a
// rollout may only name devices that have reported (or allow_unknown).
func (w *world) waitKnown(ids []string) {
	w.t.Helper()
	w.waitInventory(fmt.Sprintf("%d devices in the inventory", len(ids)), time.Minute, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			if _, ok := ds[id]; !ok {
				return false
			}
		}
		return true
	})
}

// waitInventory waits until cond holds for the inventory.
func (w *world) waitInventory(what string, timeout time.Duration, cond func(map[string]inventory.Device) bool) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond(w.devices()) {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("inventory: %s not reached within %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
