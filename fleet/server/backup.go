package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/internal/capped"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
)

// The database file, from the service's side: opening it (a damaged file
// is refused, see store.Open), and copying it while the service runs
// (trit-fleet backup).

// openDatabase opens the fleet's database — PostgreSQL when cfg.Database
// is a postgres:// URL, else the bbolt file — saying what to do if it is
// damaged.
func openDatabase(cfg *Config, log *slog.Logger) (store.Database, error) {
	if postgres.IsURL(cfg.Database) {
		if cfg.StartFresh {
			return nil, fmt.Errorf("%w: --start-fresh moves a damaged database file aside; the database is PostgreSQL (restore it with pg_restore instead)", ErrConfig)
		}
		db, err := postgres.Open(cfg.Database, nil)
		if err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
		if from := db.MigratedFrom(); from < postgres.SchemaVersion() {
			log.Info("database schema migrated", "database", postgres.Redact(cfg.Database), "from", from, "to", postgres.SchemaVersion())
		}
		return db, nil
	}
	if err := os.MkdirAll(dirOf(cfg.Database), 0o700); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	db, err := store.Open(cfg.Database, &store.Options{StartFresh: cfg.StartFresh})
	if errors.Is(err, store.ErrCorrupt) {
		return nil, fmt.Errorf("database: %w\nRestore the file from a backup (docs/FLEET.md \"Backup and restore\"), or run trit-fleet run --start-fresh once to start with an empty database", err)
	}
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", cfg.Database, err)
	}
	if aside := db.MovedAside(); aside != "" {
		log.Warn("the database was damaged: it was moved aside and trit-fleet starts with an empty one (no bundles, devices or rollouts; restore a backup to get them back)",
			"database", cfg.Database, "damaged_file", aside)
	}
	return db, nil
}

// maxTokenFile bounds the API token file in bytes. A token is one line
// of tens of characters (at least 16); the bound is far above any, and
// keeps a wrong path (a log, /dev/zero) from being read whole.
const maxTokenFile = 64 << 10

// readToken reads the API token file, refusing one that group or others
// can read (as the command key's file), one of more than maxTokenFile
// bytes, without reading past that bound, and a token shorter than
// access.MinTokenLength.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %04o; the API token must not be readable by group or others (chmod 600)", path, perm)
	}
	raw, err := capped.Read(f, maxTokenFile)
	if errors.Is(err, capped.ErrTooLarge) {
		return "", fmt.Errorf("%w; the token is one line", tooLarge(path, maxTokenFile, "an API token file"))
	}
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(raw))
	// No HTTP header carries a line break or another control character:
	// such a token could never be sent (base64 wraps long tokens at 76).
	if i := strings.IndexFunc(token, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }); i >= 0 {
		return "", fmt.Errorf("%s: the token has a line break or another control character at byte %d; the token is one line", path, i)
	}
	// The service refuses a shorter token (access.NewAuth); saying so
	// here, naming the file, makes check-config refuse it too.
	if len(token) < access.MinTokenLength {
		return "", fmt.Errorf("%s: the token has %d characters; the API token must be at least %d", path, len(token), access.MinTokenLength)
	}
	return token, nil
}

// newBackupCmd is `trit-fleet backup --out FILE`: a consistent copy of the
// database while the service runs (through its API: the running service
// holds the file's lock), or straight from the file when it does not run.
func newBackupCmd(stdout io.Writer) *cobra.Command {
	var configPath, out string
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Copy the database consistently, while trit-fleet runs or not",
		Long: `Write a consistent copy of trit-fleet's database to FILE (mode 0600).

If trit-fleet is running, the copy comes from it over its API (api.listen,
with the token in api.token_file) from one read transaction: the service
goes on meanwhile. If it is not running, the file is copied directly. The
copy is written to a temporary file next to FILE, checked as trit-fleet
checks its database at start-up, and only then renamed to FILE (replacing
an older copy). Restore by stopping trit-fleet and putting the copy in
place of the database file (docs/FLEET.md).`,
		Example: `  trit-fleet backup -c /etc/trit/fleet.toml -o /var/backups/trit-fleet/fleet-$(date +%F).db`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("%w: give the copy's file with --out", ErrConfig)
			}
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return err
			}
			n, how, err := backup(cfg, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s (%d bytes, %s)\n", out, n, how)
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", DefaultConfigPath, "configuration file")
	cmd.Flags().StringVarP(&out, "out", "o", "", "where to write the copy (required)")
	return cmd
}

// backup copies the database of cfg to out and says how it did.
func backup(cfg *Config, out string) (int64, string, error) {
	if postgres.IsURL(cfg.Database) {
		return 0, "", ErrNoBackup
	}
	db, err := store.Open(cfg.Database, &store.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	switch {
	case err == nil:
		defer db.Close()
		n, err := db.Backup(out)
		return n, "from the database file; trit-fleet was not running", err
	case !errors.Is(err, store.ErrLocked):
		return 0, "", fmt.Errorf("database: %w", err)
	}
	// Locked: the service runs; ask it.
	token, err := readToken(cfg.API.TokenFile)
	if err != nil {
		return 0, "", fmt.Errorf("api.token_file: %w", err)
	}
	req, err := http.NewRequest("GET", "http://"+cfg.API.Listen+"/v1/backup", nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "trit-fleet-backup/"+Version+" ("+localUser()+")") // for the audit trail
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("the database is in use, and trit-fleet's API at %s does not answer: %w", cfg.API.Listen, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, "", fmt.Errorf("trit-fleet at %s: HTTP %d: %s", cfg.API.Listen, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	n, err := store.WriteBackup(out, resp.Body)
	return n, "from the running trit-fleet", err
}
