package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference"
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
// Jobs run one at a time, in the background, in the order they were asked
// for; at most maxActiveTrainJobs wait or run at once (more is
// ErrTrainingBusy). They are kept in memory, at most maxTrainJobs, the
// oldest finished ones pruned first (a restart forgets them; the bundles
// they produced stay in the store). A request's inputs are bounded before
// anything runs. Cancelling a queued job removes it from the queue;
// cancelling the running one marks it cancelled at once and stops its
// training run (training.TrainContext) between two fits, within seconds;
// the next job starts when it has stopped.

// Bounds on training jobs and their inputs.
const (
	maxTrainJobs       = 100 // jobs remembered; the oldest finished ones are pruned
	maxActiveTrainJobs = 4   // jobs queued or running at once
	maxLabelColumn     = 1 << 16
	maxLabelName       = 256 // a header name
	maxDatasetName     = 1024
	maxTrainBudget     = 1 << 20 // bytes: what max_bundle_bytes allows at most
)

// ErrTrainingBusy means too many training jobs are queued or running.
var ErrTrainingBusy = errors.New("fleet: too many training jobs queued or running; wait for one to finish or cancel one")

// trainer runs TrainJobs one at a time.
type trainer struct {
	dir     string // training data directory; "" disables training
	mu      sync.Mutex
	jobs    map[string]*TrainJob
	next    int
	active  bool          // a training run is in progress (its job may be cancelled)
	running *queued       // the job of that run
	queue   []*queued     // waiting, in order
	run     func(*queued) // starts a job's run (Service.runJob); set by StartTraining
}

// queued is a job waiting to run and what it needs.
type queued struct {
	ctx      context.Context
	cancel   context.CancelFunc // stops the training of this job
	job      *TrainJob
	path     string
	standard string
	isStd    bool
	format   data.Format
}

// ErrTrainingDisabled means the fleet has no training data directory.
var ErrTrainingDisabled = errors.New("fleet: training is not configured (training.data_dir)")

// checkTrainID accepts a job ID as the trainer makes them: train-N.
func checkTrainID(id string) error {
	n, ok := strings.CutPrefix(id, "train-")
	if !ok || n == "" || len(n) > 19 || strings.Trim(n, "0123456789") != "" {
		return errors.New("want train-N, as remote-train prints it")
	}
	return nil
}

// datasetPath resolves a request's dataset inside the data directory.
func (tr *trainer) datasetPath(name string) (string, error) {
	clean := filepath.Clean(name)
	if name == "" || filepath.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", badRequest("dataset %q: give a path relative to the fleet's training data directory", clip(name, 64))
	}
	return filepath.Join(tr.dir, clean), nil
}

// checkTrainRequest bounds every input of a request, so a job never starts
// on values the trainer or the bundle format would refuse later, or that
// would take the fleet server's memory (p is what a gateway can run).
func checkTrainRequest(req *TrainRequest) error {
	switch {
	case req.ModelID == "" || req.Release == 0:
		return badRequest("model_id and a release >= 1 are required")
	case len(req.ModelID) > bundle.MaxModelID || !utf8.ValidString(req.ModelID) || strings.ContainsFunc(req.ModelID, unicode.IsControl):
		return badRequest("model_id %q: 1..%d bytes of text without control characters", clip(req.ModelID, 64), bundle.MaxModelID)
	case req.P < 0 || req.P > inference.MaxP:
		return badRequest("p = %d: want 1..%d random features (0: fill the budget)", req.P, inference.MaxP)
	case req.Budget != 0 && (req.Budget < 512 || req.Budget > maxTrainBudget):
		return badRequest("budget = %d bytes: want 512..%d (0: %d)", req.Budget, maxTrainBudget, training.DefaultBudget)
	case !(req.Sigma >= 0) || math.IsInf(req.Sigma, 0):
		return badRequest("sigma = %g: want a positive number (0: search)", req.Sigma)
	case !(req.C >= 0) || math.IsInf(req.C, 0):
		return badRequest("c = %g: want a positive number (0: search)", req.C)
	case req.LabelColumn < -1 || req.LabelColumn > maxLabelColumn:
		return badRequest("label_column = %d: want -1 (the last) or 0..%d", req.LabelColumn, maxLabelColumn)
	case req.LabelColumnName != "" && req.LabelColumn != 0:
		return badRequest("label_column and label_column_name: give the label column by number or by name, not both")
	case len(req.LabelColumnName) > maxLabelName || !utf8.ValidString(req.LabelColumnName) || strings.ContainsFunc(req.LabelColumnName, unicode.IsControl):
		return badRequest("label_column_name: at most %d bytes of text without control characters", maxLabelName)
	case len(req.Hardware) > bundle.MaxLabel || !utf8.ValidString(req.Hardware) || strings.ContainsFunc(req.Hardware, unicode.IsControl):
		return badRequest("hardware: at most %d bytes of text without control characters", bundle.MaxLabel)
	case len(req.Dataset) > maxDatasetName:
		return badRequest("dataset: %d bytes, at most %d", len(req.Dataset), maxDatasetName)
	}
	if err := (bundle.Compat{MinAgentVersion: req.MinAgent}).CheckAgent("0.0.0"); errors.Is(err, bundle.ErrInvalid) {
		return badRequest("min_agent_version %q: want major.minor.patch", clip(req.MinAgent, 32))
	}
	return nil
}

// StartTraining checks a request and queues a job; it runs at once if no
// other job is running.
func (s *Service) StartTraining(req TrainRequest) (*TrainJob, error) {
	tr := s.trainer
	if tr == nil || tr.dir == "" {
		return nil, ErrTrainingDisabled
	}
	if req.MinAgent == "" {
		req.MinAgent = bundle.DefaultMinAgentVersion
	}
	if err := checkTrainRequest(&req); err != nil {
		return nil, err
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
		return nil, badRequest("format %q: want auto, libsvm, idx or dense", clip(req.Format, 32))
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
	defer tr.mu.Unlock()
	if active := len(tr.queue) + btoi(tr.active); active >= maxActiveTrainJobs {
		return nil, fmt.Errorf("%w (%d)", ErrTrainingBusy, active)
	}
	tr.prune()
	tr.next++
	job := &TrainJob{ID: fmt.Sprintf("train-%d", tr.next), Request: req, State: TrainQueued, Started: s.opt.Now().UTC()}
	tr.jobs[job.ID] = job
	tr.run = s.runJob
	ctx, cancel := context.WithCancel(context.Background())
	tr.queue = append(tr.queue, &queued{ctx: ctx, cancel: cancel, job: job, path: path, standard: standard, isStd: isStandard, format: format})
	s.log.Info("training queued", "job", job.ID, "dataset", clip(req.Dataset, maxLogField), "model", req.ModelID, "release", req.Release)
	tr.startNext()
	return cloneJob(job), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// prune forgets the oldest finished jobs while the list is full (mu held).
func (tr *trainer) prune() {
	for len(tr.jobs) >= maxTrainJobs {
		var oldest *TrainJob
		for _, j := range tr.jobs {
			if j.State.Done() && (oldest == nil || j.Finished.Before(oldest.Finished)) {
				oldest = j
			}
		}
		if oldest == nil {
			return // cannot happen: at most maxActiveTrainJobs are not done
		}
		delete(tr.jobs, oldest.ID)
	}
}

// startNext starts the next queued job if none is running (mu held).
func (tr *trainer) startNext() {
	if tr.active || len(tr.queue) == 0 {
		return
	}
	q := tr.queue[0]
	tr.queue = tr.queue[1:]
	tr.active, tr.running = true, q
	q.job.State = TrainRunning
	go tr.run(q)
}

// runJob trains one job, then starts the next.
func (s *Service) runJob(q *queued) {
	tr, job := s.trainer, q.job
	s.log.Info("training started", "job", job.ID)
	cancelled := func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return job.State == TrainCancelled
	}
	result, err := s.train(q.ctx, job.Request, q.path, q.standard, q.isStd, q.format, cancelled)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	defer tr.startNext()
	tr.active, tr.running = false, nil
	q.cancel()
	switch {
	case job.State == TrainCancelled:
		s.log.Info("cancelled training run ended; its result was discarded", "job", job.ID)
	case err != nil:
		job.Finished = s.opt.Now().UTC()
		job.State, job.Error = TrainFailed, err.Error()
		s.log.Warn("training failed", "job", job.ID, "err", clip(err.Error(), maxLogField))
	default:
		result.ID, result.Request, result.Started, result.Finished, result.State = job.ID, job.Request, job.Started, s.opt.Now().UTC(), TrainSucceeded
		*job = *result
		s.log.Info("training finished", "job", job.ID, "bundle", job.Bundle, "accuracy", job.Accuracy, "on", job.AccuracyOn, "bytes", job.Bytes)
	}
}

// CancelTraining cancels a queued or running job (see the top of this
// file for what that means for a running one).
func (s *Service) CancelTraining(id string) (*TrainJob, error) {
	tr := s.trainer
	if tr == nil || tr.dir == "" {
		return nil, ErrTrainingDisabled
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	j := tr.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("%w: training job %s", ErrNotFound, id)
	}
	if j.State.Done() {
		return nil, fmt.Errorf("%w: training job %s already %s", ErrTrainingDone, id, j.State)
	}
	for i, q := range tr.queue {
		if q.job == j {
			tr.queue = append(tr.queue[:i], tr.queue[i+1:]...)
			q.cancel()
			break
		}
	}
	if q := tr.running; q != nil && q.job == j {
		q.cancel()
	}
	j.State, j.Error, j.Finished = TrainCancelled, "cancelled by the operator", s.opt.Now().UTC()
	s.log.Info("training cancelled", "job", id)
	return cloneJob(j), nil
}

// ErrTrainingDone means a finished job cannot be cancelled.
var ErrTrainingDone = errors.New("fleet: training job already finished")

// train runs one job and stores its unsigned bundle, unless the job was
// cancelled meanwhile.
func (s *Service) train(ctx context.Context, req TrainRequest, path, standard string, isStandard bool, format data.Format, cancelled func() bool) (*TrainJob, error) {
	var trainSet, testSet *data.Dataset
	var err error
	if isStandard {
		trainSet, testSet, err = data.LoadStandard(s.trainer.dir, standard)
	} else {
		trainSet, err = data.Load(path, &data.Options{Format: format, LabelColumn: data.Column{Index: req.LabelColumn, Name: req.LabelColumnName}})
	}
	if err != nil {
		return nil, err
	}
	res, err := training.TrainContext(ctx, trainSet, &training.Config{Budget: req.Budget, P: req.P, Sigma: req.Sigma, C: req.C, Seed: 1})
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
	raw, err := res.Bundle(trainSet, training.BundleMeta{ModelID: req.ModelID, Release: req.Release, Created: s.opt.Now(),
		Hardware: req.Hardware, MinAgent: req.MinAgent})
	if err != nil {
		return nil, err
	}
	if cancelled() {
		return nil, errors.New("cancelled")
	}
	hash, err := s.db.PutBundle(raw)
	if err != nil {
		return nil, err
	}
	// Conversions, not copies field by field: they stop compiling when
	// training's types and the API's part.
	st := api.Structure(res.Structure)
	perClass := make([]api.ClassScore, len(ev.PerClass))
	for i, c := range ev.PerClass {
		perClass[i] = api.ClassScore(c)
	}
	return &TrainJob{Bundle: hash, Bytes: len(raw), Structure: &st, Sigma: res.Sigma, C: res.C, Validation: res.Validation,
		Accuracy: ev.Accuracy, Balanced: ev.Balanced, PerClass: perClass, AccuracyOn: on,
		NonZero: res.NonZero, TrainSeconds: res.TrainSeconds}, nil
}

// cloneJob copies a job for a caller outside the trainer's lock.
func cloneJob(j *TrainJob) *TrainJob {
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
	return cloneJob(j), nil
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
	if j.State != TrainSucceeded {
		return nil, fmt.Errorf("%w: training job %s is %s", ErrNotFound, id, j.State)
	}
	return s.db.Bundle(j.Bundle)
}
