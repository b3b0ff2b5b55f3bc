package tritctl

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trit-iot/trit/sensors/synthetic"
)

func TestDemoMachineDataset(t *testing.T) {
	spec := synthetic.DefaultSpec()
	ds, err := machineDataset(spec, 20, 7)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := spec.FeatureNames()
	if ds.N != 60 || ds.D != len(names) || len(ds.X) != ds.N*ds.D || !slices.Equal(ds.Features, names) {
		t.Fatalf("dataset %d×%d, features %v", ds.N, ds.D, ds.Features)
	}
	if !slices.Equal(ds.Classes, []string{"normal", "imbalance", "bearing_fault"}) {
		t.Fatalf("classes %v", ds.Classes)
	}
	count := make([]int, 3)
	for _, y := range ds.Y {
		count[y]++
	}
	if !slices.Equal(count, []int{20, 20, 20}) {
		t.Fatalf("rows per class %v", count)
	}
	// Labels follow the simulated state: an imbalanced machine's radial
	// vibration is strong, so its mean RMS over x, y, z is above a
	// healthy one's on average.
	rms := func(class int32) float64 {
		var s float64
		var n int
		for i, y := range ds.Y {
			if y == class {
				r := ds.Row(i)
				s += float64(r[0] + r[5] + r[10])
				n++
			}
		}
		return s / float64(n)
	}
	if rms(1) <= rms(0) {
		t.Fatalf("mean RMS imbalance %v <= normal %v: labels do not follow states", rms(1), rms(0))
	}
}

func TestDemoMachine(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := runCtl(t, "demo", "--dir", dir)
	if code != 0 {
		t.Fatalf("demo exited %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`test accuracy: ([0-9.]+)%`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no accuracy in:\n%s", out)
	}
	// Fixed seeds make the run deterministic; 90 % leaves room for
	// solver changes while catching a broken pipeline (chance is 33 %).
	if acc, _ := strconv.ParseFloat(m[1], 64); acc < 90 {
		t.Fatalf("test accuracy %v%%, want >= 90%%:\n%s", acc, out)
	}
	for _, want := range []string{"16 features: accel.x.rms, accel.x.p2p, accel.x.band_0_50", "summary: test accuracy", "demo finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Most live windows of each state are classified as that state.
	for _, st := range synthetic.States {
		line := regexp.MustCompile(`state ` + st.String() + ` +→ 5 windows classified as (.*)`).FindStringSubmatch(out)
		if line == nil || strings.Count(line[1], st.String()) < 3 {
			t.Errorf("live windows of %s: %v", st, line)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "machine.model")); err != nil || fi.Size() == 0 || fi.Size() > 30<<10 {
		t.Fatalf("model bundle: %v %v", fi, err)
	}
	if _, _, code := runCtl(t, "demo", "--dataset", "iris"); code != 2 {
		t.Fatalf("unknown --dataset: exit %d, want 2", code)
	}
}
