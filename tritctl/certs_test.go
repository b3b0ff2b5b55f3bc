package tritctl

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	if b == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCertsIssueChain(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runCtl(t, "certs", "ca", "--dir", dir); code != 0 {
		t.Fatalf("certs ca: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCtl(t, "certs", "server", "--ca-dir", dir, "--out", dir, "--host", "broker.example", "--host", "127.0.0.1"); code != 0 {
		t.Fatalf("certs server: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCtl(t, "certs", "client", "--ca-dir", dir, "--out", dir, "--id", "gw-7"); code != 0 {
		t.Fatalf("certs client: exit %d: %s", code, stderr)
	}
	for _, key := range []string{"ca.key", "server.key", "gw-7.key"} {
		fi, err := os.Stat(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", key, fi.Mode().Perm())
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(dir, "ca.crt")))
	client := readCert(t, filepath.Join(dir, "gw-7.crt"))
	if client.Subject.CommonName != "gw-7" {
		t.Errorf("client CN %q", client.Subject.CommonName)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify for client auth: %v", err)
	}
	server := readCert(t, filepath.Join(dir, "server.crt"))
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: "broker.example"}); err != nil {
		t.Errorf("server certificate does not verify for broker.example: %v", err)
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("server certificate does not verify for 127.0.0.1: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a device certificate is usable as a server certificate")
	}

	// Nothing is ever overwritten.
	before, _ := os.ReadFile(filepath.Join(dir, "gw-7.key"))
	if _, stderr, code := runCtl(t, "certs", "client", "--ca-dir", dir, "--out", dir, "--id", "gw-7"); code != 1 || !strings.Contains(stderr, "refusing to overwrite") {
		t.Errorf("re-issuing gw-7: exit %d, %q", code, stderr)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "gw-7.key"))
	if !bytes.Equal(before, after) {
		t.Error("gw-7.key changed")
	}
	if _, _, code := runCtl(t, "certs", "ca", "--dir", dir); code != 1 {
		t.Errorf("re-creating the CA: exit %d, want 1", code)
	}
}

func TestCertsRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runCtl(t, "certs", "client", "--ca-dir", dir, "--out", dir, "--id", "gw/1"); code != 2 || !strings.Contains(stderr, "--id") {
		t.Errorf("bad device ID: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCtl(t, "certs", "server", "--ca-dir", dir, "--out", dir); code != 2 {
		t.Errorf("server without --host: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCtl(t, "certs", "client", "--ca-dir", dir, "--out", dir, "--id", "gw-1"); code != 1 || !strings.Contains(stderr, "fleet CA") {
		t.Errorf("missing CA: exit %d, %q", code, stderr)
	}
	if _, _, code := runCtl(t, "certs", "ca", "--dir", dir); code != 0 {
		t.Fatal("certs ca failed")
	}
	if err := os.Chmod(filepath.Join(dir, "ca.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCtl(t, "certs", "client", "--ca-dir", dir, "--out", dir, "--id", "gw-1")
	if code != 1 || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("world-readable CA key: exit %d, %q", code, stderr)
	}
	if strings.Contains(stderr, "PRIVATE KEY") {
		t.Error("error message contains key material")
	}
}
