package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trit-iot/trit/wire"
)

// TestMarshalEventFitsTheCap: a reason of 1,024 '<' (six bytes each in
// JSON) encoded to a 6 KiB event, above wire.MaxEventSize: the fleet
// refused it and the publisher deleted it unacknowledged. The reason is
// now shortened, at a character's start, until the event fits; a reason
// that fits is kept whole.
func TestMarshalEventFitsTheCap(t *testing.T) {
	rollout := strings.Repeat("r", wire.MaxRolloutIDLen)
	for _, c := range []struct {
		name, reason string
		whole        bool
	}{
		{"plain", "bundle-hash: bytes do not hash to the command's bundle", true},
		{"1024 bytes of text", strings.Repeat("x", maxReason), true},
		{"2000 bytes of text", strings.Repeat("x", 2000), false},
		{"1024 '<'", strings.Repeat("<", maxReason), false},
		{"'&' and 'é'", strings.Repeat("&é", 600), false},
		{"not UTF-8", strings.Repeat("\xff", 3000), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &wire.Event{Device: strings.Repeat("d", wire.MaxIDLen), Rollout: rollout, Seq: 1<<64 - 1, State: wire.JobRejected,
				Code: wire.CodeBundleInvalid, Reason: c.reason, Bundle: strings.Repeat("a", 64), HighestSeq: 1<<64 - 1, Time: 1 << 62}
			payload, err := marshalEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			back, err := wire.DecodeEvent(payload)
			if err != nil {
				t.Fatalf("%d bytes: %v", len(payload), err)
			}
			if !utf8.ValidString(c.reason) {
				// Read back as U+FFFD, one a byte sent. encoding/json writes a
				// byte that is not UTF-8 as "\ufffd" (Go 1.26) or as U+FFFD
				// (Go 1.27): either way the reason is cut only if the
				// whole does not fit, and then no further than the cap needs.
				kept := utf8.RuneCountInString(back.Reason)
				if n := len(payload); n > wire.MaxEventSize {
					t.Fatalf("event of %d bytes, over %d", n, wire.MaxEventSize)
				}
				if kept < maxReason {
					more := *ev
					more.Reason = c.reason[:kept+1]
					if p, err := more.Marshal(); err == nil && len(p) <= wire.MaxEventSize {
						t.Fatalf("reason cut to %d bytes, but %d fit (%d bytes)", kept, kept+1, len(p))
					}
				}
				return
			}
			if !strings.HasPrefix(c.reason, back.Reason) || c.whole != (back.Reason == c.reason) {
				t.Fatalf("reason of %d bytes sent as %d bytes (whole: %v, want %v)", len(c.reason), len(back.Reason), back.Reason == c.reason, c.whole)
			}
			if !utf8.ValidString(back.Reason) {
				t.Fatalf("reason cut inside a character: %q", back.Reason[len(back.Reason)-4:])
			}
			// Cut to fit the cap, no more than needed: one more character
			// would not fit.
			if n := len(payload); !c.whole && len(back.Reason) < maxReason-utf8.UTFMax && n < wire.MaxEventSize-8 {
				t.Fatalf("event of %d bytes: reason cut further than the cap needs", n)
			}
		})
	}
}
