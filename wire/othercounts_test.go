package wire

import (
	"errors"
	"strings"
	"testing"
)

// TestTelemetryOtherCounts: a report names at most MaxTelemetryClasses
// classes and sums the rest in counts_other, which must add up: each class
// left out predicted at least once, and with counts at most the
// interval's predictions.
func TestTelemetryOtherCounts(t *testing.T) {
	m := &Telemetry{Device: "d", Session: 1, Seq: 1, Predictions: 10, Counts: map[string]uint64{"a": 4, "b": 2},
		Other: &OtherCounts{Classes: 3, Predictions: 4}}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"counts_other":{"classes":3,"predictions":4}`) {
		t.Fatalf("encoded as %s", b)
	}
	back, err := DecodeTelemetry(b)
	if err != nil {
		t.Fatal(err)
	}
	if *back.Other != *m.Other {
		t.Fatalf("counts_other %+v, want %+v", back.Other, m.Other)
	}
	// Without it, nothing changes: agents before it send none.
	m.Other = nil
	if b, _ = m.Marshal(); strings.Contains(string(b), "counts_other") {
		t.Fatalf("encoded as %s", b)
	}
	for _, c := range []struct{ other, msg string }{
		{`{"classes":0,"predictions":0}`, "no classes"},
		{`{"classes":3,"predictions":2}`, "2 predictions of 3 classes"},
		{`{"classes":1,"predictions":5}`, "5 predictions and the counts' 6 add up to more than the interval's 10"},
		{`{"classes":1,"predictions":18446744073709551615}`, "18446744073709551615 predictions and the counts' 6 add up"},
	} {
		data := `{"v":1,"device":"d","session":1,"seq":1,"from":0,"to":0,"predictions":10,"counts":{"a":4,"b":2},"counts_other":` + c.other + `}`
		_, err := DecodeTelemetry([]byte(data))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "field counts_other: "+c.msg) {
			t.Errorf("%s: got %v, want %q", c.other, err, c.msg)
		}
	}
}
