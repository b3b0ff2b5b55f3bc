package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testHash = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // SHA-256 of "test"

func TestParseCredentials(t *testing.T) {
	c, err := parseCredentials("f", []byte("# comment\n\n  gw-1 "+testHash+"  \ngw-2\t"+testHash+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2 || !c.check("gw-1", []byte("test")) || !c.check("gw-2", []byte("test")) {
		t.Fatalf("parsed %v", c)
	}
	if c.check("gw-1", []byte("tesT")) || c.check("gw-3", []byte("test")) || c.check("gw-1", nil) {
		t.Error("check accepts a wrong secret or an unknown device")
	}
	again, err := parseCredentials("f", c.format())
	if err != nil || len(again) != 2 || again["gw-1"] != c["gw-1"] {
		t.Errorf("format does not round-trip: %v %v", again, err)
	}
	for _, bad := range []struct{ text, want string }{
		{"gw-1\n", "f:1: want"},
		{"# x\ngw-1 " + testHash + " extra\n", "f:2: want"},
		{"gw/1 " + testHash + "\n", "f:1: device ID"},
		{"gw-1 " + strings.TrimPrefix(testHash, "sha256:") + "\n", "not sha256:"},
		{"gw-1 sha256:" + strings.Repeat("G", 64) + "\n", "not sha256:"},
		{"gw-1 sha256:abc\n", "not sha256:"},
		{"gw-1 " + testHash + "\ngw-1 " + testHash + "\n", "f:2: device gw-1 listed twice"},
		{strings.Repeat("x", 5000) + "\n", "too long"},
	} {
		_, err := parseCredentials("f", []byte(bad.text))
		if !errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%.40q: %v, want %q", bad.text, err, bad.want)
		}
	}
}

func TestReadCredentialsPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds")
	c, fi, err := readCredentials(path)
	if err != nil || fi != nil || len(c) != 0 {
		t.Fatalf("missing file: %v %v %v", c, fi, err)
	}
	if err := os.WriteFile(path, []byte("gw-1 "+testHash+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	if _, _, err := readCredentials(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group/world-writable file: %v", err)
	}
}

func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte("gw-1 " + testHash + "\n# c\n"))
	f.Add([]byte("a b c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseCredentials("f", data)
		if err != nil {
			return
		}
		again, err := parseCredentials("f", c.format())
		if err != nil || len(again) != len(c) {
			t.Fatalf("accepted credentials do not round-trip: %v", err)
		}
		for id, h := range c {
			if again[id] != h {
				t.Fatalf("%s changed", id)
			}
		}
	})
}

// credentialsCLI runs `trit-fleet credentials` with a config whose
// embedded_credentials is in dir.
func credentialsCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	conf := filepath.Join(dir, "fleet.toml")
	if _, err := os.Stat(conf); err != nil {
		text := fmt.Sprintf("[mqtt]\nbroker = \"embedded\"\nembedded_credentials = %q\n[api]\ntoken_file = \"x\"\n[keys]\ncommand_key = \"x\"\nrelease_keys = [\"x\"]\n",
			filepath.Join(dir, "creds"))
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := Main(append(append([]string{"credentials"}, args...), "--config", conf), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCredentialsCommand(t *testing.T) {
	dir := t.TempDir()
	mosq := filepath.Join(dir, "mosquitto.toml")
	if err := os.WriteFile(mosq, []byte(minimalConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var out0, err0 bytes.Buffer
	if code := Main([]string{"credentials", "list", "--config", mosq}, &out0, &err0); code != 2 || !strings.Contains(err0.String(), `mqtt.broker is "ssl://broker.example:8883"`) {
		t.Errorf("credentials with a Mosquitto config: exit %d %q", code, err0.String())
	}
	pw := filepath.Join(dir, "gw-1.password")
	if code, out, errs := credentialsCLI(t, dir, "add", "gw-1", "--password-file", pw); code != 0 {
		t.Fatalf("add: %d %s %s", code, out, errs)
	}
	secret, err := os.ReadFile(pw)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(pw); fi.Mode().Perm() != 0o600 {
		t.Errorf("password file mode %v", fi.Mode().Perm())
	}
	store, err := openCredentials(filepath.Join(dir, "creds"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !store.check("gw-1", bytes.TrimSpace(secret)) {
		t.Fatal("the written secret does not match the stored hash")
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "creds"))
	if bytes.Contains(raw, bytes.TrimSpace(secret)) {
		t.Fatal("the credentials file contains the secret itself")
	}
	if fi, _ := os.Stat(filepath.Join(dir, "creds")); fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v", fi.Mode().Perm())
	}

	// Printed when no file is given, once.
	code, out, _ := credentialsCLI(t, dir, "add", "gw-2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || len(lines[1]) != 64 || !store.check("gw-2", []byte(lines[1])) {
		t.Fatalf("add without --password-file: %d %q", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"add", "gw-1"}, 1, "already has a secret"},
		{[]string{"add", "trit-fleet"}, 2, "the fleet service's own identity"},
		{[]string{"add", "gw/3"}, 2, "device ID"},
		{[]string{"add", "gw-3", "--password-file", pw}, 1, "file exists; a secret file is never overwritten"},
		{[]string{"remove", "gw-9"}, 1, "no credentials"},
	} {
		code, _, errs := credentialsCLI(t, dir, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want %d %q", c.args, code, errs, c.code, c.want)
		}
	}
	code, out, _ = credentialsCLI(t, dir, "list")
	if code != 0 || out != "gw-1\ngw-2\n" {
		t.Errorf("list: %d %q", code, out)
	}
	if code, _, errs := credentialsCLI(t, dir, "add", "gw-1", "--replace"); code != 0 {
		t.Fatalf("add --replace: %s", errs)
	}
	if store.check("gw-1", bytes.TrimSpace(secret)) {
		t.Error("the replaced secret still works")
	}
	if code, _, errs := credentialsCLI(t, dir, "remove", "gw-2"); code != 0 {
		t.Fatalf("remove: %s", errs)
	}
	if store.check("gw-2", []byte(lines[1])) {
		t.Error("a removed device's secret still works")
	}
}

// TestCredentialsVocabulary: a new secret's file is -o/--out, as every
// file a command writes (docs/CLI.md); the former --password-file still
// works, hidden; list prints JSON with --json.
func TestCredentialsVocabulary(t *testing.T) {
	dir := t.TempDir()
	for i, flag := range []string{"-o", "--out", "--password-file"} {
		id := fmt.Sprintf("gw-%d", i+1)
		pw := filepath.Join(dir, id+".password")
		if code, out, errs := credentialsCLI(t, dir, "add", id, flag, pw); code != 0 {
			t.Fatalf("add %s: %d %s %s", flag, code, out, errs)
		}
		if b, err := os.ReadFile(pw); err != nil || len(b) < 32 {
			t.Errorf("add %s: secret file %q, %v", flag, b, err)
		}
	}
	code, out, errs := credentialsCLI(t, dir, "list", "--json")
	var ids []string
	if err := json.Unmarshal([]byte(out), &ids); code != 0 || err != nil || strings.Join(ids, ",") != "gw-1,gw-2,gw-3" {
		t.Errorf("list --json: %d %q %s", code, out, errs)
	}
	var help bytes.Buffer
	Main([]string{"credentials", "add", "--help"}, &help, &help)
	if strings.Contains(help.String(), "password-file") {
		t.Errorf("add --help still shows --password-file:\n%s", help.String())
	}
}
