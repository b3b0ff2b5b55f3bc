package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
	"github.com/trit-iot/trit/training/retrain"
)

// A retraining job (api.TrainRequest.Retrain) is a training job, queued,
// run, cancelled and kept as train.go says, whose run is retrain.Run: the
// active bundle of the model (the request's, or its latest release), its
// original training data (the request's dataset, read as the bundle's
// training file was unless the request says how), and the model's
// labelled windows in the store (windows.go). Its challenger is stored
// as an unsigned bundle only when it beats the active model on the newest
// labelled windows; either way the job records the comparison.

// retrain runs one retraining job.
func (s *Service) retrain(ctx context.Context, req api.TrainRequest, path, standard string, isStandard bool, format data.Format, cancelled func() bool) (*api.TrainJob, error) {
	hash := req.Active
	if hash == "" {
		m, err := s.reg.Model(req.ModelID)
		if err != nil {
			return nil, err
		}
		hash = m.Releases[m.Latest]
	}
	info, raw, err := s.reg.Bundle(hash)
	if err != nil {
		return nil, err
	}
	if info.ModelID != req.ModelID {
		return nil, fault.BadRequest("bundle %s is model %s, not %s", hash[:12], info.ModelID, req.ModelID)
	}
	br, err := bundle.Inspect(raw)
	if err != nil {
		return nil, fmt.Errorf("fleet: the active bundle %s: %w", hash[:12], err)
	}
	active, err := inference.New(br.Bundle.Spec)
	if err != nil {
		return nil, fmt.Errorf("fleet: the active bundle %s: %w", hash[:12], err)
	}
	orig, err := s.retrainOriginal(req, path, standard, isStandard, format, active, br.Bundle.Info[bundle.InfoRead])
	if err != nil {
		return nil, err
	}
	yes := true
	list, err := s.Windows(api.WindowQuery{Model: req.ModelID, Labelled: &yes})
	if err != nil {
		return nil, err
	}
	var ws []retrain.Window
	skipped := 0
	want := active.Spec().Features
	for _, w := range list.Windows {
		if len(w.X) != active.NumFeatures() || (want != nil && !slices.Equal(w.Features, want)) || !slices.Contains(active.Classes(), w.Label) {
			skipped++
			continue
		}
		ws = append(ws, retrain.Window{Time: w.Time.UnixMilli(), X: w.X, Label: w.Label})
	}
	out, err := retrain.Run(ctx, active, orig, ws, &retrain.Config{Train: &training.Config{Budget: req.Budget, P: req.P, Sigma: req.Sigma, C: req.C, Seed: 1}})
	if err != nil {
		if errors.Is(err, retrain.ErrInput) {
			return nil, fault.BadRequest("%v (%d labelled windows of model %s, %d of other features skipped)", err, len(ws), req.ModelID, skipped)
		}
		return nil, err
	}
	job := &api.TrainJob{Retrain: &api.RetrainResult{Active: hash, ActiveRelease: info.Release, Windows: out.Windows, Skipped: skipped,
		Newest: out.Newest, OriginalRows: out.OriginalRows, TrainedRows: out.TrainedRows, MaxCopies: out.MaxCopies,
		ActiveScores: api.RetrainScores(out.Active), Challenger: api.RetrainScores(out.Challenger), Better: out.Better, Why: out.Why, Refitted: out.Refitted, RefitError: out.RefitError},
		TrainSeconds: out.Seconds, AccuracyOn: "the newest labelled windows"}
	sc := out.Challenger
	job.Accuracy, job.Balanced = sc.Accuracy, sc.Balanced
	if !out.Better {
		return job, nil
	}
	if req.Release == 0 {
		req.Release = info.Release + 1
	}
	res := out.Model
	b, err := res.Bundle(orig, training.BundleMeta{ModelID: req.ModelID, Release: req.Release, Created: s.opt.Now(),
		Hardware: req.Hardware, MinAgent: req.MinAgent})
	if err != nil {
		return nil, err
	}
	if cancelled() {
		return nil, errors.New("cancelled")
	}
	if job.Bundle, err = s.db.PutBundle(b); err != nil {
		return nil, err
	}
	st := api.Structure(res.Structure)
	job.Bytes, job.Structure, job.Sigma, job.C, job.Validation, job.NonZero = len(b), &st, res.Sigma, res.C, res.Validation, res.NonZero
	return job, nil
}

// retrainOriginal loads a retraining's original data with the active
// model's features and classes.
func (s *Service) retrainOriginal(req api.TrainRequest, path, standard string, isStandard bool, format data.Format, active *inference.Model, readSpec string) (*data.Dataset, error) {
	var ds *data.Dataset
	var err error
	switch {
	case isStandard:
		ds, _, err = data.LoadStandard(s.trainer.dir, standard)
	case readSpec != "" && req.Format == "" && req.LabelColumn == 0 && req.LabelColumnName == "":
		// Read as the active model's training file was.
		var rs *data.ReadSpec
		if rs, err = data.ParseReadSpec(readSpec); err == nil {
			if rs.Features == nil {
				rs.Features = active.Spec().Features
			}
			ds, err = data.Load(path, rs.Options())
		}
	default:
		ds, err = data.Load(path, &data.Options{Format: format, Features: active.Spec().Features,
			LabelColumn: data.Column{Index: req.LabelColumn, Name: req.LabelColumnName}})
	}
	if err != nil {
		return nil, err
	}
	if err := ds.Relabel(active.Classes()); err != nil {
		return nil, fault.BadRequest("the original data: %v", err)
	}
	return ds, nil
}
