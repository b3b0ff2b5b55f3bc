package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// TestReload: on SIGHUP (cfg.Reload, as trit-fleet run sets it) Serve
// re-reads its file: a new release key is trusted and the log level
// changes without a restart; an invalid file is refused and the running
// configuration kept.
func TestReload(t *testing.T) {
	b := mqtttest.Start(t)
	files := writeFleetFiles(t, b.URL())
	conf := filepath.Join(files.dir, "fleet.toml")
	if err := os.WriteFile(conf, []byte(files.config), 0o600); err != nil {
		t.Fatal(err)
	}
	newPriv, newPub := filepath.Join(files.dir, "release2.key"), filepath.Join(files.dir, "release2.pub")
	if err := bundle.GenerateKey(newPriv, newPub); err != nil {
		t.Fatal(err)
	}
	priv2, err := bundle.LoadPrivateKey(newPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	hup := make(chan os.Signal, 1)
	cfg.Reload, cfg.Level = hup, new(slog.LevelVar)
	var logs fleettest.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: cfg.Level}))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Ready, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, log, ready) }()
	t.Cleanup(func() { cancel(); <-done })
	var addr string
	select {
	case r := <-ready:
		addr = r.API
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	upload := func(data []byte) int {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/bundles", bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+files.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	reloads := 0
	reload := func() {
		t.Helper()
		reloads++
		hup <- syscall.SIGHUP
		waitFor(t, "the reload's log line", func() bool { return strings.Count(logs.String(), "configuration reload") >= reloads })
	}

	data := fleettest.SignedBundle(t, "m", 1, priv2)
	if code := upload(data); code == 200 {
		t.Fatal("a bundle signed by an untrusted key was registered")
	}
	// log_level is a top-level key: before the first table.
	withNew := strings.Replace(files.config, "[mqtt]", "log_level = \"debug\"\n[mqtt]", 1)
	withNew = strings.Replace(withNew, `release_keys = [`, `release_keys = ["`+newPub+`", `, 1)
	if err := os.WriteFile(conf, []byte(withNew), 0o600); err != nil {
		t.Fatal(err)
	}
	reload()
	if !strings.Contains(logs.String(), "configuration reloaded") {
		t.Fatalf("not reloaded; log:\n%s", logs.String())
	}
	if cfg.Level.Level() != slog.LevelDebug {
		t.Errorf("log level %v after reload, want debug", cfg.Level.Level())
	}
	if code := upload(data); code != 200 {
		t.Fatalf("after the reload the new key's bundle got HTTP %d", code)
	}

	// An invalid file is refused; the keys in force stay.
	if err := os.WriteFile(conf, []byte(withNew+"\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload()
	if !strings.Contains(logs.String(), "configuration reload refused") || !strings.Contains(logs.String(), "bogus") {
		t.Fatalf("invalid config not refused by name; log:\n%s", logs.String())
	}
	if code := upload(fleettest.SignedBundle(t, "m", 2, priv2)); code != 200 {
		t.Fatalf("after a refused reload the trusted key's bundle got HTTP %d", code)
	}
}
