package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/fleet"
)

// Sessions. Invariants:
//   - A session ID is 256 random bits, sent only in the HttpOnly cookie;
//     the map is keyed by its SHA-256, so a lookup's timing says nothing
//     useful about stored IDs.
//   - Every login makes a new session (no fixation); logout, expiry and
//     eviction delete it.
//   - A session's CSRF token is another 256 random bits, fixed for its life
//     and never sent in a cookie.

const (
	sessionCookie = "trit_console"
	loginCookie   = "trit_console_login" // the login form's double-submit token
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

type session struct {
	p       fleet.Principal // who signed in, as of the latest request
	csrf    string
	created time.Time
	seen    time.Time
	flash   *flash
}

type sessions struct {
	mu     sync.Mutex
	m      map[[32]byte]*session
	idle   time.Duration
	maxAge time.Duration
	max    int
	now    func() time.Time
}

func newSessions(idle, maxAge time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{m: map[[32]byte]*session{}, idle: idle, maxAge: maxAge, max: max, now: now}
}

// randomToken returns 256 random bits, base64url-encoded.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *sessions) expired(x *session, now time.Time) bool {
	return now.Sub(x.seen) > s.idle || now.Sub(x.created) > s.maxAge
}

// create starts a session for p and returns its ID.
func (s *sessions) create(p fleet.Principal) string {
	id := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest [32]byte
	var oldestSeen time.Time
	for k, x := range s.m {
		if s.expired(x, now) {
			delete(s.m, k)
		} else if oldestSeen.IsZero() || x.seen.Before(oldestSeen) {
			oldest, oldestSeen = k, x.seen
		}
	}
	if len(s.m) >= s.max {
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(id))] = &session{p: p, csrf: randomToken(), created: now, seen: now}
	return id
}

// sessionView is what a handler learns of its session.
type sessionView struct {
	p     fleet.Principal
	id    string
	csrf  string
	flash *flash // taken: shown once
}

// lookup finds the request's session. touch counts the request as
// activity (resetting the idle timer) and takes the session's flash.
func (s *sessions) lookup(r *http.Request, touch bool) (sessionView, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return sessionView{}, false
	}
	key := sha256.Sum256([]byte(ck.Value))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.m[key]
	if x == nil {
		return sessionView{}, false
	}
	if s.expired(x, now) {
		delete(s.m, key)
		return sessionView{}, false
	}
	v := sessionView{p: x.p, id: ck.Value, csrf: x.csrf}
	if touch {
		x.seen = now
		v.flash, x.flash = x.flash, nil
	}
	return v, true
}

// setPrincipal records who the session is as of now.
func (s *sessions) setPrincipal(id string, p fleet.Principal) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.m[key]; x != nil {
		x.p = p
	}
}

// setFlash leaves a message for the session's next page.
func (s *sessions) setFlash(id string, f *flash) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.m[key]; x != nil {
		x.flash = f
	}
}

func (s *sessions) delete(id string) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// secure reports whether the browser reached the console over TLS: the
// request came over TLS, or through a TLS-terminating proxy that says so
// (X-Forwarded-Proto: https). Trusting the header is harmless: it can only
// add the Secure flag to the client's own cookies.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// current checks the session's operator as it is now: one disabled,
// expired or removed since signing in ends the session. It returns the
// session with the current principal.
func (c *Console) current(w http.ResponseWriter, r *http.Request, s sessionView) (sessionView, bool) {
	p, ok := c.auth.Current(s.p.Name)
	if !ok {
		c.sessions.delete(s.id)
		return s, false
	}
	if p != s.p {
		c.sessions.setPrincipal(s.id, p)
		s.p = p
	}
	return s, true
}

// refuse answers 403 to a signed-in operator whose role lacks rule's
// permission, and audits it.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, s sessionView, rule fleet.Rule) {
	action := rule.Action
	if action == "rollout.control" {
		action = "rollout." + r.PathValue("op")
	}
	c.auth.Audit().Record(fleet.RequestRecord(r, s.p, rule, action, http.StatusForbidden, "web console"))
	c.renderError(w, r, http.StatusForbidden, fleet.Refused(s.p, rule)+".")
}

// authed wraps a page handler: without a valid session the browser goes
// to the login page (htmx's live refreshes are told to go there too); a
// role without the page's permission gets 403.
func (c *Console) authed(rule fleet.Rule, h func(http.ResponseWriter, *http.Request, sessionView)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		refresh := r.URL.Query().Get("part") != "" // htmx's, not the operator's
		s, ok := c.sessions.lookup(r, !refresh)
		if ok {
			s, ok = c.current(w, r, s)
		}
		if !ok {
			c.toLogin(w, r)
			return
		}
		if !s.p.Role.Can(rule.Perm) {
			c.refuse(w, r, s, rule)
			return
		}
		h(w, r, s)
	}
}

// action wraps a state-changing handler (POST): it needs a valid session
// and that session's CSRF token, in the form or the X-CSRF-Token header,
// and a role with the action's permission; it is audited as the API's
// changes are. (Cross-origin requests were already refused by
// CrossOriginProtection.)
func (c *Console) action(rule fleet.Rule, h func(http.ResponseWriter, *http.Request, sessionView)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		s, ok := c.sessions.lookup(r, true)
		if ok {
			s, ok = c.current(w, r, s)
		}
		if !ok {
			c.renderError(w, r, http.StatusForbidden, "Your session has ended. Sign in again and repeat the action.")
			return
		}
		got := r.Header.Get(csrfHeader)
		if got == "" {
			got = r.PostFormValue(csrfField)
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			c.log.Warn("console: request without a valid CSRF token refused", "method", r.Method, "path", bounded(r.URL.Path))
			c.renderError(w, r, http.StatusForbidden, "This request did not carry the page's security token and was refused. Reload the page and try again.")
			return
		}
		if !s.p.Role.Can(rule.Perm) {
			c.refuse(w, r, s, rule)
			return
		}
		if rule.Action == "" {
			h(w, r, s)
			return
		}
		r, note := fleet.WithAuditNote(r)
		sw := &fleet.StatusWriter{ResponseWriter: w}
		h(sw, r, s)
		status := sw.Status
		if status == 0 || status == http.StatusSeeOther { // done, and shown on the next page
			status = http.StatusOK
		}
		if note.Status != 0 {
			status = note.Status
		}
		if note.Detail == "" {
			note.Detail = "web console"
		}
		action := rule.Action
		if action == "rollout.control" {
			action = "rollout." + r.PathValue("op")
		}
		rec := fleet.RequestRecord(r, s.p, rule, action, status, note.Detail)
		if note.Object != "" {
			rec.Object = note.Object
		}
		c.auth.Audit().Record(rec)
	}
}

// maxFormBytes bounds a form post.
const maxFormBytes = 64 << 10

// toLogin sends the browser to the login page, remembering where it was.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request) {
	target := "/console/login"
	if r.Method == http.MethodGet && r.URL.Path != "/console/" && r.URL.Query().Get("part") == "" {
		target += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	if r.Header.Get("HX-Request") == "true" {
		// A live refresh: htmx follows HX-Redirect with a full navigation.
		w.Header().Set("HX-Redirect", target)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// safeNext returns next if it is a console page on this origin, else the
// overview: a login link cannot send the browser elsewhere.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/console/") ||
		strings.Contains(next, "//") || strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(u.Path, "/console/login") {
		return "/console/"
	}
	return next
}

type loginData struct {
	Token string // the form's double-submit token
	Next  string
	Error string
}

// loginPage shows the login form with a fresh double-submit token in a
// cookie and a hidden field.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.sessions.lookup(r, false); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.showLogin(w, r, http.StatusOK, "")
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: tok, Path: "/console/login", MaxAge: 3600,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	next := r.URL.Query().Get("next")
	if r.Method == http.MethodPost {
		next = r.PostFormValue("next")
	}
	c.render(w, r, status, "login", &view{Title: "Sign in", Data: &loginData{Token: tok, Next: safeNext(next), Error: msg}})
}

// login checks the form's double-submit token and the credential (an
// operator's token, or the api.token_file's), then starts a session.
// Sign-ins are throttled per source address and per operator together
// with the API's token checks (fleet.SignIns), which also logs refusals:
// a line for an address's first, then counts at most once a minute.
// Machine credentials and roles that cannot read (metrics) are refused.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	ck, err := r.Cookie(loginCookie)
	form := r.PostFormValue(csrfField)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(form)) != 1 {
		c.showLogin(w, r, http.StatusForbidden, "The sign-in form had expired. Enter the token again.")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	p, res, retry := c.auth.SignIn(r, "console", token)
	switch res {
	case fleet.Throttled:
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		c.showLogin(w, r, http.StatusTooManyRequests, "Too many wrong tokens from this address or for this operator. Wait a minute and try again.")
		return
	case fleet.WrongToken:
		c.showLogin(w, r, http.StatusUnauthorized, "That is not a valid operator token (or it was disabled, or it expired).")
		return
	}
	if p.Machine {
		c.showLogin(w, r, http.StatusForbidden, "That is a machine credential (for scripts and scrapers); it cannot sign in to the console.")
		return
	}
	if !p.Role.Can(fleet.PermRead) {
		c.showLogin(w, r, http.StatusForbidden, fmt.Sprintf("Role %s cannot use the console.", p.Role))
		return
	}
	id := c.sessions.create(p)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/console/", MaxAge: int(c.opt.MaxAge / time.Second),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/console/login", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	c.log.Info("console: signed in", "operator", p.Name, "role", p.Role, "remote", r.RemoteAddr)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s sessionView) {
	c.sessions.delete(s.id)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/console/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}
