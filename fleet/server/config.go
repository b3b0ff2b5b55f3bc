package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/config"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/wire"
)

// Config is trit-fleet's configuration file (TOML). Zero values mean the
// defaults given in each comment; LoadConfig fills them in and validates
// everything, naming the key at fault.
//
//	fleet    = "main"
//	database = "/var/lib/trit-fleet/fleet.db"
//
//	[mqtt]
//	broker    = "ssl://broker.example:8883"   # or "embedded"
//	client_id = "trit-fleet"
//	ca_file   = "/etc/trit-fleet/ca.crt"
//	cert_file = "/etc/trit-fleet/trit-fleet.crt"
//	key_file  = "/etc/trit-fleet/trit-fleet.key"
//
//	[api]
//	listen     = "127.0.0.1:8080"
//	token_file = "/etc/trit-fleet/api-token"
//
//	[keys]
//	command_key  = "/etc/trit-fleet/command.key"   # online key: signs deployment commands
//	release_keys = ["/etc/trit-fleet/release.pub"] # trusted bundle signers (offline keys)
type Config struct {
	Fleet string `toml:"fleet"` // fleet name, a topic level; default "main"
	// Database is the bbolt file (default /var/lib/trit-fleet/fleet.db) or
	// a PostgreSQL URL, postgres://user@host:5432/db?sslmode=verify-full&passfile=/etc/trit-fleet/pgpass,
	// for several replicas (docs/FLEET.md "PostgreSQL").
	Database string `toml:"database"`
	// Replica names this process among the replicas of one PostgreSQL
	// database (logs, metrics, the rollout lease); default host name and
	// process ID. Each replica needs its own, and its own mqtt.client_id.
	Replica  string         `toml:"replica"`
	MQTT     MQTTConfig     `toml:"mqtt"`
	API      APIConfig      `toml:"api"`
	Keys     KeysConfig     `toml:"keys"`
	Rollouts RolloutsConfig `toml:"rollouts"`
	Alerts   AlertsConfig   `toml:"alerts"`
	Training TrainingConfig `toml:"training"`
	Audit    AuditConfig    `toml:"audit"`
	// Retrain are the retraining policies, one [[retrain]] table each
	// (docs/FLEET.md "Closing the loop"); they need training.data_dir.
	Retrain []RetrainConfig `toml:"retrain"`
	// LogLevel is debug, info (default), warn or error.
	LogLevel string `toml:"log_level"`
	// StartFresh is set by trit-fleet run --start-fresh, never by the file:
	// a damaged database is moved aside and an empty one started.
	StartFresh bool `toml:"-"`
	// Reload, set by trit-fleet run (SIGHUP), makes Serve re-read the file
	// it was loaded from and apply log_level and keys.release_keys;
	// Level is the logger's level that a reload sets. Never from the file.
	Reload <-chan os.Signal `toml:"-"`
	Level  *slog.LevelVar   `toml:"-"`
	path   string
}

// TrainingConfig enables training on the fleet (tritctl remote-train).
type TrainingConfig struct {
	// DataDir holds the datasets a request may name (relative paths only);
	// empty disables training.
	DataDir string `toml:"data_dir"`
	// LabelPull is how often devices with a label source are asked for
	// the windows they labelled (docs/FLEET.md "Closing the loop");
	// default 30s, "-1s" never.
	LabelPull Duration `toml:"label_pull"`
}

// DefaultEmbeddedListen is where the embedded broker listens by default:
// loopback, and not MQTT's 1883, which a system Mosquitto often holds.
const DefaultEmbeddedListen = "127.0.0.1:1884"

// MQTTConfig is the fleet's broker connection.
type MQTTConfig struct {
	// Broker is tcp://host:port, ssl://host:port, or "embedded" to run an
	// in-process broker on EmbeddedListen (demos, single-host trials and
	// small sites; see docs/FLEET.md). Devices log in to the embedded
	// broker with the credentials in EmbeddedCredentials.
	Broker string `toml:"broker"`
	// Brokers are more addresses of the same (clustered) broker: when the
	// connection to one fails, the next is tried (docs/FLEET.md "A NATS
	// cluster"). Not with "embedded".
	Brokers []string `toml:"brokers"`
	// NATS are the client addresses (nats://host:4222, tls://host:4222)
	// of the NATS cluster whose MQTT listener Broker is: the replicas then
	// take device messages from its JetStream, each message by one replica
	// (natsfeed.go; docs/FLEET.md "A NATS cluster"), and publish over MQTT.
	// Tried in the order given.
	NATS []string `toml:"nats"`
	// NATSAckWait is how long a message taken from NATS may stay
	// unacknowledged before it goes to a replica again; default 30s.
	NATSAckWait Duration `toml:"nats_ack_wait"`
	// EmbeddedListen is host:port; default DefaultEmbeddedListen.
	EmbeddedListen string `toml:"embedded_listen"`
	// EmbeddedCredentials is the file of device credentials (hashed) that
	// `trit-fleet credentials add` writes; default
	// /etc/trit-fleet/mqtt-credentials.
	EmbeddedCredentials string `toml:"embedded_credentials"`
	// EmbeddedCertFile and EmbeddedKeyFile are the embedded broker's TLS
	// server certificate; required when EmbeddedListen is not a loopback
	// address, so that device secrets never cross a network in the clear.
	EmbeddedCertFile string   `toml:"embedded_cert_file"`
	EmbeddedKeyFile  string   `toml:"embedded_key_file"`
	ClientID         string   `toml:"client_id"` // default trit-fleet
	Username         string   `toml:"username"`
	PasswordFile     string   `toml:"password_file"` // read at start-up; never logged
	CAFile           string   `toml:"ca_file"`
	CertFile         string   `toml:"cert_file"`
	KeyFile          string   `toml:"key_file"`
	Timeout          Duration `toml:"timeout"` // every connect/publish/subscribe wait; default 10s
	// Queue and QueueBytes bound the incoming messages waiting to be
	// handled, in messages (default 65,536) and bytes (default 64 MiB);
	// beyond them messages are dropped, counted, and re-sent by the devices
	// (events after their ack_retry; docs/SCALING.md).
	Queue      int `toml:"queue"`
	QueueBytes int `toml:"queue_bytes"`
	// DeviceRate and DeviceBurst (messages per second, at once) and
	// DeviceByteRate and DeviceByteBurst (payload bytes) are every device's
	// budget at the embedded broker (Limit; 0: defaultDeviceLimit's). A
	// device's QoS 0 messages beyond it are dropped and counted, its QoS 1
	// ones wait. Mosquitto has no such limit (docs/FLEET.md).
	DeviceRate      float64 `toml:"device_rate"`
	DeviceBurst     int     `toml:"device_burst"`
	DeviceByteRate  float64 `toml:"device_byte_rate"`
	DeviceByteBurst int     `toml:"device_byte_burst"`
}

// deviceLimit is the per-device budget the keys give, with defaults.
func (m *MQTTConfig) deviceLimit() Limit {
	l := defaultDeviceLimit
	if m.DeviceRate != 0 {
		l.Rate = m.DeviceRate
	}
	if m.DeviceBurst != 0 {
		l.Burst = m.DeviceBurst
	}
	if m.DeviceByteRate != 0 {
		l.ByteRate = m.DeviceByteRate
	}
	if m.DeviceByteBurst != 0 {
		l.ByteBurst = m.DeviceByteBurst
	}
	return l
}

// AuditConfig bounds and checks the audit trail (docs/FLEET.md, "Audit
// trail"): records go once older than max_age, never before; past
// max_records an alarm says so.
type AuditConfig struct {
	MaxRecords int      `toml:"max_records"` // default 100000: an alarm beyond it
	MaxAge     Duration `toml:"max_age"`     // default 9600h (400 days): the retention
	// CheckpointEvery and VerifyEvery: how often the head is kept as a
	// signed checkpoint (and logged), and the chain checked; default 1h.
	CheckpointEvery Duration `toml:"checkpoint_every"`
	VerifyEvery     Duration `toml:"verify_every"`
	// StartOnBroken starts trit-fleet on a broken chain (a new chain is
	// started, its first record saying why); default false: it refuses.
	StartOnBroken bool `toml:"start_on_broken"`
	// TrustedKeys are public key files of the fleet's earlier command
	// keys, which signed the trail before keys.command_key did.
	TrustedKeys []string `toml:"trusted_keys"`
}

// limits returns the store's bound.
func (a AuditConfig) limits() store.AuditLimits {
	return store.AuditLimits{MaxRecords: a.MaxRecords, MaxAge: a.MaxAge.Duration}
}

// APIConfig is the HTTP API for tritctl.
type APIConfig struct {
	Listen    string `toml:"listen"`     // default 127.0.0.1:8080
	TokenFile string `toml:"token_file"` // required; at least 16 characters
	// TrustedProxies are the reverse proxies (addresses or CIDR
	// prefixes) whose X-Forwarded-For names the client, for the sign-in
	// throttle, the audit trail and the logs (proxy.go); default none.
	TrustedProxies []string `toml:"trusted_proxies"`
}

// KeysConfig names the fleet's keys (files written by `tritctl keys gen`).
type KeysConfig struct {
	CommandKey  string   `toml:"command_key"`  // Ed25519 private key, mode 0600
	ReleaseKeys []string `toml:"release_keys"` // Ed25519 public keys; several for rotation
}

// RolloutsConfig tunes the rollout engine.
type RolloutsConfig struct {
	CommandTTL Duration `toml:"command_ttl"` // default 24h
	Tick       Duration `toml:"tick"`        // default 1s
	// Reconcile is how often the deployment commands of online devices
	// whose job is unfinished are published again (docs/PROTOCOL.md,
	// "Reconciliation"); default 1m, between tick and command_ttl.
	Reconcile Duration `toml:"reconcile"`
	// LeaseTTL is how long a replica leads after its last renewal of the
	// rollout lease (replicas on PostgreSQL; docs/FLEET.md "Replicas"):
	// the longest a dead leader's rollouts wait; default 5s, at least
	// two ticks.
	LeaseTTL Duration `toml:"lease_ttl"`
	// TwoPerson: every new rollout, rollbacks included, waits before its
	// first device for a second person's approval (docs/FLEET.md
	// "Approval"); default off.
	TwoPerson bool `toml:"two_person"`
	// TwoPersonDevices is no longer used (a rollout under the rule
	// notifies no device before its approval); accepted, and logged as
	// ignored, so an older file still loads.
	TwoPersonDevices int `toml:"two_person_devices"`
}

// RetrainConfig is one [[retrain]] table: a model's retraining policy
// (fleet.RetrainPolicy).
type RetrainConfig struct {
	Model     string            `toml:"model"`
	Selector  map[string]string `toml:"selector"`
	Dataset   string            `toml:"dataset"`
	MinLabels int               `toml:"min_labels"`
	Drift     float64           `toml:"drift"`
	Unknown   float64           `toml:"unknown"`
	Accuracy  float64           `toml:"accuracy"`
	Every     Duration          `toml:"every"`
	// The challenger's shadow gates (tritctl rollout create's flags).
	MinWindows         uint64  `toml:"min_windows"`
	MinAgreement       float64 `toml:"min_agreement"`
	MaxDivergence      float64 `toml:"max_divergence"`
	MaxLowMargin       float64 `toml:"max_low_margin"`
	MaxUnknownIncrease float64 `toml:"max_unknown_increase"`
}

// policies returns the retraining policies of the file.
func (c *Config) policies() []fleet.RetrainPolicy {
	var out []fleet.RetrainPolicy
	for _, r := range c.Retrain {
		out = append(out, fleet.RetrainPolicy{Model: r.Model, Selector: r.Selector, Dataset: r.Dataset, MinLabels: r.MinLabels,
			Drift: r.Drift, Unknown: r.Unknown, Accuracy: r.Accuracy, Every: r.Every.Duration,
			Shadow: api.ShadowPolicy{MinWindows: r.MinWindows, MinAgreement: r.MinAgreement, MaxDivergence: r.MaxDivergence,
				MaxLowMargin: r.MaxLowMargin, MaxUnknownIncrease: r.MaxUnknownIncrease}})
	}
	return out
}

// AlertsConfig sets when the fleet warns about a device.
type AlertsConfig struct {
	// Drift: a device whose drift score reaches it is reported drifting
	// (log warning, trit_fleet_devices_drifting); 0 disables. In [0, 1].
	Drift float64 `toml:"drift"`
	// Unknown: a device whose calibrated model reported at least this
	// share of a telemetry interval's windows unknown is reported
	// uncertain (log warning, trit_fleet_devices_uncertain); 0 disables.
	// In [0, 1].
	Unknown float64 `toml:"unknown"`
}

// Duration is a time.Duration written in TOML as a string such as "30s"
// (internal/config: trit-agent and trit-fleet read durations alike).
type Duration = config.Duration

// ErrConfig reports an unusable configuration. It is a usage error: the
// command line exits with code 2 (internal/cli).
var ErrConfig error = &cli.UsageError{Err: errors.New("fleet: invalid configuration")}

// configError is an ErrConfig whose own text says everything (a bad
// value's, bad TOML's or an unknown key's, worded as the agent's:
// internal/config): it prints without ErrConfig's prefix.
type configError struct{ err error }

// badValue is the configuration error of key, its file filled in by
// ParseConfig.
func badValue(key, format string, a ...any) error {
	return configError{&config.Error{Key: key, Msg: fmt.Sprintf(format, a...)}}
}

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{ErrConfig, e.err} }

// LoadConfig reads, defaults and validates the configuration at path.
func LoadConfig(path string) (*Config, error) {
	raw, err := readFileCapped(path, maxConfigFile, "a configuration file")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c, err := ParseConfig(path, string(raw))
	if err != nil {
		return nil, err
	}
	c.path = path
	return c, nil
}

// ParseConfig parses configuration text; name is used in errors.
func ParseConfig(name, text string) (*Config, error) {
	var c Config
	md, err := toml.Decode(text, &c)
	if err != nil {
		return nil, configError{config.DecodeError(name, err)}
	}
	// Unknown keys are reported as trit-agent reports them (internal/config).
	if err := config.Unknown(name, text, md, &c, "docs/FLEET.md"); err != nil {
		return nil, configError{err}
	}
	if err := c.setDefaults(); err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			ce.File = name
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

// databaseName is Database for messages: a PostgreSQL URL without its
// password.
func (c *Config) databaseName() string {
	if postgres.IsURL(c.Database) {
		return postgres.Redact(c.Database)
	}
	return c.Database
}

func (c *Config) setDefaults() error {
	fail := badValue
	if c.Fleet == "" {
		c.Fleet = "main"
	}
	if _, err := config.LogLevel(c.LogLevel); err != nil {
		return fail("log_level", "%v", err)
	}
	if err := wire.CheckID(c.Fleet); err != nil {
		return fail("fleet", "%v", err)
	}
	if c.Database == "" {
		c.Database = "/var/lib/trit-fleet/fleet.db"
	}
	if postgres.IsURL(c.Database) {
		if err := postgres.CheckDSN(c.Database); err != nil {
			return fail("database", "%v", err)
		}
	}
	m := &c.MQTT
	if m.ClientID == "" {
		m.ClientID = "trit-fleet"
	}
	if m.Timeout.Duration == 0 {
		m.Timeout.Duration = 10 * time.Second
	}
	switch {
	case m.Broker == "":
		return fail("mqtt.broker", "required: tcp://host:port, ssl://host:port or \"embedded\"")
	case m.Broker == "embedded":
		if m.EmbeddedListen == "" {
			m.EmbeddedListen = DefaultEmbeddedListen
		}
		host, _, err := net.SplitHostPort(m.EmbeddedListen)
		if err != nil {
			return fail("mqtt.embedded_listen", "%v", err)
		}
		if m.EmbeddedCredentials == "" {
			m.EmbeddedCredentials = "/etc/trit-fleet/mqtt-credentials"
		}
		if (m.EmbeddedCertFile == "") != (m.EmbeddedKeyFile == "") {
			return fail("mqtt.embedded_cert_file", "embedded_cert_file and embedded_key_file go together")
		}
		if !isLoopback(host) && m.EmbeddedCertFile == "" {
			return fail("mqtt.embedded_listen", "%s is not a loopback address: devices would send their secrets over the network in the clear; "+
				"set embedded_cert_file and embedded_key_file (TLS), or use Mosquitto (docs/FLEET.md)", m.EmbeddedListen)
		}
		if err := wire.CheckID(m.ClientID); err != nil {
			return fail("mqtt.client_id", "%v (with the embedded broker it is the fleet's user name)", err)
		}
	case strings.HasPrefix(m.Broker, "tcp://"), strings.HasPrefix(m.Broker, "ssl://"), strings.HasPrefix(m.Broker, "tls://"):
		if err := wire.CheckBrokerHostPort(m.Broker); err != nil {
			return fail("mqtt.broker", "%v", err)
		}
	default:
		return fail("mqtt.broker", "%q: want tcp://host:port, ssl://host:port or \"embedded\"", m.Broker)
	}
	if len(m.Brokers) > 0 && m.Broker == "embedded" {
		return fail("mqtt.brokers", "other addresses of a clustered broker; the embedded broker is one process")
	}
	if len(m.Brokers) > 16 {
		return fail("mqtt.brokers", "%d addresses, at most 16", len(m.Brokers))
	}
	for _, b := range m.Brokers {
		if !strings.HasPrefix(b, "tcp://") && !strings.HasPrefix(b, "ssl://") && !strings.HasPrefix(b, "tls://") {
			return fail("mqtt.brokers", "%q: want tcp://host:port or ssl://host:port", b)
		}
		if strings.HasPrefix(b, "tcp://") != strings.HasPrefix(m.Broker, "tcp://") {
			return fail("mqtt.brokers", "%q: all addresses use TLS or none does (mqtt.broker is %q)", b, m.Broker)
		}
		if err := wire.CheckBrokerHostPort(b); err != nil {
			return fail("mqtt.brokers", "%v", err)
		}
	}
	if err := m.checkNATS(c.Fleet); err != nil {
		return err
	}
	if (m.CertFile == "") != (m.KeyFile == "") {
		return fail("mqtt.cert_file", "cert_file and key_file go together")
	}
	if m.Timeout.Duration < 0 {
		return fail("mqtt.timeout", "negative")
	}
	if m.Queue < 0 || m.Queue > 1<<20 {
		return fail("mqtt.queue", "%d: want 0 (default %d) to %d", m.Queue, fleet.DefaultQueue, 1<<20)
	}
	if m.QueueBytes < 0 || m.QueueBytes > 1<<30 {
		return fail("mqtt.queue_bytes", "%d: want 0 (default %d) to %d", m.QueueBytes, fleet.DefaultQueueBytes, 1<<30)
	}
	if set := m.DeviceRate != 0 || m.DeviceBurst != 0 || m.DeviceByteRate != 0 || m.DeviceByteBurst != 0; set && m.Broker != "embedded" {
		return fail("mqtt.device_rate", "the per-device limits (device_rate, device_burst, device_byte_rate, device_byte_burst) apply to the embedded broker only: "+
			"Mosquitto 2.0 has no per-client rate limit (docs/FLEET.md, \"Per-device limits\")")
	}
	if err := m.deviceLimit().check(); err != nil {
		return fail("mqtt.device_rate", "%v (keys device_rate, device_burst, device_byte_rate, device_byte_burst)", err)
	}
	if c.API.Listen == "" {
		c.API.Listen = "127.0.0.1:8080"
	}
	if _, _, err := net.SplitHostPort(c.API.Listen); err != nil {
		return fail("api.listen", "%v", err)
	}
	if c.API.TokenFile == "" {
		return fail("api.token_file", "required (a file holding the API token, at least 16 characters)")
	}
	if c.Keys.CommandKey == "" {
		return fail("keys.command_key", "required (the Ed25519 private key that signs deployment commands)")
	}
	if len(c.Keys.ReleaseKeys) == 0 {
		return fail("keys.release_keys", "required (public keys of the bundle signers)")
	}
	r := &c.Rollouts
	if r.CommandTTL.Duration == 0 {
		r.CommandTTL.Duration = 24 * time.Hour
	}
	if r.Tick.Duration == 0 {
		r.Tick.Duration = time.Second
	}
	if r.CommandTTL.Duration < time.Minute {
		return fail("rollouts.command_ttl", "%v is shorter than a minute", r.CommandTTL.Duration)
	}
	if r.Tick.Duration < 10*time.Millisecond {
		return fail("rollouts.tick", "%v is too short", r.Tick.Duration)
	}
	if r.Reconcile.Duration == 0 {
		r.Reconcile.Duration = fleet.DefaultReconcile
	}
	if r.Reconcile.Duration < r.Tick.Duration || r.Reconcile.Duration > r.CommandTTL.Duration {
		return fail("rollouts.reconcile", "%v: want a period from rollouts.tick (%v) to rollouts.command_ttl (%v)",
			r.Reconcile.Duration, r.Tick.Duration, r.CommandTTL.Duration)
	}
	if r.LeaseTTL.Duration == 0 {
		r.LeaseTTL.Duration = fleet.DefaultLeaseTTL
	}
	if r.LeaseTTL.Duration < 2*r.Tick.Duration {
		return fail("rollouts.lease_ttl", "%v: want at least two rollouts.tick (%v); the lease is renewed once a tick", r.LeaseTTL.Duration, r.Tick.Duration)
	}
	if len(c.Replica) > 128 {
		return fail("replica", "%d bytes, at most 128", len(c.Replica))
	}
	if d := c.Alerts.Drift; !(d >= 0 && d <= 1) {
		return fail("alerts.drift", "%v, want a drift score in [0, 1] (0: no alert)", d)
	}
	if u := c.Alerts.Unknown; !(u >= 0 && u <= 1) {
		return fail("alerts.unknown", "%v, want a share of windows in [0, 1] (0: no alert)", u)
	}
	if n := c.Rollouts.TwoPersonDevices; n < 0 || n > fleet.MaxRolloutDevices {
		return fail("rollouts.two_person_devices", "%d: want 0 (default 1) to %d", n, fleet.MaxRolloutDevices)
	}
	if lp := c.Training.LabelPull.Duration; lp > 0 && lp < 100*time.Millisecond {
		return fail("training.label_pull", "%v: want at least 100ms (or negative: never)", lp)
	}
	models := map[string]bool{}
	for i, p := range c.policies() {
		where := fmt.Sprintf("retrain[%d]", i)
		if err := fleet.CheckPolicy(&p); err != nil {
			return fail(where, "%v", err)
		}
		if models[p.Model] {
			return fail(where, "model %s has a policy already: one [[retrain]] per model", p.Model)
		}
		models[p.Model] = true
		if c.Training.DataDir == "" {
			return fail(where, "a retraining policy needs training.data_dir, where its dataset is")
		}
	}
	if n := c.Audit.MaxRecords; n < 0 || n > 10_000_000 {
		return fail("audit.max_records", "%d: want 0 (default %d) to 10000000", n, store.DefaultAuditMaxRecords)
	}
	if _, err := parseTrustedProxies(c.API.TrustedProxies); err != nil {
		return fail("api.trusted_proxies", "%v", err)
	}
	if d := c.Audit.MaxAge.Duration; d < 0 || (d > 0 && d < time.Hour) {
		return fail("audit.max_age", "%v: want 0 (default %v) or at least an hour", d, store.DefaultAuditMaxAge)
	}
	for _, k := range []struct {
		name string
		d    time.Duration
	}{{"audit.checkpoint_every", c.Audit.CheckpointEvery.Duration}, {"audit.verify_every", c.Audit.VerifyEvery.Duration}} {
		if k.d < 0 || (k.d > 0 && k.d < time.Second) {
			return fail(k.name, "%v: want 0 (default 1h) or at least 1s", k.d)
		}
	}
	return nil
}

// isLoopback reports whether host (an IP address or "localhost") is a
// loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
