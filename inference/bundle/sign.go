package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"slices"
)

// KeyID returns the ID a bundle signed by pub's private key carries: the
// first 8 bytes of SHA-256 of the 32-byte Ed25519 public key.
func KeyID(pub ed25519.PublicKey) [KeyIDSize]byte {
	sum := sha256.Sum256(pub)
	var id [KeyIDSize]byte
	copy(id[:], sum[:])
	return id
}

// KeySet is a set of trusted Ed25519 public keys, looked up by key ID.
// Holding several at once lets keys rotate with overlap: trust the new key,
// re-sign, then drop the old one. The zero value and nil are empty sets. A
// KeySet is safe for concurrent reads; Add must not run concurrently with
// anything else.
type KeySet struct {
	keys map[[KeyIDSize]byte]ed25519.PublicKey
}

// NewKeySet returns the set of the given keys. It fails if a key is not a
// 32-byte Ed25519 public key, or if two different keys share a key ID.
func NewKeySet(keys ...ed25519.PublicKey) (*KeySet, error) {
	ks := &KeySet{}
	for _, k := range keys {
		if err := ks.Add(k); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

// Add trusts pub. Adding a key already in the set does nothing.
func (ks *KeySet) Add(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key has %d bytes, want %d", ErrKeyFile, len(pub), ed25519.PublicKeySize)
	}
	id := KeyID(pub)
	if old, ok := ks.keys[id]; ok {
		if !bytes.Equal(old, pub) {
			return fmt.Errorf("%w: two different keys share key ID %x", ErrKeyFile, id)
		}
		return nil
	}
	if ks.keys == nil {
		ks.keys = make(map[[KeyIDSize]byte]ed25519.PublicKey)
	}
	ks.keys[id] = slices.Clone(pub)
	return nil
}

// Len returns the number of keys in the set.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.keys)
}

// IDs returns the key IDs in the set, sorted.
func (ks *KeySet) IDs() [][KeyIDSize]byte {
	if ks == nil {
		return nil
	}
	ids := make([][KeyIDSize]byte, 0, len(ks.keys))
	for id := range ks.keys {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [KeyIDSize]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// Lookup returns the trusted key with the given ID.
func (ks *KeySet) Lookup(id [KeyIDSize]byte) (ed25519.PublicKey, bool) { return ks.lookup(id) }

func (ks *KeySet) lookup(id [KeyIDSize]byte) (ed25519.PublicKey, bool) {
	if ks == nil {
		return nil, false
	}
	k, ok := ks.keys[id]
	return k, ok
}

// Sign returns a signed copy of the unsigned bundle (as Encode writes it):
// the key ID of priv's public key and the Ed25519 signature over every byte
// before the signature, key ID included. It checks the bundle parses and
// validates first, refuses one that is already signed (ErrSigned), and
// applies no size cap: that is the receiver's policy. The signature is
// deterministic, so signing the same bytes with the same key gives the same
// bundle.
func Sign(unsigned []byte, priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: private key has %d bytes, want %d", ErrKeyFile, len(priv), ed25519.PrivateKeySize)
	}
	if err := checkPreamble(unsigned); err != nil {
		return nil, err
	}
	if _, _, isUnsigned := trailer(unsigned); !isUnsigned {
		return nil, formatErr(ErrSigned, "signature", len(unsigned)-trailerSize, "the trailer is not all zero")
	}
	b, _, err := parse(unsigned)
	if err != nil {
		return nil, err
	}
	if err := b.Spec.Validate(); err != nil {
		return nil, &FormatError{Section: "model", Offset: -1, Err: ErrInvalid, Cause: err}
	}
	out := slices.Clone(unsigned)
	id := KeyID(priv.Public().(ed25519.PublicKey))
	at := len(out) - trailerSize
	copy(out[at:], id[:])
	copy(out[at+KeyIDSize:], ed25519.Sign(priv, out[:len(out)-64]))
	return out, nil
}
