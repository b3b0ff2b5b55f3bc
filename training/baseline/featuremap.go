package baseline

import (
	"math"
	"math/rand/v2"

	"github.com/trit-iot/trit/inference"
)

// featureMap turns one scaled input row into p full-precision features.
// Implementations are immutable and safe for concurrent use; each goroutine
// brings its own scratch.
type featureMap interface {
	dim() int
	newScratch() *scratch
	// mapRow writes the p features of the scaled row x into dst.
	mapRow(dst, x []float32, s *scratch)
}

type scratch struct {
	u    []float32 // projection Rᵀx
	ws   *inference.Workspace
	bits []uint64
}

// kind selects the nonlinearity applied to the projection u = Rᵀx.
type kind int

const (
	kindCos   kind = iota // √(2/p)·cos(u + b)
	kindSign              // sign(u)/√p (BJLE)
	kindBCSIK             // sign(cos(u + b) + t)/√p
)

// dense is a map with an explicit Gaussian matrix R (d×p, entries
// N(0, σ⁻²)), stored column by column (r_j contiguous) in float32.
type dense struct {
	d, p int
	kind kind
	r    []float32 // p·d: r_j = r[j*d:(j+1)*d]
	b, t []float32
}

// newDense draws R, b and t from a PCG stream seeded by seed, in that order.
// The stream is math/rand/v2's, so a seed gives the same matrix on every run
// with this Go version.
func newDense(k kind, d, p int, sigma float64, seed uint64) *dense {
	rng := rand.New(rand.NewPCG(seed, 0xba5e11e))
	m := &dense{d: d, p: p, kind: k, r: make([]float32, p*d), b: make([]float32, p), t: make([]float32, p)}
	for i := range m.r {
		m.r[i] = float32(rng.NormFloat64() / sigma)
	}
	for j := range m.b {
		m.b[j] = float32(2 * math.Pi * rng.Float64())
	}
	for j := range m.t {
		m.t[j] = float32(2*rng.Float64() - 1)
	}
	return m
}

func (m *dense) dim() int { return m.p }

func (m *dense) newScratch() *scratch { return &scratch{u: make([]float32, m.p)} }

func (m *dense) mapRow(dst, x []float32, s *scratch) {
	d := m.d
	x = x[:d]
	for j := range m.p {
		s.u[j] = dot32(m.r[j*d:(j+1)*d], x)
	}
	nonlinear(dst, s.u, m.b, m.t, m.kind)
}

// dot32 is Σ a_k b_k accumulated in float32 with four accumulators.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 4 {
		aa, bb := a[:4:4], b[:4:4]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
		a, b = a[4:], b[4:]
	}
	for k := range a {
		s0 += a[k] * b[k]
	}
	return (s0 + s1) + (s2 + s3)
}

func nonlinear(dst, u, b, t []float32, k kind) {
	p := len(u)
	cosScale := float32(math.Sqrt(2 / float64(p)))
	bit := float32(1 / math.Sqrt(float64(p)))
	switch k {
	case kindCos:
		for j, v := range u {
			dst[j] = cosScale * float32(math.Cos(float64(v)+float64(b[j])))
		}
	case kindSign:
		for j, v := range u {
			dst[j] = signed(v >= 0, bit)
		}
	case kindBCSIK:
		for j, v := range u {
			dst[j] = signed(math.Cos(float64(v)+float64(b[j]))+float64(t[j]) >= 0, bit)
		}
	}
}

func signed(pos bool, v float32) float32 {
	if pos {
		return v
	}
	return -v
}

// fastfood is a map over trit's Fastfood transform: either cos features of
// the real projection (the Fastfood baseline) or trit's own BCSIK bits
// (trit-full), computed by Transform.Embed exactly as on the gateway.
type fastfood struct {
	tr   *inference.Transform
	bits bool
	b    []float32 // offsets b_j (cos features only)
}

func newFastfood(spec inference.TransformSpec, bits bool) (*fastfood, error) {
	tr, err := inference.NewTransform(spec)
	if err != nil {
		return nil, err
	}
	m := &fastfood{tr: tr, bits: bits}
	if !bits {
		m.b = make([]float32, spec.P)
		for j := range m.b {
			m.b[j] = float32(tr.Offset(j))
		}
	}
	return m, nil
}

func (m *fastfood) dim() int { return m.tr.Spec().P }

func (m *fastfood) newScratch() *scratch {
	p := m.dim()
	return &scratch{u: make([]float32, p), ws: m.tr.NewWorkspace(), bits: make([]uint64, (p+63)/64)}
}

func (m *fastfood) mapRow(dst, x []float32, s *scratch) {
	if !m.bits {
		m.tr.Project(s.u, x, s.ws)
		nonlinear(dst, s.u, m.b, nil, kindCos)
		return
	}
	m.tr.Embed(s.bits, x, s.ws)
	p := m.dim()
	v := float32(1 / math.Sqrt(float64(p)))
	for j := range p {
		dst[j] = signed(s.bits[j>>6]>>(j&63)&1 == 1, v)
	}
}

// newMap returns the feature map of a linear-SVM method.
func newMap(m Method, d, p int, sigma float64, seed uint64) (featureMap, error) {
	switch m {
	case RFE:
		return newDense(kindCos, d, p, sigma, seed), nil
	case BJLE:
		return newDense(kindSign, d, p, sigma, seed), nil
	case BCSIK:
		return newDense(kindBCSIK, d, p, sigma, seed), nil
	case Fastfood, TritFull:
		spec := inference.TransformSpec{Generator: inference.GeneratorV1, Seed: seed, Sigma: sigma, D: d, P: p}
		return newFastfood(spec, m == TritFull)
	}
	return nil, ErrMethod
}
