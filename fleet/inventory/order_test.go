package inventory

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/trit-iot/trit/wire"
)

// simDevice makes what one agent instance publishes over a life of
// processes, connections, installs, label changes and telemetry, as the
// agent does: each connection a new session, each process a boot number
// from the same counter, states and events stamped by the device clock,
// a state after every install, a Last Will when a connection ends.
type simDevice struct {
	r        *rand.Rand
	counter  uint64 // the durable session counter
	boot     uint64
	n        uint32
	session  uint64 // 0: not connected
	telSeq   uint64
	job      uint64
	model    *wire.ModelRef
	previous *wire.ModelRef
	labels   map[string]string
	msgs     []simMsg
	reports  uint64 // predictions over all reports made
}

type simMsg struct {
	state     *wire.State
	event     *wire.Event
	telemetry *wire.Telemetry
}

func (s *simDevice) stamp() wire.Clock { s.n++; return wire.ClockAt(s.boot, s.n) }

func (s *simDevice) start() { s.counter++; s.boot, s.n, s.telSeq = s.counter, 0, 0 }

func (s *simDevice) state(online bool) {
	st := &wire.State{Device: "gw", Session: s.session, Online: online, Instance: "00000000000000aa"}
	if online {
		st.Clock = s.stamp()
		st.Model, st.Previous, st.Labels = s.model, s.previous, maps.Clone(s.labels)
	}
	s.msgs = append(s.msgs, simMsg{state: st})
}

func (s *simDevice) connect() { s.counter++; s.session = s.counter; s.state(true) }

func (s *simDevice) disconnect() { s.state(false); s.session = 0 } // the will, or the clean offline state

func (s *simDevice) install() {
	s.job++
	ev := func(st wire.JobState, m *wire.ModelRef) {
		e := &wire.Event{Device: "gw", Rollout: "r", Seq: s.job, State: st, Model: m, Clock: s.stamp()}
		e.ID = wire.EventID(e.Rollout, e.Seq, e.State)
		s.msgs = append(s.msgs, simMsg{event: e})
	}
	ev(wire.JobQueued, nil)
	ev(wire.JobInstalling, nil)
	s.previous = s.model
	s.model = &wire.ModelRef{ID: "m", Release: s.job, Bundle: fmt.Sprintf("%064x", s.job)}
	ev(wire.JobSucceeded, s.model)
	if s.session != 0 {
		s.state(true)
	}
}

func (s *simDevice) report() {
	s.telSeq++
	p := uint64(s.r.IntN(10) + 1)
	s.reports += p
	s.msgs = append(s.msgs, simMsg{telemetry: &wire.Telemetry{Device: "gw", Boot: s.boot, Session: max(s.session, s.boot), Seq: s.telSeq, Predictions: p}})
}

// TestDeviceRecordIgnoresOrder: whatever order a device's messages reach
// the fleet in, however many times each (redeliveries, replicas each
// receiving it, retained states read again after a reconnection, a
// PostgreSQL restart's unacknowledged batch handed over later), the
// record ends showing what the device last reported: its model, previous
// model, labels and whether it is online, every telemetry report counted
// once and none missing. Issue 39: 4 of 9 records showed the previous
// release after a PostgreSQL restart while the devices ran the new one.
func TestDeviceRecordIgnoresOrder(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 39))
		s := &simDevice{r: r, labels: map[string]string{"site": "a"}}
		s.start()
		s.connect()
		for range 10 + r.IntN(40) {
			switch k := r.IntN(20); {
			case k < 4:
				s.install()
			case k < 6:
				s.labels = map[string]string{"site": fmt.Sprint("s", r.IntN(100))}
				if s.session != 0 {
					s.state(true)
				}
			case k < 7 && s.session != 0:
				s.disconnect()
				if r.IntN(2) == 0 {
					s.start() // the process restarted
				}
				s.connect()
			default:
				s.report()
			}
		}
		// Deliveries: every message at least once, some up to three
		// times, in random order.
		var deliver []simMsg
		for _, m := range s.msgs {
			for range 1 + r.IntN(3) {
				deliver = append(deliver, m)
			}
		}
		r.Shuffle(len(deliver), func(i, j int) { deliver[i], deliver[j] = deliver[j], deliver[i] })
		d := &Device{}
		d.ID = "gw"
		d.LastSeq = s.job
		for _, m := range deliver {
			switch {
			case m.state != nil:
				d.ApplyState(m.state, testNow)
			case m.event != nil:
				d.ApplyEvent(m.event, testNow)
			case !d.TelemetrySeen(m.telemetry):
				d.ApplyTelemetry(m.telemetry, testNow)
			}
		}
		if !sameRef(d.Model, s.model) || !sameRef(d.Previous, s.previous) || !maps.Equal(d.Labels, s.labels) || !d.Online || d.Session != s.session {
			t.Fatalf("seed %d: record shows model %v previous %v labels %v online %v session %d; the device last said %v, %v, %v, online, session %d",
				seed, d.Model, d.Previous, d.Labels, d.Online, d.Session, s.model, s.previous, s.labels, s.session)
		}
		if d.Predictions != s.reports || d.TelemetryMissing != 0 {
			t.Fatalf("seed %d: %d predictions, %d reports missing; want %d, 0", seed, d.Predictions, d.TelemetryMissing, s.reports)
		}
	}
}

func sameRef(a, b *wire.ModelRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
