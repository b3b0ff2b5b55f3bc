package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/internal/buildinfo"
	"github.com/trit-iot/trit/internal/cli"
	"github.com/trit-iot/trit/internal/cli/clitest"
	"github.com/trit-iot/trit/internal/secretfile"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// Serve refuses an API token file that group or others can read, as it
// refuses such a command key.
func TestServeRefusesReadableToken(t *testing.T) {
	files := writeFleetFiles(t, "tcp://127.0.0.1:1")
	token := filepath.Join(files.dir, "token")
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig("test.toml", files.config)
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err == nil || !strings.Contains(err.Error(), "api.token_file") || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Serve with a 0644 token: %v", err)
	}
}

// checkConfigOf writes config as fleet.toml in dir and returns a run of
// check-config on it: the exit code and standard error.
func checkConfigOf(t *testing.T, dir, config string) func() (int, string) {
	t.Helper()
	path := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() (int, string) {
		var out, errOut strings.Builder
		code := Main([]string{"check-config", "--config", path}, &out, &errOut)
		return code, errOut.String()
	}
}

// check-config refuses what run refuses at start: an API token shorter
// than 16 characters and an embedded broker's credentials file others
// may write. Both passed check-config, and the service then stopped at
// start (the token's error without the file's name).
func TestCheckConfigRefusesWhatRunRefuses(t *testing.T) {
	files := writeFleetFiles(t, "embedded")
	creds := filepath.Join(files.dir, "mqtt-credentials")
	check := checkConfigOf(t, files.dir, strings.Replace(files.config, "[api]", fmt.Sprintf("embedded_credentials = %q\n[api]", creds), 1))
	if code, errOut := check(); code != 0 {
		t.Fatalf("check-config without a credentials file: exit %d, %s", code, errOut)
	}
	token := filepath.Join(files.dir, "token")
	if err := os.WriteFile(token, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := token + ": the token has 5 characters; the API token must be at least 16"
	if code, errOut := check(); code != 2 || !strings.Contains(errOut, "api.token_file: "+want) {
		t.Errorf("check-config with a 5-character token: exit %d, %q; want 2 and %q", code, errOut, want)
	}
	if _, err := readToken(token); err == nil || err.Error() != want {
		t.Errorf("readToken = %v, want %s", err, want)
	}
	if err := os.WriteFile(token, []byte(files.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(creds, 0o666); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if code, errOut := check(); code != 2 || !strings.Contains(errOut, "mqtt.embedded_credentials: ") || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("check-config with a 0666 credentials file: exit %d, %q", code, errOut)
	}
}

// The broker connection's secrets are held to the command key's rule: a
// client key or password file group or others can read was used as it
// was; check-config and Serve now refuse it, naming the key.
func TestFleetMQTTSecretsMode(t *testing.T) {
	files := writeFleetFiles(t, "tcp://127.0.0.1:1")
	pw := filepath.Join(files.dir, "mqtt.pass")
	if err := os.WriteFile(pw, []byte("fleet-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := checkConfigOf(t, files.dir, strings.Replace(files.config, "[mqtt]\n", fmt.Sprintf("[mqtt]\nusername = \"trit-fleet\"\npassword_file = %q\n", pw), 1))
	if code, errOut := check(); code != 0 {
		t.Fatalf("check-config with a 0600 password file: exit %d, %s", code, errOut)
	}
	for _, mode := range []os.FileMode{0o640, 0o644} {
		if err := os.Chmod(pw, mode); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("mqtt.password_file: %s has mode %04o; a secret must not be readable by group or others (chmod 600)", pw, mode)
		if code, errOut := check(); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("check-config, password file mode %04o: exit %d, %q; want 2 and %q", mode, code, errOut, want)
		}
	}
	key := filepath.Join(files.dir, "client.key")
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o604)
	if err := secretfile.CheckMode(key, false); err == nil || !strings.Contains(err.Error(), "has mode 0604") {
		t.Errorf("a key file of mode 0604: %v", err)
	}
}

// An API port another process holds stops Serve with the way out, as the
// embedded broker's port does: before, only "address already in use".
func TestServeAPIPortInUse(t *testing.T) {
	files := writeFleetFiles(t, "embedded")
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free.Close()
	config := strings.Replace(files.config, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", held.Addr().String()), 1)
	config = strings.Replace(config, `broker = "embedded"`, fmt.Sprintf("broker = \"embedded\"\nembedded_listen = %q\nembedded_credentials = %q",
		free.Addr().String(), filepath.Join(files.dir, "mqtt-credentials")), 1)
	cfg, err := ParseConfig("test.toml", config)
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err == nil || !strings.Contains(err.Error(), "api.listen: ") || !strings.Contains(err.Error(), "set api.listen to a free port") {
		t.Fatalf("Serve on a held API port: %v", err)
	}
}

// A damaged database stops trit-fleet at start-up with an error that names
// the file and the ways out, and leaves the file as it was.
func TestServeRefusesDamagedDatabase(t *testing.T) {
	files := writeFleetFiles(t, "tcp://127.0.0.1:1")
	cfg, err := ParseConfig("test.toml", files.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Database), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"empty": nil, "garbage": bytes.Repeat([]byte("trit"), 4096)} {
		if err := os.WriteFile(cfg.Database, content, 0o600); err != nil {
			t.Fatal(err)
		}
		err := Serve(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		if err == nil || !strings.Contains(err.Error(), cfg.Database) || !strings.Contains(err.Error(), "--start-fresh") || !strings.Contains(err.Error(), "backup") {
			t.Fatalf("%s database: %v", name, err)
		}
		if got, _ := os.ReadFile(cfg.Database); !bytes.Equal(got, content) {
			t.Fatalf("%s database was changed", name)
		}
	}
}

// trit-fleet backup copies the database: straight from the file when the
// service is stopped, through the running service's API otherwise (the
// service holds the file's lock).
func TestBackupCommand(t *testing.T) {
	b := mqtttest.Start(t)
	files := writeFleetFiles(t, b.URL())
	conf := filepath.Join(files.dir, "fleet.toml")
	run := func(out string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"backup", "--config", conf, "--out", out}, &stdout, &stderr); code != 0 {
			t.Fatalf("backup: exit %d: %s", code, stderr.String())
		}
		db, err := store.Open(out, &store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("the copy does not open: %v", err)
		}
		defer db.Close()
		if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
			t.Fatalf("copy mode %v", fi.Mode().Perm())
		}
		return stdout.String()
	}

	// Running: through the API, with the inventory in the copy.
	cfg, err := ParseConfig("test.toml", files.config)
	if err != nil {
		t.Fatal(err)
	}
	addr, cancel := serve(t, files.config)
	// The backup command finds the running service at api.listen.
	withAddr := strings.Replace(files.config, `listen = "127.0.0.1:0"`, `listen = "`+addr+`"`, 1)
	if err := os.WriteFile(conf, []byte(withAddr), 0o600); err != nil {
		t.Fatal(err)
	}
	startDevice(t, b.URL(), "sim-1", files)
	waitFor(t, "sim-1 in the inventory", func() bool {
		var ds []inventory.Device
		return json.Unmarshal(callAPI(t, addr, files.token, "GET", "/v1/devices", nil), &ds) == nil && len(ds) == 1
	})
	out := filepath.Join(t.TempDir(), "fleet-backup.db")
	if msg := run(out); !strings.Contains(msg, "running trit-fleet") {
		t.Fatalf("backup while running: %s", msg)
	}
	db, err := store.Open(out, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inventory.DeviceByID(db, "sim-1"); err != nil {
		t.Fatalf("the copy lacks the inventory: %v", err)
	}
	db.Close()

	// Stopped: from the file.
	cancel()
	waitFor(t, "the service to release the database", func() bool {
		db, err := store.Open(cfg.Database, &store.Options{ReadOnly: true, Timeout: 1})
		if err == nil {
			db.Close()
		}
		return err == nil
	})
	if msg := run(out); !strings.Contains(msg, "not running") {
		t.Fatalf("backup while stopped: %s", msg)
	}
}

// waitFor polls cond until it holds (the condition is the assertion; the
// deadline only bounds a broken run).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMainPolicy: trit-fleet follows the binaries' one command-line policy
// (internal/cli): --version from internal/buildinfo, usage errors and an
// unusable configuration exit 2.
func TestMainPolicy(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"--version"}, &out, &out); code != 0 || !strings.Contains(out.String(), buildinfo.Version) {
		t.Errorf("--version: exit %d %q", code, out.String())
	}
	for _, args := range [][]string{
		{"run", "--nope"},
		{"run", "extra"},
		{"nosuch"},
		{"run", "--config", filepath.Join(t.TempDir(), "missing.toml")},
	} {
		var out bytes.Buffer
		if code := Main(args, &out, &out); code != 2 || !strings.HasPrefix(out.String(), "trit-fleet: ") {
			t.Errorf("%q: exit %d %q, want 2", args, code, out.String())
		}
	}
}

// TestVocabulary: every trit-fleet command has an example in its help, and
// its flags follow the vocabulary the four programs share (docs/CLI.md).
func TestVocabulary(t *testing.T) {
	if bad := cli.Lint(NewCommand(io.Discard, io.Discard), true); len(bad) > 0 {
		t.Errorf("the flag vocabulary (docs/CLI.md) is broken:\n  %s", strings.Join(bad, "\n  "))
	}
	if bad := clitest.Check(func() *cobra.Command { return NewCommand(io.Discard, io.Discard) }); len(bad) > 0 {
		t.Errorf("examples in the help that do not parse:\n  %s", strings.Join(bad, "\n  "))
	}
}

// check-config refuses a bbolt database path that run cannot open: a
// directory, or a file below a regular file. A missing file (and missing
// directories: run creates them) passes.
func TestCheckConfigDatabasePath(t *testing.T) {
	files := writeFleetFiles(t, "tcp://127.0.0.1:1")
	check := func(db string) (int, string) {
		return checkConfigOf(t, files.dir, strings.Replace(files.config, "database = ", fmt.Sprintf("database = %q\n# was: ", db), 1))()
	}
	if code, errOut := check(filepath.Join(files.dir, "new", "deeper", "fleet.db")); code != 0 {
		t.Errorf("a database in directories run creates: exit %d, %s", code, errOut)
	}
	if code, errOut := check(files.dir); code != 2 || !strings.Contains(errOut, "database: "+files.dir+" is a directory") {
		t.Errorf("a directory as the database: exit %d, %q", code, errOut)
	}
	token := filepath.Join(files.dir, "token")
	if code, errOut := check(filepath.Join(token, "fleet.db")); code != 2 || !strings.Contains(errOut, token+" is not a directory") {
		t.Errorf("a database below a file: exit %d, %q", code, errOut)
	}
}
