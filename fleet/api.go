package fleet

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire"
)

// The HTTP JSON API that tritctl drives; its types are in package api. Every route needs the bearer
// token, /metrics included: it names rollouts and counts devices, and
// Prometheus sends a bearer token (authorization.credentials_file). Errors
// are {"error": "..."} with a status that says whose fault it was: 400 bad
// request (a body that is not one JSON object, an ID or hash that is not
// well-formed, a value out of bounds), 401 no or wrong token, 404 unknown,
// 409 conflict, 429 too many training jobs or too many wrong tokens from
// one address (SignIns; with Retry-After), 500 ours. Logged request paths
// and errors are clipped to maxLogField bytes.
//
//	GET  /v1/devices                    inventory
//	GET  /v1/devices/{id}
//	DELETE /v1/devices/{id}             forget a device (ForgetDevice)
//	POST /v1/devices/{id}/reset         accept its next state (ResetDevice)
//	GET  /v1/devices/{id}/samples?wait=20s   the device's samples for retraining (Samples; 504 if it does not answer)
//	POST /v1/plan                       body: PlanRequest; devices score a candidate on their history (Plan)
//	GET  /v1/bundles                    registry, with the devices running each bundle
//	POST /v1/bundles                    body: a signed bundle (application/octet-stream)
//	GET  /v1/rollouts
//	POST /v1/rollouts                   body: RolloutRequest
//	GET  /v1/rollouts/{id}
//	POST /v1/rollouts/{id}/pause|resume|abort   body: {"reason": "..."} (optional)
//	POST /v1/rollouts/{id}/rollback     body: {"id": "<new rollout ID>"}
//	POST /v1/train                      body: TrainRequest; starts a training job
//	GET  /v1/train                      jobs, newest first
//	GET  /v1/train/{id}
//	GET  /v1/train/{id}/bundle          the unsigned bundle (application/octet-stream)
//	POST /v1/train/{id}/cancel          cancel a queued or running job
//	GET  /v1/backup                     a consistent copy of the database (application/octet-stream)
//	GET  /metrics
//	/console/...                        the web console, when linked in (see Console)

// Console, when not nil, builds the web console that Handler serves under
// /console/ (with / redirecting to it) on the API listener. Package
// fleet/console sets it when it is linked into the binary, as cmd/trit-fleet
// does; the console reads the service and its store and checks the same
// token at its own login.
// signIns is the sign-in throttle the API shares with it.
var Console func(s *Service, db Store, token string, signIns *SignIns, log *slog.Logger) (http.Handler, error)

// maxRequestBody bounds request bodies: a bundle plus headroom.
const maxRequestBody = 1 << 20

// maxLogField bounds a request path or error message in the service log.
const maxLogField = 256

// clip shortens s to at most n bytes for a log line or an error message,
// saying how long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}

// pathID returns the path value name after checking it with check, so a
// malformed or oversized ID is a 400 naming the rule, not a store error.
func pathID(r *http.Request, name, what string, check func(string) error) (string, error) {
	v := r.PathValue(name)
	if err := check(v); err != nil {
		return "", badRequest("%s %q: %v", what, clip(v, 64), err)
	}
	return v, nil
}

func deviceID(r *http.Request) (string, error) {
	return pathID(r, "id", "device ID", wire.CheckID)
}

func rolloutID(r *http.Request) (string, error) {
	return pathID(r, "id", "rollout ID", wire.CheckRolloutID)
}

func trainID(r *http.Request) (string, error) {
	return pathID(r, "id", "training job ID", checkTrainID)
}

// Handler returns the service's HTTP handler. token must be non-empty.
func (s *Service) Handler(token string) (http.Handler, error) {
	if len(token) < 16 {
		return nil, errors.New("fleet: the API token must be at least 16 characters")
	}
	mux := http.NewServeMux()
	signIns := NewSignIns(s.log)
	// guarded wraps a handler with the token check, throttled per source
	// address (signin.go), and the body bound.
	guarded := func(pattern string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			switch signIns.Attempt(r, "api", func() bool { return authorized(r, token) }) {
			case Throttled:
				retry := signIns.RetryAfter(r)
				w.Header().Set("Retry-After", strconv.Itoa(retry))
				writeJSON(w, http.StatusTooManyRequests, api.Error{Error: fmt.Sprintf("too many wrong API tokens from this address; try again in %d s", retry)})
				return
			case WrongToken:
				w.Header().Set("WWW-Authenticate", `Bearer realm="trit-fleet"`)
				writeJSON(w, http.StatusUnauthorized, api.Error{Error: "missing or wrong API token"})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
			h(w, r)
		})
	}
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		status := statusOf(err)
		if status == http.StatusInternalServerError {
			s.log.Error("API request failed", "method", r.Method, "path", clip(r.URL.Path, maxLogField), "err", clip(err.Error(), maxLogField))
		}
		// The sentinels' "fleet: " says nothing to a client, which prints
		// its own "trit-fleet: " before the message.
		writeJSON(w, status, api.Error{Error: strings.TrimPrefix(err.Error(), "fleet: ")})
	}
	route := func(pattern string, h func(*http.Request) (any, error)) {
		guarded(pattern, func(w http.ResponseWriter, r *http.Request) {
			v, err := h(r)
			if err != nil {
				fail(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	// Unmatched paths get the same token check before their 404, so the
	// API's shape is not probed without the token.
	guarded("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, api.Error{Error: "no such API route: " + r.Method + " " + clip(r.URL.Path, 64)})
	})
	route("GET /v1/devices", func(*http.Request) (any, error) { return Devices(s.db) })
	route("GET /v1/devices/{id}", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		return DeviceByID(s.db, id)
	})
	route("GET /v1/devices/{id}/samples", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		var wait time.Duration
		if w := r.URL.Query().Get("wait"); w != "" {
			if wait, err = time.ParseDuration(w); err != nil || wait <= 0 || wait > 5*time.Minute {
				return nil, badRequest("wait %q: want a duration up to 5m", clip(w, 32))
			}
		}
		return s.Samples(r.Context(), id, wait)
	})
	route("POST /v1/plan", func(r *http.Request) (any, error) {
		var req PlanRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		return s.Plan(r.Context(), req)
	})
	route("DELETE /v1/devices/{id}", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		if err := ForgetDevice(s.db, id); err != nil {
			return nil, err
		}
		s.log.Info("device forgotten", "device", id)
		return api.Forgotten{Forgotten: id}, nil
	})
	route("POST /v1/devices/{id}/reset", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		if err := decodeBody(r, &struct{}{}); err != nil {
			return nil, err
		}
		d, err := ResetDevice(s.db, id)
		if err == nil {
			s.log.Info("device reset: its next state is accepted", "device", id)
		}
		return d, err
	})
	route("GET /v1/bundles", func(*http.Request) (any, error) { return s.bundleEntries() })
	route("POST /v1/bundles", func(r *http.Request) (any, error) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, badRequest("reading the bundle: %v", err)
		}
		info, err := s.reg.Add(data)
		if err == nil {
			s.log.Info("bundle registered", "bundle", info.Hash, "model", info.ModelID, "release", info.Release, "bytes", info.Size)
		}
		return info, err
	})
	route("GET /v1/rollouts", func(*http.Request) (any, error) { return s.Rollouts() })
	route("POST /v1/rollouts", func(r *http.Request) (any, error) {
		var req RolloutRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		return s.CreateRollout(req)
	})
	route("GET /v1/rollouts/{id}", func(r *http.Request) (any, error) {
		id, err := rolloutID(r)
		if err != nil {
			return nil, err
		}
		return s.GetRollout(id)
	})
	for _, op := range []string{"pause", "resume", "abort"} {
		route("POST /v1/rollouts/{id}/"+op, func(r *http.Request) (any, error) {
			id, err := rolloutID(r)
			if err != nil {
				return nil, err
			}
			var body api.ControlRequest
			if err := decodeBody(r, &body); err != nil {
				return nil, err
			}
			if len(body.Reason) > maxReason {
				return nil, badRequest("reason: %d bytes, at most %d", len(body.Reason), maxReason)
			}
			return s.Control(id, op, body.Reason)
		})
	}
	route("POST /v1/rollouts/{id}/rollback", func(r *http.Request) (any, error) {
		id, err := rolloutID(r)
		if err != nil {
			return nil, err
		}
		var body api.RollbackRequest
		if err := decodeBody(r, &body); err != nil {
			return nil, err
		}
		if body.ID == "" {
			return nil, badRequest("give the new rollout's ID as {\"id\": ...}")
		}
		return s.Rollback(id, body.ID)
	})
	route("POST /v1/train", func(r *http.Request) (any, error) {
		var req TrainRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		return s.StartTraining(req)
	})
	route("GET /v1/train", func(*http.Request) (any, error) { return s.TrainingJobs(), nil })
	route("GET /v1/train/{id}", func(r *http.Request) (any, error) {
		id, err := trainID(r)
		if err != nil {
			return nil, err
		}
		return s.TrainingJob(id)
	})
	route("POST /v1/train/{id}/cancel", func(r *http.Request) (any, error) {
		id, err := trainID(r)
		if err != nil {
			return nil, err
		}
		if err := decodeBody(r, &struct{}{}); err != nil {
			return nil, err
		}
		return s.CancelTraining(id)
	})
	guarded("GET /v1/train/{id}/bundle", func(w http.ResponseWriter, r *http.Request) {
		id, err := trainID(r)
		var data []byte
		if err == nil {
			data, err = s.TrainedBundle(id)
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	})
	guarded("GET /v1/backup", func(w http.ResponseWriter, r *http.Request) {
		// A copy of the whole database from one read transaction; the
		// service goes on meanwhile. A client that sees fewer bytes than
		// Content-Length (a failure half-way) has no backup.
		wt, ok := s.db.(io.WriterTo)
		if !ok {
			fail(w, r, ErrNoBackup)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		n, err := wt.WriteTo(w)
		if err != nil {
			s.log.Error("backup failed", "bytes_sent", n, "err", clip(err.Error(), maxLogField))
			if n == 0 {
				fail(w, r, err)
			}
			return
		}
		s.log.Info("backup sent", "bytes", n)
	})
	guarded("GET /metrics", s.MetricsHandler().ServeHTTP)
	if Console != nil {
		ui, err := Console(s, s.db, token, signIns, s.log)
		if err != nil {
			return nil, err
		}
		mux.Handle("/console/", ui)
		mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusSeeOther))
	}
	return mux, nil
}

// bundleEntries lists the registry with, for each bundle, the devices
// whose last state names it as their active model.
func (s *Service) bundleEntries() ([]api.BundleEntry, error) {
	bs, err := s.reg.Bundles()
	if err != nil {
		return nil, err
	}
	ds, err := Devices(s.db)
	if err != nil {
		return nil, err
	}
	running := map[string]int{}
	for _, d := range ds {
		if d.Model != nil {
			running[d.Model.Bundle]++
		}
	}
	out := make([]api.BundleEntry, len(bs))
	for i, b := range bs {
		out[i] = api.BundleEntry{BundleInfo: b, Devices: running[b.Hash]}
	}
	return out, nil
}

// maxReason bounds the free-text reason of a rollout operation.
const maxReason = 1024

func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// ErrNoBackup is GET /v1/backup's answer (HTTP 501) when the store is not
// one file to copy: a PostgreSQL database is backed up with pg_dump.
var ErrNoBackup = errors.New("fleet: the database is PostgreSQL; back it up with pg_dump (docs/OPERATIONS.md \"Backups\"), not trit-fleet backup")

// ErrBadRequest marks errors in what the client sent (an HTTP 400).
var ErrBadRequest = errors.New("bad request")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// decodeBody decodes a JSON body strictly: one object, no unknown fields,
// nothing after it. An empty body leaves v as is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return badRequest("request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body: data after the JSON object")
	}
	return nil
}

func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrReleaseExists), errors.Is(err, ErrReleaseTooLow), errors.Is(err, ErrTrainingDone):
		return http.StatusConflict
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrRollout), errors.Is(err, ErrAmbiguous), errors.Is(err, ErrBundleRejected), errors.As(err, &tooBig):
		return http.StatusBadRequest
	case errors.Is(err, bundle.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrTrainingDisabled), errors.Is(err, ErrNoBackup):
		return http.StatusNotImplemented
	case errors.Is(err, ErrTrainingBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrNoResponse):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		slog.Debug("writing API response failed", "err", err)
	}
}
