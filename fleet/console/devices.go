package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/wire"
)

// deviceFilter is the devices page's query: every field narrows the list.
type deviceFilter struct {
	Selector string // label selector, "site=north,tier=a"
	Status   string // "", "online", "offline"
	Health   string // "", "ok", "degraded", "no-model", "unknown", or "uncertain" (past the unknown alert)
	Model    string // "", a model ID, or "none"
	Q        string // part of the device ID
	Page     int
}

func parseDeviceFilter(q url.Values) deviceFilter {
	f := deviceFilter{Selector: strings.TrimSpace(q.Get("selector")), Status: q.Get("status"), Health: q.Get("health"),
		Model: q.Get("model"), Q: strings.TrimSpace(q.Get("q"))}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	f.Page = max(f.Page, 1)
	return f
}

// query is the filter as a query string, on page p (0: the filter's own).
func (f deviceFilter) query(p int) string {
	v := url.Values{}
	for k, s := range map[string]string{"selector": f.Selector, "status": f.Status, "health": f.Health, "model": f.Model, "q": f.Q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if p == 0 {
		p = f.Page
	}
	if p > 1 {
		v.Set("page", strconv.Itoa(p))
	}
	return v.Encode()
}

// parseSelector reads a label selector, "k=v, k2=v2", with the API's
// grammar (tritctl's --selector reads the same).
func parseSelector(s string) (map[string]string, error) {
	sel, err := api.ParseSelector(s)
	if err != nil {
		return nil, fmt.Errorf("label selector: %w", err)
	}
	return sel, nil
}

// health is a device's health as the console shows it.
func health(d *inventory.Device) string {
	if d.Health == "" {
		return "unknown"
	}
	return d.Health
}

func (f deviceFilter) match(d *inventory.Device, sel map[string]string) bool {
	switch {
	case !d.Matches(sel):
	case f.Status == "online" && !d.Online, f.Status == "offline" && d.Online:
	case f.Health == "uncertain" && !d.Uncertain:
	case f.Health != "" && f.Health != "uncertain" && health(d) != f.Health:
	case f.Model == "none" && d.Model != nil:
	case f.Model != "" && f.Model != "none" && (d.Model == nil || d.Model.ID != f.Model):
	case f.Q != "" && !strings.Contains(strings.ToLower(d.ID), strings.ToLower(f.Q)):
	default:
		return true
	}
	return false
}

// deviceRow is one line of a device table.
type deviceRow struct {
	ID        string
	Online    bool
	LastSeen  time.Time
	Health    string
	Labels    []kv
	Model     *wire.ModelRef
	SensorsOK int
	Failed    []string // failed sensors
	Slow      []string // sensors below their configured rate
	// Why says what makes the health what it is: a committed model that
	// does not load ("runs release 1 instead: model vib release 2 (bundle
	// …) does not load: …"), then sensor by sensor ("accel reads 1.8 kHz
	// of the configured 20 kHz"); empty when all are ok.
	Why       string
	Last      *wire.Prediction
	Predicted uint64
	// Unknown is the share of the latest interval's windows reported
	// unknown (HasUnknown: the model is calibrated and reported some);
	// Uncertain: past the fleet's [alerts] unknown threshold.
	Unknown    float64
	HasUnknown bool
	Uncertain  bool
}

func newDeviceRow(d *inventory.Device) deviceRow {
	row := deviceRow{ID: d.ID, Online: d.Online, LastSeen: d.LastSeen, Health: health(d), Labels: sortedLabels(d.Labels),
		Model: d.Model, Last: d.Last, Predicted: d.Predictions, Uncertain: d.Uncertain}
	row.Unknown, row.HasUnknown = d.UnknownRate()
	var why []string
	if u := d.Unloadable; u != nil {
		if d.Model != nil {
			why = append(why, fmt.Sprintf("runs release %d instead: %s", d.Model.Release, u.Describe()))
		} else {
			why = append(why, u.Describe())
		}
	}
	for _, s := range d.Sensors {
		switch s.State {
		case wire.SensorOK:
			row.SensorsOK++
		case wire.SensorSlow:
			row.Slow = append(row.Slow, s.Sensor)
		default:
			row.Failed = append(row.Failed, s.Sensor)
		}
		if w := s.Describe(); w != "" {
			why = append(why, w)
		}
	}
	row.Why = strings.Join(why, "; ")
	return row
}

type devicesData struct {
	Filter    deviceFilter
	FilterErr string
	Models    []string // model IDs seen, for the filter
	Rows      []deviceRow
	Total     int // devices in the inventory
	Matched   int
	From, To  int // 1-based range shown
	Page      int
	Pages     int
	PrevURL   string
	NextURL   string
	Classes   *barChart
}

// devicesPage lists the inventory, filtered and paginated, with the class
// distribution of the devices that match.
func (c *Console) devicesPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	all, err := inventory.Devices(c.db)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f := parseDeviceFilter(r.URL.Query())
	data := c.devicesData(all, f)
	c.render(w, r, http.StatusOK, "devices", &view{Title: "Devices", Nav: "devices", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/devices?" + joinQuery(f.query(0), "part=live"), Data: data})
}

func joinQuery(a, b string) string {
	if a == "" {
		return b
	}
	return a + "&" + b
}

func (c *Console) devicesData(all []inventory.Device, f deviceFilter) *devicesData {
	data := &devicesData{Filter: f, Total: len(all)}
	models := map[string]bool{}
	for i := range all {
		if m := all[i].Model; m != nil {
			models[m.ID] = true
		}
	}
	for m := range models {
		data.Models = append(data.Models, m)
	}
	sort.Strings(data.Models)
	sel, err := parseSelector(f.Selector)
	if err != nil {
		data.FilterErr = err.Error()
		return data
	}
	counts := map[string]uint64{}
	var matched []*inventory.Device
	for i := range all {
		d := &all[i]
		if f.match(d, sel) {
			matched = append(matched, d)
			for k, v := range classCounts(&d.Device) {
				counts[k] += v
			}
		}
	}
	data.Matched = len(matched)
	size := c.opt.PageSize
	data.Pages = max(1, (len(matched)+size-1)/size)
	data.Page = min(f.Page, data.Pages)
	lo := (data.Page - 1) * size
	hi := min(lo+size, len(matched))
	for _, d := range matched[lo:hi] {
		data.Rows = append(data.Rows, newDeviceRow(d))
	}
	if hi > lo {
		data.From, data.To = lo+1, hi
	}
	if data.Page > 1 {
		data.PrevURL = "/console/devices?" + f.query(data.Page-1)
	}
	if data.Page < data.Pages {
		data.NextURL = "/console/devices?" + f.query(data.Page+1)
	}
	data.Classes = classChart(counts, fmt.Sprintf("latest telemetry interval of the %d devices listed", len(matched)))
	return data
}

// jobRow is one rollout a device took part in.
type jobRow struct {
	Rollout  string
	Model    string
	Release  uint64
	Rollback bool
	State    api.DeviceState
	Attempts int
	Seq      uint64
	Reason   string
	Notified time.Time
	Updated  time.Time
}

type deviceData struct {
	D       *inventory.Device
	Row     deviceRow
	Labels  []kv
	Jobs    []jobRow
	Classes *barChart
	Drift   *driftView
	Unknown *unknownView
	History []api.AuditEntry // who did what to it, newest first
	Health  *lineChart       // the last 24 hours' unknown share and confidence; nil without
}

// unknownView is a calibrated model's latest confidence report: the share
// of windows it reported unknown, why, and its mean confidence.
type unknownView struct {
	Rate, Mean          float64 // 0 … 1
	Windows             uint64
	Unknown, Low, Novel uint64
	MinConfidence       float64
	MaxNovelty          uint32
}

func newUnknownView(d *inventory.Device) *unknownView {
	rate, ok := d.UnknownRate()
	if !ok {
		return nil
	}
	c := d.Confidence
	v := &unknownView{Rate: rate, Mean: c.Mean, Unknown: c.Unknown, Low: c.LowConfidence, Novel: c.Novel, MinConfidence: c.MinConfidence, MaxNovelty: c.MaxNovelty}
	for _, n := range c.Histogram {
		v.Windows += n
	}
	return v
}

// driftView is a device's drift report in an operator's words: the score
// beside the fleet's alert threshold, and the inputs behind the bits that
// moved most.
type driftView struct {
	Score     float64
	Windows   uint64
	Threshold float64 // [alerts] drift; 0: none set
	Drifting  bool
	Verdict   string
	Features  []driftFeature // named inputs, most drifted first
	Others    string         // the unnamed bits: "3 random features and 1 tree leaf"
}

// driftFeature is an input whose threshold tests fire at another rate on
// the device than on the training data.
type driftFeature struct {
	Name       string
	Train, Now float64 // share of windows its most drifted test fired on
}

// newDriftView describes r for a device running a bundle with facts bf
// (nil when the bundle is not registered here).
func newDriftView(r *wire.DriftReport, threshold float64, drifting bool, bf *bundleFacts) *driftView {
	v := &driftView{Score: r.Score, Windows: r.Windows, Threshold: threshold, Drifting: drifting}
	switch {
	case threshold <= 0:
		v.Verdict = "No alert threshold is set ([alerts] drift in fleet.toml). 0 means the inputs fire the model's bits as on the training data; the larger the score, the further they have moved."
	case drifting || r.Score >= threshold:
		v.Drifting = true
		v.Verdict = fmt.Sprintf("At or above the alert threshold %s: the inputs no longer look like the training data. Check the sensors and the machine, or retrain on recent data.", driftFigure(threshold))
	default:
		v.Verdict = fmt.Sprintf("Below the alert threshold %s: the inputs look like the training data.", driftFigure(threshold))
	}
	seen := map[string]bool{}
	var random, leaves, other int
	for _, b := range r.Top { // largest divergence first
		if b.Feature != "" {
			if !seen[b.Feature] {
				seen[b.Feature] = true
				v.Features = append(v.Features, driftFeature{Name: b.Feature, Train: b.Train, Now: b.Now})
			}
			continue
		}
		switch bf.columnKind(b.Column) {
		case "threshold":
			other++ // a threshold bit the agent did not name: counted, not guessed
		case "leaf":
			leaves++
		case "random":
			random++
		default:
			other++
		}
	}
	var parts []string
	if random > 0 {
		parts = append(parts, count(random, "random feature", "random features"))
	}
	if leaves > 0 {
		parts = append(parts, count(leaves, "tree leaf", "tree leaves"))
	}
	if other > 0 {
		parts = append(parts, count(other, "other bit", "other bits"))
	}
	v.Others = strings.Join(parts, " and ")
	return v
}

// driftFigure formats a drift score or threshold.
func driftFigure(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) }

// columnKind says what kept column col of the bundle's embedding is: a
// threshold test, a tree leaf or a random feature; "" when unknown.
func (bf *bundleFacts) columnKind(col int32) string {
	if bf == nil || bf.kept == nil || col < 0 || int(col) >= len(bf.kept) {
		return ""
	}
	switch e := int(bf.kept[col]); {
	case e < bf.nt:
		return "threshold"
	case e < bf.nt+bf.nl:
		return "leaf"
	}
	return "random"
}

// devicePage shows one device: its state, sensors, class distribution and
// its part in every rollout.
func (c *Console) devicePage(w http.ResponseWriter, r *http.Request, s sessionView) {
	id := r.PathValue("id")
	d, err := inventory.DeviceByID(c.db, id)
	if errors.Is(err, fault.ErrBadRequest) {
		// Not a valid device ID, but the inventory may hold a record under
		// it (a database from elsewhere): show what is there.
		d, err = inventory.Stored(c.db, id)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rs, err := c.svc.Rollouts()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data := &deviceData{D: d, Row: newDeviceRow(d), Labels: sortedLabels(d.Labels),
		Classes: classChart(classCounts(&d.Device), "latest telemetry interval"), Unknown: newUnknownView(d)}
	if pts, err := inventory.RecentHealth(c.db, []string{d.ID}, c.opt.Now(), true); err == nil {
		span := healthSpan(r)
		if data.Health = healthChart(pts, c.opt.Now(), false, "this device", span); data.Health != nil {
			data.Health.Views = healthViews(r, span)
		}
	}
	if d.Drift != nil {
		var bf *bundleFacts
		if d.Model != nil {
			bf = c.facts(d.Model.Bundle)
		}
		data.Drift = newDriftView(d.Drift, c.svc.DriftAlert(), d.Drifting, bf)
	}
	for i := range rs {
		ro := &rs[i]
		p := ro.Devices[id]
		if p == nil {
			continue
		}
		data.Jobs = append(data.Jobs, jobRow{Rollout: ro.ID, Model: ro.ModelID, Release: ro.Release, Rollback: ro.Rollback,
			State: p.State, Attempts: p.Attempts, Seq: p.Seq, Reason: p.Reason, Notified: p.NotifiedAt, Updated: p.UpdatedAt})
	}
	if r.URL.Query().Get("part") == "" {
		data.History = c.history("device/" + d.ID)
	}
	c.render(w, r, http.StatusOK, "device", &view{Title: "Device " + d.ID, Nav: "devices", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/devices/" + url.PathEscape(id) + "?" + joinQuery(healthQuery(r), "part=live"), Data: data})
}
