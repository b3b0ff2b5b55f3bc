package bundle

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
)

// PEM block types of the key files.
const (
	privatePEMType = "PRIVATE KEY" // PKCS #8
	publicPEMType  = "PUBLIC KEY"  // PKIX
)

// MaxKeyFile bounds the key files the loaders read, in bytes: an Ed25519
// key file as GenerateKey writes it is under 200 bytes, and even one with
// comments around its PEM block fits many times over. A larger file (a
// wrong path, /dev/zero) is refused without reading past the bound.
const MaxKeyFile = 64 << 10

// GenerateKey creates a new Ed25519 key pair and writes the private key to
// privPath (PEM PKCS #8 "PRIVATE KEY", mode 0600) and the public key to
// pubPath (PEM PKIX "PUBLIC KEY", mode 0644). It never overwrites: if
// either file exists it fails with an error wrapping fs.ErrExist and writes
// nothing. Files are created with O_EXCL and synced; on failure the files it
// created are removed.
func GenerateKey(privPath, pubPath string) error {
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("key file %s: %w; refusing to overwrite", p, os.ErrExist)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return err
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	if err := writeNew(privPath, 0o600, pem.EncodeToMemory(&pem.Block{Type: privatePEMType, Bytes: privDER})); err != nil {
		return err
	}
	if err := writeNew(pubPath, 0o644, pem.EncodeToMemory(&pem.Block{Type: publicPEMType, Bytes: pubDER})); err != nil {
		os.Remove(privPath)
		return err
	}
	return nil
}

// writeNew creates path (which must not exist) with mode perm and writes
// data to it durably; on failure it removes what it created. It is
// internal/newfile.Write's twin: this package imports the standard library
// only.
func writeNew(path string, perm os.FileMode, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("key file %s: %w", path, err)
	}
	return nil
}

// LoadPrivateKey reads a private key written by GenerateKey. On Unix it
// refuses a file that group or others can access (like ssh does), and
// anywhere one of more than MaxKeyFile bytes. Errors never include key
// material.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	// A public key where the private one belongs is the likelier mistake
	// than its mode (a .pub file is 0644): say that first.
	if data, err := readKeyFile(path); err == nil {
		if block, _ := pem.Decode(data); block != nil && block.Type == publicPEMType {
			return nil, fmt.Errorf("%w: %s is a public key; give the private key (the .key file written with it by tritctl keys gen)", ErrKeyFile, path)
		}
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return nil, fmt.Errorf("%w: private key %s has mode %04o; it must not be accessible by group or others (chmod 600)", ErrKeyFile, path, perm)
		}
	}
	der, err := readPEM(path, privatePEMType)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a PKCS #8 private key", ErrKeyFile, path)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s: a %T, want an Ed25519 key", ErrKeyFile, path, k)
	}
	return priv, nil
}

// LoadPublicKey reads a public key written by GenerateKey. A file of more
// than MaxKeyFile bytes is refused.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	der, err := readPEM(path, publicPEMType)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a PKIX public key: %v", ErrKeyFile, path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s: a %T, want an Ed25519 key", ErrKeyFile, path, k)
	}
	return pub, nil
}

// LoadKeySet reads public key files into a KeySet.
func LoadKeySet(paths ...string) (*KeySet, error) {
	ks := &KeySet{}
	for _, p := range paths {
		pub, err := LoadPublicKey(p)
		if err != nil {
			return nil, err
		}
		if err := ks.Add(pub); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return ks, nil
}

// readPEM returns the DER bytes of the single PEM block of the given type
// in the file.
func readPEM(path, typ string) ([]byte, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	block, rest := pem.Decode(data)
	switch {
	case block == nil:
		return nil, fmt.Errorf("%w: %s: no PEM block", ErrKeyFile, path)
	case block.Type != typ:
		return nil, fmt.Errorf("%w: %s: PEM block %q, want %q", ErrKeyFile, path, block.Type, typ)
	case len(block.Headers) != 0:
		return nil, fmt.Errorf("%w: %s: PEM headers (an encrypted key?) are not supported", ErrKeyFile, path)
	}
	if b, _ := pem.Decode(rest); b != nil {
		return nil, fmt.Errorf("%w: %s: more than one PEM block", ErrKeyFile, path)
	}
	return block.Bytes, nil
}

// readKeyFile reads the key file at path, refusing one of more than
// MaxKeyFile bytes (ErrKeyFile naming the file and the bound) without
// reading more than that: a regular file by its size, anything else (a
// pipe, a device) once it has given one byte more.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooBig := func() error {
		return fmt.Errorf("%w: %s: larger than %d bytes (%d KiB), the most a key file may hold; give the .key or .pub file tritctl keys gen wrote", ErrKeyFile, path, MaxKeyFile, MaxKeyFile>>10)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxKeyFile {
		return nil, tooBig()
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err != nil {
		return nil, err // an *fs.PathError: it names the file
	}
	if len(data) > MaxKeyFile {
		return nil, tooBig()
	}
	return data, nil
}
