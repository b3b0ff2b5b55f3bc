package wire

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"

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
// commands. Several keys at once allow rotation with overlap. It is a
// bundle.KeySet (same key IDs, same rules) looked up by the hex IDs commands
// carry. The zero value and nil are empty sets; it is safe for concurrent
// reads.
type KeySet struct {
	set bundle.KeySet
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
		if err == nil {
			err = ks.Add(pub)
		}
		if err != nil {
			return nil, fmt.Errorf("command key %s: %w", p, err)
		}
	}
	return ks, nil
}

// Add trusts pub. It fails for a key of the wrong size or two different keys
// with the same ID.
func (ks *KeySet) Add(pub ed25519.PublicKey) error { return ks.set.Add(pub) }

// Len returns the number of keys.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return ks.set.Len()
}

func (ks *KeySet) lookup(id string) (ed25519.PublicKey, bool) {
	var kid [bundle.KeyIDSize]byte
	if ks == nil || hex.DecodedLen(len(id)) != len(kid) {
		return nil, false
	}
	if _, err := hex.Decode(kid[:], []byte(id)); err != nil {
		return nil, false
	}
	return ks.set.Lookup(kid)
}
