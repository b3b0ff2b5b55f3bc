package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/api"
	_ "github.com/trit-iot/trit/fleet/console"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/inference/bundle/bundletest" // serve the web console, as trit-fleet does
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Hostile strings a compromised gateway can put in what it reports:
// labels, hardware, sensor names and errors, model IDs, class names and
// job reasons all reach the console's pages (HTML text, attributes, URLs
// and SVG text). Each would set window.__pwned if it ever ran.
const (
	hostileScript = `<script>window.__pwned="script"</script>`
	hostileAttr   = `"><img src=x onerror="window.__pwned='img'">`
	hostileQuote  = `' autofocus onfocus='window.__pwned="quote"`
	hostileSVG    = `</text><svg onload="window.__pwned='svg'"><text>`
	hostileURL    = `javascript:window.__pwned='url'`
	hostileID     = `"><script>window.__pwned="id"</script>`
)

// seedHostileRecord writes, before trit-fleet starts, an inventory record
// whose device ID is markup. The wire protocol refuses such IDs, so only a
// database from elsewhere (an old version, a restore, a hand edit) can
// hold one; the console must still show it as text.
func seedHostileRecord(t *testing.T, w *world) {
	t.Helper()
	path := filepath.Join(w.dir, "fleet", "fleet.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := api.Device{ID: hostileID, Labels: map[string]string{"site": "archive"}, LastSeen: time.Now().Add(-time.Hour)}
	if err := db.Update(func(tx store.Tx) error { return tx.Put(store.FleetDevices, d.ID, &d) }); err != nil {
		t.Fatal(err)
	}
}

// TestConsole drives the web console in a real headless Chromium against a
// real trit-fleet, real agents and a real Mosquitto: sign in, watch the
// agents appear, create a two-phase rollout from the UI and watch it
// complete without a reload, pause, resume and abort another, roll back;
// hostile strings from a device show as text and run nothing; a POST
// without the CSRF token is refused; every control of every page is
// reached by Tab and every input has a label; the browser logs no error.
// (The screenshots in docs/console come from `make screenshots`, over a
// seeded fleet: fleet/console TestScreenshots.)
func TestConsole(t *testing.T) {
	w := newWorld(t)
	seedHostileRecord(t, w)
	w.startFleet()
	b := newBrowser(t, "http://"+w.api)

	// Sign in, by keyboard, from a deep link.
	b.open("/console/devices")
	if got := b.path(); got != "/console/login" {
		t.Fatalf("a page without a session went to %s, want the login page", got)
	}
	b.checkAccessible("login")
	b.do(chromedp.SendKeys(chromedp.ID("token"), w.token+kb.Enter))
	b.waitPath("/console/devices")

	// Agents appear in the open page by themselves. One of them (spare)
	// is stopped at once: it stays in the inventory, offline, and never
	// answers a deployment command.
	b.markPage()
	ids := w.startAgents("gw", 3, map[string]string{"site": "north"})
	spare := w.startAgents("spare", 1, map[string]string{"site": "south"})[0]
	b.waitText("#live", append(ids, spare, hostileID)...)
	b.checkNoReload()
	w.stopAgent(spare)
	b.checkAccessible("devices")
	// Keyboard focus survives the live refreshes.
	b.eval(`window.__swaps = 0; document.body.addEventListener("htmx:afterSwap", () => window.__swaps++); document.getElementById("dev-gw-001").focus()`)
	b.until("two live refreshes", `window.__swaps >= 2`)
	if got := b.eval(`document.activeElement.id`); got != "dev-gw-001" {
		t.Fatalf("after a live refresh the focus is on %q, want the link it was on", got)
	}

	// Bundles: release 1 everywhere (through the API), release 2 from the UI.
	h1, h2 := w.publish(w.bundle("vib", 1)), w.publish(trainedBundle(w, "vib", 2))
	w.rollout(api.RolloutRequest{ID: "base", Bundle: h1, Selector: map[string]string{"site": "north"}})
	if r := w.waitRollout("base", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("base rollout %s: %v", r.State, r.Counts())
	}
	b.open("/console/bundles")
	var infos []api.BundleInfo
	w.call("GET", "/v1/bundles", nil, &infos)
	b.waitText("main", "vib", infos[0].KeyID, short(h1), short(h2), "balanced accuracy 96.40%", "1200 training rows", "normal 900, fault 300")
	b.checkAccessible("bundles")
	// Each bundle's full hash, with a button that copies it
	// (static/console.js): it answers, and the page logs no error.
	b.waitText("main", h1, h2)
	b.eval(`document.body.addEventListener("htmx:beforeRequest", e => e.preventDefault())`) // no refresh under the click
	b.do(chromedp.Click(chromedp.CSS(`button[data-copy="`+h2+`"]`), chromedp.NodeVisible))
	b.until("the copy button answered", `["Copied", "Press Ctrl+C"].includes(document.querySelector('button[data-copy="`+h2+`"]').textContent)`)
	b.do(chromedp.Reload())

	// A two-phase rollout from the UI, watched until it completes.
	b.click(`a[href="/console/new-rollout?bundle=` + h2 + `"]`)
	b.waitPath("/console/new-rollout")
	if got := b.eval(`document.getElementById("r-bundle").value`); got != h2 {
		t.Fatalf("the form came with bundle %v selected, want %s", got, h2)
	}
	b.checkAccessible("new rollout")
	b.fill("#r-id", "ui-two-phase")
	b.fill("#r-selector", "site=north")
	b.fill("#r-phases", "1, 100%")
	b.click(`form.rollout-form button[type=submit]`)
	b.waitPath("/console/rollouts/ui-two-phase")
	b.markPage()
	b.waitText("#live", "completed", "3 of 3 succeeded")
	b.waitGone(`#controls form[action$="/pause"]`) // the controls followed the state: nothing left to pause…
	b.waitText("#controls", "Roll back")           // …but a rollback
	b.checkNoReload()
	r := w.waitRollout("ui-two-phase", 5*time.Second, nil)
	if r.State != api.RolloutCompleted || r.Successes != 3 || len(r.Pace.Phases) != 2 || r.Pace.Phases[0].Count != 1 || r.Pace.Phases[1].Percent != 100 {
		t.Fatalf("rollout from the UI: %s, %d successes, pace %+v", r.State, r.Successes, r.Pace)
	}
	if n := b.eval(`document.querySelectorAll("#live polyline").length`); n != float64(3) {
		t.Errorf("progress chart: %v lines, want 3", n)
	}

	// Another rollout, to the device that never answers: pause, resume, abort.
	b.open("/console/new-rollout?bundle=" + h2)
	b.fill("#r-id", "ui-abort")
	b.fill("#r-devices", spare)
	b.fill("#r-phases", "")
	b.click(`form.rollout-form button[type=submit]`)
	b.waitPath("/console/rollouts/ui-abort")
	b.waitText("#live", "notified")
	b.checkAccessible("rollout")

	// A POST without the page's CSRF token is refused, and changes nothing.
	status := b.eval(`fetch(location.pathname + "/pause", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "reason=csrf"}).then(r => r.status)`)
	if status != float64(403) {
		t.Fatalf("a POST without the CSRF token got HTTP %v, want 403", status)
	}
	b.expectLogged("/console/rollouts/ui-abort/pause", "403")
	var ro rollout.Rollout
	w.call("GET", "/v1/rollouts/ui-abort", nil, &ro)
	if ro.State != api.RolloutRunning {
		t.Fatalf("after the refused POST the rollout is %s", ro.State)
	}

	b.confirm("pause", "pause-reason", "checking the canary")
	b.waitText("main", "Rollout ui-abort paused.", "checking the canary")
	b.confirm("resume", "", "")
	b.waitText("main", "Rollout ui-abort resumed.")
	b.confirm("abort", "abort-reason", "stopped from the browser")
	b.waitText("main", "Rollout ui-abort aborted.", "stopped from the browser")
	w.call("GET", "/v1/rollouts/ui-abort", nil, &ro)
	if ro.State != api.RolloutAborted || ro.Reason != "stopped from the browser" {
		t.Fatalf("aborted from the UI: %s (%s)", ro.State, ro.Reason)
	}

	// Roll back the two-phase rollout: release 1 again everywhere.
	b.open("/console/rollouts/ui-two-phase")
	b.confirm("rollback", "", "")
	b.waitPath("/console/rollouts/ui-two-phase-rollback")
	b.waitText("#live", "completed", "3 of 3 succeeded")
	w.call("GET", "/v1/rollouts/ui-two-phase-rollback", nil, &ro)
	if !ro.Rollback || ro.Release != 1 || ro.State != api.RolloutCompleted {
		t.Fatalf("rollback from the UI: rollback=%v release %d %s", ro.Rollback, ro.Release, ro.State)
	}
	w.waitInventory("release 1 again on every agent", 30*time.Second, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			if m := ds[id].Model; m == nil || m.Release != 1 {
				return false
			}
		}
		return true
	})

	// The other pages, with everything that happened.
	b.open("/console/")
	b.waitText("#live", "3 online", "2 offline", "Rollout ui-abort aborted: stopped from the browser")
	b.checkAccessible("overview")
	b.open("/console/rollouts")
	b.waitText("#live", "ui-two-phase-rollback", "ui-abort", "base")
	b.checkAccessible("rollouts")
	b.open("/console/devices/" + ids[0])
	b.waitText("#live", "ui-two-phase-rollback", "ui-two-phase", "base")
	b.checkAccessible("device")
	b.open("/console/devices?selector=" + url.QueryEscape("site=north"))
	b.waitText("#live", "Devices 1–3 of 3 matching")

	// A device's hostile strings are text, wherever they land: a gateway
	// that lies in everything it reports…
	impostor(t, w)
	b.open("/console/devices")
	b.waitText("#live", "x-evil")
	b.checkHostile("devices", hostileID, hostileScript, hostileAttr, hostileQuote, hostileURL, hostileSVG)
	b.open("/console/devices/x-evil")
	b.waitText("#live", hostileSVG) // the last message it sent
	b.checkHostile("device page", hostileScript, hostileAttr, hostileQuote, hostileURL, hostileSVG)
	b.open("/console/")
	b.checkHostile("overview", hostileScript, hostileSVG)
	// …and a record whose very ID is markup.
	b.open("/console/devices")
	b.click(`a[href^="/console/devices/%22%3E"]`)
	b.waitText("h1", hostileID)
	b.checkHostile("device page of "+hostileID, hostileID)

	// Sign out: the session is gone.
	b.click(`form.logout button`)
	b.waitPath("/console/login")
	b.open("/console/")
	if got := b.path(); got != "/console/login" {
		t.Fatalf("after signing out the overview showed %s", got)
	}
	b.checkNoErrors()
}

// impostor publishes, as device x-evil, a state, telemetry and a job event
// full of hostile strings, straight to the broker (as a compromised
// gateway could). It never answers deployment commands.
func impostor(t *testing.T, w *world) {
	t.Helper()
	topics, err := wire.NewTopics(fleetName)
	if err != nil {
		t.Fatal(err)
	}
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(w.broker.URL()).SetClientID("x-evil"))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("impostor: connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	hash := strings.Repeat("ab", 32)
	msgs := []struct {
		topic    string
		retained bool
		m        interface{ Marshal() ([]byte, error) }
	}{
		{topics.State("x-evil"), true, &wire.State{Device: "x-evil", Session: 1, Online: true, Time: time.Now().Unix(),
			AgentVersion: hostileQuote, Hardware: hostileAttr, Health: hostileScript,
			Labels:  map[string]string{"site": "lab", "note": hostileScript, "link": hostileURL, hostileAttr: hostileQuote},
			Model:   &wire.ModelRef{ID: hostileScript, Release: 1, Bundle: hash},
			Sensors: []wire.SensorHealth{{Sensor: hostileAttr, State: hostileQuote, LastError: hostileScript, Failures: 2}}}},
		{topics.Telemetry("x-evil"), false, &wire.Telemetry{Device: "x-evil", Session: 1, Seq: 1, From: time.Now().UnixMilli() - 1000, To: time.Now().UnixMilli(),
			Predictions: 9, Counts: map[string]uint64{hostileSVG: 5, hostileScript: 3, hostileURL: 1}, Last: &wire.Prediction{Class: hostileAttr, Time: time.Now().UnixMilli()}}},
		{topics.Events("x-evil"), false, &wire.Event{Device: "x-evil", Rollout: "x-probe", Seq: 1, State: wire.JobFailed, Code: hostileQuote, Reason: hostileSVG, Time: time.Now().UnixMilli()}},
	}
	for _, m := range msgs {
		raw, err := m.m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if tok := c.Publish(m.topic, 1, m.retained, raw); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("impostor: publish %s: %v", m.topic, tok.Error())
		}
	}
}

func short(hash string) string { return hash[:11] }

// trainedBundle is w.bundle with the training figures tritctl train
// records in a bundle's info section.
func trainedBundle(w *world, id string, release uint64) []byte {
	w.t.Helper()
	spec, err := bundletest.Spec(release, len(features), 256, []string{"normal", "fault"})
	if err != nil {
		w.t.Fatal(err)
	}
	spec.Features = features
	raw, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: id, Release: release, CreatedAt: time.Now().Add(-time.Minute)},
		Compat: bundle.Compat{Features: features, MinAgentVersion: "0.0.0"},
		Spec:   spec,
		Info: map[string]string{bundle.InfoBalanced: "96.40", bundle.InfoRows: "1200", bundle.InfoClassCounts: "900,300",
			bundle.InfoValidation: "time-ordered 20% holdout", bundle.InfoStructure: "thresholds=0 projection=0 p=256 weights=ternary"},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	signed, err := bundle.Sign(raw, w.releasePriv)
	if err != nil {
		w.t.Fatal(err)
	}
	return signed
}

// browser is one headless Chromium tab on the console, recording every
// error the page logs.
type browser struct {
	t    *testing.T
	base string
	ctx  context.Context

	mu       sync.Mutex
	errs     []string
	expected []string // substrings of log entries a step caused on purpose
}

// chromiumPath finds the browser: $TRIT_CHROMIUM, or Debian's chromium.
// A missing browser fails the test (make test-deps installs it).
func chromiumPath(t *testing.T) string {
	if p := os.Getenv("TRIT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: install it with `sudo apt-get install chromium` (or run `make test-deps` as root), " +
		"or set TRIT_CHROMIUM; the browser tests never skip")
	return ""
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	b := &browser{t: t, base: base}
	// The flags keep the browser off the network (the machine may have
	// none) and out of the way: no sandbox (tests run as root in CI), no
	// GPU, no /dev/shm, no background services, a throwaway profile.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	// Cleanups run last-in first-out: the browser goes before the fleet.
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	b.ctx = ctx
	b.do(chromedp.EmulateViewport(1280, 900))
	return b
}

// listen records what the page logs as an error: uncaught exceptions,
// console.error and console.assert, and browser log entries of level error
// (failed loads, CSP violations).
func (b *browser) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if ex := e.ExceptionDetails.Exception; ex != nil {
			msg += " " + ex.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		msg = "console." + string(e.Type) + ":"
		for _, a := range e.Args {
			msg += " " + string(a.Value) + a.Description
		}
	case *log.EventEntryAdded:
		if e.Entry.Level != log.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("log (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.errs = append(b.errs, msg)
	b.mu.Unlock()
}

// expectLogged marks the error entries containing every one of parts as
// caused on purpose.
func (b *browser) expectLogged(parts ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, strings.Join(parts, "\x00"))
}

// checkNoErrors fails on any error the page logged that no step expected.
func (b *browser) checkNoErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errs {
		ok := false
		for _, x := range b.expected {
			all := true
			for _, p := range strings.Split(x, "\x00") {
				all = all && strings.Contains(e, p)
			}
			ok = ok || all
		}
		if !ok {
			b.t.Errorf("the browser logged an error: %s", e)
		}
	}
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) and returns
// its JSON value.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			b.t.Fatalf("evaluating %s: %v", expr, err)
		}
	}
	return v
}

// open loads a console page and waits for it.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base + path))
}

func (b *browser) path() string {
	b.t.Helper()
	p, _ := b.eval(`location.pathname`).(string)
	return p
}

// until polls cond (a JavaScript expression) until it is true; the
// console's CSP forbids eval, so the polling is done from here, not with
// chromedp.Poll.
func (b *browser) until(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](cond))
		if err == nil && string(raw) == "true" {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			b.t.Fatalf("%s: not reached within a minute (page %s):\n%s", what, b.path(), text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *browser) waitPath(p string) {
	b.t.Helper()
	q, _ := json.Marshal(p)
	b.until("page "+p, `location.pathname === `+string(q)+` && document.readyState === "complete"`)
}

// waitText waits until the element sel shows every one of texts.
func (b *browser) waitText(sel string, texts ...string) {
	b.t.Helper()
	qs, _ := json.Marshal(sel)
	qt, _ := json.Marshal(texts)
	b.until(fmt.Sprintf("%s showing %q", sel, texts),
		fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && %s.every(t => e.textContent.includes(t)); })()`, qs, qt))
}

func (b *browser) waitGone(sel string) {
	b.t.Helper()
	qs, _ := json.Marshal(sel)
	b.until(sel+" gone", `document.querySelector(`+string(qs)+`) === null`)
}

// click clicks an element and waits for the page that follows.
func (b *browser) click(sel string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))); err != nil {
		b.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// fill replaces an input's value by typing.
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	qs, _ := json.Marshal(sel)
	b.eval(`document.querySelector(` + string(qs) + `).value = ""`)
	if value != "" {
		b.do(chromedp.SendKeys(chromedp.CSS(sel), value))
	}
}

// confirm opens a rollout action's confirmation, types reason into the
// input with that id (if any) and confirms.
func (b *browser) confirm(op, reasonID, reason string) {
	b.t.Helper()
	form := `form[action$="/` + op + `"]`
	b.do(chromedp.Click(chromedp.CSS(`#controls details:has(`+form+`) > summary`), chromedp.NodeVisible))
	if reasonID != "" {
		b.fill("#"+reasonID, reason)
	}
	b.click(form + ` button[type=submit]`)
}

// markPage sets a flag in the page; checkNoReload fails if it is gone (the
// page was loaded again).
func (b *browser) markPage() {
	b.t.Helper()
	b.eval(`window.__sameDocument = true`)
}

func (b *browser) checkNoReload() {
	b.t.Helper()
	if b.eval(`window.__sameDocument === true`) != true {
		b.t.Fatal("the page was reloaded; it should have updated in place")
	}
}

// checkHostile fails if anything a device sent ran or became markup: no
// flag set, no element carrying an event handler, no script but the
// console's own, no image; and the strings are on the page as text.
func (b *browser) checkHostile(where string, texts ...string) {
	b.t.Helper()
	got := b.eval(`(() => {
		const bad = [];
		if (window.__pwned !== undefined) bad.push("window.__pwned = " + window.__pwned);
		for (const e of document.querySelectorAll("*")) {
			for (const a of e.attributes) if (a.name.startsWith("on")) bad.push(e.tagName + " has " + a.name);
		}
		for (const s of document.scripts) if (!/\/console\/static\/(htmx-[0-9.]+\.min|console)\.js\?v=/.test(s.src) || s.text.trim() !== "") bad.push("script " + (s.src || s.text));
		if (document.querySelectorAll("img").length) bad.push("an img element");
		for (const a of document.querySelectorAll("a[href]")) if (!a.href.startsWith(location.origin + "/")) bad.push("link to " + a.href);
		return bad;
	})()`)
	if bad, _ := got.([]any); len(bad) > 0 {
		b.t.Fatalf("%s: hostile device strings became markup: %v", where, bad)
	}
	b.waitText("main", texts...)
}

// checkAccessible checks the page's basics: pressing Tab reaches every
// link, button, input, select and summary (with every confirmation
// opened); every input has a label; every control has a name.
func (b *browser) checkAccessible(page string) {
	b.t.Helper()
	n := b.eval(`(() => {
		// Freeze the live regions: a refresh would replace what is being counted.
		document.body.addEventListener("htmx:beforeRequest", e => e.preventDefault());
		document.body.addEventListener("htmx:beforeSwap", e => { e.detail.shouldSwap = false; });
		for (const d of document.querySelectorAll("details")) d.open = true;
		// Every control, whatever its tabindex says, and anything else made focusable.
		const native = "a[href], button, input:not([type=hidden]), select, textarea, summary";
		const all = [...document.querySelectorAll(native + ", [tabindex]")]
			.filter(e => (e.matches(native) || e.tabIndex >= 0) && !e.disabled && e.getClientRects().length > 0);
		all.forEach((e, i) => { e.dataset.tabk = String(i); });
		window.__tabSeen = new Set();
		document.addEventListener("focusin", e => { if (e.target.dataset && e.target.dataset.tabk) window.__tabSeen.add(e.target.dataset.tabk); });
		// Start sequential navigation at the top of the page.
		const start = document.createElement("span");
		start.tabIndex = -1;
		document.body.prepend(start);
		start.focus();
		return all.length;
	})()`)
	count, _ := n.(float64)
	if count == 0 {
		b.t.Fatalf("%s: no controls found", page)
	}
	for range int(count) {
		b.do(chromedp.KeyEvent(kb.Tab))
	}
	missed := b.eval(`[...document.querySelectorAll("[data-tabk]")].filter(e => !window.__tabSeen.has(e.dataset.tabk)).map(e => e.outerHTML.slice(0, 120))`)
	if m, _ := missed.([]any); len(m) > 0 {
		b.t.Errorf("%s: %d of %v controls not reached by Tab: %v", page, len(m), count, m)
	}
	unlabelled := b.eval(`[...document.querySelectorAll("input:not([type=hidden]), select, textarea")]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
		.map(e => e.outerHTML.slice(0, 120))`)
	if u, _ := unlabelled.([]any); len(u) > 0 {
		b.t.Errorf("%s: inputs without a label: %v", page, u)
	}
	unnamed := b.eval(`[...document.querySelectorAll("a[href], button, summary")]
		.filter(e => !(e.textContent.trim() || e.getAttribute("aria-label")))
		.map(e => e.outerHTML.slice(0, 120))`)
	if u, _ := unnamed.([]any); len(u) > 0 {
		b.t.Errorf("%s: controls without a name: %v", page, u)
	}
	// Leave the page as a person would find it.
	b.do(chromedp.Reload())
}
