package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trit-iot/trit/store"
)

// Health endpoints for load balancers and supervisors, served without a
// token in front of the API and the console (they say nothing an
// unauthenticated caller should not know):
//
//	GET /healthz   200 "ok": the process serves HTTP (liveness)
//	GET /readyz    200 "ready", or 503 with Retry-After and what is not:
//	               the database answers within readyTimeout and the broker
//	               connection (MQTT, and NATS with mqtt.nats) is up
//
// A load balancer sends operators to replicas whose /readyz is 200; a
// replica whose database or broker is gone stops getting them, and gets
// them again when both are back. The reasons are plain words, never a
// driver's error (which the log has).

// readyTimeout bounds /readyz's database check.
const readyTimeout = 2 * time.Second

// pinger is a store that can say it answers (store/postgres); a store
// without it (the bbolt file, in this process) always does.
type pinger interface {
	Ping(ctx context.Context) error
}

// connected is the service's broker connection (Conn, natsPublisher).
type connected interface{ Connected() bool }

// withHealth serves /healthz and /readyz, and everything else with h.
func withHealth(h http.Handler, db store.Database, broker connected) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := notReady(r.Context(), db, broker); len(why) > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(unavailableRetry))
			plain(w, http.StatusServiceUnavailable, "not ready: "+strings.Join(why, "; "))
			return
		}
		plain(w, http.StatusOK, "ready")
	})
	mux.Handle("/", h)
	return mux
}

// notReady lists what keeps the replica from serving, nothing if ready.
func notReady(ctx context.Context, db store.Database, broker connected) []string {
	var why []string
	if p, ok := db.(pinger); ok {
		ctx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		if err := p.Ping(ctx); err != nil {
			why = append(why, "the database does not answer")
		}
	}
	if broker != nil && !broker.Connected() {
		why = append(why, "not connected to the broker")
	}
	return why
}

func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}
