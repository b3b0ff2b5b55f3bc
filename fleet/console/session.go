package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/web"
	"github.com/trit-iot/trit/store"
)

// Sessions. Invariants:
//   - A session ID is 256 random bits, sent only in the HttpOnly cookie.
//     Sessions are kept in the fleet's store (store.AddConsoleSession,
//     collection fleet_console_sessions), keyed by the ID's SHA-256: the
//     database never holds an ID, and every replica on one database, and
//     a restarted one, knows every session.
//   - Every login makes a new session (no fixation); logout, expiry and
//     eviction delete it, on every replica at once; so does disabling or
//     removing the operator (access.Operators), and a request whose
//     operator is no longer current deletes its session.
//   - A session's CSRF token is another 256 random bits, fixed for its life
//     and never sent in a cookie.
//   - Activity is written back at most once per touchEvery (and whenever a
//     flash is taken): page views are reads, not writes, in between, so
//     the idle timeout is kept to within touchEvery.

const (
	sessionCookie = "trit_console"
	loginCookie   = "trit_console_login" // the login form's double-submit token
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// touchEvery bounds how often a session's last-seen time is written.
const touchEvery = time.Minute

// sessions is the console's view of the sessions in its store.
type sessions struct {
	log *slog.Logger
	db  store.Database
	lim store.SessionLimits
	now func() time.Time
}

func newSessions(log *slog.Logger, db store.Database, idle, maxAge time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{log: log, db: db, lim: store.SessionLimits{Idle: idle, MaxAge: maxAge, Max: max}, now: now}
}

// randomToken returns 256 random bits, base64url-encoded.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for p and returns its ID.
func (s *sessions) create(p access.Principal) (string, error) {
	id := randomToken()
	now := s.now()
	rec := store.ConsoleSession{Operator: p.Name, Role: string(p.Role), CSRF: randomToken(), Created: now, Seen: now, Gen: p.Gen}
	if err := s.db.Update(func(tx store.Tx) error { return store.AddConsoleSession(tx, id, rec, s.lim, now) }); err != nil {
		return "", fmt.Errorf("console: start a session: %w", err)
	}
	return id, nil
}

// sessionView is what a handler learns of its session.
type sessionView struct {
	p     access.Principal // as of the latest check (current)
	id    string
	csrf  string
	flash *flash // taken: shown once
}

// lookup finds the request's session: ok false when there is none (or it
// ended), an error when the store did not answer. touch counts the request
// as activity (resetting the idle timer) and takes the session's flash.
func (s *sessions) lookup(r *http.Request, touch bool) (sessionView, bool, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return sessionView{}, false, nil
	}
	id := ck.Value
	now := s.now()
	var x store.ConsoleSession
	err = s.db.View(func(tx store.Tx) error {
		x, err = store.GetConsoleSession(tx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return sessionView{}, false, nil
	}
	if err != nil {
		return sessionView{}, false, fmt.Errorf("console: read the session: %w", err)
	}
	if s.lim.Expired(&x, now) {
		return sessionView{}, false, s.delete(id)
	}
	v := sessionView{p: access.Principal{Name: x.Operator, Role: access.Role(x.Role), Gen: x.Gen}, id: id, csrf: x.CSRF}
	if !touch || (x.Flash == "" && now.Sub(x.Seen) < touchEvery) {
		return v, true, nil
	}
	// Write the activity back and take the flash in one transaction, so a
	// flash is shown once however many replicas serve the browser.
	ok := true
	err = s.db.Update(func(tx store.Tx) error {
		x, err := store.GetConsoleSession(tx, id)
		if errors.Is(err, store.ErrNotFound) {
			ok = false
			return nil
		}
		if err != nil {
			return err
		}
		if x.Flash != "" {
			v.flash = &flash{Error: x.FlashError, Text: x.Flash}
		}
		x.Seen, x.Flash, x.FlashError = now, "", false
		return store.PutConsoleSession(tx, id, x)
	})
	if err != nil {
		return sessionView{}, false, fmt.Errorf("console: update the session: %w", err)
	}
	return v, ok, nil
}

// setFlash leaves a message for the session's next page (cut to
// store.MaxSessionFlash bytes). A failure is logged: the action itself is
// done.
func (s *sessions) setFlash(id string, f *flash) {
	text := strings.ToValidUTF8(f.Text, "?")
	if len(text) > store.MaxSessionFlash {
		cut := store.MaxSessionFlash - len("…")
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	err := s.db.Update(func(tx store.Tx) error {
		x, err := store.GetConsoleSession(tx, id)
		if err != nil {
			return err
		}
		x.Flash, x.FlashError = text, f.Error
		return store.PutConsoleSession(tx, id, x)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("console: could not keep a message for the next page", "err", err)
	}
}

// setPrincipal records who the session is as of now.
func (s *sessions) setPrincipal(id string, p access.Principal) error {
	err := s.db.Update(func(tx store.Tx) error {
		x, err := store.GetConsoleSession(tx, id)
		if err != nil {
			return err
		}
		x.Operator, x.Role = p.Name, string(p.Role)
		return store.PutConsoleSession(tx, id, x)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("console: update the session: %w", err)
	}
	return nil
}

// delete ends session id.
func (s *sessions) delete(id string) error {
	if err := s.db.Update(func(tx store.Tx) error { return store.DeleteConsoleSession(tx, id) }); err != nil {
		return fmt.Errorf("console: end the session: %w", err)
	}
	return nil
}

// secure reports whether the browser reached the console over TLS: the
// request came over TLS, or through a TLS-terminating proxy that says so
// (X-Forwarded-Proto: https). Trusting the header is harmless: it can only
// add the Secure flag to the client's own cookies.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// current checks the session's operator as it is now: one disabled,
// expired or removed since signing in, or whose credential is no longer
// the one the session signed in with (rotated; the api.token_file
// replaced), ends the session. It returns the session with the current
// principal.
func (c *Console) current(w http.ResponseWriter, r *http.Request, s sessionView) (sessionView, bool) {
	p, ok := c.auth.Current(s.p.Name)
	if ok && p.Gen != s.p.Gen {
		ok = false
		c.log.Info("console: session ended: its credential was replaced", "operator", s.p.Name)
	}
	if !ok {
		if err := c.sessions.delete(s.id); err != nil {
			c.log.Warn("console: could not end the session of an operator no longer current", "operator", s.p.Name, "err", err)
		}
		return s, false
	}
	if p != s.p {
		if err := c.sessions.setPrincipal(s.id, p); err != nil {
			c.log.Warn("console: could not record the session's new role", "operator", p.Name, "err", err)
		}
		s.p = p
	}
	return s, true
}

// unavailable answers 503 when the sessions' store did not answer.
func (c *Console) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	c.log.Error("console: the fleet's database did not answer", "method", r.Method, "path", bounded(r.URL.Path), "err", err)
	w.Header().Set("Retry-After", "5")
	c.renderError(w, r, http.StatusServiceUnavailable, "The fleet's database did not answer. Try again in a moment.")
}

// guard is the console's web.Guard for rule: the session found by
// authenticate, a refusal answered with a 403 page, records saying "web
// console".
func (c *Console) guard(rule access.Rule, authenticate func(http.ResponseWriter, *http.Request) (sessionView, bool), forms bool) *web.Guard[sessionView] {
	return &web.Guard[sessionView]{Rule: rule, Authenticate: authenticate,
		Record:    func(rec store.AuditRecord) { c.auth.Audit().Record(rec) },
		Principal: func(s sessionView) access.Principal { return s.p },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ sessionView, why string) {
			c.renderError(w, r, http.StatusForbidden, why+".")
		},
		Via: "web console", FormRedirects: forms}
}

// authed wraps a page handler: without a valid session the browser goes
// to the login page (htmx's live refreshes are told to go there too); a
// role without the page's permission gets 403, audited.
func (c *Console) authed(rule access.Rule, h func(http.ResponseWriter, *http.Request, sessionView)) http.HandlerFunc {
	return c.guard(rule, c.pageSession, false).Handler(h)
}

// pageSession is a page's session, current; without one it sends the
// browser to the login page.
func (c *Console) pageSession(w http.ResponseWriter, r *http.Request) (sessionView, bool) {
	refresh := r.URL.Query().Get("part") != "" // htmx's, not the operator's
	s, ok, answered := c.liveSession(w, r, !refresh)
	if !ok && !answered {
		c.toLogin(w, r)
	}
	return s, ok
}

// liveSession is r's session, current (touch: the request counts as the
// operator's activity); answered says that without one the store's
// failure was already answered.
func (c *Console) liveSession(w http.ResponseWriter, r *http.Request, touch bool) (s sessionView, ok, answered bool) {
	s, ok, err := c.sessions.lookup(r, touch)
	if err != nil {
		c.unavailable(w, r, err)
		return s, false, true
	}
	if ok {
		s, ok = c.current(w, r, s)
	}
	return s, ok, false
}

// action wraps a state-changing handler (POST): it needs a valid session
// and that session's CSRF token, in the form or the X-CSRF-Token header,
// and a role with the action's permission; it is audited as the API's
// changes are, under the action the handler noted if it noted one (an
// emergency rollback). (Cross-origin requests were already refused by
// CrossOriginProtection.)
func (c *Console) action(rule access.Rule, h func(http.ResponseWriter, *http.Request, sessionView)) http.HandlerFunc {
	guarded := c.guard(rule, c.formSession, true).Handler(h)
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		guarded(w, r)
	}
}

// formSession is a form's session, current, with the session's CSRF
// token; without them it answers 403.
func (c *Console) formSession(w http.ResponseWriter, r *http.Request) (sessionView, bool) {
	s, ok, answered := c.liveSession(w, r, true)
	if !ok {
		if !answered {
			c.renderError(w, r, http.StatusForbidden, "Your session has ended. Sign in again and repeat the action.")
		}
		return s, false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
		c.log.Warn("console: request without a valid CSRF token refused", "method", r.Method, "path", bounded(r.URL.Path))
		c.renderError(w, r, http.StatusForbidden, "This request did not carry the page's security token and was refused. Reload the page and try again.")
		return s, false
	}
	return s, true
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
	if _, ok, _ := c.sessions.lookup(r, false); ok {
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
// with the API's token checks (access.SignIns), which also logs refusals:
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
	p, res, retry := c.auth.SignIn(r.RemoteAddr, "console", token)
	switch res {
	case access.Throttled:
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		c.showLogin(w, r, http.StatusTooManyRequests, "Too many wrong tokens from this address or for this operator. Wait a minute and try again.")
		return
	case access.WrongToken:
		c.showLogin(w, r, http.StatusUnauthorized, "That is not a valid operator token (or it was disabled, or it expired).")
		return
	}
	if p.Machine {
		c.showLogin(w, r, http.StatusForbidden, "That is a machine credential (for scripts and scrapers); it cannot sign in to the console.")
		return
	}
	if !p.Role.Can(access.PermRead) {
		c.showLogin(w, r, http.StatusForbidden, fmt.Sprintf("Role %s cannot use the console.", p.Role))
		return
	}
	id, err := c.sessions.create(p)
	if err != nil {
		c.unavailable(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/console/", MaxAge: int(c.opt.MaxAge / time.Second),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/console/login", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	c.log.Info("console: signed in", "operator", p.Name, "role", p.Role, "remote", r.RemoteAddr)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s sessionView) {
	if err := c.sessions.delete(s.id); err != nil {
		c.unavailable(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/console/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}
