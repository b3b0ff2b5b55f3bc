package e2e

import (
	_ "embed"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/tritctl"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

var (
	//go:embed testdata/central.conf
	centralConf string
	//go:embed testdata/site.conf
	siteConf string
)

// bridgeCut is how long TestBridgedSites cuts site A's bridge.
const bridgeCut = 60 * time.Second

// TestBridgedSites: two site Mosquittos bridged over TLS (certificates from
// tritctl certs) to a central one; agents on the sites, trit-fleet on the
// central broker. A rollout across both sites completes; then site A's
// bridge is cut for 60 s while a second rollout runs: site B finishes
// meanwhile, site A once the bridge is back, and every telemetry report
// site A's agents produced during the cut reaches the central broker.
func TestBridgedSites(t *testing.T) {
	if testing.Short() {
		t.Skip("takes over a minute (a 60 s bridge outage)")
	}
	pki := t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", "--dir", pki},
		{"certs", "server", "--ca-dir", pki, "--out", pki, "--host", "127.0.0.1"},
		{"certs", "client", "--ca-dir", pki, "--out", pki, "--id", "site-a"},
		{"certs", "client", "--ca-dir", pki, "--out", pki, "--id", "site-b"},
	} {
		if code := tritctl.Main(args); code != 0 {
			t.Fatalf("tritctl %s: exit %d", strings.Join(args, " "), code)
		}
	}
	tlsPort := freeLoopbackPort(t)
	w := newWorldBroker(t, strings.NewReplacer("{{TLSPORT}}", strconv.Itoa(tlsPort), "{{PKI}}", pki).Replace(centralConf))
	central := net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort))
	proxyA, proxyB := startProxy(t, central), startProxy(t, central)
	site := func(name string, p *proxy) *mqtttest.Broker {
		return mqtttest.StartConfig(t, strings.NewReplacer("{{SITE}}", name, "{{CENTRAL}}", p.addr, "{{PKI}}", pki).Replace(siteConf))
	}
	siteA, siteB := site("site-a", proxyA), site("site-b", proxyB)

	// The test's own view of the central broker: every telemetry report.
	tel := newTelemetryLog(t, w.broker.URL())

	w.startFleet()
	fast := func(url string) func(*agentTuning) {
		return func(c *agentTuning) { c.broker, c.telemetry = url, time.Second }
	}
	a := w.startAgentsTuned("sa", 3, map[string]string{"site": "a"}, fast(siteA.URL()))
	b := w.startAgentsTuned("sb", 3, map[string]string{"site": "b"}, fast(siteB.URL()))
	all := append(append([]string{}, a...), b...)
	w.waitInventory("all six agents online through the bridges", time.Minute, func(ds map[string]inventory.Device) bool {
		for _, id := range all {
			if !ds[id].Online {
				return false
			}
		}
		return true
	})

	h1 := w.publish(w.bundle("vib", 1))
	w.rollout(api.RolloutRequest{ID: "both-sites", Bundle: h1, Devices: all, Timeout: 2 * time.Minute})
	if r := w.waitRollout("both-sites", 2*time.Minute, nil); r.State != api.RolloutCompleted || r.Successes != 6 {
		t.Fatalf("rollout across both sites: %s, %d successes: %v", r.State, r.Successes, r.Counts())
	}

	// Cut site A's bridge, then roll out release 2 to both sites.
	cutAt := time.Now()
	proxyA.cut(true)
	h2 := w.publish(w.bundle("vib", 2))
	w.rollout(api.RolloutRequest{ID: "during-cut", Bundle: h2, Devices: all, Timeout: 5 * time.Minute})
	// Site B finishes while A is cut off.
	eventually(t, "site B to finish during the cut", bridgeCut-5*time.Second, func() bool {
		var r rollout.Rollout
		w.call("GET", "/v1/rollouts/during-cut", nil, &r)
		for _, id := range b {
			if p := r.Devices[id]; p == nil || p.State != api.DeviceSucceeded {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Until(cutAt.Add(bridgeCut)))
	var before *rollout.Rollout
	w.call("GET", "/v1/rollouts/during-cut", nil, &before)
	if before.State == api.RolloutCompleted {
		t.Fatalf("the rollout completed while site A was cut off: %v", before.Counts())
	}
	for _, id := range b {
		if p := before.Devices[id]; p == nil || p.State != api.DeviceSucceeded {
			t.Errorf("site B's %s during the cut: %+v, want succeeded", id, p)
		}
	}
	proxyA.cut(false)
	restoredAt := time.Now()
	t.Logf("site A's bridge cut for %v", restoredAt.Sub(cutAt).Round(time.Second))
	if r := w.waitRollout("during-cut", 3*time.Minute, nil); r.State != api.RolloutCompleted || r.Successes != 6 {
		t.Fatalf("rollout after the bridge came back: %s, %d successes: %v", r.State, r.Successes, r.Counts())
	}

	// Telemetry: site A's reports of the cut arrive, with no gap.
	eventually(t, "site A's telemetry after the cut", time.Minute, func() bool {
		for _, id := range a {
			if tel.lastTo(id).Before(restoredAt) {
				return false
			}
		}
		return true
	})
	for _, id := range a {
		seqs, during := tel.seqs(id, cutAt, restoredAt)
		if during < int(bridgeCut/time.Second)/2 {
			t.Errorf("%s: %d telemetry reports from the cut arrived, want about %d", id, during, int(bridgeCut/time.Second))
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] != seqs[i-1]+1 {
				t.Errorf("%s: telemetry sequence jumps from %d to %d: reports lost", id, seqs[i-1], seqs[i])
				break
			}
		}
	}
}

// telemetryLog records every telemetry report seen on a broker.
type telemetryLog struct {
	mu sync.Mutex
	by map[string]map[uint64]*wire.Telemetry
}

func newTelemetryLog(t *testing.T, url string) *telemetryLog {
	l := &telemetryLog{by: map[string]map[uint64]*wire.Telemetry{}}
	topics, _ := wire.NewTopics(fleetName)
	o := mqtt.NewClientOptions().AddBroker(url).SetClientID("e2e-telemetry-log").SetCleanSession(false)
	c := mqtt.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("telemetry log: connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	tok := c.Subscribe(topics.AllDevices(wire.KindTelemetry), 1, func(_ mqtt.Client, m mqtt.Message) {
		tel, err := wire.DecodeTelemetry(m.Payload())
		if err != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.by[tel.Device] == nil {
			l.by[tel.Device] = map[uint64]*wire.Telemetry{}
		}
		l.by[tel.Device][tel.Seq] = tel
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("telemetry log: subscribe: %v", tok.Error())
	}
	return l
}

// lastTo is the end of the newest report of device.
func (l *telemetryLog) lastTo(device string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last int64
	for _, tel := range l.by[device] {
		last = max(last, tel.To)
	}
	return time.UnixMilli(last)
}

// seqs returns device's sequence numbers in order (duplicates once) and
// how many reports ended within [from, to].
func (l *telemetryLog) seqs(device string, from, to time.Time) ([]uint64, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []uint64
	during := 0
	for s, tel := range l.by[device] {
		out = append(out, s)
		if at := time.UnixMilli(tel.To); !at.Before(from) && !at.After(to) {
			during++
		}
	}
	slices.Sort(out)
	return out, during
}

// proxy forwards TCP connections to a target; cut closes them and its
// listener until it is lifted: a link outage between two brokers, seen by
// the bridge as reset connections and refused reconnects. (Accepting and
// closing instead makes Mosquitto 2.0.11's TLS bridge spin and never
// reconnect: eclipse-mosquitto/mosquitto#2099, #2107.)
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	l      net.Listener // nil while cut
	conns  map[net.Conn]bool
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.listen("127.0.0.1:0")
	t.Cleanup(func() { p.cut(true) })
	return p
}

func (p *proxy) listen(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy: %v", err)
	}
	p.addr, p.l = l.Addr().String(), l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
}

func (p *proxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.l == nil {
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { io.Copy(u, c); u.Close(); c.Close() }()
	io.Copy(c, u)
	c.Close()
	u.Close()
}

// cut(true) closes the listener and every connection; cut(false) listens
// on the same address again.
func (p *proxy) cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !down {
		if p.l == nil {
			p.listen(p.addr)
		}
		return
	}
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// eventually polls cond until it holds; the timeout only bounds a broken
// run (the condition is the assertion).
func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, timeout)
		}
	}
}
