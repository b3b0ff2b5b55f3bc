package agent

import (
	"unicode/utf8"

	"github.com/trit-iot/trit/wire"
)

// maxReason bounds an event's reason, in bytes of text.
const maxReason = 1024

// marshalEvent encodes ev within wire.MaxEventSize, shortening its reason
// as far as needed. JSON writes '<', '>' and '&' as six bytes each
// (\u003c), and a byte that is not UTF-8 as three (U+FFFD) or, before Go
// 1.27, six (\ufffd), so a reason of maxReason bytes can encode to 6 KiB;
// the fleet refuses an event above the cap, and the publisher, whose own
// DecodeEvent then fails too, would send it once as a plain message and
// delete it unacknowledged: the job's event lost.
func marshalEvent(ev *wire.Event) ([]byte, error) {
	ev.Reason = cutText(ev.Reason, maxReason)
	payload, err := ev.Marshal()
	if err != nil || len(payload) <= wire.MaxEventSize {
		return payload, err
	}
	// The longest cut that fits, by bisection (a reason's bytes encode to
	// one to six bytes each): fits(lo) holds, fits(hi) does not; an event
	// with no reason is far below the cap.
	whole := ev.Reason
	lo, hi := 0, len(whole)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ev.Reason = cutText(whole, mid)
		if p, err := ev.Marshal(); err == nil && len(p) <= wire.MaxEventSize {
			lo = mid
		} else {
			hi = mid
		}
	}
	ev.Reason = cutText(whole, lo)
	return ev.Marshal()
}

// cutText returns s cut to at most n bytes at the start of a character.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
