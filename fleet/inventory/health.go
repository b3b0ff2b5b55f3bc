package inventory

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Model health over time. Every telemetry report a device sends is added
// to two points of its health history (api.HealthPoint), in the store's
// FleetHealth collection (store/health.go): the current UTC minute's, in
// the document of that hour, and the current UTC hour's, in the document
// of that day. A device's history is its last 24 hours by minute and its
// last 31 days by hour; writing a new hour (day) document deletes the
// device's hour (day) documents that fell out of that window, so the
// history is bounded whatever the device does:
//
//	≤ 1,440 minute points + ≤ 744 hour points per device,
//
// each a few dozen bytes of JSON plus its class counts (docs/FLEET.md
// "Model health over time" has the measured size). Points are stamped
// with the fleet's clock when the report arrives.

// Health windows.
const (
	healthHours = 24 // hour documents of minute points kept
	healthDays  = 31 // day documents of hour points kept
)

// healthDoc is one FleetHealth document: a period's points, oldest first.
type healthDoc struct {
	Points []api.HealthPoint `json:"points"`
}

// addToPoint adds one telemetry report to p.
func addToPoint(p *api.HealthPoint, m *wire.Telemetry) {
	p.Predictions += m.Predictions
	for class, n := range m.Counts {
		if p.Counts == nil {
			p.Counts = map[string]uint64{}
		}
		if _, ok := p.Counts[class]; !ok && len(p.Counts) >= api.MaxHealthClasses {
			class = api.HealthOther
		}
		p.Counts[class] += n
	}
	if o := m.Other; o != nil && o.Predictions > 0 {
		// The classes the report left out: the rest, as past
		// MaxHealthClasses.
		if p.Counts == nil {
			p.Counts = map[string]uint64{}
		}
		p.Counts[api.HealthOther] += o.Predictions
	}
	if c := m.Confidence; c != nil {
		var n uint64
		for _, k := range c.Histogram {
			n += k
		}
		p.Windows += n
		p.Unknown += c.Unknown
		p.ConfidenceSum += c.Mean * float64(n)
		if a, mean, ok := c.Answered(); ok {
			p.Answered += a
			p.AnsweredSum += mean * float64(a)
		}
	}
	if d := m.Drift; d != nil {
		p.Drift = max(p.Drift, d.Score)
	}
	if sh := m.Shadow; sh != nil && sh.Windows > 0 {
		a := sh.Agreement()
		p.Agreement = &a
	}
	if l := m.Latency; l != nil {
		p.LatencyP50 = max(p.LatencyP50, l.P50)
	}
}

// addToDoc adds m to the point of period start in the document under key,
// creating either as needed.
func addToDoc(tx store.Tx, key string, start int64, m *wire.Telemetry) error {
	var doc healthDoc
	if _, err := tx.Get(store.FleetHealth, key, &doc); err != nil {
		return err
	}
	n := len(doc.Points)
	if n == 0 || doc.Points[n-1].Time != start {
		if n > 0 && doc.Points[n-1].Time > start {
			// The clock went back: find the period's point, or insert it.
			i := 0
			for i < n && doc.Points[i].Time < start {
				i++
			}
			if i == n || doc.Points[i].Time != start {
				doc.Points = append(doc.Points[:i], append([]api.HealthPoint{{Time: start}}, doc.Points[i:]...)...)
			}
			addToPoint(&doc.Points[i], m)
			return tx.Put(store.FleetHealth, key, &doc)
		}
		doc.Points = append(doc.Points, api.HealthPoint{Time: start})
	}
	addToPoint(&doc.Points[len(doc.Points)-1], m)
	return tx.Put(store.FleetHealth, key, &doc)
}

// RecordHealth adds telemetry m of device d, received at now, to its
// health history, and deletes what fell out of the history's windows.
func RecordHealth(tx store.Tx, d *Device, m *wire.Telemetry, now time.Time) error {
	now = now.UTC()
	hour, minute := now.Truncate(time.Hour), now.Truncate(time.Minute)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if err := addToDoc(tx, store.HealthHourKey(d.ID, hourName(hour)), minute.Unix(), m); err != nil {
		return err
	}
	if err := addToDoc(tx, store.HealthDayKey(d.ID, dayName(day)), hour.Unix(), m); err != nil {
		return err
	}
	// The documents written before (the device's last hour and day)
	// hold the oldest ones that may remain: delete those out of the window.
	if last := d.HealthHour; last != 0 && last < hour.Unix() {
		for h := time.Unix(last, 0).UTC().Add(-(healthHours - 1) * time.Hour); !h.After(hour.Add(-healthHours*time.Hour)) && h.Unix() <= last; h = h.Add(time.Hour) {
			if err := tx.Delete(store.FleetHealth, store.HealthHourKey(d.ID, hourName(h))); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	if last := d.HealthDay; last != 0 && last < day.Unix() {
		for t := time.Unix(last, 0).UTC().AddDate(0, 0, -(healthDays - 1)); !t.After(day.AddDate(0, 0, -healthDays)) && t.Unix() <= last; t = t.AddDate(0, 0, 1) {
			if err := tx.Delete(store.FleetHealth, store.HealthDayKey(d.ID, dayName(t))); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	d.HealthHour, d.HealthDay = max(d.HealthHour, hour.Unix()), max(d.HealthDay, day.Unix())
	return nil
}

// HealthKeys are the keys of the two health documents of device id a
// telemetry report received at now adds to (RecordHealth): for a store
// that reads many documents in one round trip.
func HealthKeys(id string, now time.Time) (hour, day string) {
	now = now.UTC()
	return store.HealthHourKey(id, hourName(now.Truncate(time.Hour))),
		store.HealthDayKey(id, dayName(time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)))
}

// HourPoints reads in tx device id's minute points of the hour that
// starts at h (its hour document), oldest first; a document that does
// not decode is the decoder's error.
func HourPoints(tx store.Tx, id string, h time.Time) ([]api.HealthPoint, error) {
	var doc healthDoc
	_, err := tx.Get(store.FleetHealth, store.HealthHourKey(id, hourName(h)), &doc)
	return doc.Points, err
}

func hourName(t time.Time) string { return t.UTC().Format("2006010215") }
func dayName(t time.Time) string  { return t.UTC().Format("20060102") }

// DeviceHealthHistory reads device id's health history at now: the minutes
// of the last 24 hours and the hours of the last 31 days with a report.
func DeviceHealthHistory(db store.Database, id string, now time.Time) (*api.DeviceHealth, error) {
	now = now.UTC()
	out := &api.DeviceHealth{Device: id, Minutes: []api.HealthPoint{}, Hours: []api.HealthPoint{}}
	hour := now.Truncate(time.Hour)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	minFrom, hourFrom := now.Add(-24*time.Hour).Unix(), now.AddDate(0, 0, -healthDays).Unix()
	err := db.View(func(tx store.Tx) error {
		for h := hour.Add(-healthHours * time.Hour); !h.After(hour); h = h.Add(time.Hour) {
			var doc healthDoc
			if _, err := tx.Get(store.FleetHealth, store.HealthHourKey(id, hourName(h)), &doc); err != nil {
				return err
			}
			for _, p := range doc.Points {
				if p.Time > minFrom {
					out.Minutes = append(out.Minutes, p)
				}
			}
		}
		for t := day.AddDate(0, 0, -healthDays); !t.After(day); t = t.AddDate(0, 0, 1) {
			var doc healthDoc
			if _, err := tx.Get(store.FleetHealth, store.HealthDayKey(id, dayName(t)), &doc); err != nil {
				return err
			}
			for _, p := range doc.Points {
				if p.Time > hourFrom {
					out.Hours = append(out.Hours, p)
				}
			}
		}
		return nil
	})
	return out, err
}

// forgetHealthOf deletes every health document of device id, found by
// key (for a record too damaged to say which exist).
func forgetHealthOf(tx store.Tx, id string) error {
	var keys []string
	err := tx.ForEach(store.FleetHealth, func(key string, _ []byte) error {
		if strings.HasPrefix(key, store.HealthHourKey(id, "")) || strings.HasPrefix(key, store.HealthDayKey(id, "")) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(store.FleetHealth, k); err != nil {
			return err
		}
	}
	return nil
}

// forgetHealth deletes d's health history (every document its latest hour
// and day may have left).
func forgetHealth(tx store.Tx, d *Device) error {
	del := func(key string) error {
		if err := tx.Delete(store.FleetHealth, key); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
	if d.HealthHour != 0 {
		last := time.Unix(d.HealthHour, 0).UTC()
		for k := range healthHours {
			if err := del(store.HealthHourKey(d.ID, hourName(last.Add(-time.Duration(k)*time.Hour)))); err != nil {
				return err
			}
		}
	}
	if d.HealthDay != 0 {
		last := time.Unix(d.HealthDay, 0).UTC()
		for k := range healthDays {
			if err := del(store.HealthDayKey(d.ID, dayName(last.AddDate(0, 0, -k)))); err != nil {
				return err
			}
		}
	}
	return nil
}

// GroupHealthHistory sums the health histories of the devices that carry
// every label of selector (at most api.MaxGroupHealthDevices; more is an
// fault.ErrBadRequest), period by period (SumHealthHistory).
func GroupHealthHistory(db store.Database, selector map[string]string, now time.Time) (*api.GroupHealth, error) {
	if len(selector) == 0 {
		return nil, fmt.Errorf("%w: give a label selector (site=north)", fault.ErrBadRequest)
	}
	devices, err := Devices(db)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, d := range devices {
		if d.Matches(selector) {
			ids = append(ids, d.ID)
		}
	}
	out, err := SumHealthHistory(db, ids, now)
	if err != nil {
		return nil, err
	}
	out.Selector = selector
	return out, nil
}

// SumHealthHistory sums the health histories of devices ids (a selector's,
// a rollout's, the whole fleet's; at most api.MaxGroupHealthDevices, more
// is an fault.ErrBadRequest), period by period: counts, windows and sums add up,
// drift and latency keep the highest, and agreement is the mean of the
// agreements of the devices that had a shadow report in that period.
func SumHealthHistory(db store.Database, ids []string, now time.Time) (*api.GroupHealth, error) {
	if len(ids) > api.MaxGroupHealthDevices {
		return nil, fmt.Errorf("%w: %d devices, at most %d", fault.ErrBadRequest, len(ids), api.MaxGroupHealthDevices)
	}
	out := &api.GroupHealth{Devices: append([]string{}, ids...)}
	var minutes, hours healthSum
	for _, id := range out.Devices {
		h, err := DeviceHealthHistory(db, id, now)
		if err != nil {
			return nil, err
		}
		minutes.add(h.Minutes)
		hours.add(h.Hours)
	}
	out.Minutes, out.Hours = minutes.points(), hours.points()
	return out, nil
}

// RecentHealth sums the last 24 hours of the health histories of devices
// ids (at most api.MaxGroupHealthDevices, more is an fault.ErrBadRequest) as
// SumHealthHistory does, by minute or by hour, reading only what that
// needs: by minute the 25 hour documents of each device (up to 8.5 KB
// each), by hour its 2 day documents (up to 3.6 KB each).
func RecentHealth(db store.Database, ids []string, now time.Time, byMinute bool) ([]api.HealthPoint, error) {
	if len(ids) > api.MaxGroupHealthDevices {
		return nil, fmt.Errorf("%w: %d devices, at most %d", fault.ErrBadRequest, len(ids), api.MaxGroupHealthDevices)
	}
	now = now.UTC()
	from := now.Add(-24*time.Hour).Unix() + 1 // as DeviceHealthHistory: after 24 hours ago
	var keys func(id string) []string
	if byMinute {
		keys = func(id string) []string {
			out := make([]string, 0, healthHours+1)
			for h := now.Truncate(time.Hour).Add(-healthHours * time.Hour); !h.After(now); h = h.Add(time.Hour) {
				out = append(out, store.HealthHourKey(id, hourName(h)))
			}
			return out
		}
	} else {
		from = now.Truncate(time.Hour).Add(-23 * time.Hour).Unix() // the hour 24 hours ago started before from
		keys = func(id string) []string {
			day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
			return []string{store.HealthDayKey(id, dayName(day.AddDate(0, 0, -1))), store.HealthDayKey(id, dayName(day))}
		}
	}
	var sum healthSum
	err := db.View(func(tx store.Tx) error {
		for _, id := range ids {
			for _, key := range keys(id) {
				var doc healthDoc
				if _, err := tx.Get(store.FleetHealth, key, &doc); err != nil {
					return err
				}
				i := 0
				for i < len(doc.Points) && doc.Points[i].Time < from {
					i++
				}
				sum.add(doc.Points[i:])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sum.points(), nil
}

// healthSum adds up devices' points period by period (SumHealthHistory).
type healthSum map[int64]*periodSum

type periodSum struct {
	p         api.HealthPoint
	agreement float64
	shadowed  int
}

func (m *healthSum) add(pts []api.HealthPoint) {
	if *m == nil {
		*m = healthSum{}
	}
	for i := range pts {
		s := (*m)[pts[i].Time]
		if s == nil {
			s = &periodSum{p: api.HealthPoint{Time: pts[i].Time}}
			(*m)[pts[i].Time] = s
		}
		s.p.AddPoint(&pts[i])
		if a := pts[i].Agreement; a != nil {
			s.agreement += *a
			s.shadowed++
		}
	}
}

// points returns the sums, oldest first, agreement the mean.
func (m healthSum) points() []api.HealthPoint {
	out := make([]api.HealthPoint, 0, len(m))
	for _, s := range m {
		if s.shadowed > 0 {
			a := s.agreement / float64(s.shadowed)
			s.p.Agreement = &a
		}
		out = append(out, s.p)
	}
	slices.SortFunc(out, func(a, b api.HealthPoint) int { return cmp.Compare(a.Time, b.Time) })
	return out
}
