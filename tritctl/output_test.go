package tritctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/training"
)

// TestOutputSaysWhatIs: a model without random features shows no σ (it
// has none), in train's summary and in bundle inspect; one class is
// refused in words; train without arguments says what to give; --json
// always has warnings; eval's unknown counts add up.
func TestOutputSaysWhatIs(t *testing.T) {
	dir := t.TempDir()
	data, model := filepath.Join(dir, "d.csv"), filepath.Join(dir, "m.trit")
	writeTwoCircles(t, data, 300, 1, ",", ".")
	out, stderr, code := runCtl(t, "train", data, "-o", model, "--embedding", "trees", "--c", "1")
	if code != 0 {
		t.Fatalf("train --embedding trees: exit %d %s", code, stderr)
	}
	if strings.Contains(out, "σ = 0") || !strings.Contains(out, "C = 1 (no random features, so no σ)") {
		t.Errorf("a tree model's summary:\n%s", out)
	}
	out, _, _ = runCtl(t, "bundle", "inspect", model)
	if strings.Contains(out, "threshold bits only") || !strings.Contains(out, "the embedding is boosted trees' leaves") {
		t.Errorf("bundle inspect of a tree model:\n%s", out)
	}

	out, _, code = runCtl(t, "train", data, "-o", model, "--sigma", "1", "--c", "1", "--json")
	var s map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("train --json: exit %d %s", code, out)
	}
	if w, ok := s["warnings"].([]any); !ok {
		t.Errorf("train --json has no warnings array: %v", s["warnings"])
	} else if len(w) != 0 {
		t.Logf("warnings: %v", w)
	}

	one := filepath.Join(dir, "one.csv")
	os.WriteFile(one, []byte("a,b,label\n1,2,x\n2,3,x\n3,4,x\n"), 0o644)
	_, stderr, code = runCtl(t, "train", one, "-o", model)
	if code != 1 || !strings.Contains(stderr, `every one of its 3 rows has the label "x": a classifier needs at least two classes`) || strings.Contains(stderr, "1 classes") {
		t.Errorf("one class: exit %d %s", code, stderr)
	}
	_, stderr, code = runCtl(t, "train")
	if code != 2 || !strings.Contains(stderr, "tritctl train FILE.csv -o MODEL.trit") {
		t.Errorf("train without arguments: exit %d %s", code, stderr)
	}

	r := &training.ConfidenceReport{Unknown: 21, LowConf: 5, Novel: 17, Thresholds: inference.Thresholds{MinConfidence: 150, MaxNovelty: 9}}
	if got, want := unknownReasons(r), "4 on confidence < 150/255 alone, 16 on novelty > 9 alone, 1 on both"; got != want {
		t.Errorf("unknownReasons = %q, want %q", got, want)
	}
	r = &training.ConfidenceReport{Unknown: 7, LowConf: 7, Thresholds: inference.Thresholds{MinConfidence: 150}}
	if got, want := unknownReasons(r), "7 on confidence < 150/255, 0 on novelty > 0"; got != want {
		t.Errorf("unknownReasons = %q, want %q", got, want)
	}
}
