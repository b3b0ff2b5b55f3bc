package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trit-iot/trit/agent"
	"github.com/trit-iot/trit/fleet/server"
	"github.com/trit-iot/trit/tritctl"
)

// TestExampleConfigs: the configurations the README's first rollout copies
// (docs/examples) are valid, agree on the fleet and the broker, and keep
// the embedded broker off port 1883.
func TestExampleConfigs(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "docs", "examples")
	fc, err := server.LoadConfig(filepath.Join(dir, "fleet.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if fc.MQTT.Broker != "embedded" || fc.MQTT.EmbeddedListen != server.DefaultEmbeddedListen {
		t.Errorf("fleet.toml: broker %q on %q, want the embedded broker on the default %s", fc.MQTT.Broker, fc.MQTT.EmbeddedListen, server.DefaultEmbeddedListen)
	}
	// The agent's config names key files relative to the directory it
	// runs in, made there as the README does.
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"release", "command"} {
		if code := tritctl.Main([]string{"keys", "gen", "--out", k}); code != 0 {
			t.Fatalf("tritctl keys gen --out %s: exit %d", k, code)
		}
	}
	var out bytes.Buffer
	if code := server.Main([]string{"credentials", "add", "gw-1", "--config", filepath.Join(dir, "fleet.toml"), "--password-file", "gw-1.password"}, &out, &out); code != 0 {
		t.Fatalf("trit-fleet credentials add: exit %d: %s", code, out.String())
	}
	ac, err := agent.LoadConfig(filepath.Join(dir, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if ac.Fleet != fc.Fleet || ac.MQTT.Broker != "tcp://"+fc.MQTT.EmbeddedListen {
		t.Errorf("agent.toml: fleet %q broker %q; fleet.toml: fleet %q embedded_listen %q", ac.Fleet, ac.MQTT.Broker, fc.Fleet, fc.MQTT.EmbeddedListen)
	}
}
