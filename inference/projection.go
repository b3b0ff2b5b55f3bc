package inference

import (
	"errors"
	"fmt"
)

// Projection is a learned linear map with ternary coefficients, applied to
// the scaled input before the random transform (training uses the leading
// principal directions of the training data, quantised): with T[k][i] ∈
// {−1, 0, +1} from the bit planes (see TernaryDot for their layout),
//
//	v[k] = float32(Scale[k]·acc_k) − Bias[k],  acc_k = Σ_{i: T[k][i] ≠ 0} T[k][i]·x'[i]
//
// The sum runs over i in ascending order in float32, skipping zero
// coefficients; that order is part of the definition, so every platform and
// training compute the same v. Reference loop:
//
//	for k := range v {
//		var acc float32
//		for i := range x {
//			if t := T[k][i]; t != 0 {
//				acc += float32(t) * x[i]
//			}
//		}
//		v[k] = float32(acc*Scale[k]) - Bias[k]
//	}
//
// The transform then sees v (len Out) instead of x' (len In): a Gaussian
// kernel on the leading directions rather than on every pixel, which on
// image-like data is both more accurate and cheaper at the same p.
type Projection struct {
	Sign, NonZero [][]uint64 // per output k: planes over the In inputs
	Scale, Bias   []float32  // per output k
}

// MaxProjectionOut bounds a projection's outputs.
const MaxProjectionOut = 1024

// ErrProjection reports a projection that cannot be used.
var ErrProjection = errors.New("inference: invalid projection")

// Out returns the number of outputs.
func (p *Projection) Out() int { return len(p.Scale) }

// Validate checks p for in inputs.
func (p *Projection) Validate(in int) error {
	out := len(p.Scale)
	words := (in + 63) / 64
	switch {
	case out < 1 || out > MaxProjectionOut:
		return fmt.Errorf("%w: %d outputs, want 1..%d", ErrProjection, out, MaxProjectionOut)
	case len(p.Bias) != out || len(p.Sign) != out || len(p.NonZero) != out:
		return fmt.Errorf("%w: %d scales, %d biases, %d/%d planes", ErrProjection, out, len(p.Bias), len(p.Sign), len(p.NonZero))
	}
	for k := range out {
		if len(p.Sign[k]) != words || len(p.NonZero[k]) != words {
			return fmt.Errorf("%w: output %d has %d/%d words, want %d", ErrProjection, k, len(p.Sign[k]), len(p.NonZero[k]), words)
		}
		if tail := in % 64; tail != 0 && p.NonZero[k][words-1]>>tail != 0 {
			return fmt.Errorf("%w: output %d has coefficients past input %d", ErrProjection, k, in)
		}
		if !finite32(p.Scale[k]) || !finite32(p.Bias[k]) {
			return fmt.Errorf("%w: output %d has scale %g, bias %g", ErrProjection, k, p.Scale[k], p.Bias[k])
		}
	}
	return nil
}

// projector is a Projection compiled for Predict: per output, the non-zero
// coefficients as entries i<<1 | negative, in ascending i.
type projector struct {
	entries [][]int32
	scale   []float32
	bias    []float32
	// The fast path's layout (projSIMD): outputs in groups of 8 lanes; per
	// group, the inputs with a non-zero coefficient in some lane
	// (ascending) and, per such input, the 8 lanes' coefficients.
	groups []projGroup
	in     int // inputs
}

type projGroup struct {
	idx  []int32
	coef []int8
}

func newProjector(p *Projection, in int) projector {
	pr := projector{entries: make([][]int32, p.Out()), scale: p.Scale, bias: p.Bias, in: in}
	w := make([]int8, in)
	for k := range pr.entries {
		UnpackTernary(w, p.Sign[k], p.NonZero[k])
		var e []int32
		for i, t := range w {
			switch t {
			case 1:
				e = append(e, int32(i)<<1)
			case -1:
				e = append(e, int32(i)<<1|1)
			}
		}
		pr.entries[k] = e
	}
	for g := 0; g < p.Out(); g += 8 {
		var grp projGroup
		lanes := make([][]int8, min(8, p.Out()-g))
		for k := range lanes {
			lanes[k] = make([]int8, in)
			UnpackTernary(lanes[k], p.Sign[g+k], p.NonZero[g+k])
		}
		for i := range in {
			var c [8]int8
			any := false
			for k := range lanes {
				c[k] = lanes[k][i]
				any = any || c[k] != 0
			}
			if any {
				grp.idx = append(grp.idx, int32(i))
				grp.coef = append(grp.coef, c[:]...)
			}
		}
		pr.groups = append(pr.groups, grp)
	}
	return pr
}

// sign maps an entry's low bit to its coefficient; multiplying by ±1 is
// exact, so a fused multiply-add gives the same sum.
var unitSign = [2]float32{1, -1}

// apply writes v = projection of x into dst (len Out). With the fast path
// each output's sum has the same terms in the same order.
func (pr *projector) apply(k *kernels, dst, x []float32) {
	if k.embedSIMD() {
		x = x[:pr.in] // every idx is below in
		var acc [8]float32
		for g, grp := range pr.groups {
			k.projSIMD(&acc, x, grp.idx, grp.coef)
			for k, a := range acc[:min(8, len(pr.scale)-8*g)] {
				o := 8*g + k
				dst[o] = float32(a*pr.scale[o]) - pr.bias[o]
			}
		}
		return
	}
	for k, e := range pr.entries {
		var acc float32
		for _, c := range e {
			acc += unitSign[c&1] * x[c>>1]
		}
		dst[k] = float32(acc*pr.scale[k]) - pr.bias[k]
	}
}

// Apply writes the projection of the scaled input x (len In) into dst (len
// Out). It is meant for training and tools; models compile their projection
// once at load time.
func (p *Projection) Apply(dst, x []float32) error {
	if err := p.Validate(len(x)); err != nil {
		return err
	}
	pr := newProjector(p, len(x))
	pr.apply(&cpu, dst, x)
	return nil
}

// Projector is a compiled Projection for applying it to many rows.
type Projector struct{ pr projector }

// NewProjector validates p for in inputs and compiles it.
func NewProjector(p *Projection, in int) (*Projector, error) {
	if err := p.Validate(in); err != nil {
		return nil, err
	}
	return &Projector{pr: newProjector(p, in)}, nil
}

// Apply writes the projection of x into dst; see Projection.
func (p *Projector) Apply(dst, x []float32) { p.pr.apply(&cpu, dst, x) }
