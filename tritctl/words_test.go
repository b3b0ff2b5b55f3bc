package tritctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneVocabulary: the command-line vocabulary of docs/CLI.md as a user
// meets it — the directory certs ca and demo write is -o (their former
// --dir still works), a collection answers to its singular and plural,
// bundle and bundles name each other, rollout create prints JSON,
// samples pull takes --device more than once, remote-train takes train's
// --format names, and --min-agent states no default a bundle would not
// get.
func TestOneVocabulary(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", "-o", filepath.Join(dir, "pki")},
		{"certs", "ca", "--dir", filepath.Join(dir, "pki-old")},
	} {
		if _, stderr, code := runCtl(t, args...); code != 0 {
			t.Fatalf("%q: exit %d %s", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(args[3], "ca.crt")); err != nil {
			t.Errorf("%q wrote no ca.crt: %v", args, err)
		}
	}
	if out, _, _ := runCtl(t, "certs", "ca", "--help"); strings.Contains(out, "--dir") {
		t.Errorf("certs ca --help shows --dir:\n%s", out)
	}

	_, stderr, code := runCtl(t, "bundle", "list")
	if code != 2 || !strings.Contains(stderr, "did you mean 'tritctl bundles list'?") {
		t.Errorf("bundle list: exit %d %q", code, stderr)
	}
	_, stderr, code = runCtl(t, "bundles", "sign", "x.trit")
	if code != 2 || !strings.Contains(stderr, "did you mean 'tritctl bundle sign'?") {
		t.Errorf("bundles sign: exit %d %q", code, stderr)
	}

	f, _ := newFakeFleet(t, map[string]string{
		"POST /v1/rollouts":            `{"id":"r1","model_id":"vib","release":2,"state":"running","order":["gw-1"]}`,
		"GET /v1/rollouts":             `[]`,
		"GET /v1/devices/gw-1":         `{"id":"gw-1"}`,
		"GET /v1/devices/gw-1/samples": `{"features":["a"],"samples":[{"time":1750000000000,"x":[1],"class":"n","margin":0.01,"reason":"low-margin"}]}`,
		"GET /v1/devices/gw-2/samples": `{"features":["a"],"samples":[{"time":1750000000001,"x":[2],"class":"n","margin":0.02,"reason":"low-margin"}]}`,
		"POST /v1/train":               `{"id":"train-1","state":"succeeded","bytes":5}`,
		"GET /v1/train/train-1/bundle": "TRIT!",
	})
	for _, args := range [][]string{{"rollouts", "list"}, {"device", "show", "gw-1"}} {
		if _, stderr, code := runCtl(t, args...); code != 0 {
			t.Errorf("%q: exit %d %s", args, code, stderr)
		}
	}
	out, stderr, code := runCtl(t, "rollout", "create", "--id", "r1", "--bundle", "ab12", "--device", "gw-1", "--json")
	var r struct{ ID, State string }
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.ID != "r1" || r.State != "running" {
		t.Errorf("rollout create --json: exit %d %q %s", code, out, stderr)
	}
	csv := filepath.Join(dir, "both.csv")
	out, stderr, code = runCtl(t, "samples", "pull", "--device", "gw-1", "--device", "gw-2", "-o", csv)
	if raw, _ := os.ReadFile(csv); code != 0 || !strings.Contains(out, "2 samples of 2 devices") || !strings.Contains(string(raw), ",gw-2,") {
		t.Errorf("samples pull --device twice: exit %d %q %s\n%s", code, out, stderr, raw)
	}
	for format, sent := range map[string]string{"csv": `"format":"dense"`, "arff": `"format":"arff"`, "dense": `"format":"dense"`} {
		args := []string{"remote-train", "d", "--model-id", "m", "--release", "1", "-o", filepath.Join(dir, format+".trit"), "--interval", "1ms", "--format", format}
		if _, stderr, code := runCtl(t, args...); code != 0 || !strings.Contains(f.bodies["POST /v1/train"], sent) {
			t.Errorf("remote-train --format %s: exit %d %s, sent %s", format, code, stderr, f.bodies["POST /v1/train"])
		}
	}
	if _, _, code := runCtl(t, "remote-train", "d", "--model-id", "m", "--release", "1", "-o", filepath.Join(dir, "x.trit"), "--format", "xls"); code != 2 {
		t.Errorf("remote-train --format xls: exit %d, want 2", code)
	}
	for _, cmd := range [][]string{{"train"}, {"remote-train"}} {
		help, _, _ := runCtl(t, append(cmd, "--help")...)
		if strings.Contains(help, `(default "0.2.0")`) || !strings.Contains(help, "0.5.0 for a calibrated model") {
			t.Errorf("%s --help: --min-agent says a default bundles do not get", cmd[0])
		}
		if !strings.Contains(help, "auto, csv (delimited text, also called dense), arff, libsvm or idx") {
			t.Errorf("%s --help: --format does not list train's formats", cmd[0])
		}
	}
}
