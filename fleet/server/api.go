package server

import (
	"context"
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
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/console"
	"github.com/trit-iot/trit/fleet/fault"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/fleet/web"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// The HTTP JSON API that tritctl drives; its types are in package api. Every route needs a bearer
// token — an operator's (fleet/access/operators.go) or the api.token_file's, an admin —
// /metrics included: it names rollouts and counts devices, and
// Prometheus sends a bearer token (authorization.credentials_file). Each
// route's role rule is in fleet/web/routes.go (the roles' permissions in
// fleet/access/roles.go); changes and refusals are audited
// (fleet/access/audit.go). Errors
// are {"error": "..."} with a status that says whose fault it was: 400 bad
// request (a body that is not one JSON object, an ID or hash that is not
// well-formed, a value out of bounds), 401 no, wrong, disabled or expired
// token, 403 a role that may not, 404 unknown,
// 409 conflict (a record that does not decode, fleet/damaged.go, too), 429 too many training jobs or too many wrong tokens from
// one address or for one operator (SignIns; with Retry-After), 500 ours,
// 503 the database unreachable for now (store.ErrUnavailable; with
// Retry-After and a plain message). Logged request paths and errors are
// clipped to MaxLogField bytes. GET /healthz and /readyz need no token
// (health.go).
//
//	GET  /v1/devices                    inventory
//	GET  /v1/devices/{id}
//	DELETE /v1/devices/{id}             forget a device (ForgetDevice)
//	POST /v1/devices/{id}/reset         accept its next state (ResetDevice)
//	GET  /v1/devices/{id}/health         its model health over time (DeviceHealthHistory)
//	GET  /v1/health?selector=site=north  the matching devices' health summed (GroupHealthHistory)
//	GET  /v1/devices/{id}/samples?wait=20s   the device's samples for retraining (Samples; 504 if it does not answer)
//	GET  /v1/windows?model=&device=&labelled=true|false&since=RFC3339&limit=N   stored windows, oldest first (Windows)
//	POST /v1/labels                     body: LabelRequest; labels stored windows, all or none (Label)
//	GET  /v1/policies                   the retraining policies' states (Policies)
//	POST /v1/plan                       body: PlanRequest; devices score a candidate on their history (Plan)
//	GET  /v1/bundles                    registry, with the devices running each bundle
//	POST /v1/bundles                    body: a signed bundle (application/octet-stream)
//	GET  /v1/rollouts
//	POST /v1/rollouts                   body: RolloutRequest
//	GET  /v1/rollouts/{id}
//	POST /v1/rollouts/{id}/pause|resume|abort   body: {"reason": "..."} (optional)
//	POST /v1/rollouts/{id}/rollback     body: {"id": "<new rollout ID>"}
//	POST /v1/rollouts/{id}/approve      the two-person rule (fleet/rollout/approval.go)
//	POST /v1/train                      body: TrainRequest; starts a training job
//	GET  /v1/train                      jobs, newest first
//	GET  /v1/train/{id}
//	GET  /v1/train/{id}/bundle          the unsigned bundle (application/octet-stream)
//	POST /v1/train/{id}/cancel          cancel a queued or running job
//	GET  /v1/backup                     a consistent copy of the database (application/octet-stream)
//	GET  /metrics
//	GET  /v1/whoami                     the caller's name and role
//	GET  /v1/audit?operator=&object=&action=&since=&limit=   the audit trail (admin)
//	GET  /v1/audit/verify               its hash chain checked now (AuditVerification)
//	GET  /v1/audit/export               the trail as JSON lines (store.ExportAudit)
//	GET|POST /v1/operators, POST /v1/operators/{name}/disable|enable|rotate, DELETE /v1/operators/{name}   (admin)
//	/console/...                        the web console (package fleet/console), / redirecting to it

// maxRequestBody bounds request bodies: a bundle plus headroom.
const maxRequestBody = 1 << 20

// longRoutes are the routes that may take longer than the server's read
// and write timeouts (listener.go), with how long (0: no bound): the
// waits a caller asks for (at most 5 minutes) and the backup's copy of the
// whole database. Lifted only once the caller's token and role passed.
var longRoutes = map[string]time.Duration{
	"GET /v1/devices/{id}/samples": 6 * time.Minute,
	"POST /v1/plan":                6 * time.Minute,
	"GET /v1/backup":               0,
	"GET /v1/audit/verify":         0,
	"GET /v1/audit/export":         0,
}

// pathID returns the path value name after checking it with check, so a
// malformed or oversized ID is a 400 naming the rule, not a store error.
func pathID(r *http.Request, name, what string, check func(string) error) (string, error) {
	v := r.PathValue(name)
	if err := check(v); err != nil {
		return "", fault.BadRequest("%s %q: %v", what, fault.Clip(v, 64), err)
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
	return pathID(r, "id", "training job ID", fleet.CheckTrainID)
}

// Handler returns the HTTP handler of the API listener: the API and the web
// console, which reads the service and its store and checks the same
// credentials at its own sign-in, with the API's Auth (and its throttle).
// token, the api.token_file's, must be at least 16 characters; it acts as
// an admin (access.TokenFileOperator) beside the operators in the store.
func Handler(s *fleet.Service, token string) (http.Handler, error) {
	auth, err := access.NewAuth(s.Store(), token, access.NewSignIns(s.Logger()), s.Audit(), s.Logger(), s.Now)
	if err != nil {
		return nil, err
	}
	mux, _, err := apiMux(s, auth)
	if err != nil {
		return nil, err
	}
	ui, err := console.New(&console.Options{Service: s, DB: s.Store(), Auth: auth, Logger: s.Logger()})
	if err != nil {
		return nil, err
	}
	ui.Mount(mux)
	return mux, nil
}

// principalKey carries a request's Principal in its context.
type principalKey struct{}

// principalOf returns who made r (set by the API's guard).
func principalOf(r *http.Request) access.Principal {
	p, _ := r.Context().Value(principalKey{}).(access.Principal)
	return p
}

// routeRule is web.RouteRule (a variable for a test of a route without
// a rule).
var routeRule = web.RouteRule

// apiMux builds the API's routes; every one is checked against its role
// rule (fleet/web/routes.go) and, when it changes something or is refused,
// audited. It also returns the patterns registered.
func apiMux(s *fleet.Service, auth *access.Auth) (*http.ServeMux, []string, error) {
	mux := http.NewServeMux()
	var missing []error
	var patterns []string
	// The API's guard (web.Guard): the bearer token, throttled per source
	// address and operator (fleet/access/signin.go), and a JSON error;
	// guarded puts a handler behind it with its pattern's rule, the long
	// route's deadlines, the principal and the body bound.
	bearer := func(w http.ResponseWriter, r *http.Request) (access.Principal, bool) {
		p, res, retry := auth.SignIn(r.RemoteAddr, "api", web.Bearer(r))
		switch res {
		case access.Throttled:
			w.Header().Set("Retry-After", strconv.Itoa(retry))
			writeJSON(w, http.StatusTooManyRequests, api.Error{Error: fmt.Sprintf("too many wrong API tokens from this address or for this operator; try again in %d s", retry)})
			return p, false
		case access.WrongToken:
			w.Header().Set("WWW-Authenticate", `Bearer realm="trit-fleet"`)
			writeJSON(w, http.StatusUnauthorized, api.Error{Error: "missing, wrong, disabled or expired API token"})
			return p, false
		}
		return p, true
	}
	refuse := func(w http.ResponseWriter, _ *http.Request, _ access.Principal, why string) {
		writeJSON(w, http.StatusForbidden, api.Error{Error: why})
	}
	guarded := func(pattern string, h http.HandlerFunc) {
		rule, err := routeRule(pattern)
		if err != nil {
			missing = append(missing, err)
			return
		}
		patterns = append(patterns, pattern)
		g := &web.Guard[access.Principal]{Rule: rule, Record: s.Audit().Record, Authenticate: bearer,
			Principal: func(p access.Principal) access.Principal { return p }, Refuse: refuse,
			Admit: func(w http.ResponseWriter, r *http.Request, p access.Principal) *http.Request {
				if d, long := longRoutes[pattern]; long {
					longRequest(w, d)
				}
				r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
				r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
				return r
			}}
		mux.HandleFunc(pattern, g.Handler(func(w http.ResponseWriter, r *http.Request, _ access.Principal) { h(w, r) }))
	}
	fail := func(w http.ResponseWriter, r *http.Request, err error) {
		status := statusOf(err)
		if status == http.StatusInternalServerError {
			s.Logger().Error("API request failed", "method", r.Method, "path", fault.Clip(r.URL.Path, fault.MaxLogField), "err", fault.Clip(err.Error(), fault.MaxLogField))
		}
		// The sentinels' "fleet: " says nothing to a client, which prints
		// its own "trit-fleet: " before the message.
		msg := strings.TrimPrefix(err.Error(), "fleet: ")
		if status == http.StatusServiceUnavailable {
			// The driver's words are for the log; the caller gets what to do.
			s.Logger().Warn("API request failed: the database is unavailable", "method", r.Method, "path", fault.Clip(r.URL.Path, fault.MaxLogField), "err", fault.Clip(err.Error(), fault.MaxLogField))
			w.Header().Set("Retry-After", strconv.Itoa(unavailableRetry))
			msg = unavailableMessage
		}
		web.NoteAuditFailure(r, status, msg)
		writeJSON(w, status, api.Error{Error: msg})
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
		writeJSON(w, http.StatusNotFound, api.Error{Error: "no such API route: " + r.Method + " " + fault.Clip(r.URL.Path, 64)})
	})
	// The API's device is api.Device: the record's working parts (its
	// current health points, which GET /v1/devices/{id}/health returns
	// in the history) stay in the store.
	route("GET /v1/devices", func(*http.Request) (any, error) {
		ds, err := inventory.DeviceList(s.Store())
		out := make([]api.Device, len(ds))
		for i := range ds {
			out[i] = ds[i].Device
		}
		return out, err
	})
	route("GET /v1/devices/{id}", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		d, err := inventory.DeviceByID(s.Store(), id)
		if err != nil {
			return nil, err
		}
		return &d.Device, nil
	})
	route("GET /v1/devices/{id}/health", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		if _, err := inventory.DeviceByID(s.Store(), id); err != nil {
			return nil, err
		}
		return inventory.DeviceHealthHistory(s.Store(), id, s.Now())
	})
	route("GET /v1/health", func(r *http.Request) (any, error) {
		sel, err := api.ParseSelector(r.URL.Query().Get("selector"))
		if err != nil {
			return nil, fault.BadRequest("selector: %v", err)
		}
		return inventory.GroupHealthHistory(s.Store(), sel, s.Now())
	})
	route("GET /v1/devices/{id}/samples", func(r *http.Request) (any, error) {
		id, err := deviceID(r)
		if err != nil {
			return nil, err
		}
		var wait time.Duration
		if w := r.URL.Query().Get("wait"); w != "" {
			if wait, err = time.ParseDuration(w); err != nil || wait <= 0 || wait > 5*time.Minute {
				return nil, fault.BadRequest("wait %q: want a duration up to 5m", fault.Clip(w, 32))
			}
		}
		return s.Samples(r.Context(), id, wait)
	})
	route("GET /v1/windows", func(r *http.Request) (any, error) {
		q, err := windowQuery(r)
		if err != nil {
			return nil, err
		}
		return s.Windows(q)
	})
	route("GET /v1/policies", func(*http.Request) (any, error) { return s.Policies() })
	route("POST /v1/labels", func(r *http.Request) (any, error) {
		var req api.LabelRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		res, err := s.Label(req, principalOf(r).Name)
		if err == nil {
			web.NoteAudit(r, "", fmt.Sprintf("%d windows labelled via %s", res.Labelled, fault.Clip(req.Via, 16)))
		}
		return res, err
	})
	route("POST /v1/plan", func(r *http.Request) (any, error) {
		var req api.PlanRequest
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
		if err := inventory.ForgetDevice(s.Store(), id); err != nil {
			return nil, err
		}
		s.Logger().Info("device forgotten", "device", id)
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
		d, err := inventory.ResetDevice(s.Store(), id)
		if err == nil {
			s.Logger().Info("device reset: its next state is accepted", "device", id)
		}
		return d, err
	})
	route("GET /v1/bundles", func(*http.Request) (any, error) { return bundleEntries(s) })
	route("POST /v1/bundles", func(r *http.Request) (any, error) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fault.BadRequest("reading the bundle: %v", err)
		}
		info, err := s.Registry().Add(data)
		if err == nil {
			web.NoteAudit(r, "bundle/"+info.Hash, fmt.Sprintf("model %s release %d", info.ModelID, info.Release))
			s.Logger().Info("bundle registered", "bundle", info.Hash, "model", info.ModelID, "release", info.Release, "bytes", info.Size)
		}
		return info, err
	})
	route("GET /v1/rollouts", func(*http.Request) (any, error) { return s.RolloutList() })
	route("POST /v1/rollouts", func(r *http.Request) (any, error) {
		var req api.RolloutRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		web.NoteAudit(r, "rollout/"+req.ID, "requested: "+rollout.RequestText(&req))
		if req.Emergency {
			web.NoteAuditAction(r, "rollout.emergency-rollback")
		}
		ro, err := s.CreateRolloutAs(req, principalOf(r))
		if err == nil {
			web.NoteAudit(r, "", rollout.Text(ro))
		}
		return ro, err
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
				return nil, fault.BadRequest("reason: %d bytes, at most %d", len(body.Reason), maxReason)
			}
			web.NoteAudit(r, "", body.Reason)
			return s.Control(id, op, body.Reason)
		})
	}
	route("POST /v1/rollouts/{id}/approve", func(r *http.Request) (any, error) {
		id, err := rolloutID(r)
		if err != nil {
			return nil, err
		}
		if err := decodeBody(r, &struct{}{}); err != nil {
			return nil, err
		}
		ro, err := s.ApproveAs(id, principalOf(r))
		if err == nil {
			web.NoteAudit(r, "", rollout.Text(ro))
		}
		return ro, err
	})
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
			return nil, fault.BadRequest("give the new rollout's ID as {\"id\": ...}")
		}
		web.NoteAudit(r, "", "new rollout "+body.ID)
		if body.Emergency {
			web.NoteAuditAction(r, "rollout.emergency-rollback")
		}
		ro, err := s.RollbackAs(id, body.ID, principalOf(r), body.Emergency)
		if err == nil {
			web.NoteAudit(r, "", "new rollout "+ro.ID+": "+rollout.Text(ro))
		}
		return ro, err
	})
	route("POST /v1/train", func(r *http.Request) (any, error) {
		var req api.TrainRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		j, err := s.StartTraining(req)
		if err == nil {
			web.NoteAudit(r, "train/"+j.ID, "")
		}
		return j, err
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
		wt, ok := s.Store().(io.WriterTo)
		if !ok {
			fail(w, r, ErrNoBackup)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		n, err := wt.WriteTo(w)
		if err != nil {
			s.Logger().Error("backup failed", "bytes_sent", n, "err", fault.Clip(err.Error(), fault.MaxLogField))
			if n == 0 {
				fail(w, r, err)
				return
			}
			// Too late for an error status; the audit record says it failed.
			web.NoteAuditFailure(r, http.StatusInternalServerError, fmt.Sprintf("failed after %d bytes: %s", n, err))
			return
		}
		s.Logger().Info("backup sent", "bytes", n)
	})
	guarded("GET /metrics", s.MetricsHandler().ServeHTTP)
	route("GET /v1/whoami", func(r *http.Request) (any, error) {
		p := principalOf(r)
		return api.WhoAmI{Name: p.Name, Role: string(p.Role), Machine: p.Machine}, nil
	})
	route("GET /v1/audit/verify", func(*http.Request) (any, error) {
		rep, err := s.Audit().Verify()
		if err != nil {
			return nil, err
		}
		return access.Verification(rep), nil
	})
	guarded("GET /v1/audit/export", func(w http.ResponseWriter, r *http.Request) {
		// One read transaction; a client that sees no head line, or a
		// cut-off last line, has no export.
		s.Audit().Flush()
		w.Header().Set("Content-Type", "application/x-ndjson")
		err := s.Store().View(func(tx store.Tx) error { return store.ExportAudit(tx, w) })
		if err != nil {
			s.Logger().Error("audit export failed", "err", fault.Clip(err.Error(), fault.MaxLogField))
		}
	})
	route("GET /v1/audit", func(r *http.Request) (any, error) {
		q, err := auditQuery(r)
		if err != nil {
			return nil, err
		}
		return s.Audit().Entries(q)
	})
	ops := &access.Operators{DB: s.Store(), Now: s.Now}
	route("GET /v1/operators", func(*http.Request) (any, error) { return ops.List() })
	route("POST /v1/operators", func(r *http.Request) (any, error) {
		var req api.OperatorRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		web.NoteAudit(r, "operator/"+req.Name, "role "+req.Role)
		return ops.Add(req, principalOf(r).Name)
	})
	for _, op := range []string{"disable", "enable"} {
		route("POST /v1/operators/{name}/"+op, func(r *http.Request) (any, error) {
			if err := decodeBody(r, &struct{}{}); err != nil {
				return nil, err
			}
			o, err := ops.SetDisabled(r.PathValue("name"), op == "disable")
			if err != nil {
				return nil, err
			}
			return o, nil
		})
	}
	route("POST /v1/operators/{name}/rotate", func(r *http.Request) (any, error) {
		if err := decodeBody(r, &struct{}{}); err != nil {
			return nil, err
		}
		return ops.Rotate(r.PathValue("name"))
	})
	route("DELETE /v1/operators/{name}", func(r *http.Request) (any, error) {
		name := r.PathValue("name")
		if err := ops.Remove(name); err != nil {
			return nil, err
		}
		return api.Forgotten{Forgotten: name}, nil
	})
	if len(missing) > 0 {
		return nil, nil, errors.Join(missing...)
	}
	return mux, patterns, nil
}

// bundleEntries lists the registry with, for each bundle, the devices
// whose last state names it as their active model, then an entry per
// damaged record (its key as hash, Damaged set).
func bundleEntries(s *fleet.Service) ([]api.BundleEntry, error) {
	bs, bad, err := s.Registry().BundlesAndDamaged()
	if err != nil {
		return nil, err
	}
	ds, err := inventory.Devices(s.Store())
	if err != nil {
		return nil, err
	}
	running := map[string]int{}
	for _, d := range ds {
		if d.Model != nil {
			running[d.Model.Bundle]++
		}
	}
	out := make([]api.BundleEntry, len(bs), len(bs)+len(bad))
	for i, b := range bs {
		out[i] = api.BundleEntry{BundleInfo: b, Devices: running[b.Hash]}
	}
	for _, b := range bad {
		out = append(out, api.BundleEntry{BundleInfo: api.BundleInfo{Hash: b.Key, Damaged: b.Error}})
	}
	return out, nil
}

// maxReason bounds the free-text reason of a rollout operation.
const maxReason = 1024

// ErrNoBackup is GET /v1/backup's answer (HTTP 501) when the store is not
// one file to copy: a PostgreSQL database is backed up with pg_dump.
var ErrNoBackup = errors.New("fleet: the database is PostgreSQL; back it up with pg_dump (docs/OPERATIONS.md \"Backups\"), not trit-fleet backup")

// decodeBody decodes a JSON body strictly: one object, no unknown fields,
// nothing after it. An empty body leaves v as is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fault.BadRequest("request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fault.BadRequest("request body: data after the JSON object")
	}
	return nil
}

func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, fault.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, fleet.ErrEmergency):
		return http.StatusForbidden
	case errors.Is(err, fault.ErrDamaged), errors.Is(err, fleet.ErrReleaseExists), errors.Is(err, access.ErrOperator), errors.Is(err, fleet.ErrLabelled), errors.Is(err, fleet.ErrReleaseTooLow), errors.Is(err, fleet.ErrTrainingDone):
		return http.StatusConflict
	case errors.Is(err, fault.ErrBadRequest), errors.Is(err, rollout.ErrInvalid), errors.Is(err, fleet.ErrAmbiguous), errors.Is(err, fleet.ErrBundleRejected), errors.As(err, &tooBig):
		return http.StatusBadRequest
	case errors.Is(err, bundle.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, fleet.ErrTrainingDisabled), errors.Is(err, ErrNoBackup):
		return http.StatusNotImplemented
	case errors.Is(err, fleet.ErrTrainingBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, fleet.ErrNoResponse):
		return http.StatusGatewayTimeout
	case errors.Is(err, store.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// While the database cannot be reached (a restart, a failover) the API
// answers 503 with Retry-After and this message, never the driver's.
const (
	unavailableRetry   = 5 // seconds
	unavailableMessage = "the fleet's database cannot be reached right now (restarting, or failing over); try again in a few seconds, or on another replica"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		slog.Debug("writing API response failed", "err", err)
	}
}

// defaultAuditLimit is how many entries GET /v1/audit returns without
// ?limit=, and maxAuditLimit the most it returns.
const (
	defaultAuditLimit = 1000
	maxAuditLimit     = 100000
)

// auditQuery reads GET /v1/audit's query.
func auditQuery(r *http.Request) (store.AuditQuery, error) {
	v := r.URL.Query()
	q := store.AuditQuery{Who: v.Get("operator"), Object: v.Get("object"), Action: v.Get("action"), Limit: defaultAuditLimit}
	if s := v.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, fault.BadRequest("since %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", fault.Clip(s, 64))
		}
		q.Since = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxAuditLimit {
			return q, fault.BadRequest("limit %q: want 1..%d", fault.Clip(s, 32), maxAuditLimit)
		}
		q.Limit = n
	}
	return q, nil
}

// windowQuery reads GET /v1/windows's query.
func windowQuery(r *http.Request) (api.WindowQuery, error) {
	v := r.URL.Query()
	q := api.WindowQuery{Model: v.Get("model"), Device: v.Get("device")}
	if len(q.Model) > bundle.MaxModelID {
		return q, fault.BadRequest("model: %d bytes, at most %d", len(q.Model), bundle.MaxModelID)
	}
	if q.Device != "" {
		if err := wire.CheckID(q.Device); err != nil {
			return q, fault.BadRequest("device %q: %v", fault.Clip(q.Device, 64), err)
		}
	}
	switch l := v.Get("labelled"); l {
	case "":
	case "true", "false":
		b := l == "true"
		q.Labelled = &b
	default:
		return q, fault.BadRequest("labelled %q: want true or false", fault.Clip(l, 16))
	}
	if since := v.Get("since"); since != "" {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			return q, fault.BadRequest("since %q: want an RFC 3339 time", fault.Clip(since, 64))
		}
		q.Since = t
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return q, fault.BadRequest("limit %q: want a number", fault.Clip(l, 16))
		}
		q.Limit = n
	}
	return q, nil
}
