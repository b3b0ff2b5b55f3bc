package api

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Operators: people and machines with their own credential and role
// (docs/FLEET.md, "Operators, roles and the audit trail").
//
//	GET    /v1/whoami                      WhoAmI (any role)
//	GET    /v1/operators                   []Operator (admin)
//	POST   /v1/operators                   body: OperatorRequest; NewOperator (admin)
//	POST   /v1/operators/{name}/disable    Operator (admin)
//	POST   /v1/operators/{name}/enable     Operator (admin)
//	POST   /v1/operators/{name}/rotate     NewOperator: a new credential, the old one stops (admin)
//	DELETE /v1/operators/{name}            Forgotten (admin)

// WhoAmI is the credential a request was made with.
type WhoAmI struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Machine bool   `json:"machine,omitempty"`
}

// Operator is an operator as listed; never its credential.
type Operator struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Machine   bool      `json:"machine,omitempty"`
	Disabled  bool      `json:"disabled,omitempty"`
	Expired   bool      `json:"expired,omitempty"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires,omitzero"`
	Rotated   time.Time `json:"rotated,omitzero"`
	CreatedBy string    `json:"created_by,omitempty"`
}

// Kind is "machine" for a script's or scraper's credential, else "person".
func (o Operator) Kind() string {
	if o.Machine {
		return "machine"
	}
	return "person"
}

// State is "disabled", "expired" or "active".
func (o Operator) State() string {
	switch {
	case o.Disabled:
		return "disabled"
	case o.Expired:
		return "expired"
	}
	return "active"
}

// ExpiresText is when the credential expires (RFC 3339, UTC), or "-" for
// never.
func (o Operator) ExpiresText() string {
	if o.Expires.IsZero() {
		return "-"
	}
	return o.Expires.UTC().Format(time.RFC3339)
}

// OperatorRequest adds an operator.
type OperatorRequest struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	Machine bool      `json:"machine,omitempty"` // a script or scraper: no console sign-in
	Expires time.Time `json:"expires,omitzero"`  // zero: never
}

// NewOperator is an operator with its new credential, shown this once.
type NewOperator struct {
	Operator Operator `json:"operator"`
	Token    string   `json:"token"`
}

// WhoAmI returns the client's own name and role.
func (c *Client) WhoAmI() (*WhoAmI, error) {
	var w WhoAmI
	return &w, c.do("GET", "/v1/whoami", nil, &w)
}

// Operators lists the operators.
func (c *Client) Operators() ([]Operator, error) {
	var ops []Operator
	return ops, c.do("GET", "/v1/operators", nil, &ops)
}

// AddOperator adds an operator and returns its credential.
func (c *Client) AddOperator(req *OperatorRequest) (*NewOperator, error) {
	var n NewOperator
	return &n, c.do("POST", "/v1/operators", req, &n)
}

// OperatorOp disables, enables or rotates an operator (op is "disable",
// "enable" or "rotate"); rotate's answer carries the new credential.
func (c *Client) OperatorOp(name, op string) (*NewOperator, error) {
	var n NewOperator
	if op == "rotate" {
		return &n, c.do("POST", "/v1/operators/"+url.PathEscape(name)+"/rotate", struct{}{}, &n)
	}
	return &n, c.do("POST", "/v1/operators/"+url.PathEscape(name)+"/"+op, struct{}{}, &n.Operator)
}

// RemoveOperator deletes an operator.
func (c *Client) RemoveOperator(name string) error {
	return c.do("DELETE", "/v1/operators/"+url.PathEscape(name), nil, nil)
}

// ParseExpiry reads an expiry: a duration from now ("720h", "90d") or a
// UTC date or time ("2027-01-31", RFC 3339). It must lie in the future,
// at most 10 years ahead.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	var t time.Time
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > 3660 {
			return t, fmt.Errorf("expiry %q: want 1d to 3660d", clipText(s, 32))
		}
		t = now.Add(time.Duration(n) * 24 * time.Hour)
	} else if d, err := time.ParseDuration(s); err == nil {
		t = now.Add(d)
	} else if t, err = time.Parse(time.DateOnly, s); err != nil {
		if t, err = time.Parse(time.RFC3339, s); err != nil {
			return t, fmt.Errorf("expiry %q: want a duration (720h, 90d), a date (2027-01-31) or an RFC 3339 time", clipText(s, 32))
		}
	}
	if !t.After(now) || t.After(now.AddDate(10, 0, 0)) {
		return t, fmt.Errorf("expiry %q: %s is not in the next 10 years", clipText(s, 32), t.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}

// clipText shortens s to n bytes for an error message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
