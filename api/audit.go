package api

import (
	"net/url"
	"strconv"
	"time"
)

// The audit trail (admin):
//
//	GET /v1/audit?operator=NAME&object=KIND[/ID]&action=KIND[.OP]&since=RFC3339&limit=N   []AuditEntry, oldest first

// AuditEntry is one change to the fleet, or one refused attempt.
type AuditEntry struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Who     string    `json:"who"`
	Role    string    `json:"role,omitempty"`
	Remote  string    `json:"remote,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	Action  string    `json:"action"`
	Object  string    `json:"object,omitempty"`
	Outcome string    `json:"outcome"` // ok, failed, refused
	Status  int       `json:"status,omitempty"`
	Detail  string    `json:"detail,omitempty"`
}

// AuditQuery selects audit entries; zero fields select all.
type AuditQuery struct {
	Operator string
	Object   string // "rollout" or "rollout/r1"
	Action   string // "rollout" or "rollout.abort"
	Since    time.Time
	Limit    int // the newest Limit entries; 0: the service's default
}

// Values encodes q as the route's query.
func (q *AuditQuery) Values() url.Values {
	v := url.Values{}
	if q.Operator != "" {
		v.Set("operator", q.Operator)
	}
	if q.Object != "" {
		v.Set("object", q.Object)
	}
	if q.Action != "" {
		v.Set("action", q.Action)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Audit returns the entries q selects, oldest first.
func (c *Client) Audit(q *AuditQuery) ([]AuditEntry, error) {
	var es []AuditEntry
	path := "/v1/audit"
	if v := q.Values().Encode(); v != "" {
		path += "?" + v
	}
	return es, c.do("GET", path, nil, &es)
}
