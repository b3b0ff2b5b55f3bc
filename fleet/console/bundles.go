package console

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/inference/bundle"
)

// trainInfo is what a bundle's info section says of its training
// (bundle.Info* keys); empty fields were not recorded (bundles made
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

// bundleFacts is what the console reads from a registered bundle's bytes:
// its training figures, its model in words, and where its embedding's
// kept columns come from (to name what a drift report's bits test).
type bundleFacts struct {
	Train *trainInfo
	Kind  string // "kernel", "trees", "thresholds" or "mixed"; "" when unreadable
	Model string // the model in words: counts, depth, p and σ
	Err   string

	kept   []int32 // kept embedding columns (a drift bit's Column indexes these)
	nt, nl int     // threshold and tree-leaf columns at the embedding's start
}

// facts returns what a registered bundle holds, read once (a bundle's
// bytes never change). Only registered bundles are remembered: a device
// may report any hash.
func (c *Console) facts(hash string) *bundleFacts {
	c.infoMu.Lock()
	bf := c.info[hash]
	c.infoMu.Unlock()
	if bf != nil {
		return bf
	}
	bf = &bundleFacts{Train: &trainInfo{}}
	_, data, err := c.svc.Registry().Bundle(hash)
	if err != nil {
		bf.Err = trimFleet(err.Error())
		bf.Train.Err = bf.Err
		return bf
	}
	if bd, err := bundle.Inspect(data); err != nil {
		bf.Err = err.Error()
	} else {
		ti := infoOf(bd.Info, bd.Classes)
		bf.Train = &ti
		bf.Kind, bf.Model = modelWords(bd)
		s := bd.Bundle.Spec
		bf.kept, bf.nt, bf.nl = s.Kept, s.NumThresholds(), s.NumTreeColumns()
	}
	bf.Train.Err = bf.Err
	c.infoMu.Lock()
	c.info[hash] = bf
	c.infoMu.Unlock()
	return bf
}

// modelWords says what model a bundle holds: its kind, and the figures
// that matter for that kind (trees: count and depth; random features: p
// and σ; thresholds: their count), with the bits it keeps and its weights.
func modelWords(b *bundle.Breakdown) (kind, words string) {
	var parts []string
	if b.TreeCount > 0 {
		t := fmt.Sprintf("%s of depth %d", count(b.TreeCount, "boosted tree", "boosted trees"), b.TreeDepth)
		if b.TreePlanes > 1 {
			t += fmt.Sprintf(" (leaf weights up to ±%d)", 1<<b.TreePlanes-1)
		}
		parts = append(parts, t)
	}
	if b.ThresholdCount > 0 {
		parts = append(parts, count(b.ThresholdCount, "threshold test", "threshold tests")+" on single inputs")
	}
	if b.P > 0 {
		rf := fmt.Sprintf("%s (Gaussian kernel, σ = %s)", count(b.P, "random feature", "random features"), strconv.FormatFloat(b.Sigma, 'g', 4, 64))
		if b.Projection != nil {
			rf += fmt.Sprintf(" of a ternary projection to %d directions", b.Projection.Outputs)
		}
		parts = append(parts, rf)
	}
	switch {
	case len(parts) > 1:
		kind = "mixed"
	case b.TreeCount > 0:
		kind = "trees"
	case b.ThresholdCount > 0:
		kind = "thresholds"
	default:
		kind = "kernel"
	}
	weights := "binary weights (±1)"
	for _, v := range b.Vectors {
		if v.Zero > 0 {
			weights = "ternary weights (−1, 0, +1)"
			break
		}
	}
	words = fmt.Sprintf("%s, on %s; %s of its %s bits used, %s", strings.Join(parts, " and "), count(b.Features, "input", "inputs"),
		thousands(uint64(len(b.KeptColumns))), thousands(uint64(b.Columns)), weights)
	return kind, words
}

// count says "1 tree" or "1,024 trees".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(uint64(max(n, 0))) + " " + many
}

func infoOf(info map[string]string, classes []string) trainInfo {
	t := trainInfo{Balanced: info[bundle.InfoBalanced], Rows: info[bundle.InfoRows], Validation: info[bundle.InfoValidation],
		Structure: info[bundle.InfoStructure]}
	if cc := info[bundle.InfoClassCounts]; cc != "" {
		for i, n := range strings.Split(cc, ",") {
			name := "class " + strconv.Itoa(i)
			if i < len(classes) {
				name = classes[i]
			}
			t.ClassCounts = append(t.ClassCounts, classCount{Class: name, Rows: n})
		}
	}
	known := map[string]bool{bundle.InfoBalanced: true, bundle.InfoRows: true, bundle.InfoValidation: true,
		bundle.InfoStructure: true, bundle.InfoRead: true, bundle.InfoClassCounts: true}
	for _, p := range sortedLabels(info) {
		if !known[p.K] {
			t.Other = append(t.Other, p)
		}
	}
	return t
}

// bundleRow is one registered bundle.
type bundleRow struct {
	api.BundleInfo
	Train   *trainInfo
	Kind    string
	Model   string // the model in words
	Devices int    // devices running it now
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
	devices, err := inventory.Devices(c.db)
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
		bf := c.facts(b.Hash)
		g.Releases = append(g.Releases, bundleRow{BundleInfo: b, Train: bf.Train, Kind: bf.Kind, Model: bf.Model, Devices: running[b.Hash]})
	}
	for i := range data.Models {
		rel := data.Models[i].Releases
		sort.Slice(rel, func(a, b int) bool { return rel[a].Release > rel[b].Release })
	}
	c.render(w, r, http.StatusOK, "bundles", &view{Title: "Models and bundles", Nav: "bundles", CSRF: s.csrf, Flash: s.flash,
		LiveURL: "/console/bundles?part=live", Data: data})
}
