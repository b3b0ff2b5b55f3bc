package server

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
)

// `trit-fleet audit verify` and `trit-fleet audit export`: the audit
// trail's hash chain checked (store.VerifyAudit), and the trail written
// out for safekeeping, from the database directly when trit-fleet is not
// running (or it is PostgreSQL), else through the running service's API
// with the api.token_file's token; or, with --file, an export checked
// offline with the fleet's public key.

// ErrAuditVerify is the exit of a verify that found the trail broken.
var ErrAuditVerify = errors.New("the audit trail is broken")

func newAuditCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the audit trail's hash chain, or export the trail",
	}
	var configPath, file, checkpoints, keyFile string
	var asJSON bool
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit trail's hash chain and name the first broken record",
		Long: `Check the audit trail: every record's link to the one before it, the
head's hash of the newest record and its signature with the fleet's key
(keys.command_key, and audit.trusted_keys), and every checkpoint. Prints
"intact", or the first broken record and every problem found, and exits 1.

With --file, an export (trit-fleet audit export) is checked instead,
offline, against the public key --key (default: keys.command_key's).
With --checkpoints, the heads and checkpoints of an earlier export (or of
the log's "audit checkpoint" lines, one JSON head a line) are checked
too: they show a trail cut back, or an older copy of the database, which
the database alone cannot.`,
		Example: `  trit-fleet audit verify -c /etc/trit/fleet.toml
  trit-fleet audit verify -c fleet.toml --checkpoints /var/backups/audit-2026-03-01.jsonl
  trit-fleet audit verify --file audit.jsonl --key command.pub`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			var given []store.AuditHead
			if checkpoints != "" {
				var err error
				if given, err = readCheckpoints(checkpoints); err != nil {
					return err
				}
			}
			var rep *store.AuditReport
			var v api.AuditVerification
			var err error
			if file != "" {
				keys, kerr := auditVerifyKeys(configPath, keyFile)
				if kerr != nil {
					return kerr
				}
				f, ferr := os.Open(file)
				if ferr != nil {
					return ferr
				}
				defer f.Close()
				if rep, err = store.VerifyAuditExport(f, keys, given, time.Now()); err != nil {
					return err
				}
				v = access.Verification(rep)
			} else {
				cfg, cerr := LoadConfig(configPath)
				if cerr != nil {
					return cerr
				}
				if v, err = verifyAudit(cfg, given); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(stdout, v.Summary)
				for _, p := range v.Problems {
					fmt.Fprintln(stdout, "  problem:", p)
				}
				for _, n := range v.Notes {
					fmt.Fprintln(stdout, "  note:", n)
				}
			}
			if !v.OK {
				return ErrAuditVerify
			}
			return nil
		},
	}
	verify.Flags().StringVarP(&configPath, "config", "c", DefaultConfigPath, "configuration file")
	verify.Flags().StringVar(&file, "file", "", "check this export instead of the database")
	verify.Flags().StringVar(&checkpoints, "checkpoints", "", "also check against the heads and checkpoints in this file (an earlier export)")
	verify.Flags().StringVar(&keyFile, "key", "", "with --file: the fleet's public key file (default: the configuration's command key)")
	verify.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var out string
	var exportConfig string
	export := &cobra.Command{
		Use:   "export --out FILE",
		Short: "Write the audit trail (head, checkpoints, records) to FILE, one JSON object a line",
		Long: `Write the audit trail to FILE (mode 0600): the head, every checkpoint and
every record, as stored, one JSON object a line. Keep exports elsewhere:
trit-fleet audit verify --checkpoints FILE later shows whether the trail
still holds everything it held then.`,
		Example: `  trit-fleet audit export -c /etc/trit/fleet.toml -o /var/backups/audit-$(date +%F).jsonl`,
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("%w: give the file with --out", ErrConfig)
			}
			cfg, err := LoadConfig(exportConfig)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(out+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			how, err := exportAudit(cfg, f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(out + ".tmp")
				return err
			}
			if err := os.Rename(out+".tmp", out); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s (%s)\n", out, how)
			return nil
		},
	}
	export.Flags().StringVarP(&exportConfig, "config", "c", DefaultConfigPath, "configuration file")
	export.Flags().StringVarP(&out, "out", "o", "", "where to write the export (required)")
	cmd.AddCommand(verify, export)
	return cmd
}

// auditVerifyKeys returns the key an offline check uses: --key, else the
// configuration's command key's public half and its trusted keys.
func auditVerifyKeys(configPath, keyFile string) ([]ed25519.PublicKey, error) {
	if keyFile != "" {
		k, err := bundle.LoadPublicKey(keyFile)
		if err != nil {
			return nil, fmt.Errorf("--key: %w", err)
		}
		return []ed25519.PublicKey{k}, nil
	}
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	sec, err := loadSecrets(cfg)
	if err != nil {
		return nil, err
	}
	return sec.auditKeys, nil
}

// readCheckpoints reads heads to check against: an export's head and
// checkpoint lines, or one JSON head a line (a log's).
func readCheckpoints(path string) ([]store.AuditHead, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), store.MaxAuditExportLine)
	var out []store.AuditHead
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l store.AuditExportLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("--checkpoints %s line %d: %v", path, n, err)
		}
		switch {
		case l.Head != nil:
			out = append(out, *l.Head)
		case l.Checkpoint != nil:
			out = append(out, *l.Checkpoint)
		case l.Record == nil:
			var h store.AuditHead
			if err := json.Unmarshal([]byte(line), &h); err != nil || h.Sig == "" {
				return nil, fmt.Errorf("--checkpoints %s line %d: not a head, a checkpoint or a record", path, n)
			}
			out = append(out, h)
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("--checkpoints %s line %d: longer than %d bytes", path, n+1, store.MaxAuditExportLine)
	} else if err != nil {
		return nil, fmt.Errorf("--checkpoints %s line %d: %w", path, n+1, err)
	}
	return out, nil
}

// withTrail runs fn on the database of cfg when it can be opened here
// (PostgreSQL, or a bbolt file trit-fleet does not hold); ok is false
// when the file is locked by the running service.
func withTrail(cfg *Config, fn func(db store.Database) error) (ok bool, err error) {
	if postgres.IsURL(cfg.Database) {
		db, err := postgres.Open(cfg.Database, nil)
		if err != nil {
			return true, fmt.Errorf("database: %w", err)
		}
		defer db.Close()
		return true, fn(db)
	}
	db, err := store.Open(cfg.Database, &store.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	switch {
	case err == nil:
		defer db.Close()
		return true, fn(db)
	case errors.Is(err, store.ErrLocked):
		return false, nil
	}
	return true, fmt.Errorf("database: %w", err)
}

// verifyAudit checks the trail of cfg's database.
func verifyAudit(cfg *Config, given []store.AuditHead) (api.AuditVerification, error) {
	sec, err := loadSecrets(cfg)
	if err != nil {
		return api.AuditVerification{}, err
	}
	var v api.AuditVerification
	ok, err := withTrail(cfg, func(db store.Database) error {
		return db.View(func(tx store.Tx) error {
			rep, err := store.VerifyAudit(tx, sec.auditKeys, given, time.Now())
			if err == nil {
				v = access.Verification(rep)
			}
			return err
		})
	})
	if ok || err != nil {
		return v, err
	}
	if len(given) > 0 {
		return v, fmt.Errorf("the database is in use (trit-fleet runs): --checkpoints needs it free; export the trail (trit-fleet audit export) and check the export: trit-fleet audit verify --file EXPORT --checkpoints %s", "FILE")
	}
	// The service holds the file: ask it.
	resp, err := serviceGet(cfg, "/v1/audit/verify", "trit-fleet-audit")
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	return v, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v)
}

// exportAudit writes the trail of cfg's database to w and says how.
func exportAudit(cfg *Config, w io.Writer) (string, error) {
	ok, err := withTrail(cfg, func(db store.Database) error {
		return db.View(func(tx store.Tx) error { return store.ExportAudit(tx, w) })
	})
	if ok || err != nil {
		return "from the database", err
	}
	resp, err := serviceGet(cfg, "/v1/audit/export", "trit-fleet-audit")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return "from the running trit-fleet", err
}

// serviceGet asks the running service for path with the api.token_file's
// token; a status other than 200 is an error with its message.
func serviceGet(cfg *Config, path, agent string) (*http.Response, error) {
	token, err := readToken(cfg.API.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("the database is in use (trit-fleet runs?) and the API token cannot be read: api.token_file: %w", err)
	}
	req, err := http.NewRequest("GET", "http://"+cfg.API.Listen+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", agent+"/"+Version+" ("+localUser()+")")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the database is in use, and trit-fleet's API at %s does not answer: %w", cfg.API.Listen, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("trit-fleet at %s: HTTP %d: %s", cfg.API.Listen, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}
