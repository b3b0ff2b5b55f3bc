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
// to two points of its health history (api.HealthPoint): the current UTC
// minute's and the current UTC hour's. The two points of the latest
// report's minute and hour are kept in the device's record
// (Device.MinutePoint, Device.HourPoint); when a report arrives in a later
// minute (hour), the finished point moves to the store's FleetHealth
// collection (store/health.go): a minute point into the document of its
// hour, an hour point into the document of its day. A device's history
// is its last 24 hours by minute and its last 31 days by hour, the
// documents and the record's two points together; writing a new hour
// (day) document deletes the device's hour (day) documents that fell out
// of that window, so the history is bounded whatever the device does:
//
//	≤ 1,440 minute points + ≤ 744 hour points per device,
//
// each a few dozen bytes of JSON plus its class counts (docs/FLEET.md
// "Model health over time" has the measured size). Points are stamped
// with the fleet's clock when the report arrives. Why the record keeps
// the current points: a document is rewritten whole, so adding each
// report to its hour's document rewrote up to 60 minute points (and 24
// hour points) a report — three times the PostgreSQL intake's cost at the
// default 10 s interval (docs/BENCHMARKS.md "Intake on PostgreSQL").
// A document is now rewritten once a minute (a day's once an hour).

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

// withPoint returns pts (oldest first) with p added: merged into the
// point of the same period, or inserted in order. Merged, the agreement
// is p's when p has one (the later shadow report's).
func withPoint(pts []api.HealthPoint, p *api.HealthPoint) []api.HealthPoint {
	i, found := slices.BinarySearchFunc(pts, p.Time, func(q api.HealthPoint, t int64) int { return cmp.Compare(q.Time, t) })
	if !found {
		q := api.HealthPoint{Time: p.Time}
		q.AddPoint(p)
		q.Agreement = p.Agreement
		return slices.Insert(pts, i, q)
	}
	a := pts[i].Agreement
	if p.Agreement != nil {
		a = p.Agreement
	}
	pts[i].AddPoint(p)
	pts[i].Agreement = a
	return pts
}

// addToDoc adds point p to the document under key, creating it as
// needed.
func addToDoc(tx store.Tx, key string, p *api.HealthPoint) error {
	var doc healthDoc
	if _, err := tx.Get(store.FleetHealth, key, &doc); err != nil {
		return err
	}
	doc.Points = withPoint(doc.Points, p)
	return tx.Put(store.FleetHealth, key, &doc)
}

// RecordHealth adds telemetry m of device d, received at now, to its
// health history: to the record's points of now's minute and hour, after
// moving the record's points of an earlier minute or hour to their
// documents (flushHealth).
func RecordHealth(tx store.Tx, d *Device, m *wire.Telemetry, now time.Time) error {
	now = now.UTC()
	if err := flushHealth(tx, d, now); err != nil {
		return err
	}
	if d.MinutePoint == nil {
		d.MinutePoint = &api.HealthPoint{Time: now.Truncate(time.Minute).Unix()}
	}
	if d.HourPoint == nil {
		d.HourPoint = &api.HealthPoint{Time: now.Truncate(time.Hour).Unix()}
	}
	addToPoint(d.MinutePoint, m)
	addToPoint(d.HourPoint, m)
	return nil
}

// flushHealth moves d's points of a minute or hour other than now's to
// their documents — a minute point into its hour's, an hour point into
// its day's — and deletes the documents that fell out of the history's
// windows. A point already out of its window is dropped, not written.
func flushHealth(tx store.Tx, d *Device, now time.Time) error {
	nowHour := now.Truncate(time.Hour)
	if p := d.MinutePoint; p != nil && p.Time != now.Truncate(time.Minute).Unix() {
		hour := hourOf(p)
		// The documents written before (up to the device's last hour)
		// hold the oldest ones that may remain: delete those out of the
		// window.
		if last := d.HealthHour; last != 0 && last < nowHour.Unix() {
			for h := time.Unix(last, 0).UTC().Add(-(healthHours - 1) * time.Hour); !h.After(nowHour.Add(-healthHours*time.Hour)) && h.Unix() <= last; h = h.Add(time.Hour) {
				if err := tx.Delete(store.FleetHealth, store.HealthHourKey(d.ID, hourName(h))); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
		}
		if hour.After(nowHour.Add(-healthHours * time.Hour)) {
			if err := addToDoc(tx, store.HealthHourKey(d.ID, hourName(hour)), p); err != nil {
				return err
			}
			d.HealthHour = max(d.HealthHour, hour.Unix())
		}
		d.MinutePoint = nil
	}
	if p := d.HourPoint; p != nil && p.Time != nowHour.Unix() {
		day, today := dayOf(time.Unix(p.Time, 0)), dayOf(now)
		if last := d.HealthDay; last != 0 && last < today.Unix() {
			for t := time.Unix(last, 0).UTC().AddDate(0, 0, -(healthDays - 1)); !t.After(today.AddDate(0, 0, -healthDays)) && t.Unix() <= last; t = t.AddDate(0, 0, 1) {
				if err := tx.Delete(store.FleetHealth, store.HealthDayKey(d.ID, dayName(t))); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
		}
		if day.After(today.AddDate(0, 0, -healthDays)) {
			if err := addToDoc(tx, store.HealthDayKey(d.ID, dayName(day)), p); err != nil {
				return err
			}
			d.HealthDay = max(d.HealthDay, day.Unix())
		}
		d.HourPoint = nil
	}
	return nil
}

// FlushKeys are the keys of the health documents a telemetry report from
// device d received at now may write (flushHealth moves d's earlier
// points there): for a store that reads many documents in one round trip.
func FlushKeys(d *Device, now time.Time) []string {
	now = now.UTC()
	var keys []string
	if p := d.MinutePoint; p != nil && p.Time != now.Truncate(time.Minute).Unix() {
		keys = append(keys, store.HealthHourKey(d.ID, hourName(hourOf(p))))
	}
	if p := d.HourPoint; p != nil && p.Time != now.Truncate(time.Hour).Unix() {
		keys = append(keys, store.HealthDayKey(d.ID, dayName(dayOf(time.Unix(p.Time, 0)))))
	}
	return keys
}

// hourOf is the hour a minute point is of: its document's.
func hourOf(p *api.HealthPoint) time.Time { return time.Unix(p.Time, 0).UTC().Truncate(time.Hour) }

// dayOf is the start of t's UTC day.
func dayOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// pending returns device id's record's minute and hour points in tx, or
// none when the device has no record or its record does not decode (the
// documents are then the whole history).
func pending(tx store.Tx, id string) (minute, hour *api.HealthPoint, err error) {
	var d Device
	ok, err := tx.Get(store.FleetDevices, id, &d)
	if err != nil {
		if fault.IsDamaged(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if !ok {
		return nil, nil, nil
	}
	return d.MinutePoint, d.HourPoint, nil
}

// HourPoints reads in tx device id's minute points of the hour that
// starts at h (its hour document, and its record's minute point when it
// is of that hour), oldest first; a document that does not decode is the
// decoder's error.
func HourPoints(tx store.Tx, id string, h time.Time) ([]api.HealthPoint, error) {
	var doc healthDoc
	if _, err := tx.Get(store.FleetHealth, store.HealthHourKey(id, hourName(h)), &doc); err != nil {
		return nil, err
	}
	minute, _, err := pending(tx, id)
	if err != nil {
		return nil, err
	}
	if minute != nil && hourOf(minute).Equal(h.UTC()) {
		doc.Points = withPoint(doc.Points, minute)
	}
	return doc.Points, nil
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
		minute, hour, err := pending(tx, id)
		if err != nil {
			return err
		}
		if minute != nil && minute.Time > minFrom {
			out.Minutes = withPoint(out.Minutes, minute)
		}
		if hour != nil && hour.Time > hourFrom {
			out.Hours = withPoint(out.Hours, hour)
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
// each), by hour its 2 day documents (up to 3.6 KB each), and its record
// for the current minute's or hour's point.
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
			var pts []api.HealthPoint
			for _, key := range keys(id) {
				var doc healthDoc
				if _, err := tx.Get(store.FleetHealth, key, &doc); err != nil {
					return err
				}
				i := 0
				for i < len(doc.Points) && doc.Points[i].Time < from {
					i++
				}
				pts = append(pts, doc.Points[i:]...)
			}
			minute, hour, err := pending(tx, id)
			if err != nil {
				return err
			}
			p := minute
			if !byMinute {
				p = hour
			}
			if p != nil && p.Time >= from {
				pts = withPoint(pts, p)
			}
			sum.add(pts)
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
