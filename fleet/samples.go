package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/wire"
)

// ErrNoResponse reports a device that did not answer a request in time
// (offline, or busy): an HTTP 504.
var ErrNoResponse = errors.New("fleet: no response from the device")

// DefaultRequestWait is how long Samples waits for the device by default.
const DefaultRequestWait = 20 * time.Second

// requests matches devices' responses to the requests waiting for them.
type requests struct {
	mu      sync.Mutex
	next    uint64
	pending map[string]chan *wire.Response // request ID -> its waiter
}

func (q *requests) add(device string) (string, chan *wire.Response) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = map[string]chan *wire.Response{}
	}
	q.next++
	id := "req-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(q.next, 10)
	c := make(chan *wire.Response, 1)
	q.pending[id] = c
	return id, c
}

func (q *requests) remove(id string) {
	q.mu.Lock()
	delete(q.pending, id)
	q.mu.Unlock()
}

// deliver hands a response to its waiter; a response nobody waits for
// (late, or forged) is dropped.
func (q *requests) deliver(device string, r *wire.Response) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, ok := q.pending[r.ID]
	if !ok || r.Device != device {
		return false
	}
	delete(q.pending, r.ID)
	c <- r
	return true
}

// Samples asks a device for its ring of windows kept for retraining,
// waits up to wait (0: DefaultRequestWait) for the answer, and stores the
// windows it had not stored yet for labelling (windows.go).
func (s *Service) Samples(ctx context.Context, device string, wait time.Duration) (*wire.SampleSet, error) {
	if err := wire.CheckID(device); err != nil {
		return nil, fmt.Errorf("%w: device ID: %v", fault.ErrBadRequest, err)
	}
	if _, err := inventory.DeviceByID(s.db, device); err != nil {
		return nil, err
	}
	r, err := s.request(ctx, &wire.Request{Device: device, Kind: wire.RequestSamples}, wait)
	if err != nil {
		return nil, err
	}
	if r.Error != "" {
		return nil, fmt.Errorf("%w: %s: %s", fault.ErrNotFound, device, r.Error)
	}
	if r.Samples == nil {
		return nil, fmt.Errorf("%w: %s sent no samples", fault.ErrNotFound, device)
	}
	// Stored, so that they can be labelled (windows.go).
	added, skipped, err := s.StoreWindows(device, r.Samples)
	if err != nil {
		return nil, fmt.Errorf("fleet: storing %s's windows for labelling: %w", device, err)
	}
	if skipped > 0 {
		s.log.Warn("windows not stored: the store holds its bound of windows, all labelled", "device", device, "skipped", skipped, "bound", windowBound)
	}
	s.log.Info("samples stored for labelling", "device", device, "new", added, "sent", len(r.Samples.Samples))
	return r.Samples, nil
}

// request sends a device the signed request req (its device, kind and
// kind's fields set; the rest is filled in) and waits up to wait (0:
// DefaultRequestWait) for its response.
func (s *Service) request(ctx context.Context, req *wire.Request, wait time.Duration) (*wire.Response, error) {
	if wait <= 0 {
		wait = DefaultRequestWait
	}
	device := req.Device
	id, c := s.reqs.add(device)
	defer s.reqs.remove(id)
	now := s.opt.Now()
	req.Fleet, req.ID, req.IssuedAt, req.ExpiresAt = s.topics.Fleet(), id, now.Unix(), now.Add(wait).Unix()+1
	if err := req.Sign(s.cmdKey); err != nil {
		return nil, err
	}
	raw, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	if err := s.pub.Publish(s.topics.Requests(device), 1, false, raw); err != nil {
		return nil, fmt.Errorf("fleet: request to %s: %w", device, err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("%w: %s did not answer within %v (is it online?)", ErrNoResponse, device, wait)
	case r := <-c:
		return r, nil
	}
}

// maxPlanDevices bounds the devices of one plan (one request each).
const maxPlanDevices = 1000

// Plan publishes the candidate bundle and asks every device of
// req to score it on its history, in parallel, without activating it.
func (s *Service) Plan(ctx context.Context, req api.PlanRequest) (*api.PlanResult, error) {
	if err := wire.CheckHash(req.Bundle); err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", fault.ErrBadRequest, err)
	}
	if _, _, err := s.reg.Bundle(req.Bundle); err != nil {
		return nil, err
	}
	devices := req.Devices
	if len(devices) == 0 {
		if len(req.Selector) == 0 {
			return nil, fault.BadRequest("give device IDs or a label selector")
		}
		var err error
		if devices, err = inventory.Select(s.db, req.Selector); err != nil {
			return nil, err
		}
	}
	if len(devices) == 0 || len(devices) > maxPlanDevices {
		return nil, fault.BadRequest("%d devices, want 1 … %d", len(devices), maxPlanDevices)
	}
	if req.Wait < 0 || req.Wait > 5*time.Minute {
		return nil, fault.BadRequest("wait %v: at most 5m", req.Wait)
	}
	if err := s.PublishBundle(req.Bundle); err != nil { // every time, as CreateRollout does
		return nil, err
	}
	res := &api.PlanResult{Bundle: req.Bundle, Devices: make([]api.DevicePlan, len(devices))}
	var wg sync.WaitGroup
	for i, id := range devices {
		res.Devices[i].Device = id
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.request(ctx, &wire.Request{Device: id, Kind: wire.RequestPlan, Bundle: req.Bundle}, req.Wait)
			switch {
			case err != nil:
				res.Devices[i].Error = err.Error()
			case r.Error != "":
				res.Devices[i].Error = r.Error
			case r.Plan == nil || r.Plan.Bundle != req.Bundle:
				res.Devices[i].Error = "the device answered without a plan for this bundle"
			default:
				res.Devices[i].Plan = r.Plan
			}
		}()
	}
	wg.Wait()
	for _, d := range res.Devices {
		if d.Plan != nil {
			res.Answered++
			res.Windows += d.Plan.Windows
			res.Changed += d.Plan.Changed
		}
	}
	return res, nil
}
