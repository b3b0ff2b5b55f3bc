package e2e

import (
	"io"

	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle/bundletest"
)

// calibrated sets spec's fingerprint to rows' firing rates and a
// one-bin calibration whose maximum novelty is the rows' 99th percentile,
// as training does on its validation rows (a 1% unknown target): the
// model reports unknown the windows unlike rows.
func calibrated(t *testing.T, spec *inference.ModelSpec, rows [][]float32) {
	t.Helper()
	fingerprint(t, spec, rows)
	m, err := inference.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	nov := make([]uint32, len(rows))
	for i, r := range rows {
		o, err := m.PredictOutcome(nil, nil, r, inference.Thresholds{})
		if err != nil {
			t.Fatal(err)
		}
		nov[i] = o.Novelty
	}
	slices.Sort(nov)
	spec.Calibration = &inference.Calibration{Confidence: []uint8{230}, MaxNovelty: max(1, nov[len(nov)*99/100-1])}
}

// unknownShare is the share of rows spec reports unknown.
func unknownShare(t *testing.T, spec *inference.ModelSpec, rows [][]float32) float64 {
	m, err := inference.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if o, _ := m.PredictOutcome(nil, nil, r, m.Thresholds()); o.Unknown {
			n++
		}
	}
	return float64(n) / float64(len(rows))
}

// TestUnknownAlert: two agents run a calibrated model (threshold bits on
// the three features, novelty threshold at the training rows' 99th
// percentile). One replays inputs like the training rows, in a loop: its
// unknown rate stays near the 1% target and it is never alerted. The
// other replays a few of them and then noise at the top of every
// feature's range: its unknown rate rises past the fleet's alert
// threshold ([alerts] unknown = 0.2) within a telemetry interval and the
// fleet reports it (inventory, health history, the console's health charts on
// the device page, the rollout page and the overview, /metrics). Then a shadow candidate whose
// every window is unknown is stopped on the steady device by the
// unknown-rate gate before it is activated.
func TestUnknownAlert(t *testing.T) {
	const threshold = 0.2
	w := newWorld(t)
	w.startFleetConf(func(c string) string { return c + "unknown = 0.2\n" })
	rng := rand.New(rand.NewPCG(9, 10))
	train := mixRows(rng, 2000, -1, 1)
	steadyFile, shiftFile := filepath.Join(w.dir, "steady.csv"), filepath.Join(w.dir, "shift.csv")
	writeRows(t, steadyFile, train[:400])
	noise := mixRows(rng, 5000, 0.8, 1)
	writeRows(t, shiftFile, append(mixRows(rng, 150, -1, 1), noise...))
	spec, err := bundletest.ThresholdSpec(len(features), 8, []string{"normal", "fault"})
	if err != nil {
		t.Fatal(err)
	}
	spec.Features = features
	calibrated(t, spec, train)
	steadyShare, noiseShare := unknownShare(t, spec, train[:400]), unknownShare(t, spec, noise)
	t.Logf("offline: %.1f%% of the steady rows and %.1f%% of the noise rows are unknown (novelty above %d)", 100*steadyShare, 100*noiseShare, spec.Calibration.MaxNovelty)
	if steadyShare > 0.05 || noiseShare < 0.9 {
		t.Fatalf("the model does not separate the noise: %.3f steady, %.3f noise", steadyShare, noiseShare)
	}

	steady := w.startAgentsTuned("steady", 1, nil, func(a *agentTuning) {
		a.replay, a.rate, a.telemetry = steadyFile, 50, time.Second
	})[0]
	shift := w.startAgentsTuned("shift", 1, nil, func(a *agentTuning) {
		a.replay, a.rate, a.telemetry, a.once = shiftFile, 50, time.Second, true
	})[0]
	w.waitKnown([]string{steady, shift})
	h := w.publish(w.signed(spec, "vib", 1))
	// No confidence gate here: the noisy device turns uncertain on
	// purpose (TestConfidenceGateStopsCanary is the gate's test).
	w.rollout(api.RolloutRequest{ID: "cal", Bundle: h, Devices: []string{steady, shift}, NoGate: true})
	if r := w.waitRollout("cal", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("rollout %s: %v", r.State, r.Counts())
	}
	var steadyUnknown, steadyWindows uint64
	var steadyMax float64
	w.waitInventory("the noisy device uncertain", 90*time.Second, func(ds map[string]inventory.Device) bool {
		if d := ds[steady]; d.Confidence != nil {
			u, _ := d.UnknownRate()
			steadyMax = max(steadyMax, u)
			steadyUnknown += d.Confidence.Unknown
			for _, n := range d.Confidence.Histogram {
				steadyWindows += n
			}
			if d.Uncertain {
				t.Fatalf("the steady device is reported uncertain: %+v", d.Confidence)
			}
		}
		return ds[shift].Uncertain && steadyWindows > 0
	})
	d := w.devices()[shift]
	u, _ := d.UnknownRate()
	t.Logf("unknown: steady device at most %.1f%% of an interval (%d unknown of %d windows, summed over the inventory polls); noisy device %.1f%% when alerted (threshold %g)",
		100*steadyMax, steadyUnknown, steadyWindows, 100*u, threshold)
	if d.Confidence.Novel != d.Confidence.Unknown || d.Confidence.MaxNovelty != spec.Calibration.MaxNovelty {
		t.Errorf("noisy device's report %+v: want every unknown window novel, under the bundle's threshold", d.Confidence)
	}
	// The fleet's health history holds the change: the noisy device's
	// latest minute counts the unknown windows of the interval that
	// raised the alert (≥ 20% of 50), the steady device's stays near 0.
	// (The test lasts seconds, so before and after the switch share a
	// minute.)
	var hist, steadyHist api.DeviceHealth
	w.call("GET", "/v1/devices/"+shift+"/health", nil, &hist)
	w.call("GET", "/v1/devices/"+steady+"/health", nil, &steadyHist)
	if len(hist.Minutes) == 0 || len(hist.Hours) == 0 || len(steadyHist.Minutes) == 0 {
		t.Fatalf("health histories: %+v, %+v", hist, steadyHist)
	}
	last, steadyLast := hist.Minutes[len(hist.Minutes)-1], steadyHist.Minutes[len(steadyHist.Minutes)-1]
	u, _ = last.UnknownRate()
	su, _ := steadyLast.UnknownRate()
	t.Logf("health history, latest minute: noisy device %d of %d windows unknown, steady device %d of %d", last.Unknown, last.Windows, steadyLast.Unknown, steadyLast.Windows)
	if last.Unknown < 10 || u < su+0.1 || su > 0.05 {
		t.Errorf("latest minutes: noisy %+v, steady %+v", last, steadyLast)
	}
	// The console's charts draw it: the noisy device's page, the rollout
	// page (both devices) and the overview (the fleet) end on a minute
	// with unknown windows; the steady device's page near none.
	pages := w.consolePages("/console/devices/"+shift, "/console/devices/"+steady, "/console/rollouts/cal", "/console/")
	latest := regexp.MustCompile(`at the latest minute reported, unknown, % of windows (\d+)`)
	for i, path := range []string{"/console/devices/" + shift, "/console/devices/" + steady, "/console/rollouts/cal", "/console/"} {
		m := latest.FindStringSubmatch(pages[i])
		if m == nil || !strings.Contains(pages[i], `<polyline class="l-failed"`) {
			t.Errorf("%s draws no model health chart", path)
			continue
		}
		pct, _ := strconv.Atoi(m[1])
		t.Logf("%s: health chart, latest minute %d%% unknown", path, pct)
		// The noisy device's minute holds ≥ 10% unknown windows (above),
		// the groups' at least half of that (two devices at one rate).
		if want := map[int]bool{0: pct >= 10, 1: pct <= 5, 2: pct >= 5, 3: pct >= 5}[i]; !want {
			t.Errorf("%s: the chart's latest minute is %d%% unknown", path, pct)
		}
	}
	m := w.rawCall("/metrics")
	if !strings.Contains(m, "trit_fleet_devices_uncertain 1") || !strings.Contains(m, "trit_fleet_unknown_alerts_total 1") || !strings.Contains(m, "trit_fleet_unknown_share ") {
		t.Errorf("/metrics does not report the unknown windows:\n%s", grepLines(m, "unknown"))
	}

	// A candidate that reports every window unknown (novelty threshold 1)
	// is stopped by the unknown-rate gate on the steady device.
	cand := *spec
	cal := *spec.Calibration
	cal.MaxNovelty = 1
	cand.Calibration = &cal
	bad := w.publish(w.signed(&cand, "vib", 2))
	w.rollout(api.RolloutRequest{ID: "bad", Bundle: bad, Devices: []string{steady},
		Shadow: &api.ShadowPolicy{MinWindows: 50, MaxUnknownIncrease: 0.1}})
	activated := func(*rollout.Rollout) {
		if d := w.devices()[steady]; d.Model != nil && d.Model.Bundle == bad {
			t.Fatal("the steady device activated the candidate")
		}
	}
	r := w.waitRollout("bad", 2*time.Minute, activated)
	if r.State != api.RolloutAborted || !strings.Contains(r.Reason, "exceeds the active model's") {
		t.Fatalf("candidate's rollout %s (%s), want aborted by the unknown gate", r.State, r.Reason)
	}
	t.Logf("gate: %s", r.Reason)
}

// consolePages signs in to the console with the fleet's API token and
// returns the pages at paths.
func (w *world) consolePages(paths ...string) []string {
	w.t.Helper()
	c := w.consoleClient(w.api)
	get := func(path string) string {
		resp, err := c.Get("http://" + w.api + path)
		if err != nil {
			w.t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			w.t.Fatalf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		return string(raw)
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = get(p)
	}
	return out
}

// consoleClient signs in to the console at api with the fleet's API token,
// as a browser does (the login form's double-submit token, then the
// session cookie), and returns the client holding the cookie. Cookies are
// per host, not per port: the client sends it to every replica on
// 127.0.0.1.
func (w *world) consoleClient(api string) *http.Client {
	w.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + api + "/console/login")
	if err != nil {
		w.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(raw))
	if m == nil {
		w.t.Fatalf("the console's login page on %s has no form token (HTTP %d)", api, resp.StatusCode)
	}
	resp, err = c.PostForm("http://"+api+"/console/login", url.Values{"csrf": {m[1]}, "token": {w.token}})
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path == "/console/login" {
		w.t.Fatalf("signing in to the console on %s: HTTP %d, still on the login page", api, resp.StatusCode)
	}
	return c
}

// TestConfidenceGateStopsCanary: with real agents and without --shadow, a
// calibrated model that answers every window "unknown" (issue 38: it
// completed as "3/3 succeeded", health "ok") is stopped at its canary by
// the confidence gate every rollout has by default and the canary is
// rolled back to the model it ran; the other devices never get it. While
// the canary runs it, the overview alerts for the uncertain device, and
// once it is stopped, for the aborted rollout, its reason the gate's —
// both seen in a real Chromium.
func TestConfidenceGateStopsCanary(t *testing.T) {
	w := newWorld(t)
	w.startFleetConf(func(c string) string { return c + "unknown = 0.2\n" })
	rng := rand.New(rand.NewPCG(11, 12))
	train := mixRows(rng, 2000, -1, 1)
	steadyFile := filepath.Join(w.dir, "steady.csv")
	writeRows(t, steadyFile, train[:400])
	spec, err := bundletest.ThresholdSpec(len(features), 8, []string{"normal", "fault"})
	if err != nil {
		t.Fatal(err)
	}
	spec.Features = features
	calibrated(t, spec, train)
	ids := w.startAgentsTuned("gate", 3, nil, func(a *agentTuning) {
		a.replay, a.rate, a.telemetry = steadyFile, 50, time.Second
	})
	w.waitKnown(ids)
	good := w.publish(w.signed(spec, "vib", 1))
	w.rollout(api.RolloutRequest{ID: "good", Bundle: good, Devices: ids})
	r := w.waitRollout("good", 2*time.Minute, nil)
	if r.State != api.RolloutCompleted || r.Successes != 3 || r.Gate == nil {
		t.Fatalf("the good model: %s (%s) %v, gate %+v", r.State, r.Reason, r.Counts(), r.Gate)
	}
	t.Logf("the good model passed: %s", r.Devices[ids[0]].Reason)
	// A minute of the good model's windows is the canary's baseline.
	w.waitInventory("the good model's windows", time.Minute, func(ds map[string]inventory.Device) bool {
		d := ds[ids[0]]
		return d.Model != nil && d.Model.Bundle == good && d.Confidence != nil
	})

	cand := *spec
	cal := *spec.Calibration
	cal.MaxNovelty = 1 // every window is novel: unknown
	cand.Calibration = &cal
	bad := w.publish(w.signed(&cand, "vib", 2))
	b := newBrowser(t, "http://"+w.api)
	b.open("/console/login")
	b.do(chromedp.SendKeys(chromedp.ID("token"), w.token+kb.Enter))
	b.waitPath("/console/")

	// 1,500 windows before it is judged (30 s at 50 a second): time to
	// see the canary uncertain.
	w.rollout(api.RolloutRequest{ID: "bad", Bundle: bad, Devices: ids, Pace: api.Pace{Phases: []api.Phase{{Count: 1}, {Percent: 100}}},
		Gate: &api.ConfidenceGate{MaxUnknownIncrease: 0.1, MaxConfidenceDrop: 0.2, MinWindows: 1500}})
	canary := ""
	w.waitInventory("the canary uncertain under the new model", time.Minute, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			if d := ds[id]; d.Model != nil && d.Model.Bundle == bad && d.Uncertain {
				canary = id
				return true
			}
		}
		return false
	})
	var mid rollout.Rollout
	w.call("GET", "/v1/rollouts/bad", nil, &mid)
	if mid.Devices[canary].State != api.DeviceVerifying || mid.State.Done() {
		t.Fatalf("the canary runs it: rollout %s, canary %s (%s)", mid.State, mid.Devices[canary].State, mid.Devices[canary].Reason)
	}
	b.open("/console/")
	b.waitText("main", "1 device is past the unknown alert threshold", canary)
	b.open("/console/devices")
	b.waitText("main", "uncertain")

	noOther := func(*rollout.Rollout) {
		for _, id := range ids {
			if d := w.devices()[id]; id != canary && d.Model != nil && d.Model.Bundle == bad {
				t.Fatalf("%s, not the canary, activated the model", id)
			}
		}
	}
	r = w.waitRollout("bad", 3*time.Minute, noOther)
	if r.State != api.RolloutAborted || !strings.Contains(r.Reason, "confidence gate failed: unknown 100.0% exceeds the active model's") ||
		r.Devices[canary].State != api.DeviceGateFailed || r.Counts()[api.DevicePending] != 2 {
		t.Fatalf("the bad model's rollout: %s (%s) %v", r.State, r.Reason, r.Counts())
	}
	t.Logf("stopped at the canary: %s", r.Reason)
	for deadline := time.Now().Add(time.Minute); r.AutoRollback == ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no automatic rollback")
		}
		w.call("GET", "/v1/rollouts/bad", nil, r)
	}
	back := w.waitRollout(r.AutoRollback, 2*time.Minute, noOther)
	if back.State != api.RolloutCompleted || !back.Rollback || back.Bundle != good || len(back.Order) != 1 || back.Order[0] != canary {
		t.Fatalf("the automatic rollback %s: %s (%s), bundle %.12s, devices %v", back.ID, back.State, back.Reason, back.Bundle, back.Order)
	}
	w.waitInventory("the canary back on the good model", time.Minute, func(ds map[string]inventory.Device) bool {
		d := ds[canary]
		return d.Model != nil && d.Model.Bundle == good
	})
	b.open("/console/")
	b.waitText("main", "Rollout bad aborted: confidence gate failed: unknown 100.0%")
	b.open("/console/rollouts/bad")
	b.waitText("main", "Confidence gate", "gate-failed", "Automatic rollback: "+back.ID)
	b.checkNoErrors()
	var audit []api.AuditEntry
	w.call("GET", "/v1/audit?action=rollout.auto-rollback", nil, &audit)
	if len(audit) != 1 || audit[0].Who != "fleet" || audit[0].Object != "rollout/"+back.ID {
		t.Fatalf("the automatic rollback's audit record: %+v", audit)
	}
}
