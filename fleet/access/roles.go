package access

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trit-iot/trit/fleet/fault"
)

// Roles, the permissions each holds, and the Rule an action needs. Which
// route of the API or the web console needs which Rule is the HTTP edge's
// table (fleet/web/routes.go); a route is allowed to a role when
// the role holds the route's permission (Role.Can), and every route the
// API or the console registers must have a rule there (the server and the
// console refuse to start otherwise, and their roles_test.go walk every
// route with every role).
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
//	            approval under the two-person rule (fleet/rollout/approval.go)

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
	return "", fault.BadRequest("role %q: want one of %s", fault.Clip(s, 32), strings.Join(names, ", "))
}

// Perm is what an action or a read needs.
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

// Principal is who made a request.
type Principal struct {
	Name    string
	Role    Role
	Machine bool
	// Gen names the credential it signed in with (operators.go): a
	// console session made with one credential ends when the operator's
	// credential is another (rotated, or the api.token_file replaced).
	Gen string
}

// Rule is what one action or read needs, as a route's entry in the
// HTTP edge's table: the permission, and the action recorded in the audit
// trail when it changes something ("" for reads, which are audited only
// when refused).
type Rule struct {
	Perm   Perm
	Action string
	// Object is the kind of the thing the route's {id} or {name} names
	// ("device", "rollout", ...), so the audit says "rollout/r1".
	Object string
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
	return fmt.Sprintf("%s (role %s) may not do this: it needs the %s permission, which the roles %s have", p.Name, p.Role, rule.Perm, RolesText(rule.Perm))
}

// RolesText names the roles that hold p, comma-separated.
func RolesText(p Perm) string {
	roles := RolesWith(p)
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}
