package fleet

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// The registry holds every bundle the fleet may distribute. A bundle enters
// it only after the same checks an agent makes (size cap, signature by a
// trusted release key, strict decoding, not expired), so the fleet never
// publishes something its devices would reject for those reasons; the raw
// bytes are kept content-addressed in the store and published exactly as
// they were signed.

// trainCounts reads the info key bundle.InfoClassCounts ("n1,n2,…" in
// class order); nil when absent or not one count per class.
func trainCounts(info map[string]string, classes []string) map[string]uint64 {
	parts := strings.Split(info[bundle.InfoClassCounts], ",")
	if len(parts) != len(classes) {
		return nil
	}
	out := make(map[string]uint64, len(classes))
	for i, p := range parts {
		n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil
		}
		out[classes[i]] = n
	}
	return out
}

// ModelInfo is the registry's record of a model: its releases by number.
type ModelInfo struct {
	ID       string            `json:"id"`
	Releases map[uint64]string `json:"releases"` // release -> bundle hash
	Latest   uint64            `json:"latest"`
}

// Registry errors.
var (
	// ErrAmbiguous: a bundle hash prefix matches several bundles.
	ErrAmbiguous      = errors.New("fleet: ambiguous")
	ErrReleaseExists  = errors.New("fleet: release already registered with different bytes")
	ErrReleaseTooLow  = errors.New("fleet: release is not above the model's latest")
	ErrBundleRejected = errors.New("fleet: bundle rejected")
)

// Registry is the bundle and model registry over a store.
type Registry struct {
	db      store.Database
	trusted atomic.Pointer[bundle.KeySet] // replaced by a configuration reload
	maxSize int
	now     func() time.Time
}

// SetTrusted replaces the trusted release keys (a configuration reload);
// bundles already registered stay registered.
func (r *Registry) SetTrusted(k *bundle.KeySet) { r.trusted.Store(k) }

// NewRegistry returns a registry that accepts bundles signed by one of
// trusted (the release keys) and at most maxSize bytes (0: the bundle
// format's default cap).
func NewRegistry(db store.Database, trusted *bundle.KeySet, maxSize int, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	r := &Registry{db: db, maxSize: maxSize, now: now}
	r.trusted.Store(trusted)
	return r
}

// Add verifies and registers a signed bundle and returns its record. Adding
// the same bytes again returns the existing record. A release must be above
// every release of the same model already registered: releases only grow,
// which is what the agents' anti-rollback check relies on.
func (r *Registry) Add(data []byte) (*api.BundleInfo, error) {
	b, err := bundle.Decode(data, &bundle.DecodeOptions{MaxSize: r.maxSize, Trusted: r.trusted.Load(), Now: r.now})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundleRejected, err)
	}
	hash, err := r.db.PutBundle(data)
	if err != nil {
		return nil, err
	}
	var info *api.BundleInfo
	err = r.db.Update(func(tx store.Tx) error {
		var existing api.BundleInfo
		if ok, err := tx.Get(store.FleetBundles, hash, &existing); err != nil {
			return err
		} else if ok {
			info = &existing
			return nil
		}
		var m ModelInfo
		if _, err := tx.Get(store.FleetModels, b.Header.ModelID, &m); err != nil {
			return err
		}
		if m.ID == "" {
			m = ModelInfo{ID: b.Header.ModelID, Releases: map[uint64]string{}}
		}
		if h, ok := m.Releases[b.Header.Release]; ok && h != hash {
			return fmt.Errorf("%w: %s release %d is bundle %s", ErrReleaseExists, m.ID, b.Header.Release, h[:12])
		}
		if b.Header.Release <= m.Latest {
			return fmt.Errorf("%w: %s release %d, latest is %d", ErrReleaseTooLow, m.ID, b.Header.Release, m.Latest)
		}
		m.Releases[b.Header.Release], m.Latest = hash, b.Header.Release
		info = &api.BundleInfo{
			Hash: hash, ModelID: b.Header.ModelID, Release: b.Header.Release, Size: len(data),
			KeyID: fmt.Sprintf("%x", b.KeyID), Classes: b.Spec.Classes, Features: b.Spec.Features,
			Hardware: b.Compat.Hardware, MinAgent: b.Compat.MinAgentVersion, P: b.Spec.Transform.P,
			CreatedAt: b.Header.CreatedAt, ExpiresAt: b.Header.ExpiresAt, AddedAt: r.now().UTC(),
			TrainCounts: trainCounts(b.Info, b.Spec.Classes), Calibrated: b.Spec.Calibration != nil,
		}
		if err := tx.Put(store.FleetModels, m.ID, &m); err != nil {
			return err
		}
		return tx.Put(store.FleetBundles, hash, info)
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// Calibrated reports whether bundle hash has a calibration: its record
// says so, or (a record from before it said) its bytes do.
func (r *Registry) Calibrated(info *api.BundleInfo, data []byte) bool {
	if info.Calibrated {
		return true
	}
	b, err := bundle.Decode(data, &bundle.DecodeOptions{MaxSize: r.maxSize, Trusted: r.trusted.Load(), Now: func() time.Time { return info.CreatedAt }})
	return err == nil && b.Spec.Calibration != nil
}

// Bundle returns a bundle's record and bytes.
func (r *Registry) Bundle(hash string) (*api.BundleInfo, []byte, error) {
	var info api.BundleInfo
	ok, err := r.db.Get(store.FleetBundles, hash, &info)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: bundle %s", fault.ErrNotFound, hash)
	}
	data, err := r.db.Bundle(hash)
	if err != nil {
		return nil, nil, err
	}
	return &info, data, nil
}

// minHashPrefix is the shortest bundle hash prefix Resolve accepts (as
// git's abbreviated hashes).
const minHashPrefix = 4

// Resolve returns the full hash of the registered bundle whose hash is h or
// starts with h (at least minHashPrefix hex digits, such as the 12 that
// tritctl prints). No match is ErrNotFound; several are ErrAmbiguous.
func (r *Registry) Resolve(h string) (string, error) {
	if wire.CheckHash(h) == nil {
		return h, nil
	}
	if len(h) < minHashPrefix || len(h) > 2*sha256.Size || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%w: bundle %q: give the bundle's SHA-256 (lowercase hex) as tritctl publish prints it, or at least its first %d digits",
			rollout.ErrInvalid, fault.Clip(h, 80), minHashPrefix)
	}
	var matches []string
	err := r.db.View(func(tx store.Tx) error {
		return tx.ForEach(store.FleetBundles, func(key string, _ []byte) error {
			if strings.HasPrefix(key, h) {
				matches = append(matches, key)
			}
			return nil
		})
	})
	switch {
	case err != nil:
		return "", err
	case len(matches) == 0:
		return "", fmt.Errorf("%w: no registered bundle's hash starts with %s", fault.ErrNotFound, h)
	case len(matches) > 1:
		sort.Strings(matches)
		return "", fmt.Errorf("%w: %d registered bundles' hashes start with %s (%s); give more digits",
			ErrAmbiguous, len(matches), h, listIDs(matches))
	}
	return matches[0], nil
}

// MarkPublished records that a bundle was published to its topic.
func (r *Registry) MarkPublished(hash string) error {
	return r.db.Update(func(tx store.Tx) error {
		var info api.BundleInfo
		ok, err := tx.Get(store.FleetBundles, hash, &info)
		if err != nil || !ok {
			return errors.Join(err, fmt.Errorf("%w: bundle %s", fault.ErrNotFound, hash))
		}
		info.Published = true
		return tx.Put(store.FleetBundles, hash, &info)
	})
}

// Bundles returns every bundle record that decodes, newest release of each
// model first (BundlesAndDamaged also names those that do not).
func (r *Registry) Bundles() ([]api.BundleInfo, error) {
	out, _, err := r.BundlesAndDamaged()
	return out, err
}

// BundlesAndDamaged is Bundles, and the records that do not decode
// (damaged.go).
func (r *Registry) BundlesAndDamaged() ([]api.BundleInfo, []api.Damaged, error) {
	var out []api.BundleInfo
	var bad []api.Damaged
	err := r.db.View(func(tx store.Tx) error {
		var err error
		bad, err = fault.DecodeAll(tx.ForEach, store.FleetBundles, func(_ string, info *api.BundleInfo) { out = append(out, *info) })
		return err
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].ModelID != out[j].ModelID {
			return out[i].ModelID < out[j].ModelID
		}
		return out[i].Release > out[j].Release
	})
	return out, bad, err
}

// Model returns a model's record.
func (r *Registry) Model(id string) (*ModelInfo, error) {
	var m ModelInfo
	ok, err := r.db.Get(store.FleetModels, id, &m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: model %s", fault.ErrNotFound, id)
	}
	return &m, nil
}

// Previous returns the hash of the release of model id just below release,
// the target of a rollback.
func (r *Registry) Previous(id string, release uint64) (string, uint64, error) {
	m, err := r.Model(id)
	if err != nil {
		return "", 0, err
	}
	var best uint64
	for rel := range m.Releases {
		if rel < release && rel > best {
			best = rel
		}
	}
	if best == 0 {
		return "", 0, fmt.Errorf("%w: model %s has no release below %d", fault.ErrNotFound, id, release)
	}
	return m.Releases[best], best, nil
}
