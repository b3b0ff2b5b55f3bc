package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire/natstest"
)

// replicaProc is one trit-fleet process of TestReplicasOnNATS.
type replicaProc struct {
	name, api string
	cmd       *exec.Cmd
	done      chan struct{}
}

// TestReplicasOnNATS: past one machine. Three nats-server nodes (JetStream,
// MQTT; TLS on every listener and route, from a CA the test makes; every
// client logged in with its own password and permissions),
// PostgreSQL, two trit-fleet processes (replicas a and b on nodes 0
// and 1), six agents spread over the three nodes, each given every node's
// address. A rollout completes; during a second one the leading replica is
// SIGKILLed and node 2 is stopped: the rollout completes on every device
// with the new bundle, the API answers on the surviving replica throughout,
// and every report the agents made during the outage reaches the fleet.
func TestReplicasOnNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS cluster, PostgreSQL and two trit-fleet processes (about a minute)")
	}
	// Every agent and both replicas log in with their own passwords and
	// permissions, as in production (fleet/nats/node.conf).
	devices := map[string]string{}
	for i := range 6 {
		devices[fmt.Sprintf("n%d-000", i)] = fmt.Sprintf("device-secret-%d", i)
	}
	nc := natstest.StartTLS(t, 3, natstest.Auth(fleetName, "fleet-secret", devices))
	dsn := pgtest.Database(t)
	w := newWorld(t)
	bin := filepath.Join(w.dir, "trit-fleet")
	build := exec.Command("go", "build", "-o", bin, "github.com/trit-iot/trit/cmd/trit-fleet")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("building trit-fleet: %v", err)
	}
	pwFile := filepath.Join(w.dir, "fleet.mqtt-password")
	if err := os.WriteFile(pwFile, []byte("fleet-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(name string, node int) *replicaProc {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := &replicaProc{name: name, api: l.Addr().String(), done: make(chan struct{})}
		l.Close()
		conf := fmt.Sprintf(`fleet = %q
database = %q
replica = %q
[mqtt]
broker = %q
client_id = "trit-fleet-%s"
username = "trit-fleet"
password_file = %q
ca_file = %q
nats = [%q, %q]
nats_ack_wait = "2s"
[api]
listen = %q
token_file = %q
[keys]
command_key = %q
release_keys = [%q]
[rollouts]
tick = "200ms"
lease_ttl = "2s"
`, fleetName, dsn, name, nc.Node(node).MQTTURL(), name, pwFile, nc.CAFile(), nc.Node(2).NATSURL(), nc.Node(node).NATSURL(), p.api, filepath.Join(w.dir, "token"), w.cmdKey, w.releasePub)
		path := filepath.Join(w.dir, "fleet-"+name+".toml")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(bin, "run", "--config", path)
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // gone with the test, even on its timeout
		logf, err := os.Create(filepath.Join(w.dir, "fleet-"+name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.cmd.Wait(); logf.Close(); close(p.done) }()
		t.Cleanup(func() {
			p.cmd.Process.Signal(syscall.SIGTERM)
			<-p.done
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("replica %s log (end):\n%s", name, tailLines(string(b), 30))
			}
		})
		deadline := time.Now().Add(30 * time.Second)
		for {
			if c, err := net.Dial("tcp", p.api); err == nil {
				c.Close()
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s did not start listening", name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	a, b := start("a", 0), start("b", 1)
	leading := func(p *replicaProc) bool {
		w.api = p.api
		return strings.Contains(w.rawCall("/metrics"), fmt.Sprintf(`trit_fleet_leading{replica=%q} 1`, p.name))
	}
	var leader, survivor *replicaProc
	eventually(t, "one replica to lead", 20*time.Second, func() bool {
		la, lb := leading(a), leading(b)
		switch {
		case la && lb:
			t.Fatal("both replicas lead")
		case la:
			leader, survivor = a, b
		case lb:
			leader, survivor = b, a
		}
		return leader != nil
	})
	w.api = survivor.api // the test talks to the replica that will survive

	urls := nc.MQTTURLs()
	var ids []string
	for i := range 6 {
		// Agent i starts on node i%3 and knows the other two.
		order := append(append([]string{}, urls[i%3:]...), urls[:i%3]...)
		ids = append(ids, w.startAgentsTuned(fmt.Sprintf("n%d", i), 1, map[string]string{"ring": "all"}, func(c *agentTuning) {
			c.broker, c.brokers, c.ca, c.telemetry = order[0], order[1:], nc.CAFile(), time.Second
			c.password = devices[fmt.Sprintf("n%d-000", i)]
		})...)
	}
	w.waitInventory("six agents online", time.Minute, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			if !ds[id].Online {
				return false
			}
		}
		return true
	})
	h1 := w.publish(w.bundle("vib", 1))
	w.rollout(api.RolloutRequest{ID: "first", Bundle: h1, Devices: ids, Timeout: 3 * time.Minute})
	if r := w.waitRollout("first", 2*time.Minute, nil); r.State != api.RolloutCompleted || r.Successes != 6 {
		t.Fatalf("first rollout: %s, %d successes: %v", r.State, r.Successes, r.Counts())
	}

	// The API on the survivor is polled throughout the second rollout; each
	// answer's device records say which telemetry reports the fleet has
	// applied (the newest's sequence and a window of the 64 before it). So
	// is its console, with a session the leader made: sessions live in the
	// database, so the survivor knows it, before and after the leader dies.
	console := w.consoleClient(leader.api)
	var polls, failures, consolePolls, consoleFailures atomic.Int64
	tel := newAppliedLog()
	stopPoll := make(chan struct{})
	var pollDone sync.WaitGroup
	pollDone.Add(1)
	go func() {
		defer pollDone.Done()
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(100 * time.Millisecond):
			}
			req, _ := http.NewRequest("GET", "http://"+survivor.api+"/v1/devices", nil)
			req.Header.Set("Authorization", "Bearer "+w.token)
			polls.Add(1)
			resp, err := http.DefaultClient.Do(req)
			var ds []inventory.Device
			if err != nil || resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&ds) != nil {
				failures.Add(1)
			}
			if resp != nil {
				resp.Body.Close()
			}
			tel.add(ds)

			consolePolls.Add(1)
			resp, err = console.Get("http://" + survivor.api + "/console/devices")
			if err != nil || resp.StatusCode != 200 || resp.Request.URL.Path != "/console/devices" {
				consoleFailures.Add(1)
			}
			if resp != nil {
				resp.Body.Close()
			}
		}
	}()

	h2 := w.publish(w.bundle("vib", 2))
	w.rollout(api.RolloutRequest{ID: "second", Bundle: h2, Devices: ids, Timeout: 3 * time.Minute,
		// The rest waits 8 s after the canaries, so the replica that
		// survives is the one to start it, however fast installs are.
		Pace: api.Pace{Phases: []api.Phase{{Count: 2}, {Percent: 100, StartAt: time.Now().Add(8 * time.Second)}}}})
	// Once the canaries have their commands, the leader dies and node 2
	// goes down.
	eventually(t, "the second rollout to start", time.Minute, func() bool {
		var r rollout.Rollout
		w.call("GET", "/v1/rollouts/second", nil, &r)
		return r.Counts()[api.DevicePending] < 6
	})
	outage := time.Now()
	before := tel.highest()
	leader.cmd.Process.Kill()
	<-leader.done
	nc.Node(2).Stop()
	t.Logf("replica %s SIGKILLed and node 2 stopped", leader.name)
	eventually(t, "the survivor to lead", 15*time.Second, func() bool { return leading(survivor) })
	tookOver := time.Since(outage)
	r := w.waitRollout("second", 3*time.Minute, nil)
	if r.State != api.RolloutCompleted || r.Successes != 6 {
		for _, id := range ids {
			if p := r.Devices[id]; p != nil && p.State != api.DeviceSucceeded {
				t.Logf("%s: %+v", id, *p)
			}
		}
		t.Fatalf("second rollout after the failover: %s, %d successes: %v", r.State, r.Successes, r.Counts())
	}
	ds := w.devices()
	for _, id := range ids {
		d := ds[id]
		if d.Model == nil || d.Model.Bundle != h2 {
			t.Errorf("%s runs %+v, want bundle %.12s", id, d.Model, h2)
		}
		if p := r.Devices[id]; p == nil || p.Attempts > 1 {
			t.Errorf("%s in the rollout: %+v, want one attempt", id, p)
		}
	}
	end := time.Now()
	close(stopPoll)
	pollDone.Wait()
	if failures.Load() != 0 {
		t.Errorf("the surviving replica's API failed %d of %d requests during the failover", failures.Load(), polls.Load())
	}
	if consoleFailures.Load() != 0 {
		t.Errorf("the surviving replica's console failed %d of %d pages during the failover (a session the killed leader made)", consoleFailures.Load(), consolePolls.Load())
	}

	// Telemetry of the outage: every report an agent made from the kill
	// until after the end reaches the fleet's store. The replicas take
	// telemetry from JetStream, where nats-server put it before it
	// acknowledged it to the agent, and acknowledge it only once stored
	// (fleet/server/natsfeed.go); what the killed replica held comes again to the
	// survivor.
	// Two more reports after the end, and at least 15 s of them from the
	// kill on (the agents of node 2 reconnect meanwhile, and what the dead
	// replica held comes again after nats_ack_wait), however quickly the
	// rollout ended.
	atEnd := tel.highest()
	eventually(t, "the fleet to apply more reports of every agent", time.Minute, func() bool {
		var ds []inventory.Device
		w.call("GET", "/v1/devices", nil, &ds)
		tel.add(ds)
		now := tel.highest()
		for _, id := range ids {
			if now[id] < max(atEnd[id]+2, before[id]+15) {
				return false
			}
		}
		return true
	})
	// Both replicas' NATS connections were on node 2 (mqtt.nats lists it
	// first): the survivor's went over to its own node.
	if b, err := os.ReadFile(filepath.Join(w.dir, "fleet-"+survivor.name+".log")); err != nil || !strings.Contains(string(b), "NATS reconnected") {
		t.Errorf("replica %s's log does not say its NATS connection moved off the stopped node (%v)", survivor.name, err)
	}
	produced, missing := 0, 0
	for _, id := range ids {
		from, to := before[id]+1, tel.highest()[id]
		produced += int(to - from + 1)
		for seq := from; seq <= to; seq++ {
			if !tel.applied(id, seq) {
				missing++
				t.Errorf("%s: telemetry report %d (made after the kill) never reached the fleet", id, seq)
			}
		}
	}
	t.Logf("leader %s killed; %s led after %v; second rollout done %v after the outage; API %d/%d requests and console %d/%d pages answered; %d telemetry reports made from the kill on, %d missing at the fleet",
		leader.name, survivor.name, tookOver.Round(100*time.Millisecond), end.Sub(outage).Round(100*time.Millisecond),
		polls.Load()-failures.Load(), polls.Load(), consolePolls.Load()-consoleFailures.Load(), consolePolls.Load(), produced, missing)
}

// appliedLog gathers, from the device records the fleet's API returns,
// which telemetry reports of each device's current agent process the
// fleet has applied: a record keeps them as runs of sequence numbers
// (fleet/inventory/telemetry.go). The union over the polls is every report applied.
type appliedLog struct {
	mu   sync.Mutex
	seqs map[string]map[uint64]bool
	top  map[string]uint64
}

func newAppliedLog() *appliedLog {
	return &appliedLog{seqs: map[string]map[uint64]bool{}, top: map[string]uint64{}}
}

func (l *appliedLog) add(ds []inventory.Device) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range ds {
		if d.TelemetrySeq == 0 {
			continue
		}
		m := l.seqs[d.ID]
		if m == nil {
			m = map[uint64]bool{}
			l.seqs[d.ID] = m
		}
		runs := d.TelemetryRuns
		if len(runs) == 0 {
			continue
		}
		current := runs[len(runs)-1].Key()
		for _, r := range runs {
			for seq := r.From; r.Key() == current && seq <= r.To; seq++ {
				m[seq] = true
			}
		}
		l.top[d.ID] = max(l.top[d.ID], d.TelemetrySeq)
	}
}

// highest is each device's newest report applied so far.
func (l *appliedLog) highest() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.top)
}

func (l *appliedLog) applied(id string, seq uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seqs[id][seq]
}
