package agent

import (
	"context"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// TestPahoFailover: a dialer with two broker addresses connects through
// whichever is up, and after losing its broker connects through the other;
// messages arrive both times. (Two independent Mosquittos stand for two
// nodes of a cluster.)
func TestPahoFailover(t *testing.T) {
	b1, b2 := mqtttest.Start(t), mqtttest.Start(t)
	d := &PahoDialer{Broker: b1.URL(), Brokers: []string{b1.URL(), b2.URL()}, KeepAlive: 2 * time.Second, Timeout: 3 * time.Second}
	const topic = "t/cmd"
	dial := func() (Conn, chan Message, chan error) {
		t.Helper()
		got, lost := make(chan Message, 4), make(chan error, 1)
		conn, err := d.Dial(context.Background(), DialOptions{
			ClientID:      "gw-failover",
			Will:          Message{Topic: "t/will", Payload: []byte("gone"), QoS: 1},
			Subscriptions: []Subscription{{Topic: topic, QoS: 1}},
			OnMessage:     func(m Message) { got <- m },
			OnLost:        func(err error) { lost <- err },
		})
		if err != nil {
			t.Fatalf("dial with one broker of two up: %v", err)
		}
		return conn, got, lost
	}
	reaches := func(b *mqtttest.Broker, got chan Message) {
		t.Helper()
		pub := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(b.URL()).SetClientID("pub"))
		if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publisher: %v", tok.Error())
		}
		defer pub.Disconnect(100)
		pub.Publish(topic, 1, false, []byte("x")).WaitTimeout(5 * time.Second)
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatalf("a message published on %s did not arrive", b.URL())
		}
	}

	b1.Stop()
	conn, got, lost := dial()
	reaches(b2, got)
	b1.Restart()
	b2.Stop()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection to the stopped broker was not reported lost")
	}
	conn.Close()
	conn, got, _ = dial()
	defer conn.Close()
	reaches(b1, got)
	// Each dial starts one address further along: with both up, two
	// dials in a row use both.
	b2.Restart()
	first, second := d.order("gw-failover"), d.order("gw-failover")
	if first[0] == second[0] {
		t.Errorf("two dials start at the same address %s", first[0])
	}
}

// TestBrokersConfig: mqtt.brokers takes the other addresses of a cluster;
// each is checked, and broker may then be left out.
func TestBrokersConfig(t *testing.T) {
	m := MQTTConfig{Broker: "tls://a:8883", Brokers: []string{"tls://b:8883", "tls://a:8883", "tls://c:8883"}}
	if got := m.Addresses(); len(got) != 3 || got[0] != "tls://a:8883" || got[2] != "tls://c:8883" {
		t.Errorf("Addresses = %q", got)
	}
	if !m.tlsScheme() {
		t.Error("tls:// addresses not seen as TLS")
	}
}

// TestBundleSubscriptionRetried: a broker that refuses the subscription to
// a bundle's topic for a while (nats-server after a node failure) does not
// fail the install: the agent retries the subscription on the same
// connection and installs once it is granted.
func TestBundleSubscriptionRetried(t *testing.T) {
	k := newKeys(t)
	f := newFakeFleet(t, k)
	cfg := testConfig(t, k, "tcp://fake:1883")
	cfg.MQTT.ReconnectMin.Duration, cfg.MQTT.ReconnectMax.Duration = 50*time.Millisecond, 200*time.Millisecond
	var rec logRecorder
	startAgent(t, cfg, &Options{Dialer: f.b, Logger: rec.logger()})
	f.waitOnline()
	f.b.mu.Lock()
	f.b.refuse = 3
	f.b.mu.Unlock()
	h := f.bundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	if ev := f.terminal(f.deploy(h, "r1")); ev.State != wire.JobSucceeded {
		t.Fatalf("install with the bundle's subscription refused 3 times: %s %q %q", ev.State, ev.Code, ev.Reason)
	}
	if n := len(rec.records("mqtt subscribe failed; retrying")); n != 3 {
		t.Errorf("%d refused subscriptions logged, want 3", n)
	}
	if n := len(rec.records("mqtt subscribed after a retry")); n != 1 {
		t.Errorf("%d successful retries logged, want 1", n)
	}
}
