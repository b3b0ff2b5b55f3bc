package console

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/web"
)

// The labels page (admin, as samples: windows are devices' raw data):
// per model, the labelled windows over time and the model's accuracy on
// them (the label against the class the device predicted: the only
// honest field accuracy there is), the retraining policies' states, and a
// form to label a model's unlabelled windows — one row per window with
// its features, prediction and margin, and a class to choose by keyboard
// (Tab to the next row, a letter picks a class, Enter or Alt+S sends the
// page's labels, all or none).

// labelPageSize bounds the windows offered for labelling at once.
const labelPageSize = 100

type labelsData struct {
	Models      []modelLabels
	Policies    []api.PolicyState
	Challengers []api.TrainJob // retraining jobs, newest first
	Model       string         // the model whose windows the form offers
	Unlabelled  int            // of that model
	Rows        []labelRow
}

// modelLabels is one model's labelled windows and the accuracy on them.
type modelLabels struct {
	Model              string
	Stored, Labelled   int
	Right              int
	Accuracy           float64 // percent of the labelled windows predicted right
	Days               []dayLabels
	Unlabelled         int
	ByVia              string // how the labels came in, e.g. "cli 120, console 30"
	Releases           string // the releases that classified them
	LabelledAccuracyOK bool
}

type dayLabels struct {
	Day             string
	Labelled, Right int
	Accuracy        float64
}

type labelRow struct {
	N        int
	W        api.FieldWindow
	Features []featureValue
	Classes  []string
}

type featureValue struct {
	Name  string
	Value string
}

// labelsPage shows the labels page.
func (c *Console) labelsPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	list, err := c.svc.Windows(api.WindowQuery{})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := &labelsData{Model: strings.TrimSpace(r.URL.Query().Get("model"))}
	per := map[string]*modelLabels{}
	days := map[string]map[string]*dayLabels{}
	vias := map[string]map[string]int{}
	releases := map[string]map[uint64]bool{}
	for _, fw := range list.Windows {
		m := per[fw.Model]
		if m == nil {
			m = &modelLabels{Model: fw.Model}
			per[fw.Model], days[fw.Model], vias[fw.Model], releases[fw.Model] = m, map[string]*dayLabels{}, map[string]int{}, map[uint64]bool{}
		}
		m.Stored++
		if fw.Label == "" {
			m.Unlabelled++
			continue
		}
		m.Labelled++
		right := fw.Label == fw.Predicted
		if right {
			m.Right++
		}
		day := fw.Time.UTC().Format("2006-01-02")
		dl := days[fw.Model][day]
		if dl == nil {
			dl = &dayLabels{Day: day}
			days[fw.Model][day] = dl
		}
		dl.Labelled++
		if right {
			dl.Right++
		}
		vias[fw.Model][cmp.Or(fw.Via, "api")]++
		releases[fw.Model][fw.Release] = true
	}
	for _, name := range slices.Sorted(maps.Keys(per)) {
		m := per[name]
		if m.Labelled > 0 {
			m.Accuracy, m.LabelledAccuracyOK = 100*float64(m.Right)/float64(m.Labelled), true
		}
		for _, day := range slices.Sorted(maps.Keys(days[name])) {
			dl := days[name][day]
			dl.Accuracy = 100 * float64(dl.Right) / float64(dl.Labelled)
			m.Days = append(m.Days, *dl)
		}
		var vs []string
		for _, v := range slices.Sorted(maps.Keys(vias[name])) {
			vs = append(vs, fmt.Sprintf("%s %d", v, vias[name][v]))
		}
		m.ByVia = strings.Join(vs, ", ")
		var rs []string
		for _, rel := range slices.Sorted(maps.Keys(releases[name])) {
			rs = append(rs, strconv.FormatUint(rel, 10))
		}
		m.Releases = strings.Join(rs, ", ")
		d.Models = append(d.Models, *m)
	}
	if d.Policies, err = c.svc.Policies(); err != nil {
		c.fail(w, r, err)
		return
	}
	for _, j := range c.svc.TrainingJobs() {
		if j.Request.Retrain {
			d.Challengers = append(d.Challengers, j)
		}
	}
	if d.Model == "" && len(d.Models) > 0 {
		d.Model = d.Models[0].Model
	}
	classes := map[string][]string{}
	for i := len(list.Windows) - 1; i >= 0 && len(d.Rows) < labelPageSize; i-- { // newest first
		fw := list.Windows[i]
		if fw.Model != d.Model || fw.Label != "" {
			continue
		}
		cs, ok := classes[fw.Bundle]
		if !ok {
			if info, _, err := c.svc.Registry().Bundle(fw.Bundle); err == nil {
				cs = info.Classes
			}
			classes[fw.Bundle] = cs
		}
		row := labelRow{N: len(d.Rows), W: fw, Classes: cs}
		for j, x := range fw.X {
			name := fmt.Sprintf("x%d", j+1)
			if j < len(fw.Features) {
				name = fw.Features[j]
			}
			row.Features = append(row.Features, featureValue{name, strconv.FormatFloat(float64(x), 'g', 4, 32)})
		}
		d.Rows = append(d.Rows, row)
	}
	if m := per[d.Model]; m != nil {
		d.Unlabelled = m.Unlabelled
	}
	c.render(w, r, http.StatusOK, "labels", &view{Title: "Labels", Nav: "labels", CSRF: s.csrf, Flash: s.flash, Data: d})
}

// label applies the labels of the page's form, all or none.
func (c *Console) label(w http.ResponseWriter, r *http.Request, s sessionView) {
	model := strings.TrimSpace(r.PostFormValue("model"))
	back := "/console/labels?model=" + url.QueryEscape(model)
	var ls []api.Label
	for i := range labelPageSize {
		win := strings.TrimSpace(r.PostFormValue("window-" + strconv.Itoa(i)))
		lab := strings.TrimSpace(r.PostFormValue("label-" + strconv.Itoa(i)))
		if win != "" && lab != "" {
			ls = append(ls, api.Label{Window: win, Label: lab})
		}
	}
	if len(ls) == 0 {
		c.sessions.setFlash(s.id, &flash{Error: true, Text: "No class was chosen: nothing labelled."})
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	res, err := c.svc.Label(api.LabelRequest{Labels: ls, Via: api.LabelConsole}, s.p.Name)
	if err != nil {
		web.NoteAuditFailure(r, http.StatusBadRequest, trimFleet(err.Error()))
		c.sessions.setFlash(s.id, &flash{Error: true, Text: "Nothing labelled: " + trimFleet(err.Error())})
	} else {
		web.NoteAudit(r, "", fmt.Sprintf("web console; %d windows of %s labelled", res.Labelled, model))
		c.sessions.setFlash(s.id, &flash{Text: fmt.Sprintf("%d windows labelled.", res.Labelled)})
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
