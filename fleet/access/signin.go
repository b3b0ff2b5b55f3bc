package access

import (
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SignIns throttles wrong tokens per source address and per operator:
// the API's bearer token and the web console's sign-in share one budget
// per address, and the tokens that name an operator (operators.go) one
// budget per operator, whatever address they come from. Behind a reverse
// proxy the address is the client's only when the proxy is trusted
// (api.trusted_proxies, fleet/server/proxy.go, which sets the request's
// RemoteAddr the edges pass here), else every client shares the proxy's.
//
// Invariants:
//   - A valid operator token is never refused for someone else's
//     failures: an operator's token is 256 random bits, which no guessing
//     finds, so it is checked whatever the budgets say (a hash and one
//     store lookup) and a right one signs in. The budgets decide how a
//     wrong one is answered: 401 while both its address's and its
//     operator's budget last, then 429 with Retry-After, and they bound
//     the log lines.
//   - A token that names no operator (the api.token_file's, which a
//     person chose and may be weak, or garbage) is not checked at all
//     while its address's budget is spent: Throttled, even the right one.
//   - An address may fail SignInBurst times at once, then once per
//     signInEvery; so may an operator's name.
//   - IPv4 addresses are counted one by one, IPv6 ones by /64 (one host
//     usually holds a whole /64).
//   - At most maxSignInAddrs addresses and names are tracked; one whose
//     budget has refilled and whose counts are logged carries nothing and
//     is forgotten; past the bound, new ones share one budget.
//   - The log gets a line for an address's first refusal, then at most one
//     per SignInLogEvery with the counts since the previous line; every
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
	name   string    // the operator, for an operator's budget; "" for an address
}

const (
	SignInBurst    = 10
	signInEvery    = 10 * time.Second
	maxSignInAddrs = 4096
	overflowAddr   = "(other addresses)"
	overflowName   = "(other operators)"
	// nameKeyPrefix starts the key of an operator's budget in SignIns.m
	// (addresses never contain a space).
	nameKeyPrefix = "operator "
)

// SignInLogEvery bounds the log lines about one address (a variable for
// tests).
var SignInLogEvery = time.Minute

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

// Attempt checks a sign-in from the source address remote (a request's
// RemoteAddr: host and port, or host alone), made through via ("api",
// "console"), with a token that names no operator: Throttled without
// calling check while the address has spent its failures, else SignedIn
// or WrongToken as check says.
func (t *SignIns) Attempt(remote, via string, check func() bool) SignInResult {
	return t.AttemptAs(remote, via, "", check)
}

// AttemptAs is Attempt for a token that names operator name ("" for
// none): such a token is always checked, and a right one signs in; a
// wrong one is Throttled while its address or its operator has spent
// its failures.
func (t *SignIns) AttemptAs(remote, via, name string, check func() bool) SignInResult {
	key := addrKey(remote)
	now := t.now()
	t.mu.Lock()
	spent := t.get(key, now).budget.TokensAt(now) < 1
	if name != "" {
		spent = spent || t.getName(name, now).budget.TokensAt(now) < 1
	}
	if spent && name == "" {
		a := t.get(key, now)
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
	count := func(k string, a *signInAddr) {
		a.budget.AllowN(now, 1)
		if spent {
			a.held++
		} else {
			a.wrong++
		}
		t.refused(k, a, via, now)
	}
	count(key, t.get(key, now))
	if name != "" {
		count(nameKeyPrefix+name, t.getName(name, now))
	}
	if spent {
		return Throttled
	}
	return WrongToken
}

// getName returns operator name's budget. Called with mu held.
func (t *SignIns) getName(name string, now time.Time) *signInAddr {
	key := nameKeyPrefix + name
	if a := t.m[key]; a != nil {
		return a
	}
	a := t.get(key, now)
	if a.name == "" {
		a.name = name
		if t.m[key] != a { // past the bound: the shared budget
			a.name = overflowName
		}
	}
	return a
}

// RetryAfter is how long a throttled address remote waits for its next
// attempt, in whole seconds.
func (t *SignIns) RetryAfter(remote string) int {
	return t.RetryAfterAs(remote, "")
}

// RetryAfterAs is how long a sign-in as operator name ("" for none) from
// address remote waits, in whole seconds.
func (t *SignIns) RetryAfterAs(remote, name string) int {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	wait := 0
	keys := []string{addrKey(remote)}
	if name != "" {
		keys = append(keys, nameKeyPrefix+name)
	}
	for _, k := range keys {
		a := t.m[k]
		if a == nil {
			continue
		}
		if need := 1 - a.budget.TokensAt(now); need > 0 {
			wait = max(wait, int(need*signInEvery.Seconds())+1)
		}
	}
	return wait
}

// get returns key's entry, creating it. Called with mu held.
func (t *SignIns) get(key string, now time.Time) *signInAddr {
	if a := t.m[key]; a != nil {
		return a
	}
	if len(t.m) >= maxSignInAddrs || now.Sub(t.lastSweep) >= signInEvery*SignInBurst {
		t.sweep(now)
	}
	if len(t.m) >= maxSignInAddrs {
		if strings.HasPrefix(key, nameKeyPrefix) {
			key = overflowName
		} else {
			key = overflowAddr
		}
		if a := t.m[key]; a != nil {
			return a
		}
	}
	a := &signInAddr{budget: rate.NewLimiter(rate.Every(signInEvery), SignInBurst)}
	t.m[key] = a
	return a
}

// sweep forgets addresses with a full budget and nothing left to log.
func (t *SignIns) sweep(now time.Time) {
	for k, a := range t.m {
		if a.budget.TokensAt(now) >= SignInBurst && a.wrong == 0 && a.held == 0 && !a.timer {
			delete(t.m, k)
		}
	}
	t.lastSweep = now
}

// refused logs a refusal now if the address's last line is old enough,
// else leaves it to a flush at the end of the window. Called with mu held.
func (t *SignIns) refused(key string, a *signInAddr, via string, now time.Time) {
	a.via = via
	if a.logAt.IsZero() || now.Sub(a.logAt) >= SignInLogEvery {
		t.line(key, a, now)
		return
	}
	if !a.timer {
		a.timer = true
		time.AfterFunc(a.logAt.Add(SignInLogEvery).Sub(now), func() { t.flush(key) })
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
	args := []any{"via", a.via, "remote", key}
	if a.name != "" {
		if a.wrong == 0 && a.held == 1 {
			msg = "sign-in refused: too many wrong tokens for this operator"
		}
		args = []any{"via", a.via, "operator", a.name}
	}
	args = append(args, "refused", a.wrong+a.held, "wrong_token", a.wrong, "throttled", a.held)
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
