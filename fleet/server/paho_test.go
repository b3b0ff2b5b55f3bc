package server

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// logBuffer collects a logger's text output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// waitUntil polls cond for at most 20 s; the bound is only a failure
// deadline, never what the test measures.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testConn(t *testing.T, broker string, log *slog.Logger) *Conn {
	t.Helper()
	c, err := NewConn(&MQTTConfig{ClientID: "trit-fleet", Timeout: Duration{Duration: 5 * time.Second}}, broker, log)
	if err != nil {
		t.Fatal(err)
	}
	c.backoff = wire.Backoff{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}
	t.Cleanup(c.Close)
	return c
}

var serviceFilters = func() []string {
	tp, _ := wire.NewTopics("it")
	return []string{tp.AllDevices(wire.KindState), tp.AllDevices(wire.KindEvents), tp.AllDevices(wire.KindTelemetry), tp.AllDevices(wire.KindResponses)}
}()

// TestConnSubscriptionRefused: a broker whose ACL does not let the fleet
// subscribe to device telemetry (SUBACK 0x80) fails the fleet's start with
// an error naming the filter, instead of a "connected" fleet that never
// hears telemetry.
func TestConnSubscriptionRefused(t *testing.T) {
	b := mqtttest.StartSubscribeACL(t, serviceFilters[0], serviceFilters[1])
	var logs logBuffer
	c := testConn(t, b.URL(), logs.logger())
	err := c.Connect(serviceFilters, func(string, []byte) {}, nil)
	if err == nil {
		t.Fatal("Connect succeeded although the broker refused a subscription")
	}
	if !strings.Contains(err.Error(), "refused the subscription to "+serviceFilters[2]) {
		t.Errorf("error %q does not name the refused filter", err)
	}
	if c.Connected() {
		t.Error("Connected() after a refused subscription")
	}
	if n := logs.count("connected to the MQTT broker"); n > 0 {
		t.Errorf("logged %q although a subscription was refused", "connected to the MQTT broker")
	}
}

// TestConnReconnects: after a broker restart the connection comes back by
// itself with its subscriptions; after a restart with an ACL that refuses
// one, it logs the refusal, reports not connected and keeps retrying until
// the ACL is fixed.
func TestConnReconnects(t *testing.T) {
	b := mqtttest.StartSubscribeACL(t, serviceFilters...)
	var logs logBuffer
	c := testConn(t, b.URL(), logs.logger())
	got := make(chan string, 10)
	var mu sync.Mutex
	n := 0 // onConnect calls
	onConnect := func() {
		mu.Lock()
		n++
		mu.Unlock()
	}
	if err := c.Connect(serviceFilters, func(topic string, _ []byte) { got <- topic }, onConnect); err != nil {
		t.Fatal(err)
	}
	if !c.Connected() {
		t.Fatal("not Connected() after Connect")
	}
	device := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(b.URL()).SetClientID("gw-1").
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(50 * time.Millisecond).SetMaxReconnectInterval(100 * time.Millisecond))
	if tok := device.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer device.Disconnect(100)
	telemetry := strings.Replace(serviceFilters[2], "+", "gw-1", 1)
	heard := func() {
		t.Helper()
		waitUntil(t, "device telemetry heard", func() bool {
			if tok := device.Publish(telemetry, 0, false, []byte("{}")); !tok.WaitTimeout(time.Second) {
				return false
			}
			select {
			case topic := <-got:
				return topic == telemetry
			case <-time.After(100 * time.Millisecond):
				return false
			}
		})
	}
	heard()

	b.SetSubscribeACL(serviceFilters[0], serviceFilters[1])
	b.Restart()
	waitUntil(t, "refused subscription logged", func() bool { return logs.count("refused the subscription to "+serviceFilters[2]) >= 2 })
	if c.Connected() {
		t.Error("Connected() while the broker refuses a subscription")
	}
	if err := c.Publish(strings.Replace(serviceFilters[0], "+", "gw-1", 1), 1, false, []byte("x")); err == nil {
		t.Error("Publish succeeded while not connected")
	}

	b.SetSubscribeACL(serviceFilters...)
	b.Restart()
	waitUntil(t, "reconnected", c.Connected)
	heard()
	waitUntil(t, "onConnect after each connection", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n >= 2
	})
}

// TestConnWarnsOnCertName: a client certificate whose common name is not
// the client ID is logged at start-up (Mosquitto would use the name).
func TestConnWarnsOnCertName(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t) // common name 127.0.0.1
	var logs logBuffer
	if _, err := NewConn(&MQTTConfig{ClientID: "trit-fleet", CertFile: certFile, KeyFile: keyFile, Timeout: Duration{Duration: time.Second}}, "ssl://127.0.0.1:1", logs.logger()); err != nil {
		t.Fatal(err)
	}
	if logs.count("names another identity") != 1 || logs.count("common_name=127.0.0.1") != 1 {
		t.Errorf("no warning:\n%s", logs.buf.String())
	}
}
