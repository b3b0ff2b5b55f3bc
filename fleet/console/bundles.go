package console

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
)

// trainInfo is what a bundle's info section says of its training
// (training.Info* keys); empty fields were not recorded (bundles made
// before those keys, or by other tools).
type trainInfo struct {
	Balanced    string // validation balanced accuracy, percent
	Rows        string
	ClassCounts []classCount
	Validation  string
	Structure   string
	Other       []kv // any other info keys but how the data were read
	Err         string
}

type classCount struct {
	Class string
	Rows  string
}

// Recorded reports whether the bundle carries any training figure.
func (t *trainInfo) Recorded() bool {
	return t.Balanced != "" || t.Rows != "" || len(t.ClassCounts) > 0 || t.Validation != "" || t.Structure != ""
}

// training returns the training figures of a registered bundle, read from
// its info section once (a bundle's bytes never change).
func (c *Console) training(hash string) *trainInfo {
	c.infoMu.Lock()
	ti := c.info[hash]
	c.infoMu.Unlock()
	if ti != nil {
		return ti
	}
	ti = &trainInfo{}
	if _, data, err := c.svc.Registry().Bundle(hash); err != nil {
		ti.Err = trimFleet(err.Error())
	} else if bd, err := bundle.Inspect(data); err != nil {
		ti.Err = err.Error()
	} else {
		*ti = infoOf(bd.Info, bd.Classes)
	}
	c.infoMu.Lock()
	c.info[hash] = ti
	c.infoMu.Unlock()
	return ti
}

func infoOf(info map[string]string, classes []string) trainInfo {
	t := trainInfo{Balanced: info[training.InfoBalanced], Rows: info[training.InfoRows], Validation: info[training.InfoValidation],
		Structure: info[training.InfoStructure]}
	if cc := info[training.InfoClassCounts]; cc != "" {
		for i, n := range strings.Split(cc, ",") {
			name := "class " + strconv.Itoa(i)
			if i < len(classes) {
				name = classes[i]
			}
			t.ClassCounts = append(t.ClassCounts, classCount{Class: name, Rows: n})
		}
	}
	known := map[string]bool{training.InfoBalanced: true, training.InfoRows: true, training.InfoValidation: true,
		training.InfoStructure: true, training.InfoRead: true, training.InfoClassCounts: true}
	for _, p := range sortedLabels(info) {
		if !known[p.K] {
			t.Other = append(t.Other, p)
		}
	}
	return t
}

// bundleRow is one registered bundle.
type bundleRow struct {
	fleet.BundleInfo
	Train   *trainInfo
	Devices int // devices running it now
}

// modelGroup is a model and its releases, newest first.
type modelGroup struct {
	ID       string
	Latest   uint64
	Devices  int
	Releases []bundleRow
}

type bundlesData struct {
	Models []modelGroup
}

// bundlesPage lists models and their signed bundles with size, signer and
// training figures.
func (c *Console) bundlesPage(w http.ResponseWriter, r *http.Request, s sessionView) {
	bs, err := c.svc.Registry().Bundles()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	devices, err := fleet.Devices(c.db)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	running := map[string]int{}
	for i := range devices {
		if m := devices[i].Model; m != nil {
			running[m.Bundle]++
		}
	}
	data := &bundlesData{}
	idx := map[string]int{}
	for _, b := range bs {
		i, ok := idx[b.ModelID]
		if !ok {
			i = len(data.Models)
			idx[b.ModelID] = i
			data.Models = append(data.Models, modelGroup{ID: b.ModelID})
		}
		g := &data.Models[i]
		g.Latest = max(g.Latest, b.Release)
		g.Devices += running[b.Hash]
		g.Releases = append(g.Releases, bundleRow{BundleInfo: b, Train: c.training(b.Hash), Devices: running[b.Hash]})
	}
	for i := range data.Models {
		rel := data.Models[i].Releases
		sort.Slice(rel, func(a, b int) bool { return rel[a].Release > rel[b].Release })
	}
	c.render(w, r, http.StatusOK, "bundles", &view{Title: "Models and bundles", Nav: "bundles", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/bundles?part=live", Data: data})
}
