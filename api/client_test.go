package api

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestClientFailsOver: with several replicas' URLs, a request that cannot
// reach the first (connection refused) or that the first answers 503 goes
// to the next; the replica that answered is tried first next time; a
// change refused for another reason is not sent again; when none can
// serve, the error names each failure.
func TestClientFailsOver(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close() // connection refused from now on
	var unavailable, good atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		unavailable.Add(1)
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"the fleet's database cannot be reached right now"}`))
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		good.Add(1)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":"release exists"}`))
			return
		}
		w.Write([]byte(`[]`))
	}))
	defer up.Close()

	c := NewClient(deadURL+", "+down.URL+","+up.URL+"/", "token")
	if _, err := c.Devices(); err != nil {
		t.Fatalf("devices through the third replica: %v", err)
	}
	if unavailable.Load() != 1 || good.Load() != 1 {
		t.Fatalf("%d requests to the 503 replica, %d to the good one; want 1 and 1", unavailable.Load(), good.Load())
	}
	if _, err := c.Devices(); err != nil || unavailable.Load() != 1 || good.Load() != 2 {
		t.Fatalf("second request: %v; %d to the 503 replica (want it skipped: the good one answered last)", err, unavailable.Load())
	}
	_, err = c.AddBundle([]byte("x"))
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict || good.Load() != 3 {
		t.Fatalf("a refused change: %v after %d requests; want the 409, sent once", err, good.Load())
	}

	none := NewClient(deadURL+","+down.URL, "token")
	_, err = none.Devices()
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "database cannot be reached") {
		t.Fatalf("no replica serving: %v; want each failure named", err)
	}
}
