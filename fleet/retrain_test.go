package fleet

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/retrain"
	"github.com/trit-iot/trit/wire"
)

// waitJob polls job id until it is done.
func waitJob(t *testing.T, s *Service, id string) *api.TrainJob {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		j, err := s.TrainingJob(id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State.Done() {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s did not finish", id)
	return nil
}

// TestRetrainJob: a retraining job on the fleet trains on the original
// data in the training directory and the model's labelled windows in the
// store; it stores a challenger that beats the active bundle on the
// newest windows, and none when the challenger is not better.
func TestRetrainJob(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, func(o *Options) { o.TrainingDir = dir })
	s := f.svc
	rs := setupRetrain(t, f, dir)
	stream, b, signed, info, res := rs.stream, rs.csv, rs.signed, rs.info, rs.res
	// The device's late windows, pulled and labelled.
	store := func(device string, from int, label func(i int) string) {
		labelLate(t, s, info.Hash, stream, device, from, label)
	}
	store("gw-1", 2600, func(i int) string { return stream.Classes[stream.Y[i]] })
	j, err := s.StartTraining(api.TrainRequest{Dataset: "orig.csv", ModelID: "m", Retrain: true, P: 256, Sigma: 1, C: 1})
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, s, j.ID)
	r := j.Retrain
	if j.State != api.TrainSucceeded || r == nil || !r.Better || j.Bundle == "" || r.Active != info.Hash || r.Windows != 200 || r.OriginalRows != 1500 {
		t.Fatalf("job %+v, retrain %+v", j, r)
	}
	ch, err := s.TrainedBundle(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	br, err := bundle.Inspect(ch)
	if err != nil || br.ModelID != "m" || br.Release != 2 || br.Signed {
		t.Fatalf("challenger: %+v, %v", br, err)
	}
	// Against a model that already gets every labelled window right.
	dir2 := t.TempDir()
	f2 := newFixture(t, func(o *Options) { o.TrainingDir = dir2 })
	os.WriteFile(filepath.Join(dir2, "orig.csv"), []byte(b), 0o600)
	if info, err = f2.svc.Registry().Add(signed); err != nil {
		t.Fatal(err)
	}
	s = f2.svc
	store("gw-1", 2600, func(i int) string {
		c, _ := res.Model.Predict(nil, stream.Row(i))
		return res.Model.Classes()[c]
	})
	j, err = s.StartTraining(api.TrainRequest{Dataset: "orig.csv", ModelID: "m", Retrain: true, P: 256, Sigma: 1, C: 1})
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, s, j.ID)
	if j.State != api.TrainSucceeded || j.Retrain == nil || j.Retrain.Better || j.Bundle != "" || !strings.Contains(j.Retrain.Why, "refused") {
		t.Fatalf("not better: job %+v, retrain %+v", j, j.Retrain)
	}
	if _, err := s.TrainedBundle(j.ID); err == nil {
		t.Fatal("a refused challenger has a bundle")
	}
	// Bad requests.
	if _, err := s.StartTraining(api.TrainRequest{Dataset: "orig.csv", ModelID: "m", Release: 3, Active: "abc"}); err == nil {
		t.Fatal("active without retrain accepted")
	}
}

// retrainSetup is a model m trained on the early rows of a drifting
// stream, its signed bundle registered, and its training file orig.csv in
// the training directory.
type retrainSetup struct {
	stream *data.Dataset
	csv    string
	signed []byte
	info   *api.BundleInfo
	res    *training.Result
}

func setupRetrain(t *testing.T, f *fixture, dir string) retrainSetup {
	t.Helper()
	stream := retrain.RotatingStream(4000, math.Pi/2, 1)
	orig, _, err := data.SplitLatestCount(stream, 2500)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := range orig.N {
		fmt.Fprintf(&b, "%g,%g,%s\n", orig.Row(i)[0], orig.Row(i)[1], orig.Classes[orig.Y[i]])
	}
	os.WriteFile(filepath.Join(dir, "orig.csv"), []byte(b.String()), 0o600)
	res, err := training.Train(orig, &training.Config{P: 256, Sigma: 1, C: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := res.Bundle(orig, training.BundleMeta{ModelID: "m", Release: 1})
	if err != nil {
		t.Fatal(err)
	}
	info, signed := f.publish(t, raw)
	return retrainSetup{stream, b.String(), signed, info, res}
}

// labelLate stores device's windows of rows from, from+7, … of stream as
// pulled (classified "high" by bundle hash) and labels them with label.
func labelLate(t *testing.T, s *Service, hash string, stream *data.Dataset, device string, from int, label func(i int) string) {
	t.Helper()
	set := &wire.SampleSet{Model: &wire.ModelRef{ID: "m", Release: 1, Bundle: hash}, Features: []string{"a", "b"}}
	for i := from; i < 4000; i += 7 {
		set.Samples = append(set.Samples, wire.Sample{Time: int64(i) * 1000, X: stream.Row(i), Class: "high", Reason: wire.SampleRate})
	}
	if _, _, err := s.StoreWindows(device, set); err != nil {
		t.Fatal(err)
	}
	var ls []api.Label
	for _, smp := range set.Samples {
		ls = append(ls, api.Label{Window: api.WindowID(device, smp.Time), Label: label(int(smp.Time / 1000))})
	}
	if _, err := s.Label(api.LabelRequest{Labels: ls}, "alice"); err != nil {
		t.Fatal(err)
	}
}
