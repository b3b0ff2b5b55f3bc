package cli

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseGrid(t *testing.T) {
	if g, err := ParseGrid("c-grid", ""); g != nil || err != nil {
		t.Errorf("empty: %v %v", g, err)
	}
	if g, err := ParseGrid("c-grid", "0.5, 1,2e3"); err != nil || !reflect.DeepEqual(g, []float64{0.5, 1, 2000}) {
		t.Errorf("%v %v", g, err)
	}
	for _, in := range []string{"0", "-1", "x", "1,,2", "NaN", "1,"} {
		var ue *UsageError
		if _, err := ParseGrid("c-grid", in); !errors.As(err, &ue) {
			t.Errorf("ParseGrid(%q): %v, want a usage error", in, err)
		}
	}
}
