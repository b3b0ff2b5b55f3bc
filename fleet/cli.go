package fleet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/internal/cli"
)

// Version is the trit-fleet's version (internal/buildinfo).
var Version = buildinfo.Version

// Main runs the trit-fleet command line with args (without the program
// name) and returns the exit code under the binaries' one command-line
// policy (internal/cli): 0 success, 1 failure, 2 usage error, also for a
// configuration error (ErrConfig).
func Main(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "trit-fleet",
		Short:         "The trit fleet service: model registry, device inventory and rollouts over MQTT",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var configPath string
	var startFresh bool
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the service until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return err
			}
			cfg.StartFresh = startFresh
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(stderr, nil))
			return Serve(ctx, cfg, log, nil)
		},
	}
	run.Flags().StringVarP(&configPath, "config", "c", "/etc/trit-fleet/fleet.toml", "configuration file")
	run.Flags().BoolVar(&startFresh, "start-fresh", false,
		"if the database is damaged or empty, move it aside and start with an empty one (registry, inventory and rollouts are lost: restore a backup instead if you have one)")
	root.AddCommand(run, newCredentialsCmd(stdout), newBackupCmd(stdout))
	return cli.Run(root, args, stdout, stderr)
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
	token, err := readToken(cfg.API.TokenFile)
	if err != nil {
		return fmt.Errorf("api.token_file: %w", err)
	}
	cmdKey, err := bundle.LoadPrivateKey(cfg.Keys.CommandKey)
	if err != nil {
		return fmt.Errorf("keys.command_key: %w", err)
	}
	trusted, err := bundle.LoadKeySet(cfg.Keys.ReleaseKeys...)
	if err != nil {
		return fmt.Errorf("keys.release_keys: %w", err)
	}
	if err := os.MkdirAll(dirOf(cfg.Database), 0o700); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	db, err := openDatabase(cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()

	broker, own := cfg.MQTT.Broker, cfg.MQTT.Broker // devices' broker URL, the fleet's own
	var eb *EmbeddedBroker
	if broker == "embedded" {
		m := &cfg.MQTT
		eb, err = StartEmbedded(&EmbeddedOptions{Listen: m.EmbeddedListen, FleetID: m.ClientID,
			Credentials: m.EmbeddedCredentials, CertFile: m.EmbeddedCertFile, KeyFile: m.EmbeddedKeyFile}, log)
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
	svc, err := NewService(db, NewRegistry(db, trusted, 0, nil), cfg.Fleet, conn, cmdKey,
		&Options{CommandTTL: cfg.Rollouts.CommandTTL.Duration, Tick: cfg.Rollouts.Tick.Duration, Logger: log, TrainingDir: cfg.Training.DataDir})
	if err != nil {
		return err
	}
	if err := conn.Connect(svc.Subscriptions(), svc.Deliver, svc.Resync); err != nil {
		return err
	}
	defer conn.Close()

	h, err := svc.Handler(token)
	if err != nil {
		return fmt.Errorf("api.token_file: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.API.Listen)
	if err != nil {
		return fmt.Errorf("api.listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info("trit-fleet serving", "fleet", cfg.Fleet, "api", ln.Addr().String(), "broker", broker, "version", Version)
	if ready != nil {
		ready <- Ready{API: ln.Addr().String(), Broker: broker}
	}
	return svc.Run(ctx)
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "."
}
