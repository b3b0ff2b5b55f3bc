package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

func testOperator(name, role, secret string) Operator {
	h := sha256.Sum256([]byte(secret))
	return Operator{Name: name, Role: role, TokenHash: hex.EncodeToString(h[:]), Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func addOp(t *testing.T, db *DB, o Operator) error {
	return db.Update(func(tx Tx) error { return AddOperator(tx, o) })
}

func byToken(db *DB, sum [32]byte) (o Operator, err error) {
	err = db.View(func(tx Tx) error { o, err = OperatorByToken(tx, sum); return err })
	return o, err
}

func updateOp(db *DB, name string, fn func(*Operator) error) (o Operator, err error) {
	err = db.Update(func(tx Tx) error { o, err = UpdateOperator(tx, name, fn); return err })
	return o, err
}

func getOp(db *DB, name string) (o Operator, err error) {
	err = db.View(func(tx Tx) error { o, err = GetOperator(tx, name); return err })
	return o, err
}

func deleteOp(db *DB, name string) error {
	return db.Update(func(tx Tx) error { return DeleteOperator(tx, name) })
}

func TestOperatorsAddFindUpdateDelete(t *testing.T) {
	db := openTest(t, nil)
	alice := testOperator("alice", "operator", "s1")
	if err := addOp(t, db, alice); err != nil {
		t.Fatal(err)
	}
	if err := addOp(t, db, testOperator("alice", "viewer", "s2")); !errors.Is(err, ErrOperatorExists) {
		t.Fatalf("second alice: %v, want ErrOperatorExists", err)
	}
	if err := addOp(t, db, testOperator("bob", "viewer", "s1")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bob with alice's credential: %v, want ErrInvalid", err)
	}
	got, err := byToken(db, sha256.Sum256([]byte("s1")))
	if err != nil || got.Name != "alice" || got.Role != "operator" {
		t.Fatalf("by token: %+v, %v", got, err)
	}
	// Rotation: the old credential finds nobody, the new one finds alice.
	h2 := sha256.Sum256([]byte("s2"))
	if _, err := updateOp(db, "alice", func(o *Operator) error { o.TokenHash = hex.EncodeToString(h2[:]); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := byToken(db, sha256.Sum256([]byte("s1"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old credential after rotation: %v, want ErrNotFound", err)
	}
	if got, err := byToken(db, h2); err != nil || got.Name != "alice" {
		t.Fatalf("new credential: %+v, %v", got, err)
	}
	// An update fn's error changes nothing.
	stop := errors.New("stop")
	if _, err := updateOp(db, "alice", func(o *Operator) error { o.Disabled = true; return stop }); err != stop {
		t.Fatalf("update error: %v", err)
	}
	if o, _ := getOp(db, "alice"); o.Disabled {
		t.Fatal("a failed update was stored")
	}
	if _, err := updateOp(db, "nobody", func(*Operator) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of nobody: %v", err)
	}
	if err := addOp(t, db, testOperator("bob", "viewer", "s3")); err != nil {
		t.Fatal(err)
	}
	var ops []Operator
	err = db.View(func(tx Tx) error {
		var err error
		ops, err = Operators(tx)
		return err
	})
	if err != nil || len(ops) != 2 || ops[0].Name != "alice" || ops[1].Name != "bob" {
		t.Fatalf("Operators: %+v, %v", ops, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := deleteOp(db, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := byToken(db, h2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted operator's credential: %v", err)
	}
	if err := deleteOp(db, "alice"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestOperatorRecordChecks(t *testing.T) {
	db := openTest(t, nil)
	for _, o := range []Operator{
		testOperator("", "viewer", "x"),
		testOperator("-lead", "viewer", "x"),
		testOperator("a b", "viewer", "x"),
		testOperator("ok", "", "x"),
		testOperator("ok", "Admin", "x"),
		{Name: "ok", Role: "viewer", TokenHash: "abc", Created: time.Now()},
		{Name: "ok", Role: "viewer", TokenHash: hex.EncodeToString(make([]byte, 32))},
	} {
		if err := addOp(t, db, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("AddOperator(%+v) = %v, want ErrInvalid", o, err)
		}
	}
	if err := CheckOperatorName("ops.bot_1@site-a"); err != nil {
		t.Error(err)
	}
}
