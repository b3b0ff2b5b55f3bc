package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Field windows: the windows devices kept for labelling (their sample
// rings, wire.SampleSet), stored in the fleet's store (collection
// fleet_windows, so the bbolt file and PostgreSQL both hold them and a
// backup has them) when the fleet receives them — when an operator pulls
// a device's samples (Samples) — and the labels given to them. A window
// is identified by its device and the Unix milliseconds of its reading
// (api.WindowID); storing it again keeps the stored record, label and
// all.
//
// Invariants:
//   - The document under "count" holds the number of windows stored and
//     of those labelled; every change of the collection updates it in the
//     same transaction. It is derived from the windows, which are the
//     record: a count document that does not decode (or holds no count:
//     a negative number, more labelled than stored) is recounted from the
//     window documents present — a damaged window counted as stored and
//     unlabelled, its label unknown — logged, and written again by the
//     change that found it, so a damaged count never stops windows being
//     stored or labelled and loses nothing.
//   - At most MaxWindows windows are stored: storing more drops the
//     oldest unlabelled ones; labelled windows are never dropped, nor
//     damaged ones (they may be labelled; damaged.go), and when only
//     those are left the new ones that do not fit are not stored
//     (Samples says how many).
//   - A label is one of the classes of the bundle that classified the
//     window, is given once (a second label for a window is refused), and
//     a request's labels are applied all together or not at all.

// Bounds on the stored windows and on one labelling request.
const (
	MaxWindows          = 100_000 // windowBound in the code, lowered by tests
	MaxLabelsPerRequest = 10_000
	maxLabelledBy       = 128
)

// windowBound is MaxWindows (a variable for tests).
var windowBound = MaxWindows

// maxWindowsListed bounds the windows one listing returns.
const maxWindowsListed = 100_000

// ErrLabelled means a window already has a label: an HTTP 409.
var ErrLabelled = errors.New("fleet: window already labelled")

const (
	windowKeyPrefix = "w/"
	windowCountKey  = "count"
)

// windowCounts is the document under windowCountKey.
type windowCounts struct {
	Stored   int `json:"stored"`
	Labelled int `json:"labelled"`
}

func windowKey(id string) string { return windowKeyPrefix + id }

// checkWindowID accepts api.WindowID's form: a device ID, "/", 13 digits.
func checkWindowID(id string) error {
	dev, ms, ok := strings.Cut(id, "/")
	if !ok || len(ms) != 13 || strings.Trim(ms, "0123456789") != "" {
		return fmt.Errorf("window %q: want <device>/<13-digit Unix milliseconds>, as tritctl samples pull writes it", fault.Clip(id, 64))
	}
	if err := wire.CheckID(dev); err != nil {
		return fmt.Errorf("window %q: device ID: %v", fault.Clip(id, 64), err)
	}
	return nil
}

// StoreWindows stores the windows of set, device's sample ring, that are
// not stored yet, dropping the oldest unlabelled ones past MaxWindows. It
// returns how many it added and how many did not fit.
func (s *Service) StoreWindows(device string, set *wire.SampleSet) (added, skipped int, err error) {
	if set.Model == nil || len(set.Samples) == 0 {
		return 0, 0, nil // no model, no classes to label with
	}
	now := s.opt.Now().UTC()
	var recounted bool
	var counts windowCounts
	err = s.db.Update(func(tx store.Tx) error {
		added, skipped = 0, 0
		var err error
		if counts, recounted, err = readWindowCounts(tx); err != nil {
			return err
		}
		var fresh []api.FieldWindow
		seen := map[string]bool{}
		for _, smp := range set.Samples {
			if smp.Time < 0 || smp.Time > 9_999_999_999_999 {
				continue // not a time this store can key (the agent's clock is off by centuries)
			}
			id := api.WindowID(device, smp.Time)
			if seen[id] {
				continue
			}
			seen[id] = true
			var old api.FieldWindow
			if ok, err := tx.Get(store.FleetWindows, windowKey(id), &old); err != nil || ok {
				if err != nil && !fault.IsDamaged(err) {
					return err
				}
				continue // stored: kept as it is, a damaged record too (it may hold a label)
			}
			fresh = append(fresh, api.FieldWindow{ID: id, Device: device, Time: time.UnixMilli(smp.Time).UTC(),
				Model: set.Model.ID, Release: set.Model.Release, Bundle: set.Model.Bundle, Features: set.Features, X: smp.X,
				Predicted: smp.Class, Margin: smp.Margin, Candidate: smp.Candidate, Reason: smp.Reason, Stored: now})
		}
		if over := counts.Stored + len(fresh) - windowBound; over > 0 {
			dropped, err := dropOldestUnlabelled(tx, over)
			if err != nil {
				return err
			}
			counts.Stored -= dropped
			if keep := windowBound - counts.Stored; keep < len(fresh) {
				// Only labelled windows left to drop: keep the newest that fit.
				skipped = len(fresh) - keep
				fresh = fresh[skipped:]
			}
		}
		for i := range fresh {
			if err := tx.Put(store.FleetWindows, windowKey(fresh[i].ID), &fresh[i]); err != nil {
				return err
			}
		}
		added = len(fresh)
		counts.Stored += added
		return tx.Put(store.FleetWindows, windowCountKey, &counts)
	})
	if err == nil && recounted {
		s.logRecounted(counts)
	}
	return added, skipped, err
}

// dropOldestUnlabelled deletes up to n unlabelled windows, oldest reading
// first, and returns how many it deleted. A damaged window is never
// dropped (it may be labelled), nor does it stop the others going.
func dropOldestUnlabelled(tx store.Tx, n int) (int, error) {
	type old struct {
		key string
		at  time.Time
	}
	type windowAge struct {
		Time  time.Time `json:"time"`
		Label string    `json:"label"`
	}
	var olds []old
	_, err := fault.DecodeAll(only(tx.ForEach, windowKeyPrefix), store.FleetWindows, func(key string, w *windowAge) {
		if w.Label == "" {
			olds = append(olds, old{key, w.Time})
		}
	})
	if err != nil {
		return 0, err
	}
	slices.SortFunc(olds, func(a, b old) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.key, b.key)) })
	n = min(n, len(olds))
	for _, o := range olds[:n] {
		if err := tx.Delete(store.FleetWindows, o.key); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Label applies req's labels, given by operator by, all together or none:
// a window that is not stored, a class that is not one of the classes of
// the bundle that classified the window, a window labelled already or
// twice in req is refused, saying which.
func (s *Service) Label(req api.LabelRequest, by string) (*api.LabelResult, error) {
	switch req.Via {
	case "":
		req.Via = api.LabelAPI
	case api.LabelCLI, api.LabelConsole, api.LabelAPI:
	default:
		return nil, fault.BadRequest("via %q: want %s, %s or %s", fault.Clip(req.Via, 32), api.LabelCLI, api.LabelConsole, api.LabelAPI)
	}
	if len(req.Labels) == 0 || len(req.Labels) > MaxLabelsPerRequest {
		return nil, fault.BadRequest("%d labels: want 1 … %d in one request", len(req.Labels), MaxLabelsPerRequest)
	}
	at := map[string]int{}
	for i, l := range req.Labels {
		if err := checkWindowID(l.Window); err != nil {
			return nil, fault.BadRequest("label %d: %v", i+1, err)
		}
		if j, dup := at[l.Window]; dup {
			return nil, fault.BadRequest("window %s is labelled twice in this request (labels %d and %d)", l.Window, j+1, i+1)
		}
		at[l.Window] = i
		if l.Label == "" || len(l.Label) > 256 || !utf8.ValidString(l.Label) || strings.ContainsFunc(l.Label, unicode.IsControl) {
			return nil, fault.BadRequest("label %d (window %s): the class %q: want 1 … 256 bytes of text", i+1, l.Window, fault.Clip(l.Label, 32))
		}
	}
	classes := s.bundleClasses()
	now := s.opt.Now().UTC()
	var recounted bool
	var counts windowCounts
	err := s.db.Update(func(tx store.Tx) error {
		var err error
		if counts, recounted, err = readWindowCounts(tx); err != nil {
			return err
		}
		ws := make([]api.FieldWindow, len(req.Labels))
		for i, l := range req.Labels {
			w := &ws[i]
			ok, err := tx.Get(store.FleetWindows, windowKey(l.Window), w)
			switch {
			case fault.IsDamaged(err):
				return fmt.Errorf("window %s (label %d): %w", l.Window, i+1, fault.Damaged(store.FleetWindows, windowKey(l.Window), err))
			case err != nil:
				return err
			case !ok:
				return fmt.Errorf("%w: window %s (label %d): not stored; 'tritctl samples pull' stores a device's windows", fault.ErrNotFound, l.Window, i+1)
			case w.Label != "":
				return fmt.Errorf("%w: window %s (label %d) was labelled %q by %s at %s", ErrLabelled, l.Window, i+1, w.Label, w.LabelledBy, w.LabelledAt.Format(time.RFC3339))
			}
			cs, err := classes(w.Bundle)
			if err != nil {
				return fmt.Errorf("window %s (label %d): %w", l.Window, i+1, err)
			}
			if !slices.Contains(cs, l.Label) {
				return fault.BadRequest("window %s (label %d): class %q is not one of model %s release %d's classes %q", l.Window, i+1, fault.Clip(l.Label, 32), w.Model, w.Release, cs)
			}
			w.Label, w.LabelledBy, w.Via, w.LabelledAt = l.Label, fault.Clip(by, maxLabelledBy), req.Via, now
		}
		for i := range ws {
			if err := tx.Put(store.FleetWindows, windowKey(ws[i].ID), &ws[i]); err != nil {
				return err
			}
		}
		counts.Labelled += len(ws)
		return tx.Put(store.FleetWindows, windowCountKey, &counts)
	})
	if err != nil {
		return nil, err
	}
	if recounted {
		s.logRecounted(counts)
	}
	s.log.Info("windows labelled", "labels", len(req.Labels), "by", fault.Clip(by, fault.MaxLogField), "via", req.Via)
	return &api.LabelResult{Labelled: len(req.Labels)}, nil
}

// bundleClasses returns a lookup of a bundle's classes by its hash,
// caching what it read.
func (s *Service) bundleClasses() func(hash string) ([]string, error) {
	cache := map[string][]string{}
	return func(hash string) ([]string, error) {
		if cs, ok := cache[hash]; ok {
			return cs, nil
		}
		if wire.CheckHash(hash) != nil {
			return nil, fault.BadRequest("the device did not say which bundle classified it: its classes are unknown")
		}
		info, _, err := s.reg.Bundle(hash)
		if err != nil {
			return nil, fmt.Errorf("the bundle that classified it (%s): %w", hash[:12], err)
		}
		cache[hash] = info.Classes
		return info.Classes, nil
	}
}

// Windows lists the stored windows q selects, oldest first (the newest
// q.Limit of them; at most maxWindowsListed), and names every stored
// window that does not decode (damaged.go), which it skips.
func (s *Service) Windows(q api.WindowQuery) (*api.WindowList, error) {
	if q.Limit < 0 || q.Limit > maxWindowsListed {
		return nil, fault.BadRequest("limit %d: want 0 … %d", q.Limit, maxWindowsListed)
	}
	if q.Limit == 0 {
		q.Limit = maxWindowsListed
	}
	var out []api.FieldWindow
	var bad []api.Damaged
	err := s.db.View(func(tx store.Tx) error {
		var err error
		bad, err = fault.DecodeAll(only(tx.ForEach, windowKeyPrefix), store.FleetWindows, func(_ string, w *api.FieldWindow) {
			switch {
			case q.Model != "" && w.Model != q.Model,
				q.Device != "" && w.Device != q.Device,
				q.Labelled != nil && *q.Labelled != (w.Label != ""),
				!q.Since.IsZero() && w.Time.Before(q.Since):
				return
			}
			out = append(out, *w)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.windowDamage.set(s.opt.Now(), len(bad))
	slices.SortStableFunc(out, func(a, b api.FieldWindow) int { return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID)) })
	total := len(out)
	if len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return &api.WindowList{Windows: out, Total: total, Damaged: bad}, nil
}

// WindowCounts returns how many windows are stored and how many of them
// are labelled (recounted, not written, if the count document is
// damaged: the next change of the windows writes it).
func (s *Service) WindowCounts() (stored, labelled int, err error) {
	var c windowCounts
	err = s.db.View(func(tx store.Tx) error { var err error; c, _, err = readWindowCounts(tx); return err })
	return c.Stored, c.Labelled, err
}

// readWindowCounts returns the count document in tx, or, if it does not
// decode or holds no count, the counts recounted from the window
// documents (recounted true; see the invariants at the top of this file).
func readWindowCounts(tx store.Tx) (c windowCounts, recounted bool, err error) {
	_, err = tx.Get(store.FleetWindows, windowCountKey, &c)
	switch {
	case err != nil && !fault.IsDamaged(err):
		return c, false, err
	case err == nil && c.Stored >= 0 && c.Labelled >= 0 && c.Labelled <= c.Stored:
		return c, false, nil
	}
	c = windowCounts{}
	type labelOnly struct {
		Label string `json:"label"`
	}
	bad, err := fault.DecodeAll(only(tx.ForEach, windowKeyPrefix), store.FleetWindows, func(_ string, w *labelOnly) {
		c.Stored++
		if w.Label != "" {
			c.Labelled++
		}
	})
	c.Stored += len(bad)
	return c, true, err
}

// logRecounted says that the count document was damaged and what it was
// recounted to.
func (s *Service) logRecounted(c windowCounts) {
	s.log.Warn("field windows: the count document does not decode; recounted from the windows stored and written again",
		"collection", store.FleetWindows.String(), "key", windowCountKey, "stored", c.Stored, "labelled", c.Labelled)
}

// damagedWindowsEvery bounds how often the metrics decode every stored
// window to count the damaged ones: up to MaxWindows documents, too many
// to read at every scrape (a variable for tests).
var damagedWindowsEvery = time.Minute

// windowDamage is the latest count of the stored windows that do not
// decode and when it was made: by a scrape (damagedWindows) or by any
// listing (Windows decodes every window, whatever its query).
type windowDamage struct {
	mu sync.Mutex
	at time.Time // zero: never counted
	n  int
}

func (d *windowDamage) set(at time.Time, n int) {
	d.mu.Lock()
	d.at, d.n = at, n
	d.mu.Unlock()
}

// damagedWindows returns how many stored windows do not decode, as
// Windows names them, counted again when the latest count is older than
// damagedWindowsEvery. Every window is decoded as Windows decodes it, so
// the count is the length of WindowList.Damaged.
func (s *Service) damagedWindows() (int, error) {
	now := s.opt.Now()
	d := &s.windowDamage
	d.mu.Lock()
	if !d.at.IsZero() && now.Sub(d.at) < damagedWindowsEvery && !now.Before(d.at) {
		n := d.n
		d.mu.Unlock()
		return n, nil
	}
	d.mu.Unlock()
	var bad []api.Damaged
	err := s.db.View(func(tx store.Tx) error {
		var err error
		bad, err = fault.DecodeAll(only(tx.ForEach, windowKeyPrefix), store.FleetWindows, func(string, *api.FieldWindow) {})
		return err
	})
	if err != nil {
		return 0, err
	}
	d.set(now, len(bad))
	return len(bad), nil
}
