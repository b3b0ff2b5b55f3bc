// Package storetest is the one test suite every fleet store passes: the
// bbolt file (package store) and PostgreSQL (store/postgres). It checks the
// contract the fleet relies on, store.Database — documents in collections,
// their key order, transactions that commit whole or not at all, writers
// serialised, read snapshots, bundles by hash, and what survives a
// reopen — through the methods only, so a backend passes it or fails it
// on behaviour alone.
//
// A backend's test calls Run with a way to open an empty store and to
// reopen one:
//
//	func TestStoreSuite(t *testing.T) {
//		storetest.Run(t, storetest.Backend{Open: ..., Reopen: ...})
//	}
package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
)

// Backend opens the stores the suite tests.
type Backend struct {
	// Open returns a new, empty store of its own; the suite closes it.
	Open func(t *testing.T) store.Database
	// Reopen closes db and opens the same database again.
	Reopen func(t *testing.T, db store.Database) store.Database
}

// doc is the suite's document type.
type doc struct {
	Name  string            `json:"name"`
	N     int64             `json:"n"` // int64: the awkward value −2^53 is past a 32-bit int
	Tags  map[string]string `json:"tags,omitempty"`
	Bytes []byte            `json:"bytes,omitempty"`
}

// Run runs the whole suite against b, one subtest per property.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, db store.Database)
	}{
		{"PutGetReplace", testPutGetReplace},
		{"GetMissing", testGetMissing},
		{"Delete", testDelete},
		{"CollectionsApart", testCollectionsApart},
		{"KeyOrder", testKeyOrder},
		{"InvalidArguments", testInvalidArguments},
		{"DecodeMismatch", testDecodeMismatch},
		{"AwkwardValues", testAwkwardValues},
		{"UpdateAtomic", testUpdateAtomic},
		{"UpdateReadsOwnWrites", testUpdateReadsOwnWrites},
		{"ViewRefusesWrites", testViewRefusesWrites},
		{"TxAfterReturn", testTxAfterReturn},
		{"ForEachSnapshotWritable", testForEachSnapshotWritable},
		{"ForEachStops", testForEachStops},
		{"WritersSerialised", testWritersSerialised},
		{"ViewSnapshot", testViewSnapshot},
		{"Bundles", testBundles},
		{"OperatorsAndAudit", testOperatorsAndAudit},
		{"ConsoleSessions", testConsoleSessions},
		{"AuditChain", testAuditChain},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := b.Open(t)
			t.Cleanup(func() { db.Close() })
			tc.fn(t, db)
		})
	}
	t.Run("Reopen", func(t *testing.T) {
		db := b.Open(t)
		testReopen(t, db, b.Reopen)
	})
}

func mustPut(t *testing.T, db store.Database, coll store.Collection, key string, v any) {
	t.Helper()
	if err := db.Put(coll, key, v); err != nil {
		t.Fatalf("Put %s %q: %v", coll, key, err)
	}
}

func mustGet(t *testing.T, db store.Database, coll store.Collection, key string) (doc, bool) {
	t.Helper()
	var d doc
	ok, err := db.Get(coll, key, &d)
	if err != nil {
		t.Fatalf("Get %s %q: %v", coll, key, err)
	}
	return d, ok
}

func keys(t *testing.T, db store.Database, coll store.Collection) []string {
	t.Helper()
	var out []string
	if err := db.ForEach(coll, func(key string, _ []byte) error {
		out = append(out, key)
		return nil
	}); err != nil {
		t.Fatalf("ForEach %s: %v", coll, err)
	}
	return out
}

func testPutGetReplace(t *testing.T, db store.Database) {
	want := doc{Name: "gw-1", N: 7, Tags: map[string]string{"site": "north"}}
	mustPut(t, db, store.FleetDevices, "gw-1", want)
	got, ok := mustGet(t, db, store.FleetDevices, "gw-1")
	if !ok || got.Name != want.Name || got.N != want.N || got.Tags["site"] != "north" {
		t.Fatalf("Get = %+v, %v; want %+v, true", got, ok, want)
	}
	mustPut(t, db, store.FleetDevices, "gw-1", doc{Name: "gw-1", N: 8})
	got, _ = mustGet(t, db, store.FleetDevices, "gw-1")
	if got.N != 8 || got.Tags != nil {
		t.Fatalf("after a replace Get = %+v; want n 8 and no tags (the whole document is replaced)", got)
	}
	if n := len(keys(t, db, store.FleetDevices)); n != 1 {
		t.Fatalf("%d documents after replacing one, want 1", n)
	}
}

func testGetMissing(t *testing.T, db store.Database) {
	d := doc{Name: "untouched"}
	ok, err := db.Get(store.FleetRollouts, "nope", &d)
	if ok || err != nil || d.Name != "untouched" {
		t.Fatalf("Get of a missing key = %v, %v (value %+v); want false, nil, value untouched", ok, err, d)
	}
	if err := db.View(func(tx store.Tx) error {
		ok, err := tx.Get(store.FleetRollouts, "nope", &d)
		if ok || err != nil {
			return fmt.Errorf("tx.Get of a missing key = %v, %v; want false, nil", ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func testDelete(t *testing.T, db store.Database) {
	mustPut(t, db, store.FleetModels, "m", doc{N: 1})
	if err := db.Delete(store.FleetModels, "m"); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustGet(t, db, store.FleetModels, "m"); ok {
		t.Fatal("document still there after Delete")
	}
	if err := db.Delete(store.FleetModels, "m"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Delete of a missing key = %v, want ErrNotFound", err)
	}
}

func testCollectionsApart(t *testing.T, db store.Database) {
	for i, c := range store.Collections() {
		mustPut(t, db, c, "same", doc{N: int64(i)})
	}
	for i, c := range store.Collections() {
		got, ok := mustGet(t, db, c, "same")
		if !ok || got.N != int64(i) {
			t.Errorf("%s: Get = %+v, %v; want n %d (collections share no documents)", c, got, ok, i)
		}
		if ks := keys(t, db, c); len(ks) != 1 {
			t.Errorf("%s: keys %q, want one", c, ks)
		}
	}
}

func testKeyOrder(t *testing.T, db store.Database) {
	// Byte order, not a locale's: upper case before lower, digits as
	// characters, multi-byte UTF-8 last.
	in := []string{"gw-b", "Gw-a", "gw-10", "gw-9", "gw-a", "ä", "gw-a.1", "gw_", "0", "zz", "€"}
	for i, k := range in {
		mustPut(t, db, store.FleetDevices, k, doc{N: int64(i)})
	}
	got := keys(t, db, store.FleetDevices)
	want := []string{"0", "Gw-a", "gw-10", "gw-9", "gw-a", "gw-a.1", "gw-b", "gw_", "zz", "ä", "€"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ForEach order %q, want byte order %q", got, want)
	}
	var inTx []string
	if err := db.View(func(tx store.Tx) error {
		return tx.ForEach(store.FleetDevices, func(key string, raw []byte) error {
			inTx = append(inTx, key)
			var d doc
			return json.Unmarshal(raw, &d)
		})
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(inTx, " ") != strings.Join(want, " ") {
		t.Fatalf("tx.ForEach order %q, want %q", inTx, want)
	}
}

func testInvalidArguments(t *testing.T, db store.Database) {
	long := strings.Repeat("k", store.MaxKey)
	mustPut(t, db, store.FleetDevices, long, doc{N: 1})
	if got, ok := mustGet(t, db, store.FleetDevices, long); !ok || got.N != 1 {
		t.Fatalf("a key of MaxKey bytes: Get = %+v, %v", got, ok)
	}
	bad := []struct {
		what string
		coll store.Collection
		key  string
	}{
		{"empty key", store.FleetDevices, ""},
		{"key too long", store.FleetDevices, long + "k"},
		{"key not UTF-8", store.FleetDevices, "gw-\xff"},
		{"key with NUL", store.FleetDevices, "gw\x00-1"},
		{"unknown collection", store.Collection(999), "k"},
		{"negative collection", store.Collection(-1), "k"},
	}
	for _, b := range bad {
		if err := db.Put(b.coll, b.key, doc{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Put with %s = %v, want ErrInvalid", b.what, err)
		}
		if _, err := db.Get(b.coll, b.key, &doc{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Get with %s = %v, want ErrInvalid", b.what, err)
		}
		if err := db.Delete(b.coll, b.key); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Delete with %s = %v, want ErrInvalid", b.what, err)
		}
	}
	if err := db.ForEach(store.Collection(999), func(string, []byte) error { return nil }); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ForEach of an unknown collection = %v, want ErrInvalid", err)
	}
	if err := db.Put(store.FleetDevices, "f", func() {}); err == nil {
		t.Error("Put of a value JSON cannot encode succeeded")
	}
	if ks := keys(t, db, store.FleetDevices); len(ks) != 1 {
		t.Errorf("keys after refused writes: %d, want 1", len(ks))
	}
}

func testDecodeMismatch(t *testing.T, db store.Database) {
	mustPut(t, db, store.FleetModels, "m", "a string, not an object")
	var d doc
	_, err := db.Get(store.FleetModels, "m", &d)
	if err == nil {
		t.Fatal("Get of a string into a struct succeeded")
	}
	if errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a type mismatch is the caller's error, not a damaged store: %v", err)
	}
}

func testAwkwardValues(t *testing.T, db store.Database) {
	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 256<<10) // 1 MiB, base64 in the JSON
	want := doc{Name: "nul \x00, quote \", backslash \\, emoji 🛰, <html> &amp;", N: -1 << 53, Bytes: big}
	mustPut(t, db, store.FleetRollouts, "r", want)
	got, ok := mustGet(t, db, store.FleetRollouts, "r")
	if !ok || got.Name != want.Name || got.N != want.N || !bytes.Equal(got.Bytes, big) {
		t.Fatalf("awkward document changed on the way: name %q n %d, %d bytes", got.Name, got.N, len(got.Bytes))
	}
	for _, v := range []any{nil, 0, "", []int{}, map[string]any{}} {
		mustPut(t, db, store.FleetModels, "v", v)
		var raw json.RawMessage
		if ok, err := db.Get(store.FleetModels, "v", &raw); !ok || err != nil {
			t.Fatalf("Get of %#v = %v, %v", v, ok, err)
		}
		want, _ := json.Marshal(v)
		if !bytes.Equal(compact(raw), want) {
			t.Errorf("stored %#v came back as %s, want %s", v, raw, want)
		}
	}
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

var errAbandon = errors.New("storetest: abandon the transaction")

func testUpdateAtomic(t *testing.T, db store.Database) {
	mustPut(t, db, store.FleetDevices, "a", doc{N: 1})
	err := db.Update(func(tx store.Tx) error {
		if err := tx.Put(store.FleetDevices, "a", doc{N: 2}); err != nil {
			return err
		}
		if err := tx.Put(store.FleetRollouts, "b", doc{N: 2}); err != nil {
			return err
		}
		if err := tx.Delete(store.FleetDevices, "a"); err != nil {
			return err
		}
		return errAbandon
	})
	if !errors.Is(err, errAbandon) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	if got, ok := mustGet(t, db, store.FleetDevices, "a"); !ok || got.N != 1 {
		t.Errorf("after a failed Update a = %+v, %v; want n 1 (nothing of it kept)", got, ok)
	}
	if _, ok := mustGet(t, db, store.FleetRollouts, "b"); ok {
		t.Error("a document put in a failed Update was kept")
	}
	// A failed operation inside a transaction that the function then
	// ignores does not spoil the rest of it.
	err = db.Update(func(tx store.Tx) error {
		if err := tx.Delete(store.FleetDevices, "missing"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("tx.Delete of a missing key = %v, want ErrNotFound", err)
		}
		return tx.Put(store.FleetDevices, "c", doc{N: 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := mustGet(t, db, store.FleetDevices, "c"); !ok || got.N != 3 {
		t.Errorf("c = %+v, %v after an Update that went on past an ErrNotFound", got, ok)
	}
}

func testUpdateReadsOwnWrites(t *testing.T, db store.Database) {
	err := db.Update(func(tx store.Tx) error {
		if err := tx.Put(store.FleetDevices, "x", doc{N: 5}); err != nil {
			return err
		}
		var d doc
		if ok, err := tx.Get(store.FleetDevices, "x", &d); err != nil || !ok || d.N != 5 {
			return fmt.Errorf("tx.Get inside the writing tx = %+v, %v, %v", d, ok, err)
		}
		var seen []string
		if err := tx.ForEach(store.FleetDevices, func(k string, _ []byte) error { seen = append(seen, k); return nil }); err != nil {
			return err
		}
		if len(seen) != 1 || seen[0] != "x" {
			return fmt.Errorf("ForEach inside the writing tx saw %q", seen)
		}
		if err := tx.Delete(store.FleetDevices, "x"); err != nil {
			return err
		}
		if ok, err := tx.Get(store.FleetDevices, "x", &d); ok || err != nil {
			return fmt.Errorf("tx.Get after tx.Delete = %v, %v", ok, err)
		}
		return tx.Put(store.FleetDevices, "y", doc{N: 6})
	})
	if err != nil {
		t.Fatal(err)
	}
	if ks := keys(t, db, store.FleetDevices); strings.Join(ks, ",") != "y" {
		t.Fatalf("keys after the Update %q, want [y]", ks)
	}
}

func testViewRefusesWrites(t *testing.T, db store.Database) {
	mustPut(t, db, store.FleetDevices, "a", doc{N: 1})
	if err := db.View(func(tx store.Tx) error { return tx.Put(store.FleetDevices, "b", doc{}) }); err == nil {
		t.Error("Put inside View succeeded")
	}
	if err := db.View(func(tx store.Tx) error { return tx.Delete(store.FleetDevices, "a") }); err == nil {
		t.Error("Delete inside View succeeded")
	}
	if ks := keys(t, db, store.FleetDevices); strings.Join(ks, ",") != "a" {
		t.Fatalf("keys after writes in View %q, want [a]", ks)
	}
}

func testTxAfterReturn(t *testing.T, db store.Database) {
	var saved store.Tx
	if err := db.Update(func(tx store.Tx) error { saved = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := saved.Put(store.FleetDevices, "late", doc{}); !errors.Is(err, store.ErrTxDone) {
		t.Errorf("Put on a finished Update tx = %v, want ErrTxDone", err)
	}
	if _, err := saved.Get(store.FleetDevices, "late", &doc{}); !errors.Is(err, store.ErrTxDone) {
		t.Errorf("Get on a finished tx = %v, want ErrTxDone", err)
	}
	db.View(func(tx store.Tx) error { saved = tx; return nil })
	if err := saved.ForEach(store.FleetDevices, func(string, []byte) error { return nil }); !errors.Is(err, store.ErrTxDone) {
		t.Errorf("ForEach on a finished View tx = %v, want ErrTxDone", err)
	}
	if _, ok := mustGet(t, db, store.FleetDevices, "late"); ok {
		t.Error("a write through a finished tx was stored")
	}
}

func testForEachSnapshotWritable(t *testing.T, db store.Database) {
	for _, k := range []string{"a", "b", "c"} {
		mustPut(t, db, store.FleetDevices, k, doc{N: 1})
	}
	var seen []string
	err := db.ForEach(store.FleetDevices, func(key string, raw []byte) error {
		seen = append(seen, key)
		var d doc
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		d.N++
		if err := db.Put(store.FleetDevices, key, d); err != nil {
			return err
		}
		return db.Put(store.FleetDevices, key+"-new", d)
	})
	if err != nil {
		t.Fatalf("ForEach whose function writes: %v", err)
	}
	if strings.Join(seen, ",") != "a,b,c" {
		t.Fatalf("ForEach saw %q, want the snapshot a,b,c", seen)
	}
	if got, _ := mustGet(t, db, store.FleetDevices, "b"); got.N != 2 {
		t.Fatalf("b = %+v after the write in ForEach, want n 2", got)
	}
}

func testForEachStops(t *testing.T, db store.Database) {
	for _, k := range []string{"a", "b", "c"} {
		mustPut(t, db, store.FleetRollouts, k, doc{})
	}
	calls := 0
	err := db.ForEach(store.FleetRollouts, func(string, []byte) error { calls++; return errAbandon })
	if !errors.Is(err, errAbandon) || calls != 1 {
		t.Fatalf("ForEach = %v after %d calls; want the function's error after 1", err, calls)
	}
	calls = 0
	err = db.View(func(tx store.Tx) error {
		return tx.ForEach(store.FleetRollouts, func(string, []byte) error { calls++; return errAbandon })
	})
	if !errors.Is(err, errAbandon) || calls != 1 {
		t.Fatalf("tx.ForEach = %v after %d calls; want the function's error after 1", err, calls)
	}
}

// testWritersSerialised has writers read a counter and write it back plus
// one: with writers serialised no increment is lost.
func testWritersSerialised(t *testing.T, db store.Database) {
	const writers, each = 4, 15
	mustPut(t, db, store.FleetModels, "counter", doc{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := db.Update(func(tx store.Tx) error {
					var d doc
					if _, err := tx.Get(store.FleetModels, "counter", &d); err != nil {
						return err
					}
					d.N++
					return tx.Put(store.FleetModels, "counter", d)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, _ := mustGet(t, db, store.FleetModels, "counter"); got.N != writers*each {
		t.Fatalf("counter %d after %d serialised increments: writers overlapped", got.N, writers*each)
	}
}

// testViewSnapshot changes two documents while a View is between reading
// the first and the second: it sees both as they were.
func testViewSnapshot(t *testing.T, db store.Database) {
	mustPut(t, db, store.FleetDevices, "a", doc{N: 1})
	mustPut(t, db, store.FleetDevices, "b", doc{N: 1})
	written := make(chan error, 1)
	err := db.View(func(tx store.Tx) error {
		var a, b doc
		if _, err := tx.Get(store.FleetDevices, "a", &a); err != nil {
			return err
		}
		go func() {
			written <- db.Update(func(tx store.Tx) error {
				if err := tx.Put(store.FleetDevices, "a", doc{N: 2}); err != nil {
					return err
				}
				return tx.Put(store.FleetDevices, "b", doc{N: 2})
			})
		}()
		if err := <-written; err != nil {
			return fmt.Errorf("a write during a View: %w", err)
		}
		if _, err := tx.Get(store.FleetDevices, "b", &b); err != nil {
			return err
		}
		if a.N != 1 || b.N != 1 {
			return fmt.Errorf("a View saw a %d, b %d; want 1, 1 (a snapshot from before the write)", a.N, b.N)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mustGet(t, db, store.FleetDevices, "b"); got.N != 2 {
		t.Fatalf("b = %d after the View, want 2", got.N)
	}
}

func testBundles(t *testing.T, db store.Database) {
	data := bytes.Repeat([]byte("bundle\x00\xff"), 40000)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	hash, err := db.PutBundle(data)
	if err != nil || hash != want {
		t.Fatalf("PutBundle = %q, %v; want %q", hash, err, want)
	}
	if again, err := db.PutBundle(data); err != nil || again != want {
		t.Fatalf("PutBundle of stored bytes = %q, %v; want the same hash, no error", again, err)
	}
	got, err := db.Bundle(hash)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Bundle = %d bytes, %v; want the %d stored", len(got), err, len(data))
	}
	got[0] ^= 1 // the caller's copy
	if again, err := db.Bundle(hash); err != nil || !bytes.Equal(again, data) {
		t.Fatalf("Bundle after the caller changed its copy: %v", err)
	}
	other := strings.Repeat("ab", 32)
	if _, err := db.Bundle(other); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Bundle of a hash not stored = %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "abc", strings.ToUpper(want), want + "00", strings.Repeat("zz", 32)} {
		if _, err := db.Bundle(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Bundle(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := db.PutBundle(nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("PutBundle of nothing = %v, want ErrInvalid", err)
	}
}

func testReopen(t *testing.T, db store.Database, reopen func(*testing.T, store.Database) store.Database) {
	mustPut(t, db, store.FleetRollouts, "r1", doc{N: 1})
	mustPut(t, db, store.FleetDevices, "gw-1", doc{Name: "gw-1"})
	hash, err := db.PutBundle([]byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	db = reopen(t, db)
	defer db.Close()
	if got, ok := mustGet(t, db, store.FleetRollouts, "r1"); !ok || got.N != 1 {
		t.Errorf("after reopening r1 = %+v, %v", got, ok)
	}
	if got, ok := mustGet(t, db, store.FleetDevices, "gw-1"); !ok || got.Name != "gw-1" {
		t.Errorf("after reopening gw-1 = %+v, %v", got, ok)
	}
	if b, err := db.Bundle(hash); err != nil || string(b) != "kept" {
		t.Errorf("after reopening the bundle = %q, %v", b, err)
	}
}

// testOperatorsAndAudit runs the fleet's operator records and audit trail
// (store/operator.go, store/audit.go: functions over store.Tx) on the
// backend: the token index, name order, a rotation, and the trail's
// sequence, bound and query.
func testOperatorsAndAudit(t *testing.T, db store.Database) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	op := func(name, role, secret string) store.Operator {
		sum := sha256.Sum256([]byte(secret))
		return store.Operator{Name: name, Role: role, TokenHash: hex.EncodeToString(sum[:]), Created: t0}
	}
	for _, o := range []store.Operator{op("bob", "viewer", "s2"), op("alice", "operator", "s1")} {
		if err := db.Update(func(tx store.Tx) error { return store.AddOperator(tx, o) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Update(func(tx store.Tx) error { return store.AddOperator(tx, op("alice", "viewer", "s3")) }); !errors.Is(err, store.ErrOperatorExists) {
		t.Fatalf("a second alice: %v, want ErrOperatorExists", err)
	}
	err := db.Update(func(tx store.Tx) error {
		sum := sha256.Sum256([]byte("s9"))
		_, err := store.UpdateOperator(tx, "alice", func(o *store.Operator) error { o.TokenHash = hex.EncodeToString(sum[:]); return nil })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx store.Tx) error {
		if _, err := store.OperatorByToken(tx, sha256.Sum256([]byte("s1"))); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("the rotated-out credential: %v, want ErrNotFound", err)
		}
		o, err := store.OperatorByToken(tx, sha256.Sum256([]byte("s9")))
		if err != nil || o.Name != "alice" || o.Role != "operator" {
			return fmt.Errorf("by the new credential: %+v, %v", o, err)
		}
		all, err := store.Operators(tx)
		if err != nil || len(all) != 2 || all[0].Name != "alice" || all[1].Name != "bob" {
			return fmt.Errorf("operators %+v, %v; want alice, bob", all, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx store.Tx) error { return store.DeleteOperator(tx, "bob") }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx store.Tx) error {
		_, err := store.OperatorByToken(tx, sha256.Sum256([]byte("s2")))
		return err
	}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted operator's credential: %v, want ErrNotFound", err)
	}

	lim := store.AuditLimits{MaxRecords: 5, MaxAge: 4 * time.Minute}
	for i := range 8 {
		rec := store.AuditRecord{Time: t0.Add(time.Duration(i) * time.Minute), Who: []string{"alice", "bob"}[i%2], Role: "operator",
			Action: "rollout.pause", Object: fmt.Sprintf("rollout/r%d", i), Outcome: store.AuditOK, Status: 200}
		var seq uint64
		if err := db.Update(func(tx store.Tx) (err error) { seq, err = store.AppendAudit(tx, rec, lim); return err }); err != nil || seq != uint64(i+1) {
			t.Fatalf("audit append %d: seq %d, %v", i, seq, err)
		}
	}
	var all, bobs []store.AuditRecord
	err = db.View(func(tx store.Tx) (err error) {
		if all, err = store.Audit(tx, store.AuditQuery{}); err != nil {
			return err
		}
		bobs, err = store.Audit(tx, store.AuditQuery{Who: "bob"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 || all[0].Seq != 4 || all[4].Seq != 8 {
		t.Fatalf("the trail kept %d records, want those within the 4-minute retention of the newest (4..8): %+v", len(all), all)
	}
	if len(bobs) != 3 || bobs[0].Seq != 4 || bobs[2].Seq != 8 {
		t.Fatalf("bob's records %+v, want seq 4, 6 and 8", bobs)
	}
}

// testConsoleSessions: the console's sessions are kept under the hash of
// their ID (never the ID), expire, are bounded by evicting the least
// recently seen, are not revived by a write after they end, and end by ID
// or by operator.
func testConsoleSessions(t *testing.T, db store.Database) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	lim := store.SessionLimits{Idle: 30 * time.Minute, MaxAge: 12 * time.Hour, Max: 3}
	sess := func(op string, at time.Time) store.ConsoleSession {
		return store.ConsoleSession{Operator: op, Role: "viewer", CSRF: "csrf-" + op, Created: at, Seen: at}
	}
	add := func(id string, s store.ConsoleSession, now time.Time) {
		t.Helper()
		if err := db.Update(func(tx store.Tx) error { return store.AddConsoleSession(tx, id, s, lim, now) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) (store.ConsoleSession, error) {
		var s store.ConsoleSession
		err := db.View(func(tx store.Tx) error {
			var err error
			s, err = store.GetConsoleSession(tx, id)
			return err
		})
		return s, err
	}
	add("id-alice", sess("alice", t0), t0)
	add("id-bob", sess("bob", t0.Add(time.Minute)), t0.Add(time.Minute))
	add("id-old", sess("carol", t0.Add(-time.Hour)), t0.Add(-time.Hour)) // idle by t0+2m
	if got := keys(t, db, store.FleetConsoleSessions); len(got) != 3 {
		t.Fatalf("keys %v, want 3", got)
	}
	for _, k := range keys(t, db, store.FleetConsoleSessions) {
		if strings.HasPrefix(k, "id-") || len(k) != 64 {
			t.Fatalf("stored key %q is not a SHA-256 of the ID", k)
		}
	}
	// A fourth sign-in drops the expired one (not the least recently
	// seen live one).
	add("id-dave", sess("dave", t0.Add(2*time.Minute)), t0.Add(2*time.Minute))
	if _, err := get("id-old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired session after a sign-in: %v, want ErrNotFound", err)
	}
	if s, err := get("id-alice"); err != nil || s.Operator != "alice" || s.CSRF != "csrf-alice" || !s.Created.Equal(t0) {
		t.Fatalf("alice's session: %+v, %v", s, err)
	}
	// Touching alice makes bob the least recently seen: a fifth goes past
	// Max and evicts bob.
	a, _ := get("id-alice")
	a.Seen, a.Flash, a.FlashError = t0.Add(3*time.Minute), "Rollout r1 paused.", true
	if err := db.Update(func(tx store.Tx) error { return store.PutConsoleSession(tx, "id-alice", a) }); err != nil {
		t.Fatal(err)
	}
	add("id-erin", sess("erin", t0.Add(4*time.Minute)), t0.Add(4*time.Minute))
	if _, err := get("id-bob"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("least recently seen past Max: %v, want ErrNotFound", err)
	}
	if got := keys(t, db, store.FleetConsoleSessions); len(got) != lim.Max {
		t.Fatalf("%d sessions kept, want %d", len(got), lim.Max)
	}
	if s, err := get("id-alice"); err != nil || s.Flash != "Rollout r1 paused." || !s.FlashError {
		t.Fatalf("alice after the update: %+v, %v", s, err)
	}
	if !lim.Expired(&a, t0.Add(34*time.Minute)) || lim.Expired(&a, t0.Add(32*time.Minute)) {
		t.Fatal("Expired does not follow Idle")
	}
	old := sess("x", t0)
	old.Seen = t0.Add(12*time.Hour + time.Minute)
	if !lim.Expired(&old, old.Seen) {
		t.Fatal("Expired does not follow MaxAge")
	}
	// Ended sessions are not revived; ending twice is fine.
	if err := db.Update(func(tx store.Tx) error { return store.DeleteConsoleSession(tx, "id-erin") }); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx store.Tx) error { return store.PutConsoleSession(tx, "id-erin", sess("erin", t0)) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("writing an ended session: %v, want ErrNotFound", err)
	}
	if err := db.Update(func(tx store.Tx) error { return store.DeleteConsoleSession(tx, "id-erin") }); err != nil {
		t.Fatalf("ending an ended session: %v", err)
	}
	// By operator.
	add("id-alice2", sess("alice", t0.Add(5*time.Minute)), t0.Add(5*time.Minute))
	var n int
	if err := db.Update(func(tx store.Tx) error {
		var err error
		n, err = store.DeleteConsoleSessionsOf(tx, "alice")
		return err
	}); err != nil || n != 2 {
		t.Fatalf("DeleteConsoleSessionsOf alice: %d, %v; want 2", n, err)
	}
	if _, err := get("id-dave"); err != nil {
		t.Fatalf("another operator's session after ending alice's: %v", err)
	}
	// Bad records and limits are refused.
	for _, bad := range []store.ConsoleSession{{Role: "r", CSRF: "c", Created: t0, Seen: t0},
		{Operator: "a", CSRF: "c", Created: t0, Seen: t0}, {Operator: "a", Role: "r", Created: t0, Seen: t0}, {Operator: "a", Role: "r", CSRF: "c"},
		{Operator: "a", Role: "r", CSRF: "c", Created: t0, Seen: t0, Flash: strings.Repeat("x", store.MaxSessionFlash+1)}} {
		if err := db.Update(func(tx store.Tx) error { return store.AddConsoleSession(tx, "id-bad", bad, lim, t0) }); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("AddConsoleSession(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := db.Update(func(tx store.Tx) error {
		return store.AddConsoleSession(tx, "id-bad", sess("a", t0), store.SessionLimits{Idle: time.Minute, MaxAge: time.Hour}, t0)
	}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Max 0: %v, want ErrInvalid", err)
	}
}
