package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// PutBundle stores data under its SHA-256 and returns the hash as lowercase
// hex. Storing bytes that are already present is a no-op; a stored copy
// that no longer matches its hash (a damaged page) is replaced by data,
// which does.
func (db *DB) PutBundle(data []byte) (string, error) {
	if len(data) == 0 {
		return "", fmt.Errorf("store: put bundle: empty bundle: %w", ErrInvalid)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	err := db.ordinary(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketBundles)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(hash)); v != nil && bytes.Equal(v, data) {
			return nil
		}
		return b.Put([]byte(hash), data)
	})
	if err != nil {
		return "", fmt.Errorf("store: put bundle %s: %w", hash, err)
	}
	return hash, nil
}

// Bundle returns a copy of the bundle stored under hash, after checking that
// its content still hashes to it. A missing bundle is ErrNotFound.
func (db *DB) Bundle(hash string) ([]byte, error) {
	if err := checkHash(hash); err != nil {
		return nil, fmt.Errorf("store: bundle: %w", err)
	}
	var data []byte
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketBundles)
		if err != nil {
			return err
		}
		v := b.Get([]byte(hash))
		if v == nil {
			return ErrNotFound
		}
		data = bytes.Clone(v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: bundle %s: %w", hash, err)
	}
	// Verify outside the transaction to keep it short.
	if err := verifyBundle(hash, data); err != nil {
		return nil, err
	}
	return data, nil
}

// BundleHashes returns the hashes of all stored bundles in sorted order.
func (db *DB) BundleHashes() ([]string, error) {
	var hashes []string
	err := db.view(func(tx *bolt.Tx) error {
		b, err := bucket(tx, bucketBundles)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, _ []byte) error {
			hashes = append(hashes, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: bundle hashes: %w", err)
	}
	return hashes, nil
}

// DeleteBundle removes a stored bundle. The active, previous and shadow
// bundles cannot be deleted (ErrBundleInUse); a missing bundle is ErrNotFound.
func (db *DB) DeleteBundle(hash string) error {
	if err := checkHash(hash); err != nil {
		return fmt.Errorf("store: delete bundle: %w", err)
	}
	err := db.essential(func(tx *bolt.Tx) error {
		s, err := readSlots(tx)
		if err != nil {
			return err
		}
		if (s.active != nil && s.active.Hash == hash) || (s.previous != nil && s.previous.Hash == hash) || (s.shadow != nil && s.shadow.Hash == hash) {
			return ErrBundleInUse
		}
		b, err := bucket(tx, bucketBundles)
		if err != nil {
			return err
		}
		if b.Get([]byte(hash)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(hash))
	})
	if err != nil {
		return fmt.Errorf("store: delete bundle %s: %w", hash, err)
	}
	return nil
}

// checkHash reports whether h is a lowercase hex SHA-256.
func checkHash(h string) error {
	if len(h) != 2*sha256.Size {
		return fmt.Errorf("hash %q: want %d hex digits: %w", h, 2*sha256.Size, ErrInvalid)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("hash %q: want lowercase hex: %w", h, ErrInvalid)
		}
	}
	return nil
}

// verifyBundle checks that data hashes to hash.
func verifyBundle(hash string, data []byte) error {
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hash {
		return corrupt(bucketBundles, hash, errors.New("content does not match its hash"))
	}
	return nil
}
