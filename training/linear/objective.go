package linear

import "math"

// Objective returns the primal objective ½(‖w‖² + w_b²) + C Σ_i ξ(w; x_i, y_i)
// of m on the data, with C, Loss and Bias taken from opt (nil for defaults)
// as in training; w_b = m.Bias/opt.Bias is the bias feature's weight, which
// LIBLINEAR regularises too. It returns NaN if the options or the data are
// invalid or do not match m (wrong p, or a bias in m without opt.Bias). It is
// for checking results, so it validates as Train does but is not tuned.
func Objective(m *Model, x []float32, n, p int, y []int8, opt *Options) float64 {
	o, err := resolve(opt)
	if err != nil || m == nil || len(m.W) != p || len(y) != n || n <= 0 || p <= 0 ||
		p > math.MaxInt/n || len(x) != n*p {
		return math.NaN()
	}
	var wb float64
	switch {
	case o.Bias > 0:
		wb = m.Bias / float64(o.Bias)
	case m.Bias != 0:
		return math.NaN()
	}
	reg := wb * wb
	for _, v := range m.W {
		reg += v * v
	}
	var loss float64
	for i, yi := range y {
		if yi != -1 && yi != 1 {
			return math.NaN()
		}
		margin := 1 - float64(yi)*(dot(m.W, x[i*p:(i+1)*p])+m.Bias)
		if margin <= 0 {
			continue
		}
		if o.Loss == SquaredHinge {
			margin *= margin
		}
		loss += margin
	}
	return 0.5*reg + o.C*loss
}
