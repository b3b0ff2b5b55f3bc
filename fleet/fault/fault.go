// Package fault holds the errors the fleet's packages return to their
// callers, and which the HTTP API and the console map to statuses: a
// request that is wrong (ErrBadRequest, 400), a record that is not there
// (ErrNotFound, 404), a record that does not decode (ErrDamaged). It sits
// below every fleet package that returns them, so each returns the same
// values and errors.Is holds whichever package returned them; every
// package, the service's callers included, uses them by these names.
package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/store"
)

// MaxLogField bounds a request path or error message in the service log.
const MaxLogField = 256

// Clip shortens s to at most n bytes for a log line or an error message,
// saying how long it was.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}

// ErrBadRequest marks errors in what the client sent (an HTTP 400).
var ErrBadRequest = errors.New("bad request")

// BadRequest is an ErrBadRequest saying what was wrong.
func BadRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// ErrNotFound: no such device, bundle, model, rollout, job or operator.
var ErrNotFound = errors.New("fleet: not found")

// ErrDamaged marks a record that exists but does not decode (package
// fleet's damaged.go says what the fleet does with one).
var ErrDamaged = errors.New("fleet: record damaged")

// IsDamaged reports whether err from decoding a stored document means the
// document is damaged (its bytes are not the JSON of its type), not that
// the store failed: bytes that are not JSON, a value of the wrong JSON
// type for its field, or a time that does not read as one (a changed byte
// in its text, *time.ParseError; a number where its string belongs) —
// what DecodeAll skips as damaged in a list.
func IsDamaged(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tim *time.ParseError
	return errors.Is(err, store.ErrCorrupt) || errors.As(err, &syn) || errors.As(err, &typ) ||
		errors.As(err, &tim) || isTimeNotString(err) || errors.Is(err, ErrDamaged)
}

// timeNotString is the text of the error time.Time's UnmarshalJSON
// returns for a JSON value that is not a string (a number where a time
// belongs). It is a new errors.New each time, with no type or value to
// match, so it is known by its text, taken from package time itself ("" if
// a later time accepts the number).
var timeNotString = func() string {
	if err := new(time.Time).UnmarshalJSON([]byte("0")); err != nil {
		return err.Error()
	}
	return ""
}()

// isTimeNotString reports whether err's tree holds time's timeNotString.
func isTimeNotString(err error) bool {
	if err == nil || timeNotString == "" {
		return false
	}
	if err.Error() == timeNotString {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return isTimeNotString(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if isTimeNotString(e) {
				return true
			}
		}
	}
	return false
}

// Damaged wraps a decode error of coll's document key as ErrDamaged,
// naming the record and what deletes it.
func Damaged(coll store.Collection, key string, err error) error {
	return fmt.Errorf("%w: %s record %s does not decode (%s)%s", ErrDamaged, coll, Clip(key, 128), Clip(err.Error(), MaxLogField), remedy(coll, key))
}

// remedy says how an operator deletes a damaged record of coll.
func remedy(coll store.Collection, key string) string {
	switch coll {
	case store.FleetDevices:
		return "; delete it with tritctl devices forget " + Clip(key, 128)
	}
	return "; restore a backup (docs/FLEET.md \"Backup and restore\")"
}

// DecodeAll decodes every document of coll into a fresh T, calls keep
// with each that decodes, and returns the ones that do not.
func DecodeAll[T any](forEach func(store.Collection, func(string, []byte) error) error, coll store.Collection, keep func(key string, v *T)) ([]api.Damaged, error) {
	var bad []api.Damaged
	err := forEach(coll, func(key string, raw []byte) error {
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			bad = append(bad, api.Damaged{Collection: coll.String(), Key: key, Error: Clip(err.Error(), MaxLogField)})
			return nil
		}
		keep(key, v)
		return nil
	})
	return bad, err
}
