package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/trit-iot/trit/internal/capped/cappedtest"
	"github.com/trit-iot/trit/internal/config"
	"github.com/trit-iot/trit/internal/secretfile"
	"github.com/trit-iot/trit/wire"
)

func writeConfig(t testing.TB, k *keys, body string) string {
	t.Helper()
	dir := t.TempDir()
	replay := writeReplay(t, dir)
	text := strings.NewReplacer("RELEASE", k.releasePub, "COMMAND", k.cmdPub, "REPLAY", replay, "DIR", dir).Replace(body)
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodConfig = `
device_id = "gw-001"
fleet = "plant-a"
state_dir = "DIR/state"
release_keys = ["RELEASE"]
command_keys = ["COMMAND"]
[mqtt]
broker = "tcp://127.0.0.1:1884"
timeout = "3s"
[telemetry]
interval = "1s"
[[sensor]]
kind = "replay"
name = "s"
file = "REPLAY"
rate = 10.0
loop = true
`

func TestLoadConfigDefaults(t *testing.T) {
	k := newKeys(t)
	cfg, err := LoadConfig(writeConfig(t, k, goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MQTT.Timeout.Duration != 3*time.Second || cfg.MQTT.KeepAlive.Duration != DefaultKeepAlive ||
		cfg.Install.HealthCycles != DefaultHealthCycles || cfg.Telemetry.Interval.Duration != time.Second ||
		cfg.Install.MaxBundleBytes != 30*1024 {
		t.Errorf("defaults not applied: %+v", cfg)
	}
}

func TestLoadConfigErrorsNameTheKey(t *testing.T) {
	k := newKeys(t)
	cases := map[string]struct{ edit, key string }{
		"unknown key":      {"bogus = 1\n" + goodConfig, "bogus"},
		"typo in table":    {strings.Replace(goodConfig, "timeout =", "timeuot =", 1), "mqtt.timeuot"},
		"bad device id":    {strings.Replace(goodConfig, `"gw-001"`, `"gw/001"`, 1), "device_id"},
		"missing broker":   {strings.Replace(goodConfig, `broker = "tcp://127.0.0.1:1884"`, ``, 1), "mqtt.broker"},
		"bad scheme":       {strings.Replace(goodConfig, `tcp://`, `http://`, 1), "mqtt.broker"},
		"bad brokers":      {strings.Replace(goodConfig, `broker = "tcp://127.0.0.1:1884"`, `broker = "tcp://127.0.0.1:1884"`+"\nbrokers = [\"tcp://127.0.0.1:1885\", \"http://x:1\"]", 1), "mqtt.brokers"},
		"bad duration":     {strings.Replace(goodConfig, `"3s"`, `"soon"`, 1), "mqtt.timeout"},
		"negative timeout": {strings.Replace(goodConfig, `"3s"`, `"-3s"`, 1), "mqtt.timeout"},
		"missing key file": {strings.Replace(goodConfig, `["RELEASE"]`, `["/nonexistent.pub"]`, 1), "release_keys"},
		"no sensors":       {goodConfig[:strings.Index(goodConfig, "[[sensor]]")], "sensor"},
		"bad sensor":       {strings.Replace(goodConfig, `kind = "replay"`, `kind = "nosuch"`, 1), "sensor"},
		"cert without key": {strings.Replace(goodConfig, `timeout = "3s"`, `cert_file = "RELEASE"`, 1), "mqtt.cert_file"},
		"bad log level":    {"log_level = \"loud\"\n" + goodConfig, "log_level"},
		"huge bundle cap":  {strings.Replace(goodConfig, "[telemetry]", "[install]\nmax_bundle_bytes = 999999999999\n[telemetry]", 1), "install.max_bundle_bytes"},
	}
	for name, c := range cases {
		_, err := LoadConfig(writeConfig(t, k, c.edit))
		var uk *config.UnknownKeyError
		if errors.As(err, &uk) {
			if uk.Key != c.key || uk.File == "" {
				t.Errorf("%s: key %q file %q (%v), want key %q", name, uk.Key, uk.File, err, c.key)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a *ConfigError", name, err)
			continue
		}
		if ce.Key != c.key || ce.File == "" {
			t.Errorf("%s: key %q file %q (%v), want key %q", name, ce.Key, ce.File, err, c.key)
		}
	}
}

func FuzzLoadConfig(f *testing.F) {
	k := newKeys(f)
	dir := f.TempDir()
	f.Add(goodConfig)
	f.Add("device_id = 1")
	f.Add("[mqtt]\nbroker = \"tcp://[::1\"")
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(dir, "fuzz.toml")
		text := strings.NewReplacer("RELEASE", k.releasePub, "COMMAND", k.cmdPub).Replace(body)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		if err == nil {
			if wire.CheckID(cfg.DeviceID) != nil || cfg.MQTT.Timeout.Duration <= 0 {
				t.Fatalf("accepted an invalid config: %+v", cfg)
			}
		}
	})
}

func TestStatsPercentiles(t *testing.T) {
	s := newStats(time.Unix(0, 0))
	r := &running{}
	for i := 1; i <= 100; i++ {
		s.record(r, "a", time.Unix(1, 0), time.Duration(i)*time.Microsecond)
	}
	s.record(r, "b", time.Unix(2, 0), 1000*time.Microsecond)
	s.fail()
	var tm wire.Telemetry
	s.snapshot(at(time.Unix(3, 0)), &tm)
	if tm.Predictions != 101 || tm.Counts["a"] != 100 || tm.Counts["b"] != 1 || tm.Errors != 1 {
		t.Fatalf("counts: %+v", tm)
	}
	if tm.Latency.P50 != 51 || tm.Latency.Max != 1000 || tm.Latency.P99 != 100 {
		t.Errorf("latency %+v", tm.Latency)
	}
	if tm.Last.Class != "b" {
		t.Errorf("last %+v", tm.Last)
	}
	var next wire.Telemetry
	s.snapshot(at(time.Unix(4, 0)), &next)
	if next.Predictions != 0 || next.Latency != nil || next.From != tm.To {
		t.Errorf("interval not reset: %+v", next)
	}
}

// TestStatsCutAtModelChange: a prediction by another model ends the
// interval there; the snapshot returns the cut interval with its model and
// counts apart from the rest, so no report counts one model's predictions
// under another's name (an install swaps models mid-interval, and a
// rollback swaps them back).
func TestStatsCutAtModelChange(t *testing.T) {
	s := newStats(time.Unix(0, 0))
	v1 := &running{ref: wire.ModelRef{ID: "m", Release: 1}}
	v2 := &running{ref: wire.ModelRef{ID: "m", Release: 2}}
	s.record(v1, "a", time.Unix(1, 0), time.Microsecond)
	s.record(v1, "a", time.Unix(2, 0), time.Microsecond)
	s.fail()
	s.record(v2, "b", time.Unix(3, 0), time.Microsecond)
	s.record(v1, "a", time.Unix(4, 0), time.Microsecond) // rolled back
	var tm wire.Telemetry
	cut, model := s.snapshot(at(time.Unix(5, 0)), &tm)
	if len(cut) != 2 {
		t.Fatalf("%d cut intervals, want 2 (v1, then v2): %+v", len(cut), cut)
	}
	if c := cut[0]; c.Model.Release != 1 || c.Predictions != 2 || c.Errors != 1 || c.Counts["a"] != 2 || c.From != 0 || c.To != 3000 {
		t.Errorf("first cut: %+v, want v1's 2 predictions and 1 error from 0 to 3 s", c)
	}
	if c := cut[1]; c.Model.Release != 2 || c.Predictions != 1 || c.Counts["b"] != 1 || c.From != 3000 || c.To != 4000 {
		t.Errorf("second cut: %+v, want v2's 1 prediction from 3 to 4 s", c)
	}
	if model != v1 || tm.Predictions != 1 || tm.Counts["a"] != 1 || tm.From != 4000 || tm.To != 5000 {
		t.Errorf("rest: model %v, %+v; want v1's last prediction from 4 to 5 s", model, tm)
	}
	// The next interval starts afresh: no cut, no model until a prediction.
	cut, model = s.snapshot(at(time.Unix(6, 0)), &tm)
	if cut != nil || model != nil || tm.Predictions != 0 {
		t.Errorf("after a snapshot: cut %v, model %v, %d predictions", cut, model, tm.Predictions)
	}
	// At most maxCutIntervals wait; the oldest are forgotten.
	for i := range maxCutIntervals + 3 {
		s.record([]*running{v1, v2}[i%2], "a", time.Unix(int64(7+i), 0), time.Microsecond)
	}
	if cut, _ = s.snapshot(at(time.Unix(30, 0)), &tm); len(cut) != maxCutIntervals {
		t.Errorf("%d cut intervals kept, want %d", len(cut), maxCutIntervals)
	}
}

// TestDurationNeedsUnit pins why Duration wraps time.Duration although
// BurntSushi/toml decodes "30s" into a time.Duration itself: it also takes
// a bare integer as nanoseconds, so `timeout = 30` would silently be 30 ns.
// The wrapper refuses it.
func TestDurationNeedsUnit(t *testing.T) {
	var c struct {
		D Duration `toml:"d"`
	}
	if _, err := toml.Decode("d = \"30s\"", &c); err != nil || c.D.Duration != 30*time.Second {
		t.Fatalf(`"30s": %v %v`, c.D, err)
	}
	if _, err := toml.Decode("d = 30", &c); err == nil {
		t.Fatalf("d = 30 decoded as %v; want an error (no unit)", c.D)
	}
}

// TestUnknownKeyLineAndSuggestion: an unknown key is reported with its line
// and the nearest known key, in the wording trit-fleet uses too
// (internal/config), and trit-agent prints it once, without another prefix.
func TestUnknownKeyLineAndSuggestion(t *testing.T) {
	k := newKeys(t)
	for _, c := range []struct{ edit, want string }{
		// goodConfig's line 9 is "timeout = ..." under [mqtt].
		{strings.Replace(goodConfig, "timeout =", "timeuot =", 1), ":9: unknown key mqtt.timeuot; did you mean mqtt.timeout? (docs/OPERATIONS.md lists every key)"},
		// A key of [mqtt] written above it, at the top level.
		{"# comment\nbroker = \"tcp://x:1\"\n" + goodConfig, ":2: unknown key broker; did you mean mqtt.broker? (docs/OPERATIONS.md lists every key)"},
		{strings.Replace(goodConfig, "loop = true", "lop = true", 1), ":17: unknown key sensor.lop; did you mean sensor.loop? (docs/OPERATIONS.md lists every key)"},
		{goodConfig + "[telemetri]\ninterval = \"1s\"\n", ":18: unknown key telemetri; did you mean telemetry? (docs/OPERATIONS.md lists every key)"},
		{"colour = \"red\"\n" + goodConfig, ":1: unknown key colour (docs/OPERATIONS.md lists every key)"},
	} {
		path := writeConfig(t, k, c.edit)
		_, err := LoadConfig(path)
		if err == nil || err.Error() != path+c.want {
			t.Errorf("error\n  %v\nwant\n  %s%s", err, path, c.want)
		}
		var out, errOut strings.Builder
		code := Main([]string{"check-config", "--config", path}, &out, &errOut)
		if want := "trit-agent: " + path + c.want + "\n"; code != 2 || errOut.String() != want {
			t.Errorf("check-config: exit %d, stderr %q, want 2 and %q", code, errOut.String(), want)
		}
	}
}

// TestAgentFilesBounded: the configuration file and mqtt.password_file
// were read whole, so a wrong path such as /dev/zero took memory without
// end at start. Now the configuration is read up to 1 MiB and the
// password file up to 64 KiB, a larger one refused naming it and the
// bound, as trit-fleet does.
func TestAgentFilesBounded(t *testing.T) {
	k := newKeys(t)
	path := writeConfig(t, k, goodConfig)
	pad := func(path string, to int) { cappedtest.Pad(t, path, to) }
	pad(path, maxConfigFile)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("a configuration of 1 MiB: %v", err)
	}
	pad(path, maxConfigFile+1)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), path+": larger than 1048576 bytes (1024 KiB), the most a configuration file may hold") {
		t.Errorf("a configuration of 1 MiB + 1: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := LoadConfig("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
			t.Errorf("LoadConfig(/dev/zero): %v", err)
		}
	}
	pass := filepath.Join(t.TempDir(), "mqtt.pass")
	os.WriteFile(pass, []byte("secret\n"), 0o600)
	cfg.MQTT.Username, cfg.MQTT.PasswordFile = "gw-001", pass
	pad(pass, maxPasswordFile)
	if d, err := NewPahoDialer(&cfg.MQTT); err != nil || d.Password != "secret" {
		t.Fatalf("a password file of 64 KiB: %v", err)
	}
	pad(pass, maxPasswordFile+1)
	if _, err := NewPahoDialer(&cfg.MQTT); err == nil || err.Error() != "mqtt.password_file: "+pass+": larger than 65536 bytes (64 KiB), the most a password file may hold" {
		t.Errorf("a password file of 64 KiB + 1: %v", err)
	}
}

// TestSecretsCheckedAtLoad: mqtt.password_file and mqtt.key_file are
// checked as run reads them. A password file others could read, an empty
// one (the agent then retried a login the broker refuses, forever) and one
// over 64 KiB passed check-config, which only looked for the file; the
// TLS key's mode was not checked at all. Now each is refused naming the key
// and the file; mode 0640 (the service's group) is accepted.
func TestSecretsCheckedAtLoad(t *testing.T) {
	k := newKeys(t)
	dir := t.TempDir()
	pass := filepath.Join(dir, "mqtt.pass")
	config := strings.Replace(goodConfig, "[mqtt]\n", "[mqtt]\nusername = \"gw-001\"\npassword_file = \""+pass+"\"\n", 1)
	path := writeConfig(t, k, config)
	write := func(data string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(pass, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(pass, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		data string
		mode os.FileMode
		want string // "" accepted
	}{
		{"secret\n", 0o600, ""},
		{"secret\n", 0o640, ""},
		{"secret\n", 0o644, "mqtt.password_file: " + pass + " has mode 0644; a secret must not be accessible by others (chmod 600, or 640 with the service's group)"},
		{"\n", 0o600, "mqtt.password_file: " + pass + " is empty; it holds the device's secret (trit-fleet credentials add -o FILE writes it)"},
		{strings.Repeat("x", maxPasswordFile+1), 0o600, "mqtt.password_file: " + pass + ": larger than 65536 bytes (64 KiB), the most a password file may hold"},
	} {
		write(c.data, c.mode)
		_, err := LoadConfig(path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("password file %q mode %04o: %v", c.data, c.mode, err)
		case c.want != "" && (err == nil || !strings.HasSuffix(err.Error(), c.want)):
			t.Errorf("password file of %d bytes mode %04o: %v, want …%s", len(c.data), c.mode, err, c.want)
		}
		var out, errOut strings.Builder
		code := Main([]string{"check-config", "--config", path}, &out, &errOut)
		if want := map[bool]int{true: 0, false: 2}[c.want == ""]; code != want {
			t.Errorf("check-config, password file of %d bytes mode %04o: exit %d, want %d (%s)", len(c.data), c.mode, code, want, errOut.String())
		}
	}
	if err := secretfile.CheckMode(pass, true); err != nil { // 0600 after the loop
		t.Fatal(err)
	}
	key := filepath.Join(dir, "gw.key")
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o604)
	if err := secretfile.CheckMode(key, true); err == nil || !strings.Contains(err.Error(), "has mode 0604") {
		t.Errorf("a key file of mode 0604: %v", err)
	}
}

// TestStateDirNotADirectory: a state_dir that names a file passed
// check-config and stopped run with "state directory: mkdir …: not a
// directory", naming no key; it is refused at load, naming state_dir.
func TestStateDirNotADirectory(t *testing.T) {
	k := newKeys(t)
	path := writeConfig(t, k, goodConfig)
	file := filepath.Join(filepath.Dir(path), "state")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	want := "state_dir: " + file + " is not a directory"
	if _, err := LoadConfig(path); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("LoadConfig with state_dir a file: %v, want …%s", err, want)
	}
}

// A broker URL without a port passed check-config, and the agent then
// retried "missing port in address" for ever; it is refused naming it, in
// trit-fleet's words (wire.CheckBrokerHostPort). So is one without a host,
// which dialled the gateway itself, and one that is not a URL; a scheme
// the agent does not speak is refused by the agent's own check.
func TestBrokerNeedsPort(t *testing.T) {
	k := newKeys(t)
	for _, b := range []string{"tcp://127.0.0.1", "ssl://broker.example", "tcp://:1883", "127.0.0.1:1883", "tcp://broker.example:port"} {
		path := writeConfig(t, k, strings.Replace(goodConfig, `broker = "tcp://127.0.0.1:1884"`, `broker = "`+b+`"`, 1))
		want := path + `: mqtt.broker: "` + b + `": want scheme://host:port, e.g. tls://broker.example:8883 or tcp://127.0.0.1:1883`
		if _, err := LoadConfig(path); err == nil || err.Error() != want {
			t.Errorf("broker %s: %v, want %s", b, err, want)
		}
	}
	path := writeConfig(t, k, strings.Replace(goodConfig, `broker = "tcp://127.0.0.1:1884"`, `broker = "http://broker.example:80"`, 1))
	if _, err := LoadConfig(path); err == nil || !strings.HasSuffix(err.Error(), `mqtt.broker: "http://broker.example:80": scheme "http": want tcp, mqtt, ssl, tls or mqtts`) {
		t.Errorf("an http broker: %v", err)
	}
}

// at is a clock that always says t (stats.snapshot's now).
func at(t time.Time) func() time.Time { return func() time.Time { return t } }
