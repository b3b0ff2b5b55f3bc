package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
)

// record is a stored document with a time, as every fleet record has.
type record struct {
	ID   string    `json:"id"`
	Seen time.Time `json:"seen"`
}

// TestIsDamagedTime: a stored record whose time field is corrupted — a
// changed byte inside the time's text (*time.ParseError), a number where
// the time's string belongs (time's plain error) — is damaged, as DecodeAll
// already said in a list; IsDamaged said neither, so reading that one
// record failed as if the store had. What the store itself returns (an
// unknown key's nil, a bad argument, a finished transaction) is not.
func TestIsDamagedTime(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	coll := store.FleetDevices
	docs := map[string]string{
		"good":   `{"id":"good","seen":"2026-11-21T03:04:05Z"}`,
		"byte":   `{"id":"byte","seen":"2026-11-21T03:0$:05Z"}`,
		"month":  `{"id":"month","seen":"2026-13-21T03:04:05Z"}`,
		"number": `{"id":"number","seen":1763694245}`,
		"bool":   `{"id":"bool","seen":true}`,
	}
	for key, doc := range docs {
		if err := db.Put(coll, key, json.RawMessage(doc)); err != nil {
			t.Fatal(err)
		}
	}
	for key, doc := range docs {
		var r record
		_, err := db.Get(coll, key, &r)
		_, direct := decodeAllOne(doc)
		switch {
		case key == "good":
			if err != nil || IsDamaged(err) || r.Seen.IsZero() {
				t.Errorf("good record: %+v, %v (damaged %v)", r, err, IsDamaged(err))
			}
		case err == nil:
			t.Errorf("%s: %s decoded", key, doc)
		case !IsDamaged(err):
			t.Errorf("%s: %s: IsDamaged(%T %v) = false, want true (DecodeAll: %v)", key, doc, errors.Unwrap(err), err, direct)
		case !direct:
			t.Errorf("%s: DecodeAll does not list it as damaged", key)
		default:
			if d := Damaged(coll, key, err); !errors.Is(d, ErrDamaged) || !strings.Contains(d.Error(), "fleet_devices record "+key+" does not decode") {
				t.Errorf("%s: Damaged = %v", key, d)
			}
		}
	}
	var r record
	_, err = db.Get(coll, "", &r)
	if err == nil || IsDamaged(err) {
		t.Errorf("empty key: %v, damaged %v; want a store error, not damage", err, IsDamaged(err))
	}
	var late store.Tx
	db.View(func(tx store.Tx) error { late = tx; return nil })
	if _, err := late.Get(coll, "good", &r); err == nil || IsDamaged(err) {
		t.Errorf("finished transaction: %v, damaged %v; want a store error, not damage", err, IsDamaged(err))
	}
	for _, err := range []error{nil, errors.New("disk on fire"), fmt.Errorf("wrapped: %w", errors.New("input is not a JSON string"))} {
		if IsDamaged(err) {
			t.Errorf("IsDamaged(%v) = true", err)
		}
	}
	// The time's error however wrapped, once or with others.
	_, numErr := db.Get(coll, "number", &r)
	if !IsDamaged(fmt.Errorf("outer: %w", numErr)) || !IsDamaged(errors.Join(errors.New("other"), numErr)) {
		t.Errorf("a wrapped time error is not damage: %v", numErr)
	}
}

// decodeAllOne reports whether DecodeAll lists doc, the only document of
// a collection, as damaged.
func decodeAllOne(doc string) ([]record, bool) {
	var out []record
	bad, _ := DecodeAll(func(_ store.Collection, fn func(string, []byte) error) error {
		return fn("k", []byte(doc))
	}, store.FleetDevices, func(_ string, r *record) { out = append(out, *r) })
	return out, len(bad) == 1
}
