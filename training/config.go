package training

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/trit-iot/trit/training/ternary"
)

// Config describes one training run. A zero Sigma or C asks for a search over
// the corresponding grid on a validation split carved from the training data
// (never the test set). A nil *Config means all defaults.
type Config struct {
	P     int     // embedding bits; default 2048
	Sigma float64 // kernel width σ; 0 = search SigmaGrid
	C     float64 // regularisation as a linear SVM's C; 0 = search CGrid
	// The ternary objective's λ is 1/(2·n·C), which makes C mean the same as
	// in LIBLINEAR's ½‖w‖² + C Σ ξ (and the paper's grid 10⁻³…10³ apply to both).
	SigmaGrid  []float64 // default 2⁻⁵ … 2⁵
	CGrid      []float64 // default 10⁻³ … 10³
	Validation float64   // fraction of training rows held out for the search; default 0.2
	Seed       uint64    // seeds the transform, the splits and the initialisation subset

	Loss ternary.Loss
	Reg  ternary.Reg
	// Init is "svm" (the paper's: sign of a linear SVM trained on InitRows
	// random rows) or "random" (uniform ternary weights).
	Init     string
	InitRows int // default 2000

	Tol       float64 // solver tolerance; 0 = the solver's default
	MaxRounds int     // solver α-steps; 0 = the solver's default

	Workers  int         // 0 = GOMAXPROCS
	Progress func(Event) // optional progress reports
}

// Event is a progress report: Done of Total units of the named stage.
type Event struct {
	Stage       string
	Done, Total int
}

// PaperSigmaGrid returns 2⁻⁵ … 2⁵, the paper's σ grid and the default.
func PaperSigmaGrid() []float64 {
	var g []float64
	for k := -5; k <= 5; k++ {
		g = append(g, math.Ldexp(1, k))
	}
	return g
}

// PaperCGrid returns 10⁻³ … 10³, the paper's regularisation grid and the
// default.
func PaperCGrid() []float64 { return []float64{1e-3, 1e-2, 1e-1, 1, 10, 100, 1000} }

// ErrConfig reports an unusable Config.
var ErrConfig = errors.New("training: invalid configuration")

func (c *Config) withDefaults() (Config, error) {
	var v Config
	if c != nil {
		v = *c
	}
	if v.P == 0 {
		v.P = 2048
	}
	if len(v.SigmaGrid) == 0 {
		v.SigmaGrid = PaperSigmaGrid()
	}
	if len(v.CGrid) == 0 {
		v.CGrid = PaperCGrid()
	}
	if v.Validation == 0 {
		v.Validation = 0.2
	}
	if v.Init == "" {
		v.Init = "svm"
	}
	if v.InitRows == 0 {
		v.InitRows = 2000
	}
	if v.Workers <= 0 {
		v.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case v.P < 1:
		return v, fmt.Errorf("%w: p = %d", ErrConfig, v.P)
	case v.Sigma < 0 || math.IsNaN(v.Sigma) || math.IsInf(v.Sigma, 0):
		return v, fmt.Errorf("%w: σ = %g", ErrConfig, v.Sigma)
	case v.C < 0 || math.IsNaN(v.C) || math.IsInf(v.C, 0):
		return v, fmt.Errorf("%w: C = %g", ErrConfig, v.C)
	case !(v.Validation > 0 && v.Validation < 1):
		return v, fmt.Errorf("%w: validation fraction %g, want (0, 1)", ErrConfig, v.Validation)
	case v.Init != "svm" && v.Init != "random":
		return v, fmt.Errorf("%w: init %q, want svm or random", ErrConfig, v.Init)
	}
	for _, s := range v.SigmaGrid {
		if !(s > 0) || math.IsInf(s, 0) {
			return v, fmt.Errorf("%w: σ grid value %g", ErrConfig, s)
		}
	}
	for _, c := range v.CGrid {
		if !(c > 0) || math.IsInf(c, 0) {
			return v, fmt.Errorf("%w: C grid value %g", ErrConfig, c)
		}
	}
	return v, nil
}

func (c *Config) report(stage string, done, total int) {
	if c.Progress != nil {
		c.Progress(Event{Stage: stage, Done: done, Total: total})
	}
}
