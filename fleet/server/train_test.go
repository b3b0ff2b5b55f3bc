package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/inference/bundle"
)

func TestRemoteTraining(t *testing.T) {
	dir := t.TempDir()
	fleettest.WriteRings(t, dir, "rings.csv", 600)
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
	f.clk.t = time.Now() // the bundle's created-at
	srv := apiServer(t, f)

	req := `{"dataset":"rings.csv","format":"dense","label_column":-1,"sigma":0.5,"c":10,"p":256,"model_id":"rings","release":1}`
	code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(req))
	var job api.TrainJob
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

// A LIBSVM file's features can be given, as tritctl train --features
// gives them: a sparse file whose largest index would make a dense matrix
// far larger than the file is refused without it (the API names the place;
// trit-fleet's log, the flag), and a small file is read with as many
// features as asked for.
func TestRemoteTrainingLIBSVMFeatures(t *testing.T) {
	dir := t.TempDir()
	var sparse, small strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sparse, "%d 1:%d %d:1\n", i%2, i, 300000-i)
		fmt.Fprintf(&small, "%d 1:%d 2:%d\n", i%2, i%2, (i+1)%2)
	}
	for name, text := range map[string]string{"sparse.libsvm": sparse.String(), "small.libsvm": small.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
	f.clk.t = time.Now()
	srv := apiServer(t, f)
	_, job := startJob(t, srv, `{"dataset":"sparse.libsvm","format":"libsvm","sigma":1,"c":10,"p":64,"model_id":"s","release":1}`)
	if got := waitJob(t, srv, job.ID); got.State != api.TrainFailed || !strings.Contains(got.Error, "sparse.libsvm:1: column 3") {
		t.Fatalf("a sparse file without features: %s %q", got.State, got.Error)
	}
	_, job = startJob(t, srv, `{"dataset":"small.libsvm","format":"libsvm","features":5,"sigma":1,"c":10,"p":64,"model_id":"s","release":2}`)
	if got := waitJob(t, srv, job.ID); got.State != api.TrainSucceeded {
		t.Fatalf("a small file with 5 features: %s %q", got.State, got.Error)
	}
	_, raw := call(t, srv, "GET", "/v1/train/"+job.ID+"/bundle", testToken, nil)
	b, err := bundle.Decode(raw, &bundle.DecodeOptions{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Spec.NumFeatures(); n != 5 {
		t.Errorf("the model reads %d features, want 5", n)
	}
}

func TestRemoteTrainingRefuses(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
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
	var job api.TrainJob
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

// waitJob polls a training job until it is done.
func waitJob(t *testing.T, srv *httptest.Server, id string) api.TrainJob {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var job api.TrainJob
		_, body := call(t, srv, "GET", "/v1/train/"+id, testToken, nil)
		if err := json.Unmarshal(body, &job); err != nil {
			t.Fatalf("job %s: %s", id, body)
		}
		if job.State.Done() {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, job.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startJob(t *testing.T, srv *httptest.Server, req string) (int, api.TrainJob) {
	t.Helper()
	code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(req))
	var job api.TrainJob
	if code == 200 {
		if err := json.Unmarshal(body, &job); err != nil {
			t.Fatal(err)
		}
	}
	return code, job
}

// Every input of a training request is bounded, with a clear error.
func TestRemoteTrainingBounds(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
	srv := apiServer(t, f)
	for _, c := range []struct{ field, want string }{
		{`"p":1000000000`, "p = 1000000000"},
		{`"p":-1`, "p = -1"},
		{`"sigma":-1`, "sigma"},
		{`"c":-0.5`, "c = -0.5"},
		{`"label_column":-7`, "label_column"},
		{`"min_agent_version":"new"`, "min_agent_version"},
		{`"hardware":"` + strings.Repeat("h", 100) + `"`, "hardware"},
		{`"format":"parquet"`, "format"},
		{`"budget":100`, "budget = 100"},
		{`"budget":2000000000`, "budget = 2000000000"},
		{`"features":-1`, "features = -1"},
		{`"features":1000000000`, "features = 1000000000"},
	} {
		req := `{"dataset":"x.csv","model_id":"m","release":1,` + c.field + `}`
		code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(req))
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s", c.field, code, body)
		}
	}
	code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(`{"dataset":"x.csv","model_id":"`+strings.Repeat("m", 65)+`","release":1}`))
	if code != http.StatusBadRequest || !strings.Contains(string(body), "model_id") {
		t.Errorf("long model ID: %d %s", code, body)
	}
}

// Jobs queue one behind the other; a queued job can be cancelled before it
// runs, a running one is marked cancelled at once and its result is
// discarded; too many waiting jobs are refused; finished jobs are cancelled
// no more.
func TestRemoteTrainingCancel(t *testing.T) {
	dir := t.TempDir()
	fleettest.WriteRings(t, dir, "rings.csv", 20000)
	fleettest.WriteRings(t, dir, "small.csv", 200)
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
	f.clk.t = time.Now()
	srv := apiServer(t, f)
	// The default search on 20,000 rows at p = 2048: seconds, so it is
	// still running when cancelled (1,000 rows at p = 256 took 0.13 s,
	// and a loaded machine's requests came after it finished). Cancelled,
	// it stops between two fits.
	slow := `{"dataset":"rings.csv","format":"dense","label_column":-1,"p":2048,"model_id":"rings","release":1}`
	quick := `{"dataset":"small.csv","format":"dense","label_column":-1,"sigma":0.5,"c":10,"p":64,"model_id":"rings","release":2}`
	_, a := startJob(t, srv, slow)
	_, b := startJob(t, srv, quick)
	_, c := startJob(t, srv, quick)
	_, d := startJob(t, srv, quick)
	if a.State != api.TrainRunning || b.State != api.TrainQueued || c.State != api.TrainQueued {
		t.Fatalf("states %s %s %s", a.State, b.State, c.State)
	}
	if code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(quick)); code != http.StatusTooManyRequests {
		t.Fatalf("a fifth job while four wait: %d %s", code, body)
	}
	for _, id := range []string{b.ID, a.ID} {
		code, body := call(t, srv, "POST", "/v1/train/"+id+"/cancel", testToken, nil)
		var j api.TrainJob
		if code != 200 || json.Unmarshal(body, &j) != nil || j.State != api.TrainCancelled {
			t.Fatalf("cancel %s: %d %s", id, code, body)
		}
	}
	if got := waitJob(t, srv, c.ID); got.State != api.TrainSucceeded {
		t.Fatalf("the job after the cancelled ones: %+v", got)
	}
	waitJob(t, srv, d.ID)
	for _, id := range []string{a.ID, b.ID} {
		j := waitJob(t, srv, id)
		if j.State != api.TrainCancelled || j.Bundle != "" {
			t.Fatalf("cancelled job %s: %+v", id, j)
		}
		if code, _ := call(t, srv, "GET", "/v1/train/"+id+"/bundle", testToken, nil); code != http.StatusNotFound {
			t.Fatalf("bundle of cancelled job %s: %d", id, code)
		}
	}
	if code, _ := call(t, srv, "POST", "/v1/train/"+c.ID+"/cancel", testToken, nil); code != http.StatusConflict {
		t.Fatalf("cancelling a finished job: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/v1/train/train-999/cancel", testToken, nil); code != http.StatusNotFound {
		t.Fatalf("cancelling an unknown job: %d", code)
	}
}

// The job list keeps at most MaxTrainJobs, dropping the oldest finished.
func TestRemoteTrainingJobListBounded(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
	srv := apiServer(t, f)
	var first string
	for i := range fleet.MaxTrainJobs + 10 {
		f.clk.t = t0.Add(time.Duration(i) * time.Second)
		code, j := startJob(t, srv, `{"dataset":"missing.csv","model_id":"m","release":1}`)
		if code != 200 {
			t.Fatalf("job %d: %d", i, code)
		}
		if i == 0 {
			first = j.ID
		}
		waitJob(t, srv, j.ID)
	}
	if n := len(f.svc.TrainingJobs()); n > fleet.MaxTrainJobs {
		t.Fatalf("%d jobs kept, at most %d", n, fleet.MaxTrainJobs)
	}
	if code, _ := call(t, srv, "GET", "/v1/train/"+first, testToken, nil); code != http.StatusNotFound {
		t.Fatalf("the oldest job is still listed: %d", code)
	}
}

// TestRemoteTrainingLabelByName: label_column_name picks the label by its
// header name, as tritctl train --label-column NAME does; it and
// label_column do not go together, and it is bounded.
func TestRemoteTrainingLabelByName(t *testing.T) {
	dir := t.TempDir()
	fleettest.WriteRings(t, dir, "rings.csv", 600)
	raw, err := os.ReadFile(filepath.Join(dir, "rings.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// The label first, named: by default the last column would be taken.
	var b strings.Builder
	b.WriteString("ring,x,y\n")
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(line, ",")
		fmt.Fprintf(&b, "r%s,%s,%s\n", f[2], f[0], f[1])
	}
	if err := os.WriteFile(filepath.Join(dir, "named.csv"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *fleet.Options) { o.TrainingDir = dir })
	f.clk.t = time.Now()
	srv := apiServer(t, f)
	for _, c := range []struct{ field, want string }{
		{`"label_column_name":"ring","label_column":2`, "not both"},
		{`"label_column_name":"` + strings.Repeat("n", 300) + `"`, "label_column_name"},
		{`"label_column_name":"a\u0001b"`, "label_column_name"},
	} {
		code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(`{"dataset":"named.csv","model_id":"m","release":1,`+c.field+`}`))
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.field, code, body, c.want)
		}
	}
	code, body := call(t, srv, "POST", "/v1/train", testToken,
		[]byte(`{"dataset":"named.csv","label_column_name":"ring","sigma":0.5,"c":10,"p":256,"model_id":"rings","release":1}`))
	var job api.TrainJob
	if code != 200 || json.Unmarshal(body, &job) != nil {
		t.Fatalf("start: %d %s", code, body)
	}
	deadline := time.Now().Add(time.Minute)
	for !job.State.Done() {
		if time.Now().After(deadline) {
			t.Fatal("training did not finish")
		}
		time.Sleep(20 * time.Millisecond)
		_, body = call(t, srv, "GET", "/v1/train/"+job.ID, testToken, nil)
		json.Unmarshal(body, &job)
	}
	if job.State != "succeeded" || job.Accuracy < 95 {
		t.Fatalf("job %+v", job)
	}
	code, out := call(t, srv, "GET", "/v1/train/"+job.ID+"/bundle", testToken, nil)
	bd, err := bundle.Decode(out, &bundle.DecodeOptions{AllowUnsigned: true})
	if code != 200 || err != nil || strings.Join(bd.Spec.Classes, ",") != "r0,r1" {
		t.Fatalf("bundle: %d %v %v", code, err, bd)
	}
}

// TestRemoteTrainingConfinedAndQuiet: a dataset reached through a symbolic
// link out of training.data_dir is refused (it was read), and a job that
// fails on a malformed file keeps where, not what: its error was the
// parser's, quoting the file's text, for every role that may read jobs.
// The log (an administrator's) has the whole error.
func TestRemoteTrainingConfinedAndQuiet(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b,label\n1,2,x\n3,4,y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("a,b,label\n1,2,x\n3,hunter2-password,y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &fleettest.LockedBuffer{}
	f := newFixture(t, func(o *fleet.Options) {
		o.TrainingDir = dir
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	srv := apiServer(t, f)
	if code, body := call(t, srv, "POST", "/v1/train", testToken, []byte(`{"dataset":"link.csv","model_id":"m","release":1}`)); code != http.StatusBadRequest || !strings.Contains(string(body), "symbolic link") {
		t.Errorf("a dataset linked from outside: %d %s, want 400", code, body)
	}
	_, body := call(t, srv, "POST", "/v1/train", testToken, []byte(`{"dataset":"bad.csv","model_id":"m","release":1}`))
	var job api.TrainJob
	if err := json.Unmarshal(body, &job); err != nil {
		t.Fatalf("%s", body)
	}
	job = waitJob(t, srv, job.ID)
	if job.State != "failed" || strings.Contains(job.Error, "hunter2") || !strings.Contains(job.Error, "bad.csv:3") {
		t.Fatalf("job %s: %q; want failed at bad.csv:3 without the file's text", job.State, job.Error)
	}
	if !strings.Contains(logs.String(), "hunter2") {
		t.Errorf("the log lacks the whole error:\n%s", logs.String())
	}
}
