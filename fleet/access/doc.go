// Package access is who may do what on the fleet, and the record of what
// they did: the roles and the permission each holds (roles.go: Role, Perm,
// Rule, Role.Can, Refused), the operators and their credentials
// (operators.go: Auth decides who a token is, Operators adds, disables,
// rotates and removes them), the sign-in throttle per source address and
// per operator (signin.go: SignIns), and the audit trail with its hash
// chain checked (audit.go, auditcheck.go: Audit).
//
// It imports only api, store, fleet/fault, golang.org/x/time/rate and the
// standard library (internal/layering), and no net/http: it takes the
// values a request carries (a bearer token, a source address) and the
// records the edges build. Which route needs which Rule, reading a
// request's token and address, and the wrapper that audits a request are
// the HTTP edge's (fleet/web, shared by the API in fleet/server and the
// web console in fleet/console). Who may approve
// a rollout is the rollout engine's (fleet/rollout/approval.go), from a
// Principal's name and Machine flag.
//
// Locks: Audit.mu and SignIns.mu are leaves, each held only for its own
// fields, taking no other lock and calling nothing that does (a store
// transaction is never begun while one is held).
package access
