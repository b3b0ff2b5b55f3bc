package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/wire"
)

// Training on the fleet: `tritctl remote-train` asks trit-fleet to train a
// model on a dataset stored on the fleet server (under the configured data
// directory; a request can never name a file outside it), waits, and
// downloads the result as an unsigned bundle, which the operator signs with
// the offline release key and publishes. The fleet never holds a release
// key, so a trained model cannot reach a device without that signature.
//
// Jobs are kept in the fleet's store (collection fleet_train_jobs), so
// every replica on one database sees every job and each job is run by
// one replica: a replica takes the oldest queued job in one serialised
// Update (store.Tx), marking it running under its own runner ID, so two
// replicas never take the same job. A replica runs one job at a time, in
// the background; it looks for a queued job when one is asked of it, when
// its run ends, and at every Tick (a job asked of another replica). At
// most maxActiveTrainJobs wait or run at once across the replicas (more is
// ErrTrainingBusy). At most MaxTrainJobs are kept, the oldest finished
// ones pruned first (the bundles they produced stay in the store). A
// request's inputs are bounded before anything runs. Cancelling a queued
// job marks it cancelled, so no replica takes it; cancelling a running
// one marks it cancelled at once, and its runner stops the training run
// (training.TrainContext) between two fits: at once on the same replica,
// within trainBeat on another. The runner writes a sign of life every
// trainBeat; a running job without one for trainOrphanAfter (its replica
// died or restarted) is marked failed, never run a second time. Every
// replica must see the same training data directory.

// Bounds on training jobs and their inputs.
const (
	MaxTrainJobs       = 100 // jobs remembered; the oldest finished ones are pruned
	maxActiveTrainJobs = 4   // jobs queued or running at once
	maxLabelColumn     = 1 << 16
	maxTrainFeatures   = 1 << 28 // a dataset's cap on values (training/data)
	maxLabelName       = 256     // a header name
	maxDatasetName     = 1024
	maxTrainBudget     = 1 << 20 // bytes: what max_bundle_bytes allows at most
)

// A running job's sign of life: written every trainBeat, and a job
// without one for trainOrphanAfter is failed (variables for tests).
var (
	trainBeat        = time.Second
	trainOrphanAfter = 30 * time.Second
)

// ErrTrainingBusy means too many training jobs are queued or running.
var ErrTrainingBusy = errors.New("fleet: too many training jobs queued or running; wait for one to finish or cancel one")

// trainer is this replica's side of the jobs in the store: whether it is
// running one, and how to stop it.
type trainer struct {
	dir    string // training data directory; "" disables training
	runner string // this process among the replicas: replica name and a random part
	mu     sync.Mutex
	active bool               // this replica is taking or running a job
	again  bool               // a look for a queued job was asked for while active
	id     string             // the job it runs
	cancel context.CancelFunc // stops that job's training run
	// started, if set, is told of every run this replica starts (tests).
	started func(id string)
}

// trainRecord is a job as stored: key trainKey(Seq) in FleetTrainJobs;
// the key trainNextKey holds the last sequence given (JSON number).
type trainRecord struct {
	Seq    uint64       `json:"seq"`
	Job    api.TrainJob `json:"job"`
	Runner string       `json:"runner,omitempty"` // who runs it, while running
	Beat   time.Time    `json:"beat,omitzero"`    // the runner's latest sign of life
}

const (
	trainKeyPrefix = "job/"
	trainNextKey   = "next"
)

func trainKey(seq uint64) string { return fmt.Sprintf("%s%020d", trainKeyPrefix, seq) }

// trainSeq returns the sequence of job ID id (CheckTrainID-valid).
func trainSeq(id string) (uint64, error) {
	if err := CheckTrainID(id); err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimPrefix(id, "train-"), 10, 64)
}

// loadTrainJobs returns every stored job that decodes, in sequence
// order, and the job records that do not (damaged.go): one damaged job
// is skipped and named, never the end of the list, of queueing or of
// taking the other jobs. A damaged job is neither run nor pruned.
func loadTrainJobs(tx store.Tx) ([]trainRecord, []api.Damaged, error) {
	var recs []trainRecord
	bad, err := fault.DecodeAll(only(tx.ForEach, trainKeyPrefix), store.FleetTrainJobs, func(_ string, r *trainRecord) { recs = append(recs, *r) })
	if err != nil {
		return nil, nil, err
	}
	return recs, bad, nil
}

// lastTrainSeq returns the last job sequence given. A damaged counter is
// ErrDamaged naming it: the next sequence is not guessed at (a pruned
// job's ID could be given again).
func lastTrainSeq(tx store.Tx) (uint64, error) {
	var next uint64
	_, err := tx.Get(store.FleetTrainJobs, trainNextKey, &next)
	if fault.IsDamaged(err) {
		return 0, fault.Damaged(store.FleetTrainJobs, trainNextKey, err)
	}
	return next, err
}

// getTrainJob reads job id in tx: ErrNotFound if there is none, ErrDamaged
// if its record does not decode.
func getTrainJob(tx store.Tx, id string) (trainRecord, error) {
	var r trainRecord
	seq, err := trainSeq(id)
	if err != nil {
		return r, fmt.Errorf("%w: training job %s", fault.ErrNotFound, fault.Clip(id, 32))
	}
	ok, err := tx.Get(store.FleetTrainJobs, trainKey(seq), &r)
	switch {
	case fault.IsDamaged(err):
		err = fault.Damaged(store.FleetTrainJobs, trainKey(seq), err)
	case err == nil && !ok:
		err = fmt.Errorf("%w: training job %s", fault.ErrNotFound, id)
	}
	return r, err
}

// ErrTrainingDisabled means the fleet has no training data directory.
var ErrTrainingDisabled = errors.New("fleet: training is not configured (training.data_dir)")

// CheckTrainID accepts a job ID as the trainer makes them: train-N.
func CheckTrainID(id string) error {
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
		return "", fault.BadRequest("dataset %q: give a path relative to the fleet's training data directory", fault.Clip(name, 64))
	}
	path := filepath.Join(tr.dir, clean)
	if err := tr.confined(path); err != nil {
		return "", err
	}
	return path, nil
}

// confined refuses a dataset path that leaves the data directory through
// a symbolic link (the directory itself may be one). A path that does not
// resolve (no such file) passes: loading it says so.
func (tr *trainer) confined(path string) error {
	root, err := filepath.EvalSymlinks(tr.dir)
	if err != nil {
		return fmt.Errorf("fleet: training.data_dir %s: %w", tr.dir, err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fault.BadRequest("dataset %q: a symbolic link leads out of the fleet's training data directory; only files inside it can be read", fault.Clip(strings.TrimPrefix(path, tr.dir+"/"), 64))
	}
	return nil
}

// datasetError is a dataset that could not be read. Its message, which
// a job keeps for every role that may read jobs, says where (file, line,
// column number) but not what the file holds: parse errors quote the
// offending text, which may be anything the file holds. The whole error
// goes to trit-fleet's log (Full).
type datasetError struct {
	name string // the dataset as the request names it
	err  error
}

func (e *datasetError) Error() string {
	var pe *data.ParseError
	switch {
	case errors.Is(e.err, fault.ErrBadRequest): // ours: quotes nothing of the file
		return strings.TrimPrefix(e.err.Error(), "fleet: ")
	case errors.Is(e.err, fs.ErrNotExist):
		return "dataset " + fault.Clip(e.name, 128) + ": no such file in the fleet's training data directory"
	case errors.As(e.err, &pe):
		file, line, col, _ := pe.Location()
		where := file
		if line > 0 {
			where = fmt.Sprintf("%s:%d", file, line)
		}
		if col > 0 {
			where += fmt.Sprintf(": column %d", col)
		}
		return where + ": the dataset cannot be read there (trit-fleet's log has the details: they quote the file)"
	}
	return "dataset " + fault.Clip(e.name, 128) + ": cannot be read (trit-fleet's log has the details: they may quote the file)"
}

// jobError is what a failed job keeps of err: a dataset's parse error
// (from any loader: training, retraining) without the file's text.
func jobError(err error) string {
	if _, ok := errors.AsType[*data.ParseError](err); ok {
		if _, wrapped := errors.AsType[*datasetError](err); !wrapped {
			err = &datasetError{err: err}
		}
	}
	return err.Error()
}

func (e *datasetError) Unwrap() error { return e.err }

// fullError is err's whole text, a datasetError's included, for the log.
func fullError(err error) string {
	if de, ok := errors.AsType[*datasetError](err); ok {
		return de.err.Error()
	}
	return err.Error()
}

// checkTrainRequest bounds every input of a request, so a job never starts
// on values the trainer or the bundle format would refuse later, or that
// would take the fleet server's memory (p is what a gateway can run).
func checkTrainRequest(req *api.TrainRequest) error {
	switch {
	case req.ModelID == "" || (req.Release == 0 && !req.Retrain):
		return fault.BadRequest("model_id and a release >= 1 are required")
	case req.Active != "" && !req.Retrain:
		return fault.BadRequest("active names the bundle a retraining challenges: give it with retrain only")
	case len(req.ModelID) > bundle.MaxModelID || !utf8.ValidString(req.ModelID) || strings.ContainsFunc(req.ModelID, unicode.IsControl):
		return fault.BadRequest("model_id %q: 1..%d bytes of text without control characters", fault.Clip(req.ModelID, 64), bundle.MaxModelID)
	case req.P < 0 || req.P > inference.MaxP:
		return fault.BadRequest("p = %d: want 1..%d random features (0: fill the budget)", req.P, inference.MaxP)
	case req.Budget != 0 && (req.Budget < 512 || req.Budget > maxTrainBudget):
		return fault.BadRequest("budget = %d bytes: want 512..%d (0: %d)", req.Budget, maxTrainBudget, training.DefaultBudget)
	case !(req.Sigma >= 0) || math.IsInf(req.Sigma, 0):
		return fault.BadRequest("sigma = %g: want a positive number (0: search)", req.Sigma)
	case !(req.C >= 0) || math.IsInf(req.C, 0):
		return fault.BadRequest("c = %g: want a positive number (0: search)", req.C)
	case req.LabelColumn < -1 || req.LabelColumn > maxLabelColumn:
		return fault.BadRequest("label_column = %d: want -1 (the last) or 0..%d", req.LabelColumn, maxLabelColumn)
	case req.Features < 0 || req.Features > maxTrainFeatures:
		return fault.BadRequest("features = %d: want 1..%d (0: the largest index in the file)", req.Features, maxTrainFeatures)
	case req.LabelColumnName != "" && req.LabelColumn != 0:
		return fault.BadRequest("label_column and label_column_name: give the label column by number or by name, not both")
	case len(req.LabelColumnName) > maxLabelName || !utf8.ValidString(req.LabelColumnName) || strings.ContainsFunc(req.LabelColumnName, unicode.IsControl):
		return fault.BadRequest("label_column_name: at most %d bytes of text without control characters", maxLabelName)
	case len(req.Hardware) > bundle.MaxLabel || !utf8.ValidString(req.Hardware) || strings.ContainsFunc(req.Hardware, unicode.IsControl):
		return fault.BadRequest("hardware: at most %d bytes of text without control characters", bundle.MaxLabel)
	case len(req.Dataset) > maxDatasetName:
		return fault.BadRequest("dataset: %d bytes, at most %d", len(req.Dataset), maxDatasetName)
	}
	if req.Active != "" {
		if err := wire.CheckHash(req.Active); err != nil {
			return fault.BadRequest("active: %v", err)
		}
	}
	if err := (bundle.Compat{MinAgentVersion: req.MinAgent}).CheckAgent("0.0.0"); errors.Is(err, bundle.ErrInvalid) {
		return fault.BadRequest("min_agent_version %q: want major.minor.patch", fault.Clip(req.MinAgent, 32))
	}
	return nil
}

// trainInputs checks a request and resolves its dataset and format.
func (s *Service) trainInputs(req *api.TrainRequest) (path, standard string, isStandard bool, format data.Format, err error) {
	if req.MinAgent == "" {
		req.MinAgent = bundle.DefaultMinAgentVersion
	}
	if err := checkTrainRequest(req); err != nil {
		return "", "", false, 0, err
	}
	// The formats and names of tritctl train --format.
	if format, err = data.ParseFormat(req.Format); err != nil {
		return "", "", false, 0, fault.BadRequest("format %q: want auto, csv (or dense), arff, libsvm or idx", fault.Clip(req.Format, 32))
	}
	standard, isStandard = strings.CutPrefix(req.Dataset, "standard:")
	if !isStandard {
		if path, err = s.trainer.datasetPath(req.Dataset); err != nil {
			return "", "", false, 0, err
		}
	}
	return path, standard, isStandard, format, nil
}

// StartTraining checks a request and queues a job in the store; this
// replica takes it at once if it runs no job and none was queued before.
func (s *Service) StartTraining(req api.TrainRequest) (*api.TrainJob, error) {
	tr := s.trainer
	if tr == nil || tr.dir == "" {
		return nil, ErrTrainingDisabled
	}
	if _, _, _, _, err := s.trainInputs(&req); err != nil {
		return nil, err
	}
	now := s.opt.Now().UTC()
	var id string
	err := s.db.Update(func(tx store.Tx) error {
		recs, _, err := loadTrainJobs(tx)
		if err != nil {
			return err
		}
		next, err := lastTrainSeq(tx)
		if err != nil {
			return err
		}
		active := 0
		for _, r := range recs {
			active += btoi(!r.Job.State.Done())
		}
		if active >= maxActiveTrainJobs {
			return fmt.Errorf("%w (%d)", ErrTrainingBusy, active)
		}
		if err := pruneTrainJobs(tx, recs); err != nil {
			return err
		}
		next++
		id = fmt.Sprintf("train-%d", next)
		rec := trainRecord{Seq: next, Job: api.TrainJob{ID: id, Request: req, State: api.TrainQueued, Started: now}}
		if err := tx.Put(store.FleetTrainJobs, trainKey(next), &rec); err != nil {
			return err
		}
		return tx.Put(store.FleetTrainJobs, trainNextKey, next)
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("training queued", "job", id, "dataset", fault.Clip(req.Dataset, fault.MaxLogField), "model", req.ModelID, "release", req.Release)
	s.takeTraining()
	return s.TrainingJob(id)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pruneTrainJobs deletes the oldest finished jobs of recs while there are
// MaxTrainJobs or more.
func pruneTrainJobs(tx store.Tx, recs []trainRecord) error {
	gone := map[uint64]bool{}
	for len(recs)-len(gone) >= MaxTrainJobs {
		var oldest *trainRecord
		for i := range recs {
			r := &recs[i]
			if !gone[r.Seq] && r.Job.State.Done() && (oldest == nil || r.Job.Finished.Before(oldest.Job.Finished)) {
				oldest = r
			}
		}
		if oldest == nil {
			return nil // cannot happen: at most maxActiveTrainJobs are not done
		}
		gone[oldest.Seq] = true
		if err := tx.Delete(store.FleetTrainJobs, trainKey(oldest.Seq)); err != nil {
			return err
		}
	}
	return nil
}

// takeTraining takes the oldest queued job of the store and starts its
// run, unless this replica runs one already; on the way it fails running
// jobs whose runner stopped giving signs of life.
func (s *Service) takeTraining() {
	tr := s.trainer
	if tr == nil || tr.dir == "" {
		return
	}
	tr.mu.Lock()
	if tr.active {
		tr.again = true // the one taking may have looked before this job was queued
		tr.mu.Unlock()
		return
	}
	tr.active, tr.again = true, false
	tr.mu.Unlock()
	for s.takeOne() {
	}
}

// takeOne is one look of takeTraining (tr.active held): it reports
// whether to look again (nothing taken, but a look was asked for
// meanwhile).
func (s *Service) takeOne() bool {
	tr := s.trainer
	now := s.opt.Now().UTC()
	var took *trainRecord
	// Most looks find nothing: a read, not a write (which would take every
	// replica's write lock, or a bbolt fsync, at every Tick).
	work := false
	err := s.db.View(func(tx store.Tx) error {
		recs, _, err := loadTrainJobs(tx)
		for _, r := range recs {
			work = work || r.Job.State == api.TrainQueued ||
				(r.Job.State == api.TrainRunning && r.Runner != tr.runner && now.Sub(r.Beat) > trainOrphanAfter)
		}
		return err
	})
	if err == nil && work {
		err = s.db.Update(func(tx store.Tx) error {
			took = nil
			recs, _, err := loadTrainJobs(tx)
			if err != nil {
				return err
			}
			for i := range recs {
				r := &recs[i]
				switch {
				case r.Job.State == api.TrainRunning && r.Runner != tr.runner && now.Sub(r.Beat) > trainOrphanAfter:
					r.Job.State, r.Job.Finished = api.TrainFailed, now
					r.Job.Error = fmt.Sprintf("the replica running it (%s) stopped; ask again", fault.Clip(r.Runner, 64))
					r.Runner = ""
					s.log.Warn("training job failed: its replica stopped", "job", r.Job.ID)
				case r.Job.State == api.TrainQueued && took == nil:
					r.Job.State, r.Runner, r.Beat = api.TrainRunning, tr.runner, now
					took = r
				default:
					continue
				}
				if err := tx.Put(store.FleetTrainJobs, trainKey(r.Seq), r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil || took == nil {
		if err != nil {
			s.log.Error("training: taking a queued job failed", "err", err)
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.again && err == nil {
			tr.again = false
			return true
		}
		tr.active = false
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr.mu.Lock()
	tr.id, tr.cancel = took.Job.ID, cancel
	started := tr.started
	tr.mu.Unlock()
	if started != nil {
		started(took.Job.ID)
	}
	go s.runJob(ctx, cancel, took.Job.ID, took.Job.Request)
	return false
}

// runJob trains one job taken by this replica, writing signs of life
// meanwhile, then takes the next.
func (s *Service) runJob(ctx context.Context, cancel context.CancelFunc, id string, req api.TrainRequest) {
	tr := s.trainer
	s.log.Info("training started", "job", id, "replica", s.opt.Replica)
	stop := make(chan struct{})
	beats := make(chan struct{})
	go func() { // signs of life; a cancel made through another replica
		defer close(beats)
		t := time.NewTicker(trainBeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			err := s.db.Update(func(tx store.Tx) error {
				r, err := getTrainJob(tx, id)
				if err != nil || r.Job.State != api.TrainRunning || r.Runner != tr.runner {
					cancel()
					return err
				}
				r.Beat = s.opt.Now().UTC()
				return tx.Put(store.FleetTrainJobs, trainKey(r.Seq), &r)
			})
			if err != nil {
				s.log.Warn("training: writing a sign of life failed", "job", id, "err", err)
			}
		}
	}()
	cancelled := func() bool {
		var r trainRecord
		err := s.db.View(func(tx store.Tx) error { var err error; r, err = getTrainJob(tx, id); return err })
		return err != nil || r.Job.State != api.TrainRunning || r.Runner != tr.runner
	}
	var result *api.TrainJob
	path, standard, isStd, format, err := s.trainInputs(&req)
	if err == nil {
		result, err = s.train(ctx, req, path, standard, isStd, format, cancelled)
	}
	close(stop)
	<-beats
	cancel()
	uerr := s.db.Update(func(tx store.Tx) error {
		r, gerr := getTrainJob(tx, id)
		if gerr != nil {
			return gerr
		}
		now := s.opt.Now().UTC()
		switch {
		case r.Job.State != api.TrainRunning || r.Runner != tr.runner:
			s.log.Info("cancelled training run ended; its result was discarded", "job", id)
			return nil
		case err != nil:
			r.Job.Finished = now
			r.Job.State, r.Job.Error = api.TrainFailed, jobError(err)
			s.log.Warn("training failed", "job", id, "err", fault.Clip(fullError(err), fault.MaxLogField))
		default:
			result.ID, result.Request, result.Started, result.Finished, result.State = id, r.Job.Request, r.Job.Started, now, api.TrainSucceeded
			r.Job = *result
			s.log.Info("training finished", "job", id, "bundle", r.Job.Bundle, "accuracy", r.Job.Accuracy, "on", r.Job.AccuracyOn, "bytes", r.Job.Bytes)
		}
		r.Runner = ""
		return tx.Put(store.FleetTrainJobs, trainKey(r.Seq), &r)
	})
	if uerr != nil {
		s.log.Error("training: recording the job's outcome failed", "job", id, "err", uerr)
	}
	tr.mu.Lock()
	tr.active, tr.id, tr.cancel = false, "", nil
	tr.mu.Unlock()
	s.takeTraining()
}

// CancelTraining cancels a queued or running job (see the top of this
// file for what that means for a running one).
func (s *Service) CancelTraining(id string) (*api.TrainJob, error) {
	tr := s.trainer
	if tr == nil || tr.dir == "" {
		return nil, ErrTrainingDisabled
	}
	var j api.TrainJob
	err := s.db.Update(func(tx store.Tx) error {
		r, err := getTrainJob(tx, id)
		if err != nil {
			return err
		}
		if r.Job.State.Done() {
			return fmt.Errorf("%w: training job %s already %s", ErrTrainingDone, id, r.Job.State)
		}
		r.Job.State, r.Job.Error, r.Job.Finished, r.Runner = api.TrainCancelled, "cancelled by the operator", s.opt.Now().UTC(), ""
		j = r.Job
		return tx.Put(store.FleetTrainJobs, trainKey(r.Seq), &r)
	})
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	if tr.id == id && tr.cancel != nil {
		tr.cancel()
	}
	tr.mu.Unlock()
	s.log.Info("training cancelled", "job", id)
	return &j, nil
}

// ErrTrainingDone means a finished job cannot be cancelled.
var ErrTrainingDone = errors.New("fleet: training job already finished")

// train runs one job and stores its unsigned bundle, unless the job was
// cancelled meanwhile.
func (s *Service) train(ctx context.Context, req api.TrainRequest, path, standard string, isStandard bool, format data.Format, cancelled func() bool) (*api.TrainJob, error) {
	if req.Retrain {
		return s.retrain(ctx, req, path, standard, isStandard, format, cancelled)
	}
	var trainSet, testSet *data.Dataset
	var err error
	if isStandard {
		trainSet, testSet, err = data.LoadStandard(s.trainer.dir, standard)
	} else if err = s.trainer.confined(path); err == nil { // again: the directory may have changed since the request
		trainSet, err = data.Load(path, &data.Options{Format: format, NumFeatures: req.Features, LabelColumn: data.Column{Index: req.LabelColumn, Name: req.LabelColumnName}})
	}
	if err != nil {
		return nil, &datasetError{name: req.Dataset, err: err}
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
	return &api.TrainJob{Bundle: hash, Bytes: len(raw), Structure: &st, Sigma: res.Sigma, C: res.C, Validation: res.Validation,
		Accuracy: ev.Accuracy, Balanced: ev.Balanced, PerClass: perClass, AccuracyOn: on,
		NonZero: res.NonZero, TrainSeconds: res.TrainSeconds}, nil
}

// TrainingJob returns a job by ID.
func (s *Service) TrainingJob(id string) (*api.TrainJob, error) {
	if s.trainer == nil {
		return nil, ErrTrainingDisabled
	}
	var r trainRecord
	err := s.db.View(func(tx store.Tx) error { var err error; r, err = getTrainJob(tx, id); return err })
	if err != nil {
		return nil, err
	}
	return &r.Job, nil
}

// TrainingJobs returns every job, newest first, then an entry per
// damaged job record with its ID and Damaged set.
func (s *Service) TrainingJobs() []api.TrainJob {
	if s.trainer == nil {
		return nil
	}
	var recs []trainRecord
	var bad []api.Damaged
	if err := s.db.View(func(tx store.Tx) error { var err error; recs, bad, err = loadTrainJobs(tx); return err }); err != nil {
		s.log.Error("training: listing jobs failed", "err", err)
		return nil
	}
	out := make([]api.TrainJob, len(recs), len(recs)+len(bad))
	for i, r := range recs {
		out[len(recs)-1-i] = r.Job
	}
	for _, b := range bad {
		id := b.Key
		if seq, err := strconv.ParseUint(strings.TrimPrefix(b.Key, trainKeyPrefix), 10, 64); err == nil {
			id = fmt.Sprintf("train-%d", seq)
		}
		out = append(out, api.TrainJob{ID: id, Damaged: b.Error})
	}
	return out
}

// TrainedBundle returns the unsigned bundle a finished job produced.
func (s *Service) TrainedBundle(id string) ([]byte, error) {
	j, err := s.TrainingJob(id)
	if err != nil {
		return nil, err
	}
	if j.State != api.TrainSucceeded {
		return nil, fmt.Errorf("%w: training job %s is %s", fault.ErrNotFound, id, j.State)
	}
	if j.Bundle == "" && j.Retrain != nil {
		return nil, fmt.Errorf("%w: retraining job %s proposed no challenger: %s", fault.ErrNotFound, id, j.Retrain.Why)
	}
	return s.db.Bundle(j.Bundle)
}

// randomHex returns n random bytes in hex: a process's part of its runner
// ID, so a restarted replica of the same name does not take its previous
// life's jobs for its own.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}
