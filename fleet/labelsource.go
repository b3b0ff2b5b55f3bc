package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Labels from gateways (docs/FLEET.md "Closing the loop"): a device whose
// agent has a label source (a sensor channel reporting ground truth,
// paired with each window by its reading) says so in its state
// (wire.State.LabelSource). Every LabelPull the leading replica asks each
// such online device for the windows it labelled (wire.RequestLabels),
// stores them labelled in one transaction with the device's
// acknowledgement point — the newest reading time of its windows the
// store now holds — and sends that point with its next request, after
// which the device drops those windows. So a window leaves the device
// only once a transaction holding it committed: a fleet killed between
// the answer and the commit asks again from the old point, a device
// restarted keeps its windows in its database, and a window sent twice is
// stored once (windows are keyed by device and reading time).
//
// A window whose label is not one of the classes of the bundle that
// classified it is refused (logged with the count and the label; it is
// acknowledged, so it is not sent again); a window the store has no room
// for (only labelled windows left, windows.go) is not acknowledged, and
// neither is any later one.
//
// Damaged records (damaged.go) stop no answer:
//   - A window whose stored record does not decode is skipped, never
//     overwritten (it may hold a person's label), and acknowledged: the
//     acknowledgement is one point in time, so holding it back would hold
//     back every later window of the device for good, until its ring
//     overflowed and dropped them. It is named in the log with the label
//     the device gave it (labelSkip), so the label can be given again
//     once a backup restored the record.
//   - An acknowledgement point that does not decode is taken as none
//     (labelAck): the device is asked for every window it holds, those
//     stored already are stored once (windows are keyed by device and
//     reading time), and the point is written again with the answer.
//   - A damaged count document is recounted (windows.go).

// DefaultLabelPull is how often devices with a label source are asked
// for their labelled windows.
const DefaultLabelPull = 30 * time.Second

// maxLabelPulls bounds the label requests in flight at once.
const maxLabelPulls = 16

const labelAckPrefix = "source/"

// labelPuller is the leader's bookkeeping of label requests.
type labelPuller struct {
	mu       sync.Mutex
	last     time.Time
	inflight map[string]bool
}

// pullLabels asks every online device with a label source for its
// labelled windows, at most every LabelPull (the leader's tick).
func (s *Service) pullLabels(now time.Time) {
	every := s.opt.LabelPull
	if every < 0 {
		return
	}
	if every == 0 {
		every = DefaultLabelPull
	}
	p := &s.labels
	p.mu.Lock()
	if now.Sub(p.last) < every {
		p.mu.Unlock()
		return
	}
	p.last = now
	if p.inflight == nil {
		p.inflight = map[string]bool{}
	}
	p.mu.Unlock()
	devices, err := inventory.Devices(s.db)
	if err != nil {
		s.log.Error("label sources: reading the inventory failed", "err", err)
		return
	}
	for _, d := range devices {
		if d.LabelSource == "" || !d.Online {
			continue
		}
		p.mu.Lock()
		busy := p.inflight[d.ID] || len(p.inflight) >= maxLabelPulls
		if !busy {
			p.inflight[d.ID] = true
		}
		p.mu.Unlock()
		if busy {
			continue
		}
		go func(id string) {
			defer func() { p.mu.Lock(); delete(p.inflight, id); p.mu.Unlock() }()
			if _, err := s.PullLabels(context.Background(), id); err != nil {
				s.log.Warn("label source: pulling labelled windows failed", "device", id, "err", fault.Clip(err.Error(), fault.MaxLogField))
			}
		}(d.ID)
	}
}

// PullLabels asks device for the windows its label source labelled since
// the store's acknowledgement point and stores them, asking again while
// the device says it holds more than fitted in its answer (at most
// maxLabelRounds times); it returns how many it stored.
func (s *Service) PullLabels(ctx context.Context, device string) (int, error) {
	total := 0
	for range maxLabelRounds {
		n, more, err := s.pullLabelsOnce(ctx, device)
		total += n
		if err != nil || !more {
			return total, err
		}
	}
	return total, nil
}

// maxLabelRounds bounds the requests of one PullLabels.
const maxLabelRounds = 64

func (s *Service) pullLabelsOnce(ctx context.Context, device string) (int, bool, error) {
	after, err := labelAck(s.db.Get, device)
	if err != nil && !fault.IsDamaged(err) {
		return 0, false, err
	}
	r, err := s.request(ctx, &wire.Request{Device: device, Kind: wire.RequestLabels, After: after}, 0)
	if err != nil {
		return 0, false, err
	}
	if r.Error != "" {
		return 0, false, fmt.Errorf("%s: %s", device, r.Error)
	}
	if r.Labels == nil {
		return 0, false, nil
	}
	n, err := s.StoreLabelled(device, r.Labels)
	return n, r.Labels.More && err == nil, err
}

// StoreLabelled stores the windows of a device's label set with their
// labels and moves the device's acknowledgement point past them, in one
// transaction (see the top of this file); it returns how many windows it
// stored or labelled.
func (s *Service) StoreLabelled(device string, set *wire.LabelSet) (int, error) {
	classes := s.bundleClasses()
	now := s.opt.Now().UTC()
	by := "gateway:" + device + "/" + set.Source
	stored, refused := 0, map[string]int{}
	var skip labelSkip
	var recounted, ackDamaged bool
	var counts windowCounts
	err := s.db.Update(func(tx store.Tx) error {
		stored, refused, skip = 0, map[string]int{}, labelSkip{}
		var err error
		if counts, recounted, err = readWindowCounts(tx); err != nil {
			return err
		}
		after, err := labelAck(tx.Get, device)
		if ackDamaged = fault.IsDamaged(err); err != nil && !ackDamaged {
			return err
		}
		ack := after
		for _, lw := range set.Windows {
			if lw.Time <= after {
				continue // stored before
			}
			m := set.Models[lw.Model]
			cs, err := classes(m.Bundle)
			if err != nil || !slices.Contains(cs, lw.Label) {
				refused[lw.Label]++
				ack = max(ack, lw.Time)
				continue
			}
			id := api.WindowID(device, lw.Time)
			var w api.FieldWindow
			ok, err := tx.Get(store.FleetWindows, windowKey(id), &w)
			if fault.IsDamaged(err) {
				skip.add(id, lw.Label)
				ack = max(ack, lw.Time) // not overwritten; see the top of this file
				continue
			}
			if err != nil {
				return err
			}
			if ok && w.Label != "" {
				ack = max(ack, lw.Time) // labelled already (by a person, or an earlier answer)
				continue
			}
			if !ok {
				if counts.Stored >= windowBound {
					dropped, err := dropOldestUnlabelled(tx, counts.Stored-windowBound+1)
					if err != nil {
						return err
					}
					counts.Stored -= dropped
					if counts.Stored >= windowBound {
						break // no room: neither it nor a later one is acknowledged
					}
				}
				w = api.FieldWindow{ID: id, Device: device, Time: time.UnixMilli(lw.Time).UTC(), Model: m.ID, Release: m.Release, Bundle: m.Bundle,
					Features: set.Features, X: lw.X, Predicted: lw.Class, Margin: lw.Margin, Reason: "label source", Stored: now}
				counts.Stored++
			}
			w.Label, w.LabelledBy, w.Via, w.LabelledAt = lw.Label, fault.Clip(by, maxLabelledBy), api.LabelGateway, now
			if err := tx.Put(store.FleetWindows, windowKey(id), &w); err != nil {
				return err
			}
			counts.Labelled++
			stored++
			ack = max(ack, lw.Time)
		}
		if err := tx.Put(store.FleetWindows, windowCountKey, &counts); err != nil {
			return err
		}
		return tx.Put(store.FleetWindows, labelAckPrefix+device, ack)
	})
	if err != nil {
		return 0, err
	}
	if recounted {
		s.logRecounted(counts)
	}
	if ackDamaged {
		s.log.Warn("label source: the acknowledgement point does not decode; the device was asked for every window it holds and the point written again",
			"device", device, "collection", store.FleetWindows.String(), "key", labelAckPrefix+device)
	}
	if skip.n > 0 {
		s.log.Warn("label source: windows skipped: their stored record does not decode (it is kept); restore a backup and label them again",
			"device", device, "source", set.Source, "windows", skip.n, "labels", strings.Join(skip.named, " "))
	}
	for label, n := range refused {
		s.log.Warn("label source: windows refused: the label is not a class of the model that classified them", "device", device,
			"source", set.Source, "label", fault.Clip(label, 64), "windows", n)
	}
	if stored > 0 {
		s.log.Info("label source: windows labelled", "device", device, "source", set.Source, "windows", stored, "dropped_on_device", set.Dropped)
	}
	return stored, nil
}

// LabelAck returns device's acknowledgement point: the newest reading
// time (Unix milliseconds) of its label source's windows the store holds.
func (s *Service) LabelAck(device string) (int64, error) {
	return labelAck(s.db.Get, device)
}

// labelAck reads device's acknowledgement point with get (a store's or a
// transaction's): 0 and ErrDamaged naming it if it does not decode, which
// its callers take as no point (see the top of this file).
func labelAck(get func(store.Collection, string, any) (bool, error), device string) (int64, error) {
	var after int64
	_, err := get(store.FleetWindows, labelAckPrefix+device, &after)
	if fault.IsDamaged(err) {
		return 0, fault.Damaged(store.FleetWindows, labelAckPrefix+device, err)
	}
	return after, err
}

// labelSkip names the windows of an answer whose stored record does not
// decode, with the label the device gave each, up to maxLabelSkipNamed
// of them (n counts them all).
type labelSkip struct {
	n     int
	named []string // "device/time=label"
}

const maxLabelSkipNamed = 20

func (k *labelSkip) add(id, label string) {
	k.n++
	if len(k.named) < maxLabelSkipNamed {
		k.named = append(k.named, id+"="+fault.Clip(label, 64))
	}
}
