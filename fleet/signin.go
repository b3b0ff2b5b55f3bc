package fleet

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SignIns throttles checks of the fleet's token per source address: the
// API's bearer token and the web console's sign-in share one budget per
// address. Guessing a token of 16 characters or more is hopeless anyway;
// the throttle bounds the work and the log lines a client can cause.
//
// Invariants:
//   - An address may fail signInBurst times at once, then once per
//     signInEvery; while its budget is spent, attempts are refused without
//     looking at the token (even the right one) and say when to retry.
//   - IPv4 addresses are counted one by one, IPv6 ones by /64 (one host
//     usually holds a whole /64).
//   - At most maxSignInAddrs addresses are tracked; an address whose
//     budget has refilled and whose counts are logged carries nothing and
//     is forgotten; past the bound, new addresses share one budget.
//   - The log gets a line for an address's first refusal, then at most one
//     per signInLogEvery with the counts since the previous line; every
//     refusal is in exactly one line's refused=N.
type SignIns struct {
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex
	m         map[string]*signInAddr
	lastSweep time.Time
}

// signInAddr is one address's budget and log state.
type signInAddr struct {
	budget *rate.Limiter
	via    string    // where the latest refusal was
	logAt  time.Time // of the last line; zero: none yet
	wrong  uint64    // wrong tokens since that line
	held   uint64    // refused while throttled since that line
	timer  bool      // a flush is scheduled
}

const (
	signInBurst    = 10
	signInEvery    = 10 * time.Second
	maxSignInAddrs = 4096
	overflowAddr   = "(other addresses)"
)

// signInLogEvery bounds the log lines about one address (a variable for
// tests).
var signInLogEvery = time.Minute

// NewSignIns returns a throttle that logs to log.
func NewSignIns(log *slog.Logger) *SignIns {
	if log == nil {
		log = slog.Default()
	}
	return &SignIns{log: log, now: time.Now, m: map[string]*signInAddr{}}
}

// SignInResult is what Attempt decided.
type SignInResult int

const (
	// SignedIn: the token was right.
	SignedIn SignInResult = iota
	// WrongToken: the token was wrong; one failure was spent.
	WrongToken
	// Throttled: the address has no failures left; the token was not
	// checked. Answer 429 with RetryAfter.
	Throttled
)

// addrKey is the budget an address draws on.
func addrKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	default:
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
}

// Attempt checks a sign-in from r's address, made through via ("api",
// "console"): Throttled without calling check while the address has spent
// its failures, else SignedIn or WrongToken as check says.
func (t *SignIns) Attempt(r *http.Request, via string, check func() bool) SignInResult {
	key := addrKey(r.RemoteAddr)
	now := t.now()
	t.mu.Lock()
	a := t.get(key, now)
	if a.budget.TokensAt(now) < 1 {
		a.held++
		t.refused(key, a, via, now)
		t.mu.Unlock()
		return Throttled
	}
	t.mu.Unlock()
	if check() {
		return SignedIn
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a = t.get(key, now)
	a.budget.AllowN(now, 1)
	a.wrong++
	t.refused(key, a, via, now)
	return WrongToken
}

// RetryAfter is how long a throttled address waits for its next attempt,
// in whole seconds.
func (t *SignIns) RetryAfter(r *http.Request) int {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.m[addrKey(r.RemoteAddr)]
	if a == nil {
		return 0
	}
	need := 1 - a.budget.TokensAt(now)
	if need <= 0 {
		return 0
	}
	return int(need*signInEvery.Seconds()) + 1
}

// get returns key's entry, creating it. Called with mu held.
func (t *SignIns) get(key string, now time.Time) *signInAddr {
	if a := t.m[key]; a != nil {
		return a
	}
	if len(t.m) >= maxSignInAddrs || now.Sub(t.lastSweep) >= signInEvery*signInBurst {
		t.sweep(now)
	}
	if len(t.m) >= maxSignInAddrs {
		key = overflowAddr
		if a := t.m[key]; a != nil {
			return a
		}
	}
	a := &signInAddr{budget: rate.NewLimiter(rate.Every(signInEvery), signInBurst)}
	t.m[key] = a
	return a
}

// sweep forgets addresses with a full budget and nothing left to log.
func (t *SignIns) sweep(now time.Time) {
	for k, a := range t.m {
		if a.budget.TokensAt(now) >= signInBurst && a.wrong == 0 && a.held == 0 && !a.timer {
			delete(t.m, k)
		}
	}
	t.lastSweep = now
}

// refused logs a refusal now if the address's last line is old enough,
// else leaves it to a flush at the end of the window. Called with mu held.
func (t *SignIns) refused(key string, a *signInAddr, via string, now time.Time) {
	a.via = via
	if a.logAt.IsZero() || now.Sub(a.logAt) >= signInLogEvery {
		t.line(key, a, now)
		return
	}
	if !a.timer {
		a.timer = true
		time.AfterFunc(a.logAt.Add(signInLogEvery).Sub(now), func() { t.flush(key) })
	}
}

// line logs key's counts since its last line and starts a new window.
// Called with mu held.
func (t *SignIns) line(key string, a *signInAddr, now time.Time) {
	msg := "sign-in refused: wrong token"
	if a.held > 0 || a.wrong > 1 {
		msg = "sign-ins refused"
	}
	if a.wrong == 0 && a.held == 1 {
		msg = "sign-in refused: too many wrong tokens from this address"
	}
	args := []any{"via", a.via, "remote", key, "refused", a.wrong + a.held, "wrong_token", a.wrong, "throttled", a.held}
	if !a.logAt.IsZero() {
		args = append(args, "since", a.logAt.UTC().Format(time.RFC3339))
	}
	t.log.Warn(msg, args...)
	a.logAt, a.wrong, a.held = now, 0, 0
}

// flush logs key's counts if any wait.
func (t *SignIns) flush(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.m[key]
	if a == nil {
		return
	}
	a.timer = false
	if a.wrong+a.held > 0 {
		t.line(key, a, t.now())
	}
}

// Flush logs every address's waiting counts now (tests, shutdown).
func (t *SignIns) Flush() {
	t.mu.Lock()
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
	}
	t.mu.Unlock()
	for _, k := range keys {
		t.flush(k)
	}
}
