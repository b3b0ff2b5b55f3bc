package api

import (
	"net/url"
	"strconv"
	"time"
)

// The audit trail (admin):
//
//	GET /v1/audit?operator=NAME&object=KIND[/ID]&action=KIND[.OP]&since=RFC3339&limit=N   []AuditEntry, oldest first
//	GET /v1/audit/verify     AuditVerification: the hash chain checked now
//	GET /v1/audit/export     the trail as JSON lines (store.ExportAudit), for safekeeping

// AuditEntry is one change to the fleet, or one refused attempt, as the
// API serves it. The record is the store's (store.AuditRecord: what is
// kept, hashed into the trail's chain and exported); this is its JSON on
// the API, which a client reads without the store. It is converted from
// the record in one place (access.Audit.Entries, a Go conversion: the
// compiler keeps the fields' names, types and order in step), and
// TestAuditEntryIsTheRecord (fleet/access) fails if a JSON name differs.
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
	// Count is how many refusals the entry stands for: refused requests
	// are recorded once per source, operator and minute; 0 means 1.
	Count uint64 `json:"count,omitempty"`
	// Prev is the hash of the entry before it (the trail's hash chain,
	// docs/FLEET.md "Audit trail").
	Prev string `json:"prev,omitempty"`
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

// AuditVerification is what GET /v1/audit/verify found: the trail's
// hash chain checked against its head and checkpoints (docs/FLEET.md
// "Audit trail").
type AuditVerification struct {
	OK bool `json:"ok"`
	// Summary says it in one line; Broken is the first broken record's
	// sequence (0: none named) and Problems every problem found.
	Summary  string   `json:"summary"`
	Broken   uint64   `json:"broken,omitempty"`
	Problems []string `json:"problems,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// First and Next bound the records (First..Next-1); Records is how
	// many were read; Checkpoints how many are stored, the latest at
	// LatestSeq signed at LatestTime.
	First       uint64    `json:"first"`
	Next        uint64    `json:"next"`
	Records     uint64    `json:"records"`
	Checkpoints int       `json:"checkpoints"`
	LatestSeq   uint64    `json:"latest_checkpoint_seq,omitempty"`
	LatestTime  time.Time `json:"latest_checkpoint_time,omitzero"`
	Checked     time.Time `json:"checked"`
}

// AuditVerify asks the fleet to check its audit trail now.
func (c *Client) AuditVerify() (*AuditVerification, error) {
	var v AuditVerification
	return &v, c.do("GET", "/v1/audit/verify", nil, &v)
}
