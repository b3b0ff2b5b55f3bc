package inference

import (
	"sync"
	"time"
)

// Whether the fast paths gather with VGATHERDPS or with scalar loads is
// measured, not looked up: the CPU's vendor does not say which is faster.
// AMD's Zen 4 ran VGATHERDPS 2.5× slower than scalar loads; Emerald Rapids
// ran it faster; a Cascade Lake VM (whose host microcode mitigates Gather
// Data Sampling) ran the d = 8 shape 1.6× slower with it. Both ways give
// the same bits, so the choice changes speed only.

// The settings (kernels.gather): 1 gathers with VGATHERDPS (and then
// blocks of d = 8 and 16 without their table paths use tiles, and d >= 16
// pair tiles where there is AVX-512); 2, only with AVX-512, looks the
// tiles' permutation up in registers (VPERMI2PS) for d <= 256, two tiles
// a vector from d = 16 (blocks of d = 8 and 16 without their table paths
// use tiles), and loads larger d with scalar loads; 0 uses scalar loads.
// cpu leaves it at −1: measured here, once.

var (
	gatherOnce     sync.Once
	gatherMeasured int
)

// measuredGather returns the faster gather setting on this CPU, measured
// the first time it is needed.
func measuredGather() int {
	gatherOnce.Do(func() { gatherMeasured = measureGather() })
	return gatherMeasured
}

// measureGather times the embedding of two small transforms (d = 8 and
// d = 64, 1,024 columns each: the tiles, and without FMA3 both of the
// d = 8 paths) with each setting, in alternating rounds, and returns the
// fastest. It takes a few milliseconds (3 ms on a Cascade Lake VM), once per
// process.
func measureGather() int {
	if !cpu.simd {
		return 0
	}
	modes := 2
	if cpu.avx512 {
		modes = 3
	}
	var probes [3][]*gatherProbe
	for mode := range modes {
		for _, d := range []int{8, 64} {
			probes[mode] = append(probes[mode], newGatherProbe(TransformSpec{Generator: GeneratorV1, Seed: 1, Sigma: 4, D: d, P: 1024}, mode))
		}
	}
	best := [3]time.Duration{1 << 62, 1 << 62, 1 << 62}
	for range 7 {
		for mode := range modes {
			start := time.Now()
			for _, p := range probes[mode] {
				p.run()
			}
			best[mode] = min(best[mode], time.Since(start))
		}
	}
	fastest := 0
	for mode := range modes {
		if best[mode] < best[fastest] {
			fastest = mode
		}
	}
	return fastest
}

// gatherProbe embeds every column of a transform, for measureGather.
type gatherProbe struct {
	tr   *Transform
	cols []int32
	plan *columnPlan
	ws   *Workspace
	x    []float32
	dst  []uint64
}

func newGatherProbe(spec TransformSpec, gather int) *gatherProbe {
	k := cpu
	k.gather = gather
	tr, err := newTransform(spec, k)
	if err != nil {
		panic("inference: the gather probe's transform: " + err.Error())
	}
	p := &gatherProbe{tr: tr, cols: make([]int32, spec.P), ws: tr.NewWorkspace(),
		x: make([]float32, spec.D), dst: make([]uint64, (spec.P+63)/64)}
	for i := range p.cols {
		p.cols[i] = int32(i)
	}
	for i := range p.x {
		p.x[i] = float32(i%7) - 3
	}
	p.plan = tr.columnPlan(p.cols)
	return p
}

// run embeds the probe's columns eight times.
func (p *gatherProbe) run() {
	for range 8 {
		clear(p.dst)
		p.tr.embedColumns(p.dst, 0, p.x, p.cols, p.plan, p.ws)
	}
}
