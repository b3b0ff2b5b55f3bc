package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/config"
	"github.com/trit-iot/trit/internal/ratelog"
	_ "github.com/trit-iot/trit/sensors/all" // every sensor kind
)

// Main runs trit-agent with args (without the program name) and returns the
// exit code under the binaries' one command-line policy (internal/cli): 0
// success, 1 failure, 2 usage error. extra commands (such as the sensors
// tool) are mounted under the root.
func Main(args []string, stdout, stderr io.Writer, extra ...*cobra.Command) int {
	root := NewCommand(stdout, stderr)
	root.AddCommand(extra...)
	return cli.Run(root, args, stdout, stderr)
}

// NewCommand returns the trit-agent command tree: run and version.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "trit-agent",
		Short: "trit gateway agent: verified model installs and inference over MQTT",
		Example: `  trit-agent check-config -c /etc/trit/agent.toml
  trit-agent run -c /etc/trit/agent.toml
  trit-agent sensors probe`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)

	var configPath string
	var startFresh bool
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the agent (as the systemd service does)",
		Long: `Run trit-agent until SIGINT or SIGTERM: connect to the fleet's broker,
install the signed bundles it is sent, classify its sensors' windows and
report state, job events and telemetry. SIGHUP re-reads the configuration
(docs/OPERATIONS.md). Logs go to stderr.`,
		Example: `  trit-agent run --config /etc/trit/agent.toml
  trit-agent run -c agent.toml 2>gw-1.log &           # the README's first try
  trit-agent run -c agent.toml --start-fresh          # a damaged agent.db: moved aside, empty one started`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return &cli.UsageError{Err: err} // exit code 2, as trit-fleet's
			}
			lv := new(slog.LevelVar)
			level, _ := config.LogLevel(cfg.LogLevel) // LoadConfig checked it
			lv.Set(level)
			log := slog.New(ratelog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}), 0, 0)) // at most 20 lines of a message a minute, the rest counted
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			return Run(ctx, cfg, &Options{Logger: log, StartFresh: startFresh, LogLevel: lv,
				Reload: hup, LoadConfig: func() (*Config, error) { return LoadConfig(configPath) }})
		},
	}
	run.Flags().StringVarP(&configPath, "config", "c", "/etc/trit/agent.toml", "configuration file (TOML)")
	run.Flags().BoolVar(&startFresh, "start-fresh", false,
		"if the database is damaged or empty, move it aside and start with an empty one (the gateway becomes a new device)")

	check := &cobra.Command{
		Use:   "check-config",
		Short: "Validate a configuration file and exit",
		Long: `Read the configuration file and every file it names (keys, certificates,
the MQTT password file) as 'run' would, and exit 0 if the agent could
start with them, 2 naming the key at fault if not. The Debian package runs
it before starting the service.`,
		Example: `  trit-agent check-config --config /etc/trit/agent.toml
  trit-agent check-config -c agent.toml && sudo systemctl reload trit-agent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return &cli.UsageError{Err: err} // exit code 2, as trit-fleet's
			}
			fmt.Fprintf(stdout, "config %s: ok (device %s, fleet %s, %d sensor(s), database %s)\n",
				configPath, cfg.DeviceID, cfg.Fleet, len(cfg.Sensors), cfg.DBPath())
			return nil
		},
	}
	check.Flags().StringVarP(&configPath, "config", "c", "/etc/trit/agent.toml", "configuration file (TOML)")

	version := &cobra.Command{
		Use:     "version",
		Short:   "Print the agent version (as --version does)",
		Example: `  trit-agent version`,
		Args:    cobra.NoArgs,
		Run:     func(cmd *cobra.Command, _ []string) { fmt.Fprint(stdout, cli.VersionLine(cmd.Root())) },
	}
	root.AddCommand(run, check, version)
	return root
}
