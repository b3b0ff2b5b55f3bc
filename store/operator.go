package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The fleet's operators: people and machines (scripts, scrapers) that use
// its API and console, each with a role and a credential of its own. The
// store keeps only the SHA-256 of a credential; the fleet makes the
// credential, shows it once and decides what a role may do (fleet/access/roles.go).
//
// The functions take a Tx, so they work on every fleet store (this
// package's bbolt file and store/postgres) through the collections
// FleetOperators and FleetOperatorTokens. Invariants, kept by every write:
//   - FleetOperators maps a name to its record; the record's Name is its
//     key.
//   - FleetOperatorTokens maps each record's TokenHash to its name, and
//     holds nothing else: one credential belongs to one operator.
//   - Records never hold a credential, only its hash.

// Operator limits.
const (
	// MaxOperatorName bounds an operator's name.
	MaxOperatorName = 64
	maxRoleName     = 32
	maxCreatedBy    = 128
	// MaxOperators bounds the operators a fleet keeps.
	MaxOperators = 10000
)

// ErrOperatorExists is returned by AddOperator for a name already in use.
var ErrOperatorExists = errors.New("operator already exists")

// Operator is one operator's stored record.
type Operator struct {
	Name      string    `json:"name"`              // CheckOperatorName
	Role      string    `json:"role"`              // the fleet's role name; lowercase letters and '-'
	Machine   bool      `json:"machine,omitempty"` // a script or scraper, not a person
	TokenHash string    `json:"token_hash"`        // lowercase hex SHA-256 of the credential
	Disabled  bool      `json:"disabled,omitempty"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires,omitzero"` // zero: never
	Rotated   time.Time `json:"rotated,omitzero"` // last new credential; zero: never rotated
	CreatedBy string    `json:"created_by,omitempty"`
}

// CheckOperatorName reports whether name may name an operator: 1 to
// MaxOperatorName bytes of ASCII letters, digits, '.', '_', '@' and '-',
// starting with a letter or digit.
func CheckOperatorName(name string) error {
	if name == "" || len(name) > MaxOperatorName {
		return fmt.Errorf("operator name of %d bytes, want 1..%d", len(name), MaxOperatorName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '@' || c == '-'):
		default:
			return fmt.Errorf("operator name %q: byte %d (%q) is not a letter, a digit or (after the first) one of . _ @ -", name, i, c)
		}
	}
	return nil
}

// check validates a record before it is stored or after it is read.
func (o *Operator) check() error {
	if err := CheckOperatorName(o.Name); err != nil {
		return err
	}
	if o.Role == "" || len(o.Role) > maxRoleName {
		return fmt.Errorf("role of %d bytes, want 1..%d", len(o.Role), maxRoleName)
	}
	for i := 0; i < len(o.Role); i++ {
		if c := o.Role[i]; (c < 'a' || c > 'z') && c != '-' {
			return fmt.Errorf("role %q: want lowercase letters and '-'", o.Role)
		}
	}
	if _, err := o.hash(); err != nil {
		return err
	}
	if o.Created.IsZero() {
		return errors.New("no creation time")
	}
	if len(o.CreatedBy) > maxCreatedBy {
		return fmt.Errorf("created_by of %d bytes, at most %d", len(o.CreatedBy), maxCreatedBy)
	}
	return nil
}

// hash decodes TokenHash.
func (o *Operator) hash() ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	if len(o.TokenHash) != 2*sha256.Size || o.TokenHash != string(bytes.ToLower([]byte(o.TokenHash))) {
		return h, errors.New("token_hash is not 64 lowercase hex digits")
	}
	if _, err := hex.Decode(h[:], []byte(o.TokenHash)); err != nil {
		return h, errors.New("token_hash is not 64 lowercase hex digits")
	}
	return h, nil
}

// DecodeOperator decodes the record stored under key: a *CorruptError if
// it is not a valid record of that name.
func DecodeOperator(key string, raw []byte) (Operator, error) {
	var o Operator
	if err := json.Unmarshal(raw, &o); err != nil {
		return Operator{}, corrupt(bucketFleetOperators, key, err)
	}
	if err := o.check(); err != nil {
		return Operator{}, corrupt(bucketFleetOperators, key, err)
	}
	if o.Name != key {
		return Operator{}, corrupt(bucketFleetOperators, key, fmt.Errorf("record names %q", o.Name))
	}
	return o, nil
}

// GetOperator reads name's record; ErrNotFound if there is none.
func GetOperator(tx Tx, name string) (Operator, error) {
	if err := CheckOperatorName(name); err != nil {
		return Operator{}, fmt.Errorf("store: operator: %v: %w", err, ErrInvalid)
	}
	var raw json.RawMessage
	ok, err := tx.Get(FleetOperators, name, &raw)
	if err != nil {
		return Operator{}, err
	}
	if !ok {
		return Operator{}, fmt.Errorf("store: operator %q: %w", name, ErrNotFound)
	}
	return DecodeOperator(name, raw)
}

// putOperator stores o, replacing the record of the same name and keeping
// the token index in step. A hash already used by another operator is
// ErrInvalid.
func putOperator(tx Tx, o Operator, mustBeNew bool) error {
	if err := o.check(); err != nil {
		return fmt.Errorf("store: operator %q: %v: %w", o.Name, err, ErrInvalid)
	}
	var owner string
	ok, err := tx.Get(FleetOperatorTokens, o.TokenHash, &owner)
	if err != nil {
		return err
	}
	if ok && owner != o.Name {
		return fmt.Errorf("store: operator %q: its credential's hash is another operator's: %w", o.Name, ErrInvalid)
	}
	old, err := GetOperator(tx, o.Name)
	switch {
	case err == nil:
		if mustBeNew {
			return fmt.Errorf("store: operator %q: %w", o.Name, ErrOperatorExists)
		}
		if old.TokenHash != o.TokenHash {
			if err := tx.Delete(FleetOperatorTokens, old.TokenHash); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	case errors.Is(err, ErrNotFound):
		n := 0
		if err := tx.ForEach(FleetOperators, func(string, []byte) error { n++; return nil }); err != nil {
			return err
		}
		if n >= MaxOperators {
			return fmt.Errorf("store: operator %q: already %d operators, at most %d: %w", o.Name, n, MaxOperators, ErrInvalid)
		}
	default:
		return err
	}
	if err := tx.Put(FleetOperators, o.Name, o); err != nil {
		return err
	}
	return tx.Put(FleetOperatorTokens, o.TokenHash, o.Name)
}

// AddOperator stores a new operator; ErrOperatorExists if the name is in
// use.
func AddOperator(tx Tx, o Operator) error { return putOperator(tx, o, true) }

// UpdateOperator reads name's record, lets fn change it (everything but the
// name) and stores it. ErrNotFound if there is none.
func UpdateOperator(tx Tx, name string, fn func(*Operator) error) (Operator, error) {
	o, err := GetOperator(tx, name)
	if err != nil {
		return o, err
	}
	if err := fn(&o); err != nil {
		return o, err
	}
	o.Name = name
	return o, putOperator(tx, o, false)
}

// OperatorByToken returns the operator whose credential has SHA-256 sum,
// or ErrNotFound.
func OperatorByToken(tx Tx, sum [sha256.Size]byte) (Operator, error) {
	h := hex.EncodeToString(sum[:])
	var name string
	ok, err := tx.Get(FleetOperatorTokens, h, &name)
	if err != nil {
		return Operator{}, err
	}
	if !ok {
		return Operator{}, fmt.Errorf("store: operator credential: %w", ErrNotFound)
	}
	o, err := GetOperator(tx, name)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) || (err == nil && o.TokenHash != h) {
		return Operator{}, corrupt(bucketFleetOperatorTokens, h, fmt.Errorf("names operator %q, whose record does not have this credential", name))
	}
	return o, err
}

// Operators returns every operator in name order.
func Operators(tx Tx) ([]Operator, error) {
	var out []Operator
	err := tx.ForEach(FleetOperators, func(k string, raw []byte) error {
		o, err := DecodeOperator(k, raw)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// DeleteOperator removes name's record and its credential, or returns
// ErrNotFound.
func DeleteOperator(tx Tx, name string) error {
	o, err := GetOperator(tx, name)
	if err != nil {
		return err
	}
	if err := tx.Delete(FleetOperatorTokens, o.TokenHash); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return tx.Delete(FleetOperators, name)
}

// checkOperators verifies the operator records and the token index.
func checkOperators(tx *bolt.Tx) error {
	var errs []error
	hashes := map[string]string{}
	tx.Bucket(bucketFleetOperators).ForEach(func(k, v []byte) error {
		o, err := DecodeOperator(string(k), v)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		hashes[o.TokenHash] = o.Name
		return nil
	})
	n := 0
	tx.Bucket(bucketFleetOperatorTokens).ForEach(func(k, v []byte) error {
		n++
		var name string
		if json.Unmarshal(v, &name) != nil || hashes[string(k)] != name {
			errs = append(errs, corrupt(bucketFleetOperatorTokens, string(k), fmt.Errorf("names %s, whose record has another hash or does not exist", v)))
		}
		return nil
	})
	if n != len(hashes) {
		errs = append(errs, corrupt(bucketFleetOperatorTokens, "", fmt.Errorf("%d entries for %d operators", n, len(hashes))))
	}
	return errors.Join(errs...)
}
