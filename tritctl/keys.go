package tritctl

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/inference/bundle"
)

// keyInfo is what `tritctl keys gen --json` and `keys id --json` print.
type keyInfo struct {
	KeyID   string `json:"key_id"`
	Private string `json:"private,omitempty"`
	Public  string `json:"public,omitempty"`
}

func newKeysCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create and identify the Ed25519 keys that sign bundles",
		Example: `  tritctl keys gen -o release     # offline: release.key signs bundles; release.pub goes to the gateways
  tritctl keys gen -o command     # the fleet's online key (keys.command_key): signs deployment commands
  tritctl keys id release.pub`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return usagef("keys: give a subcommand (gen, id)") },
	}
	cmd.AddCommand(newKeysGenCmd(e), newKeysIDCmd(e))
	return cmd
}

func newKeysGenCmd(e *env) *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gen --out PREFIX",
		Short: "Write a new Ed25519 key pair: PREFIX.key (private, mode 0600) and PREFIX.pub",
		Long: `gen creates an Ed25519 key pair for signing bundles. The private key goes to
PREFIX.key (PEM PKCS #8, mode 0600: keep it on the signing machine only), the
public key to PREFIX.pub (PEM PKIX: give it to agents as a trusted key). It
refuses to overwrite either file. It prints the key ID, the first 8 bytes of
SHA-256 of the public key, which every bundle signed with the key carries.
There is no --force: replacing a release key would strand every gateway
that trusts it, so choose a new prefix or move the old pair away yourself.

To rotate keys: generate a new pair, add the new .pub to the agents' trusted
keys next to the old one, sign new releases with the new key, then remove
the old public key once no agent runs a bundle signed with it.`,
		Example: `  tritctl keys gen --out release                  # keep release.key on the signing machine only
  tritctl bundle sign --key release.key vib.trit -o vib-1.trit
  tritctl keys gen --out release-2027             # a rotation: the next release key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out PREFIX is required")
			}
			priv, pub := out+".key", out+".pub"
			if err := bundle.GenerateKey(priv, pub); err != nil {
				if errors.Is(err, fs.ErrExist) {
					// Replacing a release key would strand every gateway
					// that trusts it: no --force here.
					return fmt.Errorf("%w: tritctl never replaces a key (choose another --out prefix, or move the old pair away first)", err)
				}
				return err
			}
			pk, err := bundle.LoadPublicKey(pub)
			if err != nil {
				return err
			}
			info := keyInfo{KeyID: keyIDHex(pk), Private: priv, Public: pub}
			if asJSON {
				return writeJSON(e.stdout, info)
			}
			fmt.Fprintf(e.stdout, "key ID %s\n  private key: %s (mode 0600; keep it secret)\n  public key:  %s\n", info.KeyID, priv, pub)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "path prefix of the key files (PREFIX.key, PREFIX.pub)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	return cmd
}

func newKeysIDCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "id KEY_FILE",
		Short: "Print the key ID of a public or private key file",
		Example: `  tritctl keys id release.pub     # the ID 'bundle inspect' shows as "key ID"
  tritctl keys id release.key --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pk, err := loadAnyKey(args[0])
			if err != nil {
				return err
			}
			info := keyInfo{KeyID: keyIDHex(pk)}
			if asJSON {
				return writeJSON(e.stdout, info)
			}
			fmt.Fprintln(e.stdout, info.KeyID)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	return cmd
}

// loadAnyKey returns the public key of a public key file, or of a private
// key file if the file's PEM block is a private key.
func loadAnyKey(path string) (ed25519.PublicKey, error) {
	raw, err := readFileCapped(path, "key file", bundle.MaxKeyFile)
	if err != nil {
		return nil, err
	}
	if block, _ := pem.Decode(raw); block != nil && block.Type == "PRIVATE KEY" {
		priv, err := bundle.LoadPrivateKey(path)
		if err != nil {
			return nil, err
		}
		return priv.Public().(ed25519.PublicKey), nil
	}
	return bundle.LoadPublicKey(path)
}

func keyIDHex(pub ed25519.PublicKey) string {
	id := bundle.KeyID(pub)
	return hex.EncodeToString(id[:])
}
