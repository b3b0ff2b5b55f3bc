package console

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
)

// modelUse is one model release and the devices running it.
type modelUse struct {
	Model   string
	Release uint64
	Bundle  string
	Devices int
	Latest  bool // the model's latest registered release
}

// alert is something on the overview that wants attention.
type alert struct {
	Text string
	Link string // "" for none
}

type overviewData struct {
	Total, Online, Offline, Degraded, NoModel int
	Never                                     int // named by a rollout (allow unknown devices), never reported
	Models                                    []modelUse
	Active                                    []rolloutRow // running or paused
	Recent                                    []rolloutRow // finished in the last day
	Alerts                                    []alert
	Classes                                   *barChart
	Health                                    *lineChart // the fleet's model health by minute; nil without
	HealthNote                                string     // why there is no health chart, when it is not for want of reports
}

// recentWindow is how long a finished rollout stays on the overview.
const recentWindow = 24 * time.Hour

// overviewPage shows the fleet at a glance.
func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	devices, bad, err := inventory.All(c.db)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rs, badRollouts, err := c.svc.RolloutsAndDamaged()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	bad = append(bad, badRollouts...)
	latest := map[string]uint64{}
	if bs, badBundles, err := c.svc.Registry().BundlesAndDamaged(); err == nil {
		bad = append(bad, badBundles...)
		for _, b := range bs {
			latest[b.ModelID] = max(latest[b.ModelID], b.Release)
		}
	} else {
		c.fail(w, r, err)
		return
	}
	jobs, windows, err := c.svc.DamagedJobsAndWindows()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	bad = append(bad, jobs...)
	data := overview(devices, rs, latest, c.svc.DriftAlert(), c.svc.UnknownAlert(), c.opt.Now())
	var alarms []alert
	for _, a := range c.svc.Alarms() { // trit-fleet's own trouble comes first
		alarms = append(alarms, alert{Text: a.Text})
	}
	if text := fleet.DamagedAlert(bad, windows); text != "" {
		alarms = append(alarms, alert{Text: text})
	}
	data.Alerts = append(alarms, data.Alerts...)
	ids := make([]string, len(devices))
	for i := range devices {
		ids[i] = devices[i].ID
	}
	data.Health, data.HealthNote = c.groupHealth(ids, "the whole fleet", r)
	c.render(w, r, http.StatusOK, "overview", &view{Title: "Overview", Nav: "overview", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/?" + joinQuery(healthQuery(r), "part=live"), Data: data})
}

func overview(devices []inventory.Device, rs []rollout.Rollout, latest map[string]uint64, driftAlert, unknownAlert float64, now time.Time) *overviewData {
	data := &overviewData{Total: len(devices)}
	uses := map[string]*modelUse{}
	counts := map[string]uint64{}
	var dropping, failedSensors, drifting, uncertain, gaps []string
	for i := range devices {
		d := &devices[i]
		switch {
		case d.Online:
			data.Online++
		case d.LastSeen.IsZero():
			data.Never++
		default:
			data.Offline++
		}
		switch health(d) {
		case "degraded":
			data.Degraded++
		case "no-model":
			data.NoModel++
		}
		if d.Model != nil {
			k := d.Model.Bundle
			if uses[k] == nil {
				uses[k] = &modelUse{Model: d.Model.ID, Release: d.Model.Release, Bundle: d.Model.Bundle, Latest: latest[d.Model.ID] == d.Model.Release}
			}
			uses[k].Devices++
		}
		for k, v := range classCounts(&d.Device) {
			counts[k] += min(v, math.MaxUint64-counts[k]) // saturates: a saturated device must not wrap the total
		}
		if d.TelemetryMissing > 0 {
			gaps = append(gaps, d.ID)
		}
		if d.Drifting {
			drifting = append(drifting, d.ID)
		}
		if d.Uncertain {
			uncertain = append(uncertain, d.ID)
		}
		if d.Outbox != nil && d.Outbox.Dropped > 0 {
			dropping = append(dropping, d.ID)
		}
		for _, sh := range d.Sensors {
			if sh.State != "ok" {
				failedSensors = append(failedSensors, d.ID)
				break
			}
		}
	}
	for _, u := range uses {
		data.Models = append(data.Models, *u)
	}
	sort.Slice(data.Models, func(i, j int) bool {
		a, b := data.Models[i], data.Models[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Release > b.Release
	})
	for i := range rs {
		ro := &rs[i]
		switch {
		case !ro.State.Done():
			data.Active = append(data.Active, newRolloutRow(ro))
		case now.Sub(ro.Finished) < recentWindow:
			data.Recent = append(data.Recent, newRolloutRow(ro))
		}
	}

	if data.Offline > 0 {
		data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("%d of %s offline.", data.Offline, plural(data.Total, "device is", "devices are")), Link: "/console/devices?status=offline"})
	}
	if data.Never > 0 {
		data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("%s named by a rollout with unknown devices allowed and never reported: a typo, or a gateway not installed yet (tritctl devices forget ID removes a record).",
			plural(data.Never, "device was", "devices were"))})
	}
	if data.Degraded > 0 {
		data.Alerts = append(data.Alerts, alert{Text: plural(data.Degraded, "device reports", "devices report") + " degraded health (a failed or slow sensor, or a committed model that does not load).", Link: "/console/devices?health=degraded"})
	}
	if len(gaps) > 0 {
		data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("%s reports missing from %s telemetry (dropped on the way: a broker's full queue, or a full outbox): %s.",
			plural(len(gaps), "device has", "devices have"), map[bool]string{true: "its", false: "their"}[len(gaps) == 1], firstFew(gaps))})
	}
	if len(failedSensors) > 0 {
		data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("%s a failed sensor: %s.", plural(len(failedSensors), "device has", "devices have"), firstFew(failedSensors))})
	}
	if len(drifting) > 0 {
		a := alert{Text: fmt.Sprintf("%s past the drift alert threshold (%s; inputs unlike the training data): %s.",
			plural(len(drifting), "device is", "devices are"), driftFigure(driftAlert), firstFew(drifting))}
		if len(drifting) == 1 {
			a.Link = "/console/devices/" + url.PathEscape(drifting[0])
		}
		data.Alerts = append(data.Alerts, a)
	}
	if len(uncertain) > 0 {
		a := alert{Text: fmt.Sprintf("%s past the unknown alert threshold (%.0f%% of an interval's windows reported unknown: the model cannot answer for %s inputs): %s.",
			plural(len(uncertain), "device is", "devices are"), 100*unknownAlert, map[bool]string{true: "its", false: "their"}[len(uncertain) == 1], firstFew(uncertain)),
			Link: "/console/devices?health=uncertain"}
		if len(uncertain) == 1 {
			a.Link = "/console/devices/" + url.PathEscape(uncertain[0])
		}
		data.Alerts = append(data.Alerts, a)
	}
	if len(dropping) > 0 {
		data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("%s telemetry because %s outbox was full: %s.", plural(len(dropping), "device dropped", "devices dropped"), map[bool]string{true: "its", false: "their"}[len(dropping) == 1], firstFew(dropping))})
	}
	for _, ro := range data.Active {
		if ro.State == api.RolloutPaused {
			data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("Rollout %s is paused: %s", ro.ID, orNone(ro.Reason)), Link: "/console/rollouts/" + url.PathEscape(ro.ID)})
		}
	}
	for _, ro := range data.Recent {
		if ro.State == api.RolloutAborted {
			data.Alerts = append(data.Alerts, alert{Text: fmt.Sprintf("Rollout %s aborted: %s", ro.ID, orNone(ro.Reason)), Link: "/console/rollouts/" + url.PathEscape(ro.ID)})
		}
	}
	data.Classes = classChart(counts, fmt.Sprintf("latest telemetry interval of all %d devices", len(devices)))
	return data
}

// firstFew lists up to five IDs and how many more there are.
func firstFew(ids []string) string {
	const n = 5
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
