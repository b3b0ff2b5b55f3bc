package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet"
)

const minimalConfig = `
[mqtt]
broker = "ssl://broker.example:8883"
[api]
token_file = "/etc/trit-fleet/api-token"
[keys]
command_key = "/etc/trit-fleet/command.key"
release_keys = ["/etc/trit-fleet/release.pub"]
`

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig("fleet.toml", minimalConfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fleet != "main" || c.API.Listen != "127.0.0.1:8080" || c.MQTT.ClientID != "trit-fleet" ||
		c.Rollouts.CommandTTL.Duration != 24*time.Hour || c.Rollouts.Tick.Duration != time.Second {
		t.Fatalf("defaults: %+v", c)
	}
}

// TestParseConfigEmbedded: the embedded broker's defaults, and a
// non-loopback address accepted only with a TLS certificate.
func TestParseConfigEmbedded(t *testing.T) {
	embedded := strings.Replace(minimalConfig, `broker = "ssl://broker.example:8883"`, `broker = "embedded"`, 1)
	c, err := ParseConfig("fleet.toml", embedded)
	if err != nil {
		t.Fatal(err)
	}
	if c.MQTT.EmbeddedListen != "127.0.0.1:1884" || c.MQTT.EmbeddedCredentials != "/etc/trit-fleet/mqtt-credentials" {
		t.Errorf("defaults: %+v", c.MQTT)
	}
	tls := strings.Replace(embedded, `broker = "embedded"`, `broker = "embedded"
embedded_listen = "0.0.0.0:8883"
embedded_cert_file = "/etc/trit-fleet/broker.crt"
embedded_key_file = "/etc/trit-fleet/broker.key"`, 1)
	if _, err := ParseConfig("fleet.toml", tls); err != nil {
		t.Errorf("non-loopback with TLS: %v", err)
	}
}

func TestParseConfigErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ edit, key string }{
		{`fleet = "a/b"`, "fleet"},
		{`[rollouts]` + "\n" + `command_ttl = "5s"`, "rollouts.command_ttl"},
		{`[rollouts]` + "\n" + `tick = "forever"`, "tick"},
		{`colour = "red"`, "colour"},
	} {
		_, err := ParseConfig("fleet.toml", c.edit+"\n"+minimalConfig)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "fleet.toml") {
			t.Errorf("%q: %v, want an ErrConfig naming %s and the file", c.edit, err, c.key)
		}
	}
	// A broker address without a host or a port is refused in the agent's
	// words (wire.CheckBrokerHostPort), in the project's FILE: KEY: form.
	for _, c := range []struct{ to, want string }{
		{`broker = "ssl://broker.example"`, `fleet.toml: mqtt.broker: "ssl://broker.example": want scheme://host:port, e.g. tls://broker.example:8883 or tcp://127.0.0.1:1883`},
		{`broker = "tcp://:1883"`, `fleet.toml: mqtt.broker: "tcp://:1883": want scheme://host:port, e.g. tls://broker.example:8883 or tcp://127.0.0.1:1883`},
		{`broker = "ssl://broker.example:8883"` + "\n" + `brokers = ["ssl://node2.example"]`, `fleet.toml: mqtt.brokers: "ssl://node2.example": want scheme://host:port, e.g. tls://broker.example:8883 or tcp://127.0.0.1:1883`},
	} {
		_, err := ParseConfig("fleet.toml", strings.Replace(minimalConfig, `broker = "ssl://broker.example:8883"`, c.to, 1))
		if !errors.Is(err, ErrConfig) || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.to, err, c.want)
		}
	}
	for _, c := range []struct{ from, to, key string }{
		{`broker = "ssl://broker.example:8883"`, `broker = "http://x"`, "mqtt.broker"},
		{`broker = "ssl://broker.example:8883"`, `broker = "ssl://broker.example"`, "mqtt.broker"}, // no port: every connection fails
		{`broker = "ssl://broker.example:8883"`, `broker = "tcp://"`, "mqtt.broker"},
		{`broker = "ssl://broker.example:8883"`, `broker = "ssl://broker.example:8883"` + "\n" + `brokers = ["ssl://node2.example"]`, "mqtt.brokers"},
		{`broker = "ssl://broker.example:8883"`, `broker = "embedded"` + "\n" + `embedded_listen = "nope"`, "mqtt.embedded_listen"},
		{`broker = "ssl://broker.example:8883"`, `broker = "embedded"` + "\n" + `embedded_listen = "0.0.0.0:1883"`, "mqtt.embedded_listen"},
		{`broker = "ssl://broker.example:8883"`, `broker = "embedded"` + "\n" + `embedded_listen = ":1883"`, "mqtt.embedded_listen"},
		{`broker = "ssl://broker.example:8883"`, `broker = "embedded"` + "\n" + `embedded_cert_file = "/x.crt"`, "mqtt.embedded_cert_file"},
		{`broker = "ssl://broker.example:8883"`, `broker = "embedded"` + "\n" + `client_id = "a/b"`, "mqtt.client_id"},
		{`token_file = "/etc/trit-fleet/api-token"`, ``, "api.token_file"},
		{`release_keys = ["/etc/trit-fleet/release.pub"]`, `release_keys = []`, "keys.release_keys"},
		{`command_key = "/etc/trit-fleet/command.key"`, ``, "keys.command_key"},
	} {
		_, err := ParseConfig("fleet.toml", strings.Replace(minimalConfig, c.from, c.to, 1))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%q: %v, want an error naming %s", c.to, err, c.key)
		}
	}
}

// FuzzParseConfig: any text either parses into a valid configuration or
// fails with ErrConfig; never a panic.
func FuzzParseConfig(f *testing.F) {
	f.Add(minimalConfig)
	f.Add("fleet = 3\n[mqtt]\nbroker = \"embedded\"\n")
	f.Add("[rollouts]\ntick = \"-1s\"\n")
	f.Add(strings.Replace(minimalConfig, "[mqtt]\n", "[mqtt]\nnats = [\"tls://n0:4222\", \"tls://n1:4222\"]\nnats_ack_wait = \"5s\"\n", 1))
	f.Add("fleet = \"a.b\"\n[mqtt]\nbroker = \"tcp://n0:1883\"\nnats = [\"nats://\"]\nnats_ack_wait = \"-1s\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseConfig("fuzz.toml", text)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		if c.Fleet == "" || c.API.TokenFile == "" || c.Rollouts.Tick.Duration < 10*time.Millisecond {
			t.Fatalf("accepted an incomplete configuration: %+v", c)
		}
	})
}

// TestUnknownKeyLineAndSuggestion: an unknown key is reported with its line
// and the nearest known key, in the wording trit-agent uses too
// (internal/config); it is still ErrConfig (exit code 2), and trit-fleet
// prints it once, without another prefix.
func TestUnknownKeyLineAndSuggestion(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		// minimalConfig's line 3 is the broker under [mqtt].
		{strings.Replace(minimalConfig, "broker =", "brokr =", 1), "fleet.toml:3: unknown key mqtt.brokr; did you mean mqtt.broker? (docs/FLEET.md lists every key)"},
		{"# the API\nlisten = \"127.0.0.1:8080\"\n" + minimalConfig, "fleet.toml:2: unknown key listen; did you mean api.listen? (docs/FLEET.md lists every key)"},
		{minimalConfig + "[rollout]\ntick = \"1s\"\n", "fleet.toml:9: unknown key rollout; did you mean rollouts? (docs/FLEET.md lists every key)"},
		{minimalConfig + "[alerts]\ndrfit = 0.1\n", "fleet.toml:10: unknown key alerts.drfit; did you mean alerts.drift? (docs/FLEET.md lists every key)"},
	} {
		_, err := ParseConfig("fleet.toml", c.text)
		if !errors.Is(err, ErrConfig) || err.Error() != c.want {
			t.Errorf("error\n  %v\nwant ErrConfig\n  %s", err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(minimalConfig, "broker =", "brokr =", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code := Main([]string{"check-config", "--config", path}, &out, &errOut)
	if want := "trit-fleet: " + path + ":3: unknown key mqtt.brokr; did you mean mqtt.broker? (docs/FLEET.md lists every key)\n"; code != 2 || errOut.String() != want {
		t.Errorf("check-config: exit %d, stderr %q, want 2 and %q", code, errOut.String(), want)
	}
}

// rollouts.reconcile defaults to a minute and must lie between the tick
// and the commands' lifetime.
func TestParseConfigReconcile(t *testing.T) {
	c, err := ParseConfig("fleet.toml", minimalConfig)
	if err != nil || c.Rollouts.Reconcile.Duration != fleet.DefaultReconcile {
		t.Fatalf("default: %v, %v", c.Rollouts.Reconcile, err)
	}
	c, err = ParseConfig("fleet.toml", "[rollouts]\nreconcile = \"10s\"\n"+minimalConfig)
	if err != nil || c.Rollouts.Reconcile.Duration != 10*time.Second {
		t.Fatalf("10s: %v, %v", c.Rollouts.Reconcile, err)
	}
	for _, v := range []string{"500ms", "48h", "-1s"} {
		_, err := ParseConfig("fleet.toml", "[rollouts]\nreconcile = \""+v+"\"\n"+minimalConfig)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "rollouts.reconcile") {
			t.Errorf("reconcile = %s: %v, want an error naming rollouts.reconcile", v, err)
		}
	}
}

// TestParseConfigRetrain: [[retrain]] tables become the service's
// policies; a bad one is refused naming it.
func TestParseConfigRetrain(t *testing.T) {
	good := minimalConfig + `
[training]
data_dir = "/var/lib/trit-fleet/data"
[[retrain]]
model = "vib"
selector = { site = "north" }
dataset = "vib/train.csv"
min_labels = 100
drift = 0.2
accuracy = 85
every = "5m"
min_agreement = 0.8
`
	c, err := ParseConfig("fleet.toml", good)
	if err != nil {
		t.Fatal(err)
	}
	ps := c.policies()
	if len(ps) != 1 || ps[0].Model != "vib" || ps[0].Selector["site"] != "north" || ps[0].MinLabels != 100 || ps[0].Every != 5*time.Minute ||
		ps[0].Shadow.MinAgreement != 0.8 || ps[0].Accuracy != 85 {
		t.Fatalf("policies %+v", ps)
	}
	for _, c := range []struct{ from, to, says string }{
		{`drift = 0.2`, `drift = 2`, "retrain[0]"},
		{"drift = 0.2\naccuracy = 85", "", "at least one threshold"},
		{`dataset = "vib/train.csv"`, ``, "dataset"},
		{`data_dir = "/var/lib/trit-fleet/data"`, ``, "training.data_dir"},
		{`every = "5m"`, `every = "5m"` + "\n[[retrain]]\nmodel = \"vib\"\ndataset = \"x\"\ndrift = 0.1", "one [[retrain]] per model"},
	} {
		_, err := ParseConfig("fleet.toml", strings.Replace(good, c.from, c.to, 1))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want an error saying %q", c.to, err, c.says)
		}
	}
}

// TestReplicaExampleConfig: docs/examples/fleet-replica.toml, the
// multi-replica example docs/FLEET.md points to, parses, on PostgreSQL
// and NATS, as its comments say.
func TestReplicaExampleConfig(t *testing.T) {
	raw, err := os.ReadFile("../../docs/examples/fleet-replica.toml")
	if err != nil {
		t.Fatal(err)
	}
	// The database's CA file is read when the URL is parsed; this machine
	// has none.
	conf := strings.Replace(string(raw), "&sslrootcert=/etc/trit/db-ca.crt", "", 1)
	c, err := ParseConfig("fleet-replica.toml", conf)
	if err != nil {
		t.Fatal(err)
	}
	if c.Replica != "fleet-a" || !strings.HasPrefix(c.Database, "postgres://") || len(c.MQTT.NATS) != 3 || len(c.MQTT.Brokers) != 2 || c.Rollouts.LeaseTTL.Duration != 5*time.Second {
		t.Errorf("parsed %+v", c)
	}
}
