package api

import (
	"net/url"
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
