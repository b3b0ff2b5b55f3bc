package benchmark

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/retrain"
)

// `trit-bench retrain`: how long one retraining (retrain.Run, as tritctl
// retrain and the fleet's job run it) takes on a generated recording of
// the given size, and its peak memory: the original training rows, then
// the labelled windows, features uniform on [−1, 1], the class the side
// of a hyperplane that turns by 60° from the first row to the last.

type retrainTimeFlags struct {
	original, windows, features int
	seed                        uint64
	workers                     int
}

func newRetrainTimeCmd(e *env) *cobra.Command {
	f := &retrainTimeFlags{}
	cmd := &cobra.Command{
		Use:   "retrain [flags]",
		Short: "Time one retraining on generated data: original rows plus labelled windows, peak memory",
		Long: `Generate a drifting recording (--original training rows, then --windows
labelled windows; --features features uniform on [-1, 1], the class the side
of a hyperplane that turns by 60 degrees over the recording), train the
active model on the original rows, then run one retraining as 'tritctl
retrain' does (package training/retrain, training's defaults) and report its
wall time, the challenger's comparison, and the process's peak resident
memory.`,
		Example: `  trit-bench retrain --original 20000 --windows 50000`,
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return runRetrainTime(e, f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.original, "original", 20000, "original training rows")
	fl.IntVar(&f.windows, "windows", 50000, "labelled windows")
	fl.IntVar(&f.features, "features", 8, "features")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the data and of training")
	fl.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
	return cmd
}

// turningPlane returns n rows of d features and their classes: the side
// of a hyperplane whose normal turns by 60° from the first row to the last.
func turningPlane(n, d int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 0x6c6f6f70))
	ds := &data.Dataset{Name: "turning-plane", N: n, D: d, X: make([]float32, 0, n*d), Y: make([]int32, n), Classes: []string{"a", "b"}, Ordered: true}
	for i := range d {
		ds.Features = append(ds.Features, fmt.Sprintf("f%d", i+1))
	}
	for i := range n {
		phi := math.Pi / 3 * float64(i) / float64(max(n-1, 1))
		var s float64
		for j := range d {
			x := 2*r.Float64() - 1
			ds.X = append(ds.X, float32(x))
			switch j {
			case 0:
				s += x * math.Cos(phi)
			case 1:
				s += x * math.Sin(phi)
			default:
				s += 0.3 * x / float64(d)
			}
		}
		if s > 0 {
			ds.Y[i] = 1
		}
	}
	return ds
}

func runRetrainTime(e *env, f *retrainTimeFlags) error {
	if f.original < 10 || f.windows < retrain.MinWindows || f.features < 2 {
		return usagef("--original ≥ 10, --windows ≥ %d, --features ≥ 2", retrain.MinWindows)
	}
	all := turningPlane(f.original+f.windows, f.features, f.seed)
	rows := make([]int, f.original)
	for i := range rows {
		rows[i] = i
	}
	orig := all.Subset(rows)
	cfg := &training.Config{Seed: f.seed, Workers: f.workers}
	t0 := time.Now()
	active, err := training.Train(orig, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "retrain: the active model trained on %d rows in %.1f s\n", orig.N, time.Since(t0).Seconds())
	ws := make([]retrain.Window, f.windows)
	for i := range ws {
		row := f.original + i
		ws[i] = retrain.Window{Time: int64(row), X: all.Row(row), Label: all.Classes[all.Y[row]]}
	}
	runtime.GC()
	t1 := time.Now()
	out, err := retrain.Run(context.Background(), active.Model, orig, ws, &retrain.Config{Train: cfg})
	if err != nil {
		return err
	}
	secs := time.Since(t1).Seconds()
	fmt.Fprintf(e.stdout, "retrain: %d original rows + %d labelled windows (%d features): %.1f s wall (held-out fit on %d rows%s), peak RSS of the process %s\n",
		f.original, f.windows, f.features, secs, out.TrainedRows, map[bool]string{true: " and refit", false: ""}[out.Refitted], mib(selfMaxRSS()))
	fmt.Fprintf(e.stdout, "  on the %d newest windows: active %.2f%% (balanced %.2f%%), challenger %.2f%% (balanced %.2f%%): %s\n",
		out.Newest, out.Active.Accuracy, out.Active.Balanced, out.Challenger.Accuracy, out.Challenger.Balanced, out.Why)
	fmt.Fprintf(e.stdout, "  %s, %d CPUs, GOMAXPROCS %d, %s\n", machine(), runtime.NumCPU(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	return nil
}

func mib(b int64) string {
	if b <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
