// Package sensorcmd is the "sensors" command of trit-agent: "probe" lists
// the buses of this machine and the devices found on them, "read" prints
// live readings and features of the configured sensors (or of one sensor
// named by flags, such as the synthetic machine, so it runs without
// hardware). The agent mounts it with
//
//	root.AddCommand(sensorcmd.New(os.Stdout, os.Stderr))
//
// Errors in how the command was called are *UsageError, internal/cli's:
// trit-agent exits with code 2 on them; other errors are failures (1).
package sensorcmd

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/sensors"
	_ "github.com/trit-iot/trit/sensors/all" // every sensor kind
)

// UsageError marks an error in the command line (a bad flag combination or
// value), as opposed to a failure while running: the binaries' one
// cli.UsageError, so trit-agent exits with code 2 on it.
type UsageError = cli.UsageError

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// deps are what the commands take from the outside world; tests replace
// them with fakes.
type deps struct {
	stdout, stderr io.Writer
	env            *sensors.Env            // nil: the real hardware
	policy         *sensors.RetryPolicy    // nil: defaults
	probe          func(w io.Writer) error // nil: sensors.Probe
	signals        func(context.Context) (context.Context, context.CancelFunc)
}

// New returns the "sensors" command with its "probe" and "read"
// subcommands, writing to stdout and stderr.
func New(stdout, stderr io.Writer) *cobra.Command {
	return newCmd(&deps{stdout: stdout, stderr: stderr})
}

func newCmd(d *deps) *cobra.Command {
	if d.probe == nil {
		d.probe = sensors.Probe
	}
	if d.signals == nil {
		d.signals = func(ctx context.Context) (context.Context, context.CancelFunc) {
			return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		}
	}
	cmd := &cobra.Command{
		Use:   "sensors",
		Short: "Inspect this gateway's sensors",
		Long: `Commands to check the sensors of this gateway: "probe" lists buses and
detected devices, "read" prints live readings and features. See
docs/SENSORS.md for wiring and configuration.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newProbeCmd(d), newReadCmd(d))
	return cmd
}

// runContext is the context a command runs under: cmd's, canceled on
// Ctrl-C or SIGTERM.
func (d *deps) runContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return d.signals(ctx)
}
