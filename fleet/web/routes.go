package web

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/trit-iot/trit/fleet/access"
)

// The one table that says which route of the API and of the web console
// needs which rule (fleet/access: the permission, and the action the
// audit trail records). A route is allowed to a role when the role holds
// the route's permission; every route the API or the console registers
// must have a rule here (the server's Handler and the console refuse to
// start otherwise, and their roles_test.go walk every route with every
// role). What each role may do is fleet/access's (roles.go). An action
// that two routes record (the API's and the console's) needs the same
// permission on both (routes_test.go).

// routeRules is the table, keyed by the pattern given to http.ServeMux.
var routeRules = map[string]access.Rule{
	// API
	"/":                                 {Perm: access.PermSignedIn},
	"GET /v1/whoami":                    {Perm: access.PermSignedIn},
	"GET /v1/devices":                   {Perm: access.PermRead},
	"GET /v1/devices/{id}":              {Perm: access.PermRead},
	"GET /v1/devices/{id}/health":       {Perm: access.PermRead},
	"GET /v1/health":                    {Perm: access.PermRead},
	"GET /v1/devices/{id}/samples":      {Perm: access.PermTrain, Action: "device.samples", Object: "device"},
	"GET /v1/windows":                   {Perm: access.PermTrain},
	"GET /v1/policies":                  {Perm: access.PermRead},
	"POST /v1/labels":                   {Perm: access.PermTrain, Action: "windows.label"},
	"POST /v1/plan":                     {Perm: access.PermPlan, Action: "plan"},
	"DELETE /v1/devices/{id}":           {Perm: access.PermDevice, Action: "device.forget", Object: "device"},
	"POST /v1/devices/{id}/reset":       {Perm: access.PermDevice, Action: "device.reset", Object: "device"},
	"GET /v1/bundles":                   {Perm: access.PermRead},
	"POST /v1/bundles":                  {Perm: access.PermPublish, Action: "bundle.publish"},
	"GET /v1/rollouts":                  {Perm: access.PermRead},
	"POST /v1/rollouts":                 {Perm: access.PermRollout, Action: "rollout.create"},
	"GET /v1/rollouts/{id}":             {Perm: access.PermRead},
	"POST /v1/rollouts/{id}/pause":      {Perm: access.PermRollout, Action: "rollout.pause", Object: "rollout"},
	"POST /v1/rollouts/{id}/resume":     {Perm: access.PermRollout, Action: "rollout.resume", Object: "rollout"},
	"POST /v1/rollouts/{id}/abort":      {Perm: access.PermRollout, Action: "rollout.abort", Object: "rollout"},
	"POST /v1/rollouts/{id}/rollback":   {Perm: access.PermRollout, Action: "rollout.rollback", Object: "rollout"},
	"POST /v1/rollouts/{id}/approve":    {Perm: access.PermRollout, Action: "rollout.approve", Object: "rollout"},
	"POST /v1/train":                    {Perm: access.PermTrain, Action: "train.start"},
	"GET /v1/train":                     {Perm: access.PermRead},
	"GET /v1/train/{id}":                {Perm: access.PermRead},
	"GET /v1/train/{id}/bundle":         {Perm: access.PermRead},
	"POST /v1/train/{id}/cancel":        {Perm: access.PermTrain, Action: "train.cancel", Object: "train"},
	"GET /v1/backup":                    {Perm: access.PermBackup, Action: "backup"},
	"GET /metrics":                      {Perm: access.PermMetrics},
	"GET /v1/audit":                     {Perm: access.PermAudit},
	"GET /v1/audit/verify":              {Perm: access.PermAudit},
	"GET /v1/audit/export":              {Perm: access.PermAudit, Action: "audit.export"},
	"GET /v1/operators":                 {Perm: access.PermOperators},
	"POST /v1/operators":                {Perm: access.PermOperators, Action: "operator.add"},
	"POST /v1/operators/{name}/disable": {Perm: access.PermOperators, Action: "operator.disable", Object: "operator"},
	"POST /v1/operators/{name}/enable":  {Perm: access.PermOperators, Action: "operator.enable", Object: "operator"},
	"POST /v1/operators/{name}/rotate":  {Perm: access.PermOperators, Action: "operator.rotate", Object: "operator"},
	"DELETE /v1/operators/{name}":       {Perm: access.PermOperators, Action: "operator.remove", Object: "operator"},

	// Web console (fleet/console)
	"GET /console/{$}":                 {Perm: access.PermRead},
	"GET /console/login":               {Perm: access.PermPublic},
	"POST /console/login":              {Perm: access.PermPublic},
	"POST /console/logout":             {Perm: access.PermSignedIn},
	"GET /console/devices":             {Perm: access.PermRead},
	"GET /console/devices/{id}":        {Perm: access.PermRead},
	"GET /console/rollouts":            {Perm: access.PermRead},
	"GET /console/new-rollout":         {Perm: access.PermRollout},
	"POST /console/rollouts":           {Perm: access.PermRollout, Action: "rollout.create"},
	"GET /console/rollouts/{id}":       {Perm: access.PermRead},
	"POST /console/rollouts/{id}/{op}": {Perm: access.PermRollout, Action: controlAction, Object: "rollout"},
	"GET /console/bundles":             {Perm: access.PermRead},
	"GET /console/labels":              {Perm: access.PermTrain},
	"POST /console/labels":             {Perm: access.PermTrain, Action: "windows.label"},
	"GET /console/audit":               {Perm: access.PermAudit},
	"GET /console/static/{name}":       {Perm: access.PermPublic},
	"/console/":                        {Perm: access.PermPublic},
}

// controlAction is the action of the console's one route for a rollout's
// buttons (POST /console/rollouts/{id}/{op}), which records the operation
// it ran: rollout.pause, rollout.resume, rollout.abort, rollout.approve,
// rollout.rollback, as the API's routes for each do.
const controlAction = "rollout.control"

// ruleAction is the action a request r under rule records when its
// handler noted none: the rule's, with the operation for controlAction.
func ruleAction(r *http.Request, rule access.Rule) string {
	if rule.Action == controlAction {
		return "rollout." + r.PathValue("op")
	}
	return rule.Action
}

// RouteRule returns pattern's rule. A pattern without one is an error: a
// new route must say who may use it.
func RouteRule(pattern string) (access.Rule, error) {
	r, ok := routeRules[pattern]
	if !ok {
		return access.Rule{}, fmt.Errorf("fleet: route %q has no role rule (fleet/web/routes.go routeRules)", pattern)
	}
	return r, nil
}

// RoutePatterns lists every pattern that has a rule, the API's and the
// console's, sorted.
func RoutePatterns() []string {
	return slices.Sorted(maps.Keys(routeRules))
}
