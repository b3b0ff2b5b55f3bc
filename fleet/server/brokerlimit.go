package server

import (
	"log/slog"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
)

// brokerLimits is the embedded broker's per-device limits (a mochi hook):
// every device's publishes pass its token buckets (limit.go); the fleet's
// own identity is not limited.
//
//   - A QoS 0 publish over the budget is dropped and counted for the
//     device (Limited.Rate or .Bytes). Nothing waits for it.
//   - A QoS 1 or 2 publish over the budget waits until the budget allows
//     it, then goes on (Limited.Throttled): the hook runs in the client's
//     own read loop, so the broker reads that connection no faster than the
//     device's rate, and TCP makes the device wait. Nothing is lost (an
//     agent draining its outbox after an outage is slowed, not cut) and no
//     other client waits.
//
// Counts are kept per device until TakeLimited takes them; log lines are
// at most one per device per limitLogEvery, with the counts since the last.
type brokerLimits struct {
	mochi.HookBase
	fleetID string
	limits  *deviceLimits
	log     *slog.Logger
	now     func() time.Time

	mu     sync.Mutex
	counts map[string]*api.Limited // since the last TakeLimited
	logged map[string]*limitLog
}

// limitLog is what was last logged of a device.
type limitLog struct {
	at    time.Time
	since api.Limited // counted since that line
}

// limitLogEvery bounds the log lines about one device.
const limitLogEvery = time.Minute

// maxCounted bounds the devices whose counts wait for TakeLimited; beyond
// it (a service that never takes them), new devices are only logged.
const maxCounted = 1 << 16

func newBrokerLimits(fleetID string, l Limit, log *slog.Logger) *brokerLimits {
	return &brokerLimits{fleetID: fleetID, limits: newDeviceLimits(l), log: log, now: time.Now,
		counts: map[string]*api.Limited{}, logged: map[string]*limitLog{}}
}

// ID implements mochi.Hook.
func (h *brokerLimits) ID() string { return "trit-limits" }

// Provides implements mochi.Hook.
func (h *brokerLimits) Provides(b byte) bool { return b == mochi.OnPublish }

// OnPublish implements mochi.Hook. It runs after the ACL check.
func (h *brokerLimits) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	user := string(cl.Properties.Username)
	if cl.Net.Inline || user == h.fleetID || user == "" {
		return pk, nil
	}
	now := h.now()
	if pk.FixedHeader.Qos == 0 {
		switch h.limits.allow(user, len(pk.Payload), now) {
		case overRate:
			h.count(user, api.Limited{Rate: 1, Last: now})
			return pk, packets.ErrRejectPacket
		case overBytes:
			h.count(user, api.Limited{Bytes: 1, Last: now})
			return pk, packets.ErrRejectPacket
		}
		return pk, nil
	}
	if d := h.limits.wait(user, len(pk.Payload), now); d > 0 {
		h.count(user, api.Limited{Throttled: 1, Last: now})
		time.Sleep(d)
	}
	return pk, nil
}

// count adds c to device's counts and logs it if due.
func (h *brokerLimits) count(device string, c api.Limited) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if x := h.counts[device]; x != nil {
		x.Add(c)
	} else if len(h.counts) < maxCounted {
		h.counts[device] = &c
	}
	l := h.logged[device]
	if l == nil {
		h.logged[device] = &limitLog{at: c.Last}
		h.log.Warn("embedded broker: device over its per-device limit; its QoS 0 messages beyond it are dropped, QoS 1 ones delayed",
			"device", fault.Clip(device, 100), "rate", h.limits.lim.Rate, "burst", h.limits.lim.Burst, "byte_rate", h.limits.lim.ByteRate)
		return
	}
	l.since.Add(c)
	if c.Last.Sub(l.at) >= limitLogEvery {
		h.logLine(device, l, c.Last)
	}
}

// logLine logs the counts since l's last line. Called with mu held.
func (h *brokerLimits) logLine(device string, l *limitLog, now time.Time) {
	h.log.Warn("embedded broker: device still over its per-device limit", "device", fault.Clip(device, 100),
		"dropped", l.since.Dropped(), "throttled", l.since.Throttled, "since", l.at.UTC().Format(time.RFC3339))
	l.at, l.since = now, api.Limited{}
}

// TakeLimited returns the counts per device since the last call and
// forgets them; it also logs the counts of devices that went quiet since
// their last line, and forgets devices quiet for longer.
func (h *brokerLimits) TakeLimited() map[string]api.Limited {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]api.Limited, len(h.counts))
	for id, c := range h.counts {
		out[id] = *c
	}
	clear(h.counts)
	for id, l := range h.logged {
		if now.Sub(l.at) < limitLogEvery {
			continue
		}
		if l.since == (api.Limited{}) {
			delete(h.logged, id)
		} else {
			h.logLine(id, l, now)
		}
	}
	return out
}
