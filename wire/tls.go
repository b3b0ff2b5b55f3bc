package wire

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientTLS returns the TLS configuration of a broker connection, agent's
// or fleet's alike: TLS 1.2 or newer, the broker verified against the CA
// in caFile (the system's roots when it is empty), and the client
// certificate certFile/keyFile when given. Errors name the file; they never
// contain key material.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
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
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s / %s: %w", certFile, keyFile, err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
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
