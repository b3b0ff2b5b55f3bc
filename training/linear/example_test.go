package linear_test

import (
	"fmt"

	"github.com/trit-iot/trit/training/linear"
)

func ExampleTrain() {
	// Four points in 2-D, row-major; the class is the sign of the first
	// feature.
	x := []float32{
		2, 1,
		1, -1,
		-1, 1,
		-2, -1,
	}
	y := []int8{1, 1, -1, -1}
	m, err := linear.Train(x, 4, 2, y, &linear.Options{Bias: 1, Eps: 1e-6})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("converged:", m.Converged)
	for i := range 4 {
		fmt.Printf("row %d: %+.0f\n", i, sign(m.Decision(x[2*i:2*i+2])))
	}
	// Output:
	// converged: true
	// row 0: +1
	// row 1: +1
	// row 2: -1
	// row 3: -1
}

func ExampleTrainOneVsRest() {
	// Three classes on a line: left, middle, right.
	x := []float32{-3, -2.5, 0, 0.2, 3, 2.8}
	labels := []int32{0, 0, 1, 1, 2, 2}
	ms, err := linear.TrainOneVsRest(x, 6, 1, labels, 3, &linear.Options{Bias: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(ms), "models")
	fmt.Println("class 2 claims x = 3:", ms[2].Decision([]float32{3}) > 0)
	// Output:
	// 3 models
	// class 2 claims x = 3: true
}

func ExampleCFromLambda() {
	// The paper's λ‖w‖² + (1/n)Σξ with λ = 1e-4 on 5000 rows.
	fmt.Println(linear.CFromLambda(1e-4, 5000))
	// Output: 1
}

func sign(v float64) float64 {
	if v > 0 {
		return 1
	}
	return -1
}
