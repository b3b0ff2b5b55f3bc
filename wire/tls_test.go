package wire

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/internal/capped/cappedtest"
	"github.com/trit-iot/trit/wire/tlstest"
)

func TestClientCertName(t *testing.T) {
	if ClientCertName(nil) != "" || ClientCertName(&tls.Config{}) != "" {
		t.Error("a config without a certificate has a name")
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gw-7"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := ClientCertName(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}); got != "gw-7" {
		t.Errorf("ClientCertName = %q, want gw-7", got)
	}
}

// TestClientTLSFilesBounded: ca_file, cert_file and key_file were read
// whole (the key through tls.LoadX509KeyPair), so a wrong path such as
// /dev/zero took memory without end at start-up of the agent or the
// fleet. Now each is read up to its bound — 1 MiB for a certificate file
// (a system's whole CA bundle fits), 64 KiB for a key — and a larger one
// is refused naming it; files as issued still load.
func TestClientTLSFilesBounded(t *testing.T) {
	p := tlstest.New(t, "bounded")
	cert, key := p.Client(t, "gw-1")
	if c, err := ClientTLS(p.CAFile, cert, key); err != nil || c.RootCAs == nil || ClientCertName(c) != "gw-1" {
		t.Fatalf("the files as issued: %v", err)
	}
	pad := func(path string, to int) { cappedtest.Pad(t, path, to) }
	pad(p.CAFile, MaxCertFile)
	if _, err := ClientTLS(p.CAFile, "", ""); err != nil {
		t.Fatalf("a CA file of 1 MiB: %v", err)
	}
	pad(p.CAFile, MaxCertFile+1)
	if _, err := ClientTLS(p.CAFile, "", ""); err == nil || err.Error() != "ca_file: "+p.CAFile+": larger than 1048576 bytes (1024 KiB), the most a certificate file may hold" {
		t.Errorf("a CA file of 1 MiB + 1: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ClientTLS("/dev/zero", "", ""); err == nil || !strings.Contains(err.Error(), "/dev/zero: larger than 1048576 bytes") {
			t.Errorf("ca_file /dev/zero: %v", err)
		}
	}
	pad(key, 64<<10+1)
	if _, err := ClientTLS("", cert, key); err == nil || !strings.Contains(err.Error(), key+": larger than 65536 bytes (64 KiB), the most a key file may hold") {
		t.Errorf("a key file of 64 KiB + 1: %v", err)
	}
	pad(cert, MaxCertFile+1)
	if _, err := ClientTLS("", cert, key); err == nil || !strings.Contains(err.Error(), cert+": larger than 1048576 bytes") {
		t.Errorf("a certificate file of 1 MiB + 1: %v", err)
	}
}
