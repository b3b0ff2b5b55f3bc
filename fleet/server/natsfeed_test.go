package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/natstest"
	"github.com/trit-iot/trit/wire/tlstest"
)

// natsReplica is one service of TestNATSFeedSharesDeviceMessages with its
// feed; it counts the telemetry sequences delivered to it.
type natsReplica struct {
	f       *fixture
	feed    *NATSFeed
	hold    atomic.Bool // take messages and never handle them: a replica that hangs
	holdOne atomic.Bool // … the next message only: a replica that dies while handling it

	mu      sync.Mutex
	got     map[uint64]int // sequence → deliveries
	held    []uint64
	payload map[string]int // deliveries per payload
	acked   map[string]int // acknowledgements per payload
}

func startNATSReplica(t *testing.T, db store.Database, name, url string) *natsReplica {
	t.Helper()
	r := &natsReplica{f: newFixtureOn(t, db, func(o *fleet.Options) { o.Replica = name }), got: map[uint64]int{},
		payload: map[string]int{}, acked: map[string]int{}}
	m := &MQTTConfig{NATS: []string{url}, Timeout: Duration{Duration: 10 * time.Second}, NATSAckWait: Duration{Duration: time.Second}}
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("replica %s's feed log:\n%s", name, logs.buf.String())
			logs.mu.Unlock()
		}
	})
	feed, err := NewNATSFeed(m, "f", name, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	r.feed = feed
	err = feed.Start(func(topic string, payload []byte, ack func()) {
		r.mu.Lock()
		r.payload[string(payload)]++
		r.mu.Unlock()
		if tm, err := wire.DecodeTelemetry(payload); err == nil {
			r.mu.Lock()
			r.got[tm.Seq]++
			if r.hold.Load() {
				r.held = append(r.held, tm.Seq)
			}
			r.mu.Unlock()
		}
		if r.holdOne.CompareAndSwap(true, false) {
			return
		}
		if !r.hold.Load() {
			r.f.svc.DeliverAcked(topic, payload, func() {
				r.mu.Lock()
				r.acked[string(payload)]++
				r.mu.Unlock()
				if ack != nil {
					ack()
				}
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(feed.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { // the service loop's message side
		for ctx.Err() == nil {
			r.f.svc.Drain()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return r
}

// times reports how many times payload was delivered to r, and how many
// times r acknowledged it.
func (r *natsReplica) times(payload []byte) (delivered, acked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.payload[string(payload)], r.acked[string(payload)]
}

func (r *natsReplica) deliveries(seq uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[seq]
}

// TestNATSFeedSharesDeviceMessages: two replicas on one database take a
// device's telemetry from a three-node NATS cluster through the shared
// consumers. Each report, published over MQTT (QoS 1) on another node,
// is delivered to one replica (again only after the ack wait), both
// replicas get a share, and the store applies each exactly once. Then one replica hangs: it takes reports and
// never acknowledges them, and closes; the server hands what it held to
// the other after the ack wait, and nothing is lost.
func TestNATSFeedSharesDeviceMessages(t *testing.T) {
	c := natstest.Start(t, 3)
	t.Cleanup(func() { // what the cluster says of the consumer, if the test failed
		if !t.Failed() {
			return
		}
		nc, err := nats.Connect(c.Node(0).NATSURL())
		if err != nil {
			t.Logf("consumer info: %v", err)
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cons, err := js.Consumer(ctx, natsStream, NATSConsumerName("f", wire.KindTelemetry))
		if err != nil {
			t.Logf("consumer info: %v", err)
			return
		}
		ci := cons.CachedInfo()
		t.Logf("consumer %s: leader %v, waiting pulls %d, ack pending %d, redelivered %d, delivered %+v, ack floor %+v, pending %d",
			ci.Name, ci.Cluster, ci.NumWaiting, ci.NumAckPending, ci.NumRedelivered, ci.Delivered, ci.AckFloor, ci.NumPending)
	})
	db := openPostgres(t)
	// nats-server creates its MQTT streams at the first MQTT connection:
	// the device's comes first (trit-fleet's own MQTT connection does in
	// Serve).
	dev := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(c.Node(2).MQTTURL()).SetClientID("gw-1").SetCleanSession(false))
	if tok := dev.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("device connect: %v", tok.Error())
	}
	defer dev.Disconnect(100)
	a := startNATSReplica(t, db, "a", c.Node(0).NATSURL())
	b := startNATSReplica(t, db, "b", c.Node(1).NATSURL())
	// Both replicas share the reports only once each has a pull request
	// waiting at the consumer's leader: a report published before the
	// second's arrives goes to the first. (A pull that reached no leader
	// yet, as the first replica's does when it leaves the moment the
	// consumer's leader is elected, is made again: NATSFeed.consume. Without
	// that, this waits 30 s and fails.)
	waitPulls(t, c.Node(2).NATSURL(), NATSConsumerName("f", wire.KindTelemetry), 2)
	topics, _ := wire.NewTopics("f")
	publish := func(from, to uint64) {
		t.Helper()
		for seq := from; seq <= to; seq++ {
			raw, _ := (&wire.Telemetry{Device: "gw-1", Session: 1, Seq: seq, From: 1, To: 2, Predictions: 1}).Marshal()
			if tok := dev.Publish(topics.Telemetry("gw-1"), 1, false, raw); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatalf("publish %d: %v", seq, tok.Error())
			}
		}
	}
	applied := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var p uint64
			if ds, err := inventory.Devices(a.f.db); err == nil && len(ds) == 1 {
				p = ds[0].Predictions
			}
			if p == want {
				return
			} else if p > want || time.Now().After(deadline) {
				var never []uint64
				for seq := uint64(1); seq <= want; seq++ {
					if a.deliveries(seq)+b.deliveries(seq) == 0 {
						never = append(never, seq)
					}
				}
				d, _ := inventory.DeviceByID(a.f.db, "gw-1")
				t.Fatalf("the store applied %d reports, want %d; never delivered to either replica: %v; record runs %v", p, want, never, d.TelemetryRuns)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	const n = 300
	publish(1, n)
	applied(n)
	// Each report reaches one replica; it reaches one again only when the
	// first did not acknowledge it within the ack wait (1 s: a loaded
	// machine's commit can outlast it), and the store applies it once
	// either way (applied, above and below).
	var toA, toB, again int
	for seq := uint64(1); seq <= n; seq++ {
		da, db := a.deliveries(seq), b.deliveries(seq)
		if da+db == 0 {
			t.Errorf("report %d never delivered", seq)
		}
		toA, toB, again = toA+da, toB+db, again+da+db-min(da+db, 1)
	}
	if toA == 0 || toB == 0 {
		t.Errorf("a took %d reports and b %d: the replicas do not share them", toA, toB)
	}
	t.Logf("%d reports: %d deliveries to replica a, %d to replica b (%d redelivered after the ack wait)", n, toA, toB, again)

	// a hangs, then goes away; b takes over what a held.
	a.hold.Store(true)
	publish(n+1, 2*n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.mu.Lock()
		held := len(a.held)
		a.mu.Unlock()
		if held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hanging replica took no report: the test proves nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.feed.Close()
	applied(2 * n)
	a.mu.Lock()
	held := append([]uint64(nil), a.held...)
	a.mu.Unlock()
	for _, seq := range held {
		if b.deliveries(seq) == 0 {
			t.Errorf("report %d, held by the hanging replica, never reached b", seq)
		}
	}
	t.Logf("the hanging replica held %d reports; b took them after the ack wait", len(held))
	if d := deviceRecord(t, a.f, "gw-1"); d.TelemetrySeq != 2*n || len(d.TelemetryRuns) != 1 || d.TelemetryRuns[0] != (api.TelemetryRun{Session: 1, From: 1, To: 2 * n}) || d.TelemetryMissing != 0 {
		t.Errorf("record: newest report %d, runs %v, %d missing; want %d, one run 1–%d, none", d.TelemetrySeq, d.TelemetryRuns, d.TelemetryMissing, 2*n, 2*n)
	}
}

// waitPulls waits, at most 20 s, until the shared consumer name has at
// least n pull requests waiting (as many replicas, when no message is
// pending).
func waitPulls(t *testing.T, url, name string, n int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cons, err := js.Consumer(ctx, natsStream, name)
		cancel()
		waiting := 0
		if err == nil {
			if waiting = cons.CachedInfo().NumWaiting; waiting >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pull requests waiting at %s within 20 s, want %d (%v)", waiting, name, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func deviceRecord(t *testing.T, f *fixture, id string) inventory.Device {
	t.Helper()
	ds, err := inventory.Devices(f.db)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no device %s", id)
	return inventory.Device{}
}

// TestNATSConfigChecked: mqtt.nats and mqtt.nats_ack_wait are checked
// when the file is read, each error naming its key.
func TestNATSConfigChecked(t *testing.T) {
	const tlsBroker = `broker = "ssl://broker.example:8883"`
	for _, tc := range []struct{ from, to, key, want string }{
		{tlsBroker, `broker = "embedded"` + "\nnats = [\"nats://n0:4222\"]", "mqtt.nats", "embedded"},
		{tlsBroker, tlsBroker + "\nnats = [\"http://n0:4222\"]", "mqtt.nats", "want nats://"},
		{tlsBroker, tlsBroker + "\nnats = [\"nats://n0:4222\"]", "mqtt.nats", "TLS"},
		{tlsBroker, `broker = "tcp://n0:1883"` + "\nnats = [\"tls://n0:4222\"]", "mqtt.nats", "TLS"},
		{tlsBroker, tlsBroker + "\nnats = [\"tls://n0:4222\"]\nnats_ack_wait = \"10ms\"", "mqtt.nats_ack_wait", "1s to 1h"},
		{tlsBroker, tlsBroker + "\nnats_ack_wait = \"10s\"", "mqtt.nats_ack_wait", "without mqtt.nats"},
		{"[mqtt]\n", "fleet = \"eu.west\"\n[mqtt]\nnats = [\"tls://n0:4222\"]\n", "fleet", "subject"},
	} {
		_, err := ParseConfig("fleet.toml", strings.Replace(minimalConfig, tc.from, tc.to, 1))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.key+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error on %s saying %q", tc.to, err, tc.key, tc.want)
		}
	}
	c, err := ParseConfig("fleet.toml", strings.Replace(minimalConfig, tlsBroker, tlsBroker+"\nnats = [\"tls://n0:4222\", \"tls://n1:4222\"]", 1))
	if err != nil || len(c.MQTT.NATS) != 2 || c.MQTT.NATSAckWait.Duration != 30*time.Second {
		t.Fatalf("two TLS addresses: %+v, %v; want them with the 30 s default ack wait", c.MQTT, err)
	}
}

// TestFleetOverNATSClusterTLS runs the rollout on the production form of
// the cluster: three nodes with TLS on their MQTT and NATS listeners and
// their routes (certificates from a CA the test makes), every client
// logged in with its own password and permissions (natstest.Auth).
// trit-fleet connects over ssl:// and takes device messages from NATS
// over tls://, both trusting the CA (mqtt.ca_file); the devices trust it
// too.
func TestFleetOverNATSClusterTLS(t *testing.T) {
	devices := map[string]string{}
	for i := range 6 {
		devices[fmt.Sprintf("sim-%d", i)] = fmt.Sprintf("device-secret-%d", i)
	}
	c := natstest.StartTLS(t, 3, natstest.Auth("it", "fleet-secret", devices))
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(c.CAFile())
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("the test CA: %v", err)
	}
	edit := func(dir, config string) string {
		pw := filepath.Join(dir, "mqtt.pass")
		if err := os.WriteFile(pw, []byte("fleet-secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return strings.Replace(config, "[mqtt]\n", fmt.Sprintf("[mqtt]\nusername = \"trit-fleet\"\npassword_file = %q\nca_file = %q\nnats = [%q, %q]\n",
			pw, c.CAFile(), c.Node(0).NATSURL(), c.Node(1).NATSURL()), 1)
	}
	trust := func(id string) []func(*mqtt.ClientOptions) {
		return []func(*mqtt.ClientOptions){func(o *mqtt.ClientOptions) {
			o.SetTLSConfig(&tls.Config{RootCAs: roots}).SetUsername(id).SetPassword(devices[id])
		}}
	}
	addr, token := testFleetOverWith(t, pgtest.Database(t), c.Node(0).MQTTURL(), c.MQTTURLs(), edit, trust)
	if m := string(callAPI(t, addr, token, "GET", "/metrics", nil)); !strings.Contains(m, "trit_fleet_broker_connected 1") {
		t.Errorf("the fleet does not report itself connected:\n%s", m)
	}

	// Without the CA, the fleet's NATS connection is refused.
	m := &MQTTConfig{NATS: []string{c.Node(1).NATSURL()}, Username: "trit-fleet", Timeout: Duration{Duration: 5 * time.Second}, NATSAckWait: Duration{Duration: time.Second}}
	feed, err := NewNATSFeed(m, "it", "x", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := feed.Start(func(string, []byte, func()) {}); err == nil || !strings.Contains(err.Error(), "certificate") {
		feed.Close()
		t.Fatalf("connecting without the CA: %v, want a certificate error", err)
	}
}

// fakeFeed is a Feed whose connection state the test sets.
type fakeFeed struct{ up atomic.Bool }

func (f *fakeFeed) Start(func(string, []byte, func())) error { return nil }
func (f *fakeFeed) Connected() bool                          { return f.up.Load() }
func (f *fakeFeed) Close()                                   {}

// TestNATSPublisherConnected: on NATS the broker counts as connected
// (trit_fleet_broker_connected) only while both the MQTT connection and
// the feed are.
func TestNATSPublisherConnected(t *testing.T) {
	conn, feed := &Conn{}, &fakeFeed{}
	p := natsPublisher{conn, feed}
	for _, tc := range []struct{ mqtt, nats, want bool }{{false, false, false}, {true, false, false}, {false, true, false}, {true, true, true}} {
		conn.connected.Store(tc.mqtt)
		feed.up.Store(tc.nats)
		if got := p.Connected(); got != tc.want {
			t.Errorf("MQTT %v, NATS %v: connected %v, want %v", tc.mqtt, tc.nats, got, tc.want)
		}
	}
}

// TestNATSExampleConfig: fleet/nats/node.conf, the production node's
// configuration, is one nats-server accepts (-t: parsed, certificates
// loaded), with its paths pointed at test files; and trit-fleet's
// permissions in it are exactly those the tests run with
// (natstest.FleetPermissions).
func TestNATSExampleConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "nats", "node.conf"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := natstest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	pki := tlstest.New(t, "example")
	cert, key := pki.Server()
	conf := strings.NewReplacer("/etc/nats-server/node1.crt", cert, "/etc/nats-server/node1.key", key, "/etc/nats-server/ca.crt", pki.CAFile,
		"/var/lib/nats-server/jetstream", t.TempDir()).Replace(string(raw))
	path := filepath.Join(t.TempDir(), "node.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", path, "-t").CombinedOutput(); err != nil {
		t.Fatalf("nats-server -t refuses fleet/nats/node.conf: %v\n%s", err, out)
	}
	pub, sub := natstest.FleetPermissions("main")
	for _, want := range []string{NATSInbox + ".>"} {
		if !slices.Contains(sub, want) {
			t.Errorf("natstest.FleetPermissions lacks %q", want)
		}
	}
	for _, k := range natsKinds {
		for _, want := range []string{"$JS.API.CONSUMER.CREATE." + natsStream + "." + NATSConsumerName("main", k) + ".>",
			"$JS.API.CONSUMER.MSG.NEXT." + natsStream + "." + NATSConsumerName("main", k), "$JS.ACK." + natsStream + "." + NATSConsumerName("main", k) + ".>"} {
			if !slices.Contains(pub, want) {
				t.Errorf("natstest.FleetPermissions lacks %q", want)
			}
		}
	}
	fleetUser := conf[strings.Index(conf, `{user: "trit-fleet"`):strings.Index(conf, `{user: "gw-0001"`)]
	for _, s := range append(pub, sub...) {
		if !strings.Contains(fleetUser, fmt.Sprintf("%q", s)) {
			t.Errorf("trit-fleet's permissions in fleet/nats/node.conf lack %q", s)
		}
	}
	if n := strings.Count(fleetUser, `"`) / 2; n != len(pub)+len(sub)+2 { // + user name, password
		t.Errorf("trit-fleet's permissions in fleet/nats/node.conf name %d subjects, the tests' %d", n-2, len(pub)+len(sub))
	}
}

// TestNATSFeedNoLossUnderLoad: six MQTT publishers on the three nodes
// send 10,000 QoS 1 messages as fast as the cluster acknowledges them;
// two replicas' feeds, the only consumers of those subjects, receive
// every one the cluster acknowledged. (nats-server 2.9.10 loses acknowledged messages when a
// second consumer wants them — docs/SCALING.md — which is why nothing
// else may subscribe to them at QoS 1.)
func TestNATSFeedNoLossUnderLoad(t *testing.T) {
	c := natstest.Start(t, 3)
	const n, publishers = 10000, 6
	var mu sync.Mutex
	got := map[string]int{}
	for r := range 2 {
		// nats-server creates its MQTT streams at the first MQTT connection.
		boot := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(c.Node(r).MQTTURL()).SetClientID(fmt.Sprintf("boot-%d", r)))
		if tok := boot.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("connect: %v", tok.Error())
		}
		boot.Disconnect(10)
		m := &MQTTConfig{NATS: []string{c.Node(r).NATSURL()}, Timeout: Duration{Duration: 10 * time.Second}, NATSAckWait: Duration{Duration: 5 * time.Second}}
		feed, err := NewNATSFeed(m, "f", fmt.Sprint(r), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		err = feed.Start(func(topic string, payload []byte, ack func()) {
			mu.Lock()
			got[topic+" "+string(payload)]++
			mu.Unlock()
			if ack != nil {
				ack()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(feed.Close)
	}
	topics, _ := wire.NewTopics("f")
	// Each publisher is an agent: it sends a message until the broker
	// acknowledges it, connecting again when the broker drops or refuses
	// it. On a loaded machine nats-server does both at times ("unable to
	// persist session … timeout after 5s", "no JetStream ack within 5s;
	// closing the connection"): a message not acknowledged is the
	// device's to send again, not one the fleet lost. Only acknowledged
	// messages must reach the feeds.
	acked := make([]atomic.Bool, n)
	var retries atomic.Int64
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(2 * time.Minute)
			var cl mqtt.Client
			defer func() {
				if cl != nil {
					cl.Disconnect(10)
				}
			}()
			var last error
			for k := p; k < n; {
				if time.Now().After(deadline) {
					t.Errorf("gw-%d: message %d not acknowledged within 2 min: %v", p, k, last)
					return
				}
				if cl == nil {
					o := mqtt.NewClientOptions().AddBroker(c.Node(p % 3).MQTTURL()).SetClientID(fmt.Sprintf("gw-%d", p)).
						SetCleanSession(false).SetProtocolVersion(4).SetAutoReconnect(false).SetConnectTimeout(10 * time.Second)
					cl = mqtt.NewClient(o)
					if tok := cl.Connect(); !tok.WaitTimeout(15*time.Second) || tok.Error() != nil {
						last = fmt.Errorf("connect: %v", tok.Error())
						cl = nil
						retries.Add(1)
						time.Sleep(200 * time.Millisecond)
						continue
					}
				}
				if tok := cl.Publish(topics.Telemetry(fmt.Sprintf("gw-%d", p)), 1, false, []byte(fmt.Sprint(k))); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
					last = fmt.Errorf("publish: %v", tok.Error())
					cl.Disconnect(10)
					cl = nil
					retries.Add(1)
					continue
				}
				acked[k].Store(true)
				k += publishers
			}
		}()
	}
	wg.Wait()
	if r := retries.Load(); r > 0 {
		t.Logf("the broker refused or dropped the publishers %d times; they connected and sent again", r)
	}
	missing := func() (out []int) {
		mu.Lock()
		defer mu.Unlock()
		for k := range n {
			if acked[k].Load() && got[topics.Telemetry(fmt.Sprintf("gw-%d", k%publishers))+" "+fmt.Sprint(k)] == 0 {
				out = append(out, k)
			}
		}
		return out
	}
	// What a replica had not acknowledged would come again after the ack
	// wait: give it two.
	deadline := time.Now().Add(15 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		t.Errorf("%d of %d messages, all acknowledged, never reached the feeds: %v", len(m), n, m[:min(len(m), 20)])
	}
}

// TestNATSRetainedStatesFillInventory: a device that published its
// retained state before the fleet ever ran, and is gone, is in the
// inventory of a fleet started afterwards on mqtt.nats (which takes the
// retained states at each connection), with the least-privilege
// permissions.
func TestNATSRetainedStatesFillInventory(t *testing.T) {
	c := natstest.StartConfig(t, 3, natstest.Auth("it", "fleet-secret", map[string]string{"gw-early": "device-secret"}))
	dev := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(c.Node(2).MQTTURL()).SetClientID("gw-early").
		SetUsername("gw-early").SetPassword("device-secret").SetCleanSession(false))
	// A persistent session's first store on a cluster just started can
	// outlast the server's own 5 s limit ("unable to persist session"),
	// seen once here; an agent connects again, and so does this device.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		tok := dev.Connect()
		if tok.WaitTimeout(15*time.Second) && tok.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("device connect: %v", tok.Error())
		}
	}
	topics, _ := wire.NewTopics("it")
	raw, err := (&wire.State{Device: "gw-early", Session: 3, Online: true, Labels: map[string]string{"ring": "early"}, Health: "ok"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if tok := dev.Publish(topics.State("gw-early"), 1, true, raw); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	dev.Disconnect(250)

	files := writeFleetFiles(t, c.Node(0).MQTTURL())
	pw := filepath.Join(files.dir, "mqtt.pass")
	if err := os.WriteFile(pw, []byte("fleet-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, strings.Replace(files.config, "[mqtt]\n", fmt.Sprintf("[mqtt]\nusername = \"trit-fleet\"\npassword_file = %q\nnats = [%q]\n",
		pw, c.Node(1).NATSURL()), 1))
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ds []inventory.Device
		json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/devices", nil), &ds)
		if len(ds) == 1 && ds[0].ID == "gw-early" && ds[0].Labels["ring"] == "early" && ds[0].Session == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("inventory %+v, want gw-early from its retained state", ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNATSFeedWindow: a replica holds at most its window of messages
// delivered and not acknowledged; the rest wait in the stream, not in its
// queue, and come once it acknowledges. A message it never acknowledges
// stops taking room after the ack wait (JetStream delivers it again).
func TestNATSFeedWindow(t *testing.T) {
	c := natstest.Start(t, 1)
	dev := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(c.Node(0).MQTTURL()).SetClientID("gw-1").SetCleanSession(false))
	if tok := dev.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("device connect: %v", tok.Error())
	}
	defer dev.Disconnect(100)
	const window, n = 8, 40
	m := &MQTTConfig{NATS: []string{c.Node(0).NATSURL()}, Timeout: Duration{Duration: 10 * time.Second}, NATSAckWait: Duration{Duration: 3 * time.Second}}
	feed, err := NewNATSFeed(m, "f", "a", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := cap(feed.window); got != natsWindow {
		t.Errorf("window %d with the default queue, want %d", got, natsWindow)
	}
	feed.window = make(chan struct{}, window)
	var mu sync.Mutex
	var acks []func()
	deliveries := map[string]int{}
	ackNow := false
	err = feed.Start(func(topic string, payload []byte, ack func()) {
		mu.Lock()
		defer mu.Unlock()
		deliveries[string(payload)]++
		if ackNow {
			ack()
			return
		}
		acks = append(acks, ack)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(feed.Close)
	topics, _ := wire.NewTopics("f")
	for k := range n {
		if tok := dev.Publish(topics.Telemetry("gw-1"), 1, false, []byte(fmt.Sprint(k))); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish %d: %v", k, tok.Error())
		}
	}
	held := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, k := range deliveries {
			total += k
		}
		return len(acks), total
	}
	deadline := time.Now().Add(10 * time.Second)
	for h, _ := held(); h < window; h, _ = held() {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages delivered within 10 s, want the window's %d", h, window)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Well within the ack wait: nothing more comes.
	time.Sleep(time.Second)
	if h, total := held(); h != window || total != window {
		t.Fatalf("%d deliveries (%d distinct) held unacknowledged, want the window's %d", total, h, window)
	}
	// Never acknowledged: past the ack wait the window opens again.
	deadline = time.Now().Add(15 * time.Second)
	for _, total := held(); total <= window; _, total = held() {
		if time.Now().After(deadline) {
			t.Fatalf("no delivery past the window 15 s after an ack wait of 3 s: the window never reopened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Acknowledging from now on: every message arrives.
	mu.Lock()
	ackNow = true
	for _, ack := range acks {
		ack()
	}
	mu.Unlock()
	deadline = time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		missing := 0
		for k := range n {
			if deliveries[fmt.Sprint(k)] == 0 {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages never delivered after the replica acknowledged", missing, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
