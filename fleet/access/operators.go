package access

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/store"
)

// Operators and their credentials. An operator's token is its name, a dot
// and 64 hex digits (256 random bits): "alice.9f86d0…". The fleet keeps
// only the SHA-256 of the whole token, in its store (store/operator.go),
// compares hashes in constant time and reads the record on every request,
// so disabling, removing or rotating an operator takes effect at once. A
// fast hash is enough: the tokens are random and long, nothing to guess.
// The name in the token lets sign-ins be throttled per operator
// (signin.go) without a store lookup.
//
// The single api.token_file of older releases stays valid as one admin
// credential named TokenFileOperator, so an upgrade changes nothing.

// TokenFileOperator is the name under which the api.token_file's token
// acts; no operator may take it.
const TokenFileOperator = "token-file"

// tokenSecretBytes is the random part of an operator's token, 256 bits;
// tokenSecretHex its length in hex.
const (
	tokenSecretBytes = 32
	tokenSecretHex   = 2 * tokenSecretBytes
)

// credentialGen names a credential by its stored hash, without giving
// the hash away: 16 hex digits of SHA-256 over it.
func credentialGen(hash []byte) string {
	sum := sha256.Sum256(append([]byte("trit-credential-generation\x00"), hash...))
	return hex.EncodeToString(sum[:8])
}

// newOperatorToken returns a new token for name and its hash.
func newOperatorToken(name string) (string, string, error) {
	var b [tokenSecretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	tok := name + "." + hex.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(tok))
	return tok, hex.EncodeToString(sum[:]), nil
}

// tokenName returns the operator name a token claims, or "" if it is not
// an operator token (it may be the api.token_file's).
func tokenName(tok string) string {
	if len(tok) < tokenSecretHex+2 || tok[len(tok)-tokenSecretHex-1] != '.' {
		return ""
	}
	name := tok[:len(tok)-tokenSecretHex-1]
	if store.CheckOperatorName(name) != nil {
		return ""
	}
	return name
}

// Auth decides who a credential is: the api.token_file's token or an
// operator's, throttled by SignIns per source address and per operator.
type Auth struct {
	db      store.Database
	legacy  [sha256.Size]byte
	signIns *SignIns
	audit   *Audit
	log     *slog.Logger
	now     func() time.Time
}

// MinTokenLength is the shortest API token (api.token_file's) the fleet
// takes, in bytes: shorter ones are guessable.
const MinTokenLength = 16

// NewAuth returns the authority over db's operators and the
// api.token_file's token (at least MinTokenLength bytes).
func NewAuth(db store.Database, tokenFile string, signIns *SignIns, audit *Audit, log *slog.Logger, now func() time.Time) (*Auth, error) {
	if len(tokenFile) < MinTokenLength {
		return nil, fmt.Errorf("fleet: the API token must be at least %d characters", MinTokenLength)
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	if signIns == nil {
		signIns = NewSignIns(log)
	}
	return &Auth{db: db, legacy: sha256.Sum256([]byte(tokenFile)), signIns: signIns, audit: audit, log: log, now: now}, nil
}

// SignIns returns the throttle Auth uses.
func (a *Auth) SignIns() *SignIns { return a.signIns }

// Audit returns the trail Auth's users record to.
func (a *Auth) Audit() *Audit { return a.audit }

// active reports whether o may act now.
func active(o *store.Operator, now time.Time) bool {
	return !o.Disabled && (o.Expires.IsZero() || now.Before(o.Expires))
}

// check returns the principal tok is, if any.
func (a *Auth) check(tok string) (Principal, bool) {
	sum := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(sum[:], a.legacy[:]) == 1 {
		return Principal{Name: TokenFileOperator, Role: RoleAdmin, Gen: credentialGen(a.legacy[:])}, true
	}
	if tokenName(tok) == "" {
		return Principal{}, false
	}
	var o store.Operator
	err := a.db.View(func(tx store.Tx) error {
		var err error
		o, err = store.OperatorByToken(tx, sum)
		return err
	})
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			a.log.Error("operator credential check failed", "err", err)
		}
		return Principal{}, false
	}
	want, _ := hex.DecodeString(o.TokenHash)
	if subtle.ConstantTimeCompare(sum[:], want) != 1 || !active(&o, a.now()) {
		return Principal{}, false
	}
	return Principal{Name: o.Name, Role: Role(o.Role), Machine: o.Machine, Gen: credentialGen(want)}, true
}

// SignIn checks tok from the source address remote (a request's
// RemoteAddr, host and port or host alone), made through via ("api",
// "console"). A Throttled result comes with the seconds to wait.
func (a *Auth) SignIn(remote, via, tok string) (Principal, SignInResult, int) {
	var p Principal
	name := tokenName(tok)
	res := a.signIns.AttemptAs(remote, via, name, func() bool {
		var ok bool
		p, ok = a.check(tok)
		return ok
	})
	if res == Throttled {
		return p, res, a.signIns.RetryAfterAs(remote, name)
	}
	return p, res, 0
}

// Current returns name's principal as it is now, with the generation of
// its credential: false if the operator was disabled, expired or removed
// since it signed in (console sessions ask on every request, and end
// when the generation is not theirs).
func (a *Auth) Current(name string) (Principal, bool) {
	if name == TokenFileOperator {
		return Principal{Name: TokenFileOperator, Role: RoleAdmin, Gen: credentialGen(a.legacy[:])}, true
	}
	var o store.Operator
	err := a.db.View(func(tx store.Tx) error {
		var err error
		o, err = store.GetOperator(tx, name)
		return err
	})
	if err != nil || !active(&o, a.now()) {
		return Principal{}, false
	}
	hash, err := hex.DecodeString(o.TokenHash)
	if err != nil {
		return Principal{}, false
	}
	return Principal{Name: o.Name, Role: Role(o.Role), Machine: o.Machine, Gen: credentialGen(hash)}, true
}

// ErrOperator reports a refused operator change.
var ErrOperator = errors.New("fleet: operators")

func operatorView(o *store.Operator, now time.Time) api.Operator {
	return api.Operator{Name: o.Name, Role: o.Role, Machine: o.Machine, Disabled: o.Disabled,
		Expired: !o.Expires.IsZero() && !now.Before(o.Expires), Created: o.Created, Expires: o.Expires,
		Rotated: o.Rotated, CreatedBy: o.CreatedBy}
}

// Operators manages db's operators: the API's routes and `trit-fleet
// operators` both use it.
type Operators struct {
	DB  store.Database
	Now func() time.Time
}

func (m *Operators) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// Add adds an operator and returns it with its token (shown this once).
func (m *Operators) Add(req api.OperatorRequest, by string) (*api.NewOperator, error) {
	if err := store.CheckOperatorName(req.Name); err != nil {
		return nil, fault.BadRequest("%v", err)
	}
	if req.Name == TokenFileOperator {
		return nil, fault.BadRequest("%q is the api.token_file's credential; choose another name", TokenFileOperator)
	}
	role, err := ParseRole(req.Role)
	if err != nil {
		return nil, err
	}
	now := m.now()
	if !req.Expires.IsZero() && !req.Expires.After(now) {
		return nil, fault.BadRequest("expires %s is not in the future", req.Expires.UTC().Format(time.RFC3339))
	}
	tok, sum, err := newOperatorToken(req.Name)
	if err != nil {
		return nil, err
	}
	o := store.Operator{Name: req.Name, Role: string(role), Machine: req.Machine, TokenHash: sum,
		Created: now.UTC(), Expires: req.Expires.UTC(), CreatedBy: by}
	if req.Expires.IsZero() {
		o.Expires = time.Time{}
	}
	if err := m.DB.Update(func(tx store.Tx) error { return store.AddOperator(tx, o) }); err != nil {
		if errors.Is(err, store.ErrOperatorExists) {
			return nil, fmt.Errorf("%w: %s already exists (rotate gives it a new token)", ErrOperator, req.Name)
		}
		return nil, err
	}
	return &api.NewOperator{Operator: operatorView(&o, now), Token: tok}, nil
}

// update changes name's record with fn; endSessions also ends name's web
// console sessions (on every replica: they are in the store) in the same
// transaction.
func (m *Operators) update(name string, endSessions bool, fn func(*store.Operator) error) (store.Operator, error) {
	return m.updateAfter(name, endSessions, nil, fn)
}

// updateAfter is update, running pre (if not nil) first in the same
// transaction.
func (m *Operators) updateAfter(name string, endSessions bool, pre func(store.Tx) error, fn func(*store.Operator) error) (store.Operator, error) {
	if err := store.CheckOperatorName(name); err != nil {
		return store.Operator{}, fault.BadRequest("%v", err)
	}
	var o store.Operator
	err := m.DB.Update(func(tx store.Tx) error {
		if pre != nil {
			if err := pre(tx); err != nil {
				return err
			}
		}
		var err error
		if o, err = store.UpdateOperator(tx, name, fn); err != nil || !endSessions {
			return err
		}
		_, err = store.DeleteConsoleSessionsOf(tx, name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return o, fmt.Errorf("%w: operator %s", fault.ErrNotFound, name)
	}
	return o, err
}

// SetDisabled disables or enables name; a disabled operator's token is
// refused from the next request on, and its console sessions end. The
// last active admin is not disabled (lastAdmin).
func (m *Operators) SetDisabled(name string, disabled bool) (api.Operator, error) {
	var pre func(tx store.Tx) error
	if disabled {
		pre = func(tx store.Tx) error { return m.lastAdmin(tx, name, "disable") }
	}
	o, err := m.updateAfter(name, disabled, pre, func(o *store.Operator) error { o.Disabled = disabled; return nil })
	return operatorView(&o, m.now()), err
}

// lastAdmin refuses to disable or remove name when it is the last
// active admin operator that is a person: the fleet would be left with
// no admin but the api.token_file's, on the fleet host.
func (m *Operators) lastAdmin(tx store.Tx, name, op string) error {
	ops, err := store.Operators(tx)
	if err != nil {
		return err
	}
	now := m.now()
	others, target := 0, false
	for i := range ops {
		o := &ops[i]
		if Role(o.Role) != RoleAdmin || o.Machine || !active(o, now) {
			continue
		}
		if o.Name == name {
			target = true
		} else {
			others++
		}
	}
	if target && others == 0 {
		return fmt.Errorf("%w: %s is the last active admin; add another admin (trit-fleet operators add NAME --role admin) before you %s it", ErrOperator, name, op)
	}
	return nil
}

// Rotate gives name a new token; the old one stops working at once, and
// the console sessions signed in with any token of name's end.
func (m *Operators) Rotate(name string) (*api.NewOperator, error) {
	var tok string
	o, err := m.update(name, true, func(o *store.Operator) error {
		var sum string
		var err error
		tok, sum, err = newOperatorToken(name)
		o.TokenHash, o.Rotated = sum, m.now().UTC()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.NewOperator{Operator: operatorView(&o, m.now()), Token: tok}, nil
}

// Remove deletes name and ends its console sessions; the last active
// admin is not removed (lastAdmin).
func (m *Operators) Remove(name string) error {
	if err := store.CheckOperatorName(name); err != nil {
		return fault.BadRequest("%v", err)
	}
	err := m.DB.Update(func(tx store.Tx) error {
		if err := m.lastAdmin(tx, name, "remove"); err != nil {
			return err
		}
		if err := store.DeleteOperator(tx, name); err != nil {
			return err
		}
		_, err := store.DeleteConsoleSessionsOf(tx, name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: operator %s", fault.ErrNotFound, name)
	}
	return err
}

// List returns every operator.
func (m *Operators) List() ([]api.Operator, error) {
	var ops []store.Operator
	err := m.DB.View(func(tx store.Tx) error {
		var err error
		ops, err = store.Operators(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := m.now()
	out := make([]api.Operator, len(ops))
	for i := range ops {
		out[i] = operatorView(&ops[i], now)
	}
	return out, nil
}
