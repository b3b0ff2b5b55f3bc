package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trit-iot/trit/api"
)

// TestAPIWindowsAndLabels: the routes' answers and statuses; the labelling
// rules themselves are tested in package fleet (windows_test.go).
func TestAPIWindowsAndLabels(t *testing.T) {
	f := newFixture(t)
	srv := apiServer(t, f)
	code, body := call(t, srv, "GET", "/v1/windows?model=vib&labelled=true&since=2026-01-01T00:00:00Z&limit=10", testToken, nil)
	var l api.WindowList
	if code != 200 || json.Unmarshal(body, &l) != nil || l.Total != 0 {
		t.Fatalf("windows: %d %s", code, body)
	}
	for _, q := range []string{"labelled=maybe", "since=yesterday", "limit=-1", "limit=x", "device=-bad"} {
		if code, body := call(t, srv, "GET", "/v1/windows?"+q, testToken, nil); code != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, code, body)
		}
	}
	for _, tt := range []struct {
		body string
		code int
		says string
	}{
		{`{"labels":[{"window":"gw-1/1700000000000","label":"fault"}],"via":"cli"}`, http.StatusNotFound, "not stored"},
		{`{"labels":[]}`, http.StatusBadRequest, "0 labels"},
		{`{"labels":[{"window":"gw-1","label":"fault"}]}`, http.StatusBadRequest, "13-digit"},
		{`{"labels":[{"window":"gw-1/1700000000000","label":"fault"}],"via":"gateway"}`, http.StatusBadRequest, "via"},
		{`{"labels":[], "extra": 1}`, http.StatusBadRequest, ""},
	} {
		code, body := call(t, srv, "POST", "/v1/labels", testToken, []byte(tt.body))
		if code != tt.code || !strings.Contains(string(body), tt.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tt.body, code, body, tt.code, tt.says)
		}
	}
}
