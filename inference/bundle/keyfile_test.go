package bundle

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
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

// TestLoadKeyBounded: a key file is read up to MaxKeyFile bytes and no
// further. A key followed by more than that (comments, or a wrong path
// such as /dev/zero) was read whole — all of /dev/zero, without end — and
// a padded key was accepted; now each loader refuses it with ErrKeyFile
// naming the file and the bound. A file of MaxKeyFile bytes still loads,
// and so does a key given through a pipe.
func TestLoadKeyBounded(t *testing.T) {
	dir := t.TempDir()
	priv, pub := filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")
	if err := GenerateKey(priv, pub); err != nil {
		t.Fatal(err)
	}
	privPEM, _ := os.ReadFile(priv)
	pubPEM, _ := os.ReadFile(pub)
	// padded is key followed by comment lines up to n bytes.
	padded := func(name string, key []byte, n int) string {
		data := append(append([]byte{}, key...), bytes.Repeat([]byte("# comment\n"), n/10+1)...)[:n]
		data[n-1] = '\n'
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	refused := func(what, path string, err error) {
		t.Helper()
		if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), path+": larger than 65536 bytes (64 KiB)") {
			t.Fatalf("%s: %v; want ErrKeyFile naming %s and the 65536-byte bound", what, err, path)
		}
	}
	bigPub, bigPriv := padded("big.pub", pubPEM, MaxKeyFile+1), padded("big.key", privPEM, MaxKeyFile+1)
	_, err := LoadPublicKey(bigPub)
	refused("LoadPublicKey", bigPub, err)
	_, err = LoadKeySet(pub, bigPub)
	refused("LoadKeySet", bigPub, err)
	_, err = LoadPrivateKey(bigPriv)
	refused("LoadPrivateKey", bigPriv, err)

	if _, err := LoadPublicKey(padded("full.pub", pubPEM, MaxKeyFile)); err != nil {
		t.Errorf("a public key file of MaxKeyFile bytes: %v", err)
	}
	if _, err := LoadPrivateKey(padded("full.key", privPEM, MaxKeyFile)); err != nil {
		t.Errorf("a private key file of MaxKeyFile bytes: %v", err)
	}

	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := LoadPublicKey("/dev/zero")
		refused("LoadPublicKey(/dev/zero)", "/dev/zero", err)
	}
	// A pipe (a shell's <(…), say) is no regular file and has no size:
	// it is read up to the bound like any other.
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() { w.Write(pubPEM); w.Close() }()
		if _, err := LoadPublicKey(fmt.Sprintf("/proc/self/fd/%d", r.Fd())); err != nil {
			t.Errorf("a public key through a pipe: %v", err)
		}
	}
}

// FuzzKeyFile writes arbitrary bytes as a key file and loads it as a
// public key, a key set and a private key. A load either gives an Ed25519
// key that written again as GenerateKey writes it loads to the same key,
// or fails with ErrKeyFile naming the file, never echoing key material.
func FuzzKeyFile(f *testing.F) {
	dir := f.TempDir()
	priv, pub := filepath.Join(dir, "seed.key"), filepath.Join(dir, "seed.pub")
	if err := GenerateKey(priv, pub); err != nil {
		f.Fatal(err)
	}
	privPEM, _ := os.ReadFile(priv)
	pubPEM, _ := os.ReadFile(pub)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	ecPriv, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(ec.Public())
	crlf := bytes.ReplaceAll(pubPEM, []byte("\n"), []byte("\r\n"))
	for _, seed := range [][]byte{
		privPEM, pubPEM, crlf,
		append([]byte("# the fleet's release key\n"), pubPEM...),
		append(append([]byte{}, pubPEM...), "trailing text\n"...),
		append(append([]byte{}, pubPEM...), pubPEM...),
		append(append([]byte{}, privPEM...), pubPEM...),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1, 2, 3}}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecPriv}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecPub}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecPriv}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("not DER at all")}),
		privPEM[:len(privPEM)/2], []byte("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n"), []byte("hello"), nil,
	} {
		f.Add(seed)
	}
	// The file is rewritten in place and cut to length: 100 times faster
	// than os.WriteFile's truncation to nothing first on ext4, which
	// flushes the file when it is closed.
	path := filepath.Join(dir, "fuzz.key")
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { file.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := file.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := file.Truncate(int64(len(data))); err != nil {
			t.Fatal(err)
		}
		// Key material: the DER of every block, as the file spells it.
		var secrets []string
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if len(b.Bytes) >= 12 {
				secrets = append(secrets, base64.StdEncoding.EncodeToString(b.Bytes[:12]), fmt.Sprintf("%x", b.Bytes[:12]))
			}
		}
		refused := func(what string, err error) {
			t.Helper()
			msg := err.Error()
			if !errors.Is(err, ErrKeyFile) || !strings.Contains(msg, path) {
				t.Fatalf("%s: error %q is not ErrKeyFile naming the file", what, msg)
			}
			for _, s := range secrets {
				if strings.Contains(msg, s) {
					t.Fatalf("%s: error %q echoes key material %s", what, msg, s)
				}
			}
		}
		check := func(what string, pemType string, der []byte, load func() (string, error)) {
			t.Helper()
			again := filepath.Join(dir, "again.key")
			if err := os.WriteFile(again, pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der}), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, err := load(); err != nil || got != what {
				t.Fatalf("key from %q written again loads as %x, %v", data, got, err)
			}
		}
		k, err := LoadPublicKey(path)
		if err != nil {
			refused("LoadPublicKey", err)
		} else {
			if len(k) != ed25519.PublicKeySize {
				t.Fatalf("LoadPublicKey: %d-byte key", len(k))
			}
			der, err := x509.MarshalPKIXPublicKey(k)
			if err != nil {
				t.Fatal(err)
			}
			check(string(k), publicPEMType, der, func() (string, error) {
				k, err := LoadPublicKey(filepath.Join(dir, "again.key"))
				return string(k), err
			})
		}
		ks, kerr := LoadKeySet(path)
		if (kerr == nil) != (err == nil) || (kerr == nil && ks.Len() != 1) {
			t.Fatalf("LoadKeySet: %v, %v; LoadPublicKey: %v", ks, kerr, err)
		}
		p, perr := LoadPrivateKey(path)
		if perr != nil {
			refused("LoadPrivateKey", perr)
			return
		}
		if err == nil {
			t.Fatalf("%q loads as a public and a private key", data)
		}
		if len(p) != ed25519.PrivateKeySize || !bytes.Equal(p[32:], p.Public().(ed25519.PublicKey)) {
			t.Fatal("LoadPrivateKey: not a consistent Ed25519 key")
		}
		der, err := x509.MarshalPKCS8PrivateKey(p)
		if err != nil {
			t.Fatal(err)
		}
		check(string(p), privatePEMType, der, func() (string, error) {
			k, err := LoadPrivateKey(filepath.Join(dir, "again.key"))
			return string(k), err
		})
	})
}
