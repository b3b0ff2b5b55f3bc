package linear

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Train solves a two-class problem. x is row-major n×p float32 or int8 (row
// i is x[i*p:(i+1)*p]) and is only read; y[i] ∈ {−1,+1}. opt may be nil for
// defaults. int8 rows give the model float32 rows of the same values give.
func Train[T Value](x []T, n, p int, y []int8, opt *Options) (*Model, error) {
	o, err := resolve(opt)
	if err != nil {
		return nil, err
	}
	if len(y) != n {
		return nil, fmt.Errorf("%w: len(y) = %d, want n = %d", ErrShape, len(y), n)
	}
	for i, v := range y {
		if v != -1 && v != 1 {
			return nil, fmt.Errorf("%w: y[%d] = %d, want −1 or +1", ErrLabel, i, v)
		}
	}
	pr, err := newProblem(x, n, p, o.Bias)
	if err != nil {
		return nil, err
	}
	return pr.solve(y, &o, newWorkspace(n)), nil
}

// TrainOneVsRest trains one model per class c ∈ [0, classes), with rows of
// class c as +1 and all others as −1, so models[c].Decision scores class c.
// labels[i] is the class of row i. Classes are trained in parallel on up to
// GOMAXPROCS workers; each uses opt.Seed and shares x, so the models are the
// same whatever the worker count. Each worker needs about 13·n bytes plus
// 8·p per model.
func TrainOneVsRest[T Value](x []T, n, p int, labels []int32, classes int, opt *Options) ([]*Model, error) {
	o, err := resolve(opt)
	if err != nil {
		return nil, err
	}
	if classes < 2 {
		return nil, fmt.Errorf("%w: classes = %d, want ≥ 2", ErrLabel, classes)
	}
	if len(labels) != n {
		return nil, fmt.Errorf("%w: len(labels) = %d, want n = %d", ErrShape, len(labels), n)
	}
	for i, c := range labels {
		if c < 0 || int(c) >= classes {
			return nil, fmt.Errorf("%w: labels[%d] = %d, want in [0, %d)", ErrLabel, i, c, classes)
		}
	}
	pr, err := newProblem(x, n, p, o.Bias)
	if err != nil {
		return nil, err
	}

	models := make([]*Model, classes)
	workers := min(runtime.GOMAXPROCS(0), classes)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := newWorkspace(n)
			y := make([]int8, n)
			for {
				c := int(next.Add(1) - 1)
				if c >= classes {
					return
				}
				for i, l := range labels {
					y[i] = -1
					if int(l) == c {
						y[i] = 1
					}
				}
				models[c] = pr.solve(y, &o, ws)
			}
		}()
	}
	wg.Wait()
	return models, nil
}
