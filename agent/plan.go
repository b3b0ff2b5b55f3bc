package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trit-iot/trit/inference"
	"github.com/trit-iot/trit/wire"
)

// planFetchTimeout bounds how long a dry run waits for its bundle.
const planFetchTimeout = 20 * time.Second

// plan scores the candidate bundle hash on the window history without
// activating or storing it: how many of the windows the active model
// classified would it have classified differently.
func (a *Agent) plan(ctx context.Context, hash string) (*wire.Plan, error) {
	if a.loop.history == nil {
		return nil, errors.New("this device keeps no window history (models.history_max_bytes = 0)")
	}
	set := a.loop.history.set()
	if len(set.Samples) == 0 {
		return nil, errors.New("no windows in the history yet")
	}
	data, err := a.db.Bundle(hash)
	if err != nil {
		if data, err = a.fetchBundle(ctx, hash); err != nil {
			return nil, err
		}
	}
	// Verified as for an install; Rollback skips the release check, which
	// guards activation, not scoring.
	b, _, jerr := a.inst.check(&wire.Command{Bundle: hash, Rollback: true}, data)
	if jerr != nil {
		return nil, fmt.Errorf("%s: %v", jerr.code, jerr.err)
	}
	m, err := inference.New(b.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", wire.CodeBundleInvalid, err)
	}
	if names := featureNames(&running{model: m}); !slices.Equal(names, set.Features) {
		return nil, fmt.Errorf("the candidate's features %v are not the history's %v", names, set.Features)
	}
	p := &wire.Plan{Bundle: hash, Transitions: map[string]uint64{}}
	for _, s := range set.Samples {
		c, err := m.Predict(nil, s.X)
		if err != nil {
			continue
		}
		p.Windows++
		if cand := m.Classes()[c]; cand != s.Class {
			p.Changed++
			if k := s.Class + "→" + cand; len(p.Transitions) < wire.MaxShadowClasses*wire.MaxShadowClasses || p.Transitions[k] > 0 {
				p.Transitions[k]++
			}
		}
	}
	if len(p.Transitions) == 0 {
		p.Transitions = nil
	}
	return p, nil
}

// fetchBundle receives a bundle from its retained topic, for a dry run.
func (a *Agent) fetchBundle(ctx context.Context, hash string) ([]byte, error) {
	c := make(chan []byte, 1)
	a.fetchMu.Lock()
	a.fetches[hash] = c
	a.fetchMu.Unlock()
	defer func() {
		a.fetchMu.Lock()
		delete(a.fetches, hash)
		a.fetchMu.Unlock()
	}()
	topic := a.topics.Bundle(hash)
	a.sess.want(ctx, topic)
	defer a.sess.unwant(context.Background(), topic)
	t := time.NewTimer(planFetchTimeout)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("%s: bundle not received on %s within %v", wire.CodeDownloadTimeout, topic, planFetchTimeout)
	case data := <-c:
		return data, nil
	}
}
