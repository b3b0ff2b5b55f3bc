package agent

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"
	"github.com/trit-iot/trit/wire/tlstest"
)

// fleetIdentity is the fleet service's certificate name and MQTT user in
// fleet/mosquitto/acl (tritctl.FleetIdentity; agent may not import tritctl).
const fleetIdentity = "trit-fleet"

// testPKI is a throw-away CA with a server certificate for 127.0.0.1 and
// client certificates, written as PEM files to dir (wire/tlstest).
type testPKI struct {
	*tlstest.PKI
	dir    string
	ca     *x509.Certificate
	caFile string
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	p := tlstest.New(t, name)
	return &testPKI{PKI: p, dir: p.Dir, ca: p.CA, caFile: p.CAFile}
}

// client issues a client certificate with common name cn.
func (p *testPKI) client(t *testing.T, cn string) (certFile, keyFile string) { return p.Client(t, cn) }

func (p *testPKI) tlsConfig(t *testing.T, cn string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	certFile, keyFile := p.client(t, cn)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

// productionConfig returns fleet/mosquitto/mosquitto.conf rewritten to
// use dir for certificates and ACL, a free loopback port and a private
// persistence directory; extra replacements are applied after.
func productionConfig(t *testing.T, dir string, extra ...[2]string) string {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join("..", "fleet", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	acl, err := os.ReadFile(filepath.Join("..", "fleet", "mosquitto", "acl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acl"), acl, 0o600); err != nil {
		t.Fatal(err)
	}
	s := string(conf)
	for _, r := range append([][2]string{
		{"listener 8883", "listener {{PORT}} 127.0.0.1"},
		{"/etc/mosquitto/trit/", dir + "/"},
		{"persistence_location /var/lib/mosquitto/", "persistence_location {{DIR}}/"},
	}, extra...) {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fleet/mosquitto/mosquitto.conf no longer contains %q; update this test", r[0])
		}
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	s += "\nlog_dest file {{DIR}}/mosquitto.log\nlog_type all\n"
	if os.Geteuid() == 0 {
		// As root, mosquitto drops to user "mosquitto" before reading the
		// ACL, keys and password file in the test's private directory.
		s += "user root\n"
	}
	return s
}

// logRecorder collects the agent's JSON log records.
type logRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

// records returns the records whose msg is msg.
func (r *logRecorder) records(msg string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(r.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (r *logRecorder) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(r, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// agentOnline waits until the fleet saw an online state of the device.
func agentOnline(f *fleet) {
	f.t.Helper()
	f.waitFor("agent online", 15*time.Second, func() bool {
		st := latest(f.states)
		return st != nil && st.Online
	})
}

// TestTLSClientCertificate runs the agent against Mosquitto with the
// production configuration and ACL: TLS, client certificates required,
// certificate name as user name. A full install works over it.
func TestTLSClientCertificate(t *testing.T) {
	p := newTestPKI(t, "fleet")
	broker := mqtttest.StartConfig(t, productionConfig(t, p.dir))
	url := "ssl://" + broker.Addr()
	k := newKeys(t)
	f := newFleetWith(t, url, k, func(o *mqtt.ClientOptions) { o.SetTLSConfig(p.tlsConfig(t, fleetIdentity)) })

	cfg := testConfig(t, k, url)
	cfg.MQTT.CAFile = p.caFile
	cfg.MQTT.CertFile, cfg.MQTT.KeyFile = p.client(t, testDevice)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	startAgent(t, cfg, nil)
	agentOnline(f)
	h := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
	if ev := f.terminal(f.deploy(h, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("install over TLS: %+v", ev)
	}
	f.waitFor("telemetry over TLS", 10*time.Second, func() bool {
		for _, tm := range f.telemetry {
			if tm.Model != nil && tm.Model.Bundle == h && tm.Predictions > 0 {
				return true
			}
		}
		return false
	})
}

// expectRefused runs the agent with cfg against a broker that refuses it:
// it must log clear connect errors containing one of wantErr, retry with a
// growing backoff capped at reconnect_max, never publish a state, and stop
// cleanly.
func expectRefused(t *testing.T, f *fleet, cfg *Config, wantErr ...string) {
	t.Helper()
	var rec logRecorder
	stop := startAgent(t, cfg, &Options{Logger: rec.logger()})
	deadline := time.Now().Add(15 * time.Second)
	for len(rec.records("mqtt connect failed")) < 5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	fails := rec.records("mqtt connect failed")
	if len(fails) < 5 {
		t.Fatalf("%d connect attempts logged in 15 s, want at least 5 (the agent must keep retrying)", len(fails))
	}
	for _, r := range fails {
		msg, _ := r["err"].(string)
		ok := false
		for _, w := range wantErr {
			ok = ok || strings.Contains(msg, w)
		}
		if !ok {
			t.Errorf("connect error %q does not say why (want one of %q)", msg, wantErr)
			break
		}
	}
	t.Logf("connect error: %v", fails[0]["err"])
	// The nominal delays double up to reconnect_max; each wait is drawn
	// from the upper half of its nominal delay.
	var waits []time.Duration
	for _, r := range rec.records("mqtt reconnecting") {
		var d [2]time.Duration
		for i, key := range []string{"backoff", "in"} {
			s, _ := r[key].(string)
			v, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("reconnect %s %q: %v", key, s, err)
			}
			d[i] = v
		}
		if d[1] < d[0]/2 || d[1] > d[0] {
			t.Errorf("reconnect wait %v outside [%v, %v]", d[1], d[0]/2, d[0])
		}
		waits = append(waits, d[0])
	}
	maxWait := cfg.MQTT.ReconnectMax.Duration
	for i := 1; i < len(waits); i++ {
		if waits[i] != min(2*waits[i-1], maxWait) {
			t.Errorf("reconnect delays %v: not doubling up to %v", waits, maxWait)
			break
		}
	}
	if len(waits) < 4 || waits[len(waits)-1] != maxWait {
		t.Errorf("reconnect delays %v, want them to reach reconnect_max %v", waits, maxWait)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, st := range f.states {
		if st.Device == testDevice {
			t.Errorf("the refused agent published a state: %+v", st)
		}
	}
}

// TestTLSRefused: wrong CA for the broker, no client certificate, or a
// client certificate from another CA: a clear error, retries with backoff,
// no panic, no session.
func TestTLSRefused(t *testing.T) {
	p := newTestPKI(t, "fleet")
	other := newTestPKI(t, "other")
	broker := mqtttest.StartConfig(t, productionConfig(t, p.dir))
	url := "ssl://" + broker.Addr()
	k := newKeys(t)
	f := newFleetWith(t, url, k, func(o *mqtt.ClientOptions) { o.SetTLSConfig(p.tlsConfig(t, fleetIdentity)) })
	certFile, keyFile := p.client(t, testDevice)
	otherCert, otherKey := other.client(t, testDevice)

	for _, c := range []struct {
		name          string
		ca, cert, key string
		wantErr       []string
	}{
		{"broker certificate from an unknown CA", other.caFile, certFile, keyFile, []string{"certificate signed by unknown authority"}},
		// With TLS 1.3 the server checks the client certificate after the
		// client's handshake finished: the client sees the broker's alert
		// ("certificate required") or, when its CONNECT write races the
		// alert, only a connection reset. Both happen on loopback.
		{"no client certificate", p.caFile, "", "", []string{"certificate required", "bad certificate", "handshake failure", "connection reset by peer", "EOF"}},
		{"client certificate from another CA", p.caFile, otherCert, otherKey, []string{"unknown certificate authority", "bad certificate", "connection reset by peer", "EOF"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, k, url)
			cfg.MQTT.CAFile, cfg.MQTT.CertFile, cfg.MQTT.KeyFile = c.ca, c.cert, c.key
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			expectRefused(t, f, cfg, c.wantErr...)
		})
	}
}

// TestUsernamePassword runs Mosquitto with a password file (made by
// mosquitto_passwd) instead of client certificates, and the production
// ACL keyed by user name: the right password installs, a wrong one is
// refused with a clear error and retried.
func TestUsernamePassword(t *testing.T) {
	bin, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		t.Fatalf("mosquitto_passwd not found (it comes with Debian's mosquitto package): %v", err)
	}
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	for i, u := range [][2]string{{testDevice, "device-secret"}, {fleetIdentity, "fleet-secret"}} {
		args := []string{"-b", passwd, u[0], u[1]}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
		}
	}
	os.Chmod(passwd, 0o600)
	acl, err := os.ReadFile(filepath.Join("..", "fleet", "mosquitto", "acl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acl"), acl, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := "per_listener_settings false\nallow_anonymous false\n" +
		"password_file " + passwd + "\nacl_file " + filepath.Join(dir, "acl") + "\n" +
		"listener {{PORT}} 127.0.0.1\npersistence true\npersistence_location {{DIR}}/\n" +
		"log_dest file {{DIR}}/mosquitto.log\nlog_type all\n"
	if os.Geteuid() == 0 {
		conf += "user root\n"
	}
	broker := mqtttest.StartConfig(t, conf)
	k := newKeys(t)
	f := newFleetWith(t, broker.URL(), k, func(o *mqtt.ClientOptions) { o.SetUsername(fleetIdentity).SetPassword("fleet-secret") })

	writePass := func(p string) string {
		path := filepath.Join(t.TempDir(), "mqtt.pass")
		if err := os.WriteFile(path, []byte(p+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("wrong password", func(t *testing.T) {
		cfg := testConfig(t, k, broker.URL())
		cfg.MQTT.Username, cfg.MQTT.PasswordFile = testDevice, writePass("guess")
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		expectRefused(t, f, cfg, "not Authorized", "bad user name or password")
	})
	t.Run("right password", func(t *testing.T) {
		cfg := testConfig(t, k, broker.URL())
		cfg.MQTT.Username, cfg.MQTT.PasswordFile = testDevice, writePass("device-secret")
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		startAgent(t, cfg, nil)
		agentOnline(f)
		h := f.publishBundle(makeBundle(t, bundleOpts{release: 1, signer: k.release}))
		if ev := f.terminal(f.deploy(h, "r1", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
			t.Fatalf("install with username/password: %+v", ev)
		}
	})
}
