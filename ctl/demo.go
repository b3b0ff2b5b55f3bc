package ctl

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/training"
)

func newDemoCmd(e *env) *cobra.Command {
	var keep string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole job end to end on built-in data (nothing to install)",
		Long: `demo generates the paper's two-circles dataset, trains a ternary model with
a small σ×C search, evaluates it on fresh data, writes the model file and
reads it back, and prints what happened at each step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDemo(e, keep) },
	}
	cmd.Flags().StringVar(&keep, "dir", "", "directory for the demo's files (default: a temporary directory, removed afterwards)")
	return cmd
}

func runDemo(e *env, dir string) error {
	w := e.stdout
	start := time.Now()
	if dir == "" {
		tmp, err := os.MkdirTemp("", "trit-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	train := training.TwoCircles(4000, 0.5, 0.1, 1)
	test := training.TwoCircles(2000, 0.5, 0.1, 2)
	fmt.Fprintf(w, "1. data: two concentric noisy circles (the paper's figure), %d training and %d test points\n", train.N, test.N)
	fmt.Fprintln(w, "   no straight line separates them; a Gaussian kernel does")

	prog := &progress{e: e}
	cfg := &training.Config{P: 1024, Seed: 1, SigmaGrid: []float64{0.125, 0.25, 0.5, 1}, CGrid: []float64{0.1, 1, 10}, Progress: prog.report}
	fmt.Fprintf(w, "2. training: p = %d embedding bits, ternary weights, σ and C searched on a validation split\n", cfg.P)
	res, err := training.Train(train, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   chose σ = %g, C = %g; %d of %d coefficients non-zero; %.1f s\n", res.Sigma, res.C, res.NonZero, cfg.P, res.TrainSeconds)

	path := filepath.Join(dir, "circles.model")
	size, err := writeModel(path, res.Spec)
	if err != nil {
		return err
	}
	m, _, err := readModelSized(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "3. model written and read back: %s, %d bytes\n", path, size)

	ev, err := training.Evaluate(m, test, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "4. test accuracy: %.2f%% (%d of %d)\n\n", ev.Accuracy, ev.Correct, ev.N)
	printConfusion(w, ev)

	x := []float32{0.05, -0.4}
	scores := make([]float32, 2)
	c, err := m.Predict(scores, x)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n5. one prediction: point (%g, %g) → %q (scores %.3f, %.3f)\n", x[0], x[1], m.Classes()[c], scores[0], scores[1])
	fmt.Fprintf(w, "\ndemo finished in %.1f s\n", time.Since(start).Seconds())
	return nil
}
