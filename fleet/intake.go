package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

type message struct {
	topic   string
	payload []byte
}

// Deliver hands an incoming message to the service loop. It never blocks:
// when the queue is full the message is dropped and counted (devices re-send
// unacknowledged events, and states are retained).
func (s *Service) Deliver(topic string, payload []byte) {
	select {
	case s.in <- message{topic: topic, payload: payload}:
	default:
		s.metrics.dropped.Add(1)
		s.log.Warn("incoming queue full; message dropped", "topic", topic)
	}
}

// maxBatch bounds the messages handled in one store transaction.
const maxBatch = 512

// Run handles incoming messages and steps the rollouts until ctx ends.
// Messages that arrive together are handled in one store transaction (a
// group commit): with a thousand devices reporting, one fsync per message
// would be the fleet's bottleneck.
func (s *Service) Run(ctx context.Context) error {
	tick := time.NewTicker(s.opt.Tick)
	defer tick.Stop()
	s.Tick()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-s.in:
			s.handleBatch(s.collect(m))
		case <-tick.C:
			s.Tick()
		}
	}
}

// collect returns first and whatever else is queued, up to maxBatch.
func (s *Service) collect(first message) []message {
	batch := []message{first}
	for len(batch) < maxBatch {
		select {
		case m := <-s.in:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// Drain handles every message queued so far (for tests and shutdown).
func (s *Service) Drain() {
	for {
		select {
		case m := <-s.in:
			s.handleBatch(s.collect(m))
		default:
			return
		}
	}
}

// decoded is an incoming message that passed its decoder.
type decoded struct {
	device    string
	state     *wire.State
	event     *wire.Event
	telemetry *wire.Telemetry
	response  *wire.Response
}

// decode checks one message's topic and payload; a bad one is logged,
// counted and dropped (nil).
func (s *Service) decode(m message) *decoded {
	t, err := wire.ParseTopic(m.topic)
	if err != nil || t.Fleet != s.topics.Fleet() {
		s.log.Warn("message on an unexpected topic dropped", "topic", m.topic, "err", err)
		return nil
	}
	d := &decoded{device: t.Device}
	var named string
	switch t.Kind {
	case wire.KindState:
		if d.state, err = wire.DecodeState(m.payload); err == nil {
			named = d.state.Device
		}
	case wire.KindEvents:
		if d.event, err = wire.DecodeEvent(m.payload); err == nil {
			named = d.event.Device
		}
	case wire.KindTelemetry:
		if d.telemetry, err = wire.DecodeTelemetry(m.payload); err == nil {
			named = d.telemetry.Device
		}
	case wire.KindResponses:
		if d.response, err = wire.DecodeResponse(m.payload); err == nil {
			named = d.response.Device
		}
	default:
		s.log.Warn("message on a fleet-to-device topic dropped", "topic", m.topic)
		return nil
	}
	if err == nil && named != t.Device {
		err = fmt.Errorf("payload names device %q on %s's topic", named, t.Device)
	}
	if err != nil {
		s.metrics.invalid.Add(1)
		s.log.Warn("invalid device message dropped", "topic", m.topic, "err", err)
		return nil
	}
	return d
}

// handleBatch applies a batch of messages in one transaction, then
// acknowledges its events. If the transaction fails nothing is
// acknowledged, and the devices re-send their events.
func (s *Service) handleBatch(batch []message) {
	var msgs []*decoded
	for _, m := range batch {
		d := s.decode(m)
		switch {
		case d == nil:
		case d.response != nil:
			// Responses go to their waiters; nothing is stored.
			if !s.reqs.deliver(d.device, d.response) {
				s.log.Debug("response nobody waits for dropped", "device", d.device, "id", d.response.ID)
			}
		default:
			msgs = append(msgs, d)
		}
	}
	if len(msgs) == 0 {
		return
	}
	now := s.opt.Now()
	acks := map[string][]string{} // device -> event IDs
	var finished []DeviceState
	var alerts []string // devices whose drift crossed the alert threshold
	s.mu.Lock()
	err := s.db.Update(func(tx *store.Tx) error {
		clear(acks)
		finished, alerts = finished[:0], alerts[:0]
		devices := map[string]*Device{}
		rollouts := map[string]*Rollout{} // nil value: not found
		changed := map[string]bool{}      // rollouts to write back
		rollout := func(id string) (*Rollout, error) {
			r, seen := rollouts[id]
			if seen {
				return r, nil
			}
			var rr Rollout
			ok, err := tx.Get(store.FleetRollouts, id, &rr)
			if err != nil {
				return nil, err
			}
			if ok {
				r = &rr
			}
			rollouts[id] = r
			return r, nil
		}
		device := func(id string) (*Device, error) {
			if d := devices[id]; d != nil {
				return d, nil
			}
			d, err := getDevice(tx, id)
			devices[id] = d
			return d, err
		}
		for _, m := range msgs {
			d, err := device(m.device)
			if err != nil {
				return err
			}
			switch {
			case m.state != nil:
				if d.applyState(m.state, now) == stateNewLife {
					s.log.Warn("device started a new life: its database was reset or replaced (or two gateways share its ID)",
						"device", d.ID, "instance", m.state.Instance, "session", m.state.Session)
				}
			case m.telemetry != nil:
				s.metrics.telemetry.Add(1)
				wasDrifting := d.Drifting
				d.applyTelemetry(m.telemetry, now, s.opt.DriftAlert)
				if d.Drifting && !wasDrifting {
					s.metrics.driftAlerts.Add(1)
					alerts = append(alerts, d.ID)
				}
				if sh := m.telemetry.Shadow; sh != nil {
					r, err := rollout(sh.Rollout)
					if err != nil {
						return err
					}
					if r != nil {
						if r.ApplyShadow(d.ID, sh, now) {
							changed[sh.Rollout] = true
						}
					}
				}
			case m.event != nil:
				ev := m.event
				d.applyEvent(ev, now)
				r, err := rollout(ev.Rollout)
				if err != nil {
					return err
				}
				if r != nil {
					ds, _ := deviceState(ev.State)
					reason := ev.Reason
					if ev.Code != "" {
						reason = ev.Code + ": " + reason
					}
					// A device that refused the command as superseded told us
					// its highest sequence (applyEvent moved the counter past
					// it): the command goes again, above it.
					resend := ev.State == wire.JobRejected && ev.Code == wire.CodeSuperseded &&
						ev.HighestSeq >= ev.Seq && d.LastSeq >= ev.HighestSeq
					rep := Report{Device: ev.Device, Seq: ev.Seq, State: ds, Reason: reason, Resend: resend}
					if r.Apply(rep, now) {
						changed[ev.Rollout] = true
						if ds.Finished() && !r.Devices[ev.Device].Resend {
							finished = append(finished, ds)
						}
					}
				}
				acks[ev.Device] = append(acks[ev.Device], ev.ID)
			}
		}
		for id, d := range devices {
			if err := tx.Put(store.FleetDevices, id, d); err != nil {
				return err
			}
		}
		for id, r := range rollouts {
			if r != nil && changed[id] {
				if err := tx.Put(store.FleetRollouts, id, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
	s.mu.Unlock()
	if err != nil {
		s.log.Error("storing device messages failed; events not acknowledged, devices will re-send them", "messages", len(msgs), "err", err)
		return
	}
	for _, ds := range finished {
		s.metrics.finished(ds)
	}
	for _, id := range alerts {
		s.log.Warn("device input drifted past the alert threshold", "device", id, "threshold", s.opt.DriftAlert)
	}
	for device, ids := range acks {
		for len(ids) > 0 {
			k := min(len(ids), wire.MaxAckIDs)
			ack := &wire.Ack{Device: device, IDs: ids[:k]}
			ids = ids[k:]
			raw, err := ack.Marshal()
			if err == nil {
				err = s.pub.Publish(s.topics.Acks(device), 1, false, raw)
			}
			if err != nil {
				s.log.Warn("ack not sent; the device will re-send its events", "device", device, "err", err)
			}
		}
	}
}

// deviceState maps a job state to a rollout device state.
func deviceState(j wire.JobState) (DeviceState, bool) {
	switch j {
	case wire.JobQueued:
		return DeviceQueued, true
	case wire.JobDownloading:
		return DeviceDownloading, true
	case wire.JobInstalling:
		return DeviceInstalling, true
	case wire.JobSucceeded:
		return DeviceSucceeded, true
	case wire.JobFailed:
		return DeviceFailed, true
	case wire.JobRejected:
		return DeviceRejected, true
	}
	return "", false
}
