package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"
)

func TestKeyIDDefinition(t *testing.T) {
	pub, _ := testKey(t)
	sum := sha256.Sum256(pub)
	if id := KeyID(pub); !bytes.Equal(id[:], sum[:8]) {
		t.Fatalf("KeyID = %x, want the first 8 bytes of SHA-256 %x", id, sum[:8])
	}
}

func TestSignFillsTrailer(t *testing.T) {
	pub, priv := testKey(t)
	raw, err := Encode(testBundle(randomSpec(21, 10, 128, 2, 0.3, false)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Sign(raw, priv)
	if err != nil {
		t.Fatal(err)
	}
	n := len(out)
	if n != len(raw) || !bytes.Equal(out[:n-trailerSize], raw[:n-trailerSize]) {
		t.Fatal("Sign changed bytes before the trailer")
	}
	if id := KeyID(pub); !bytes.Equal(out[n-trailerSize:n-64], id[:]) {
		t.Fatal("trailer does not start with the key ID")
	}
	if !ed25519.Verify(pub, out[:n-64], out[n-64:]) {
		t.Fatal("signature does not cover every byte before it")
	}
	if _, err := Sign(out, priv); !errors.Is(err, ErrSigned) {
		t.Fatalf("re-signing: %v, want ErrSigned", err)
	}
	if _, err := Sign(raw, priv[:10]); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("short private key: %v, want ErrKeyFile", err)
	}
	bad := bytes.Clone(raw)
	bad[preambleSize] = 0 // empty model ID
	if _, err := Sign(bad, priv); !errors.Is(err, ErrInvalid) {
		t.Fatalf("signing an invalid bundle: %v, want ErrInvalid", err)
	}
}

// TestKeyRotation: with the old and new keys both trusted, bundles signed by
// either decode; once the old key is dropped, its bundles fail.
func TestKeyRotation(t *testing.T) {
	oldPub, oldPriv := otherKey(t, 10)
	newPub, newPriv := otherKey(t, 20)
	b := testBundle(randomSpec(23, 10, 128, 3, 0.3, false))
	byOld, byNew := signed(t, b, oldPriv), signed(t, b, newPriv)

	both := trusting(t, oldPub, newPub)
	if both.Trusted.Len() != 2 {
		t.Fatalf("key set has %d keys", both.Trusted.Len())
	}
	for name, data := range map[string][]byte{"old": byOld, "new": byNew} {
		got, err := Decode(data, both)
		if err != nil {
			t.Fatalf("%s key, both trusted: %v", name, err)
		}
		if !got.Signed {
			t.Fatalf("%s key: Signed = false", name)
		}
	}
	onlyNew := trusting(t, newPub)
	if _, err := Decode(byNew, onlyNew); err != nil {
		t.Fatalf("new key after rotation: %v", err)
	}
	if _, err := Decode(byOld, onlyNew); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old key after rotation: %v, want ErrUnknownKey", err)
	}
	// A signature by another key under a trusted key's ID is a bad
	// signature, not an unknown key.
	forged := bytes.Clone(byOld)
	id := KeyID(newPub)
	copy(forged[len(forged)-trailerSize:], id[:])
	if _, err := Decode(forged, onlyNew); !errors.Is(err, ErrSignature) {
		t.Fatalf("forged key ID: %v, want ErrSignature", err)
	}
}

func TestKeySet(t *testing.T) {
	pub, _ := testKey(t)
	if _, err := NewKeySet(pub[:31]); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("short public key: %v", err)
	}
	ks, err := NewKeySet(pub, pub)
	if err != nil || ks.Len() != 1 {
		t.Fatalf("the same key twice: %v, %d keys", err, ks.Len())
	}
	if ids := ks.IDs(); len(ids) != 1 || ids[0] != KeyID(pub) {
		t.Fatalf("IDs = %x", ids)
	}
	// The set keeps its own copy.
	cp := bytes.Clone(pub)
	ks2, _ := NewKeySet(cp)
	cp[0] ^= 1
	if k, ok := ks2.lookup(KeyID(pub)); !ok || !bytes.Equal(k, pub) {
		t.Fatal("key set aliases the caller's key")
	}
	var nilSet *KeySet
	if nilSet.Len() != 0 || nilSet.IDs() != nil {
		t.Fatal("nil key set is not empty")
	}
}
