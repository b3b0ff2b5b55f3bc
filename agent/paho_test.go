package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// TestPahoPacketLimit runs the paho dialer against a real Mosquitto that
// has no packet limit of its own: a message whose packet is exactly the
// dialer's MaxPacket arrives, one a byte larger closes the connection with
// a clear error before paho reads (and allocates) its body, and a 10 MB one
// after it never arrives.
func TestPahoPacketLimit(t *testing.T) {
	broker := mqtttest.Start(t)
	const limit = 64 * 1024
	const topic = "t/x"
	// PUBLISH QoS 1 of topic t/x: 1 type byte, 3 length bytes (for sizes
	// from 16 KiB to 2 MiB), 2+3 topic bytes, 2 packet ID bytes.
	fits := limit - (1 + 3 + 2 + len(topic) + 2)

	d := &PahoDialer{Broker: broker.URL(), KeepAlive: 5 * time.Second, Timeout: 5 * time.Second, MaxPacket: limit}
	got := make(chan Message, 4)
	lost := make(chan error, 1)
	conn, err := d.Dial(context.Background(), DialOptions{
		ClientID:      "limit-test",
		Will:          Message{Topic: "t/will", Payload: []byte("gone"), QoS: 1},
		Subscriptions: []Subscription{{Topic: topic, QoS: 1}},
		OnMessage:     func(m Message) { got <- m },
		OnLost:        func(err error) { lost <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	pub := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(broker.URL()).SetClientID("limit-pub"))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publisher: %v", tok.Error())
	}
	defer pub.Disconnect(100)
	send := func(n int) {
		t.Helper()
		if tok := pub.Publish(topic, 1, false, bytes.Repeat([]byte{'x'}, n)); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish %d bytes: %v", n, tok.Error())
		}
	}

	send(fits)
	select {
	case m := <-got:
		if len(m.Payload) != fits {
			t.Fatalf("got %d bytes, want %d", len(m.Payload), fits)
		}
	case err := <-lost:
		t.Fatalf("a packet of exactly the limit closed the connection: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a packet of exactly the limit never arrived")
	}

	send(fits + 1)
	send(10 << 20)
	select {
	case m := <-got:
		t.Fatalf("a %d-byte message over the limit arrived", len(m.Payload))
	case err := <-lost:
		if !errors.Is(err, wire.ErrTooLarge) && !strings.Contains(err.Error(), "byte limit") {
			t.Fatalf("connection lost with %v, want the packet limit", err)
		}
		t.Logf("connection closed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the connection survived a packet over the limit")
	}
	select {
	case m := <-got:
		t.Fatalf("a %d-byte message over the limit arrived", len(m.Payload))
	default:
	}
}

// TestMaxPacketFollowsBundleLimit: the agent's packet limit leaves room for
// the largest bundle it accepts.
func TestMaxPacketFollowsBundleLimit(t *testing.T) {
	if got := MaxPacket(30 * 1024); got != wire.MaxPacket {
		t.Errorf("MaxPacket(30 KiB) = %d, want wire.MaxPacket %d", got, wire.MaxPacket)
	}
	if got := MaxPacket(1 << 20); got < 1<<20+300 {
		t.Errorf("MaxPacket(1 MiB) = %d: no room for the topic and headers", got)
	}
}

// TestSubscriptionRefused: a broker that refuses the agent's subscription
// to its own commands (SUBACK 0x80, e.g. an ACL mistake) must not leave the
// agent connected and deaf: every attempt fails with an error naming the
// topic and the ACL, is retried with backoff, and no online state is
// published.
func TestSubscriptionRefused(t *testing.T) {
	broker := mqtttest.StartSubscribeACL(t,
		"trit/v1/+/devices/+/state", "trit/v1/+/devices/+/events", "trit/v1/+/devices/+/telemetry",
		"trit/v1/+/devices/+/acks", "trit/v1/+/bundles/+")
	k := newKeys(t)
	f := newFleet(t, broker.URL(), k)
	cfg := testConfig(t, k, broker.URL())
	tp, _ := wire.NewTopics(testFleet)
	expectRefused(t, f, cfg, "refused subscription to "+tp.Desired(testDevice))
}

// TestWarnsOnCertName: a client certificate whose common name is not the
// device ID is logged at start-up: the production broker would use the
// name, and its ACL would refuse the device's topics.
func TestWarnsOnCertName(t *testing.T) {
	p := newTestPKI(t, "fleet")
	k := newKeys(t)
	cfg := testConfig(t, k, "ssl://127.0.0.1:1")
	cfg.MQTT.CAFile = p.caFile
	cfg.MQTT.CertFile, cfg.MQTT.KeyFile = p.client(t, "gw-other")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var rec logRecorder
	stop := startAgent(t, cfg, &Options{Logger: rec.logger()})
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.records("trit-agent starting")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	var warned bool
	for _, line := range strings.Split(rec.buf.String(), "\n") {
		warned = warned || strings.Contains(line, "names another identity") && strings.Contains(line, `"common_name":"gw-other"`)
	}
	if !warned {
		t.Errorf("no warning about the certificate's name:\n%s", rec.buf.String())
	}
}

// TestPahoSpeaksOnlyMQTT311: a broker that closes every connection without
// a CONNACK (nats-server does so while JetStream is busy) sees only MQTT
// 3.1.1 CONNECTs from the agent — never paho's fallback to MQTT 3.1
// ("MQIsdp"), which doubles the connections to a broker already refusing.
func TestPahoSpeaksOnlyMQTT311(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	protocols := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// CONNECT: fixed header (type, remaining length of one byte
			// here), then the protocol name as a length-prefixed string
			// and the protocol level.
			buf := make([]byte, 64)
			n, _ := io.ReadAtLeast(c, buf, 12)
			if n >= 4 {
				k := int(buf[2])<<8 | int(buf[3])
				if 4+k < n {
					protocols <- fmt.Sprintf("%s/%d", buf[4:4+k], buf[4+k])
				}
			}
			c.Close()
		}
	}()
	d := &PahoDialer{Broker: "tcp://" + l.Addr().String(), KeepAlive: 5 * time.Second, Timeout: 2 * time.Second}
	if _, err := d.Dial(context.Background(), DialOptions{ClientID: "gw-1"}); err == nil {
		t.Fatal("connected to a broker that sends no CONNACK")
	}
	var got []string
	for len(protocols) > 0 {
		got = append(got, <-protocols)
	}
	if len(got) == 0 {
		t.Fatal("the broker saw no CONNECT")
	}
	for _, p := range got {
		if p != "MQTT/4" {
			t.Fatalf("CONNECTs seen %v, want only MQTT/4 (3.1.1)", got)
		}
	}
}
