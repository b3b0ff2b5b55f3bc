package trees_test

import (
	"fmt"

	"github.com/trit-iot/trit/training/trees"
)

// Two sensors whose reading matters only together: the class is 1 when
// both exceed their thresholds, which one depth-2 tree expresses exactly.
func ExampleFit() {
	const d = 2
	var xs []float32
	var y []int32
	for _, a := range []float32{-0.9, -0.5, -0.1, 0.3, 0.7} {
		for _, b := range []float32{-0.8, -0.4, 0, 0.4, 0.8} {
			xs = append(xs, a, b)
			if a > 0 && b > 0.2 {
				y = append(y, 1)
			} else {
				y = append(y, 0)
			}
		}
	}
	cuts := [][]float32{{-0.7, -0.3, 0.1, 0.5}, {-0.6, -0.2, 0.2, 0.6}}
	tr, err := trees.Fit(xs, len(y), d, y, 2, cuts, &trees.Options{Trees: 1, Depth: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	for l := range tr.Depth {
		fmt.Printf("level %d: x'[%d] > %g\n", l, tr.Feature[l], tr.Value[l])
	}
	fmt.Println("leaf of (0.3, 0.4):", tr.Leaf(0, []float32{0.3, 0.4}))
	// Output:
	// level 0: x'[0] > 0.1
	// level 1: x'[1] > 0.2
	// leaf of (0.3, 0.4): 3
}
