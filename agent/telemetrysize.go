package agent

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/trit-iot/trit/wire"
)

// marshalTelemetry encodes t within what the fleet accepts: at most
// wire.MaxTelemetryClasses classes in Counts and wire.MaxTelemetrySize
// bytes. A bundle may have 4,096 classes and labels of 64 bytes (each
// '<' six bytes in JSON), so a report of every class predicted could be
// far above either bound, and the fleet would refuse it whole. Past them
// the report names the most predicted classes that fit (ties by label)
// and sums the rest in Other (wire.OtherCounts), so its counts still add
// up to its predictions. A shadow report's confusion matrix (up to
// wire.MaxShadowClasses² counts and twice that many labels) can fill the
// cap on its own: when the report does not fit even without class
// counts, the confusion matrix is left out (as for a model of more
// classes) and confusionLeftOut is true; the fleet then judges no
// divergence gate as passed. Only a report too large without either is
// an error (its other parts are bounded well below the cap).
func marshalTelemetry(t *wire.Telemetry) (p []byte, confusionLeftOut bool, err error) {
	all := t.Counts
	p, err = marshalCounts(t)
	var tooLarge *telemetryTooLarge
	if !errors.As(err, &tooLarge) || t.Shadow == nil || len(t.Shadow.Confusion) == 0 {
		return p, false, err
	}
	sh := *t.Shadow
	sh.ActiveClasses, sh.CandidateClasses, sh.Confusion = nil, nil, nil
	t.Shadow, t.Counts, t.Other = &sh, all, nil
	p, err = marshalCounts(t)
	return p, err == nil, err
}

// marshalCounts is marshalTelemetry with the report's parts but Counts
// as they are.
func marshalCounts(t *wire.Telemetry) ([]byte, error) {
	all := t.Counts
	if len(all) <= wire.MaxTelemetryClasses {
		if p, err := t.Marshal(); err != nil || len(p) <= wire.MaxTelemetrySize {
			return p, err
		}
	}
	classes := slices.SortedFunc(maps.Keys(all), func(a, b string) int {
		return cmp.Or(cmp.Compare(all[b], all[a]), cmp.Compare(a, b))
	})
	// keep names the first k classes and sums the rest.
	keep := func(k int) ([]byte, error) {
		t.Counts, t.Other = nil, nil
		if k > 0 {
			t.Counts = make(map[string]uint64, k)
		}
		for i, c := range classes {
			if i < k {
				t.Counts[c] = all[c]
				continue
			}
			if t.Other == nil {
				t.Other = &wire.OtherCounts{}
			}
			t.Other.Classes++
			t.Other.Predictions += all[c]
		}
		return t.Marshal()
	}
	fits := func(k int) bool {
		p, err := keep(k)
		return err == nil && len(p) <= wire.MaxTelemetrySize
	}
	// The most classes that fit, by bisection: fits(lo), not fits(hi).
	lo, hi := 0, min(len(classes), wire.MaxTelemetryClasses)
	if fits(hi) {
		lo = hi
	} else {
		if !fits(0) {
			p, err := keep(0)
			if err != nil {
				return nil, err
			}
			return nil, &telemetryTooLarge{fmt.Sprintf("telemetry report of %d bytes without its %d class counts, above the %d bytes the fleet accepts", len(p), len(classes), wire.MaxTelemetrySize)}
		}
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	return keep(lo)
}

// telemetryTooLarge: a report above wire.MaxTelemetrySize without any
// class counts (marshalCounts).
type telemetryTooLarge struct{ msg string }

func (e *telemetryTooLarge) Error() string { return e.msg }
