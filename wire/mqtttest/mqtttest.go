// Package mqtttest runs a real Mosquitto broker for tests: on a free
// 127.0.0.1 port, from the configuration in testdata/mosquitto.conf, with
// its own persistence directory, stopped at test cleanup. Tests of the agent
// and the fleet share it; besides the standard library it imports only
// internal/proc, which runs the process.
//
// A missing mosquitto binary fails the test with installation instructions;
// it never skips (integration tests must not pass by not running).
package mqtttest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/internal/proc"
)

//go:embed testdata/mosquitto.conf
var configTemplate string

// Broker is a running (or stopped) mosquitto.
type Broker struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	proc *proc.Proc // nil while stopped
	conf string     // configuration template: {{PORT}} and {{DIR}} are filled in
}

// Binary returns the mosquitto executable, or an error saying how to
// install it.
func Binary() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("mosquitto not found in PATH or /usr/sbin: install it with `sudo apt-get install mosquitto` (or run `make test-deps` as root); integration tests never skip")
}

// Start starts a broker on a free loopback port and registers its shutdown
// with t.Cleanup.
func Start(t testing.TB) *Broker {
	t.Helper()
	return StartConfig(t, configTemplate)
}

// StartConfig is Start with another configuration template, for tests of a
// particular broker setup (TLS, ACLs). The template must listen on
// {{PORT}} at 127.0.0.1 and may use {{DIR}}, the broker's own directory.
func StartConfig(t testing.TB, conf string) *Broker {
	t.Helper()
	if !strings.Contains(conf, "{{PORT}}") {
		t.Fatal("mqtttest: the configuration does not listen on {{PORT}}")
	}
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{t: t, bin: bin, dir: t.TempDir(), port: proc.FreePorts(t, 1)[0], conf: conf}
	return b.run()
}

// run starts b and registers its shutdown with t.Cleanup.
func (b *Broker) run() *Broker {
	t := b.t
	t.Helper()
	b.start()
	t.Cleanup(func() {
		b.Stop()
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(b.dir, "mosquitto.log")); err == nil {
				t.Logf("mosquitto log:\n%s", proc.Tail(string(log), 40))
			}
		}
	})
	return b
}

// URL returns the broker's address as tcp://127.0.0.1:port.
func (b *Broker) URL() string { return "tcp://" + b.Addr() }

// Addr returns host:port.
func (b *Broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// Dir returns the broker's working directory (config, log, persistence).
func (b *Broker) Dir() string { return b.dir }

// Pid is the running mosquitto's process ID (for measurements).
func (b *Broker) Pid() int { return b.proc.Pid() }

func (b *Broker) start() {
	t := b.t
	t.Helper()
	conf := strings.NewReplacer("{{PORT}}", strconv.Itoa(b.port), "{{DIR}}", b.dir).Replace(b.conf)
	if os.Geteuid() == 0 && !strings.Contains(conf, "\nuser ") {
		// Started as root, mosquitto switches to the "mosquitto" user, which
		// cannot write the test's private directory: the log and the
		// persistence file (retained messages across Restart) would be lost.
		conf += "\nuser root\n"
	}
	path := filepath.Join(b.dir, "mosquitto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.bin, "-c", path)
	cmd.Dir = b.dir
	// The broker dies with the test process, even one killed by go
	// test's -timeout (which runs no cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := os.Create(filepath.Join(b.dir, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	b.proc, err = proc.Start(cmd, out)
	if err != nil {
		t.Fatalf("mqtttest: start %s: %v", b.bin, err)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-b.proc.Done():
			log, _ := os.ReadFile(filepath.Join(b.dir, "stderr.log"))
			flog, _ := os.ReadFile(filepath.Join(b.dir, "mosquitto.log"))
			t.Fatalf("mqtttest: mosquitto exited at start-up:\n%s%s", log, proc.Tail(string(flog), 20))
		default:
		}
		if time.Now().After(deadline) {
			b.Stop()
			t.Fatalf("mqtttest: mosquitto did not accept connections on %s within 10s", b.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the broker (SIGTERM, so it saves its persistence file), waiting
// at most 10 s before killing it. Stopping a stopped broker does nothing.
func (b *Broker) Stop() {
	if b.proc == nil {
		return
	}
	b.proc.Stop(syscall.SIGTERM, 10*time.Second)
	b.proc = nil
}

// Restart starts a stopped broker again on the same port and directory, so
// clients reconnect to the same address and find persisted sessions and
// retained messages.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	b.start()
}

// StartSubscribeACL starts a broker whose clients are anonymous and may
// publish and receive anything, but may subscribe only to filters that
// match one of allowed (MQTT wildcards allowed); any other subscription is
// refused with SUBACK return code 0x80. It uses Mosquitto's dynamic
// security plugin, because Mosquitto 2.0's acl_file never refuses a
// subscription (it filters at delivery). For tests of refused
// subscriptions; SetSubscribeACL changes the list.
func StartSubscribeACL(t testing.TB, allowed ...string) *Broker {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	plugins, _ := filepath.Glob("/usr/lib/*/mosquitto_dynamic_security.so")
	plugins2, _ := filepath.Glob("/usr/lib/mosquitto_dynamic_security.so")
	plugins = append(plugins, plugins2...)
	if len(plugins) == 0 {
		t.Fatal("mqtttest: mosquitto_dynamic_security.so not found in /usr/lib; it comes with Debian's mosquitto package (`sudo apt-get install mosquitto`)")
	}
	b := &Broker{t: t, bin: bin, dir: t.TempDir(), port: proc.FreePorts(t, 1)[0]}
	b.conf = "listener {{PORT}} 127.0.0.1\nallow_anonymous true\n" +
		"plugin " + plugins[0] + "\nplugin_opt_config_file {{DIR}}/dynsec.json\n" +
		"log_dest file {{DIR}}/mosquitto.log\nlog_type all\n"
	b.SetSubscribeACL(allowed...)
	return b.run()
}

// SetSubscribeACL replaces the filters a broker started by
// StartSubscribeACL lets clients subscribe to; it takes effect at the next
// Restart.
func (b *Broker) SetSubscribeACL(allowed ...string) {
	b.t.Helper()
	type acl struct {
		Type  string `json:"acltype"`
		Topic string `json:"topic"`
		Allow bool   `json:"allow"`
	}
	acls := []acl{}
	for _, f := range allowed {
		acls = append(acls, acl{"subscribePattern", f, true})
	}
	conf := map[string]any{
		"defaultACLAccess": map[string]bool{"publishClientSend": true, "publishClientReceive": true, "subscribe": false, "unsubscribe": true},
		"clients":          []any{},
		"groups":           []any{map[string]any{"groupname": "anonymous", "roles": []any{map[string]string{"rolename": "tests"}}}},
		"roles":            []any{map[string]any{"rolename": "tests", "acls": acls}},
		"anonymousGroup":   "anonymous",
	}
	raw, err := json.Marshal(conf)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "dynsec.json"), raw, 0o600); err != nil {
		b.t.Fatal(err)
	}
}
