// Package synthetic simulates a vibrating machine, so that the demo and the
// tests can run the whole sensor-to-model path without hardware. It
// registers the kind "synthetic" and makes labelled feature datasets for
// training.
//
// The machine is a shaft turning at 18..32 Hz, watched by a 3-axis
// accelerometer on its bearing housing and a temperature probe:
//
//   - normal: a small once-per-revolution (1×) vibration from residual
//     imbalance, some 2× from misalignment, axial 1× thrust from the driven
//     load (up to 0.25 g), broadband noise, gravity on z;
//   - imbalance: a strong 1× component, radial (x and y, 90° apart);
//   - bearing fault: a defect on the outer race is struck 3.57 times per
//     revolution; every strike rings the housing's resonance (250..400 Hz)
//     for a few milliseconds: high-frequency, impulsive bursts.
//
// Every machine is installed differently: its shaft lies along a random
// sensor axis, so a healthy machine's axial thrust can be as strong on one
// axis as an imbalance is on two; and the sensor's coupling to the housing
// varies. Speed, noise and fault severity are drawn afresh for every
// segment (one second of samples, or one dataset row), so that mild faults
// overlap healthy machines. The states are separable, but not by a
// threshold on any one feature, nor well by a linear model; everything is
// deterministic for a given seed.
package synthetic

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// State is the machine's condition.
type State int

// States of the machine; their integer values are the dataset labels.
const (
	Normal State = iota
	Imbalance
	BearingFault
)

// States lists every state in label order.
var States = []State{Normal, Imbalance, BearingFault}

var stateNames = []string{"normal", "imbalance", "bearing_fault"}

// String returns the state's name as ParseState accepts it.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int(s))
	}
	return stateNames[s]
}

// ParseState parses "normal", "imbalance" or "bearing_fault".
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("synthetic: unknown state %q (want normal, imbalance or bearing_fault)", name)
}

// bpfo is the outer-race defect frequency in multiples of shaft speed, for
// a typical deep-groove ball bearing.
const bpfo = 3.57

// params are drawn afresh for every segment.
type params struct {
	shaftHz float64 // rotation frequency
	noise   float64 // broadband vibration, g (scaled by coupling)
	radial  float64 // 1× radial amplitude (imbalance), g
	axial   float64 // 1× axial amplitude (thrust of the driven load), g
	a2      float64 // 2× radial amplitude (misalignment), g
	phase2  float64
	strike  float64 // bearing strike amplitude, g (0 unless faulty)
	resHz   float64 // housing resonance
	decay   float64 // resonance decay time, s
	celsius float64 // temperature at the probe
}

// ring is one decaying resonance burst.
type ring struct {
	start float64 // seconds
	amp   float64
}

// Machine generates samples of the simulated machine.
//
// Its installation is fixed at creation: which sensor axis lies along the
// shaft (x or y for a horizontal shaft, z for a vertical pump; gravity is
// always on z) and how well the sensor is coupled to the housing. Operating
// conditions and fault severity change with every Redraw.
type Machine struct {
	rate     float64
	state    State
	rng      *rand.Rand
	axialAx  int     // sensor axis along the shaft: 0 x, 1 y, 2 z
	coupling float64 // mounting gain on all vibration
	p        params
	n        int64   // samples generated
	phase    float64 // shaft angle, radians
	next     float64 // time of the next bearing strike, s
	rings    []ring
}

// NewMachine returns a machine in state, sampled at rate Hz, whose random
// draws come from seed.
func NewMachine(state State, rate float64, seed uint64) *Machine {
	r := rand.New(rand.NewPCG(seed, 0x7472697473656e73))
	m := &Machine{rate: rate, state: state, rng: r, axialAx: r.IntN(3), coupling: 0.6 + 0.8*r.Float64()}
	m.phase = r.Float64() * 2 * math.Pi
	m.Redraw()
	return m
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// SetState changes the state and draws new segment parameters.
func (m *Machine) SetState(s State) {
	m.state = s
	m.Redraw()
}

// Redraw draws new operating conditions and fault severity.
func (m *Machine) Redraw() {
	r := m.rng
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }
	p := params{
		shaftHz: u(18, 32),
		noise:   u(0.02, 0.06),
		radial:  u(0.005, 0.03),
		axial:   u(0, 0.25),
		a2:      u(0, 0.03),
		phase2:  u(0, 2*math.Pi),
		resHz:   u(250, 400),
		decay:   u(0.002, 0.004),
		celsius: u(31, 39),
	}
	switch m.state {
	case Imbalance:
		p.radial = u(0.08, 0.3)
		p.axial = u(0, 0.05)
		p.celsius += u(0, 3)
	case BearingFault:
		p.strike = u(0.2, 0.6)
		p.celsius += u(1, 5)
	}
	m.p = p
	m.rings = m.rings[:0]
	m.next = m.t() + r.Float64()/(bpfo*p.shaftHz)
}

func (m *Machine) t() float64 { return float64(m.n) / m.rate }

// Next returns the next sample: acceleration in g on x, y, z (z carries
// gravity) and the temperature in °C.
func (m *Machine) Next() (x, y, z, celsius float64) {
	p, r := &m.p, m.rng
	t := m.t()
	m.n++

	c1, s1 := math.Cos(m.phase), math.Sin(m.phase)
	c2 := math.Cos(2*m.phase + p.phase2)
	m.phase = math.Mod(m.phase+2*math.Pi*p.shaftHz/m.rate, 2*math.Pi)

	// Bearing strikes, with ±5 % jitter from ball slip.
	var burst float64
	if p.strike > 0 {
		for t >= m.next {
			m.rings = append(m.rings, ring{start: m.next, amp: p.strike * (0.7 + 0.6*r.Float64())})
			m.next += (0.95 + 0.1*r.Float64()) / (bpfo * p.shaftHz)
		}
		keep := m.rings[:0]
		for _, g := range m.rings {
			dt := t - g.start
			if dt > 6*p.decay {
				continue
			}
			burst += g.amp * math.Exp(-dt/p.decay) * math.Sin(2*math.Pi*p.resHz*dt)
			keep = append(keep, g)
		}
		m.rings = keep
	}

	// Along the shaft: thrust at 1×. Across it: imbalance at 1×, 90° apart
	// on the two radial axes, misalignment at 2×, and the bearing's load
	// zone rings mostly radially.
	var v [3]float64
	radial := 0
	for ax := range v {
		if ax == m.axialAx {
			v[ax] = p.axial*c1 + 0.3*burst
			continue
		}
		if radial == 0 {
			v[ax] = p.radial*c1 + p.a2*c2 + burst
		} else {
			v[ax] = p.radial*s1 + 0.5*p.a2*c2 + 0.6*burst
		}
		radial++
	}
	for ax := range v {
		v[ax] = m.coupling*(v[ax]+p.noise*r.NormFloat64()) + sensorNoise*r.NormFloat64()
	}
	celsius = p.celsius + 0.05*r.NormFloat64()
	return v[0], v[1], 1 + v[2], celsius
}

// sensorNoise is the accelerometer's own noise, g RMS.
const sensorNoise = 0.01
