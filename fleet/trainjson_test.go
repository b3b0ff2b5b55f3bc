package fleet

import (
	"encoding/json"
	"testing"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/training"
)

// The API's Structure and ClassScore are training's, converted: the
// compiler keeps their fields the same, and this their JSON names.
func TestTrainJobJSONIsTrainings(t *testing.T) {
	st := training.Structure{Thresholds: 1, Projection: 2, P: 3, Binary: true, ThresholdWeight: 4, Trees: 5, Depth: 6, Planes: 7}
	cs := training.ClassScore{Class: "a", Rows: 1, Recall: 2, Precision: 3}
	for _, pair := range [][2]any{{st, api.Structure(st)}, {cs, api.ClassScore(cs)}} {
		want, err := json.Marshal(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("API JSON %s, training's %s", got, want)
		}
	}
}
