package api

import (
	"testing"

	"github.com/trit-iot/trit/wire"
)

func TestUnknownRate(t *testing.T) {
	for _, c := range []struct {
		r    *wire.ConfidenceReport
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{&wire.ConfidenceReport{Histogram: make([]uint64, 10)}, 0, false},
		{&wire.ConfidenceReport{Unknown: 3, Histogram: []uint64{0, 0, 0, 0, 0, 0, 0, 0, 4, 8}}, 0.25, true},
	} {
		d := &Device{Confidence: c.r}
		if got, ok := d.UnknownRate(); got != c.want || ok != c.ok {
			t.Errorf("%+v: %v %v, want %v %v", c.r, got, ok, c.want, c.ok)
		}
	}
}
