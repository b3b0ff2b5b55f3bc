package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

// TestCopyDatabase: copy-database moves every document of every
// collection and every bundle of a stopped fleet's bbolt file into an
// empty PostgreSQL database, byte for byte; it refuses a destination that
// holds anything, and a file that a running trit-fleet holds.
func TestCopyDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.db")
	src, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[store.Collection]map[string]string{}
	for i, c := range store.Collections() {
		want[c] = map[string]string{}
		for k := range i%3 + 1 {
			key := strings.Repeat("k", k+1) + "/" + c.String()
			doc := map[string]any{"collection": c.String(), "n": k, "text": "é \u2028 <>&"}
			if err := src.Put(c, key, doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := src.ForEach(c, func(key string, raw []byte) error { want[c][key] = string(raw); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var hashes []string
	for _, b := range [][]byte{[]byte("bundle one"), bytes.Repeat([]byte{0, 1, 2}, 20000)} {
		h, err := src.PutBundle(b)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}

	dsn := pgtest.Database(t)
	// While the fleet holds the file, nothing is copied.
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"copy-database", "--from", path, "--to", dsn}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "stop trit-fleet first") {
		t.Fatalf("copy from a held file: exit %d, %s", code, stderr.String())
	}
	src.Close()

	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"copy-database", "--from", path, "--to", dsn}, &stdout, &stderr); code != 0 {
		t.Fatalf("copy-database: exit %d: %s", code, stderr.String())
	}
	docs := 0
	for _, c := range store.Collections() {
		docs += len(want[c])
	}
	if line := stdout.String(); !strings.Contains(line, "2 bundles") || !strings.Contains(line, " "+strconv.Itoa(docs)+" documents") {
		t.Errorf("output %q, want %d documents and 2 bundles", line, docs)
	}
	dst, err := postgres.Open(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for _, c := range store.Collections() {
		got := map[string]string{}
		if err := dst.ForEach(c, func(key string, raw []byte) error { got[key] = string(raw); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want[c]) {
			t.Errorf("%s: %d documents copied, want %d", c, len(got), len(want[c]))
		}
		for k, v := range want[c] {
			if !jsonEqual(got[k], v) {
				t.Errorf("%s/%s: copied %s, want %s", c, k, got[k], v)
			}
		}
	}
	for _, h := range hashes {
		if b, err := dst.Bundle(h); err != nil || len(b) == 0 {
			t.Errorf("bundle %.12s: %v", h, err)
		}
	}

	// A second copy finds the destination full and changes nothing.
	stderr.Reset()
	if code := Main([]string{"copy-database", "--from", path, "--to", dsn}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "not empty") {
		t.Fatalf("copy into a full database: exit %d, %s", code, stderr.String())
	}
	// Arguments are checked before anything is opened.
	stderr.Reset()
	if code := Main([]string{"copy-database", "--from", path, "--to", filepath.Join(t.TempDir(), "x.db")}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "postgres://") {
		t.Fatalf("copy to a file: exit %d, %s", code, stderr.String())
	}
}

// jsonEqual reports whether a and b are the same JSON value (PostgreSQL
// may store a document's keys in another order).
func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// failingBundles is a store whose bundle writes fail while fail is set.
type failingBundles struct {
	store.Database
	fail bool
}

func (f *failingBundles) PutBundle(data []byte) (string, error) {
	if f.fail {
		return "", errors.New("connection lost")
	}
	return f.Database.PutBundle(data)
}

// TestCopyDatabaseAgainAfterAFailure: a copy that fails on a bundle
// leaves no document, so the next one is not refused and completes.
func TestCopyDatabaseAgainAfterAFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.db")
	src, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Put(store.FleetModels, "m", map[string]int{"release": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.PutBundle([]byte("a bundle")); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(pgtest.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dst := &failingBundles{Database: db, fail: true}
	if _, err := copyDatabase(src, dst); err == nil {
		t.Fatal("a copy whose transaction failed reported success")
	}
	dst.fail = false
	n, err := copyDatabase(src, dst)
	if err != nil || n.docs != 1 || n.bundles != 1 {
		t.Fatalf("the copy after a failed one: %+v, %v", n, err)
	}
	var got map[string]int
	if ok, err := db.Get(store.FleetModels, "m", &got); !ok || err != nil || got["release"] != 1 {
		t.Fatalf("copied document: %v %v %v", ok, err, got)
	}
}
