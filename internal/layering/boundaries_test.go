// Package layering holds the test that enforces trit's package boundaries
// (README "Layout") from the real import graph, as `go list` reports it.
package layering

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/trit-iot/trit"

// allowed lists, per top-level folder, the project folders its packages may
// import (besides their own folder). A folder missing here may import no
// project package at all. The table is as strict as the code: an allowance
// no package uses fails the test too, unless reserved says why it is kept.
var allowed = map[string][]string{
	"inference": {},
	"training":  {"inference", "internal"}, // internal/linelimit, for lines of any length up to a bound
	"sensors":   {"internal"},              // internal/cli, for the sensors command's usage errors
	// wire.JobState: the job records it keeps are the protocol's;
	// internal/proc, for the PostgreSQL that store/postgres/pgtest runs.
	"store": {"wire", "internal"},
	// internal/proc, for the brokers that wire/mqtttest and wire/natstest run.
	"wire": {"inference", "internal"},
	// The fleet's HTTP API is the protocol's types and the bundle's facts,
	// nothing of how a model is trained, stored or served, and no internal
	// helper: a client of the API pulls in no more than that.
	"api":       {"inference", "wire"},
	"agent":     {"inference", "sensors", "store", "wire", "internal"},
	"fleet":     {"api", "inference", "training", "store", "wire", "internal"},
	"tritctl":   {"api", "inference", "training", "sensors", "wire", "internal"},
	"benchmark": {"inference", "training", "internal"},
	// Helpers shared by the programs (cli, config, newfile, buildinfo,
	// linelimit, capped, secretfile) and by the tests' servers (proc):
	// they know nothing of the project's own packages.
	"internal": {},
	"cmd":      {"agent", "fleet", "tritctl", "benchmark", "api", "inference", "training", "sensors", "store", "wire"},
}

// reserved lists allowances kept although no package uses them yet, each
// with its reason.
var reserved = map[string]map[string]string{
	"api": {"inference": "an API type may carry a bundle fact (inference/bundle) rather than copy it"},
}

// stdlibOnly lists folders that may import nothing outside the standard
// library: what runs on the gateway's hot path.
var stdlibOnly = []string{"inference"}

// exclusive maps a third-party import path prefix to the only folder allowed
// to import it.
var exclusive = map[string]string{
	"go.etcd.io/bbolt": "store",
	// Plots are drawn by the benchmarks only (trit-bench figures).
	"gonum.org/v1/plot": "benchmark",
}

// exclusivePackage maps a third-party import path prefix to the only
// project package (path in the module) that may import it directly.
var exclusivePackage = map[string]string{
	// The PostgreSQL store is its own package, the only one on pgx.
	"github.com/jackc/pgx": "store/postgres",
	// NATS's own client is one broker adapter's: the fleet's NATS feed
	// (agents speak MQTT only).
	"github.com/nats-io": "fleet/server",
	// The embedded MQTT broker is part of the fleet's process shell.
	"github.com/mochi-mqtt/server": "fleet/server",
}

// within lists, for a folder whose packages import each other, which of
// its packages (paths in the module) each may import. Every package of
// such a folder needs an entry, and an allowance no package uses fails,
// as in allowed.
var within = map[string]map[string][]string{
	"fleet": {
		// The service: registry, inventory, rollouts, shadow, training
		// jobs, samples, metrics, over store.Database, with access's
		// principals and audit trail. It knows neither its process shell,
		// the HTTP edge (fleet/web) nor the console (its tests use
		// fleettest).
		"fleet": {"fleet/access", "fleet/fault", "fleet/fleettest", "fleet/inventory", "fleet/rollout"},
		// The rollout engine: a plain value the service persists and
		// steps. It imports no other fleet package (and, by narrow, only
		// api, wire and the standard library).
		"fleet/rollout": {},
		// The device records: what applies a device's messages to one,
		// the two alerts it raises, the health history, the reads and an
		// operator's writes. It imports no other fleet package but the
		// shared errors (and, by narrow, only api, wire and store).
		"fleet/inventory": {"fleet/fault"},
		// Who may do what, and the record of what they did: roles and
		// permissions, operators and their credentials, the sign-in
		// throttle, the audit trail. It imports no other fleet package but
		// the shared errors (and, by narrow, no net/http).
		"fleet/access": {"fleet/fault"},
		// The HTTP edge the API and the console share: the route table
		// over access's rules, what both read of a request, and the one
		// guard in front of both's routes. It knows neither the service
		// nor either transport.
		"fleet/web": {"fleet/access"},
		// The errors the fleet's packages return and the edges map to
		// HTTP statuses: below every other fleet package.
		"fleet/fault": {},
		// The web console reads the service, and the rollouts, device
		// records and errors it returns by their owners' names (the
		// engine's, the inventory's, fleet/fault's); the server mounts it,
		// so it never reaches the server.
		"fleet/console": {"fleet", "fleet/access", "fleet/fault", "fleet/fleettest", "fleet/inventory", "fleet/rollout", "fleet/web"},
		// The process shell: CLI, configuration, broker adapters, HTTP
		// API, and the console's mount (its tests read stored rollouts as
		// the engine's values); the API maps fleet/fault's errors to
		// statuses.
		"fleet/server": {"fleet", "fleet/access", "fleet/console", "fleet/fault", "fleet/fleettest", "fleet/inventory", "fleet/rollout", "fleet/web"},
		// What the three packages' tests share; it imports none of them.
		"fleet/fleettest": {},
	},
}

// narrow lists packages (paths in the module) held to fewer imports than
// their folder: the only project packages each may import directly,
// besides the standard library, and no third-party package but one
// listed by its whole import path. An allowance no package uses fails, as
// in allowed.
var narrow = map[string][]string{
	// The rollout engine decides from the rollout's own fields and the
	// time given: no store, no clock, no broker, no HTTP.
	"fleet/rollout": {"api", "wire"},
	// The device records apply what a device sends (wire) to their API
	// shape (api), read and written in the store (store), with the
	// fleet's shared errors: no clock, no broker, no HTTP, nothing of the
	// service.
	"fleet/inventory": {"api", "fleet/fault", "store", "wire"},
	// Who may do what: operators and the audit trail in the store, their
	// API shapes (api), the shared errors, and a token bucket per address
	// and operator (x/time/rate) — the standard library's net/http not
	// among them (noHTTP): the edges read a request's token
	// and address and pass the values.
	"fleet/access": {"api", "fleet/fault", "store", "golang.org/x/time/rate"},
	// The HTTP edge: net/http and access's values, and the store's audit
	// record it fills from a request.
	"fleet/web": {"fleet/access", "store"},
	// The shared errors know the store's (store.ErrCorrupt) and the API's
	// name for a damaged record (api.Damaged), nothing else.
	"fleet/fault": {"api", "store"},
}

// noHTTP lists packages (paths in the module) that may not import
// net/http or a package under it, their tests included: what they decide
// takes the values a request carries (a token, an address), which the
// HTTP edges read.
var noHTTP = []string{"fleet/access", "fleet/fault", "fleet/inventory", "fleet/rollout"}

// reachableFrom maps a third-party import path prefix to the only project
// packages (path prefixes in the module) that may depend on it, directly or
// not: the operator's tritctl, the agent and the fleet stay free of it.
var reachableFrom = map[string][]string{
	"gonum.org/v1/plot": {"benchmark", "cmd/trit-bench"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	cmd := exec.Command("go", "list", "-deps", "-test", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		// Test variants ("p [p.test]") import like p; fold them in.
		path, _, _ := strings.Cut(p.ImportPath, " ")
		q := pkgs[path]
		q.ImportPath, q.Standard = path, p.Standard
		q.Imports = append(q.Imports, p.Imports...)
		q.Deps = append(q.Deps, p.Deps...)
		pkgs[path] = q
	}
	return pkgs
}

// folder returns the top-level project folder of an import path, or "" for
// a path outside the module.
func folder(path string) string {
	rest, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	// An external test package ("x_test") belongs to x's folder.
	return strings.TrimSuffix(top, "_test")
}

func TestPackageBoundaries(t *testing.T) {
	pkgs := listPackages(t)
	std := func(path string) bool {
		p, ok := pkgs[path]
		return ok && p.Standard
	}
	checked := 0
	used := map[[2]string]bool{}       // {from, to} folders
	usedWithin := map[[2]string]bool{} // {from, to} packages of one folder
	usedNarrow := map[[2]string]bool{} // {from, to} packages, for narrow
	for path, p := range pkgs {
		from := folder(path)
		if from == "" || strings.HasSuffix(path, ".test") {
			continue
		}
		checked++
		ok, known := allowed[from]
		if !known {
			t.Errorf("%s: folder %q has no import rule; add it to allowed in %s", path, from, "internal/layering/boundaries_test.go")
			continue
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(path, module+"/"), "_test")
		rules, inFolder := within[from]
		mayImport, hasRule := rules[rel]
		if inFolder && !hasRule {
			t.Errorf("%s: package %s of folder %s/ has no rule; add it to within in %s", path, rel, from, "internal/layering/boundaries_test.go")
		}
		for _, imp := range p.Imports {
			imp, _, _ = strings.Cut(imp, " ")
			if to := strings.TrimPrefix(imp, module+"/"); to != imp && (to == "cmd" || strings.HasPrefix(to, "cmd/")) {
				t.Errorf("%s imports %s: nothing may import a package under cmd/", path, imp)
			}
			if to := strings.TrimPrefix(imp, module+"/"); inFolder && hasRule && to != rel && folder(imp) == from {
				usedWithin[[2]string{rel, to}] = true
				if !contains(mayImport, to) {
					t.Errorf("%s imports %s: %s may not import %s", path, imp, rel, to)
				}
			}
			if to := folder(imp); to != "" && to != from {
				used[[2]string{from, to}] = true
				if !contains(ok, to) {
					t.Errorf("%s imports %s: %s/ may not import %s/", path, imp, from, to)
				}
			}
			for prefix, owner := range exclusivePackage {
				if (imp == prefix || strings.HasPrefix(imp, prefix+"/")) && strings.TrimPrefix(path, module+"/") != owner {
					t.Errorf("%s imports %s: only %s may", path, imp, owner)
				}
			}
			for prefix, owner := range exclusive {
				if (imp == prefix || strings.HasPrefix(imp, prefix+"/")) && from != owner {
					t.Errorf("%s imports %s: only %s/ may", path, imp, owner)
				}
			}
		}
		if only, ok := narrow[rel]; ok {
			for _, imp := range p.Imports {
				imp, _, _ = strings.Cut(imp, " ")
				to := strings.TrimPrefix(imp, module+"/")
				switch {
				case std(imp):
				case !contains(only, to):
					t.Errorf("%s imports %s: %s may import only %s and the standard library", path, imp, rel, strings.Join(only, ", "))
				default:
					usedNarrow[[2]string{rel, to}] = true
				}
			}
		}
		if contains(noHTTP, rel) {
			for _, imp := range p.Imports {
				imp, _, _ = strings.Cut(imp, " ")
				if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
					t.Errorf("%s imports %s: %s may not import net/http", path, imp, rel)
				}
			}
		}
		for prefix, owners := range reachableFrom {
			rest := strings.TrimPrefix(path, module+"/")
			ok := false
			for _, o := range owners {
				ok = ok || rest == o || strings.HasPrefix(rest, o+"/")
			}
			if ok {
				continue
			}
			for _, dep := range p.Deps {
				if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
					t.Errorf("%s depends on %s: only %s may", path, dep, strings.Join(owners, " and "))
					break
				}
			}
		}
		if contains(stdlibOnly, from) {
			for _, dep := range p.Deps {
				dep, _, _ = strings.Cut(dep, " ")
				if !std(dep) && folder(dep) != from {
					t.Errorf("%s depends on %s: %s/ may use the standard library only", path, dep, from)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d project packages found; is go list seeing the module?", checked)
	}
	for from, tos := range allowed {
		for _, to := range tos {
			switch why := reserved[from][to]; {
			case !used[[2]string{from, to}] && why == "":
				t.Errorf("%s/ may import %s/ but no package does: remove it from allowed (or say in reserved why it stays)", from, to)
			case used[[2]string{from, to}] && why != "":
				t.Errorf("%s/ now imports %s/: drop it from reserved", from, to)
			}
		}
	}
	for _, rules := range within {
		for from, tos := range rules {
			for _, to := range tos {
				if !usedWithin[[2]string{from, to}] {
					t.Errorf("%s may import %s but does not: remove it from within", from, to)
				}
			}
		}
	}
	for from, tos := range narrow {
		for _, to := range tos {
			if !usedNarrow[[2]string{from, to}] {
				t.Errorf("%s may import %s but does not: remove it from narrow", from, to)
			}
		}
	}
	for from, tos := range reserved {
		for to := range tos {
			if !contains(allowed[from], to) {
				t.Errorf("reserved %s/ → %s/ is not in allowed", from, to)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
