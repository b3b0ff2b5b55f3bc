// Package console is trit-fleet's web console: server-rendered pages over
// the fleet service, served on its API listener under /console/.
//
// Pages are Go html/template (every value from a device is escaped by the
// template's context: text, attribute, URL, and SVG text of the charts);
// charts are SVG drawn on the server; the only script is a vendored,
// pinned htmx (static/README.md) that refreshes each page's live region.
// Everything is embedded in the binary: the console works with no internet.
//
// Security model (docs/FLEET.md, "Web console"):
//   - Login with the fleet's API token; a session is a random 256-bit ID in
//     a cookie that is HttpOnly, SameSite=Strict, Path=/console/, and Secure
//     when the request came over TLS (or a proxy says X-Forwarded-Proto:
//     https). Sessions live in the fleet's store under the ID's SHA-256
//     (never the ID), so every replica and a restarted trit-fleet know
//     them; they end after IdleTimeout without a page view or MaxAge after
//     login, at logout, and when the operator is disabled or removed.
//   - Every POST carries the session's synchronizer token (a hidden form
//     field, or the X-CSRF-Token header) and must pass Go's
//     http.CrossOriginProtection (Sec-Fetch-Site / Origin); the login form
//     carries a double-submit token of its own. Anything else is refused
//     with 403.
//   - A strict Content-Security-Policy: scripts, styles and images from the
//     console's own origin only, no inline script or style, no framing.
//
// trit-fleet's server (fleet/server) mounts it on the API listener (Mount).
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/web"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// htmxFile is the vendored htmx; static/README.md records its version and
// SHA-256, which console_test.go checks.
const htmxFile = "htmx-2.0.11.min.js"

// Options configure a Console. Zero values mean the defaults.
type Options struct {
	Service *fleet.Service // required
	DB      store.Database // the service's store; required
	// Auth checks sign-ins (operators' tokens and the api.token_file's),
	// shared with the API; nil: one of the console's own over DB with
	// Token and SignIns.
	Auth  *access.Auth
	Token string // the api.token_file's token when Auth is nil; at least access.MinTokenLength bytes
	// SignIns throttles sign-ins per source address and operator when Auth
	// is nil; nil: one of the console's own.
	SignIns *access.SignIns
	Logger  *slog.Logger // default slog.Default()
	// IdleTimeout ends a session after this long without a page view or an
	// action (live refreshes do not count); default 30 minutes.
	IdleTimeout time.Duration
	// MaxAge ends a session this long after login whatever happens;
	// default 12 hours.
	MaxAge time.Duration
	// MaxSessions bounds the sessions kept (in the store, shared by the
	// replicas); a login beyond it ends the least recently used one.
	// Default 256, at most store.MaxConsoleSessions.
	MaxSessions int
	// PageSize is the rows per page of device lists; default 50.
	PageSize int
	// Refresh is how often a page's live region is refreshed; default 2 s.
	Refresh time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Console is the web console's HTTP handler.
type Console struct {
	opt      Options
	auth     *access.Auth
	patterns []string // every route registered (roles_test.go)
	svc      *fleet.Service
	db       store.Database
	log      *slog.Logger
	pages    map[string]*template.Template
	assets   map[string]asset
	sessions *sessions
	cop      *http.CrossOriginProtection
	handler  http.Handler

	infoMu sync.Mutex
	info   map[string]*bundleFacts // bundle hash -> what it holds (bundles never change)
}

// asset is one embedded static file.
type asset struct {
	data    []byte
	version string // first 12 hex digits of its SHA-256, for cache busting
	ctype   string
}

// pageNames are the templates/*.html files that are pages (the others are
// shared: layout.html, parts.html, charts.html).
var pageNames = []string{"login", "overview", "devices", "device", "rollouts", "rollout", "newrollout", "bundles", "labels", "audit", "error"}

// New returns a console for a fleet service.
func New(opt *Options) (*Console, error) {
	o := *opt
	if o.Service == nil || o.DB == nil {
		return nil, errors.New("console: a fleet service and its store are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 12 * time.Hour
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 256
	}
	if o.MaxSessions > store.MaxConsoleSessions {
		return nil, fmt.Errorf("console: MaxSessions %d, at most %d", o.MaxSessions, store.MaxConsoleSessions)
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	if o.Refresh <= 0 {
		o.Refresh = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Auth == nil {
		a, err := access.NewAuth(o.DB, o.Token, o.SignIns, o.Service.Audit(), o.Logger, o.Now)
		if err != nil {
			return nil, err
		}
		o.Auth = a
	}
	c := &Console{opt: o, auth: o.Auth, svc: o.Service, db: o.DB, log: o.Logger, info: map[string]*bundleFacts{},
		sessions: newSessions(o.Logger, o.DB, o.IdleTimeout, o.MaxAge, o.MaxSessions, o.Now)}
	var err error
	if c.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if c.pages, err = c.parseTemplates(); err != nil {
		return nil, err
	}
	c.cop = http.NewCrossOriginProtection()
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.log.Warn("console: cross-origin request refused", "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"))
		c.renderError(w, r, http.StatusForbidden, "This request came from another site and was refused.")
	}))
	h, err := c.routes()
	if err != nil {
		return nil, err
	}
	c.handler = c.cop.Handler(h)
	return c, nil
}

// routes registers every page and action with its rule from the fleet's
// route-by-role table (web.RouteRule): public ones as they are, pages
// behind authed, posts behind action. A route without a rule is an error.
func (c *Console) routes() (http.Handler, error) {
	mux := http.NewServeMux()
	var missing []error
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request, sessionView), public http.HandlerFunc) {
		rule, err := web.RouteRule(pattern)
		c.patterns = append(c.patterns, pattern)
		switch {
		case err != nil:
			missing = append(missing, err)
		case rule.Perm == access.PermPublic:
			mux.HandleFunc(pattern, public)
		case strings.HasPrefix(pattern, "POST "):
			mux.HandleFunc(pattern, c.action(rule, h))
		default:
			mux.HandleFunc(pattern, c.authed(rule, h))
		}
	}
	page := func(pattern string, h func(http.ResponseWriter, *http.Request, sessionView)) { handle(pattern, h, nil) }
	public := func(pattern string, h http.HandlerFunc) { handle(pattern, nil, h) }
	page("GET /console/{$}", c.overviewPage)
	public("GET /console/login", c.loginPage)
	public("POST /console/login", c.login)
	page("POST /console/logout", c.logout)
	page("GET /console/devices", c.devicesPage)
	page("GET /console/devices/{id}", c.devicePage)
	page("GET /console/rollouts", c.rolloutsPage)
	page("GET /console/new-rollout", c.newRolloutPage)
	page("POST /console/rollouts", c.createRollout)
	page("GET /console/rollouts/{id}", c.rolloutPage)
	page("POST /console/rollouts/{id}/{op}", c.controlRollout)
	page("GET /console/bundles", c.bundlesPage)
	page("GET /console/labels", c.labelsPage)
	page("POST /console/labels", c.label)
	page("GET /console/audit", c.auditPage)
	public("GET /console/static/{name}", c.static)
	public("/console/", func(w http.ResponseWriter, r *http.Request) {
		c.renderError(w, r, http.StatusNotFound, "There is no such page.")
	})
	if len(missing) > 0 {
		return nil, errors.Join(missing...)
	}
	return mux, nil
}

// contentSecurityPolicy allows the console's own scripts, styles, images
// and requests, and nothing else: no inline script or style, no plugin, no
// framing, forms posting only to the console.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Mount serves the console on mux under /console/, with / redirecting to
// it: how trit-fleet's server puts it on the API listener.
func (c *Console) Mount(mux *http.ServeMux) {
	mux.Handle("/console/", c)
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusSeeOther))
}

// ServeHTTP serves the console with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	c.handler.ServeHTTP(w, r)
}

func loadAssets() (map[string]asset, error) {
	out := map[string]asset{}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype := "application/octet-stream"
		switch path.Ext(p) {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		case ".md", "":
			ctype = "text/plain; charset=utf-8"
		}
		out[path.Base(p)] = asset{data: data, version: hex.EncodeToString(sum[:6]), ctype: ctype}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: static files: %w", err)
	}
	return out, nil
}

// static serves an embedded file. With the current version in ?v= it may
// be cached for a year (the URL changes with the content).
func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	a, ok := c.assets[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("v") == a.version {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("Content-Type", a.ctype)
	w.Write(a.data)
}

// assetURL is the versioned URL of a static file.
func (c *Console) assetURL(name string) (string, error) {
	a, ok := c.assets[name]
	if !ok {
		return "", fmt.Errorf("console: no static file %q", name)
	}
	return "/console/static/" + name + "?v=" + a.version, nil
}

func (c *Console) parseTemplates() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(c.funcs()).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", "templates/charts.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(templateFS, "templates/"+name+".html")
		}
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// view is what every page template gets.
type view struct {
	Who     string          // the signed-in operator; "" when logged out
	Role    access.Role     // its role
	Can     map[string]bool // the role's permissions (access.Perm) for the template
	Title   string
	Nav     string // the navigation entry to mark current
	CSRF    string // the session's synchronizer token; "" when logged out
	Fleet   string
	Version string
	Flash   *flash
	LiveURL string // the live region's refresh URL; "" for none
	Refresh int    // seconds between live refreshes
	Data    any
}

// flash is a one-time message shown on the next page.
type flash struct {
	Error bool
	Text  string
}

// render writes page name with data: the whole page, or, when the request
// asks for ?part=live (or ?part=controls), only the page's live region (or
// its controls).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	if s, ok, _ := c.sessions.lookup(r, false); ok && v.CSRF != "" {
		v.Who, v.Role, v.Can = s.p.Name, s.p.Role, map[string]bool{}
		for _, p := range []access.Perm{access.PermRead, access.PermRollout, access.PermDevice, access.PermPublish, access.PermTrain, access.PermAudit, access.PermOperators} {
			v.Can[string(p)] = s.p.Role.Can(p)
		}
	}
	v.Fleet = c.svc.Topics().Fleet()
	v.Version = buildinfo.Version
	v.Refresh = max(1, int(c.opt.Refresh/time.Second))
	tmpl := "layout"
	switch part := r.URL.Query().Get("part"); {
	case part == "live" && v.LiveURL != "":
		tmpl = "livewrap"
	case part == "controls" && c.pages[name].Lookup("controlswrap") != nil:
		tmpl = "controlswrap"
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, tmpl, v); err != nil {
		c.log.Error("console: rendering a page failed", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderError shows a page with an error message and status.
func (c *Console) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := &view{Title: http.StatusText(status), Data: msg}
	if s, ok, _ := c.sessions.lookup(r, false); ok {
		v.CSRF = s.csrf
	}
	c.render(w, r, status, "error", v)
}

// fail reports an error from the fleet service: 404 for what does not
// exist, 500 (logged) for the rest.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, fault.ErrNotFound) {
		c.renderError(w, r, http.StatusNotFound, trimFleet(err.Error()))
		return
	}
	if errors.Is(err, fault.ErrBadRequest) {
		c.renderError(w, r, http.StatusBadRequest, trimFleet(err.Error()))
		return
	}
	c.log.Error("console: request failed", "method", r.Method, "path", bounded(r.URL.Path), "err", err)
	c.renderError(w, r, http.StatusInternalServerError, "trit-fleet could not answer: "+trimFleet(err.Error()))
}

// trimFleet drops the "fleet: " package prefix from an error message shown
// to an operator.
func trimFleet(s string) string { return strings.TrimPrefix(s, "fleet: ") }

// bounded shortens a string for a log line.
func bounded(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
