package sensorcmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/sensors"
)

// checkTimeout bounds the first read of a configured sensor in probe.
const checkTimeout = 5 * time.Second

func newProbeCmd(d *deps) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "List buses, the devices answering on them, and GPIO pins",
		Long: `probe initialises periph's host drivers and lists what this machine offers:
the host drivers (and why some failed, often a missing group membership),
each I²C bus with the devices found at the addresses of the supported
sensors, each SPI port with the device identified on it, and the GPIO pins.
Detection only reads registers.

With --config, it then opens every sensor of the agent's configuration
once, takes one reading, and reports each as ok or failed; it fails if any
configured sensor does.`,
		Example: `  trit-agent sensors probe
  trit-agent sensors probe --config /etc/trit/agent.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := d.runContext(cmd)
			defer cancel()
			return runProbe(ctx, d, config)
		},
	}
	cmd.Flags().StringVarP(&config, "config", "c", "", "the agent's configuration file: also check every configured sensor")
	return cmd
}

func runProbe(ctx context.Context, d *deps, path string) error {
	var cfg *FileConfig
	if path != "" {
		var err error
		if cfg, err = LoadConfig(path); err != nil {
			return err
		}
	}
	probeErr := d.probe(d.stdout)
	if probeErr != nil {
		fmt.Fprintf(d.stdout, "host: %v\n", probeErr)
	}
	if cfg == nil {
		return probeErr
	}
	fmt.Fprintf(d.stdout, "configured sensors (%s):", path)
	if len(cfg.Sensors) == 0 {
		fmt.Fprintf(d.stdout, " none\n")
		return probeErr
	}
	fmt.Fprintln(d.stdout)
	failed := 0
	for _, c := range cfg.Sensors {
		eff, _ := c.Effective() // validated by LoadConfig
		fmt.Fprintf(d.stdout, "  %-12s %-10s %-22s ", eff.Name, eff.Kind, where(eff))
		reading, err := check(ctx, eff, d.env)
		if err != nil {
			failed++
			fmt.Fprintf(d.stdout, "FAILED: %v\n", err)
			continue
		}
		fmt.Fprintf(d.stdout, "ok: %s\n", reading)
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d configured sensors failed", failed, len(cfg.Sensors))
	case probeErr != nil:
		return probeErr
	}
	return nil
}

// check opens c, takes one reading and closes the source; it returns the
// reading as "channel=value ...".
func check(ctx context.Context, c sensors.Config, env *sensors.Env) (string, error) {
	src, err := sensors.OpenWith(c, env)
	if err != nil {
		return "", err
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	r, err := src.Read(ctx)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(r.Values))
	for i, ch := range src.Channels() {
		parts[i] = ch + "=" + strconv.FormatFloat(r.Values[i], 'g', 5, 64)
	}
	return strings.Join(parts, " "), nil
}

// where says where a sensor is: its bus and address, pins or file.
func where(c sensors.Config) string {
	switch {
	case c.File != "":
		return c.File
	case len(c.Pins) > 0:
		return strings.Join(c.Pins, ",")
	case c.Kind == "synthetic":
		return "simulated"
	}
	bus := c.Bus
	if bus == "" {
		bus = "first bus"
	}
	if c.Address != 0 {
		return fmt.Sprintf("%s %#02x", bus, c.Address)
	}
	return bus
}
