package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Roles and the one table that says which route each may use, for the API
// and the web console alike. A route is allowed to a role when the role
// holds the route's permission; every route the API or the console
// registers must have a rule here (Handler and the console refuse to start
// otherwise, and roles_test.go walks every route with every role).
//
//	permission  what it allows                                        roles
//	public      the console's sign-in page and static files           everyone, signed in or not
//	signed-in   who am I, sign out, unknown routes' 404               every role
//	read        inventory, bundles, rollouts, training jobs           viewer, operator, release-manager, admin
//	metrics     GET /metrics                                          metrics, viewer, operator, release-manager, admin
//	rollout     create, pause, resume, abort, roll back a rollout     operator, admin
//	device      reset, forget a device                                operator, admin
//	plan        devices score a candidate on their history            operator, release-manager, admin
//	publish     add a signed bundle to the registry                   release-manager, admin
//	train       remote training, devices' samples, windows and labels admin
//	backup      a copy of the whole database                          admin
//	audit       the audit trail                                       admin
//	operators   add, disable, rotate, remove operators                admin
//	emergency   a rollback that goes out without a second person's     responder (and no other role)
//	            approval under the two-person rule (approval.go)

// Role is what an operator may do.
type Role string

// The roles.
const (
	RoleViewer         Role = "viewer"
	RoleOperator       Role = "operator"
	RoleReleaseManager Role = "release-manager"
	RoleAdmin          Role = "admin"
	RoleMetrics        Role = "metrics"
	// RoleResponder is an operator who may also make emergency rollbacks
	// (PermEmergency): the one way past the two-person rule, named so it
	// is given on purpose.
	RoleResponder Role = "responder"
)

// Roles lists every role, least to most.
var Roles = []Role{RoleMetrics, RoleViewer, RoleReleaseManager, RoleOperator, RoleResponder, RoleAdmin}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if slices.Contains(Roles, r) {
		return r, nil
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", BadRequest("role %q: want one of %s", Clip(s, 32), strings.Join(names, ", "))
}

// Perm is what a route needs.
type Perm string

// The permissions.
const (
	PermPublic    Perm = "public"
	PermSignedIn  Perm = "signed-in"
	PermRead      Perm = "read"
	PermMetrics   Perm = "metrics"
	PermRollout   Perm = "rollout"
	PermDevice    Perm = "device"
	PermPlan      Perm = "plan"
	PermPublish   Perm = "publish"
	PermTrain     Perm = "train"
	PermBackup    Perm = "backup"
	PermAudit     Perm = "audit"
	PermOperators Perm = "operators"
	PermEmergency Perm = "emergency"
)

// rolePerms lists each role's permissions (public and signed-in are
// everyone's).
var rolePerms = map[Role][]Perm{
	RoleMetrics:        {PermMetrics},
	RoleViewer:         {PermRead, PermMetrics},
	RoleOperator:       {PermRead, PermMetrics, PermRollout, PermDevice, PermPlan},
	RoleResponder:      {PermRead, PermMetrics, PermRollout, PermDevice, PermPlan, PermEmergency},
	RoleReleaseManager: {PermRead, PermMetrics, PermPlan, PermPublish},
	RoleAdmin:          {PermRead, PermMetrics, PermRollout, PermDevice, PermPlan, PermPublish, PermTrain, PermBackup, PermAudit, PermOperators},
}

// Can reports whether role r holds permission p.
func (r Role) Can(p Perm) bool {
	return p == PermPublic || (p == PermSignedIn && rolePerms[r] != nil) || slices.Contains(rolePerms[r], p)
}

// Rule is one route's entry in the table: the permission it needs, and
// the action recorded in the audit trail when it changes something (""
// for reads, which are audited only when refused).
type Rule struct {
	Perm   Perm
	Action string
	// Object is the kind of the thing the route's {id} or {name} names
	// ("device", "rollout", ...), so the audit says "rollout/r1".
	Object string
}

// routeRules is the table, keyed by the pattern given to http.ServeMux.
var routeRules = map[string]Rule{
	// API
	"/":                                 {Perm: PermSignedIn},
	"GET /v1/whoami":                    {Perm: PermSignedIn},
	"GET /v1/devices":                   {Perm: PermRead},
	"GET /v1/devices/{id}":              {Perm: PermRead},
	"GET /v1/devices/{id}/health":       {Perm: PermRead},
	"GET /v1/health":                    {Perm: PermRead},
	"GET /v1/devices/{id}/samples":      {Perm: PermTrain, Action: "device.samples", Object: "device"},
	"GET /v1/windows":                   {Perm: PermTrain},
	"GET /v1/policies":                  {Perm: PermRead},
	"POST /v1/labels":                   {Perm: PermTrain, Action: "windows.label"},
	"POST /v1/plan":                     {Perm: PermPlan, Action: "plan"},
	"DELETE /v1/devices/{id}":           {Perm: PermDevice, Action: "device.forget", Object: "device"},
	"POST /v1/devices/{id}/reset":       {Perm: PermDevice, Action: "device.reset", Object: "device"},
	"GET /v1/bundles":                   {Perm: PermRead},
	"POST /v1/bundles":                  {Perm: PermPublish, Action: "bundle.publish"},
	"GET /v1/rollouts":                  {Perm: PermRead},
	"POST /v1/rollouts":                 {Perm: PermRollout, Action: "rollout.create"},
	"GET /v1/rollouts/{id}":             {Perm: PermRead},
	"POST /v1/rollouts/{id}/pause":      {Perm: PermRollout, Action: "rollout.pause", Object: "rollout"},
	"POST /v1/rollouts/{id}/resume":     {Perm: PermRollout, Action: "rollout.resume", Object: "rollout"},
	"POST /v1/rollouts/{id}/abort":      {Perm: PermRollout, Action: "rollout.abort", Object: "rollout"},
	"POST /v1/rollouts/{id}/rollback":   {Perm: PermRollout, Action: "rollout.rollback", Object: "rollout"},
	"POST /v1/rollouts/{id}/approve":    {Perm: PermRollout, Action: "rollout.approve", Object: "rollout"},
	"POST /v1/train":                    {Perm: PermTrain, Action: "train.start"},
	"GET /v1/train":                     {Perm: PermRead},
	"GET /v1/train/{id}":                {Perm: PermRead},
	"GET /v1/train/{id}/bundle":         {Perm: PermRead},
	"POST /v1/train/{id}/cancel":        {Perm: PermTrain, Action: "train.cancel", Object: "train"},
	"GET /v1/backup":                    {Perm: PermBackup, Action: "backup"},
	"GET /metrics":                      {Perm: PermMetrics},
	"GET /v1/audit":                     {Perm: PermAudit},
	"GET /v1/audit/verify":              {Perm: PermAudit},
	"GET /v1/audit/export":              {Perm: PermAudit, Action: "audit.export"},
	"GET /v1/operators":                 {Perm: PermOperators},
	"POST /v1/operators":                {Perm: PermOperators, Action: "operator.add"},
	"POST /v1/operators/{name}/disable": {Perm: PermOperators, Action: "operator.disable", Object: "operator"},
	"POST /v1/operators/{name}/enable":  {Perm: PermOperators, Action: "operator.enable", Object: "operator"},
	"POST /v1/operators/{name}/rotate":  {Perm: PermOperators, Action: "operator.rotate", Object: "operator"},
	"DELETE /v1/operators/{name}":       {Perm: PermOperators, Action: "operator.remove", Object: "operator"},

	// Web console (fleet/console)
	"GET /console/{$}":                 {Perm: PermRead},
	"GET /console/login":               {Perm: PermPublic},
	"POST /console/login":              {Perm: PermPublic},
	"POST /console/logout":             {Perm: PermSignedIn},
	"GET /console/devices":             {Perm: PermRead},
	"GET /console/devices/{id}":        {Perm: PermRead},
	"GET /console/rollouts":            {Perm: PermRead},
	"GET /console/new-rollout":         {Perm: PermRollout},
	"POST /console/rollouts":           {Perm: PermRollout, Action: "rollout.create"},
	"GET /console/rollouts/{id}":       {Perm: PermRead},
	"POST /console/rollouts/{id}/{op}": {Perm: PermRollout, Action: "rollout.control", Object: "rollout"},
	"GET /console/bundles":             {Perm: PermRead},
	"GET /console/labels":              {Perm: PermTrain},
	"POST /console/labels":             {Perm: PermTrain, Action: "windows.label"},
	"GET /console/audit":               {Perm: PermAudit},
	"GET /console/static/{name}":       {Perm: PermPublic},
	"/console/":                        {Perm: PermPublic},
}

// RouteRule returns pattern's rule. A pattern without one is an error: a
// new route must say who may use it.
func RouteRule(pattern string) (Rule, error) {
	r, ok := routeRules[pattern]
	if !ok {
		return Rule{}, fmt.Errorf("fleet: route %q has no role rule (fleet/roles.go routeRules)", pattern)
	}
	return r, nil
}

// RoutePatterns lists every pattern that has a rule, the API's and the
// console's, sorted.
func RoutePatterns() []string {
	return slices.Sorted(maps.Keys(routeRules))
}

// RolesWith lists the roles that hold p, least to most.
func RolesWith(p Perm) []Role {
	var out []Role
	for _, r := range Roles {
		if r.Can(p) {
			out = append(out, r)
		}
	}
	return out
}

// Refused is the message of a 403: who may not do what, and which roles
// may.
func Refused(p Principal, rule Rule) string {
	return fmt.Sprintf("%s (role %s) may not do this: it needs the %s permission, which the roles %s have", p.Name, p.Role, rule.Perm, rolesText(rule.Perm))
}

// rolesText names the roles that hold p, comma-separated.
func rolesText(p Perm) string {
	roles := RolesWith(p)
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}
