package tritctl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
)

func TestKeysGen(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "fleet")
	out, stderr, code := runCtl(t, "keys", "gen", "--out", prefix, "--json")
	if code != 0 {
		t.Fatalf("keys gen exited %d: %s", code, stderr)
	}
	var info keyInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("keys gen --json printed %q: %v", out, err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(info.KeyID) {
		t.Fatalf("key ID %q is not 8 bytes of hex", info.KeyID)
	}
	fi, err := os.Stat(prefix + ".key")
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("private key mode %04o, want 0600", perm)
	}
	priv, _ := os.ReadFile(prefix + ".key")
	pub, _ := os.ReadFile(prefix + ".pub")

	// Both key files name the same key ID.
	for _, f := range []string{prefix + ".pub", prefix + ".key"} {
		out, stderr, code := runCtl(t, "keys", "id", f)
		if code != 0 || strings.TrimSpace(out) != info.KeyID {
			t.Errorf("keys id %s: exit %d, %q %s; want %s", f, code, out, stderr, info.KeyID)
		}
	}

	// Never overwrites, and leaves both files as they were.
	_, stderr, code = runCtl(t, "keys", "gen", "--out", prefix)
	if code != 1 || !strings.Contains(stderr, "exists") {
		t.Fatalf("second keys gen: exit %d, %q; want 1 and 'exists'", code, stderr)
	}
	priv2, _ := os.ReadFile(prefix + ".key")
	pub2, _ := os.ReadFile(prefix + ".pub")
	if !bytes.Equal(priv, priv2) || !bytes.Equal(pub, pub2) {
		t.Fatal("keys gen changed existing key files")
	}
	// Only the public file there: still refused, nothing written.
	os.Remove(prefix + ".key")
	if _, _, code := runCtl(t, "keys", "gen", "--out", prefix); code != 1 {
		t.Fatalf("keys gen over an existing .pub: exit %d, want 1", code)
	}
	if _, err := os.Stat(prefix + ".key"); !os.IsNotExist(err) {
		t.Fatalf("keys gen wrote a private key next to an existing public key: %v", err)
	}

	if _, _, code := runCtl(t, "keys", "gen"); code != 2 {
		t.Errorf("keys gen without --out: exit %d, want 2", code)
	}
	if _, _, code := runCtl(t, "keys", "id", filepath.Join(dir, "missing.pub")); code != 1 {
		t.Errorf("keys id of a missing file: exit %d, want 1", code)
	}
}

// trainBundle trains a small model with tritctl and returns the unsigned
// bundle's path and the test file's path.
func trainBundle(t *testing.T, dir string) (model, test string) {
	t.Helper()
	train, test, model := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv"), filepath.Join(dir, "circles.trit")
	writeCSV(t, train, 600, 1)
	writeCSV(t, test, 300, 2)
	out, stderr, code := runCtl(t, "train", train, "-o", model, "--p", "256", "--sigma", "0.5", "--c", "1",
		"--model-id", "circles", "--release", "2", "--hardware", "pi-zero/ads1115", "--json")
	if code != 0 {
		t.Fatalf("train exited %d: %s", code, stderr)
	}
	var s trainSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(model)
	if err != nil {
		t.Fatal(err)
	}
	if int64(s.ModelBytes) != fi.Size() || s.ModelID != "circles" || s.Release != 2 {
		t.Fatalf("train summary %+v for a %d-byte file", s, fi.Size())
	}
	return model, test
}

func inspectJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	out, stderr, code := runCtl(t, "bundle", "inspect", path, "--json")
	if code != 0 {
		t.Fatalf("inspect %s exited %d: %s", path, code, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTrainSignVerifyInspect(t *testing.T) {
	dir := t.TempDir()
	model, test := trainBundle(t, dir)

	// The unsigned bundle as train wrote it.
	in := inspectJSON(t, model)
	if in["signed"] != false || in["model_id"] != "circles" || in["release"].(float64) != 2 ||
		in["hardware"] != "pi-zero/ads1115" || in["min_agent_version"] != bundle.DefaultMinAgentVersion ||
		in["selftest_ok"] != true || in["p"].(float64) != 256 || in["scaler_form"] != "float16" {
		t.Fatalf("inspect of the trained bundle: %v", in)
	}
	total := 0
	for _, s := range in["sections"].([]any) {
		total += int(s.(map[string]any)["size"].(float64))
	}
	if total != int(in["size"].(float64)) {
		t.Fatalf("sections add up to %d bytes of %v", total, in["size"])
	}

	key := filepath.Join(dir, "k")
	other := filepath.Join(dir, "other")
	for _, p := range []string{key, other} {
		if _, stderr, code := runCtl(t, "keys", "gen", "--out", p); code != 0 {
			t.Fatalf("keys gen: %s", stderr)
		}
	}
	keyID, _, _ := runCtl(t, "keys", "id", key+".pub")
	keyID = strings.TrimSpace(keyID)

	signed := filepath.Join(dir, "circles.signed.trit")
	out, stderr, code := runCtl(t, "bundle", "sign", "--key", key+".key", model, "-o", signed,
		"--release", "7", "--expires", "8760h", "--json")
	if code != 0 {
		t.Fatalf("sign exited %d: %s", code, stderr)
	}
	var sr bundleResult
	if err := json.Unmarshal([]byte(out), &sr); err != nil {
		t.Fatal(err)
	}
	if sr.Release != 7 || sr.ModelID != "circles" || sr.KeyID != keyID || sr.ExpiresAt == 0 || !sr.Verified {
		t.Fatalf("sign result %+v (key %s)", sr, keyID)
	}
	orig, _ := os.ReadFile(model)
	if fi, _ := os.Stat(signed); fi.Size() != int64(len(orig)) {
		t.Errorf("signing changed the size: %d → %d bytes", len(orig), fi.Size())
	}

	// One flag name for the key a command uses: verify takes --key as sign
	// does; the former --trusted still works, also mixed with --key.
	for _, flags := range [][]string{{"--key", key + ".pub"}, {"--key", other + ".pub", "--trusted", key + ".pub"}} {
		args := append([]string{"bundle", "verify", signed}, flags...)
		if _, stderr, code := runCtl(t, args...); code != 0 {
			t.Fatalf("verify %v exited %d: %s", flags, code, stderr)
		}
	}
	if _, stderr, code := runCtl(t, "bundle", "verify", signed); code != 2 || !strings.Contains(stderr, "--key") {
		t.Errorf("verify without a key: exit %d %q, want 2 naming --key", code, stderr)
	}

	// verify: the signing key, or it among others (rotation), is accepted.
	for _, trusted := range [][]string{{key + ".pub"}, {other + ".pub", key + ".pub"}} {
		args := []string{"bundle", "verify", signed, "--json"}
		for _, k := range trusted {
			args = append(args, "--trusted", k)
		}
		out, stderr, code := runCtl(t, args...)
		if code != 0 {
			t.Fatalf("verify with %v exited %d: %s", trusted, code, stderr)
		}
		var vr bundleResult
		json.Unmarshal([]byte(out), &vr)
		if !vr.Verified || vr.Release != 7 || vr.KeyID != keyID {
			t.Fatalf("verify result %+v", vr)
		}
	}

	signedBytes, _ := os.ReadFile(signed)
	tampered := filepath.Join(dir, "tampered.trit")
	bad := bytes.Clone(signedBytes)
	bad[10] ^= 1 // inside the header
	os.WriteFile(tampered, bad, 0o644)
	failures := []struct {
		args []string
		want string
	}{
		{[]string{"bundle", "verify", "--trusted", other + ".pub", signed}, "not trusted"},
		{[]string{"bundle", "verify", "--trusted", key + ".pub", tampered}, "bad signature"},
		{[]string{"bundle", "verify", "--trusted", key + ".pub", model}, "not signed"},
		{[]string{"bundle", "verify", "--trusted", key + ".pub", "--max-size", "100", signed}, "larger than the size cap"},
		{[]string{"bundle", "verify", "--trusted", key + ".pub", "--agent-version", "0.0.9", signed}, "below the bundle's minimum"},
		{[]string{"bundle", "verify", "--trusted", key + ".key", signed}, "bad key file"},
		{[]string{"bundle", "sign", "--key", key + ".key", signed, "-o", filepath.Join(dir, "again.trit")}, "already signed"},
		{[]string{"bundle", "sign", "--key", key + ".key", model, "-o", signed}, "exists"},
		{[]string{"bundle", "sign", "--key", key + ".key", model, "-o", filepath.Join(dir, "big.trit"), "--max-size", "100"}, "above --max-size"},
		{[]string{"bundle", "sign", "--key", key + ".key", model, "-o", filepath.Join(dir, "x.trit"), "--min-agent", "1.2"}, "minimum agent version"},
		{[]string{"bundle", "inspect", test}, "not a trit bundle"},
	}
	for _, f := range failures {
		_, stderr, code := runCtl(t, f.args...)
		if code != 1 || !strings.Contains(stderr, f.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", f.args[1:], code, stderr, f.want)
		}
	}
	if after, _ := os.ReadFile(signed); !bytes.Equal(after, signedBytes) {
		t.Fatal("a refused sign changed the existing output file")
	}
	for _, p := range []string{"again.trit", "big.trit", "x.trit"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("a failed sign left %s behind", p)
		}
	}
	for _, args := range [][]string{
		{"bundle", "verify", signed},                                                  // no --trusted
		{"bundle", "sign", model, "-o", filepath.Join(dir, "y.trit")},                 // no --key
		{"bundle", "sign", "--key", key + ".key", model},                              // no --out
		{"bundle", "sign", "--key", key + ".key", model, "-o", "z", "--release", "0"}, // release 0
		{"bundle", "sign", "--key", key + ".key", model, "-o", "z", "--expires", "soon"},
		{"bundle", "inspect"},
		{"bundle"},
	} {
		if _, _, code := runCtl(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}

	// A private key others can read is refused.
	os.Chmod(key+".key", 0o644)
	if _, stderr, code := runCtl(t, "bundle", "sign", "--key", key+".key", model, "-o", filepath.Join(dir, "w.trit")); code != 1 || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("sign with a 0644 key: exit %d, %q", code, stderr)
	}

	// eval reads signed and unsigned bundles alike.
	var accs []float64
	for _, m := range []string{model, signed} {
		out, stderr, code := runCtl(t, "eval", m, test, "--json")
		if code != 0 {
			t.Fatalf("eval %s: %s", m, stderr)
		}
		var e evalSummary
		json.Unmarshal([]byte(out), &e)
		accs = append(accs, e.Accuracy)
		if e.Signed != (m == signed) {
			t.Errorf("eval %s: signed = %v", m, e.Signed)
		}
	}
	if accs[0] != accs[1] || accs[0] < 95 {
		t.Errorf("eval accuracies %v", accs)
	}

	// Text inspect shows the fields and the breakdown.
	out, _, code = runCtl(t, "bundle", "inspect", signed)
	for _, want := range []string{"model ID", `"circles"`, "release", "7", keyID, "bytes by section", "weights", "signature", "self-test", "pass", "weight vectors"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, out)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	now := mustTime(t, "2026-11-21T00:00:00Z")
	for in, want := range map[string]string{
		"never":                "0001-01-01T00:00:00Z",
		"24h":                  "2026-11-22T00:00:00Z",
		"2027-01-01T00:00:00Z": "2027-01-01T00:00:00Z",
	} {
		got, err := parseExpiry(in, now)
		if err != nil || !got.Equal(mustTime(t, want)) {
			t.Errorf("parseExpiry(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1h", "0s", "tomorrow", "2027-01-01", "2026-11-21T00:00:00Z", "2020-01-01T00:00:00Z",
		"1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "0001-01-01T01:00:00+01:00"} {
		if _, err := parseExpiry(in, now); err == nil {
			t.Errorf("parseExpiry(%q) accepted", in)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInspectFormat2 renders the format-2 golden bundles of
// inference/bundle: every new section shows, with its bytes.
func TestInspectFormat2(t *testing.T) {
	golden := filepath.Join("..", "inference", "bundle", "testdata", "golden")
	for _, c := range []struct {
		file string
		want []string
	}{
		{"sensor-v2.trit", []string{"format version 2", "matched by name: temperature humidity", "clipped to [-1, 1]",
			"74 on 5 features (float16, weight 1)", "projection    ", "none (p = 0: no random features, so no σ; the embedding is threshold bits)", "72 of 74",
			"train.accuracy  0.9731", "base3", "1.67", "thresholds     155    155", "fingerprint     405     49", "info     454    108", "training firing rates of 24 kept columns"}},
		{"image-v2.trit", []string{"no feature names: channels are matched by position", "256 inputs → 32, ternary: 31 base3, 1 sign rows",
			"d 32, p 2048", "2327 of 2328", "sign    291         1.00", "info          none", "projection"}},
	} {
		path := filepath.Join(golden, c.file)
		out, stderr, code := runCtl(t, "bundle", "inspect", path)
		if code != 0 {
			t.Fatalf("inspect %s: %s", c.file, stderr)
		}
		for _, want := range c.want {
			if !strings.Contains(out, want) {
				t.Errorf("%s: inspect text lacks %q:\n%s", c.file, want, out)
			}
		}
		in := inspectJSON(t, path)
		total := 0
		var names []string
		for _, s := range in["sections"].([]any) {
			total += int(s.(map[string]any)["size"].(float64))
			names = append(names, s.(map[string]any)["name"].(string))
		}
		if total != int(in["size"].(float64)) || !strings.Contains(strings.Join(names, " "), "scaler thresholds projection transform kept weights alpha selftest fingerprint info signature") {
			t.Errorf("%s: sections %v add up to %d of %v", c.file, names, total, in["size"])
		}
		for i, th := range in["thresholds"].([]any) {
			if _, ok := th.([]any); !ok {
				t.Errorf("%s: thresholds of feature %d are %v, want a list", c.file, i, th)
			}
		}
		v0 := in["vectors"].([]any)[0].(map[string]any)
		if in["format_version"].(float64) != 2 || in["selftest_ok"] != true || v0["form"] == nil || v0["bits_per_weight"] == nil || in["feature_match"] == nil {
			t.Errorf("%s: inspect --json: %v", c.file, in)
		}
	}
}

// TestInspectFormat3 renders the format-3 golden of inference/bundle: the
// trees row, the trees section's bytes and the JSON fields.
func TestInspectFormat3(t *testing.T) {
	path := filepath.Join("..", "inference", "bundle", "testdata", "golden", "machine-v3.trit")
	out, stderr, code := runCtl(t, "bundle", "inspect", path)
	if code != 0 {
		t.Fatalf("inspect: %s", stderr)
	}
	for _, want := range []string{"format version 3", "40 of depth 4, 640 leaf columns (weight 2), tests per feature: 11 17 16 8",
		"905 of 913", "trees     274    482"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, out)
		}
	}
	in := inspectJSON(t, path)
	var names []string
	for _, s := range in["sections"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	if in["format_version"].(float64) != 3 || in["tree_count"].(float64) != 40 || in["tree_depth"].(float64) != 4 ||
		in["tree_columns"].(float64) != 640 || in["columns"].(float64) != 913 || len(in["tree_features"].([]any)) != 12 ||
		!strings.Contains(strings.Join(names, " "), "scaler thresholds trees projection transform") {
		t.Errorf("inspect --json: %v", in)
	}
}

// TestInspectFormat4 renders the format-4 golden of inference/bundle (tree
// leaf planes): the trees row with the planes and their weights ρ·2^b, the
// trees section's bytes and the JSON fields.
func TestInspectFormat4(t *testing.T) {
	path := filepath.Join("..", "inference", "bundle", "testdata", "golden", "machine-v4.trit")
	out, stderr, code := runCtl(t, "bundle", "inspect", path)
	if code != 0 {
		t.Fatalf("inspect: %s", stderr)
	}
	for _, want := range []string{"format version 4", "min agent         0.4.0",
		"24 of depth 3, 2 planes: 384 leaf columns (weights 3, 6), tests per feature: 6 5 10 5",
		"498 of 512", "trees     219    220", "self-test         class 1, pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, out)
		}
	}
	in := inspectJSON(t, path)
	if in["format_version"].(float64) != 4 || in["tree_count"].(float64) != 24 || in["tree_depth"].(float64) != 3 ||
		in["tree_planes"].(float64) != 2 || in["tree_columns"].(float64) != 384 || in["columns"].(float64) != 512 ||
		in["threshold_weight"].(float64) != 3 {
		t.Errorf("inspect --json: %v", in)
	}
	// The format-3 golden reports one plane.
	if v3 := inspectJSON(t, filepath.Join("..", "inference", "bundle", "testdata", "golden", "machine-v3.trit")); v3["tree_planes"].(float64) != 1 {
		t.Errorf("machine-v3: tree_planes %v, want 1", v3["tree_planes"])
	}
}
