package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/agent"
	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/fleet/server"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/wire"
)

// reconcilePeriod is the fleet's rollouts.reconcile in these tests.
const reconcilePeriod = 2 * time.Second

// installSlack bounds what a returning device takes to reconnect, install
// and health-check a model and report it (a few seconds on a quiet
// machine; generous for a loaded one).
const installSlack = time.Minute

// brokerNoAutosave is the test broker with persistence on but an autosave
// interval of an hour: a SIGKILL loses every retained message and session
// since it started, as a production Mosquitto killed between autosaves
// does.
const brokerNoAutosave = `per_listener_settings false
listener {{PORT}} 127.0.0.1
allow_anonymous true
persistence true
persistence_location {{DIR}}/
autosave_interval 3600
log_dest file {{DIR}}/mosquitto.log
log_type error
log_type warning
log_type notice
log_type information
connection_messages true
max_queued_messages 10000
`

// withReconcile sets rollouts.reconcile in a fleet configuration.
func withReconcile(conf string) string {
	return strings.Replace(conf, "[rollouts]\n", fmt.Sprintf("[rollouts]\nreconcile = %q\n", reconcilePeriod), 1)
}

// startFleetConf is startFleet with edit applied to the configuration.
func (w *world) startFleetConf(edit func(string) string) {
	w.t.Helper()
	listen := "127.0.0.1:0"
	if w.api != "" {
		listen = w.api
	}
	cfg, err := server.ParseConfig("e2e.toml", edit(w.fleetConfig(listen)))
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan server.Ready, 1)
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, cfg, w.logger(), ready) }()
	select {
	case r := <-ready:
		w.api, w.stopFleet, w.fleetDone = r.API, cancel, done
	case err := <-done:
		cancel()
		w.t.Fatalf("fleet: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		w.t.Fatal("fleet did not start")
	}
}

// waitDeviceStates waits until every device of want is in its state in
// rollout id.
func (w *world) waitDeviceStates(id string, want map[string]api.DeviceState) {
	w.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var r rollout.Rollout
		w.call("GET", "/v1/rollouts/"+id, nil, &r)
		ok := true
		for dev, s := range want {
			if p := r.Devices[dev]; p == nil || p.State != s {
				ok = false
			}
		}
		if ok {
			return
		}
		if r.State.Done() || time.Now().After(deadline) {
			w.t.Fatalf("rollout %s: %s %v, waiting for %v", id, r.State, r.Counts(), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkNoRetry requires rollout r to have completed with every device
// succeeding at its first attempt.
func checkNoRetry(t *testing.T, r *rollout.Rollout, n int) {
	t.Helper()
	if r.State != api.RolloutCompleted || r.Successes != n {
		t.Fatalf("rollout %s: %s (%s), %d of %d succeeded", r.ID, r.State, r.Reason, r.Successes, n)
	}
	for _, id := range r.Order {
		if p := r.Devices[id]; p.Attempts != 1 || p.Resends != 0 {
			t.Errorf("%s: %d attempts, %d resends; want the first command to do", id, p.Attempts, p.Resends)
		}
	}
}

// TestRolloutSurvivesBrokerKill: a device is offline when a rollout
// starts; Mosquitto is then SIGKILLed before it saved anything and
// restarted, losing the retained command (and the device's session with
// its queued copy). When the device comes back the fleet has published
// its command again (it re-asserts every unfinished job's command after it
// reconnects), and the rollout completes with no retry configured,
// within one reconciliation period of the device's return (plus its
// install).
func TestRolloutSurvivesBrokerKill(t *testing.T) {
	w := newWorldBroker(t, brokerNoAutosave)
	w.startFleetConf(withReconcile)
	on := w.startAgents("on", 1, nil)
	off := w.startAgents("off", 1, nil)
	ids := append(on, off...)
	w.waitKnown(ids)
	w.stopAgent(off[0])
	w.waitInventory(off[0]+" offline", time.Minute, func(ds map[string]inventory.Device) bool { return !ds[off[0]].Online })

	hash := w.publish(w.bundle("vib", 1))
	w.rollout(api.RolloutRequest{ID: "kill", Bundle: hash, Devices: ids})
	w.waitDeviceStates("kill", map[string]api.DeviceState{on[0]: api.DeviceSucceeded, off[0]: api.DeviceNotified})

	if err := syscall.Kill(w.broker.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.broker.Restart()
	back := time.Now()
	w.startAgents("off", 1, nil)
	r := w.waitRollout("kill", reconcilePeriod+installSlack, nil)
	t.Logf("rollout completed %v after the device returned", time.Since(back).Round(100*time.Millisecond))
	checkNoRetry(t, r, len(ids))
}

// embeddedFleet is trit-fleet run as a process with its embedded broker,
// on fixed ports so that a restarted one is where the agents look.
type embeddedFleet struct {
	w          *world
	bin, conf  string
	broker     string // tcp://127.0.0.1:port, for the agents
	cmd        *exec.Cmd
	exited     chan struct{}
	passwords  map[string]string // device -> password file
	stderrPath string
	// nofile, if not 0, is the process's limit on open files (ulimit -n,
	// soft and hard, so Go cannot raise it).
	nofile int
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// newEmbeddedFleet builds trit-fleet, writes its configuration (embedded
// broker, credentials for devices) and starts it.
func newEmbeddedFleet(w *world, devices []string) *embeddedFleet {
	return newEmbeddedFleetExtra(w, devices, "")
}

// newEmbeddedFleetExtra is newEmbeddedFleet with extra appended to the
// configuration (tables of its own).
func newEmbeddedFleetExtra(w *world, devices []string, extra string) *embeddedFleet {
	e := prepareEmbeddedFleetExtra(w, devices, extra)
	e.start()
	return e
}

// prepareEmbeddedFleet is newEmbeddedFleet without the start.
func prepareEmbeddedFleet(w *world, devices []string) *embeddedFleet {
	return prepareEmbeddedFleetExtra(w, devices, "")
}

// prepareEmbeddedFleetExtra is newEmbeddedFleetExtra without the start.
func prepareEmbeddedFleetExtra(w *world, devices []string, extra string) *embeddedFleet {
	t := w.t.(*testing.T)
	t.Helper()
	e := &embeddedFleet{w: w, bin: buildFleet(t, w), conf: filepath.Join(w.dir, "fleet-embedded.toml"),
		passwords: map[string]string{}, stderrPath: filepath.Join(w.dir, "trit-fleet.log")}
	mqttAddr := freeAddr(t)
	w.api = freeAddr(t)
	e.broker = "tcp://" + mqttAddr
	conf := fmt.Sprintf(`fleet = %q
database = %q
[mqtt]
broker = "embedded"
embedded_listen = %q
embedded_credentials = %q
[api]
listen = %q
token_file = %q
[keys]
command_key = %q
release_keys = [%q]
[rollouts]
tick = "200ms"
`, fleetName, w.fleetDB(), mqttAddr, filepath.Join(w.dir, "mqtt-credentials"), w.api, filepath.Join(w.dir, "token"), w.cmdKey, w.releasePub)
	if err := os.WriteFile(e.conf, []byte(withReconcile(conf)+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(w.fleetDB()), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range devices {
		pw := filepath.Join(w.dir, id+".password")
		var out, errs strings.Builder
		if code := server.Main([]string{"credentials", "add", id, "--config", e.conf, "--password-file", pw}, &out, &errs); code != 0 {
			t.Fatalf("credentials add %s: exit %d: %s", id, code, errs.String())
		}
		e.passwords[id] = pw
	}
	t.Cleanup(func() {
		if e.cmd != nil {
			e.cmd.Process.Signal(syscall.SIGTERM)
			<-e.exited
		}
		if t.Failed() {
			if log, err := os.ReadFile(e.stderrPath); err == nil {
				t.Logf("trit-fleet log:\n%s", tailLines(string(log), 40))
			}
		}
	})
	return e
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// start runs trit-fleet and waits until its API answers.
func (e *embeddedFleet) start() {
	t := e.w.t
	t.Helper()
	logf, err := os.OpenFile(e.stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, "run", "--config", e.conf)
	if e.nofile > 0 {
		cmd = exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, e.nofile), e.bin, "run", "--config", e.conf)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	e.cmd, e.exited = cmd, exited
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", e.w.api); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(e.stderrPath)
			t.Fatalf("trit-fleet exited at start-up:\n%s", tailLines(string(log), 20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("trit-fleet did not start listening")
		}
	}
}

// kill SIGKILLs trit-fleet, and with it the embedded broker and everything
// it held in memory.
func (e *embeddedFleet) kill() {
	e.w.t.Helper()
	if err := e.cmd.Process.Kill(); err != nil {
		e.w.t.Fatal(err)
	}
	<-e.exited
	e.cmd = nil
}

// startAgent starts one agent that logs in to the embedded broker with its
// credentials.
func (e *embeddedFleet) startAgent(id string) {
	e.w.t.Helper()
	e.w.startAgentWith(id, agent.MQTTConfig{Broker: e.broker, Username: id, PasswordFile: e.passwords[id]}, e.w.logger())
}

// startAgentWith starts one agent configured as startAgents does, but on
// the broker connection mc (its timeouts filled in) and logging to log.
func (w *world) startAgentWith(id string, mc agent.MQTTConfig, log *slog.Logger) {
	w.t.Helper()
	mc.Timeout = agent.Duration{Duration: 10 * time.Second}
	mc.ReconnectMin, mc.ReconnectMax = agent.Duration{Duration: 200 * time.Millisecond}, agent.Duration{Duration: 2 * time.Second}
	cfg := &agent.Config{
		DeviceID: id, Fleet: fleetName, StateDir: filepath.Join(w.dir, "agents", id),
		ReleaseKeys: []string{w.releasePub}, CommandKeys: []string{w.cmdPub}, MQTT: mc,
		Install:   agent.InstallConfig{HealthCycles: 3, HealthTimeout: agent.Duration{Duration: 20 * time.Second}, DownloadTimeout: agent.Duration{Duration: 30 * time.Second}},
		Telemetry: agent.TelemetryConfig{Interval: agent.Duration{Duration: 2 * time.Second}, AckRetry: agent.Duration{Duration: 5 * time.Second}},
		Sensors:   []sensors.Config{{Kind: "replay", Name: "vib", File: w.replay, Rate: 20, Loop: true}},
	}
	w.runAgent(cfg, log)
}

// TestRolloutSurvivesEmbeddedFleetKill: the same with the embedded broker,
// which keeps nothing on disk, so any restart of trit-fleet loses every
// retained command: a device is offline when a rollout starts, trit-fleet
// is SIGKILLed and started again, the device comes back, and the rollout
// completes with no retry, within one reconciliation period of its return
// (plus its install).
func TestRolloutSurvivesEmbeddedFleetKill(t *testing.T) {
	w := newWorld(t)
	ids := []string{"on-000", "off-000"}
	e := newEmbeddedFleet(w, ids)
	for _, id := range ids {
		e.startAgent(id)
	}
	w.waitKnown(ids)
	w.stopAgent("off-000")
	w.waitInventory("off-000 offline", time.Minute, func(ds map[string]inventory.Device) bool { return !ds["off-000"].Online })

	hash := w.publish(w.bundle("vib", 1))
	w.rollout(api.RolloutRequest{ID: "kill", Bundle: hash, Devices: ids})
	w.waitDeviceStates("kill", map[string]api.DeviceState{"on-000": api.DeviceSucceeded, "off-000": api.DeviceNotified})

	e.kill()
	e.start()
	back := time.Now()
	e.startAgent("off-000")
	r := w.waitRollout("kill", reconcilePeriod+installSlack, nil)
	t.Logf("rollout completed %v after the device returned", time.Since(back).Round(100*time.Millisecond))
	checkNoRetry(t, r, len(ids))
}

// TestForgedCommandDoesNotPinLastJob: someone who can write a device's
// desired topic (the test broker has no ACL) takes the retained command,
// changes its rollout and sequence (17 → 1017, as in issue 25) and puts it
// back. The agent refuses it, and its REJECTED event echoes the forged
// rollout and sequence; the fleet records that as an event about a job it
// never sent, and the device's last job follows the real rollouts after it.
func TestForgedCommandDoesNotPinLastJob(t *testing.T) {
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", 1, nil)
	id := ids[0]
	w.waitKnown(ids)
	w.rolloutAll("r1", w.publish(w.bundle("vib", 1)), ids)

	topics, err := wire.NewTopics(fleetName)
	if err != nil {
		t.Fatal(err)
	}
	c := w.mqttClient("x-forger")
	var cmd map[string]any
	if err := json.Unmarshal(retained(t, c, topics.Desired(id)), &cmd); err != nil {
		t.Fatal(err)
	}
	cmd["rollout"], cmd["seq"] = "att-tamper", 1017
	forged, _ := json.Marshal(cmd)
	publishRetained(t, c, topics.Desired(id), forged)
	// The fleet has heard of the forgery once the device's record names it.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.rawCall("/v1/devices/"+id), "att-tamper") {
		if time.Now().After(deadline) {
			t.Fatalf("the REJECTED event of the forged command never reached the fleet: %s", w.rawCall("/v1/devices/"+id))
		}
		time.Sleep(100 * time.Millisecond)
	}

	for i, r := range []string{"r2", "r3"} {
		w.rolloutAll(r, w.publish(w.bundle("vib", uint64(i+2))), ids)
		d := w.devices()[id]
		if j := d.LastJob; j == nil || j.Rollout != r || j.State != wire.JobSucceeded {
			t.Fatalf("after rollout %s: last job %+v, want %s SUCCEEDED", r, j, r)
		}
	}
	d := w.devices()[id]
	if d.ForeignJobs != 1 || d.LastForeignJob == nil || d.LastForeignJob.Rollout != "att-tamper" || d.LastForeignJob.Seq != 1017 ||
		d.LastForeignJob.Code != wire.CodeCommandSignature {
		t.Errorf("foreign job events %d, last %+v; want 1, att-tamper/1017 command-signature", d.ForeignJobs, d.LastForeignJob)
	}
}

// mqttClient connects a plain client (clean session) to the world's
// broker, which has no ACL: it may read and write any topic.
func (w *world) mqttClient(id string) mqtt.Client {
	w.t.Helper()
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(w.broker.URL()).SetClientID(id))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		w.t.Fatalf("%s: connect: %v", id, tok.Error())
	}
	w.t.Cleanup(func() { c.Disconnect(100) })
	return c
}

// retained returns the message retained on topic.
func retained(t *testing.T, c mqtt.Client, topic string) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	if tok := c.Subscribe(topic, 1, func(_ mqtt.Client, m mqtt.Message) {
		select {
		case got <- m.Payload():
		default:
		}
	}); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %s: %v", topic, tok.Error())
	}
	defer c.Unsubscribe(topic)
	select {
	case raw := <-got:
		return raw
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing retained on %s", topic)
	}
	return nil
}

func publishRetained(t *testing.T, c mqtt.Client, topic string, payload []byte) {
	t.Helper()
	if tok := c.Publish(topic, 1, true, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

// TestResentCommandOfFinishedJobIgnored: the agent is idempotent by job,
// which is what makes re-asserting commands safe. The command of a job it
// finished, published again byte for byte (as the reconciliation does when
// a device's last event and a re-send cross), is recognised as handled and
// ignored: no job event, the model and the rollout unchanged.
func TestResentCommandOfFinishedJobIgnored(t *testing.T) {
	w := newWorld(t)
	w.startFleet()
	const id = "gw-000"
	var logs syncBuffer
	w.startAgentWith(id, agent.MQTTConfig{Broker: w.broker.URL()}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	w.waitKnown([]string{id})
	hash := w.publish(w.bundle("vib", 1))
	w.rolloutAll("r1", hash, []string{id})
	before := w.devices()[id]

	topics, err := wire.NewTopics(fleetName)
	if err != nil {
		t.Fatal(err)
	}
	c := w.mqttClient("x-replayer")
	raw := retained(t, c, topics.Desired(id))
	events := strings.Count(logs.String(), `msg="job event"`)
	handled := strings.Count(logs.String(), "deployment command already handled")
	for range 3 {
		publishRetained(t, c, topics.Desired(id), raw)
	}
	for deadline := time.Now().Add(time.Minute); strings.Count(logs.String(), "deployment command already handled") == handled; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never handled the re-sent command; its log:\n%s", tailLines(logs.String(), 30))
		}
	}
	if n := strings.Count(logs.String(), `msg="job event"`); n != events {
		t.Fatalf("%d job events after the re-sent command, want none; log:\n%s", n-events, tailLines(logs.String(), 30))
	}
	after := w.devices()[id]
	if after.Model == nil || after.Model.Bundle != hash || after.LastJob == nil || *after.LastJob != *before.LastJob {
		t.Fatalf("device after the re-sent command: model %+v, last job %+v; before %+v", after.Model, after.LastJob, before.LastJob)
	}
	var r rollout.Rollout
	w.call("GET", "/v1/rollouts/r1", nil, &r)
	checkNoRetry(t, &r, 1)
}

// TestSecondRolloutOfABundleAfterEmbeddedFleetRestart: a bundle is rolled
// out to one gateway, trit-fleet (with the embedded broker, which keeps
// nothing on disk) restarts, and the same bundle goes to another gateway:
// the second rollout sends the bundle again and completes. Before, the
// registry's Published flag said the bundle was out there, the restarted
// broker had lost it, and the second gateway waited in downloading until
// its download timed out (issue 42).
func TestSecondRolloutOfABundleAfterEmbeddedFleetRestart(t *testing.T) {
	w := newWorld(t)
	ids := []string{"first", "second"}
	e := newEmbeddedFleet(w, ids)
	for _, id := range ids {
		e.startAgent(id)
	}
	w.waitKnown(ids)
	hash := w.publish(w.bundle("vib", 1))
	w.rolloutAll("wave-1", hash, ids[:1])

	e.kill()
	e.start()
	w.waitInventory("both gateways back", time.Minute, func(ds map[string]inventory.Device) bool {
		return ds["first"].Online && ds["second"].Online
	})
	w.rolloutAll("wave-2", hash, ids[1:])
}

// TestSecondRolloutOfABundleAfterBrokerKill: the same with Mosquitto
// SIGKILLed before its autosave (losing the retained bundle) and
// trit-fleet restarted between the two rollouts.
func TestSecondRolloutOfABundleAfterBrokerKill(t *testing.T) {
	w := newWorldBroker(t, brokerNoAutosave)
	w.startFleetConf(withReconcile)
	ids := w.startAgents("gw", 2, nil)
	w.waitKnown(ids)
	hash := w.publish(w.bundle("vib", 1))
	w.rolloutAll("wave-1", hash, ids[:1])

	if err := syscall.Kill(w.broker.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.broker.Restart()
	w.stopFleet()
	<-w.fleetDone
	w.startFleetConf(withReconcile)
	w.rolloutAll("wave-2", hash, ids[1:])
}
