package fleet

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
)

// writeRings writes a two-ring dense CSV dataset (label last) to dir/name.
func writeRings(t *testing.T, dir, name string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for i := range n {
		r := 0.3 + 0.5*float64(i%2) + 0.05*rng.NormFloat64()
		a := 2 * math.Pi * rng.Float64()
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", r*math.Cos(a), r*math.Sin(a), i%2)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRemoteTraining(t *testing.T) {
	dir := t.TempDir()
	writeRings(t, dir, "rings.csv", 600)
	f := newFixture(t, func(o *Options) { o.TrainingDir = dir })
	f.clk.t = time.Now() // the bundle's created-at
	srv := apiServer(t, f)

	req := `{"dataset":"rings.csv","format":"dense","label_column":-1,"sigma":0.5,"c":10,"p":256,"model_id":"rings","release":1}`
	code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(req))
	var job TrainJob
	if code != 200 || json.Unmarshal(body, &job) != nil || job.State != "running" {
		t.Fatalf("start: %d %s", code, body)
	}
	deadline := time.Now().Add(time.Minute)
	for job.State == "running" {
		if time.Now().After(deadline) {
			t.Fatal("training did not finish")
		}
		time.Sleep(20 * time.Millisecond)
		_, body = call(t, srv, "GET", "/v1/train/"+job.ID, testToken, nil)
		json.Unmarshal(body, &job)
	}
	if job.State != "succeeded" || job.Accuracy < 95 || job.AccuracyOn != "training" || job.Bytes == 0 {
		t.Fatalf("job %+v", job)
	}
	code, raw := call(t, srv, "GET", "/v1/train/"+job.ID+"/bundle", testToken, nil)
	if code != 200 || len(raw) != job.Bytes {
		t.Fatalf("bundle download: %d, %d bytes, want %d", code, len(raw), job.Bytes)
	}
	b, err := bundle.Decode(raw, &bundle.DecodeOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatalf("the trained bundle does not decode: %v", err)
	}
	if b.Header.ModelID != "rings" || b.Header.Release != 1 || b.Signed || b.Spec.Transform.P != 256 {
		t.Fatalf("bundle %+v", b.Header)
	}
	// Unsigned, the registry refuses it until the operator signs it.
	if code, _ := call(t, srv, "POST", "/v1/bundles", testToken, raw); code != http.StatusBadRequest {
		t.Fatalf("unsigned trained bundle registered: %d", code)
	}
}

func TestRemoteTrainingRefuses(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, func(o *Options) { o.TrainingDir = dir })
	srv := apiServer(t, f)
	for _, ds := range []string{"../secret.csv", "/etc/passwd", "a/../../b", ""} {
		req := fmt.Sprintf(`{"dataset":%q,"model_id":"m","release":1}`, ds)
		if code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(req)); code != http.StatusBadRequest {
			t.Errorf("dataset %q: %d %s", ds, code, body)
		}
	}
	if code, _ := call(t, srv, "POST", "/v1/train", testToken, []byte(`{"dataset":"x.csv","release":1}`)); code != http.StatusBadRequest {
		t.Errorf("missing model ID: %d", code)
	}
	// A dataset that does not exist fails the job, with the reason.
	_, body := call(t, srv, "POST", "/v1/train", testToken, []byte(`{"dataset":"missing.csv","model_id":"m","release":1}`))
	var job TrainJob
	json.Unmarshal(body, &job)
	for job.State == "running" {
		time.Sleep(10 * time.Millisecond)
		_, body = call(t, srv, "GET", "/v1/train/"+job.ID, testToken, nil)
		json.Unmarshal(body, &job)
	}
	if job.State != "failed" || !strings.Contains(job.Error, "missing.csv") {
		t.Fatalf("job %+v", job)
	}
	if code, _ := call(t, srv, "GET", "/v1/train/"+job.ID+"/bundle", testToken, nil); code != http.StatusNotFound {
		t.Fatalf("bundle of a failed job: %d", code)
	}

	off := newFixture(t)
	if code, _ := call(t, apiServer(t, off), "POST", "/v1/train", testToken, []byte(`{"dataset":"x.csv","model_id":"m","release":1}`)); code != http.StatusNotImplemented {
		t.Fatalf("training without a data directory: %d", code)
	}
}
