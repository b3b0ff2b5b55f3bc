package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
)

// backup fetches a copy of the running fleet's database over its API and
// stores it at path.
func (w *world) backup(path string) {
	w.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+w.api+"/v1/backup", nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		w.t.Fatalf("backup: HTTP %d %s", resp.StatusCode, msg)
	}
	if _, err := store.WriteBackup(path, resp.Body); err != nil {
		w.t.Fatal(err)
	}
}

// rolloutAll rolls bundle out to ids and requires every device to succeed.
func (w *world) rolloutAll(id, bundle string, ids []string) {
	w.t.Helper()
	w.rollout(api.RolloutRequest{ID: id, Bundle: bundle, Devices: ids})
	r := w.waitRollout(id, 2*time.Minute, nil)
	if r.State != api.RolloutCompleted || r.Successes != len(ids) {
		for _, d := range r.Failing() {
			w.t.Logf("%s: %s %s", d, r.Devices[d].State, r.Devices[d].Reason)
		}
		w.t.Fatalf("rollout %s: %s (%s), %d of %d succeeded", id, r.State, r.Reason, r.Successes, len(ids))
	}
}

// TestRestoredFleetDatabase: trit-fleet's database is restored from a
// backup taken two deployments ago, so its per-device command counters are
// below the devices' own. The devices report their highest sequence and the
// fleet moves past it: the next rollout succeeds everywhere instead of
// every command being refused as superseded.
func TestRestoredFleetDatabase(t *testing.T) {
	const n = 3
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", n, nil)
	w.waitKnown(ids)
	w.rolloutAll("r1", w.publish(w.bundle("vib", 1)), ids)
	old := filepath.Join(w.dir, "fleet-after-r1.db")
	w.backup(old)
	w.rolloutAll("r2", w.publish(w.bundle("vib", 2)), ids)
	w.rolloutAll("r3", w.publish(w.bundle("vib", 3)), ids)

	// Restore the old backup in place of the database, as docs/FLEET.md
	// says: stop, copy, start.
	w.stopFleetService()
	data, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.fleetDB(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	w.startFleet()
	// The restored registry knows release 1 only; release 4 is above it.
	v4 := w.publish(w.bundle("vib", 4))
	w.rolloutAll("r4", v4, ids)
	w.waitInventory("release 4 everywhere", 30*time.Second, func(ds map[string]inventory.Device) bool {
		for _, id := range ids {
			if d := ds[id]; d.Model == nil || d.Model.Bundle != v4 {
				return false
			}
		}
		return true
	})
}

// TestAgentDatabaseReset: a gateway's agent.db is moved aside (the
// recovery for a damaged one) and the agent started again: it comes back
// as a new life of the device (a new instance, sessions from 1), and the
// inventory shows it online instead of keeping the old record, offline, for
// ever. The retained deployment command gives it its model back.
func TestAgentDatabaseReset(t *testing.T) {
	w := newWorld(t)
	w.startFleet()
	ids := w.startAgents("gw", 1, nil)
	id := ids[0]
	w.waitInventory("the agent online", time.Minute, func(ds map[string]inventory.Device) bool { return ds[id].Online })
	v1 := w.publish(w.bundle("vib", 1))
	w.rolloutAll("r1", v1, ids)
	// A few restarts, so the old life's session is well above 1.
	for range 3 {
		prev := w.devices()[id].Session
		w.stopAgent(id)
		w.startAgents("gw", 1, nil)
		w.waitInventory("the agent online again", time.Minute, func(ds map[string]inventory.Device) bool {
			return ds[id].Online && ds[id].Session > prev
		})
	}
	before := w.devices()[id]
	w.stopAgent(id)
	w.waitInventory("the agent offline", time.Minute, func(ds map[string]inventory.Device) bool { return !ds[id].Online })

	if err := os.Rename(w.agentDB(id), w.agentDB(id)+".damaged"); err != nil {
		t.Fatal(err)
	}
	w.startAgents("gw", 1, nil)
	w.waitInventory("the reset gateway online, as a new life", time.Minute, func(ds map[string]inventory.Device) bool {
		d := ds[id]
		return d.Online && d.Instance != "" && d.Instance != before.Instance && d.Session < before.Session
	})
	w.waitInventory("its model back from the retained command", time.Minute, func(ds map[string]inventory.Device) bool {
		d := ds[id]
		return d.Online && d.Model != nil && d.Model.Bundle == v1
	})
	if _, err := os.Stat(w.agentDB(id) + ".damaged"); err != nil {
		t.Fatal(err)
	}
}
