package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/config"
	"github.com/trit-iot/trit/internal/ratelog"
	"github.com/trit-iot/trit/internal/secretfile"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
)

// Version is the trit-fleet's version (internal/buildinfo).
var Version = buildinfo.Version

// Main runs the trit-fleet command line with args (without the program
// name) and returns the exit code under the binaries' one command-line
// policy (internal/cli): 0 success, 1 failure, 2 usage error, also for a
// configuration error (ErrConfig).
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Run(NewCommand(stdout, stderr), args, stdout, stderr)
}

// NewCommand returns the trit-fleet command tree.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "trit-fleet",
		Short: "The trit fleet service: model registry, device inventory and rollouts over MQTT",
		Example: `  trit-fleet check-config -c /etc/trit/fleet.toml
  trit-fleet run -c /etc/trit/fleet.toml
  trit-fleet credentials add gw-1 -c fleet.toml -o gw-1.password`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var configPath string
	var startFresh bool
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the service until SIGINT or SIGTERM",
		Long: `Run trit-fleet: its store, its broker connection (or the embedded broker),
the rollout loop, the HTTP API and the web console, until SIGINT or
SIGTERM; SIGHUP re-reads the configuration (docs/FLEET.md). Logs go to
stderr.`,
		Example: `  trit-fleet run --config /etc/trit/fleet.toml
  trit-fleet run -c fleet.toml 2>fleet.log &          # the README's first try
  trit-fleet run -c fleet.toml --start-fresh          # a damaged database: moved aside, empty one started`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return err
			}
			cfg.StartFresh = startFresh
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			cfg.Reload, cfg.Level = hup, new(slog.LevelVar)
			level, _ := config.LogLevel(cfg.LogLevel) // LoadConfig checked it
			cfg.Level.Set(level)
			log := slog.New(ratelog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.Level}), 0, 0)) // at most 20 lines of a message a minute, the rest counted
			return Serve(ctx, cfg, log, nil)
		},
	}
	run.Flags().StringVarP(&configPath, "config", "c", DefaultConfigPath, "configuration file")
	run.Flags().BoolVar(&startFresh, "start-fresh", false,
		"if the database is damaged or empty, move it aside and start with an empty one (registry, inventory and rollouts are lost: restore a backup instead if you have one)")
	check := &cobra.Command{
		Use:   "check-config",
		Short: "Validate the configuration and the files it names (token, keys), then exit",
		Long: "check-config reads the configuration file and every file it names (API token, command key, release keys,\n" +
			"the embedded broker's credentials) and checks that a bbolt database can be created or written,\n" +
			"as trit-fleet run would, and exits 0 if the service could start with them. The systemd unit and the\n" +
			"Debian package run it before starting the service.",
		Example: `  trit-fleet check-config --config /etc/trit/fleet.toml
  sudo -u trit-fleet trit-fleet check-config -c /etc/trit/fleet.toml   # as the service reads the files`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return err
			}
			if _, err := loadSecrets(cfg); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrConfig, configPath, err)
			}
			if err := checkDatabasePath(cfg.Database); err != nil {
				return fmt.Errorf("%w: %s: database: %v", ErrConfig, configPath, err)
			}
			// The embedded broker refuses, at start, a credentials
			// file others may write or that does not parse; a missing
			// one is an empty set (devices are added while it runs).
			if cfg.MQTT.Broker == "embedded" {
				if _, _, err := readCredentials(cfg.MQTT.EmbeddedCredentials); err != nil {
					return fmt.Errorf("%w: %s: mqtt.embedded_credentials: %v", ErrConfig, configPath, err)
				}
			}
			fmt.Fprintf(stdout, "config %s: ok (fleet %s, broker %s, api %s, database %s)\n",
				configPath, cfg.Fleet, cfg.MQTT.Broker, cfg.API.Listen, cfg.databaseName())
			return nil
		},
	}
	check.Flags().StringVarP(&configPath, "config", "c", DefaultConfigPath, "configuration file")
	root.AddCommand(run, check, newCredentialsCmd(stdout), newBackupCmd(stdout), newCopyDatabaseCmd(stdout), newOperatorsCmd(stdout), newAuditCmd(stdout))
	return root
}

// Ready reports the addresses a running Serve is using.
type Ready struct {
	API    string // host:port of the HTTP API
	Broker string // broker URL the service connected to
}

// Serve runs the fleet service described by cfg until ctx ends: the store,
// the (embedded or external) broker connection, the rollout loop and the
// HTTP API. If ready is not nil it receives the addresses once serving.
func Serve(ctx context.Context, cfg *Config, log *slog.Logger, ready chan<- Ready) error {
	sec, err := loadSecrets(cfg)
	if err != nil {
		return err
	}
	token, cmdKey, trusted := sec.token, sec.cmdKey, sec.trusted
	db, err := openDatabase(cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()

	broker, own := cfg.MQTT.Broker, cfg.MQTT.Broker // devices' broker URL, the fleet's own
	listeners := &listenerSet{}                     // the process's listeners (listener.go)
	var eb *EmbeddedBroker
	var trail atomic.Pointer[access.Audit] // the service's trail, once it exists
	if broker == "embedded" {
		m := &cfg.MQTT
		eb, err = StartEmbedded(&EmbeddedOptions{Listen: m.EmbeddedListen, FleetID: m.ClientID, Fleet: cfg.Fleet,
			Credentials: m.EmbeddedCredentials, CertFile: m.EmbeddedCertFile, KeyFile: m.EmbeddedKeyFile, Limit: new(m.deviceLimit()),
			listeners: listeners,
			OnCredentials: func(c CredentialsChange) {
				if a := trail.Load(); a != nil {
					go recordCredentials(a, c) // not under the broker's lock
				}
			}}, log)
		if err != nil {
			return err
		}
		defer eb.Close()
		broker, own = eb.URL(), eb.FleetURL()
		log.Info("embedded MQTT broker started", "url", broker, "credentials", m.EmbeddedCredentials)
	}
	mc := cfg.MQTT
	if eb != nil { // the fleet's own connection: loopback, the broker's secret
		mc.CAFile, mc.CertFile, mc.KeyFile, mc.Username, mc.PasswordFile = "", "", "", "", ""
	}
	conn, err := NewConn(&mc, own, log)
	if err != nil {
		return err
	}
	if eb != nil {
		conn.setCredentials(eb.FleetCredentials())
	}
	pub, feed, err := withNATS(&mc, cfg.Fleet, cfg.Replica, conn, log)
	if err != nil {
		return err
	}
	reg := fleet.NewRegistry(db, trusted, 0, nil)
	svc, err := fleet.NewService(db, reg, cfg.Fleet, pub, cmdKey,
		&fleet.Options{Queue: cfg.MQTT.Queue, QueueBytes: cfg.MQTT.QueueBytes, CommandTTL: cfg.Rollouts.CommandTTL.Duration, Tick: cfg.Rollouts.Tick.Duration, Reconcile: cfg.Rollouts.Reconcile.Duration, Logger: log,
			Replica: cfg.Replica, LeaseTTL: cfg.Rollouts.LeaseTTL.Duration, TrainingDir: cfg.Training.DataDir,
			DriftAlert: cfg.Alerts.Drift, UnknownAlert: cfg.Alerts.Unknown, Audit: cfg.Audit.limits(),
			TwoPerson: cfg.Rollouts.TwoPerson, Policies: cfg.policies(), LabelPull: cfg.Training.LabelPull.Duration})
	if err != nil {
		return err
	}
	if cfg.Rollouts.TwoPersonDevices != 0 {
		log.Warn("rollouts.two_person_devices is no longer used and is ignored: under the two-person rule no device is notified before the approval", "two_person_devices", cfg.Rollouts.TwoPersonDevices)
	}
	trail.Store(svc.Audit())
	svc.Audit().TrustKeys(sec.auditKeys[1:]...)
	if err := checkAuditAtStart(svc.Audit(), cfg, log); err != nil {
		return err
	}
	svc.AddAlarms(listeners.Alarms)
	svc.AddMetrics(listeners)
	if ops, err := (&access.Operators{DB: db}).List(); err == nil && len(ops) == 0 {
		log.Info("no operators yet: everyone signs in with the api.token_file's token, an admin; give each person and machine their own (trit-fleet operators add NAME --role ROLE; docs/FLEET.md \"Operators, roles and the audit trail\")")
	}
	if eb != nil { // the broker's per-device limit counts go to the devices' records
		svc.CountLimitedBy(eb.TakeLimited)
	}
	filters := svc.Subscriptions()
	if feed != nil { // device messages come from NATS
		filters = nil
	}
	if err := conn.Connect(filters, svc.Deliver, svc.Resync); err != nil {
		return err
	}
	defer conn.Close()
	if feed != nil {
		if err := feed.Start(svc.DeliverAcked); err != nil {
			return err
		}
		defer feed.Close()
	}

	h, err := Handler(svc, token)
	if err != nil {
		return fmt.Errorf("api.token_file: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.API.Listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("api.listen: %w (another trit-fleet, or another service on this port? set api.listen to a free port, and tritctl's --fleet / $TRIT_FLEET_URL to match)", err)
	}
	if err != nil {
		return fmt.Errorf("api.listen: %w", err)
	}
	proxies, _ := parseTrustedProxies(cfg.API.TrustedProxies) // LoadConfig checked them
	var up connected
	if c, ok := pub.(connected); ok {
		up = c
	}
	srv := newAPIServer(withTrustedProxies(withHealth(h, db, up), proxies), log)
	ctx, stopServing := context.WithCancelCause(ctx)
	defer stopServing(nil)
	go func() {
		// http.Server.Serve returns on the listener's first error, and
		// the guarded listener gives only a lasting one (it retries
		// temporary errors itself): without an API the service cannot be
		// driven, so it stops, and systemd starts it again.
		if err := srv.Serve(apiListener(ln, listeners, log)); !errors.Is(err, http.ErrServerClosed) {
			stopServing(fmt.Errorf("api.listen %s: the API listener stopped: %w", ln.Addr(), err))
		}
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info("trit-fleet serving", "fleet", cfg.Fleet, "api", ln.Addr().String(), "broker", broker, "version", Version)
	if ready != nil {
		ready <- Ready{API: ln.Addr().String(), Broker: broker}
	}
	if cfg.Reload != nil {
		go reloadLoop(ctx, cfg, reg, svc.Audit(), log)
	}
	go svc.Audit().Watch(ctx, cfg.Audit.CheckpointEvery.Duration, cfg.Audit.VerifyEvery.Duration)
	defer svc.Audit().Flush()
	err = svc.Run(ctx)
	svc.ReleaseLead() // another replica takes over at once
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return err
}

// DefaultConfigPath is where trit-fleet looks for its configuration (the
// Debian package's conffile).
const DefaultConfigPath = "/etc/trit/fleet.toml"

// secrets are the files a configuration names, read and checked.
type secrets struct {
	token   string
	cmdKey  ed25519.PrivateKey
	trusted *bundle.KeySet
	// auditKeys are the public keys the audit trail may be signed with:
	// the command key's and audit.trusted_keys.
	auditKeys []ed25519.PublicKey
}

// loadSecrets reads the API token and keys cfg names; errors name the key.
func loadSecrets(cfg *Config) (*secrets, error) {
	var s secrets
	var err error
	if s.token, err = readToken(cfg.API.TokenFile); err != nil {
		return nil, fmt.Errorf("api.token_file: %w", err)
	}
	if s.cmdKey, err = bundle.LoadPrivateKey(cfg.Keys.CommandKey); err != nil {
		return nil, fmt.Errorf("keys.command_key: %w", err)
	}
	if s.trusted, err = bundle.LoadKeySet(cfg.Keys.ReleaseKeys...); err != nil {
		return nil, fmt.Errorf("keys.release_keys: %w", err)
	}
	// The broker connection's secrets are held to the command key's and
	// the token's rule: they were read whatever their mode.
	for _, f := range []struct{ key, path string }{
		{"mqtt.key_file", cfg.MQTT.KeyFile}, {"mqtt.password_file", cfg.MQTT.PasswordFile}, {"mqtt.embedded_key_file", cfg.MQTT.EmbeddedKeyFile},
	} {
		if err := secretfile.CheckMode(f.path, false); err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	s.auditKeys = []ed25519.PublicKey{s.cmdKey.Public().(ed25519.PublicKey)}
	for _, f := range cfg.Audit.TrustedKeys {
		k, err := bundle.LoadPublicKey(f)
		if err != nil {
			return nil, fmt.Errorf("audit.trusted_keys: %w", err)
		}
		s.auditKeys = append(s.auditKeys, k)
	}
	return &s, nil
}

// reloadLoop applies a re-read configuration on each cfg.Reload signal:
// log_level and keys.release_keys take effect; other changed keys are
// reported as needing a restart; a file that does not load is refused and
// the running configuration kept.
func reloadLoop(ctx context.Context, cfg *Config, reg *fleet.Registry, audit *access.Audit, log *slog.Logger) {
	cur := cfg
	for {
		select {
		case <-ctx.Done():
			return
		case <-cfg.Reload:
		}
		next, err := LoadConfig(cfg.path)
		var sec *secrets
		if err == nil {
			sec, err = loadSecrets(next)
		}
		if err != nil {
			log.Error("configuration reload refused; the running configuration is kept", "err", err)
			audit.Record(store.AuditRecord{Who: "SIGHUP", Agent: "signal", Action: "config.reload", Object: "config/" + cfg.path,
				Outcome: store.AuditFailed, Detail: err.Error()})
			continue
		}
		reg.SetTrusted(sec.trusted)
		if cfg.Level != nil {
			level, _ := config.LogLevel(next.LogLevel) // LoadConfig checked it
			cfg.Level.Set(level)
		}
		var restart []string
		a, b := *cur, *next
		a.LogLevel, b.LogLevel = "", ""
		a.Keys.ReleaseKeys, b.Keys.ReleaseKeys = nil, nil
		a.StartFresh, a.Reload, a.Level = false, nil, nil
		if !reflect.DeepEqual(a.MQTT, b.MQTT) {
			restart = append(restart, "mqtt")
		}
		if !reflect.DeepEqual(a.API, b.API) {
			restart = append(restart, "api")
		}
		for _, k := range []struct {
			key  string
			x, y any
		}{{"fleet", a.Fleet, b.Fleet}, {"database", a.Database, b.Database}, {"replica", a.Replica, b.Replica}, {"keys.command_key", a.Keys.CommandKey, b.Keys.CommandKey},
			{"rollouts", a.Rollouts, b.Rollouts}, {"training", a.Training, b.Training}, {"audit", a.Audit, b.Audit}} {
			if !reflect.DeepEqual(k.x, k.y) {
				restart = append(restart, k.key)
			}
		}
		log.Info("configuration reloaded", "log_level", next.LogLevel, "release_keys", len(next.Keys.ReleaseKeys))
		if len(restart) > 0 {
			log.Warn("configuration keys changed that take effect only at restart (systemctl restart trit-fleet); they are not applied",
				"keys", strings.Join(restart, ", "))
		}
		detail := fmt.Sprintf("log_level %s, %d release keys", next.LogLevel, len(next.Keys.ReleaseKeys))
		if len(restart) > 0 {
			detail += "; not applied until restart: " + strings.Join(restart, ", ")
		}
		audit.Record(store.AuditRecord{Who: "SIGHUP", Agent: "signal", Action: "config.reload", Object: "config/" + cfg.path,
			Outcome: store.AuditOK, Detail: detail})
		kept := *cur
		kept.LogLevel, kept.Keys.ReleaseKeys = next.LogLevel, next.Keys.ReleaseKeys
		cur = &kept
	}
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "."
}

// checkAuditAtStart checks the audit trail's hash chain before the
// service starts: a broken chain stops it, unless audit.start_on_broken,
// which starts a new chain whose first record says what was broken.
func checkAuditAtStart(a *access.Audit, cfg *Config, log *slog.Logger) error {
	rep, err := a.Verify()
	if err != nil {
		return fmt.Errorf("audit trail: %w", err)
	}
	if rep.OK() {
		log.Info("audit trail checked", "summary", rep.Summary())
		return nil
	}
	if !cfg.Audit.StartOnBroken {
		return fmt.Errorf("%w: %s; every problem: trit-fleet audit verify -c %s; to start anyway (a new chain is started, its first record saying what was broken), set [audit] start_on_broken = true",
			access.ErrAuditBroken, rep.Summary(), cfg.path)
	}
	log.Error("audit trail broken; starting anyway ([audit] start_on_broken): a new chain starts", "summary", rep.Summary())
	return a.Restart(rep.Summary())
}

// checkDatabasePath checks, for check-config, that run can open a bbolt
// database at path for writing as whoever runs it (the service's user,
// under sudo -u): a regular file it may write, or a missing one whose
// nearest existing directory it may write (run creates the directories
// below). run would stop at start otherwise; a PostgreSQL URL is checked
// when the service connects.
func checkDatabasePath(path string) error {
	if postgres.IsURL(path) {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory: name the database file in it, e.g. %s", path, filepath.Join(path, "fleet.db"))
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case err == nil:
		if err := unix.Access(path, unix.W_OK); err != nil {
			return fmt.Errorf("%s: not writable by this user: %v", path, err)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR):
		return err
	}
	dir := filepath.Dir(path)
	for {
		di, err := os.Stat(dir)
		switch {
		case (errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)) && filepath.Dir(dir) != dir:
			dir = filepath.Dir(dir)
			continue
		case err != nil:
			return fmt.Errorf("%s: %v", path, err)
		case !di.IsDir():
			return fmt.Errorf("%s: %s is not a directory", path, dir)
		}
		if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
			return fmt.Errorf("%s cannot be created: %s is not writable by this user: %v", path, dir, err)
		}
		return nil
	}
}
