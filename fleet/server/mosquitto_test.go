package server

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire/mqtttest"
)

// mosquittoSilentBound is how long Mosquitto 2.0.11, run with
// fleet/mosquitto/mosquitto.conf, keeps a connection that never completes
// its TLS handshake or sends CONNECT: its keepalive check closes it after
// 90-96 s, and no option shortens that (docs/FLEET.md, "Connections that
// never finish").
const mosquittoSilentBound = 100 * time.Second

// TestProductionMosquittoClosesSilentConnections: the production
// configuration's broker closes, within the bound the docs state, a
// connection that sends nothing and one that stalls in the middle of its
// TLS handshake. (It runs about 95 s, in parallel with the others.)
func TestProductionMosquittoClosesSilentConnections(t *testing.T) {
	t.Parallel()
	certFile, keyFile, _ := selfSigned(t)
	conf, err := os.ReadFile(filepath.Join("..", "mosquitto", "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "acl"), []byte("user trit-fleet\ntopic readwrite trit/v1/#\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := string(conf)
	for _, r := range [][2]string{
		{"listener 8883", "listener {{PORT}} 127.0.0.1"},
		{"/etc/mosquitto/trit/acl", dir + "/acl"},
		{"/etc/mosquitto/trit/ca.crt", certFile},
		{"/etc/mosquitto/trit/server.crt", certFile},
		{"/etc/mosquitto/trit/server.key", keyFile},
		{"persistence_location /var/lib/mosquitto/", "persistence_location {{DIR}}/"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fleet/mosquitto/mosquitto.conf no longer contains %q; update this test", r[0])
		}
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	b := mqtttest.StartConfig(t, s)

	// The broker is up and speaks TLS: a real handshake completes.
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", b.Addr(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake with the broker: %v", err)
	}
	c.Close()

	silent := func(name string, send []byte) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write(send); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			conn.SetReadDeadline(start.Add(mosquittoSilentBound))
			buf := make([]byte, 4096)
			for {
				_, err := conn.Read(buf) // the broker may answer a partial hello before it closes
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("still open after %v", mosquittoSilentBound)
				}
				if err != nil {
					t.Logf("closed by the broker after %v", time.Since(start).Round(time.Second))
					return
				}
			}
		})
	}
	silent("nothing sent", nil)
	// A TLS record header announcing a ClientHello that never comes.
	silent("handshake stalled", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
}
