package fleet

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// Training on the fleet: `tritctl remote-train` asks trit-fleet to train a
// model on a dataset stored on the fleet server (under the configured data
// directory; a request can never name a file outside it), waits, and
// downloads the result as an unsigned bundle, which the operator signs with
// the offline release key and publishes. The fleet never holds a release
// key, so a trained model cannot reach a device without that signature.
//
// Jobs run one at a time, in the background; they are kept in memory (a
// restart forgets them; the bundles they produced stay in the store).

// TrainRequest asks for one training run. Zero Sigma or C searches the
// default grid on a validation split (as `tritctl train` does).
type TrainRequest struct {
	// Dataset is a path relative to the fleet's training data directory,
	// or "standard:NAME" for a standard dataset stored there (usps, …).
	Dataset     string  `json:"dataset"`
	Format      string  `json:"format,omitempty"`       // auto (default), libsvm, idx, dense
	LabelColumn int     `json:"label_column,omitempty"` // CSV: numbered from 1, -1 for the last; 0: named label/class/target/y, else the last
	Sigma       float64 `json:"sigma,omitempty"`
	C           float64 `json:"c,omitempty"`
	P           int     `json:"p,omitempty"` // default 2048
	ModelID     string  `json:"model_id"`
	Release     uint64  `json:"release"`
	Hardware    string  `json:"hardware,omitempty"`
	MinAgent    string  `json:"min_agent_version,omitempty"` // default 0.1.0
}

// TrainJob is a training run and its outcome.
type TrainJob struct {
	ID       string       `json:"id"`
	Request  TrainRequest `json:"request"`
	State    string       `json:"state"` // running, succeeded, failed
	Error    string       `json:"error,omitempty"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished,omitzero"`
	// On success: the unsigned bundle (GET /v1/train/{id}/bundle) and the
	// figures of `tritctl train`.
	Bundle       string  `json:"bundle,omitempty"` // SHA-256 of the unsigned bundle
	Bytes        int     `json:"bytes,omitempty"`
	Sigma        float64 `json:"sigma,omitempty"`
	C            float64 `json:"c,omitempty"`
	Accuracy     float64 `json:"accuracy,omitempty"`    // percent, on AccuracyOn
	AccuracyOn   string  `json:"accuracy_on,omitempty"` // "test" (standard sets) or "training"
	NonZero      int     `json:"nonzero,omitempty"`
	TrainSeconds float64 `json:"train_seconds,omitempty"`
}

// trainer runs TrainJobs one at a time.
type trainer struct {
	dir  string // training data directory; "" disables training
	mu   sync.Mutex
	jobs map[string]*TrainJob
	next int
	busy sync.Mutex // held while a job trains
}

// ErrTrainingDisabled means the fleet has no training data directory.
var ErrTrainingDisabled = errors.New("fleet: training is not configured (training.data_dir)")

// datasetPath resolves a request's dataset inside the data directory.
func (tr *trainer) datasetPath(name string) (string, error) {
	clean := filepath.Clean(name)
	if name == "" || filepath.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", badRequest("dataset %q: give a path relative to the fleet's training data directory", name)
	}
	return filepath.Join(tr.dir, clean), nil
}

// StartTraining checks a request and starts a job in the background.
func (s *Service) StartTraining(req TrainRequest) (*TrainJob, error) {
	tr := s.trainer
	if tr == nil || tr.dir == "" {
		return nil, ErrTrainingDisabled
	}
	if req.ModelID == "" || req.Release == 0 {
		return nil, badRequest("model_id and a release >= 1 are required")
	}
	if req.MinAgent == "" {
		req.MinAgent = "0.1.0"
	}
	format := data.FormatAuto
	switch req.Format {
	case "", "auto":
	case "libsvm":
		format = data.FormatLIBSVM
	case "idx":
		format = data.FormatIDX
	case "dense":
		format = data.FormatDense
	default:
		return nil, badRequest("format %q: want auto, libsvm, idx or dense", req.Format)
	}
	standard, isStandard := strings.CutPrefix(req.Dataset, "standard:")
	var path string
	if !isStandard {
		var err error
		if path, err = tr.datasetPath(req.Dataset); err != nil {
			return nil, err
		}
	}
	tr.mu.Lock()
	tr.next++
	job := &TrainJob{ID: fmt.Sprintf("train-%d", tr.next), Request: req, State: "running", Started: s.opt.Now().UTC()}
	tr.jobs[job.ID] = job
	tr.mu.Unlock()
	s.log.Info("training started", "job", job.ID, "dataset", req.Dataset, "model", req.ModelID, "release", req.Release)

	go func() {
		tr.busy.Lock()
		defer tr.busy.Unlock()
		result, err := s.train(req, path, standard, isStandard, format)
		tr.mu.Lock()
		defer tr.mu.Unlock()
		job.Finished = s.opt.Now().UTC()
		if err != nil {
			job.State, job.Error = "failed", err.Error()
			s.log.Warn("training failed", "job", job.ID, "err", err)
			return
		}
		result.ID, result.Request, result.Started, result.Finished, result.State = job.ID, job.Request, job.Started, job.Finished, "succeeded"
		*job = *result
		s.log.Info("training finished", "job", job.ID, "bundle", job.Bundle, "accuracy", job.Accuracy, "on", job.AccuracyOn, "bytes", job.Bytes)
	}()
	return job.clone(), nil
}

// train runs one job and stores its unsigned bundle.
func (s *Service) train(req TrainRequest, path, standard string, isStandard bool, format data.Format) (*TrainJob, error) {
	var trainSet, testSet *data.Dataset
	var err error
	if isStandard {
		trainSet, testSet, err = data.LoadStandard(s.trainer.dir, standard)
	} else {
		trainSet, err = data.Load(path, &data.Options{Format: format, LabelColumn: data.Column{Index: req.LabelColumn}})
	}
	if err != nil {
		return nil, err
	}
	res, err := training.Train(trainSet, &training.Config{P: req.P, Sigma: req.Sigma, C: req.C, Seed: 1})
	if err != nil {
		return nil, err
	}
	eval, on := trainSet, "training"
	if testSet != nil {
		eval, on = testSet, "test"
	}
	ev, err := training.Evaluate(res.Model, eval, 0)
	if err != nil {
		return nil, err
	}
	raw, err := bundle.Encode(&bundle.Bundle{
		Header: bundle.Header{ModelID: req.ModelID, Release: req.Release, CreatedAt: s.opt.Now()},
		Compat: bundle.Compat{Features: res.Spec.Features, MinAgentVersion: req.MinAgent, Hardware: req.Hardware},
		Spec:   res.Spec,
	})
	if err != nil {
		return nil, err
	}
	hash, err := s.db.PutBundle(raw)
	if err != nil {
		return nil, err
	}
	return &TrainJob{Bundle: hash, Bytes: len(raw), Sigma: res.Sigma, C: res.C, Accuracy: ev.Accuracy, AccuracyOn: on,
		NonZero: res.NonZero, TrainSeconds: res.TrainSeconds}, nil
}

func (j *TrainJob) clone() *TrainJob {
	c := *j
	return &c
}

// TrainingJob returns a job by ID.
func (s *Service) TrainingJob(id string) (*TrainJob, error) {
	if s.trainer == nil {
		return nil, ErrTrainingDisabled
	}
	s.trainer.mu.Lock()
	defer s.trainer.mu.Unlock()
	j := s.trainer.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w: training job %s", ErrNotFound, id)
	}
	return j.clone(), nil
}

// TrainingJobs returns every job, newest first.
func (s *Service) TrainingJobs() []TrainJob {
	if s.trainer == nil {
		return nil
	}
	s.trainer.mu.Lock()
	defer s.trainer.mu.Unlock()
	out := make([]TrainJob, 0, len(s.trainer.jobs))
	for _, j := range s.trainer.jobs {
		out = append(out, *j)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Started.After(out[k].Started) })
	return out
}

// TrainedBundle returns the unsigned bundle a finished job produced.
func (s *Service) TrainedBundle(id string) ([]byte, error) {
	j, err := s.TrainingJob(id)
	if err != nil {
		return nil, err
	}
	if j.State != "succeeded" {
		return nil, fmt.Errorf("%w: training job %s is %s", ErrNotFound, id, j.State)
	}
	return s.db.Bundle(j.Bundle)
}
