package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestGenerateKey(t *testing.T) {
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "fleet.key"), filepath.Join(dir, "fleet.pub")
	if err := GenerateKey(priv, pub); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]fs.FileMode{priv: 0o600, pub: 0o644} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// The umask may only take permissions away.
			if got := fi.Mode().Perm(); got&^want != 0 || (path == priv && got != 0o600) {
				t.Errorf("%s: mode %04o, want %04o", filepath.Base(path), got, want)
			}
		}
	}
	sk, err := LoadPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sk.Public().(ed25519.PublicKey), pk) {
		t.Fatal("public key file does not match the private key")
	}
	ks, err := LoadKeySet(pub)
	if err != nil || ks.Len() != 1 {
		t.Fatalf("LoadKeySet: %v", err)
	}

	// Never overwrite: neither file changes, whichever one exists.
	before, _ := os.ReadFile(priv)
	if err := GenerateKey(priv, filepath.Join(dir, "other.pub")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("existing private key: %v, want fs.ErrExist", err)
	}
	if err := GenerateKey(filepath.Join(dir, "other.key"), pub); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("existing public key: %v, want fs.ErrExist", err)
	}
	after, _ := os.ReadFile(priv)
	if !bytes.Equal(before, after) {
		t.Fatal("private key overwritten")
	}
	for _, p := range []string{"other.key", "other.pub"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s left behind after a refused GenerateKey", p)
		}
	}
}

func TestLoadKeyErrors(t *testing.T) {
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")
	if err := GenerateKey(priv, pub); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string, mode fs.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	privPEM, _ := os.ReadFile(priv)
	pubPEM, _ := os.ReadFile(pub)

	if _, err := LoadPublicKey(priv); !errors.Is(err, ErrKeyFile) {
		t.Errorf("private key as public: %v", err)
	}
	for _, mode := range []os.FileMode{0o600, 0o644} {
		if _, err := LoadPrivateKey(write(fmt.Sprintf("pub-as-priv-%o", mode), string(pubPEM), mode)); !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "is a public key") {
			t.Errorf("public key (mode %o) as private: %v", mode, err)
		}
	}
	if _, err := LoadPublicKey(write("garbage", "hello", 0o644)); !errors.Is(err, ErrKeyFile) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := LoadPublicKey(write("two", string(pubPEM)+string(pubPEM), 0o644)); !errors.Is(err, ErrKeyFile) {
		t.Errorf("two blocks: %v", err)
	}
	if _, err := LoadKeySet(pub, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if runtime.GOOS != "windows" {
		open := write("open.key", string(privPEM), 0o644)
		_, err := LoadPrivateKey(open)
		if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("world-readable private key: %v", err)
		}
		// Errors never echo key material.
		if strings.Contains(err.Error(), "BEGIN") || strings.Contains(err.Error(), string(privPEM[30:50])) {
			t.Errorf("error leaks key material: %v", err)
		}
	}
}
