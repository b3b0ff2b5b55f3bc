package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trit-iot/trit/wire"
)

// realDB writes a database the way the agent and the fleet fill theirs —
// bundles (some spanning several pages), model slots, jobs, an outbox,
// counters and fleet documents — closes it and returns its path and a
// snapshot of everything stored.
func realDB(t *testing.T) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "real.db")
	db, err := Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 12 {
		data := make([]byte, 1000+rng.IntN(9000))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		h, err := db.PutBundle(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Activate(h, SlotMeta{ModelID: "vib", Release: uint64(i + 1), RolloutID: "r", Seq: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
		if err := db.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		if err := db.PutJob(Job{RolloutID: fmt.Sprintf("rollout-%03d", i), Seq: uint64(i + 1), State: wire.JobSucceeded, Reason: strings.Repeat("r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		if err := db.Enqueue(OutboxMsg{Topic: "trit/v1/f/devices/gw/telemetry", Payload: []byte(strings.Repeat(fmt.Sprint(i), 40)), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := db.NextSession(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		doc := map[string]any{"id": fmt.Sprintf("gw-%04d", i), "labels": map[string]string{"site": strings.Repeat("n", i%50)}, "seq": i}
		if err := db.Put(FleetDevices, fmt.Sprintf("gw-%04d", i), doc); err != nil {
			t.Fatal(err)
		}
	}
	// Free some pages, so the file has a freelist with entries.
	if err := db.Ack(func() []uint64 {
		var s []uint64
		for i := uint64(1); i <= 120; i++ {
			s = append(s, i)
		}
		return s
	}()...); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path, snap
}

// snapshot renders every bucket's keys and values.
func snapshot(t *testing.T, db *DB) string {
	t.Helper()
	var b strings.Builder
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "[%s]\n", name)
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%x=%x\n", k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// copyWith writes data to a new file in dir and returns its path.
func copyWith(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// openDamaged opens a damaged copy: Open must never panic or crash, and a
// file it refuses must be left as it was.
func openDamaged(t *testing.T, path string) error {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var db *DB
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("Open panicked: %v", p)
			}
		}()
		db, err = Open(path, &Options{Timeout: time.Second})
	}()
	if db != nil {
		db.Close()
	}
	if err != nil {
		if after, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(before, after) {
			t.Errorf("%s: Open refused the file but changed it (%v)", filepath.Base(path), rerr)
		}
	}
	return err
}

// A truncated file is refused with ErrCorrupt and an error that names the
// file and says what to do; it never panics and is left untouched. Only the
// slack bbolt allocates past its data may be cut without loss: then the
// file opens with every value intact.
func TestOpenTruncated(t *testing.T) {
	path, want := realDB(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	kinds := pageKinds(t, path, len(data)/page)
	dataEnd := len(data)
	for dataEnd > 0 && kinds[dataEnd/page-1] == "beyond" {
		dataEnd -= page
	}
	dir := t.TempDir()
	for _, size := range []int{dataEnd + page/2, dataEnd, dataEnd - 1, dataEnd / 2, 5 * page, 2*page + 100, page + 10, 100} {
		if size >= len(data) || size <= 0 {
			continue
		}
		p := copyWith(t, dir, fmt.Sprintf("truncated-%d.db", size), data[:size])
		err := openDamaged(t, p)
		if size >= dataEnd {
			if err != nil {
				t.Errorf("truncated to %d bytes, past the data (%d): %v", size, dataEnd, err)
				continue
			}
			db, err := Open(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := guardedSnapshot(db); err != nil || got != want {
				t.Errorf("truncated to %d bytes, past the data: values changed (%v)", size, err)
			}
			db.Close()
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d of %d bytes: Open = %v, want ErrCorrupt", size, len(data), err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, p) || !strings.Contains(msg, "backup") {
			t.Errorf("truncated to %d bytes: error does not name the file and the way out: %v", size, err)
		}
	}
}

// pageKinds classifies the pages of a database file as bbolt sees them:
// "header" (a branch, leaf or freelist page, or the first page of a
// multi-page one: it starts with a page header), "continuation" (the rest
// of a multi-page value: raw bytes), "free", or "beyond" (past the high
// water mark).
func pageKinds(t *testing.T, path string, pages int) []string {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kinds := make([]string, pages)
	err = b.View(func(tx *bolt.Tx) error {
		for id := 2; id < pages; id++ {
			if kinds[id] != "" {
				continue
			}
			info, err := tx.Page(id)
			switch {
			case err != nil:
				return err
			case info == nil:
				kinds[id] = "beyond"
			case info.Type == "free":
				kinds[id] = "free"
			case info.Type == "branch" || info.Type == "leaf" || info.Type == "freelist":
				kinds[id] = "header"
				for i := 1; i <= info.OverflowCount && id+i < pages; i++ {
					kinds[id+i] = "continuation"
				}
			default:
				return fmt.Errorf("page %d: type %s", id, info.Type)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// Every page of a real database overwritten with garbage or zeros, or with
// its first element headers damaged: Open never panics or crashes. A
// damaged page header (a branch, leaf or freelist page) is always refused
// with ErrCorrupt naming the file, and the file is left as it was; a free
// page or one past the end of the data is accepted with every value intact.
// Damage inside a value's bytes (a page continuing a large value) is
// invisible to bbolt, which keeps no checksums: it is the semantic checks'
// (Check, bundle hashes, strict decoders) to find.
func TestOpenCorruptPage(t *testing.T) {
	path, want := realDB(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	kinds := pageKinds(t, path, len(data)/page)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	count := map[string]int{}
	for id := 2; id < len(kinds); id++ {
		count[kinds[id]]++
		for _, fill := range []string{"random", "zero", "elements"} {
			bad := bytes.Clone(data)
			pg := bad[id*page : (id+1)*page]
			switch fill {
			case "random":
				for i := range pg {
					pg[i] = byte(rng.Uint32())
				}
			case "zero":
				clear(pg)
			case "elements": // keep the page header, damage the first element headers
				for i := 16; i < 64; i++ {
					pg[i] ^= 0x5a
				}
			}
			if bytes.Equal(bad, data) {
				continue // zeros over zeros
			}
			p := copyWith(t, dir, fmt.Sprintf("page-%d-%s.db", id, fill), bad)
			err := openDamaged(t, p)
			what := fmt.Sprintf("%s page %d, %s", kinds[id], id, fill)
			switch {
			case err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p)):
				t.Errorf("%s: Open = %v, want ErrCorrupt naming the file", what, err)
			case err != nil && (kinds[id] == "free" || kinds[id] == "beyond"):
				t.Errorf("%s: a sound file was refused: %v", what, err)
			case err == nil && kinds[id] == "header" && fill != "elements":
				t.Errorf("%s: Open accepted a damaged page", what)
			case err == nil:
				db, err := Open(p, nil)
				if err != nil {
					t.Fatalf("%s: second Open: %v", what, err)
				}
				got, err := guardedSnapshot(db)
				if kinds[id] != "continuation" && kinds[id] != "header" && (err != nil || got != want) {
					t.Errorf("%s: Open accepted the file but its data changed (%v)", what, err)
				}
				db.Close()
			}
		}
	}
	t.Logf("pages: %v", count)
	if count["header"] == 0 || count["free"] == 0 {
		t.Fatalf("the test database has no page of some kind: %v", count)
	}
}

// guardedSnapshot is snapshot through the store's guard: a damaged page
// the walk did not reach is an error, never a panic.
func guardedSnapshot(db *DB) (string, error) {
	var b strings.Builder
	err := db.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "[%s]\n", name)
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "%x=%x\n", k, v)
				return nil
			})
		})
	})
	return b.String(), err
}

// A file that exists but is empty (0 bytes) is refused: starting a fresh
// database over it would silently lose the device's or fleet's state.
// Options.StartFresh moves it aside and starts anew.
func TestOpenEmptyFile(t *testing.T) {
	dir := t.TempDir()
	path := copyWith(t, dir, "empty.db", nil)
	_, err := Open(path, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("Open(0-byte file) = %v, want ErrCorrupt naming the file", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty file was changed: %v %v", fi, err)
	}
	db, err := Open(path, &Options{StartFresh: true})
	if err != nil {
		t.Fatalf("StartFresh: %v", err)
	}
	if v, err := db.Schema(); err != nil || v != uint64(len(migrations)) {
		t.Fatalf("fresh database schema %d, %v", v, err)
	}
	db.Close()
	aside, _ := filepath.Glob(path + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("the empty file was not kept aside: %v", aside)
	}
}

// A bbolt file without trit's meta bucket (a crash between bbolt's own
// initialisation and the first migration, or another program's file) is
// not silently initialised.
func TestOpenMissingMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nometa.db")
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := Open(path, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(bbolt file without meta) = %v, want ErrCorrupt naming the file", err)
	}
	db, err := Open(path, &Options{StartFresh: true})
	if err != nil {
		t.Fatalf("StartFresh: %v", err)
	}
	db.Close()
}

// A damaged file with StartFresh is moved aside (kept for analysis, never
// deleted) and a new database takes its place.
func TestOpenStartFreshKeepsDamagedFile(t *testing.T) {
	path, _ := realDB(t)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, &Options{StartFresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Session(); n != 0 {
		t.Errorf("fresh database has session %d", n)
	}
	db.Close()
	aside, _ := filepath.Glob(path + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("damaged file not kept: %v", aside)
	}
	if kept, _ := os.ReadFile(aside[0]); !bytes.Equal(kept, data[:len(data)/2]) {
		t.Fatal("the kept file differs from the damaged one")
	}
	// A sound file is never moved, flag or not.
	db, err = Open(path, &Options{StartFresh: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if again, _ := filepath.Glob(path + ".damaged-*"); len(again) != 1 {
		t.Fatalf("a sound file was moved aside: %v", again)
	}
}
