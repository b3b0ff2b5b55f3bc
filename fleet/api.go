package fleet

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
)

// The HTTP JSON API that tritctl drives. Every /v1/ route needs the bearer
// token; /metrics (Prometheus) does not, so bind the listener to a trusted
// network. Errors are {"error": "..."} with a status that says whose fault
// it was: 400 bad request, 401 no or wrong token, 404 unknown, 409 conflict,
// 500 ours.
//
//	GET  /v1/devices                    inventory
//	GET  /v1/devices/{id}
//	GET  /v1/bundles                    registry
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
//	GET  /metrics
//	/console/...                        the web console, when linked in (see Console)

// Console, when not nil, builds the web console that Handler serves under
// /console/ (with / redirecting to it) on the API listener. Package
// fleet/console sets it when it is linked into the binary, as cmd/trit-fleet
// does; the console reads the service and its store and checks the same
// token at its own login.
var Console func(s *Service, db *store.DB, token string, log *slog.Logger) (http.Handler, error)

// maxRequestBody bounds request bodies: a bundle plus headroom.
const maxRequestBody = 1 << 20

// Handler returns the service's HTTP handler. token must be non-empty.
func (s *Service) Handler(token string) (http.Handler, error) {
	if len(token) < 16 {
		return nil, errors.New("fleet: the API token must be at least 16 characters")
	}
	mux := http.NewServeMux()
	api := func(pattern string, h func(*http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if !authorized(r, token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="trit-fleet"`)
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong API token"})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
			v, err := h(r)
			if err != nil {
				status := statusOf(err)
				if status == http.StatusInternalServerError {
					s.log.Error("API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
				}
				writeJSON(w, status, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	api("GET /v1/devices", func(*http.Request) (any, error) { return Devices(s.db) })
	api("GET /v1/devices/{id}", func(r *http.Request) (any, error) { return DeviceByID(s.db, r.PathValue("id")) })
	api("GET /v1/bundles", func(*http.Request) (any, error) { return s.reg.Bundles() })
	api("POST /v1/bundles", func(r *http.Request) (any, error) {
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
	api("GET /v1/rollouts", func(*http.Request) (any, error) { return s.Rollouts() })
	api("POST /v1/rollouts", func(r *http.Request) (any, error) {
		var req RolloutRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		return s.CreateRollout(req)
	})
	api("GET /v1/rollouts/{id}", func(r *http.Request) (any, error) { return s.GetRollout(r.PathValue("id")) })
	for _, op := range []string{"pause", "resume", "abort"} {
		api("POST /v1/rollouts/{id}/"+op, func(r *http.Request) (any, error) {
			var body struct {
				Reason string `json:"reason"`
			}
			if err := decodeBody(r, &body); err != nil {
				return nil, err
			}
			return s.Control(r.PathValue("id"), op, body.Reason)
		})
	}
	api("POST /v1/rollouts/{id}/rollback", func(r *http.Request) (any, error) {
		var body struct {
			ID string `json:"id"`
		}
		if err := decodeBody(r, &body); err != nil {
			return nil, err
		}
		if body.ID == "" {
			return nil, badRequest("give the new rollout's ID as {\"id\": ...}")
		}
		return s.Rollback(r.PathValue("id"), body.ID)
	})
	api("POST /v1/train", func(r *http.Request) (any, error) {
		var req TrainRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		return s.StartTraining(req)
	})
	api("GET /v1/train", func(*http.Request) (any, error) { return s.TrainingJobs(), nil })
	api("GET /v1/train/{id}", func(r *http.Request) (any, error) { return s.TrainingJob(r.PathValue("id")) })
	mux.HandleFunc("GET /v1/train/{id}/bundle", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r, token) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong API token"})
			return
		}
		data, err := s.TrainedBundle(r.PathValue("id"))
		if err != nil {
			writeJSON(w, statusOf(err), map[string]string{"error": err.Error()})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	})
	mux.Handle("GET /metrics", s.MetricsHandler())
	if Console != nil {
		ui, err := Console(s, s.db, token, s.log)
		if err != nil {
			return nil, err
		}
		mux.Handle("/console/", ui)
		mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusSeeOther))
	}
	return mux, nil
}

func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// errBadRequest marks errors in what the client sent.
var errBadRequest = errors.New("bad request")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, a...))
}

// decodeBody decodes a JSON body strictly; an empty body leaves v as is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return badRequest("request body: %v", err)
	}
	return nil
}

func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrReleaseExists), errors.Is(err, ErrReleaseTooLow):
		return http.StatusConflict
	case errors.Is(err, errBadRequest), errors.Is(err, ErrRollout), errors.Is(err, ErrBundleRejected), errors.As(err, &tooBig):
		return http.StatusBadRequest
	case errors.Is(err, bundle.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrTrainingDisabled):
		return http.StatusNotImplemented
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
