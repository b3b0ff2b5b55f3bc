package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire"
)

// embeddedEnv is an embedded broker with device credentials for gw-1 and
// gw-2 and the fleet's own client connected.
type embeddedEnv struct {
	b       *EmbeddedBroker
	credf   string
	secrets map[string]string
	fleet   mqtt.Client
	tp      wire.Topics
}

func startEmbeddedEnv(t *testing.T, o *EmbeddedOptions, devices ...string) *embeddedEnv {
	t.Helper()
	dir := t.TempDir()
	e := &embeddedEnv{credf: filepath.Join(dir, "mqtt-credentials"), secrets: map[string]string{}}
	e.tp, _ = wire.NewTopics("it")
	c := credentials{}
	for _, id := range devices {
		s, sum, err := newSecret()
		if err != nil {
			t.Fatal(err)
		}
		e.secrets[id], c[id] = s, sum
	}
	if err := writeCredentials(e.credf, c); err != nil {
		t.Fatal(err)
	}
	if o == nil {
		o = &EmbeddedOptions{}
	}
	o.Credentials = e.credf
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	var err error
	if e.b, err = StartEmbedded(o, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.b.Close() })
	user, secret := e.b.FleetCredentials()
	if e.fleet, err = dialEmbedded(t, e.b.FleetURL(), user, user, secret, nil); err != nil {
		t.Fatalf("the fleet's own client cannot connect: %v", err)
	}
	return e
}

// dialEmbedded connects a client; nil tls for plain TCP.
func dialEmbedded(t *testing.T, url, clientID, user, password string, opts func(*mqtt.ClientOptions)) (mqtt.Client, error) {
	t.Helper()
	o := mqtt.NewClientOptions().AddBroker(url).SetClientID(clientID).SetCleanSession(false).
		SetAutoReconnect(false).SetConnectRetry(false).SetConnectTimeout(5 * time.Second).SetOrderMatters(true)
	if user != "" {
		o.SetUsername(user).SetPassword(password)
	}
	if opts != nil {
		opts(o)
	}
	c := mqtt.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(10 * time.Second) {
		return nil, os.ErrDeadlineExceeded
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c, nil
}

func (e *embeddedEnv) device(t *testing.T, id string, opts func(*mqtt.ClientOptions)) mqtt.Client {
	t.Helper()
	c, err := dialEmbedded(t, e.b.URL(), id, id, e.secrets[id], opts)
	if err != nil {
		t.Fatalf("%s cannot connect with its credentials: %v", id, err)
	}
	return c
}

// msgRecorder collects (topic, payload) pairs a client receives.
type msgRecorder struct {
	mu  sync.Mutex
	got []mqtt.Message
	ch  chan string
}

func record(t *testing.T, c mqtt.Client, filters ...string) *msgRecorder {
	t.Helper()
	r := &msgRecorder{ch: make(chan string, 1000)}
	for _, f := range filters {
		tok := c.Subscribe(f, 1, func(_ mqtt.Client, m mqtt.Message) {
			r.mu.Lock()
			r.got = append(r.got, m)
			r.mu.Unlock()
			r.ch <- m.Topic()
		})
		if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe %s: %v", f, tok.Error())
		}
		if code := tok.(*mqtt.SubscribeToken).Result()[f]; code >= 0x80 {
			t.Fatalf("subscription to %s refused (%#x)", f, code)
		}
	}
	return r
}

// until waits until topic has arrived and returns everything received so
// far.
func (r *msgRecorder) until(t *testing.T, topic string) []mqtt.Message {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		for _, m := range r.got {
			if m.Topic() == topic {
				defer r.mu.Unlock()
				return append([]mqtt.Message(nil), r.got...)
			}
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-timeout:
			t.Fatalf("%s never arrived", topic)
		}
	}
}

func topicsOf(ms []mqtt.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Topic())
	}
	return out
}

func pub(t *testing.T, c mqtt.Client, topic string, qos byte, retained bool, payload []byte) error {
	t.Helper()
	tok := c.Publish(topic, qos, retained, payload)
	if !tok.WaitTimeout(10 * time.Second) {
		return os.ErrDeadlineExceeded
	}
	return tok.Error()
}

// TestEmbeddedRefusesUnauthenticated: anonymous clients, unknown devices
// and wrong secrets are refused, the fleet's identity included.
func TestEmbeddedRefusesUnauthenticated(t *testing.T) {
	e := startEmbeddedEnv(t, nil, "gw-1")
	for _, c := range []struct{ name, id, user, pass string }{
		{"anonymous", "anon", "", ""},
		{"anonymous with a device's client ID", "gw-1", "", ""},
		{"unknown device", "gw-9", "gw-9", e.secrets["gw-1"]},
		{"wrong secret", "gw-1", "gw-1", strings.Repeat("0", 64)},
		{"the fleet's identity with a device's secret", "trit-fleet", "trit-fleet", e.secrets["gw-1"]},
		{"empty secret", "gw-1", "gw-1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := dialEmbedded(t, e.b.URL(), c.id, c.user, c.pass, nil); err == nil {
				t.Fatal("connected")
			}
		})
	}
	e.device(t, "gw-1", nil)
}

// TestEmbeddedACL: the ACL of fleet/mosquitto/acl. Refused QoS 0
// publishes are dropped silently, so each is proved against a marker the
// same client sends afterwards on an allowed topic (a client's messages are
// handled in order); a refused QoS 1 publish closes the device's
// connection.
func TestEmbeddedACL(t *testing.T) {
	e := startEmbeddedEnv(t, nil, "gw-1", "gw-2")
	tp := e.tp
	bundle := tp.Bundle(strings.Repeat("ab", 32))

	t.Run("device writes only its own topics", func(t *testing.T) {
		gw1 := e.device(t, "gw-1", nil)
		seen := record(t, e.fleet, "trit/v1/#")
		forbidden := []string{
			tp.State("gw-2"), tp.Events("gw-2"), tp.Telemetry("gw-2"),
			tp.Desired("gw-2"), tp.Desired("gw-1"), tp.Acks("gw-1"), bundle, "trit/v1/other/anything", "elsewhere",
		}
		for _, topic := range forbidden {
			if err := pub(t, gw1, topic, 0, true, []byte("forged")); err != nil {
				t.Fatalf("QoS 0 publish: %v", err)
			}
		}
		allowed := []string{tp.State("gw-1"), tp.Events("gw-1"), tp.Telemetry("gw-1")}
		for _, topic := range allowed {
			if err := pub(t, gw1, topic, 1, false, []byte("{}")); err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
		}
		got := topicsOf(seen.until(t, allowed[2]))
		for _, topic := range forbidden {
			if contains(got, topic) {
				t.Errorf("gw-1 published to %s", topic)
			}
			if _, ok := e.b.srv.Topics.Retained.Get(topic); ok {
				t.Errorf("gw-1 left a retained message on %s", topic)
			}
		}
		for _, topic := range allowed {
			if !contains(got, topic) {
				t.Errorf("gw-1's own %s did not arrive", topic)
			}
		}
	})

	t.Run("a refused QoS 1 publish closes the connection", func(t *testing.T) {
		lost := make(chan error, 1)
		gw1 := e.device(t, "gw-1", func(o *mqtt.ClientOptions) {
			o.SetConnectionLostHandler(func(_ mqtt.Client, err error) { lost <- err })
		})
		gw1.Publish(tp.State("gw-2"), 1, true, []byte(`{"phantom":true}`)) // never acknowledged
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Fatal("connection still open")
		}
		if _, ok := e.b.srv.Topics.Retained.Get(tp.State("gw-2")); ok {
			t.Error("gw-1 set gw-2's retained state")
		}
	})

	t.Run("retained bundles cannot be overwritten by a device", func(t *testing.T) {
		if err := pub(t, e.fleet, bundle, 1, true, []byte("signed bundle")); err != nil {
			t.Fatal(err)
		}
		gw1 := e.device(t, "gw-1", nil)
		pub(t, gw1, bundle, 0, true, []byte("forged bundle"))
		seen := record(t, e.fleet, tp.Telemetry("gw-1"))
		pub(t, gw1, tp.Telemetry("gw-1"), 1, false, []byte("{}"))
		seen.until(t, tp.Telemetry("gw-1"))
		if pk, ok := e.b.srv.Topics.Retained.Get(bundle); !ok || string(pk.Payload) != "signed bundle" {
			t.Errorf("retained bundle is %q, want the fleet's", pk.Payload)
		}
	})

	t.Run("device reads only its own commands", func(t *testing.T) {
		// Retained before the device subscribes, and live afterwards.
		if err := pub(t, e.fleet, tp.Desired("gw-2"), 1, true, []byte("cmd")); err != nil {
			t.Fatal(err)
		}
		gw1 := e.device(t, "gw-1", nil)
		refused := []string{"#", "trit/v1/#", "trit/v1/it/devices/+/desired", "trit/v1/it/devices/gw-2/#", tp.Desired("gw-2"),
			tp.State("gw-2"), "trit/v1/it/devices/gw-1/#", "$SYS/#", "$share/g/" + tp.Desired("gw-1")}
		for _, f := range refused {
			// (paho's router would call this handler for every matching
			// message, granted subscription or not.)
			tok := gw1.Subscribe(f, 1, func(mqtt.Client, mqtt.Message) {})
			if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
				t.Fatalf("subscribe %s: %v", f, tok.Error())
			}
			// One result, keyed by the filter (without $share/group/).
			for _, code := range tok.(*mqtt.SubscribeToken).Result() {
				if code < 0x80 {
					t.Errorf("gw-1's subscription to %s granted (%#x)", f, code)
				}
			}
		}
		seen := record(t, gw1, tp.Desired("gw-1"), tp.Acks("gw-1"), "trit/v1/+/bundles/+")
		pub(t, e.fleet, tp.Desired("gw-2"), 1, false, []byte("cmd"))
		pub(t, e.fleet, tp.Acks("gw-2"), 1, false, []byte("ack"))
		pub(t, e.fleet, tp.State("gw-2"), 1, false, []byte("state"))
		pub(t, e.fleet, tp.Acks("gw-1"), 1, false, []byte("ack"))
		// The retained bundle arrives after the SUBACK, in no fixed order
		// with the live messages; gw-1's own ack is the marker for those.
		seen.until(t, bundle)
		got := topicsOf(seen.until(t, tp.Acks("gw-1")))
		for _, g := range got {
			if strings.Contains(g, "gw-2") {
				t.Errorf("gw-1 received %s", g)
			}
		}
	})

	t.Run("a Last Will on another device's topic is refused", func(t *testing.T) {
		if _, err := dialEmbedded(t, e.b.URL(), "gw-1", "gw-1", e.secrets["gw-1"], func(o *mqtt.ClientOptions) {
			o.SetWill(tp.State("gw-2"), `{"online":false}`, 1, true)
		}); err == nil {
			t.Error("gw-1 connected with a will on gw-2's state")
		}
		if _, err := dialEmbedded(t, e.b.URL(), "gw-1", "gw-1", e.secrets["gw-1"], func(o *mqtt.ClientOptions) {
			o.SetWill(tp.State("gw-1"), `{"online":false}`, 1, true)
		}); err != nil {
			t.Errorf("gw-1 cannot set its will on its own state: %v", err)
		}
	})
}

// TestEmbeddedClientIDBound: a client ID belongs to its identity; another
// identity asking for it is refused and the real client stays connected
// (a QoS 1 round trip after the refusal proves it).
func TestEmbeddedClientIDBound(t *testing.T) {
	e := startEmbeddedEnv(t, nil, "gw-1", "gw-2")
	var mu sync.Mutex
	lost := map[string]bool{}
	gw1 := e.device(t, "gw-1", func(o *mqtt.ClientOptions) {
		o.SetConnectionLostHandler(func(mqtt.Client, error) { mu.Lock(); lost["gw-1"] = true; mu.Unlock() })
	})
	fleetUser, _ := e.b.FleetCredentials()
	for _, c := range []struct{ id, user, pass string }{
		{"gw-1", "gw-2", e.secrets["gw-2"]},
		{fleetUser, "gw-2", e.secrets["gw-2"]},
		{"gw-1", "", ""},
		{fleetUser, "", ""},
	} {
		if _, err := dialEmbedded(t, e.b.URL(), c.id, c.user, c.pass, nil); err == nil {
			t.Errorf("user %q connected with client ID %s", c.user, c.id)
		}
	}
	for name, c := range map[string]mqtt.Client{"gw-1": gw1, fleetUser: e.fleet} {
		topic := e.tp.State("gw-1")
		if name == fleetUser {
			topic = e.tp.Desired("gw-1")
		}
		if err := pub(t, c, topic, 1, false, []byte("{}")); err != nil || !c.IsConnectionOpen() {
			t.Errorf("%s lost its connection: %v", name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if lost["gw-1"] {
		t.Error("gw-1 was disconnected")
	}
}

// TestEmbeddedPacketLimit: a packet over wire.MaxPacket closes the
// sender's connection before the broker reads it: nothing is delivered or
// retained, and the fleet stays connected.
func TestEmbeddedPacketLimit(t *testing.T) {
	e := startEmbeddedEnv(t, nil, "gw-1")
	seen := record(t, e.fleet, e.tp.AllDevices(wire.KindTelemetry))
	lost := make(chan error, 1)
	gw1 := e.device(t, "gw-1", func(o *mqtt.ClientOptions) {
		o.SetConnectionLostHandler(func(_ mqtt.Client, err error) { lost <- err })
	})
	small := bytes.Repeat([]byte{'x'}, wire.MaxPacket-200)
	if err := pub(t, gw1, e.tp.Telemetry("gw-1"), 1, true, small); err != nil {
		t.Fatalf("a packet under the limit: %v", err)
	}
	seen.until(t, e.tp.Telemetry("gw-1"))
	gw1.Publish(e.tp.Telemetry("gw-1"), 1, true, bytes.Repeat([]byte{'y'}, 10<<20)) // never acknowledged
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("a 10 MB packet did not close the connection")
	}
	if pk, _ := e.b.srv.Topics.Retained.Get(e.tp.Telemetry("gw-1")); len(pk.Payload) != len(small) {
		t.Errorf("retained telemetry is %d bytes, want the %d-byte one", len(pk.Payload), len(small))
	}
	if err := pub(t, e.fleet, e.tp.Desired("gw-1"), 1, false, []byte("{}")); err != nil {
		t.Errorf("the fleet lost its connection: %v", err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, m := range seen.got {
		if len(m.Payload()) > wire.MaxPacket {
			t.Errorf("the fleet received %d bytes", len(m.Payload()))
		}
	}
}

// TestEmbeddedRetainedNoExpiry: a retained bundle published two days ago
// is still there after the broker's expiry sweep (mochi's default drops
// retained messages after 24 h). The sweep is observed, not waited for: a
// marker that must expire (an MQTT 5 message whose own expiry has passed)
// disappears in the same sweep that would drop the bundle.
func TestEmbeddedRetainedNoExpiry(t *testing.T) {
	e := startEmbeddedEnv(t, nil)
	bundle := e.tp.Bundle(strings.Repeat("cd", 32))
	if err := pub(t, e.fleet, bundle, 1, true, []byte("signed bundle")); err != nil {
		t.Fatal(err)
	}
	retained := e.b.srv.Topics.Retained
	pk, ok := retained.Get(bundle)
	if !ok {
		t.Fatal("bundle not retained")
	}
	pk.Created = time.Now().Add(-48 * time.Hour).Unix()
	retained.Add(bundle, pk)
	const marker = "trit/v1/it/marker"
	e.b.srv.Topics.RetainMessage(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, TopicName: marker, Payload: []byte("m"),
		ProtocolVersion: 5, Created: time.Now().Unix(), Expiry: time.Now().Add(-time.Minute).Unix(),
	})
	waitUntil(t, "the expiry sweep", func() bool { _, ok := retained.Get(marker); return !ok })
	if _, ok := retained.Get(bundle); !ok {
		t.Fatal("the two-day-old retained bundle expired")
	}
}

// TestEmbeddedListenAddress: plain TCP only on loopback.
func TestEmbeddedListenAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:1883", ":1883"} {
		if _, err := StartEmbedded(&EmbeddedOptions{Listen: addr, Credentials: filepath.Join(t.TempDir(), "none")}, nil); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("%s without TLS: %v", addr, err)
		}
	}
}

// TestEmbeddedTLS: with a server certificate devices connect over TLS
// (trusting its CA), while the fleet's own client uses the private loopback
// listener.
func TestEmbeddedTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	e := startEmbeddedEnv(t, &EmbeddedOptions{CertFile: certFile, KeyFile: keyFile}, "gw-1")
	if !strings.HasPrefix(e.b.URL(), "ssl://") || !strings.HasPrefix(e.b.FleetURL(), "tcp://127.0.0.1:") {
		t.Fatalf("URLs %s, %s", e.b.URL(), e.b.FleetURL())
	}
	seen := record(t, e.fleet, e.tp.State("gw-1"))
	gw1 := e.device(t, "gw-1", func(o *mqtt.ClientOptions) {
		o.SetTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	})
	pub(t, gw1, e.tp.State("gw-1"), 1, false, []byte("{}"))
	seen.until(t, e.tp.State("gw-1"))
	if _, err := dialEmbedded(t, strings.Replace(e.b.URL(), "ssl://", "tcp://", 1), "gw-1", "gw-1", e.secrets["gw-1"], nil); err == nil {
		t.Error("plain TCP accepted on the TLS listener")
	}
}

// TestEmbeddedCredentialsReload: credentials added or removed while the
// broker runs apply to the next connection; a broken file leaves the
// previous credentials in force.
func TestEmbeddedCredentialsReload(t *testing.T) {
	e := startEmbeddedEnv(t, nil, "gw-1")
	c, _, err := readCredentials(e.credf)
	if err != nil {
		t.Fatal(err)
	}
	secret, sum, _ := newSecret()
	c["gw-3"] = sum
	if err := writeCredentials(e.credf, c); err != nil {
		t.Fatal(err)
	}
	if _, err := dialEmbedded(t, e.b.URL(), "gw-3", "gw-3", secret, nil); err != nil {
		t.Fatalf("a device added while running cannot connect: %v", err)
	}
	if err := os.WriteFile(e.credf, []byte("gw-1 not-a-hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dialEmbedded(t, e.b.URL(), "gw-1", "gw-1", e.secrets["gw-1"], nil); err != nil {
		t.Errorf("a broken file locked gw-1 out: %v", err)
	}
	delete(c, "gw-1")
	if err := writeCredentials(e.credf, c); err != nil {
		t.Fatal(err)
	}
	if _, err := dialEmbedded(t, e.b.URL(), "gw-1", "gw-1", e.secrets["gw-1"], nil); err == nil {
		t.Error("a removed device connected")
	}
}

// selfSigned writes a self-signed server certificate for 127.0.0.1.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestFleetOverEmbeddedBroker runs Serve with the embedded broker as an
// operator sets it up: device credentials made with `trit-fleet
// credentials add`, devices logging in with them, a rollout to all of
// them; a device without credentials is refused.
func TestFleetOverEmbeddedBroker(t *testing.T) {
	files := writeFleetFiles(t, "embedded")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	config := strings.Replace(files.config, `broker = "embedded"`, fmt.Sprintf("broker = \"embedded\"\nembedded_listen = %q\nembedded_credentials = %q",
		listen, filepath.Join(files.dir, "mqtt-credentials")), 1)
	confPath := filepath.Join(files.dir, "fleet.toml")
	if err := os.WriteFile(confPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := []string{"sim-0", "sim-1", "sim-2"}
	for _, id := range ids {
		var out, errb bytes.Buffer
		if code := Main([]string{"credentials", "add", id, "--config", confPath, "--password-file", filepath.Join(files.dir, id+".password")}, &out, &errb); code != 0 {
			t.Fatalf("credentials add %s: %s", id, errb.String())
		}
	}
	addr, _ := serve(t, config)
	url := "tcp://" + listen

	if _, err := dialEmbedded(t, url, "sim-9", "", "", nil); err == nil {
		t.Fatal("a device without credentials connected")
	}
	for _, id := range ids {
		secret, err := os.ReadFile(filepath.Join(files.dir, id+".password"))
		if err != nil {
			t.Fatal(err)
		}
		startDevice(t, url, id, files, func(o *mqtt.ClientOptions) {
			o.SetUsername(id).SetPassword(strings.TrimSpace(string(secret)))
		})
	}
	waitUntil(t, "3 devices in the inventory", func() bool {
		var ds []inventory.Device
		json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/devices", nil), &ds)
		return len(ds) == 3
	})
	priv, err := bundle.LoadPrivateKey(files.releasePriv)
	if err != nil {
		t.Fatal(err)
	}
	var info api.BundleInfo
	json.Unmarshal(callAPI(t, addr, files.token, "POST", "/v1/bundles", fleettest.SignedBundle(t, "vib", 1, priv)), &info)
	req := fmt.Sprintf(`{"id":"emb-1","bundle":%q,"devices":["sim-0","sim-1","sim-2"],"pace":{"phases":[{"percent":100}]},"abort":{"on":"any","threshold_percent":0,"min_executed":1}}`, info.Hash)
	callAPI(t, addr, files.token, "POST", "/v1/rollouts", []byte(req))
	var r rollout.Rollout
	waitUntil(t, "rollout done", func() bool {
		json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/rollouts/emb-1", nil), &r)
		return r.State.Done()
	})
	if r.State != api.RolloutCompleted || r.Successes != 3 {
		t.Fatalf("rollout %s (%s), counts %v", r.State, r.Reason, r.Counts())
	}
	if m := callAPI(t, addr, files.token, "GET", "/metrics", nil); !strings.Contains(string(m), "trit_fleet_broker_connected 1") {
		t.Errorf("metrics do not report the broker connection:\n%s", m)
	}
}

// TestEmbeddedConnectTimeout: a connection that never sends its CONNECT is
// closed after connectTimeout (shortened here); one that does is not.
func TestEmbeddedConnectTimeout(t *testing.T) {
	defer func(d time.Duration) { connectTimeout = d }(connectTimeout)
	connectTimeout = 200 * time.Millisecond
	e := startEmbeddedEnv(t, nil, "gw-1")
	c, err := net.Dial("tcp", strings.TrimPrefix(e.b.URL(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // failure bound only
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent connection was not closed by the broker: %v", err)
	}
	gw1 := e.device(t, "gw-1", func(o *mqtt.ClientOptions) { o.SetKeepAlive(30 * time.Second) })
	// Still connected well after connectTimeout: a QoS 1 round trip after a
	// silent connection was closed proves the deadline was lifted.
	c2, _ := net.Dial("tcp", strings.TrimPrefix(e.b.URL(), "tcp://"))
	c2.SetReadDeadline(time.Now().Add(20 * time.Second))
	c2.Read(make([]byte, 1))
	c2.Close()
	if err := pub(t, gw1, e.tp.State("gw-1"), 1, false, []byte("{}")); err != nil {
		t.Errorf("an authenticated client was cut off: %v", err)
	}
}

// TestEmbeddedBrokerLog: mochi logged every ended connection as
// `level=WARN msg=""` and packet errors with the whole packet struct. An
// ordinary end is now a debug line that says what ended, and a packet is
// shown by type, topic and size.
func TestEmbeddedBrokerLog(t *testing.T) {
	logs := &fleettest.LockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := StartEmbedded(&EmbeddedOptions{Listen: "127.0.0.1:0", Credentials: filepath.Join(t.TempDir(), "none")}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A client that connects and goes away without a CONNECT.
	c, err := net.Dial("tcp", strings.TrimPrefix(b.URL(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `msg="MQTT connection ended"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no line for the ended connection:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(logs.String(), `msg=""`) {
		t.Errorf("an empty log message:\n%s", logs.String())
	}

	// A packet error: the packet is summarised, its payload not dumped.
	var out bytes.Buffer
	bl := newBrokerLog(slog.New(slog.NewTextHandler(&out, nil)))
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "trit/v1/x", Payload: bytes.Repeat([]byte("A"), 10000)}
	bl.Warn("error processing packet", "error", errors.New("bad"), "pk", pk)
	bl.Warn("", "error", errors.New("protocol violation"))
	got := out.String()
	if len(got) > 1000 || !strings.Contains(got, `pk="Publish topic=\"trit/v1/x\" payload=10000 bytes"`) {
		t.Errorf("packet error logged as:\n%.2000s", got)
	}
	if !strings.Contains(got, `level=INFO msg="MQTT connection ended with an error" error="protocol violation"`) {
		t.Errorf("an unusual connection end logged as:\n%s", got)
	}
}

// TestEmbeddedListenInUse: a port already taken (a system Mosquitto on
// 1883 was the usual case) is an error that says what to change.
func TestEmbeddedListenInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = StartEmbedded(&EmbeddedOptions{Listen: l.Addr().String(), Credentials: filepath.Join(t.TempDir(), "none")}, nil)
	if err == nil || !strings.Contains(err.Error(), "mqtt.embedded_listen") {
		t.Fatalf("listen on a taken port: %v", err)
	}
}

// TestEmbeddedRefusedPublishDisconnects: a QoS 1 publish the broker
// refuses closes the client's connection whatever the topic — one the ACL
// refuses, a $SYS topic, a topic with a wildcard — rather than leaving the
// client waiting for a PUBACK that never comes (mochi dropped the last two
// without a word). Nothing is delivered or retained.
func TestEmbeddedRefusedPublishDisconnects(t *testing.T) {
	e := startEmbeddedEnv(t, nil, "gw-1")
	for _, topic := range []string{"$SYS/x", "$sys/x", e.tp.Telemetry("gw-1") + "/+", "trit/v1/#", e.tp.State("gw-2")} {
		t.Run(topic, func(t *testing.T) {
			lost := make(chan error, 1)
			gw1 := e.device(t, "gw-1", func(o *mqtt.ClientOptions) {
				o.SetConnectionLostHandler(func(_ mqtt.Client, err error) { lost <- err })
			})
			gw1.Publish(topic, 1, true, []byte("refused")) // never acknowledged
			select {
			case <-lost:
			case <-time.After(10 * time.Second):
				t.Fatalf("a refused QoS 1 publish to %s left the connection open", topic)
			}
			if _, ok := e.b.srv.Topics.Retained.Get(topic); ok {
				t.Errorf("%s retained", topic)
			}
		})
	}
}

// TestEmbeddedOtherFleetRefused: the embedded broker serves one fleet
// (EmbeddedOptions.Fleet, trit-fleet's own). A gateway whose agent.toml
// names another fleet logged in, published its state on that fleet's
// topics and waited on its commands there: connected, and invisible to
// the fleet, with no word in either log. Now its subscriptions are refused
// and a QoS 1 publish closes its connection (logged with the topic), as
// for any topic it may not use; its own fleet's topics work as before.
func TestEmbeddedOtherFleetRefused(t *testing.T) {
	e := startEmbeddedEnv(t, &EmbeddedOptions{Fleet: "it"}, "gw-1")
	other, _ := wire.NewTopics("other")
	gw1 := e.device(t, "gw-1", nil)
	for _, f := range []string{other.Desired("gw-1"), other.Acks("gw-1"), other.Bundle(strings.Repeat("ab", 32)), "trit/v1/+/bundles/+"} {
		tok := gw1.Subscribe(f, 1, func(mqtt.Client, mqtt.Message) {})
		if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe %s: %v", f, tok.Error())
		}
		if code := tok.(*mqtt.SubscribeToken).Result()[f]; code < 0x80 {
			t.Errorf("subscription to %s granted (%#x)", f, code)
		}
	}
	seen := record(t, e.fleet, "trit/v1/#")
	record(t, gw1, e.tp.Desired("gw-1"), e.tp.Bundle(strings.Repeat("ab", 32)))
	if err := pub(t, gw1, e.tp.State("gw-1"), 1, false, []byte("{}")); err != nil {
		t.Fatalf("its own fleet's state: %v", err)
	}
	seen.until(t, e.tp.State("gw-1"))

	lost := make(chan error, 1)
	gw1 = e.device(t, "gw-1", func(o *mqtt.ClientOptions) {
		o.SetConnectionLostHandler(func(_ mqtt.Client, err error) { lost <- err })
	})
	gw1.Publish(other.State("gw-1"), 1, true, []byte("{}")) // never acknowledged
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("a QoS 1 publish on another fleet's topics left the connection open")
	}
	if _, ok := e.b.srv.Topics.Retained.Get(other.State("gw-1")); ok {
		t.Error("another fleet's state retained")
	}
	// An agent sets its Last Will on its state: refused at CONNECT, and
	// the reason names both fleets.
	if _, err := dialEmbedded(t, e.b.URL(), "gw-1", "gw-1", e.secrets["gw-1"], func(o *mqtt.ClientOptions) {
		o.SetWill(other.State("gw-1"), `{"online":false}`, 1, true)
	}); err == nil {
		t.Error("gw-1 connected with its will on another fleet's state")
	}
	if f, ok := (&brokerAuth{fleetID: "trit-fleet", fleet: "it"}).otherFleet("gw-1", other.State("gw-1")); !ok || f != "other" {
		t.Errorf("otherFleet = %q, %v; want other", f, ok)
	}
}

// countArrivals subscribes c to filter and counts the messages that arrive
// per topic, without ever blocking the client's handler.
type arrivals struct {
	mu sync.Mutex
	n  map[string]int
}

func countArrivals(t *testing.T, c mqtt.Client, filter string) *arrivals {
	t.Helper()
	a := &arrivals{n: map[string]int{}}
	tok := c.Subscribe(filter, 1, func(_ mqtt.Client, m mqtt.Message) {
		a.mu.Lock()
		a.n[m.Topic()]++
		a.mu.Unlock()
	})
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	return a
}

func (a *arrivals) of(topic string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[topic]
}

// TestEmbeddedDeviceLimits: a device that floods QoS 0 messages is cut to
// its budget (burst plus rate over the time it flooded) and exactly the
// rest is dropped and counted for it, while another device publishing at
// the same time loses nothing and is not limited. A device's QoS 1
// messages beyond its budget are not dropped: each waits for its token
// (the broker reads its connection more slowly), so they arrive paced at
// the rate.
func TestEmbeddedDeviceLimits(t *testing.T) {
	t.Run("QoS 0 beyond the budget is dropped and counted", func(t *testing.T) {
		e := startEmbeddedEnv(t, nil, "gw-1", "gw-2")
		lim := defaultDeviceLimit
		seen := countArrivals(t, e.fleet, "trit/v1/#")
		gw1, gw2 := e.device(t, "gw-1", nil), e.device(t, "gw-2", nil)
		const flood, others = 5000, 50
		payload := bytes.Repeat([]byte("t"), 100)
		start := time.Now()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range others {
				if err := pub(t, gw2, e.tp.Telemetry("gw-2"), 1, false, payload); err != nil {
					t.Errorf("gw-2: %v", err)
					return
				}
			}
		}()
		for range flood {
			gw1.Publish(e.tp.Telemetry("gw-1"), 0, false, payload)
		}
		// A QoS 1 message after the flood: its PUBACK says the broker has
		// handled every one before it.
		if err := pub(t, gw1, e.tp.Events("gw-1"), 1, false, payload); err != nil {
			t.Fatalf("gw-1's QoS 1 message after the flood: %v", err)
		}
		elapsed := time.Since(start)
		wg.Wait()
		waitUntil(t, "gw-1's QoS 1 message and gw-2's", func() bool {
			return seen.of(e.tp.Events("gw-1")) == 1 && seen.of(e.tp.Telemetry("gw-2")) == others
		})
		got := seen.of(e.tp.Telemetry("gw-1"))
		if budget := lim.Burst + int(lim.Rate*elapsed.Seconds()) + 1; got > budget || got == 0 {
			t.Errorf("gw-1 flooded %d QoS 0 messages and %d were delivered in %v; want some, at most its budget of %d", flood, got, elapsed, budget)
		}
		counts := e.b.TakeLimited()
		if c := counts["gw-1"]; c.Rate != uint64(flood-got) || c.Bytes != 0 {
			t.Errorf("gw-1's counts %+v: want %d dropped for its rate (%d of %d delivered)", c, flood-got, got, flood)
		}
		if c, ok := counts["gw-2"]; ok {
			t.Errorf("gw-2 within its budget was limited: %+v", c)
		}
		if again := e.b.TakeLimited(); len(again) != 0 {
			t.Errorf("counts taken twice: %v", again)
		}
	})
	t.Run("QoS 1 beyond the budget waits", func(t *testing.T) {
		lim := Limit{Rate: 20, Burst: 10, ByteRate: 1 << 20, ByteBurst: wire.MaxPacket}
		e := startEmbeddedEnv(t, &EmbeddedOptions{Limit: &lim}, "gw-1")
		seen := countArrivals(t, e.fleet, "trit/v1/#")
		gw1 := e.device(t, "gw-1", nil)
		const n = 30
		start := time.Now()
		for i := range n {
			if err := pub(t, gw1, e.tp.Telemetry("gw-1"), 1, false, []byte("t")); err != nil {
				t.Fatalf("QoS 1 message %d: %v", i, err)
			}
		}
		// The pacing is a lower bound the limiter guarantees, not a speed.
		if elapsed, least := time.Since(start), time.Duration(float64(n-lim.Burst-1)/lim.Rate*float64(time.Second)); elapsed < least {
			t.Errorf("%d QoS 1 messages acknowledged in %v, faster than a budget of %d at once and %v/s allows (%v)", n, elapsed, lim.Burst, lim.Rate, least)
		}
		waitUntil(t, "every QoS 1 message", func() bool { return seen.of(e.tp.Telemetry("gw-1")) == n })
		if c := e.b.TakeLimited()["gw-1"]; c.Dropped() != 0 || c.Throttled == 0 {
			t.Errorf("gw-1's counts %+v: want none dropped, some delayed", c)
		}
	})
}

// TestBrokerLogClosedConnection: a packet the broker could not process
// because its connection had just closed (every client's, when trit-fleet
// stops) is a debug line, not "WARN error processing packet … use of closed
// network connection"; other packet errors stay warnings.
func TestBrokerLogClosedConnection(t *testing.T) {
	var out bytes.Buffer
	bl := newBrokerLog(slog.New(slog.NewTextHandler(&out, nil)))
	closed := &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}
	bl.Warn("error processing packet", "error", closed, "client", "gw-1")
	if got := out.String(); got != "" {
		t.Errorf("a packet on a closed connection logged at info or above:\n%s", got)
	}
	var debug bytes.Buffer
	bl = newBrokerLog(slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug})))
	bl.Warn("error processing packet", "error", closed, "client", "gw-1")
	if got := debug.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "connection") {
		t.Errorf("at debug level: %q", got)
	}
	out.Reset()
	bl = newBrokerLog(slog.New(slog.NewTextHandler(&out, nil)))
	bl.Warn("error processing packet", "error", errors.New("malformed packet"), "client", "gw-1")
	if got := out.String(); !strings.Contains(got, "level=WARN") {
		t.Errorf("a real packet error: %q", got)
	}
}
