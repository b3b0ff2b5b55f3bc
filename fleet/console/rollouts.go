package console

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/fleet/web"
	"github.com/trit-iot/trit/wire"
)

// rolloutRow summarises a rollout for lists.
type rolloutRow struct {
	ID       string
	Model    string
	Release  uint64
	Rollback bool
	State    api.RolloutState
	Reason   string
	Progress progress
	Bar      *stackBar
	Started  time.Time
	Finished time.Time
	Updated  time.Time
}

func newRolloutRow(r *rollout.Rollout) rolloutRow {
	row := rolloutRow{ID: r.ID, Model: r.ModelID, Release: r.Release, Rollback: r.Rollback, State: r.State, Reason: r.Reason,
		Started: r.Started, Finished: r.Finished, Updated: r.Updated}
	for _, id := range r.Order {
		row.Progress.add(r.Devices[id].State)
	}
	row.Bar = row.Progress.bar()
	return row
}

type rolloutsData struct {
	Rows []rolloutRow
}

// rolloutsPage lists every rollout, newest first.
func (c *Console) rolloutsPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	rs, err := c.svc.Rollouts()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data := &rolloutsData{}
	for i := range rs {
		data.Rows = append(data.Rows, newRolloutRow(&rs[i]))
	}
	c.render(w, r, http.StatusOK, "rollouts", &view{Title: "Rollouts", Nav: "rollouts", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/rollouts?part=live", Data: data})
}

// phaseRow is one phase of a phased rollout.
type phaseRow struct {
	N        int
	Target   int // devices notified once it has started (cumulative)
	Spec     string
	Progress progress // its own devices
	Bar      *stackBar
	// Status: done, running, waiting; skipped when the phases before it
	// already reach its target (a small fleet: 5, 50%, 100% of one
	// device); not reached when the rollout ended before it started.
	Status  string
	Class   string // Status as a CSS class name
	Note    string // what the status means, for skipped and not reached
	StartAt time.Time
}

// abortStatus words where a rollout stands against its abort criterion.
// The numbers are the engine's own evaluation (rollout.Rollout.AbortStatus,
// what Step acts on): the page never recounts, so it cannot say "not met"
// for a rollout the engine stopped.
type abortStatus struct {
	Policy   string
	Executed int
	Failed   int
	Pct      float64
	Status   string
	Met      bool
}

func newAbortStatus(r *rollout.Rollout) abortStatus {
	ev := r.AbortStatus()
	if !ev.Enabled() {
		return abortStatus{Policy: "none", Status: "No abort criterion: failures never stop this rollout by themselves."}
	}
	a, need := ev.Policy, ev.Need
	st := abortStatus{Policy: fmt.Sprintf("abort when more than %g%% of finished devices are %s, once at least %s finished",
		a.ThresholdPercent, failureWords(a.On), plural(need, "device has", "devices have")),
		Executed: ev.Executed, Failed: ev.Failed, Pct: ev.Pct, Met: ev.Met}
	switch {
	case len(r.Order) < need:
		// It can never be checked: say so rather than wait for devices
		// that do not exist.
		st.Status = fmt.Sprintf("Not applicable: the rollout has %s, fewer than the %d finished devices the criterion needs before it is checked; failures do not stop it by themselves.",
			plural(len(r.Order), "device", "devices"), need)
	case !ev.Checked && r.State.Done():
		st.Status = fmt.Sprintf("Never checked: %d of the %d finished devices it needs had finished when the rollout ended.", st.Executed, need)
	case !ev.Checked:
		st.Status = fmt.Sprintf("Not checked yet: %d of the %d finished devices it needs.", st.Executed, need)
	case ev.Met:
		st.Status = fmt.Sprintf("Met: %d of %d finished devices %s (%.1f%% > %g%%).", st.Failed, st.Executed, failureWords(a.On), st.Pct, a.ThresholdPercent)
	default:
		st.Status = fmt.Sprintf("Not met: %d of %d finished devices %s (%.1f%% ≤ %g%%).", st.Failed, st.Executed, failureWords(a.On), st.Pct, a.ThresholdPercent)
	}
	return st
}

func failureWords(on string) string {
	switch on {
	case api.FailureAny:
		return "failed, rejected or timed out"
	case api.FailureTimedOut:
		return "timed out"
	}
	return on
}

// deviceProgressRow is one device of a rollout.
type deviceProgressRow struct {
	ID       string
	Phase    int
	State    api.DeviceState
	Attempts int
	Seq      uint64
	Reason   string
	Notified time.Time
	Updated  time.Time
	Shadow   *wire.ShadowReport // the candidate's shadow report, in a shadow rollout
	Verify   *api.VerifyReport  // what the confidence gate judges it on, after its install
}

type rolloutData struct {
	R          *rollout.Rollout
	Row        rolloutRow
	Pace       string
	Phases     []phaseRow
	Abort      abortStatus
	Chart      *lineChart
	Health     *lineChart // its devices' model health by minute; nil without
	HealthNote string     // why there is no health chart, when it is not for want of reports
	Selector   []kv
	Retries    string

	States      []string // state filter choices present
	StateFilter string
	Devices     []deviceProgressRow
	Matched     int
	Page, Pages int
	PrevURL     string
	NextURL     string

	CanPause, CanResume, CanAbort bool
	CanApprove                    bool             // the two-person rule waits, and this operator may approve
	CanEmergency                  bool             // the two-person rule is on and this operator may roll back without it
	Previous                      uint64           // release a rollback would send; 0: none
	History                       []api.AuditEntry // who did what to it, newest first
	RollbackID                    string           // suggested ID for the rollback
}

// rolloutPage shows one rollout: phases, abort criterion, progress chart,
// every device, and the controls.
func (c *Console) rolloutPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	ro, err := c.svc.GetRollout(r.PathValue("id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	if q.Get("part") == "controls" && q.Get("state") == string(ro.State) {
		w.WriteHeader(http.StatusNoContent) // the controls shown still apply
		return
	}
	data := c.rolloutData(ro, r)
	data.CanApprove = ro.Approval.Pending() && !ro.State.Done() && s.p.Name != ro.CreatedBy && !s.p.Machine
	data.CanEmergency = can(s, access.PermEmergency) && c.svc.TwoPerson()
	if !can(s, access.PermRollout) { // the server refuses them anyway
		data.CanPause, data.CanResume, data.CanAbort, data.CanApprove, data.Previous = false, false, false, false, 0
	}
	if q.Get("part") == "" {
		data.History = c.history("rollout/" + ro.ID)
	}
	live := url.Values{"part": {"live"}}
	if data.StateFilter != "" {
		live.Set("device_state", data.StateFilter)
	}
	if data.Page > 1 {
		live.Set("page", strconv.Itoa(data.Page))
	}
	if healthSpan(r) == spanDay {
		live.Set("health", "24h")
	}
	c.render(w, r, http.StatusOK, "rollout", &view{Title: "Rollout " + ro.ID, Nav: "rollouts", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/rollouts/" + url.PathEscape(ro.ID) + "?" + live.Encode(), Data: data})
}

// rolloutDevicesPerPage bounds the device table of a rollout page.
const rolloutDevicesPerPage = 100

func (c *Console) rolloutData(ro *rollout.Rollout, r *http.Request) *rolloutData {
	q := r.URL.Query()
	data := &rolloutData{R: ro, Row: newRolloutRow(ro), Abort: newAbortStatus(ro), Chart: progressChart(ro, c.opt.Now()),
		Selector: sortedLabels(ro.Selector), StateFilter: q.Get("device_state")}
	data.Health, data.HealthNote = c.groupHealth(ro.Order, "the rollout's devices", r)
	phaseOf := make(map[string]int, len(ro.Order))
	switch {
	case len(ro.Pace.Phases) > 0:
		data.Pace = fmt.Sprintf("%d phases; a phase starts when every device of the phases before it has finished", len(ro.Pace.Phases))
		prev := 0
		for i, ph := range ro.Pace.Phases {
			target := ro.PhaseTarget(i)
			row := phaseRow{N: i + 1, Target: target, StartAt: ph.StartAt}
			if ph.Count > 0 {
				row.Spec = "up to " + plural(ph.Count, "device", "devices")
			} else {
				row.Spec = fmt.Sprintf("up to %g%% of devices", ph.Percent)
			}
			notified := 0
			for _, id := range ro.Order[prev:max(prev, target)] {
				st := ro.Devices[id].State
				row.Progress.add(st)
				phaseOf[id] = i + 1
				if st != api.DevicePending {
					notified++
				}
			}
			switch {
			case row.Progress.Total == 0:
				row.Status = "skipped"
				row.Note = fmt.Sprintf("no devices of its own: the phases before it already reach %s", plural(prev, "device", "devices"))
			case row.Progress.Succeeded+row.Progress.Failed == row.Progress.Total:
				row.Status = "done"
			case notified > 0:
				row.Status = "running"
			case ro.State.Done():
				row.Status = "not reached"
				row.Note = "the rollout ended before this phase started"
			default:
				row.Status = "waiting"
			}
			row.Class = "ph-" + strings.ReplaceAll(row.Status, " ", "-")
			row.Bar = row.Progress.bar()
			data.Phases = append(data.Phases, row)
			prev = max(prev, target)
		}
	case ro.Pace.Rate != nil:
		rt := ro.Pace.Rate
		data.Pace = fmt.Sprintf("exponential: %g devices per minute, times %g after every %d successes", rt.BasePerMinute, rt.Factor, rt.IncreaseAfter)
	default:
		data.Pace = "every device at once"
	}
	var retries []string
	for k, n := range ro.Retries {
		retries = append(retries, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(retries)
	data.Retries = strings.Join(retries, ", ")

	seen := map[string]bool{}
	var rows []deviceProgressRow
	for _, id := range ro.Order {
		d := ro.Devices[id]
		seen[string(d.State)] = true
		if data.StateFilter != "" && string(d.State) != data.StateFilter {
			continue
		}
		rows = append(rows, deviceProgressRow{ID: id, Phase: phaseOf[id], State: d.State, Attempts: d.Attempts, Seq: d.Seq,
			Reason: d.Reason, Notified: d.NotifiedAt, Updated: d.UpdatedAt, Shadow: d.Shadow, Verify: d.Verify})
	}
	for st := range seen {
		data.States = append(data.States, st)
	}
	sort.Strings(data.States)
	data.Matched = len(rows)
	page, _ := strconv.Atoi(q.Get("page"))
	data.Pages = max(1, (len(rows)+rolloutDevicesPerPage-1)/rolloutDevicesPerPage)
	data.Page = min(max(page, 1), data.Pages)
	lo := (data.Page - 1) * rolloutDevicesPerPage
	data.Devices = rows[lo:min(lo+rolloutDevicesPerPage, len(rows))]
	link := func(p int) string {
		v := url.Values{}
		if data.StateFilter != "" {
			v.Set("device_state", data.StateFilter)
		}
		if p > 1 {
			v.Set("page", strconv.Itoa(p))
		}
		u := "/console/rollouts/" + url.PathEscape(ro.ID)
		if len(v) > 0 {
			u += "?" + v.Encode()
		}
		return u + "#devices"
	}
	if data.Page > 1 {
		data.PrevURL = link(data.Page - 1)
	}
	if data.Page < data.Pages {
		data.NextURL = link(data.Page + 1)
	}

	data.CanPause = ro.State == api.RolloutRunning
	data.CanResume = ro.State == api.RolloutPaused
	data.CanAbort = !ro.State.Done()
	if _, rel, err := c.svc.Registry().Previous(ro.ModelID, ro.Release); err == nil {
		data.Previous = rel
		data.RollbackID = rollbackID(ro.ID)
	}
	return data
}

// rollbackID suggests an ID for the rollback of rollout id.
func rollbackID(id string) string {
	const suffix = "-rollback"
	if len(id)+len(suffix) > 128 {
		id = id[:128-len(suffix)]
	}
	return id + suffix
}

// controlRollout runs pause, resume, abort or rollback from the rollout
// page's buttons and goes back to the page with a message.
func (c *Console) controlRollout(w http.ResponseWriter, r *http.Request, s sessionView) {
	id, op := r.PathValue("id"), r.PathValue("op")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if len(reason) > 500 {
		reason = reason[:500]
	}
	back := "/console/rollouts/" + url.PathEscape(id)
	var err error
	var msg string
	done := map[string]string{"pause": "paused", "resume": "resumed", "abort": "aborted"}
	switch op {
	case "pause", "resume", "abort":
		if reason == "" && op != "resume" {
			reason = done[op] + " in the web console"
		}
		web.NoteAudit(r, "", "web console; "+reason)
		_, err = c.svc.Control(id, op, reason)
		msg = fmt.Sprintf("Rollout %s %s.", id, done[op])
	case "approve":
		var ar *rollout.Rollout
		if ar, err = c.svc.ApproveAs(id, s.p); err == nil {
			web.NoteAudit(r, "", "web console; "+rollout.Text(ar))
			msg = fmt.Sprintf("Rollout %s approved: its devices are notified from now on.", id)
		}
	case "rollback":
		newID := strings.TrimSpace(r.PostFormValue("id"))
		emergency := r.PostFormValue("emergency") == "on"
		web.NoteAudit(r, "", "web console; new rollout "+newID)
		if emergency {
			web.NoteAuditAction(r, "rollout.emergency-rollback")
		}
		var nr *rollout.Rollout
		if nr, err = c.svc.RollbackAs(id, newID, s.p, emergency); err == nil {
			web.NoteAudit(r, "", "web console; new rollout "+nr.ID+": "+rollout.Text(nr))
			back = "/console/rollouts/" + url.PathEscape(nr.ID)
			msg = fmt.Sprintf("Rollback %s created: release %d of %s to %d devices.", nr.ID, nr.Release, nr.ModelID, len(nr.Order))
			if nr.Approval.Pending() {
				msg += " It waits for a second person's approval before any device is notified."
			}
		}
	default:
		c.renderError(w, r, http.StatusNotFound, "Unknown rollout operation.")
		return
	}
	if err != nil {
		if !errors.Is(err, rollout.ErrInvalid) && !errors.Is(err, fault.ErrNotFound) {
			c.log.Error("console: rollout operation failed", "rollout", id, "op", op, "err", err)
		}
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, fleet.ErrEmergency):
			status = http.StatusForbidden
		case !errors.Is(err, rollout.ErrInvalid) && !errors.Is(err, fault.ErrNotFound):
			status = http.StatusInternalServerError
		}
		web.NoteAuditFailure(r, status, trimFleet(err.Error()))
		c.sessions.setFlash(s.id, &flash{Error: true, Text: fmt.Sprintf("Could not %s rollout %s: %s", op, id, trimFleet(err.Error()))})
	} else {
		c.log.Info("console: rollout "+op, "rollout", id, "remote", r.RemoteAddr)
		c.sessions.setFlash(s.id, &flash{Text: msg})
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// rolloutForm is the new-rollout form as typed.
type rolloutForm struct {
	ID, Bundle, Selector, Devices, Phases string
	AbortOn, Threshold, MinFinished       string
	Timeout, Retries                      string
}

func formFrom(r *http.Request) rolloutForm {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return rolloutForm{ID: g("id"), Bundle: g("bundle"), Selector: g("selector"), Devices: g("devices"), Phases: g("phases"),
		AbortOn: g("abort_on"), Threshold: g("abort_threshold"), MinFinished: g("abort_min"), Timeout: g("timeout"), Retries: g("retries")}
}

// request turns the form into a rollout request; the fleet checks the rest
// (IDs, bounds) when it creates the rollout.
func (f rolloutForm) request() (api.RolloutRequest, error) {
	req := api.RolloutRequest{ID: f.ID, Bundle: f.Bundle}
	if f.ID == "" {
		return req, errors.New("give the rollout an ID")
	}
	if f.Bundle == "" {
		return req, errors.New("choose a bundle")
	}
	var err error
	switch {
	case f.Selector != "" && f.Devices != "":
		return req, errors.New("give a label selector or device IDs, not both")
	case f.Selector != "":
		if req.Selector, err = parseSelector(f.Selector); err != nil {
			return req, err
		}
	case f.Devices != "":
		req.Devices = strings.FieldsFunc(f.Devices, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	default:
		return req, errors.New("give a label selector or device IDs")
	}
	if req.Pace.Phases, err = api.ParsePhases(f.Phases); err != nil {
		return req, fmt.Errorf("phases: %w", err)
	}
	req.Abort.On = f.AbortOn
	if f.AbortOn != "" {
		if req.Abort.ThresholdPercent, err = parseNumber(f.Threshold, "abort threshold", 0); err != nil {
			return req, err
		}
		n, err := parseNumber(f.MinFinished, "minimum finished devices", 1)
		if err != nil {
			return req, err
		}
		if n != float64(int(n)) || n > 1e9 {
			return req, fmt.Errorf("minimum finished devices: %q is not a whole number", f.MinFinished)
		}
		req.Abort.MinExecuted = int(n)
	}
	if f.Timeout != "" {
		if req.Timeout, err = time.ParseDuration(f.Timeout); err != nil || req.Timeout <= 0 {
			return req, fmt.Errorf("timeout: %q is not a duration such as 10m or 1h30m", f.Timeout)
		}
	}
	if req.Retries, err = api.ParseRetries(f.Retries); err != nil {
		return req, fmt.Errorf("retries: %w", err)
	}
	return req, nil
}

func parseNumber(s, what string, def float64) (float64, error) {
	if s == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: %q is not a number ≥ 0", what, s)
	}
	return f, nil
}

// bundleOption is one choice of the new-rollout form's bundle list.
type bundleOption struct {
	Hash  string
	Label string
}

type newRolloutData struct {
	Bundles []bundleOption
	Form    rolloutForm
	Error   string
}

// newRolloutPage shows the form that creates a rollout; ?bundle= picks
// the bundle.
func (c *Console) newRolloutPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	f := rolloutForm{Bundle: r.URL.Query().Get("bundle"), Phases: "1, 100%", AbortOn: api.FailureAny, Threshold: "0", MinFinished: "1", Timeout: "10m"}
	c.showNewRollout(w, r, s, http.StatusOK, f, "")
}

func (c *Console) showNewRollout(w http.ResponseWriter, r *http.Request, s sessionView, status int, f rolloutForm, msg string) {
	bs, err := c.svc.Registry().Bundles()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data := &newRolloutData{Form: f, Error: msg}
	for _, b := range bs {
		data.Bundles = append(data.Bundles, bundleOption{Hash: b.Hash,
			Label: fmt.Sprintf("%s release %d (%s, %s bytes)", b.ModelID, b.Release, shorten(b.Hash, 12), thousands(uint64(b.Size)))})
	}
	c.render(w, r, status, "newrollout", &view{Title: "New rollout", Nav: "rollouts", CSRF: s.csrf, Flash: s.flash, Data: data})
}

// createRollout creates a rollout from the form and shows it.
func (c *Console) createRollout(w http.ResponseWriter, r *http.Request, s sessionView) {
	f := formFrom(r)
	req, err := f.request()
	if err != nil {
		c.showNewRollout(w, r, s, http.StatusBadRequest, f, err.Error())
		return
	}
	web.NoteAudit(r, "rollout/"+req.ID, "web console; requested: "+rollout.RequestText(&req))
	ro, err := c.svc.CreateRolloutAs(req, s.p)
	if err != nil {
		status := http.StatusBadRequest
		if !errors.Is(err, rollout.ErrInvalid) && !errors.Is(err, fault.ErrNotFound) {
			status = http.StatusInternalServerError
			c.log.Error("console: creating a rollout failed", "rollout", req.ID, "err", err)
		}
		c.showNewRollout(w, r, s, status, f, trimFleet(err.Error()))
		return
	}
	web.NoteAudit(r, "", "web console; "+rollout.Text(ro))
	c.log.Info("console: rollout created", "rollout", ro.ID, "remote", r.RemoteAddr)
	c.sessions.setFlash(s.id, &flash{Text: fmt.Sprintf("Rollout %s created: release %d of %s to %d devices.", ro.ID, ro.Release, ro.ModelID, len(ro.Order))})
	http.Redirect(w, r, "/console/rollouts/"+url.PathEscape(ro.ID), http.StatusSeeOther)
}
