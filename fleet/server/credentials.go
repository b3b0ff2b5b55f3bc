package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/trit-iot/trit/wire"
)

// The embedded broker's device credentials. Every device has a secret of
// 256 random bits made by `trit-fleet credentials add`, which the operator
// gives to the agent (mqtt.username = the device ID, mqtt.password_file =
// the secret). The fleet keeps only its SHA-256, one line per device, in
// the file named by mqtt.embedded_credentials:
//
//	# comment
//	gw-1 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//
// A fast hash is enough because the secrets are random and long, never
// chosen by a person: there is nothing to guess. Secrets are never stored,
// logged or shown again.

// Credential file limits.
const (
	maxCredentialsBytes = 16 << 20 // about 150,000 devices
	secretBytes         = 32
	hashPrefix          = "sha256:"
)

// ErrCredentials reports an unusable credentials file or request.
var ErrCredentials = errors.New("fleet: MQTT credentials")

// credentials maps device IDs to the SHA-256 of their secrets.
type credentials map[string][sha256.Size]byte

// parseCredentials parses a credentials file's text; name is used in
// errors, which give the line.
func parseCredentials(name string, data []byte) (credentials, error) {
	if len(data) > maxCredentialsBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, at most %d", ErrCredentials, name, len(data), maxCredentialsBytes)
	}
	c := credentials{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 256), 4096)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrCredentials, name, n, fmt.Sprintf(format, a...))
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fail("want \"<device-id> sha256:<64 hex digits>\", got %d fields", len(f))
		}
		if err := wire.CheckID(f[0]); err != nil {
			return nil, fail("device ID: %v", err)
		}
		h, ok := strings.CutPrefix(f[1], hashPrefix)
		if !ok || wire.CheckHash(h) != nil {
			return nil, fail("device %s: the hash is not sha256: and 64 lowercase hex digits", f[0])
		}
		if _, dup := c[f[0]]; dup {
			return nil, fail("device %s listed twice", f[0])
		}
		var sum [sha256.Size]byte
		hex.Decode(sum[:], []byte(h))
		c[f[0]] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCredentials, name, err)
	}
	return c, nil
}

// format returns the file text, devices in order.
func (c credentials) format() []byte {
	ids := make([]string, 0, len(c))
	for id := range c {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b bytes.Buffer
	b.WriteString("# trit-fleet MQTT device credentials (embedded broker); edit with `trit-fleet credentials`.\n")
	b.WriteString("# <device-id> sha256:<SHA-256 of the device's secret>\n")
	for _, id := range ids {
		h := c[id]
		fmt.Fprintf(&b, "%s %s%s\n", id, hashPrefix, hex.EncodeToString(h[:]))
	}
	return b.Bytes()
}

// check reports whether secret is id's.
func (c credentials) check(id string, secret []byte) bool {
	want, ok := c[id]
	sum := sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1 && ok
}

// newSecret returns a new random secret (64 hex digits) and its hash.
func newSecret() (string, [sha256.Size]byte, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", [sha256.Size]byte{}, err
	}
	s := hex.EncodeToString(b[:])
	return s, sha256.Sum256([]byte(s)), nil
}

// readCredentials reads the file at path. A missing file is an empty set
// (exists false). The file must not be writable by group or others: whoever
// can write it can add devices.
func readCredentials(path string) (c credentials, fi os.FileInfo, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return credentials{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, nil, fmt.Errorf("%w: %s has mode %v: whoever can write it can add devices (chmod 600)", ErrCredentials, path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialsBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrCredentials, path, err)
	}
	c, err = parseCredentials(path, data)
	return c, fi, err
}

// writeCredentials replaces the file at path atomically (a temporary file
// renamed over it), keeping the old file's owner when run as root, mode
// 0600.
func writeCredentials(path string, c credentials) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".credentials-*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing to remove
	if err := tmp.Chmod(0o600); err == nil {
		if fi, err := os.Stat(path); err == nil && os.Geteuid() == 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				tmp.Chown(int(st.Uid), int(st.Gid)) // the service user must still read it
			}
		}
	}
	_, err = tmp.Write(c.format())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrCredentials, path, err)
	}
	return nil
}

// credentialStore is the broker's view of the credentials file: it reads
// the file again whenever it changed, so `trit-fleet credentials add`
// takes effect without a restart. If a changed file cannot be read, the
// previous credentials stay in force and the error is reported once.
type credentialStore struct {
	path string
	warn func(msg string, args ...any)

	mu    sync.Mutex
	creds credentials
	fi    os.FileInfo // of the file read; nil if there was none
	bad   os.FileInfo // of the last file that could not be read
	// onChange, if not nil, is told what a reload changed (called with mu
	// held: it must not call back).
	onChange func(CredentialsChange)
}

// openCredentials reads the file at path; an unreadable or invalid file is
// an error, a missing one an empty set.
func openCredentials(path string, warn func(msg string, args ...any)) (*credentialStore, error) {
	c, fi, err := readCredentials(path)
	if err != nil {
		return nil, err
	}
	return &credentialStore{path: path, warn: warn, creds: c, fi: fi}, nil
}

// count returns the number of devices.
func (s *credentialStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.creds)
}

// check reports whether secret is device id's, reading the file again
// first if it changed.
func (s *credentialStore) check(id string, secret []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if s.fi != nil {
			s.warn("embedded broker: credentials file removed; no device can connect", "file", s.path)
			s.changed(s.creds, credentials{}, nil)
			s.creds, s.fi = credentials{}, nil
		}
	case err != nil:
		// Keep the credentials in force.
	case s.fi == nil || !sameFile(fi, s.fi):
		if s.bad != nil && sameFile(fi, s.bad) {
			break // already reported
		}
		c, nfi, err := readCredentials(s.path)
		if err != nil {
			s.warn("embedded broker: credentials file not reloaded; the previous credentials stay in force", "err", err)
			s.bad = fi
			break
		}
		s.changed(s.creds, c, nfi)
		s.creds, s.fi, s.bad = c, nfi, nil
	}
	return s.creds.check(id, secret)
}

func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}
