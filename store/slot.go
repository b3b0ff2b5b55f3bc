package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Model slots.
//
// Invariant: at every commit point either no model was ever installed (no
// active slot), or the active slot names a bundle whose bytes are in the
// bundles bucket; a previous slot, when present, also names a stored bundle
// and was committed. Activate, Commit and Rollback each change the slots in a
// single transaction, so a crash leaves the old or the new state, never
// neither and never half. DeleteBundle refuses the active and previous
// bundles, which keeps the invariant after commit.

// InstallState is the life-cycle state of an installed model.
type InstallState string

// Install states.
const (
	// InstallPending means the model was activated and waits for its health
	// check; the agent must Commit or Rollback it.
	InstallPending InstallState = "pending-health-check"
	// InstallCommitted means the model passed its health check.
	InstallCommitted InstallState = "committed"
	// InstallFailed marks the record returned by Failed.
	InstallFailed InstallState = "failed"
	// InstallShadow marks the shadow slot (SetShadow): a verified, stored
	// candidate that is scored but never active.
	InstallShadow InstallState = "shadow"
)

func (s InstallState) valid() bool {
	return s == InstallPending || s == InstallCommitted || s == InstallFailed || s == InstallShadow
}

// SlotMeta describes the model installed in a slot.
type SlotMeta struct {
	ModelID     string       // model identifier; required
	Release     uint64       // monotonic release counter of the bundle
	RolloutID   string       // rollout that installed it, if any
	Seq         uint64       // sequence number of the deployment command
	InstalledAt time.Time    // zero means the time of Activate
	State       InstallState // zero means InstallPending
	// Rollback marks an install from a signed rollback command, which may
	// carry a release counter below the highest installed one.
	Rollback bool
}

// Slot is a bundle hash and the metadata of its install.
type Slot struct {
	Hash string // SHA-256 hex of the bundle
	SlotMeta
}

// FailedInstall is the last install undone by Rollback.
type FailedInstall struct {
	Slot
	FailedAt time.Time
}

// slotRecord is the stored JSON form of a slot.
type slotRecord struct {
	Hash        string       `json:"hash"`
	ModelID     string       `json:"model_id"`
	Release     uint64       `json:"release"`
	RolloutID   string       `json:"rollout_id,omitempty"`
	Seq         uint64       `json:"seq,omitempty"`
	InstalledAt time.Time    `json:"installed_at"`
	State       InstallState `json:"state"`
	Rollback    bool         `json:"rollback,omitempty"`
	FailedAt    time.Time    `json:"failed_at,omitzero"`
}

func (r *slotRecord) slot() *Slot {
	return &Slot{Hash: r.Hash, SlotMeta: SlotMeta{
		ModelID: r.ModelID, Release: r.Release, RolloutID: r.RolloutID, Seq: r.Seq,
		InstalledAt: r.InstalledAt, State: r.State, Rollback: r.Rollback,
	}}
}

func recordOf(s *Slot) *slotRecord {
	return &slotRecord{
		Hash: s.Hash, ModelID: s.ModelID, Release: s.Release, RolloutID: s.RolloutID, Seq: s.Seq,
		InstalledAt: s.InstalledAt, State: s.State, Rollback: s.Rollback,
	}
}

// decodeSlot decodes and validates a stored slot record.
func decodeSlot(key string, v []byte) (*slotRecord, error) {
	var r slotRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, corrupt(bucketSlots, key, err)
	}
	if err := checkHash(r.Hash); err != nil {
		return nil, corrupt(bucketSlots, key, err)
	}
	if r.ModelID == "" {
		return nil, corrupt(bucketSlots, key, errors.New("empty model_id"))
	}
	if !r.State.valid() {
		return nil, corrupt(bucketSlots, key, fmt.Errorf("unknown state %q", r.State))
	}
	if (key == string(keyFailed)) != (r.State == InstallFailed) || (key == string(keyShadow)) != (r.State == InstallShadow) {
		return nil, corrupt(bucketSlots, key, fmt.Errorf("state %q not allowed in this slot", r.State))
	}
	return &r, nil
}

// slotsState is the decoded content of the slots bucket.
type slotsState struct {
	active, previous, shadow *Slot
	failed                   *FailedInstall
}

// candidateSlots returns the slots for installing or shadowing the stored
// bundle hash: ErrNoBundle if it is not stored, ErrAlreadyActive if it is
// the active one.
func candidateSlots(tx *bolt.Tx, hash string) (slotsState, error) {
	bundles, err := bucket(tx, bucketBundles)
	if err != nil {
		return slotsState{}, err
	}
	if bundles.Get([]byte(hash)) == nil {
		return slotsState{}, ErrNoBundle
	}
	s, err := readSlots(tx)
	if err != nil {
		return slotsState{}, err
	}
	if s.active != nil && s.active.Hash == hash {
		return slotsState{}, ErrAlreadyActive
	}
	return s, nil
}

func readSlots(tx *bolt.Tx) (slotsState, error) {
	var s slotsState
	b, err := bucket(tx, bucketSlots)
	if err != nil {
		return s, err
	}
	get := func(key []byte) (*slotRecord, error) {
		v := b.Get(key)
		if v == nil {
			return nil, nil
		}
		return decodeSlot(string(key), v)
	}
	r, err := get(keyActive)
	if err != nil {
		return s, err
	}
	if r != nil {
		s.active = r.slot()
	}
	if r, err = get(keyPrevious); err != nil {
		return s, err
	}
	if r != nil {
		s.previous = r.slot()
	}
	if r, err = get(keyFailed); err != nil {
		return s, err
	}
	if r != nil {
		s.failed = &FailedInstall{Slot: *r.slot(), FailedAt: r.FailedAt}
	}
	if r, err = get(keyShadow); err != nil {
		return s, err
	}
	if r != nil {
		s.shadow = r.slot()
	}
	return s, nil
}

// intact reports whether the bundle stored under hash still hashes to it.
func intact(tx *bolt.Tx, hash string) bool {
	b, err := bucket(tx, bucketBundles)
	if err != nil {
		return false
	}
	v := b.Get([]byte(hash))
	return v != nil && verifyBundle(hash, v) == nil
}

// putSlot writes r under key, or deletes key when r is nil.
func putSlot(b *bolt.Bucket, key []byte, r *slotRecord) error {
	if r == nil {
		return b.Delete(key)
	}
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

// Activate makes the stored bundle hash the active model in one transaction.
// A shadow slot holding the same bundle is cleared in it (promotion).
//
// If the current active model is committed it becomes the previous one; if
// it is still pending its health check it is discarded and the previous slot
// is kept, so the previous slot always holds a committed model. So is it
// when the active model's stored bytes no longer match their hash (a
// damaged page: the agent runs the previous model instead), so that a
// failed health check rolls back to a model that still loads; the damaged
// bytes stay stored, in no slot. The bundle
// must be stored (ErrNoBundle) and not already active (ErrAlreadyActive).
// Unless meta.Rollback is set, meta.Release must not be below the highest
// release installed for meta.ModelID (ErrReleaseTooOld); that highest value
// is raised to meta.Release in the same transaction.
func (db *DB) Activate(hash string, meta SlotMeta) error {
	if err := checkHash(hash); err != nil {
		return fmt.Errorf("store: activate: %w", err)
	}
	if meta.ModelID == "" {
		return fmt.Errorf("store: activate %s: empty ModelID: %w", hash, ErrInvalid)
	}
	switch meta.State {
	case "":
		meta.State = InstallPending
	case InstallPending, InstallCommitted:
	default:
		return fmt.Errorf("store: activate %s: state %q: %w", hash, meta.State, ErrInvalid)
	}
	if meta.InstalledAt.IsZero() {
		meta.InstalledAt = time.Now().UTC()
	}
	next := &Slot{Hash: hash, SlotMeta: meta}

	err := db.essential(func(tx *bolt.Tx) error {
		s, err := candidateSlots(tx, hash)
		if err != nil {
			return err
		}

		rel, err := bucket(tx, bucketReleases)
		if err != nil {
			return err
		}
		highest, err := getU64(rel, bucketReleases, []byte(meta.ModelID))
		if err != nil {
			return err
		}
		if meta.Release < highest && !meta.Rollback {
			return fmt.Errorf("release %d < %d for model %q: %w", meta.Release, highest, meta.ModelID, ErrReleaseTooOld)
		}
		if meta.Release > highest {
			if err := rel.Put([]byte(meta.ModelID), u64Bytes(meta.Release)); err != nil {
				return err
			}
		}

		prev := s.previous
		if s.active != nil && s.active.State == InstallCommitted && intact(tx, s.active.Hash) {
			prev = s.active
		}
		if prev != nil && prev.Hash == hash {
			prev = nil // re-activating the previous model: nothing older to keep
		}
		slots, err := bucket(tx, bucketSlots)
		if err != nil {
			return err
		}
		if err := putSlot(slots, keyActive, recordOf(next)); err != nil {
			return err
		}
		var prevRec *slotRecord
		if prev != nil {
			prevRec = recordOf(prev)
		}
		if s.shadow != nil && s.shadow.Hash == hash {
			// Promotion: the candidate leaves the shadow slot in the same
			// transaction it becomes active, so a crash leaves it in one
			// of the two, never neither.
			if err := putSlot(slots, keyShadow, nil); err != nil {
				return err
			}
		}
		return putSlot(slots, keyPrevious, prevRec)
	})
	if err != nil {
		return fmt.Errorf("store: activate %s: %w", hash, err)
	}
	return nil
}

// Commit marks the active install as committed (health check passed). It is
// a no-op when already committed and ErrNoActive without an active model.
func (db *DB) Commit() error {
	err := db.essential(func(tx *bolt.Tx) error {
		s, err := readSlots(tx)
		if err != nil {
			return err
		}
		if s.active == nil {
			return ErrNoActive
		}
		if s.active.State == InstallCommitted {
			return nil
		}
		s.active.State = InstallCommitted
		slots, err := bucket(tx, bucketSlots)
		if err != nil {
			return err
		}
		return putSlot(slots, keyActive, recordOf(s.active))
	})
	if err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// Rollback restores the previous model as active in one transaction and
// records the undone install as the failed one (see Failed). Afterwards there
// is no previous model. Without a previous model it returns ErrNoPrevious and
// changes nothing.
func (db *DB) Rollback() error {
	err := db.essential(func(tx *bolt.Tx) error {
		s, err := readSlots(tx)
		if err != nil {
			return err
		}
		if s.previous == nil {
			return ErrNoPrevious
		}
		bundles, err := bucket(tx, bucketBundles)
		if err != nil {
			return err
		}
		if bundles.Get([]byte(s.previous.Hash)) == nil {
			return corrupt(bucketSlots, string(keyPrevious), fmt.Errorf("bundle %s of previous slot is missing", s.previous.Hash))
		}
		slots, err := bucket(tx, bucketSlots)
		if err != nil {
			return err
		}
		if s.active != nil {
			failed := recordOf(s.active)
			failed.State = InstallFailed
			failed.FailedAt = time.Now().UTC()
			if err := putSlot(slots, keyFailed, failed); err != nil {
				return err
			}
		}
		if err := putSlot(slots, keyActive, recordOf(s.previous)); err != nil {
			return err
		}
		return putSlot(slots, keyPrevious, nil)
	})
	if err != nil {
		return fmt.Errorf("store: rollback: %w", err)
	}
	return nil
}

// Slots returns the active and previous slots; either is nil when empty.
func (db *DB) Slots() (active, previous *Slot, err error) {
	var s slotsState
	err = db.view(func(tx *bolt.Tx) error {
		s, err = readSlots(tx)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: slots: %w", err)
	}
	return s.active, s.previous, nil
}

// Failed returns the last install undone by Rollback, or nil if none.
func (db *DB) Failed() (*FailedInstall, error) {
	var s slotsState
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		s, err = readSlots(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: failed slot: %w", err)
	}
	return s.failed, nil
}

// HighestRelease returns the highest release counter ever activated for
// modelID, or 0 if none.
func (db *DB) HighestRelease(modelID string) (uint64, error) {
	if modelID == "" {
		return 0, fmt.Errorf("store: highest release: empty model ID: %w", ErrInvalid)
	}
	var v uint64
	err := db.view(func(tx *bolt.Tx) error {
		rel, err := bucket(tx, bucketReleases)
		if err != nil {
			return err
		}
		v, err = getU64(rel, bucketReleases, []byte(modelID))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: highest release %q: %w", modelID, err)
	}
	return v, nil
}

// SetShadow records the stored bundle hash as the candidate scored in
// shadow, replacing any earlier one. It never touches the active and
// previous slots. The bundle must be stored (ErrNoBundle) and not active
// (ErrAlreadyActive).
func (db *DB) SetShadow(hash string, meta SlotMeta) error {
	if err := checkHash(hash); err != nil {
		return fmt.Errorf("store: set shadow: %w", err)
	}
	if meta.ModelID == "" {
		return fmt.Errorf("store: set shadow %s: empty ModelID: %w", hash, ErrInvalid)
	}
	meta.State = InstallShadow
	if meta.InstalledAt.IsZero() {
		meta.InstalledAt = time.Now().UTC()
	}
	err := db.essential(func(tx *bolt.Tx) error {
		if _, err := candidateSlots(tx, hash); err != nil {
			return err
		}
		slots, err := bucket(tx, bucketSlots)
		if err != nil {
			return err
		}
		return putSlot(slots, keyShadow, recordOf(&Slot{Hash: hash, SlotMeta: meta}))
	})
	if err != nil {
		return fmt.Errorf("store: set shadow %s: %w", hash, err)
	}
	return nil
}

// Shadow returns the shadow slot, or nil if none.
func (db *DB) Shadow() (*Slot, error) {
	var s slotsState
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		s, err = readSlots(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: shadow slot: %w", err)
	}
	return s.shadow, nil
}

// ClearShadow empties the shadow slot (no-op when empty); its bundle stays
// stored.
func (db *DB) ClearShadow() error {
	err := db.essential(func(tx *bolt.Tx) error {
		slots, err := bucket(tx, bucketSlots)
		if err != nil {
			return err
		}
		return putSlot(slots, keyShadow, nil)
	})
	if err != nil {
		return fmt.Errorf("store: clear shadow: %w", err)
	}
	return nil
}
