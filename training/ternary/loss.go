// Package ternary learns a linear classifier with ternary weights
// w ∈ {-1, 0, +1}^p and a scale α > 0 on binary features z ∈ {-1, +1}^p,
// by the alternating method of Lei & Lan (Algorithm 1):
//
//	min_{α>0, w∈{-1,0,1}^p}  (1/n) Σ_i ℓ(y_i · α wᵀz_i) + λ·R(α, w)
//
// with R = α²‖w‖² (l2, the paper's) or α‖w‖₁ (l1). It alternates the exact
// minimiser over α for fixed w with sweeps of bit-by-bit coordinate descent
// that try -1, 0 and +1 for each w_j. Every step can only lower the
// objective, which is the paper's convergence lemma; the solver checks it.
package ternary

import (
	"fmt"
	"math"
)

// Loss is a margin loss ℓ(s) of s = y·α·wᵀz.
type Loss int

// Supported losses.
const (
	Hinge        Loss = iota // max(0, 1-s), the paper's default
	SquaredHinge             // max(0, 1-s)²
	Logistic                 // log(1 + e^-s)
	Square                   // (1-s)²
)

var lossNames = [...]string{"hinge", "squared-hinge", "logistic", "square"}

func (l Loss) String() string {
	if l >= 0 && int(l) < len(lossNames) {
		return lossNames[l]
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// ParseLoss returns the Loss named s (as String prints it).
func ParseLoss(s string) (Loss, error) {
	for i, n := range lossNames {
		if n == s {
			return Loss(i), nil
		}
	}
	return 0, fmt.Errorf("unknown loss %q (want hinge, squared-hinge, logistic or square)", s)
}

// Value returns ℓ(s).
func (l Loss) Value(s float64) float64 {
	switch l {
	case Hinge:
		return math.Max(0, 1-s)
	case SquaredHinge:
		v := math.Max(0, 1-s)
		return v * v
	case Logistic:
		// log(1+e^-s) without overflow for large |s|.
		if s > 0 {
			return math.Log1p(math.Exp(-s))
		}
		return -s + math.Log1p(math.Exp(s))
	default:
		return (1 - s) * (1 - s)
	}
}

// Reg is the regulariser R(α, w).
type Reg int

// Supported regularisers. On ternary weights ‖w‖₁ = ‖w‖², so the two differ
// in how the penalty scales with α.
const (
	L2 Reg = iota // α²‖w‖², the paper's
	L1            // α‖w‖₁
)

func (r Reg) String() string {
	if r == L1 {
		return "l1"
	}
	return "l2"
}

// ParseReg returns the Reg named s ("l1" or "l2").
func ParseReg(s string) (Reg, error) {
	switch s {
	case "l2":
		return L2, nil
	case "l1":
		return L1, nil
	}
	return 0, fmt.Errorf("unknown regulariser %q (want l1 or l2)", s)
}

// penalty returns R(α, w) for r = ‖w‖² = ‖w‖₁ non-zero weights.
func (r Reg) penalty(alpha float64, nnz int) float64 {
	if r == L1 {
		return alpha * float64(nnz)
	}
	return alpha * alpha * float64(nnz)
}
