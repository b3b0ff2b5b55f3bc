package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// The web console's sessions, kept in the FleetConsoleSessions collection
// (schema 4) so that every replica of trit-fleet on one database knows
// every session and a restart ends none. Package fleet/console owns what a
// session means; this file keeps the records. Invariants, kept by every
// write:
//   - The key is the lowercase hex SHA-256 of the session ID (the cookie's
//     value); the ID itself is never stored, so the database cannot sign
//     anyone in. The functions take the ID and hash it themselves.
//   - A record is ConsoleSession.check-valid: an operator name, a CSRF
//     token, creation and last-seen times, a bounded flash message.
//   - AddConsoleSession deletes every expired session and then, while
//     SessionLimits.Max or more remain, the least recently seen: the
//     collection never holds more than Max records after a sign-in.

// Console session limits.
const (
	// MaxSessionFlash bounds a session's one-time message.
	MaxSessionFlash = 2048
	maxSessionCSRF  = 128
	// MaxConsoleSessions bounds SessionLimits.Max.
	MaxConsoleSessions = 100000
)

// ConsoleSession is one console session's stored record.
type ConsoleSession struct {
	Operator   string    `json:"operator"` // CheckOperatorName, or the api.token_file's operator
	Role       string    `json:"role"`     // the operator's role as of the latest check
	CSRF       string    `json:"csrf"`     // the synchronizer token of the session's forms
	Created    time.Time `json:"created"`
	Seen       time.Time `json:"seen"`                  // the latest page view or action
	Flash      string    `json:"flash,omitempty"`       // a message for the next page; "" none
	FlashError bool      `json:"flash_error,omitempty"` // the message reports a failure
	// Gen names the credential the session was signed in with (the
	// fleet's credential generation); a session whose Gen is not the
	// operator's current credential's has ended. "" (a session from
	// before generations) is never current.
	Gen string `json:"gen,omitempty"`
}

// SessionLimits is when sessions end and how many are kept.
type SessionLimits struct {
	Idle   time.Duration // without a page view or an action
	MaxAge time.Duration // after sign-in, whatever happens
	Max    int           // sessions kept, 1..MaxConsoleSessions
}

// Expired reports whether s has ended at now.
func (l SessionLimits) Expired(s *ConsoleSession, now time.Time) bool {
	return now.Sub(s.Seen) > l.Idle || now.Sub(s.Created) > l.MaxAge
}

// ConsoleSessionKey is the key of session ID id: its SHA-256, lowercase hex.
func ConsoleSessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func (s *ConsoleSession) check() error {
	if s.Operator == "" || len(s.Operator) > MaxOperatorName {
		return fmt.Errorf("operator name of %d bytes, want 1..%d", len(s.Operator), MaxOperatorName)
	}
	if s.Role == "" || len(s.Role) > maxRoleName {
		return fmt.Errorf("role of %d bytes, want 1..%d", len(s.Role), maxRoleName)
	}
	if s.CSRF == "" || len(s.CSRF) > maxSessionCSRF {
		return fmt.Errorf("csrf token of %d bytes, want 1..%d", len(s.CSRF), maxSessionCSRF)
	}
	if s.Created.IsZero() || s.Seen.IsZero() {
		return errors.New("no creation or last-seen time")
	}
	if len(s.Gen) > maxSessionCSRF {
		return fmt.Errorf("credential generation of %d bytes, at most %d", len(s.Gen), maxSessionCSRF)
	}
	if len(s.Flash) > MaxSessionFlash || !utf8.ValidString(s.Flash) {
		return fmt.Errorf("flash of %d bytes, want at most %d of UTF-8", len(s.Flash), MaxSessionFlash)
	}
	return nil
}

// decodeConsoleSession decodes the record under key: a *CorruptError if it
// is not a valid one.
func decodeConsoleSession(key string, raw []byte) (ConsoleSession, error) {
	var s ConsoleSession
	if err := json.Unmarshal(raw, &s); err != nil {
		return ConsoleSession{}, corrupt(bucketFleetConsoleSessions, key, err)
	}
	if err := s.check(); err != nil {
		return ConsoleSession{}, corrupt(bucketFleetConsoleSessions, key, err)
	}
	return s, nil
}

// AddConsoleSession stores s as session id after deleting the expired
// sessions and, while lim.Max or more remain, the least recently seen
// session of the operator holding the most: one operator signing in again
// and again ends only their own sessions, never everyone's. Bad records
// and limits are ErrInvalid.
func AddConsoleSession(tx Tx, id string, s ConsoleSession, lim SessionLimits, now time.Time) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("store: console session: %v: %w", err, ErrInvalid)
	}
	if lim.Max < 1 || lim.Max > MaxConsoleSessions || lim.Idle <= 0 || lim.MaxAge <= 0 {
		return fmt.Errorf("store: console session limits %+v: want positive times and 1..%d sessions: %w", lim, MaxConsoleSessions, ErrInvalid)
	}
	type kept struct {
		key, operator string
		seen          time.Time
	}
	var live []kept
	var gone []string
	held := map[string]int{} // live sessions per operator
	err := tx.ForEach(FleetConsoleSessions, func(key string, raw []byte) error {
		x, err := decodeConsoleSession(key, raw)
		if err != nil || lim.Expired(&x, now) { // a damaged record is dropped, not kept forever
			gone = append(gone, key)
		} else {
			live = append(live, kept{key, x.Operator, x.Seen})
			held[x.Operator]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	held[s.Operator]++ // the new session counts for its operator
	for len(live) >= lim.Max {
		most := 0
		for _, n := range held {
			most = max(most, n)
		}
		victim := -1 // the least recently seen of an operator holding the most
		for i := range live {
			if held[live[i].operator] == most && (victim < 0 || live[i].seen.Before(live[victim].seen)) {
				victim = i
			}
		}
		if victim < 0 { // only the new session's operator holds the most, with none stored
			break
		}
		held[live[victim].operator]--
		gone = append(gone, live[victim].key)
		live = append(live[:victim], live[victim+1:]...)
	}
	for _, key := range gone {
		if err := tx.Delete(FleetConsoleSessions, key); err != nil {
			return err
		}
	}
	return tx.Put(FleetConsoleSessions, ConsoleSessionKey(id), &s)
}

// GetConsoleSession returns session id, or ErrNotFound.
func GetConsoleSession(tx Tx, id string) (ConsoleSession, error) {
	key := ConsoleSessionKey(id)
	var raw json.RawMessage
	ok, err := tx.Get(FleetConsoleSessions, key, &raw)
	if err != nil {
		return ConsoleSession{}, err
	}
	if !ok {
		return ConsoleSession{}, fmt.Errorf("store: console session: %w", ErrNotFound)
	}
	return decodeConsoleSession(key, raw)
}

// PutConsoleSession replaces session id's record (last seen, flash); an
// ended session is ErrNotFound, not revived.
func PutConsoleSession(tx Tx, id string, s ConsoleSession) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("store: console session: %v: %w", err, ErrInvalid)
	}
	if _, err := GetConsoleSession(tx, id); err != nil {
		return err
	}
	return tx.Put(FleetConsoleSessions, ConsoleSessionKey(id), &s)
}

// DeleteConsoleSession ends session id; one already gone is not an error.
func DeleteConsoleSession(tx Tx, id string) error {
	err := tx.Delete(FleetConsoleSessions, ConsoleSessionKey(id))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// DeleteConsoleSessionsOf ends every session of operator name and returns
// how many there were.
func DeleteConsoleSessionsOf(tx Tx, name string) (int, error) {
	var gone []string
	err := tx.ForEach(FleetConsoleSessions, func(key string, raw []byte) error {
		if x, err := decodeConsoleSession(key, raw); err == nil && x.Operator == name {
			gone = append(gone, key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, key := range gone {
		if err := tx.Delete(FleetConsoleSessions, key); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}
