package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/newfile"
	"github.com/trit-iot/trit/wire"
)

// newCredentialsCmd is `trit-fleet credentials`: the embedded broker's
// device credentials.
func newCredentialsCmd(stdout io.Writer) *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Manage the embedded MQTT broker's device credentials",
		Long: `The embedded broker (mqtt.broker = "embedded") lets a device connect only
with its device ID as user name and client ID and the secret made for it by
'credentials add'. The fleet stores only the secret's SHA-256, in the file
named by mqtt.embedded_credentials; a running trit-fleet reads the file again
when it changes. Run these commands as the user trit-fleet runs as.`,
		Example: `  trit-fleet credentials add gw-1 -c fleet.toml -o gw-1.password
  trit-fleet credentials list -c fleet.toml`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("credentials: give a subcommand (add, remove, list)")
		},
	}
	cmd.PersistentFlags().StringVarP(&configPath, "config", "c", DefaultConfigPath, "trit-fleet configuration file")
	// load returns the credentials file and the fleet's own identity.
	load := func() (path, fleetID string, err error) {
		cfg, err := LoadConfig(configPath)
		if err != nil {
			return "", "", err
		}
		if cfg.MQTT.Broker != "embedded" {
			return "", "", fmt.Errorf("%w: %s: mqtt.broker is %q; these credentials are the embedded broker's (Mosquitto uses certificates: tritctl certs)", ErrConfig, configPath, cfg.MQTT.Broker)
		}
		return cfg.MQTT.EmbeddedCredentials, cfg.MQTT.ClientID, nil
	}

	var passwordFile string
	var replace bool
	add := &cobra.Command{
		Use:   "add DEVICE-ID",
		Short: "Make a device's secret: stored hashed, written once to --out (or printed)",
		Long: `add makes a random secret for the device, stores its SHA-256 in the
credentials file and writes the secret to --out (mode 0600; give
that file to the agent as mqtt.password_file, with mqtt.username = DEVICE-ID),
or prints it if no file is given. The secret cannot be shown again: to
replace a lost one, run add again with --replace.`,
		Example: `  trit-fleet credentials add gw-0001 -o gw-0001.password
  trit-fleet credentials add gw-0001 --replace -o gw-0001.password   # rotate a lost secret
  trit-fleet credentials add gw-0002                                 # print the secret once`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id := args[0]
			if err := wire.CheckID(id); err != nil {
				return fmt.Errorf("%w: device ID: %v", ErrConfig, err)
			}
			path, fleetID, err := load()
			if err != nil {
				return err
			}
			if id == fleetID {
				return fmt.Errorf("%w: %s is the fleet service's own identity (mqtt.client_id), not a device", ErrConfig, id)
			}
			c, _, err := readCredentials(path)
			if err != nil {
				return err
			}
			if _, ok := c[id]; ok && !replace {
				return fmt.Errorf("%w: %s already has a secret in %s (--replace makes a new one)", ErrCredentials, id, path)
			}
			secret, sum, err := newSecret()
			if err != nil {
				return err
			}
			if passwordFile != "" {
				// Written first: a secret that is stored but lost is useless.
				if err := writeSecretFile(passwordFile, secret); err != nil {
					return err
				}
			}
			c[id] = sum
			if err := writeCredentials(path, c); err != nil {
				if passwordFile != "" {
					os.Remove(passwordFile)
				}
				return err
			}
			if passwordFile != "" {
				fmt.Fprintf(stdout, "device %s: secret written to %s; its hash added to %s\n", id, passwordFile, path)
			} else {
				fmt.Fprintf(stdout, "device %s: hash added to %s; the secret (shown only now):\n%s\n", id, path, secret)
			}
			return nil
		},
	}
	add.Flags().StringVarP(&passwordFile, "out", "o", "", "write the secret to this new file (mode 0600) instead of printing it")
	cli.Renamed(add, "out", "password-file") // its name before the vocabulary (docs/CLI.md)
	add.Flags().BoolVar(&replace, "replace", false, "replace the device's existing secret")

	remove := &cobra.Command{
		Use:     "remove DEVICE-ID",
		Short:   "Remove a device's credentials (it cannot connect any more)",
		Example: `  trit-fleet credentials remove gw-0042 -c /etc/trit/fleet.toml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path, _, err := load()
			if err != nil {
				return err
			}
			c, _, err := readCredentials(path)
			if err != nil {
				return err
			}
			if _, ok := c[args[0]]; !ok {
				return fmt.Errorf("%w: %s has no credentials in %s", ErrCredentials, args[0], path)
			}
			delete(c, args[0])
			if err := writeCredentials(path, c); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "device %s removed from %s; its open connection, if any, stays until it disconnects (restart trit-fleet to end it now)\n", args[0], path)
			return nil
		},
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the devices that have credentials",
		Example: `  trit-fleet credentials list -c /etc/trit/fleet.toml
  trit-fleet credentials list -c fleet.toml --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, _, err := load()
			if err != nil {
				return err
			}
			c, _, err := readCredentials(path)
			if err != nil {
				return err
			}
			ids := make([]string, 0, len(c))
			for id := range c {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			if listJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(ids)
			}
			for _, id := range ids {
				fmt.Fprintln(stdout, id)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the device IDs as a JSON array")
	cmd.AddCommand(add, remove, list)
	return cmd
}

// writeSecretFile writes secret to path, a new file of mode 0600. An
// existing file is never overwritten: it may hold a secret in use.
func writeSecretFile(path, secret string) error {
	err := newfile.Write(path, 0o600, []byte(secret+"\n"))
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("--out: %s: file exists; a secret file is never overwritten (it may hold a secret in use): remove it, or give another path", path)
	case err != nil:
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
