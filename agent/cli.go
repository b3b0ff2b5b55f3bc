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
		Use:           "trit-agent",
		Short:         "trit gateway agent: verified model installs and inference over MQTT",
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
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return &cli.UsageError{Err: err} // exit code 2, as trit-fleet's
			}
			lv := new(slog.LevelVar)
			lv.Set(level(cfg.LogLevel))
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
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
		Args:  cobra.NoArgs,
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
		Use:   "version",
		Short: "Print the agent version",
		Args:  cobra.NoArgs,
		Run:   func(*cobra.Command, []string) { fmt.Fprintln(stdout, "trit-agent", Version) },
	}
	root.AddCommand(run, check, version)
	return root
}

func level(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
