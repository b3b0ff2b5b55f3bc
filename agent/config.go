package agent

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/capped"
	"github.com/trit-iot/trit/internal/config"
	"github.com/trit-iot/trit/internal/secretfile"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/features"
	"github.com/trit-iot/trit/wire"
)

// Config is the agent's configuration, read from a TOML file (see
// docs/OPERATIONS.md for a commented example). Zero values mean the
// defaults named on each field.
type Config struct {
	DeviceID string            `toml:"device_id"` // required; also the MQTT client ID
	Fleet    string            `toml:"fleet"`     // required
	Hardware string            `toml:"hardware"`  // hardware label bundles are checked against; "" accepts only bundles for any hardware
	Labels   map[string]string `toml:"labels"`    // reported in the state
	// StateDir holds the database (agent.db). Default: $STATE_DIRECTORY
	// (set by systemd's StateDirectory=), else /var/lib/trit-agent.
	StateDir string `toml:"state_dir"`
	// ReleaseKeys are PEM public keys trusted for bundle signatures.
	ReleaseKeys []string `toml:"release_keys"`
	// CommandKeys are PEM public keys of the fleet's online signing key(s),
	// trusted for deployment commands.
	CommandKeys []string `toml:"command_keys"`

	MQTT      MQTTConfig      `toml:"mqtt"`
	Install   InstallConfig   `toml:"install"`
	Telemetry TelemetryConfig `toml:"telemetry"`
	Models    ModelsConfig    `toml:"models"`
	// Sensors are read together (sensors.OpenInput): the fastest paces the
	// inference cycles, the others are sampled and held; their channels are
	// concatenated in configuration order.
	Sensors []sensors.Config `toml:"sensor"`
	// Features, when set, turns readings into features over windows; when
	// nil each feature is a channel value (see input.go).
	Features *features.PipelineSpec `toml:"features"`
	// LabelSource, when set, labels classified windows with the ground
	// truth a sensor channel reports (labels.go).
	LabelSource *LabelSourceConfig `toml:"label_source"`
	// LogLevel is debug, info (default), warn or error.
	LogLevel string `toml:"log_level"`
}

// maxBrokers bounds mqtt.brokers.
const maxBrokers = 16

// Addresses lists the broker's addresses: broker, then brokers, each once.
func (m *MQTTConfig) Addresses() []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range append([]string{m.Broker}, m.Brokers...) {
		if b != "" && !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	return out
}

// TLS reports whether any address asks for TLS by its scheme.
func (m *MQTTConfig) tlsScheme() bool {
	for _, b := range m.Addresses() {
		if strings.HasPrefix(b, "ssl:") || strings.HasPrefix(b, "tls:") || strings.HasPrefix(b, "mqtts:") {
			return true
		}
	}
	return false
}

// MQTTConfig is the broker connection.
type MQTTConfig struct {
	Broker string `toml:"broker"` // required (or brokers): tcp://host:1883, ssl://host:8883 or tls://…
	// Brokers are more addresses of the same broker (the nodes of a
	// cluster): the agent connects to one and, when it fails, to the next
	// (docs/OPERATIONS.md). Each device starts at its own place in the list,
	// so devices spread over the nodes.
	Brokers      []string `toml:"brokers"`
	Username     string   `toml:"username"`      // optional
	PasswordFile string   `toml:"password_file"` // optional; the password, read at start-up (never put it in this file)
	CAFile       string   `toml:"ca_file"`       // TLS: CA bundle for the broker's certificate (default: system roots)
	CertFile     string   `toml:"cert_file"`     // TLS client certificate (with key_file)
	KeyFile      string   `toml:"key_file"`
	KeepAlive    Duration `toml:"keepalive"`     // default 30s
	Timeout      Duration `toml:"timeout"`       // every connect/publish/subscribe wait; default 10s
	ReconnectMin Duration `toml:"reconnect_min"` // first retry delay; default 1s
	ReconnectMax Duration `toml:"reconnect_max"` // backoff cap; default 60s
}

// InstallConfig tunes installs.
type InstallConfig struct {
	MaxBundleBytes  int      `toml:"max_bundle_bytes"` // default bundle.DefaultMaxSize (30 KiB), at most MaxBundleBytesLimit
	DownloadTimeout Duration `toml:"download_timeout"` // default 2m
	HealthCycles    int      `toml:"health_cycles"`    // inference cycles a new model must complete; default 5
	HealthTimeout   Duration `toml:"health_timeout"`   // default 60s
	// JobRetention is how long finished job records are kept (pruned at
	// start-up and daily; the newest job is always kept); default 90 days.
	JobRetention Duration `toml:"job_retention"`
}

// TelemetryConfig tunes reporting.
// ModelsConfig tunes what the agent measures of its models' predictions
// (docs/FLEET.md "Shadow deployments" and "Drift").
type ModelsConfig struct {
	// LowMargin: a prediction whose normalised margin is below it counts
	// as low-margin (shadow reports); default 0.1, in [0, 1].
	LowMargin float64 `toml:"low_margin"`
	// DriftWindows is the memory of the drift score's firing rates, in
	// windows: counts are halved each time this many windows were added,
	// so older windows fade out; default 600 (a minute at 10 Hz).
	DriftWindows int `toml:"drift_windows"`
	// SamplesMaxBytes bounds the ring of windows kept for retraining
	// (docs/FLEET.md "Samples for retraining"); default 32 KiB, at most
	// MaxSamplesBytes (one MQTT message); -1 keeps none.
	SamplesMaxBytes int `toml:"samples_max_bytes"`
	// SampleEvery also keeps one window in every SampleEvery (0: only
	// low-margin windows and shadow disagreements).
	SampleEvery int `toml:"sample_every"`
	// MinConfidence and MaxNovelty replace a calibrated bundle's (format
	// 5) unknown thresholds: a window whose calibrated confidence is below
	// MinConfidence (0..1; 0: never) or whose novelty is above MaxNovelty
	// (0: never) is reported unknown. Unset: the bundle's, chosen by
	// training (docs/TRAINING.md "Confidence and unknown"). Models without
	// a calibration report no confidence and nothing unknown.
	MinConfidence *float64 `toml:"min_confidence"`
	MaxNovelty    *int64   `toml:"max_novelty"`
	// HistoryMaxBytes bounds the history of recent windows kept in the
	// database for dry runs (tritctl rollout plan); 0 (the default) keeps
	// none, at most MaxHistoryBytes.
	HistoryMaxBytes int `toml:"history_max_bytes"`
}

type TelemetryConfig struct {
	Interval       Duration `toml:"interval"`         // default 10s
	OutboxMaxBytes int64    `toml:"outbox_max_bytes"` // default 4 MiB
	AckRetry       Duration `toml:"ack_retry"`        // re-send unacknowledged events; default 60s
}

// Duration is a time.Duration written in TOML as a string such as "30s"
// (internal/config: trit-agent and trit-fleet read durations alike).
type Duration = config.Duration

// ConfigError names the configuration file, line and key that are wrong,
// in trit-fleet's words too (internal/config):
//
//	/etc/trit/agent.toml: mqtt.broker: "tcp://127.0.0.1": want scheme://host:port, e.g. …
type ConfigError = config.Error

// Bounds on the files the agent reads at start, in bytes: a wrong path (a
// log, /dev/zero, a pipe without end) is refused naming the file, not read
// whole (internal/capped).
const (
	maxConfigFile   = 1 << 20  // the configuration file
	maxPasswordFile = 64 << 10 // mqtt.password_file
)

// readPassword reads mqtt.password_file, up to maxPasswordFile bytes; the
// password is its content without trailing line breaks. An empty password
// is refused: the embedded broker never made one.
func readPassword(path string) (string, error) {
	b, err := capped.ReadFile(path, maxPasswordFile)
	if errors.Is(err, capped.ErrTooLarge) {
		return "", fmt.Errorf("%s: larger than %d bytes (%d KiB), the most a password file may hold", path, maxPasswordFile, maxPasswordFile>>10)
	}
	if err != nil {
		return "", err
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("%s is empty; it holds the device's secret (trit-fleet credentials add -o FILE writes it)", path)
	}
	return pw, nil
}

// LoadConfig reads, defaults and validates the TOML file at path. Unknown
// keys are errors (*config.UnknownKeyError, with the line and the nearest
// known key), so a typo does not silently fall back to a default; other
// errors are *ConfigError.
func LoadConfig(path string) (*Config, error) {
	var c Config
	raw, err := capped.ReadFile(path, maxConfigFile)
	if errors.Is(err, capped.ErrTooLarge) {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf("larger than %d bytes (%d KiB), the most a configuration file may hold", maxConfigFile, maxConfigFile>>10)}
	}
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	md, err := toml.Decode(string(raw), &c)
	if err != nil {
		return nil, config.DecodeError(path, err)
	}
	// Unknown keys are reported as trit-fleet reports them (internal/config).
	if err := config.Unknown(path, string(raw), md, &c, "docs/OPERATIONS.md"); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = path
		}
		return nil, err
	}
	return &c, nil
}

// Defaults.
const (
	DefaultStateDir        = "/var/lib/trit-agent"
	DefaultKeepAlive       = 30 * time.Second
	DefaultTimeout         = 10 * time.Second
	DefaultReconnectMin    = time.Second
	DefaultReconnectMax    = time.Minute
	DefaultDownloadTimeout = 2 * time.Minute
	DefaultHealthCycles    = 5
	DefaultHealthTimeout   = time.Minute
	DefaultJobRetention    = 90 * 24 * time.Hour
	DefaultInterval        = 10 * time.Second
	DefaultAckRetry        = time.Minute
	DefaultLowMargin       = 0.1
	DefaultDriftWindows    = 600
	DefaultSamplesMaxBytes = 32 << 10
	MaxSamplesBytes        = 48 << 10
	MaxHistoryBytes        = 4 << 20
	// DefaultLabelsMaxBytes and MaxLabelsMaxBytes bound the labelled
	// windows waiting for the fleet (label_source.max_bytes): the fleet
	// takes them one message at a time, so the bound is how long an
	// outage of the fleet loses nothing (256 KiB: about 1,600 windows of
	// a few features, 27 minutes at one window a second).
	DefaultLabelsMaxBytes = 256 << 10
	MaxLabelsMaxBytes     = 16 << 20
	// MaxBundleBytesLimit bounds install.max_bundle_bytes: a bundle is a
	// few kilobytes (docs/BUNDLE.md); a larger cap only lets a wrong or
	// hostile bundle take the gateway's memory and flash.
	MaxBundleBytesLimit = 1 << 20
)

// Validate fills defaults in and checks every field; it reads key and
// password files so that a bad path fails at start-up, not at first use.
func (c *Config) Validate() error {
	fail := func(key, format string, args ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if err := wire.CheckID(c.DeviceID); err != nil {
		return fail("device_id", "%v", err)
	}
	if err := wire.CheckID(c.Fleet); err != nil {
		return fail("fleet", "%v", err)
	}
	if len(c.Hardware) > bundle.MaxLabel {
		return fail("hardware", "%d bytes, at most %d", len(c.Hardware), bundle.MaxLabel)
	}
	if c.StateDir == "" {
		c.StateDir = os.Getenv("STATE_DIRECTORY")
		if i := strings.IndexByte(c.StateDir, ':'); i >= 0 {
			c.StateDir = c.StateDir[:i] // systemd lists several directories separated by ':'
		}
		if c.StateDir == "" {
			c.StateDir = DefaultStateDir
		}
	}
	if fi, err := os.Stat(c.StateDir); err == nil && !fi.IsDir() {
		return fail("state_dir", "%s is not a directory", c.StateDir)
	}
	if len(c.ReleaseKeys) == 0 {
		return fail("release_keys", "missing: at least one public key trusted for bundle signatures")
	}
	if _, err := bundle.LoadKeySet(c.ReleaseKeys...); err != nil {
		return fail("release_keys", "%v", err)
	}
	if len(c.CommandKeys) == 0 {
		return fail("command_keys", "missing: at least one fleet public key trusted for deployment commands")
	}
	if _, err := wire.LoadKeySet(c.CommandKeys...); err != nil {
		return fail("command_keys", "%v", err)
	}

	m := &c.MQTT
	if m.Broker == "" && len(m.Brokers) == 0 {
		return fail("mqtt.broker", "missing (e.g. tls://broker.example:8883)")
	}
	if len(m.Brokers) > maxBrokers {
		return fail("mqtt.brokers", "%d addresses, at most %d", len(m.Brokers), maxBrokers)
	}
	for i, b := range m.Addresses() {
		key := "mqtt.broker"
		if m.Broker == "" || i > 0 {
			key = "mqtt.brokers"
		}
		if err := wire.CheckBrokerHostPort(b); err != nil {
			return fail(key, "%v", err)
		}
		switch u, _ := url.Parse(b); u.Scheme {
		case "tcp", "mqtt", "ssl", "tls", "mqtts":
		default:
			return fail(key, "%q: scheme %q: want tcp, mqtt, ssl, tls or mqtts", b, u.Scheme)
		}
	}
	if (m.CertFile == "") != (m.KeyFile == "") {
		return fail("mqtt.cert_file", "cert_file and key_file must be given together")
	}
	for key, p := range map[string]string{"mqtt.ca_file": m.CAFile, "mqtt.cert_file": m.CertFile, "mqtt.key_file": m.KeyFile, "mqtt.password_file": m.PasswordFile} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fail(key, "%v", err)
		}
	}
	if m.PasswordFile != "" && m.Username == "" {
		return fail("mqtt.username", "password_file is set but username is not")
	}
	// The secrets are read here as run reads them, so that check-config
	// refuses what would stop the agent or keep it from ever connecting.
	for key, p := range map[string]string{"mqtt.key_file": m.KeyFile, "mqtt.password_file": m.PasswordFile} {
		if err := secretfile.CheckMode(p, true); err != nil {
			return fail(key, "%v", err)
		}
	}
	if m.PasswordFile != "" {
		if _, err := readPassword(m.PasswordFile); err != nil {
			return fail("mqtt.password_file", "%v", err)
		}
	}
	if m.CAFile != "" || m.CertFile != "" {
		if _, err := wire.ClientTLS(m.CAFile, m.CertFile, m.KeyFile); err != nil {
			return fail("mqtt.cert_file", "%v", err)
		}
	}
	for _, d := range []struct {
		key string
		v   *Duration
		def time.Duration
	}{
		{"mqtt.keepalive", &m.KeepAlive, DefaultKeepAlive},
		{"mqtt.timeout", &m.Timeout, DefaultTimeout},
		{"mqtt.reconnect_min", &m.ReconnectMin, DefaultReconnectMin},
		{"mqtt.reconnect_max", &m.ReconnectMax, DefaultReconnectMax},
		{"install.download_timeout", &c.Install.DownloadTimeout, DefaultDownloadTimeout},
		{"install.health_timeout", &c.Install.HealthTimeout, DefaultHealthTimeout},
		{"install.job_retention", &c.Install.JobRetention, DefaultJobRetention},
		{"telemetry.interval", &c.Telemetry.Interval, DefaultInterval},
		{"telemetry.ack_retry", &c.Telemetry.AckRetry, DefaultAckRetry},
	} {
		if d.v.Duration < 0 {
			return fail(d.key, "%v must not be negative", d.v.Duration)
		}
		if d.v.Duration == 0 {
			d.v.Duration = d.def
		}
	}
	if m.KeepAlive.Duration < time.Second {
		return fail("mqtt.keepalive", "%v is below 1s", m.KeepAlive.Duration)
	}
	if m.ReconnectMax.Duration < m.ReconnectMin.Duration {
		return fail("mqtt.reconnect_max", "%v is below reconnect_min %v", m.ReconnectMax.Duration, m.ReconnectMin.Duration)
	}
	if c.Telemetry.Interval.Duration < 100*time.Millisecond {
		return fail("telemetry.interval", "%v is below 100ms", c.Telemetry.Interval.Duration)
	}

	switch lm := c.Models.LowMargin; {
	case lm == 0:
		c.Models.LowMargin = DefaultLowMargin
	case !(lm > 0 && lm <= 1):
		return fail("models.low_margin", "%v, want a value in (0, 1]", lm)
	}
	if mc := c.Models.MinConfidence; mc != nil && !(*mc >= 0 && *mc <= 1) {
		return fail("models.min_confidence", "%v, want 0 … 1 (0: never unknown on confidence)", *mc)
	}
	if mn := c.Models.MaxNovelty; mn != nil && (*mn < 0 || *mn > math.MaxUint32) {
		return fail("models.max_novelty", "%d, want 0 … %d (0: never unknown on novelty)", *mn, uint32(math.MaxUint32))
	}
	switch dw := c.Models.DriftWindows; {
	case dw == 0:
		c.Models.DriftWindows = DefaultDriftWindows
	case dw < 10 || dw > 1<<24:
		return fail("models.drift_windows", "%d, want 10 … %d", dw, 1<<24)
	}

	if ls := c.LabelSource; ls != nil {
		if ls.Name == "" {
			ls.Name = "label"
		}
		if err := wire.CheckID(ls.Name); err != nil {
			return fail("label_source.name", "%v", err)
		}
		if ls.Channel == "" {
			return fail("label_source.channel", "give the sensor channel that reports the ground truth")
		}
		for v, class := range ls.Map {
			if err := wire.CheckLabel(class); err != nil {
				return fail("label_source.map", "value %q: %v", v, err)
			}
		}
		if ls.Every < 0 {
			return fail("label_source.every", "%d: want 1 or more (0: every window)", ls.Every)
		}
		switch mb := ls.MaxBytes; {
		case mb == 0:
			ls.MaxBytes = DefaultLabelsMaxBytes
		case mb < 1024 || mb > MaxLabelsMaxBytes:
			return fail("label_source.max_bytes", "%d, want 1024 … %d", mb, MaxLabelsMaxBytes)
		}
		if c.Features != nil {
			for _, f := range c.Features.Features {
				if f.Channel == ls.Channel {
					return fail("label_source.channel", "%q is an input of the [features] pipeline: a model must not read the ground truth it is judged by", ls.Channel)
				}
			}
		}
	}
	switch sb := c.Models.SamplesMaxBytes; {
	case sb == 0:
		c.Models.SamplesMaxBytes = DefaultSamplesMaxBytes
	case sb == -1:
	case sb < 1024 || sb > MaxSamplesBytes:
		return fail("models.samples_max_bytes", "%d, want -1 (none) or 1024 … %d (a response is one MQTT message)", sb, MaxSamplesBytes)
	}
	if hb := c.Models.HistoryMaxBytes; hb != 0 && (hb < 1024 || hb > MaxHistoryBytes) {
		return fail("models.history_max_bytes", "%d, want 0 (none) or 1024 … %d", hb, MaxHistoryBytes)
	}
	if c.Models.SampleEvery < 0 {
		return fail("models.sample_every", "%d must not be negative", c.Models.SampleEvery)
	}

	in := &c.Install
	switch {
	case in.MaxBundleBytes < 0:
		return fail("install.max_bundle_bytes", "%d must not be negative", in.MaxBundleBytes)
	case in.MaxBundleBytes == 0:
		in.MaxBundleBytes = bundle.DefaultMaxSize
	case in.MaxBundleBytes > MaxBundleBytesLimit:
		return fail("install.max_bundle_bytes", "%d is above the limit of %d bytes (1 MiB); bundles are a few kilobytes", in.MaxBundleBytes, MaxBundleBytesLimit)
	}
	switch {
	case in.HealthCycles < 0:
		return fail("install.health_cycles", "%d must not be negative", in.HealthCycles)
	case in.HealthCycles == 0:
		in.HealthCycles = DefaultHealthCycles
	}
	if c.Telemetry.OutboxMaxBytes < 0 {
		return fail("telemetry.outbox_max_bytes", "%d must not be negative", c.Telemetry.OutboxMaxBytes)
	}

	if len(c.Sensors) == 0 {
		return fail("sensor", "no [[sensor]] configured; the agent needs at least one source (replay and synthetic need no hardware)")
	}
	primary, err := sensors.PrimaryOf(c.Sensors)
	if err != nil {
		return fail("sensor", "%v", err)
	}
	if c.Features != nil {
		if err := c.Features.Validate(); err != nil {
			return fail("features", "%v", err)
		}
		// The pipeline's bands are placed by its rate: the sensor that
		// paces the cycles must deliver it.
		if err := sensors.CheckSpecRate(*c.Features, c.Sensors[primary]); err != nil {
			return fail("features.rate", "%v", err)
		}
	}
	if _, err := config.LogLevel(c.LogLevel); err != nil {
		return fail("log_level", "%v", err)
	}
	return nil
}

// DBPath is the database file in StateDir.
func (c *Config) DBPath() string { return filepath.Join(c.StateDir, "agent.db") }
