package wire

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/trit-iot/trit/internal/capped"
)

// Bounds on the TLS files ClientTLS reads, in bytes: a wrong path (a log,
// /dev/zero) is refused naming the file, not read whole.
const (
	// MaxCertFile bounds a PEM certificate file: ca_file may be a bundle
	// of every CA a system trusts (about 200 KiB).
	MaxCertFile = 1 << 20
	// maxTLSKeyFile bounds a PEM private key file (an RSA-4096 key is
	// about 3 KiB).
	maxTLSKeyFile = 64 << 10
)

// ClientTLS returns the TLS configuration of a broker connection, agent's
// or fleet's alike: TLS 1.2 or newer, the broker verified against the CA
// in caFile (the system's roots when it is empty), and the client
// certificate certFile/keyFile when given. Each file is read up to its
// bound (MaxCertFile; 64 KiB for the key). Errors name the file; they
// never contain key material.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := readTLSFile(caFile, MaxCertFile, "a certificate file")
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate found", caFile)
		}
		t.RootCAs = pool
	}
	if certFile != "" {
		certPEM, err := readTLSFile(certFile, MaxCertFile, "a certificate file")
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		keyPEM, err := readTLSFile(keyFile, maxTLSKeyFile, "a key file")
		if err != nil {
			return nil, fmt.Errorf("client certificate's key: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s / %s: %w", certFile, keyFile, err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// readTLSFile reads the file at path up to limit bytes (internal/capped);
// what names the kind of file in the error for one larger.
func readTLSFile(path string, limit int64, what string) ([]byte, error) {
	raw, err := capped.ReadFile(path, limit)
	if errors.Is(err, capped.ErrTooLarge) {
		return nil, fmt.Errorf("%s: larger than %d bytes (%d KiB), the most %s may hold", path, limit, limit>>10, what)
	}
	return raw, err
}

// ClientCertName returns the common name of t's client certificate, or ""
// if it has none. With trit's Mosquitto configuration that name is the
// client's user name and client ID, so it must be the agent's device ID or
// the fleet's client ID.
func ClientCertName(t *tls.Config) string {
	if t == nil || len(t.Certificates) == 0 {
		return ""
	}
	c := t.Certificates[0]
	leaf := c.Leaf
	if leaf == nil && len(c.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	if leaf == nil {
		return ""
	}
	return leaf.Subject.CommonName
}
