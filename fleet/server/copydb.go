package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
)

// Moving a fleet from its bbolt file to PostgreSQL (trit-fleet
// copy-database): every bundle, then every document of every collection in
// one transaction, into a database with no document.

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
is opened read-only and refused while the service holds it. The bundles
go first, then the documents in one PostgreSQL transaction: if the copy
fails, the destination holds no document and the copy can be run again. Then set
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
// must hold no document. Bundles go first: they are content-addressed
// (dst checks each against its hash) and listed only through documents,
// so bundles left by a failed copy change nothing and a second copy may
// run. The documents then go in one transaction of dst's, as stored
// (JSON): a copy that fails there leaves dst without documents.
func copyDatabase(src *store.DB, dst store.Database) (copied, error) {
	var n copied
	if err := dst.View(checkEmpty); err != nil {
		return n, err
	}
	hashes, err := src.BundleHashes()
	if err != nil {
		return n, err
	}
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
	err = dst.Update(func(tx store.Tx) error {
		if err := checkEmpty(tx); err != nil { // another writer since the View
			return err
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
		return copied{bundles: n.bundles}, err
	}
	return n, nil
}

// checkEmpty returns ErrNotEmpty, naming a document, if tx's database
// holds any.
func checkEmpty(tx store.Tx) error {
	for _, c := range store.Collections() {
		err := tx.ForEach(c, func(key string, _ []byte) error {
			return fmt.Errorf("%w: %s holds %q", ErrNotEmpty, c, key)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
