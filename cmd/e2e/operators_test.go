package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/fleet/rollout"
)

// TestOperatorsRolesAndAudit runs the real trit-fleet and tritctl
// binaries, with the two-person rule on: the first admin, two operators
// and a viewer are made with `trit-fleet operators add` before the service
// starts; an operator starts a rollout with tritctl; the viewer's abort is
// refused (403) and audited as refused; the rollout notifies no device
// before its approval, its creator cannot approve it, the second operator does and it
// completes; the admin disables the first operator and its very next
// request is refused (401); `tritctl audit --json` shows each step with
// who and when. The api.token_file's token keeps working beside them (the
// upgrade path).
func TestOperatorsRolesAndAudit(t *testing.T) {
	w := newWorld(t)
	w.twoPerson = true
	bin := t.TempDir()
	for _, p := range []string{"trit-fleet", "tritctl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, p), "github.com/trit-iot/trit/cmd/"+p)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			t.Fatalf("building %s: %v", p, err)
		}
	}
	// The service is not running yet: `trit-fleet operators` writes the
	// database (creating it) directly.
	conf := filepath.Join(w.dir, "setup.toml")
	if err := os.WriteFile(conf, []byte(w.fleetConfig("127.0.0.1:0")), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, op := range []struct{ name, role string }{{"ann", "admin"}, {"otto", "operator"}, {"olga", "operator"}, {"vera", "viewer"}} {
		tokens[op.name] = filepath.Join(w.dir, op.name+".token")
		out, err := exec.Command(filepath.Join(bin, "trit-fleet"), "operators", "add", op.name, "--role", op.role,
			"-o", tokens[op.name], "-c", conf).CombinedOutput()
		if err != nil {
			t.Fatalf("trit-fleet operators add %s: %v\n%s", op.name, err, out)
		}
		if fi, err := os.Stat(tokens[op.name]); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s's token file: %v %v", op.name, fi, err)
		}
	}
	w.startFleetProcess(filepath.Join(bin, "trit-fleet"))
	ids := w.startAgents("op", 2, map[string]string{"site": "ops"})
	w.waitKnown(ids)
	hash := w.publish(w.bundle("vib", 1)) // the api.token_file's token: an admin, as before operators existed

	ctl := func(who string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "tritctl"), append(args, "--fleet", "http://"+w.api, "--token-file", tokens[who])...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	t0 := time.Now()
	if _, stderr, code := ctl("otto", "rollout", "create", "--id", "ops-1", "--bundle", hash, "--selector", "site=ops", "--phases", "1,100%"); code != 0 {
		t.Fatalf("otto's rollout create: exit %d: %s", code, stderr)
	}
	if _, stderr, code := ctl("vera", "rollout", "abort", "ops-1", "--reason", "not mine to stop"); code == 0 || !strings.Contains(stderr, "HTTP 403") || !strings.Contains(stderr, "vera (role viewer)") {
		t.Fatalf("vera's abort: exit %d: %s", code, stderr)
	}
	// Under the two-person rule no device is notified before the
	// approval, not even the canary.
	var r rollout.Rollout
	time.Sleep(time.Second) // five ticks: nothing may happen
	w.call("GET", "/v1/rollouts/ops-1", nil, &r)
	if r.State == api.RolloutAborted {
		t.Fatal("the viewer's refused abort aborted the rollout")
	}
	if r.Counts()[api.DevicePending] != 2 || !r.Approval.Pending() || r.CreatedBy != "otto" {
		t.Fatalf("before approval: %v, approval %+v, created by %q", r.Counts(), r.Approval, r.CreatedBy)
	}
	if stdout, _, _ := ctl("vera", "rollout", "status", "ops-1"); !strings.Contains(stdout, "approval: waiting for an operator other than otto") {
		t.Errorf("rollout status does not say it waits for approval:\n%s", stdout)
	}
	if _, stderr, code := ctl("otto", "rollout", "approve", "ops-1"); code == 0 || !strings.Contains(stderr, "another operator must approve") {
		t.Fatalf("otto approves his own rollout: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := ctl("olga", "rollout", "approve", "ops-1"); code != 0 || !strings.Contains(stdout, "approved by olga") {
		t.Fatalf("olga's approval: exit %d: %s %s", code, stdout, stderr)
	}
	if stdout, stderr, code := ctl("ann", "operators", "disable", "otto"); code != 0 || !strings.Contains(stdout, "disabled") {
		t.Fatalf("ann disables otto: exit %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code := ctl("otto", "rollout", "pause", "ops-1"); code == 0 || !strings.Contains(stderr, "HTTP 401") {
		t.Fatalf("otto's pause after he was disabled: exit %d: %s", code, stderr)
	}
	if stdout, _, code := ctl("vera", "operators", "whoami"); code != 0 || strings.TrimSpace(stdout) != "vera (viewer)" {
		t.Fatalf("vera's whoami: %d %q", code, stdout)
	}
	if done := w.waitRollout("ops-1", 60*time.Second, nil); done.State != api.RolloutCompleted || done.Successes != 2 {
		t.Fatalf("after olga's approval: %s, %d successes", done.State, done.Successes)
	}

	stdout, stderr, code := ctl("ann", "audit", "--json")
	if code != 0 {
		t.Fatalf("tritctl audit: exit %d: %s", code, stderr)
	}
	var es []api.AuditEntry
	if err := json.Unmarshal([]byte(stdout), &es); err != nil {
		t.Fatalf("tritctl audit --json: %v\n%s", err, stdout)
	}
	type step struct{ who, action, object, outcome string }
	want := []step{
		{"ann", "operator.add", "operator/ann", "ok"}, // by the local user: who is checked below
		{"otto", "operator.add", "operator/otto", "ok"},
		{"olga", "operator.add", "operator/olga", "ok"},
		{"vera", "operator.add", "operator/vera", "ok"},
		{access.TokenFileOperator, "bundle.publish", "bundle/" + hash, "ok"},
		{"otto", "rollout.create", "rollout/ops-1", "ok"},
		{"vera", "rollout.abort", "rollout/ops-1", "refused"},
		{"otto", "rollout.approve", "rollout/ops-1", "failed"},
		{"olga", "rollout.approve", "rollout/ops-1", "ok"},
		{"ann", "operator.disable", "operator/otto", "ok"},
	}
	if len(es) != len(want) {
		t.Fatalf("audit has %d entries, want %d:\n%s", len(es), len(want), stdout)
	}
	for i, e := range es {
		s := want[i]
		who := e.Who
		if i < 4 {
			who = s.who // operator.add was run as the local user
			if !strings.HasPrefix(e.Who, "local:") || e.Agent != "cli" {
				t.Errorf("entry %d: %s by %q via %q, want the local user via the CLI", i, e.Action, e.Who, e.Agent)
			}
		}
		if got := (step{who, e.Action, e.Object, e.Outcome}); got != s {
			t.Errorf("entry %d: %+v, want %+v", i, got, s)
		}
		if e.Time.IsZero() || (i >= 5 && (e.Time.Before(t0) || e.Time.After(time.Now()))) {
			t.Errorf("entry %d: time %v", i, e.Time)
		}
		if i >= 5 && (e.Remote != "127.0.0.1" || !strings.HasPrefix(e.Agent, "tritctl/")) {
			t.Errorf("entry %d: from %q with %q, want 127.0.0.1 with tritctl", i, e.Remote, e.Agent)
		}
	}
	if e := es[6]; e.Status != 403 || e.Role != "viewer" {
		t.Errorf("the refused abort: %+v", e)
	}
	if e := es[7]; e.Status != 400 || !strings.Contains(e.Detail, "another operator") {
		t.Errorf("otto's own approval: %+v", e)
	}
	// The filters: one operator's entries, one object's.
	stdout, _, _ = ctl("ann", "audit", "--json", "--object", "rollout/ops-1")
	if err := json.Unmarshal([]byte(stdout), &es); err != nil || len(es) != 4 {
		t.Fatalf("audit --object rollout/ops-1: %v\n%s", err, stdout)
	}
	stdout, _, _ = ctl("ann", "audit", "--operator", "vera")
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "rollout.abort") || !strings.Contains(lines[1], "refused (403)") {
		t.Fatalf("audit --operator vera:\n%s", stdout)
	}
	// Only an admin reads the trail.
	if _, stderr, code := ctl("vera", "audit"); code == 0 || !strings.Contains(stderr, "HTTP 403") {
		t.Fatalf("vera reads the audit trail: exit %d: %s", code, stderr)
	}
}
