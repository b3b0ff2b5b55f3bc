package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/wire"
)

// Client is a typed client of trit-fleet's API, on one replica or several
// (NewClient).
type Client struct {
	urls  []string
	token string
	http  *http.Client

	mu   sync.Mutex
	next int // the replica to try first: the last that answered
}

// UserAgent is what Client sends as User-Agent, which the fleet's audit
// trail records; tritctl sets it to "tritctl/<version>".
var UserAgent = "trit-api-client"

// maxResponse bounds a response body (a backup is fetched otherwise).
const maxResponse = 64 << 20

// NewClient returns a client of the API at baseURL that sends token.
// baseURL may name several replicas, separated by commas: a request goes
// to the replica that last answered, and to the next one when that one
// cannot be reached (the connection refused, or no answer to a request
// that changes nothing) or answers 503 (its database is unavailable:
// nothing was done) — so an operator's command rides out a replica's or a
// database's failover.
func NewClient(baseURL, token string) *Client {
	var urls []string
	for _, u := range strings.Split(baseURL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		urls = []string{""}
	}
	return &Client{urls: urls, token: token, http: &http.Client{Timeout: 30 * time.Second}}
}

// Devices returns the inventory.
func (c *Client) Devices() ([]Device, error) {
	var ds []Device
	return ds, c.do("GET", "/v1/devices", nil, &ds)
}

// DeviceJSON returns a device's record as the service sent it, with every
// field the service has (also those this client does not know).
func (c *Client) DeviceJSON(id string) (json.RawMessage, error) {
	var raw json.RawMessage
	return raw, c.do("GET", "/v1/devices/"+url.PathEscape(id), nil, &raw)
}

// DeviceHealth returns a device's model health over time.
func (c *Client) DeviceHealth(id string) (*DeviceHealth, error) {
	var h DeviceHealth
	return &h, c.do("GET", "/v1/devices/"+url.PathEscape(id)+"/health", nil, &h)
}

// GroupHealth returns the model health over time of the devices selector
// matches, summed period by period.
func (c *Client) GroupHealth(selector map[string]string) (*GroupHealth, error) {
	pairs := make([]string, 0, len(selector))
	for k, v := range selector {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	var h GroupHealth
	return &h, c.do("GET", "/v1/health?"+url.Values{"selector": {strings.Join(pairs, ",")}}.Encode(), nil, &h)
}

// ForgetDevice deletes a device's inventory record.
func (c *Client) ForgetDevice(id string) error {
	return c.do("DELETE", "/v1/devices/"+url.PathEscape(id), nil, nil)
}

// ResetDevice makes a device's record take its next state.
func (c *Client) ResetDevice(id string) (*Device, error) {
	var d Device
	return &d, c.do("POST", "/v1/devices/"+url.PathEscape(id)+"/reset", struct{}{}, &d)
}

// AddBundle uploads a signed bundle to the registry.
func (c *Client) AddBundle(signed []byte) (*BundleInfo, error) {
	raw, err := c.send("POST", "/v1/bundles", "application/octet-stream", signed)
	if err != nil {
		return nil, err
	}
	var b BundleInfo
	return &b, decode(raw, &b)
}

// Bundles returns the registered bundles, newest release of each model
// first, with the devices running each.
func (c *Client) Bundles() ([]BundleEntry, error) {
	var bs []BundleEntry
	return bs, c.do("GET", "/v1/bundles", nil, &bs)
}

// Rollouts returns every rollout, newest first.
func (c *Client) Rollouts() ([]Rollout, error) {
	var rs []Rollout
	return rs, c.do("GET", "/v1/rollouts", nil, &rs)
}

// Rollout returns one rollout.
func (c *Client) Rollout(id string) (*Rollout, error) {
	var r Rollout
	return &r, c.do("GET", "/v1/rollouts/"+url.PathEscape(id), nil, &r)
}

// CreateRollout starts a rollout.
func (c *Client) CreateRollout(req *RolloutRequest) (*Rollout, error) {
	var r Rollout
	return &r, c.do("POST", "/v1/rollouts", req, &r)
}

// Control pauses, resumes or aborts a rollout (op is "pause", "resume" or
// "abort").
func (c *Client) Control(id, op, reason string) (*Rollout, error) {
	var r Rollout
	return &r, c.do("POST", "/v1/rollouts/"+url.PathEscape(id)+"/"+op, ControlRequest{Reason: reason}, &r)
}

// Approve approves a rollout past its first phase (the two-person rule).
func (c *Client) Approve(id string) (*Rollout, error) {
	var r Rollout
	return &r, c.do("POST", "/v1/rollouts/"+url.PathEscape(id)+"/approve", struct{}{}, &r)
}

// Rollback creates rollout newID, rolling rollout id's devices back.
func (c *Client) Rollback(id, newID string) (*Rollout, error) {
	return c.RollbackWith(id, RollbackRequest{ID: newID})
}

// RollbackWith is Rollback with the whole request (an emergency
// rollback).
func (c *Client) RollbackWith(id string, req RollbackRequest) (*Rollout, error) {
	var r Rollout
	return &r, c.do("POST", "/v1/rollouts/"+url.PathEscape(id)+"/rollback", req, &r)
}

// Train starts a training job.
func (c *Client) Train(req *TrainRequest) (*TrainJob, error) {
	var j TrainJob
	return &j, c.do("POST", "/v1/train", req, &j)
}

// TrainJob returns a training job.
func (c *Client) TrainJob(id string) (*TrainJob, error) {
	var j TrainJob
	return &j, c.do("GET", "/v1/train/"+url.PathEscape(id), nil, &j)
}

// CancelTraining cancels a queued or running training job.
func (c *Client) CancelTraining(id string) (*TrainJob, error) {
	var j TrainJob
	return &j, c.do("POST", "/v1/train/"+url.PathEscape(id)+"/cancel", struct{}{}, &j)
}

// TrainedBundle returns the unsigned bundle a training job produced.
func (c *Client) TrainedBundle(id string) ([]byte, error) {
	return c.send("GET", "/v1/train/"+url.PathEscape(id)+"/bundle", "", nil)
}

// do sends in (if not nil) as JSON and decodes a 200 response into out (if
// not nil).
func (c *Client) do(method, path string, in, out any) error {
	var body []byte
	contentType := ""
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
		contentType = "application/json"
	}
	raw, err := c.send(method, path, contentType, body)
	if err != nil || out == nil {
		return err
	}
	return decode(raw, out)
}

func decode(raw []byte, out any) error {
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("trit-fleet: unexpected response: %w", err)
	}
	return nil
}

// send makes a request and returns the body of a 200 response, or the
// service's error message. With several replicas it tries each at most
// once, from the last that answered, moving on when retrying is safe
// (retryable); its error then names every replica's failure.
func (c *Client) send(method, path, contentType string, body []byte) ([]byte, error) {
	c.mu.Lock()
	first := c.next
	c.mu.Unlock()
	var failures []string
	for i := range c.urls {
		k := (first + i) % len(c.urls)
		raw, err := c.sendTo(c.urls[k], method, path, contentType, body)
		if err == nil || !retryable(method, err) || len(c.urls) == 1 {
			if err == nil {
				c.mu.Lock()
				c.next = k
				c.mu.Unlock()
			}
			if err != nil && len(failures) > 0 {
				err = fmt.Errorf("%w (before it: %s)", err, strings.Join(failures, "; "))
			}
			return raw, err
		}
		failures = append(failures, err.Error())
	}
	return nil, fmt.Errorf("trit-fleet: no replica could serve the request: %s", strings.Join(failures, "; "))
}

// retryable reports whether a request that failed with err may go to
// another replica: one whose connection could not be made (nothing was
// sent), one the replica refused with 503 (its database unavailable:
// nothing was done), and a request that changes nothing (GET) whatever
// the transport error.
func retryable(method string, err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusServiceUnavailable
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return method == http.MethodGet
}

func (c *Client) sendTo(base, method, path, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", UserAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("trit-fleet at %s: %w", base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("trit-fleet at %s: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Status: resp.StatusCode}
		var e Error
		if json.Unmarshal(raw, &e) == nil {
			// Older services prefix their messages with their package's
			// name, which the "trit-fleet:" of Error would double.
			se.Message = strings.TrimPrefix(e.Error, "fleet: ")
		}
		if len(c.urls) > 1 && se.Status == http.StatusServiceUnavailable {
			se.Message = strings.TrimSpace(se.Message + " [" + base + "]")
		}
		return nil, se
	}
	return raw, nil
}

// StatusError is an error response of the service.
type StatusError struct {
	Status  int    // HTTP status
	Message string // the service's message; "" if it sent none
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("trit-fleet: HTTP %d", e.Status)
	}
	return fmt.Sprintf("trit-fleet: %s (HTTP %d)", e.Message, e.Status)
}

// Samples fetches a device's windows kept for retraining; the fleet waits
// up to wait for the device (0: its default).
func (c *Client) Samples(id string, wait time.Duration) (*wire.SampleSet, error) {
	path := "/v1/devices/" + url.PathEscape(id) + "/samples"
	if wait > 0 {
		path += "?wait=" + url.QueryEscape(wait.String())
	}
	var s wire.SampleSet
	return &s, c.do("GET", path, nil, &s)
}

// Plan asks devices to score a candidate on their window history.
func (c *Client) Plan(req *PlanRequest) (*PlanResult, error) {
	var p PlanResult
	return &p, c.do("POST", "/v1/plan", req, &p)
}

// Windows lists the windows the fleet stores for labelling that q selects,
// oldest first.
func (c *Client) Windows(q WindowQuery) (*WindowList, error) {
	v := url.Values{}
	if q.Model != "" {
		v.Set("model", q.Model)
	}
	if q.Device != "" {
		v.Set("device", q.Device)
	}
	if q.Labelled != nil {
		v.Set("labelled", fmt.Sprint(*q.Labelled))
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var l WindowList
	return &l, c.do("GET", "/v1/windows?"+v.Encode(), nil, &l)
}

// Label labels stored windows, all or none.
func (c *Client) Label(req *LabelRequest) (*LabelResult, error) {
	var r LabelResult
	return &r, c.do("POST", "/v1/labels", req, &r)
}

// Policies returns the retraining policies' states.
func (c *Client) Policies() ([]PolicyState, error) {
	var ps []PolicyState
	return ps, c.do("GET", "/v1/policies", nil, &ps)
}

// TrainJobs returns every training job the fleet keeps, newest first.
func (c *Client) TrainJobs() ([]TrainJob, error) {
	var js []TrainJob
	return js, c.do("GET", "/v1/train", nil, &js)
}
