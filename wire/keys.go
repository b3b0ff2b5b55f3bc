package wire

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/trit-iot/trit/inference/bundle"
)

// KeyID returns the ID of an Ed25519 public key, as a command's key_id
// carries it: the first 8 bytes of SHA-256 of the key (the same IDs bundles
// use), in lowercase hex.
func KeyID(pub ed25519.PublicKey) string {
	id := bundle.KeyID(pub)
	return hex.EncodeToString(id[:])
}

// KeySet holds the fleet's online public keys a device trusts for deployment
// commands. Several keys at once allow rotation with overlap. The zero value
// and nil are empty sets; it is safe for concurrent reads.
type KeySet struct {
	keys map[string]ed25519.PublicKey // by KeyID
}

// NewKeySet returns the set of the given keys; see Add.
func NewKeySet(keys ...ed25519.PublicKey) (*KeySet, error) {
	ks := &KeySet{}
	for _, k := range keys {
		if err := ks.Add(k); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

// LoadKeySet reads PEM public key files (as tritctl keys writes them).
func LoadKeySet(paths ...string) (*KeySet, error) {
	ks := &KeySet{}
	for _, p := range paths {
		pub, err := bundle.LoadPublicKey(p)
		if err != nil {
			return nil, fmt.Errorf("command key %s: %w", p, err)
		}
		if err := ks.Add(pub); err != nil {
			return nil, fmt.Errorf("command key %s: %w", p, err)
		}
	}
	return ks, nil
}

// Add trusts pub. It fails for a key of the wrong size or two different keys
// with the same ID.
func (ks *KeySet) Add(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("wire: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	id := KeyID(pub)
	if old, ok := ks.keys[id]; ok {
		if !bytes.Equal(old, pub) {
			return fmt.Errorf("wire: two different keys share key ID %s", id)
		}
		return nil
	}
	if ks.keys == nil {
		ks.keys = map[string]ed25519.PublicKey{}
	}
	ks.keys[id] = slices.Clone(pub)
	return nil
}

// Len returns the number of keys.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.keys)
}

func (ks *KeySet) lookup(id string) (ed25519.PublicKey, bool) {
	if ks == nil {
		return nil, false
	}
	k, ok := ks.keys[id]
	return k, ok
}
