package console

import (
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// TestDeviceLimitedShown: the device page counts the messages its
// per-device limits dropped and delayed; a device never limited says so.
func TestDeviceLimitedShown(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"flood", "quiet"} {
		f.deliver(f.svc.Topics().State(id), &wire.State{Device: id, Session: 1, Online: true, Health: "ok"})
	}
	counts := map[string]api.Limited{"flood": {Rate: 44552, Queue: 3, Throttled: 7, Last: f.clk.now().Add(-time.Minute)}}
	f.svc.CountLimitedBy(func() map[string]api.Limited { c := counts; counts = nil; return c })
	f.svc.Drain()
	c := f.client().login()
	limits := func(id string) string {
		_, s, _ := strings.Cut(c.get("/console/devices/"+id).body, "<dt>Limits</dt>")
		s, _, _ = strings.Cut(s, "</dd>")
		return s
	}
	for _, w := range []string{"44,555 messages dropped", "rate 44,552", "queue 3", "7 delayed"} {
		if got := limits("flood"); !strings.Contains(got, w) {
			t.Errorf("the flooder's limits %q do not say %q", got, w)
		}
	}
	if got := limits("quiet"); !strings.Contains(got, "never limited") {
		t.Errorf("a device never limited: %q", got)
	}
}
