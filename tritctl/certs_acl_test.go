package tritctl

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire/mqtttest"
)

// pki is a throw-away fleet PKI written to a directory.
type pki struct {
	dir    string
	caPool *x509.CertPool
}

func newPKI(t *testing.T, clients ...string) *pki {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caCert, caKey, err := issueCert(certOptions{CommonName: "test CA", CA: true, Validity: time.Hour}, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := writeCertPair(dir, "ca", caCert, caKey); err != nil {
		t.Fatal(err)
	}
	cert, key, err := issueCert(certOptions{CommonName: "127.0.0.1", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Validity: time.Hour}, caCert, caKey, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := writeCertPair(dir, "server", cert, key); err != nil {
		t.Fatal(err)
	}
	for _, id := range clients {
		cert, key, err := issueCert(certOptions{CommonName: id, Validity: time.Hour}, caCert, caKey, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := writeCertPair(dir, id, cert, key); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &pki{dir: dir, caPool: pool}
}

// productionBroker starts mosquitto with the repository's production
// configuration and ACL (fleet/mosquitto/), rewritten only to use the test's
// certificates, a free loopback port and a private directory.
func productionBroker(t *testing.T, p *pki) *mqtttest.Broker {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join("..", "fleet", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	acl, err := os.ReadFile(filepath.Join("..", "fleet", "mosquitto", "acl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "acl"), acl, 0o600); err != nil {
		t.Fatal(err)
	}
	s := string(conf)
	for _, r := range [][2]string{
		{"listener 8883", "listener {{PORT}} 127.0.0.1"},
		{"/etc/mosquitto/trit/", p.dir + "/"},
		{"persistence_location /var/lib/mosquitto/", "persistence_location {{DIR}}/"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fleet/mosquitto/mosquitto.conf no longer contains %q; update this test", r[0])
		}
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	s += "\nlog_dest file {{DIR}}/mosquitto.log\nlog_type all\n"
	return mqtttest.StartConfig(t, s)
}

func (p *pki) tlsConfig(t *testing.T, id string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.caPool, MinVersion: tls.VersionTLS12}
	if id != "" {
		pair, err := tls.LoadX509KeyPair(filepath.Join(p.dir, id+".crt"), filepath.Join(p.dir, id+".key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func connect(t *testing.T, b *mqtttest.Broker, clientID string, cfg *tls.Config) (mqtt.Client, error) {
	t.Helper()
	return connectWatched(t, b, clientID, cfg, nil)
}

// connectWatched is connect with a handler called if the connection is
// lost.
func connectWatched(t *testing.T, b *mqtttest.Broker, clientID string, cfg *tls.Config, onLost func(error)) (mqtt.Client, error) {
	t.Helper()
	o := mqtt.NewClientOptions().AddBroker("ssl://" + b.Addr()).SetClientID(clientID).
		SetTLSConfig(cfg).SetConnectTimeout(5 * time.Second).SetAutoReconnect(false).SetConnectRetry(false)
	if onLost != nil {
		o.SetConnectionLostHandler(func(_ mqtt.Client, err error) { onLost(err) })
	}
	c := mqtt.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(10 * time.Second) {
		return nil, &net.OpError{Op: "connect", Err: os.ErrDeadlineExceeded}
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c, nil
}

// inbox collects the topics a client receives.
type inbox struct {
	mu     sync.Mutex
	topics []string
	got    chan string
}

func subscribe(t *testing.T, c mqtt.Client, filters ...string) *inbox {
	t.Helper()
	in := &inbox{got: make(chan string, 100)}
	for _, f := range filters {
		tok := c.Subscribe(f, 1, func(_ mqtt.Client, m mqtt.Message) {
			in.mu.Lock()
			in.topics = append(in.topics, m.Topic())
			in.mu.Unlock()
			in.got <- m.Topic()
		})
		if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe %s: %v", f, tok.Error())
		}
	}
	return in
}

// waitFor waits until topic arrives and returns everything received so far.
func (in *inbox) waitFor(t *testing.T, topic string) []string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-in.got:
			if got == topic {
				in.mu.Lock()
				defer in.mu.Unlock()
				return append([]string(nil), in.topics...)
			}
		case <-timeout:
			t.Fatalf("%s never arrived", topic)
		}
	}
}

func publish(t *testing.T, c mqtt.Client, topic string, retained bool) {
	t.Helper()
	tok := c.Publish(topic, 1, retained, []byte("x"))
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

// TestProductionACL runs the repository's production broker configuration
// and checks that a device's credentials reach only its own topics. Each
// refusal is proved against a marker the same client sends afterwards on an
// allowed topic: MQTT delivers one client's QoS 1 messages in order, so
// once the marker arrives a forbidden message would have arrived too.
func TestProductionACL(t *testing.T) {
	p := newPKI(t, FleetIdentity, "gw-1", "gw-2")
	b := productionBroker(t, p)
	const pre = "trit/v1/f/"

	fleet, err := connect(t, b, "fleet", p.tlsConfig(t, FleetIdentity))
	if err != nil {
		t.Fatalf("fleet identity cannot connect: %v", err)
	}
	gw1, err := connect(t, b, "gw-1", p.tlsConfig(t, "gw-1"))
	if err != nil {
		t.Fatalf("device cannot connect: %v", err)
	}

	t.Run("device writes only its own topics", func(t *testing.T) {
		seen := subscribe(t, fleet, "trit/v1/#")
		forbidden := []string{
			pre + "devices/gw-2/state", pre + "devices/gw-2/events", pre + "devices/gw-2/telemetry",
			pre + "devices/gw-2/desired", pre + "devices/gw-1/desired", pre + "devices/gw-1/acks",
			pre + "bundles/" + strings.Repeat("ab", 32), "trit/v1/other/anything",
		}
		for _, topic := range forbidden {
			publish(t, gw1, topic, false)
		}
		allowed := []string{pre + "devices/gw-1/state", pre + "devices/gw-1/events", pre + "devices/gw-1/telemetry"}
		for _, topic := range allowed {
			publish(t, gw1, topic, false)
		}
		got := seen.waitFor(t, allowed[len(allowed)-1])
		for _, topic := range forbidden {
			for _, g := range got {
				if g == topic {
					t.Errorf("gw-1 published to %s", topic)
				}
			}
		}
		for _, topic := range allowed {
			found := false
			for _, g := range got {
				found = found || g == topic
			}
			if !found {
				t.Errorf("gw-1's own %s did not arrive", topic)
			}
		}
	})

	t.Run("device reads only its own commands", func(t *testing.T) {
		// Retained before the device subscribes, and live afterwards.
		publish(t, fleet, pre+"devices/gw-2/desired", true)
		seen := subscribe(t, gw1, "#", pre+"devices/+/desired", pre+"devices/gw-2/#")
		publish(t, fleet, pre+"devices/gw-2/desired", false)
		publish(t, fleet, pre+"devices/gw-2/acks", false)
		publish(t, fleet, pre+"devices/gw-2/state", false)
		publish(t, fleet, pre+"bundles/"+strings.Repeat("cd", 32), false)
		publish(t, fleet, pre+"devices/gw-1/acks", false)
		got := seen.waitFor(t, pre+"devices/gw-1/acks")
		for _, g := range got {
			if strings.Contains(g, "gw-2") {
				t.Errorf("gw-1 received %s", g)
			}
		}
		if !contains(got, pre+"bundles/"+strings.Repeat("cd", 32)) {
			t.Errorf("gw-1 did not receive the bundle topic; got %v", got)
		}
	})

	t.Run("clients without a fleet certificate are refused", func(t *testing.T) {
		if _, err := connect(t, b, "anon", p.tlsConfig(t, "")); err == nil {
			t.Error("a client without a certificate connected")
		}
		other := newPKI(t, "gw-1")
		cfg := other.tlsConfig(t, "gw-1")
		cfg.RootCAs = p.caPool // trusts the broker, but its certificate is from another CA
		if _, err := connect(t, b, "impostor", cfg); err == nil {
			t.Error("a client with a certificate from another CA connected")
		}
	})
}

// TestProductionClientIDBound: with the production configuration a
// client's ID is its certificate's common name (use_username_as_clientid), so
// a device that asks for another client's ID, the fleet service's or another
// gateway's, cannot close that client's connection. Each real client proves
// its connection survived with a QoS 1 round trip made after the impostor's
// CONNACK: Mosquitto closes a taken-over connection before it acknowledges
// the new one, so a closed connection could not be acknowledged any more.
func TestProductionClientIDBound(t *testing.T) {
	p := newPKI(t, FleetIdentity, "gw-1", "gw-2")
	b := productionBroker(t, p)
	const pre = "trit/v1/f/"

	// The real clients connect with their own names as client IDs, as
	// trit-fleet (client_id = "trit-fleet") and trit-agent (device_id) do.
	victims := []struct{ id, topic string }{
		{FleetIdentity, pre + "devices/gw-2/desired"},
		{"gw-2", pre + "devices/gw-2/state"},
	}
	var mu sync.Mutex
	lost := map[string]error{}
	real := map[string]mqtt.Client{}
	for _, v := range victims {
		id := v.id
		c, err := connectWatched(t, b, id, p.tlsConfig(t, id), func(err error) {
			mu.Lock()
			lost[id] = err
			mu.Unlock()
		})
		if err != nil {
			t.Fatalf("%s cannot connect with its own name as client ID: %v", id, err)
		}
		real[id] = c
	}
	for _, v := range victims {
		t.Run("gw-1 asks for client ID "+v.id, func(t *testing.T) {
			if _, err := connect(t, b, v.id, p.tlsConfig(t, "gw-1")); err != nil {
				t.Logf("impostor refused: %v", err) // also acceptable
			}
			tok := real[v.id].Publish(v.topic, 1, false, []byte("still here"))
			if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Errorf("%s's connection did not survive the impostor: publish: %v", v.id, tok.Error())
			}
			mu.Lock()
			err, gone := lost[v.id]
			mu.Unlock()
			if gone || !real[v.id].IsConnectionOpen() {
				t.Errorf("%s was disconnected by a client with gw-1's certificate (%v)", v.id, err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
