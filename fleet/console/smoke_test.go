package console

import (
	"os"
	"testing"

	"github.com/trit-iot/trit/fleet"
)

func TestSmoke(t *testing.T) {
	f := newFixture(t)
	f.device("gw-1", map[string]string{"site": "north"}, map[string]uint64{"normal": 10, "fault": 3})
	f.device("gw-2", map[string]string{"site": "north"}, nil)
	h1 := f.bundle("vib", 1, map[string]string{"train.balanced": "97.50", "train.rows": "200", "train.class_counts": "150,50"})
	f.bundle("vib", 2, nil)
	if _, err := f.svc.CreateRollout(fleet.RolloutRequest{ID: "r1", Bundle: h1, Selector: map[string]string{"site": "north"},
		Pace: fleet.Pace{Phases: []fleet.Phase{{Count: 1}, {Percent: 100}}}, Abort: fleet.AbortPolicy{On: "any", MinExecuted: 1}}); err != nil {
		t.Fatal(err)
	}
	f.svc.Tick()
	c := f.client().login()
	for _, p := range []string{"/console/", "/console/devices", "/console/devices/gw-1", "/console/rollouts", "/console/rollouts/r1", "/console/new-rollout", "/console/bundles"} {
		r := c.get(p)
		if r.code != 200 {
			t.Errorf("%s: %d %s", p, r.code, r.body)
		}
		if os.Getenv("DUMP") != "" {
			os.WriteFile("/tmp/console"+map[bool]string{true: "_root", false: ""}[p == "/console/"]+".html", []byte(r.body), 0o644)
			t.Logf("%s:\n%s", p, r.body)
		}
	}
}
