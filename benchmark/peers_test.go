package benchmark

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// readNPY parses a .npy file written by Export: its dtype, shape and raw
// little-endian data.
func readNPY(t *testing.T, path string) (descr string, shape []int, raw []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) {
		t.Fatalf("%s: no .npy magic", path)
	}
	n := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+n)%64 != 0 {
		t.Errorf("%s: data starts at %d, not a multiple of 64", path, 10+n)
	}
	h := string(b[10 : 10+n])
	m := regexp.MustCompile(`^\{'descr': '([<>a-z0-9]+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`).FindStringSubmatch(h)
	if m == nil {
		t.Fatalf("%s: header %q", path, h)
	}
	for _, s := range strings.Split(m[2], ",") {
		if s = strings.TrimSpace(s); s != "" {
			v, _ := strconv.Atoi(s)
			shape = append(shape, v)
		}
	}
	return m[1], shape, b[10+n:]
}

func TestExport(t *testing.T) {
	train := training.TwoCircles(120, 0.5, 0.08, 1)
	test := training.TwoCircles(30, 0.5, 0.08, 2)
	sc := data.FitScaler(train)
	folds := []data.Fold{{Train: []int{0, 1, 2, 5}, Valid: []int{7, 9}}, {Train: []int{3}, Valid: []int{119}}}
	dir := t.TempDir()
	job := &PeersJob{Dataset: "circles", Classes: train.Classes, Budget: 4096, Methods: []string{"xgboost"}, Validation: "x"}
	if err := Export(dir, job, &sc, train, test, folds); err != nil {
		t.Fatal(err)
	}
	var meta PeersJob
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Budget != 4096 || meta.Dataset != "circles" || len(meta.Folds) != 2 {
		t.Fatalf("meta %+v", meta)
	}
	for _, s := range []struct {
		ds   *data.Dataset
		x, y string
	}{{train, meta.XTrain, meta.YTrain}, {test, meta.XTest, meta.YTest}} {
		descr, shape, raw := readNPY(t, filepath.Join(dir, s.x))
		if descr != "<f4" || len(shape) != 2 || shape[0] != s.ds.N || shape[1] != s.ds.D || len(raw) != 4*s.ds.N*s.ds.D {
			t.Fatalf("%s: %s %v, %d bytes", s.x, descr, shape, len(raw))
		}
		want := make([]float32, s.ds.D)
		for i := range s.ds.N {
			if err := sc.Apply(want, s.ds.Row(i)); err != nil {
				t.Fatal(err)
			}
			for j, w := range want {
				got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*s.ds.D+j):]))
				if got != w {
					t.Fatalf("%s row %d col %d: %g, the scaler gives %g", s.x, i, j, got, w)
				}
			}
		}
		descr, shape, raw = readNPY(t, filepath.Join(dir, s.y))
		if descr != "<i4" || len(shape) != 1 || shape[0] != s.ds.N {
			t.Fatalf("%s: %s %v", s.y, descr, shape)
		}
		for i, y := range s.ds.Y {
			if got := int32(binary.LittleEndian.Uint32(raw[4*i:])); got != y {
				t.Fatalf("%s row %d: class %d, want %d", s.y, i, got, y)
			}
		}
	}
	for k, f := range meta.Folds {
		for _, part := range []struct {
			file string
			want []int
		}{{f.Train, folds[k].Train}, {f.Valid, folds[k].Valid}} {
			_, shape, raw := readNPY(t, filepath.Join(dir, part.file))
			if len(shape) != 1 || shape[0] != len(part.want) {
				t.Fatalf("%s: shape %v", part.file, shape)
			}
			for i, w := range part.want {
				if got := int(int32(binary.LittleEndian.Uint32(raw[4*i:]))); got != w {
					t.Fatalf("%s[%d] = %d, want %d", part.file, i, got, w)
				}
			}
		}
	}
	bad := []data.Fold{{Train: []int{0}, Valid: []int{train.N}}}
	if err := Export(t.TempDir(), job, &sc, train, test, bad); err == nil {
		t.Fatal("a fold row past the training rows was exported")
	}
}

// The folds exported are trit's own validation rows: the latest rows of a
// time-ordered set, a stratified random part otherwise.
func TestValidationFoldsExported(t *testing.T) {
	ds := training.TwoCircles(200, 0.5, 0.08, 3)
	folds, how, err := training.ValidationFolds(ds, nil)
	if err != nil || len(folds) != 1 || len(folds[0].Valid) != 40 || !strings.Contains(how, "random") {
		t.Fatalf("unordered: %d folds, %q, %v", len(folds), how, err)
	}
	ds.Ordered = true
	folds, how, err = training.ValidationFolds(ds, nil)
	if err != nil || !strings.Contains(how, "time order") {
		t.Fatalf("ordered: %q, %v", how, err)
	}
	for _, f := range folds {
		last := f.Train[len(f.Train)-1]
		if f.Valid[0] <= last {
			t.Fatalf("validation row %d is not later than training row %d", f.Valid[0], last)
		}
	}
}

func TestBudgetArithmetic(t *testing.T) {
	for _, c := range []struct{ d, classes, budget int }{
		{256, 10, 30720}, {784, 10, 30720}, {16, 4, 30720}, {24, 4, 2048}, {2, 2, 512}, {784, 10, 2048}, {123, 2, 1000},
	} {
		h := MLPWidth(c.d, c.classes, c.budget, 1<<20)
		if h > 0 && MLPBytes(c.d, c.classes, h) > c.budget {
			t.Errorf("%+v: width %d takes %d bytes", c, h, MLPBytes(c.d, c.classes, h))
		}
		if MLPBytes(c.d, c.classes, h+1) <= c.budget {
			t.Errorf("%+v: width %d is not the widest (%d bytes at %d)", c, h, MLPBytes(c.d, c.classes, h+1), h+1)
		}
		if capped := MLPWidth(c.d, c.classes, c.budget, 3); capped > 3 {
			t.Errorf("%+v: cap 3 gives %d", c, capped)
		}
	}
	// usps: 256 inputs, 10 classes, 30 KiB: h·266 + 8·(h+10) + 1024 bytes.
	if h := MLPWidth(256, 10, 30720, 1024); h != (30720-80-1024)/274 || MLPBytes(256, 10, 1) != 266+88+1024 {
		t.Errorf("usps width %d", h)
	}
	if LinearBytes(16, 2) != 24+64 || LinearBytes(16, 4) != 4*24+64 {
		t.Errorf("linear bytes %d, %d", LinearBytes(16, 2), LinearBytes(16, 4))
	}
	if TreeBytes(100) != 800 || RBFBytes(2, 2, 10) != 80+40+4+4+8 {
		t.Errorf("tree %d, rbf %d", TreeBytes(100), RBFBytes(2, 2, 10))
	}
}

func TestPeersTable(t *testing.T) {
	rs := []*PeersReport{{
		Dataset: "occupancy", TrainRows: 8000, TestRows: 2000, Features: 16, Classes: []string{"0", "1", "2", "3"},
		Budget: 30720, Validation: "latest 20% of rows (time order)",
		Results: []PeerResult{
			{Method: "trit", Budget: 30720, Accuracy: 95.5, Balanced: 90.25, Bytes: 7000, TrainSeconds: 12.3, Validation: ptr(98.5),
				PerClass: []training.ClassScore{{Class: "0", Recall: 99.6}, {Class: "1", Recall: 80.9}},
				Coverage: []training.CoveragePoint{{Coverage: 100, Accuracy: 95.5}, {Coverage: 50, Accuracy: 99.9}}, ECE: ptr(2.25)},
			{Method: "mlp-int8", Budget: 30720, Accuracy: 97.126, Balanced: 93, Bytes: 30000, TrainSeconds: 4, Notes: []string{"stopped at 200 epochs"}, Validation: ptr(91),
				Coverage: []training.CoveragePoint{{Coverage: 100, Accuracy: 97.126}, {Coverage: 50, Accuracy: 99.5}}, ECE: ptr(1.5)},
			{Method: "rbf-svm", Accuracy: 98, Balanced: 96, Bytes: 500000, TrainSeconds: 30},
			{Method: "linear-svm", Budget: 512, Accuracy: 80, Balanced: 70, Bytes: 600},
			{Method: "xgboost", Skipped: "no module"},
		},
		Curve: []PeerResult{{Method: "trit", Budget: 512, Bytes: 500, Accuracy: 90}, {Method: "mlp-int8", Budget: 512, Skipped: "too small"}},
	}}
	var b bytes.Buffer
	writePeersTable(&b, rs)
	out := b.String()
	for _, want := range []string{
		"| occupancy | trit | 95.50 | 90.25 | – | – | 98.50 | +8.25 | 7000 | 12.3 | 100/81 |  |",
		"| occupancy | mlp-int8 | 97.13 | 93.00 | +1.63 | +2.75 | 91.00 | -2.00 | 30000 | 4.0 |  | stopped at 200 epochs |",
		"| occupancy | rbf-svm | 98.00 | 96.00 | +2.50 | +5.75 | – | – | 500000 (no budget) | 30.0 |",
		"| occupancy | linear-svm | 80.00 | 70.00 | -15.50 | -20.25 | – | – | 600 (over budget) |",
		"| occupancy | xgboost | – | – | – | – | – | – | – | – | – | skipped: no module |",
		"4 classes (0, 1, 2, 3; recall per class in this order",
		"latest 20% of rows (time order)",
		"| occupancy | trit | 512 | 500 | 90.00 | 0.00 |",
		"| occupancy | mlp-int8 | 512 | – | – | – |",
		"| dataset | method (confidence) | ECE % | 100% | 50% |",
		"| occupancy | trit (calibrated) | 2.25 | 95.50 | 99.90 |",
		"| occupancy | mlp-int8 (softmax) | 1.50 | 97.13 | 99.50 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestPeersFigure(t *testing.T) {
	dir := t.TempDir()
	rs := []*PeersReport{{Dataset: "usps", Curve: []PeerResult{
		{Method: "trit", Bytes: 500, Accuracy: 80}, {Method: "trit", Bytes: 30000, Accuracy: 94},
		{Method: "mlp-int8", Bytes: 2000, Accuracy: 85}, {Method: "mlp-int8", Bytes: 30500, Accuracy: 95},
		{Method: "xgboost", Bytes: 1000, Accuracy: 70}, {Method: "xgboost", Budget: 30720, Bytes: 29000, Accuracy: 90},
		{Method: "mlp-int8", Skipped: "too small"},
	}}}
	b, _ := json.Marshal(rs)
	from := filepath.Join(dir, "peers.json")
	if err := os.WriteFile(from, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runBench(t, "figures", "--peers", from, "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkPNG(t, filepath.Join(dir, "peers_curve_usps.png"))
	if _, err := os.Stat(filepath.Join(dir, "coverage_usps.png")); err == nil {
		t.Error("a coverage figure without coverage curves")
	}
	// With coverage curves (and no bytes curve) the coverage figure alone.
	cov := []*PeersReport{{Dataset: "mnist", Results: []PeerResult{
		{Method: "trit", Accuracy: 97, ECE: ptr(1.5), Coverage: []training.CoveragePoint{{Coverage: 100, Accuracy: 97}, {Coverage: 90, Accuracy: 99}, {Coverage: 50, Accuracy: 99.9}}},
		{Method: "mlp-int8", Accuracy: 96, ECE: ptr(0.8), Coverage: []training.CoveragePoint{{Coverage: 100, Accuracy: 96}, {Coverage: 90, Accuracy: 98.5}, {Coverage: 50, Accuracy: 99.8}}},
		{Method: "xgboost", Accuracy: 95},
	}}}
	b, _ = json.Marshal(cov)
	covFrom := filepath.Join(dir, "coverage.json")
	if err := os.WriteFile(covFrom, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runBench(t, "figures", "--peers", covFrom, "--out", dir); code != 0 {
		t.Fatalf("coverage figure: exit %d: %s", code, errOut)
	}
	checkPNG(t, filepath.Join(dir, "coverage_mnist.png"))
	if _, err := os.Stat(filepath.Join(dir, "peers_curve_mnist.png")); err == nil {
		t.Error("a bytes curve drawn without one")
	}
	// The figure's input has no results at a budget: table prints the curve.
	rs[0].Results = []PeerResult{{Method: "trit", Accuracy: 94}}
	b, _ = json.Marshal(rs)
	if err := os.WriteFile(from, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runBench(t, "table", from); code != 0 || !strings.Contains(out, "| usps | xgboost | 30720 | 29000 | 90.00 |") {
		t.Errorf("table of a peers output: exit %d %s\n%s", code, errOut, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "two_circles_binary.png")); err == nil {
		t.Error("--peers alone drew the other figures too")
	}
	if _, _, code := runBench(t, "figures", "--only", "peers", "--out", dir); code != 2 {
		t.Errorf("peers figure without --peers: exit %d, want 2", code)
	}
}

func TestPeersUsage(t *testing.T) {
	for _, args := range [][]string{
		{"peers"},
		{"peers", "--standard", "usps", "--budget", "100"},
		{"peers", "--standard", "usps", "--curve", "512,x"},
		{"peers", "--standard", "usps", "--methods", "knn"},
		{"peers", "--standard", "usps", "--rbf-rows", "-1"},
	} {
		if _, _, code := runBench(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	script := filepath.Join(t.TempDir(), "peers.py")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runBench(t, "peers", "--standard", "usps", "--python", filepath.Join(t.TempDir(), "no-python"), "--script", script)
	if code != 1 || !strings.Contains(errOut, "python3-sklearn python3-xgboost") {
		t.Errorf("missing Python: exit %d, %q", code, errOut)
	}
	if err := checkPython(filepath.Join(t.TempDir(), "none")); !errors.Is(err, ErrNoPython) {
		t.Errorf("checkPython: %v", err)
	}
	// trit alone (--methods "", no curve) needs neither the script nor
	// Python; one peer or a curve needs both.
	f := &peersFlags{python: filepath.Join(t.TempDir(), "none"), script: script}
	if err := f.ready(nil, nil); err != nil {
		t.Errorf("trit alone: %v", err)
	}
	if err := f.ready(nil, []string{"majority"}); !errors.Is(err, ErrNoPython) {
		t.Errorf("a peer without Python: %v", err)
	}
	if err := f.ready([]int{4096}, nil); !errors.Is(err, ErrNoPython) {
		t.Errorf("a curve without Python: %v", err)
	}
}

// TestPeersScript runs scripts/peers/peers.py on a small export. It needs
// /usr/bin/python3 with scikit-learn and XGBoost and takes tens of seconds,
// so it runs only with TRIT_PEERS_PY=1 (make bench-peers-test).
func TestPeersScript(t *testing.T) {
	if os.Getenv("TRIT_PEERS_PY") != "1" {
		t.Skip("set TRIT_PEERS_PY=1 to run peers.py (needs python3-sklearn and python3-xgboost)")
	}
	if err := checkPython("/usr/bin/python3"); err != nil {
		t.Fatal(err)
	}
	train := training.TwoCircles(400, 0.5, 0.08, 1)
	test := training.TwoCircles(200, 0.5, 0.08, 2)
	sc := data.FitScaler(train)
	folds, how, err := training.ValidationFolds(train, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	job := &PeersJob{Dataset: "circles", Classes: train.Classes, Budget: 2048, Curve: []int{512, 2048}, Methods: knownPeers,
		Validation: how, Seed: 1, Threads: 1, RBFRows: 300}
	if err := Export(dir, job, &sc, train, test, folds); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", filepath.Join("..", "scripts", "peers", "peers.py"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("peers.py: %v\n%s", err, out)
	}
	out, err := readPeersOutput(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != len(knownPeers) {
		t.Fatalf("%d results, want %d", len(out.Results), len(knownPeers))
	}
	// No straight line, threshold or constant tells two circles apart.
	simple := map[string]bool{"linear-svm": true, "logreg": true, "stump": true, "majority": true}
	for _, r := range out.Results {
		if r.Skipped != "" {
			t.Errorf("%s skipped: %s", r.Method, r.Skipped)
			continue
		}
		if !simple[r.Method] && r.Accuracy < 90 {
			t.Errorf("%s: %.1f%% on two circles", r.Method, r.Accuracy)
		}
		if simple[r.Method] && r.Accuracy > 80 {
			t.Errorf("%s: %.1f%% on two circles, which no simple model can reach", r.Method, r.Accuracy)
		}
		if r.Method != "rbf-svm" && r.Method != "linear-svm" && r.ECE == nil {
			t.Errorf("%s: no calibration error on the test rows", r.Method)
		}
		if r.Budget > 0 && !simple[r.Method] && r.Bytes > r.Budget {
			t.Errorf("%s: %d bytes over the %d budget", r.Method, r.Bytes, r.Budget)
		}
		if len(r.PerClass) != 2 {
			t.Errorf("%s: per-class %+v", r.Method, r.PerClass)
		}
	}
	if r := out.Results[0]; r.Method != "mlp-int8" || r.Bytes != MLPBytes(2, 2, MLPWidth(2, 2, 2048, 1024)) {
		t.Errorf("mlp-int8 bytes %d, Go's formula %d", r.Bytes, MLPBytes(2, 2, MLPWidth(2, 2, 2048, 1024)))
	}
	// The MLP's softmax curve: trit's coverages, 100% = its accuracy,
	// never less accurate on fewer, surer windows by more than one row.
	r := out.Results[0]
	if len(r.Coverage) != 8 || r.Coverage[0].Coverage != 100 || math.Abs(r.Coverage[0].Accuracy-r.Accuracy) > 1e-9 || r.ECE == nil || *r.ECE < 0 || *r.ECE > 100 {
		t.Fatalf("mlp-int8 confidence: curve %+v, ECE %v", r.Coverage, r.ECE)
	}
	if last := r.Coverage[len(r.Coverage)-1]; last.Coverage != 50 || last.Accuracy < r.Accuracy-100.0/100 {
		t.Errorf("mlp-int8 at 50%% coverage: %.2f%%, all windows %.2f%%", last.Accuracy, r.Accuracy)
	}
	if len(out.Curve) != 4 {
		t.Errorf("%d curve points, want 4 (xgboost and mlp-int8 at 2 budgets)", len(out.Curve))
	}
}

// trit trains at the curve's smallest budgets (the default 512-byte
// reserve alone would fill 512 bytes) and reports its signed bundle.
func TestTritSmallBudgets(t *testing.T) {
	train := training.TwoCircles(300, 0.5, 0.08, 1)
	test := training.TwoCircles(100, 0.5, 0.08, 2)
	f := &peersFlags{seed: 1, workers: 1}
	for _, budget := range []int{512, 1024, 30720} {
		r, res, err := f.trit(train, test, budget, &progress{quiet: true}, "circles")
		if err != nil {
			t.Fatalf("%d bytes: %v", budget, err)
		}
		raw, err := res.Bundle(train, training.BundleMeta{ModelID: "circles", Release: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Method != "trit" || r.Budget != budget || r.Bytes != len(raw) || r.Accuracy < 90 || len(r.PerClass) != 2 {
			t.Errorf("%d bytes: %+v (unsigned bundle %d bytes)", budget, r, len(raw))
		}
	}
}

func ptr(v float64) *float64 { return &v }

// TestPeersOut: the reports go to -o/--out, which is not replaced without
// --force (checked before hours of work); --json FILE, the former name,
// still works as it did (it replaced the file), with a note on stderr,
// and is refused when what follows it is a flag (scripts that took it for
// tritctl's --json switch).
func TestPeersOut(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "peers.json")
	if err := os.WriteFile(existing, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	noPython := []string{"--python", filepath.Join(dir, "no-python"), "--script", existing}
	_, errOut, code := runBench(t, append([]string{"peers", "--standard", "usps", "-o", existing}, noPython...)...)
	if code != 1 || !strings.Contains(errOut, "use --force to replace it") {
		t.Errorf("-o over an existing file: exit %d %q", code, errOut)
	}
	// With --force (or the old --json) it goes on, to the missing Python.
	for _, args := range [][]string{{"-o", existing, "--force"}, {"--json", existing}} {
		_, errOut, code := runBench(t, append(append([]string{"peers", "--standard", "usps"}, args...), noPython...)...)
		if code != 1 || !strings.Contains(errOut, "python3-sklearn") {
			t.Errorf("%v: exit %d %q, want the missing Python", args, code, errOut)
		}
		if args[0] == "--json" && !strings.Contains(errOut, "deprecated") {
			t.Errorf("--json FILE: no deprecation note in %q", errOut)
		}
	}
	if _, errOut, code := runBench(t, "peers", "--json", "--standard", "usps"); code != 2 || !strings.Contains(errOut, "-o FILE") {
		t.Errorf("--json followed by a flag: exit %d %q, want 2", code, errOut)
	}
}
