package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// A damaged agent.db stops the agent at start-up with an error naming the
// file and the ways out (no panic, the file untouched); --start-fresh
// moves it aside and the gateway starts as a new device.
func TestRunDamagedDatabase(t *testing.T) {
	k := newKeys(t)
	cfg := testConfig(t, k, "tcp://fake:1883")
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"empty":     nil,
		"truncated": bytes.Repeat([]byte{0}, 5000),
		"garbage":   bytes.Repeat([]byte("agent"), 20000),
	} {
		if err := os.WriteFile(cfg.DBPath(), content, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := Run(ctx, cfg, &Options{Dialer: newFakeBroker(), Logger: testLogger(t)})
		cancel()
		if err == nil || !strings.Contains(err.Error(), cfg.DBPath()) || !strings.Contains(err.Error(), "--start-fresh") {
			t.Fatalf("%s agent.db: Run = %v", name, err)
		}
		if got, _ := os.ReadFile(cfg.DBPath()); !bytes.Equal(got, content) {
			t.Fatalf("%s agent.db was changed", name)
		}
	}
	b := newFakeBroker()
	stop := startAgent(t, cfg, &Options{Dialer: b, StartFresh: true})
	for deadline := time.Now().Add(10 * time.Second); ; {
		var st *wire.State
		for _, m := range b.published(wire.KindState) {
			st, _ = wire.DecodeState(m.Payload)
		}
		if st != nil && st.Session == 1 && st.Online && st.Model == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a fresh start did not come online as a new device: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if aside, _ := filepath.Glob(cfg.DBPath() + ".damaged-*"); len(aside) != 1 {
		t.Fatalf("the damaged file was not kept: %v", aside)
	}
}

// TestRedeployRepairsDamagedActiveBundle: the stored copy of the committed
// bundle, the only one installed, is damaged on disk. The agent starts
// without a model and says so: no-model, no model in its state (it runs
// none), the committed one named as unloadable; it never runs bytes that
// do not match their hash. Deploying the same bundle again must make it
// run: the agent reported SUCCEEDED while it still ran no model, because
// the damaged copy was kept (the downloaded one was not stored over it)
// and the model was not loaded again.
func TestRedeployRepairsDamagedActiveBundle(t *testing.T) {
	f, _, cfg, v1 := withRelease1(t)
	db, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := db.Bundle(v1)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	damageOnDisk(t, cfg, data)

	startAgent(t, cfg, nil)
	f.waitFor("a no-model state", 20*time.Second, func() bool {
		for _, st := range f.states {
			if st.Online && st.Health == "no-model" && st.Model == nil && st.Unloadable != nil && st.Unloadable.Bundle == v1 {
				return true
			}
		}
		return false
	})
	f.mu.Lock()
	seen := len(f.states)
	f.mu.Unlock()
	if ev := f.terminal(f.deploy(v1, "again", cmdOpts{}), 20*time.Second); ev.State != wire.JobSucceeded {
		t.Fatalf("deploying the damaged bundle again: %+v", ev)
	}
	f.waitFor("an ok state after the install", 20*time.Second, func() bool {
		for _, st := range f.states[seen:] {
			if st.Online && st.Health == "ok" && st.Model != nil && st.Model.Bundle == v1 && st.Unloadable == nil {
				return true
			}
		}
		return false
	})
}
