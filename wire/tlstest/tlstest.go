// Package tlstest makes throw-away certificate authorities for tests: a
// CA, a certificate for 127.0.0.1 and client certificates, written as PEM
// files (keys 0600) to a test directory. It imports the standard library
// only.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA and the certificates it issued, as files in Dir.
type PKI struct {
	Dir    string
	CA     *x509.Certificate
	CAFile string // Dir/ca.crt
	caKey  *ecdsa.PrivateKey
}

// New makes a CA named name and a certificate for 127.0.0.1,
// Dir/server.crt and Dir/server.key, good for server and client
// authentication (a cluster's nodes present it both ways on their
// routes).
func New(t testing.TB, name string) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir()}
	p.CA, p.caKey = p.Issue(t, "ca", &x509.Certificate{
		Subject: pkix.Name{CommonName: name + " test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	})
	p.CAFile = filepath.Join(p.Dir, "ca.crt")
	p.Issue(t, "server", &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	return p
}

// Server returns the files of the certificate for 127.0.0.1.
func (p *PKI) Server() (certFile, keyFile string) {
	return filepath.Join(p.Dir, "server.crt"), filepath.Join(p.Dir, "server.key")
}

// Client issues a client certificate with common name cn, cn.crt and
// cn.key.
func (p *PKI) Client(t testing.TB, cn string) (certFile, keyFile string) {
	t.Helper()
	p.Issue(t, cn, &x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return filepath.Join(p.Dir, cn+".crt"), filepath.Join(p.Dir, cn+".key")
}

// Issue signs tmpl with the CA (self-signed while there is none), valid
// from a minute ago for an hour, and writes name.crt and name.key.
func (p *PKI) Issue(t testing.TB, name string, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	parent, signer := tmpl, key
	if p.CA != nil {
		parent, signer = p.CA, p.caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, b []byte, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(p.Dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".crt", "CERTIFICATE", der, 0o644)
	write(name+".key", "EC PRIVATE KEY", kder, 0o600)
	return cert, key
}
