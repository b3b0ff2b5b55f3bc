package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
)

// Moving a fleet from its bbolt file to PostgreSQL (trit-fleet
// copy-database): every document of every collection and every bundle,
// written to an empty database in one transaction, so a copy that fails
// leaves the destination as empty as it found it.

// ErrNotEmpty is returned when copy-database's destination already holds
// documents: it never merges into, or overwrites, a fleet.
var ErrNotEmpty = errors.New("the destination database is not empty")

func newCopyDatabaseCmd(stdout io.Writer) *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "copy-database --from FILE --to postgres://…",
		Short: "Copy a stopped fleet's bbolt database into an empty PostgreSQL database",
		Long: `Copy every document (registry, inventory, rollouts, operators, audit trail,
health history, console sessions, training jobs) and every bundle from the
bbolt file FILE into the PostgreSQL database at --to, which must be empty
(trit-fleet creates its tables there first). Stop trit-fleet first: the file
is opened read-only and refused while the service holds it. The copy is one
PostgreSQL transaction: if it fails, the destination is left empty. Then set
database = "postgres://…" in the configuration and start trit-fleet
(docs/FLEET.md "PostgreSQL"). The bbolt file is not changed: keep it until
the fleet runs well on PostgreSQL.`,
		Example: `  systemctl stop trit-fleet
  sudo -u trit-fleet trit-fleet copy-database --from /var/lib/trit-fleet/fleet.db \
      --to "postgres://trit_fleet@db.example:5432/trit?sslmode=verify-full"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || !postgres.IsURL(to) {
				return fmt.Errorf("%w: give the bbolt file with --from and the PostgreSQL URL (postgres://…) with --to", ErrConfig)
			}
			src, err := store.Open(from, &store.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
			if errors.Is(err, store.ErrLocked) {
				return fmt.Errorf("%s: %w: stop trit-fleet first (copy-database copies a stopped fleet)", from, err)
			}
			if err != nil {
				return fmt.Errorf("--from %s: %w", from, err)
			}
			defer src.Close()
			dst, err := postgres.Open(to, nil)
			if err != nil {
				return fmt.Errorf("--to %s: %w", postgres.Redact(to), err)
			}
			defer dst.Close()
			n, err := copyDatabase(src, dst)
			if err != nil {
				return fmt.Errorf("copying %s to %s: %w", from, postgres.Redact(to), err)
			}
			fmt.Fprintf(stdout, "copied %s to %s: %d documents, %d bundles\n", from, postgres.Redact(to), n.docs, n.bundles)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the fleet's bbolt database file (required)")
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database's URL, postgres://… (required)")
	return cmd
}

type copied struct{ docs, bundles int }

// copyDatabase copies every document and bundle of src into dst, which
// must hold no document, in one transaction of dst's. Documents are copied
// as stored (JSON), bundles by their bytes (dst checks their hash).
func copyDatabase(src *store.DB, dst fleet.Store) (copied, error) {
	var n copied
	hashes, err := src.BundleHashes()
	if err != nil {
		return n, err
	}
	err = dst.Update(func(tx store.Tx) error {
		for _, c := range store.Collections() {
			err := tx.ForEach(c, func(key string, _ []byte) error {
				return fmt.Errorf("%w: %s holds %q", ErrNotEmpty, c, key)
			})
			if err != nil {
				return err
			}
		}
		for _, c := range store.Collections() {
			err := src.ForEach(c, func(key string, raw []byte) error {
				n.docs++
				return tx.Put(c, key, json.RawMessage(raw))
			})
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
		}
		return nil
	})
	if err != nil {
		return copied{}, err
	}
	// Bundles are content-addressed: writing one twice is harmless, and a
	// bundle without its document is never listed, so they go after the
	// documents' transaction, each checked against its hash.
	for _, h := range hashes {
		data, err := src.Bundle(h)
		if err != nil {
			return n, fmt.Errorf("bundle %.12s: %w", h, err)
		}
		got, err := dst.PutBundle(data)
		if err != nil {
			return n, fmt.Errorf("bundle %.12s: %w", h, err)
		}
		if got != h {
			return n, fmt.Errorf("bundle %.12s: its bytes hash to %.12s (the source file is damaged)", h, got)
		}
		n.bundles++
	}
	return n, nil
}
