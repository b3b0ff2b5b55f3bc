// Package natstest runs a real NATS cluster for tests: nats-server nodes
// with JetStream and MQTT, on free 127.0.0.1 ports, each with its own
// configuration and directory, routed to each other, stopped at test
// cleanup. The nats-server is the version go.mod pins as a tool
// (github.com/nats-io/nats-server/v2), built by `go tool -n nats-server`
// from the module cache — never a nats-server found on the machine. Agents and trit-fleet reach it over MQTT 3.1.1, as they
// reach Mosquitto. It imports the standard library and the project's
// test helpers (internal/proc, wire/tlstest) only.
//
// A missing nats-server fails the test with installation instructions; it
// never skips.
package natstest

import (
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/internal/proc"
	"github.com/trit-iot/trit/wire/tlstest"
)

//go:embed testdata/node.conf
var nodeConf string

// Binary returns the nats-server executable: $TRIT_NATS_SERVER if set,
// else the one go.mod pins, built (once; Go's build cache keeps it) by
// `go tool -n nats-server` — scripts/test-deps.sh builds it beforehand. An
// error says how to get it.
func Binary() (string, error) {
	binOnce.Do(func() { bin, binErr = findBinary() })
	return bin, binErr
}

var (
	binOnce sync.Once
	bin     string
	binErr  error
)

func findBinary() (string, error) {
	if p := os.Getenv("TRIT_NATS_SERVER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TRIT_NATS_SERVER=%s: %w", p, err)
		}
		return p, nil
	}
	// go test puts its own GOROOT/bin first on the PATH of the tests it
	// runs (since Go 1.19), so "go" is the go that runs them.
	var stderr strings.Builder
	cmd := exec.Command("go", "tool", "-n", "nats-server")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the nats-server go.mod pins (go tool -n nats-server): %v: %s (run scripts/test-deps.sh, which downloads and builds it, or set TRIT_NATS_SERVER); tests that need it never skip",
			err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Cluster is a running set of nodes.
type Cluster struct {
	t     testing.TB
	bin   string
	nodes []*Node
	extra string       // configuration appended to every node's
	pki   *tlstest.PKI // nil: no TLS
}

// Node is one nats-server of a cluster.
type Node struct {
	c                             *Cluster
	name, dir                     string
	client, mqtt, http, clusterPt int
	proc                          *proc.Proc // nil while stopped
}

// Start starts a cluster of n nodes (n >= 1; 3 for replicated JetStream)
// and waits until JetStream is ready on every node.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartConfig(t, n, "")
}

// StartConfig is Start with extra appended to every node's configuration
// (an authorization block with users and their permissions, say).
func StartConfig(t testing.TB, n int, extra string) *Cluster {
	t.Helper()
	return start(t, n, extra, nil)
}

// StartTLS is StartConfig with TLS on the client (NATS) and MQTT
// listeners and on the routes between the nodes, each node presenting a
// certificate for 127.0.0.1 signed by a CA made for the test (CAFile);
// the routes verify each other's. The addresses are then tls:// (NATS)
// and ssl:// (MQTT).
func StartTLS(t testing.TB, n int, extra string) *Cluster {
	t.Helper()
	return start(t, n, extra, tlstest.New(t, "natstest"))
}

func start(t testing.TB, n int, extra string, pki *tlstest.PKI) *Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, extra: extra, pki: pki}
	ports := proc.FreePorts(t, 4*n)
	for i := 0; i < n; i++ {
		p := ports[4*i:]
		c.nodes = append(c.nodes, &Node{c: c, name: fmt.Sprintf("n%d", i), dir: t.TempDir(),
			client: p[0], mqtt: p[1], http: p[2], clusterPt: p[3]})
	}
	for _, nd := range c.nodes {
		nd.start()
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.Stop()
			if t.Failed() {
				if log, err := os.ReadFile(filepath.Join(nd.dir, "nats.log")); err == nil {
					t.Logf("nats-server %s log:\n%s", nd.name, proc.Tail(string(log), 30))
				}
			}
		}
	})
	for _, nd := range c.nodes {
		nd.waitReady()
	}
	c.warmMQTT()
	return c
}

// loginMark starts a comment line of the extra configuration naming a
// user and password natstest may log in with (Auth writes it).
const loginMark = "# natstest-login:"

// The login and topic natstest warms MQTT up with when the cluster has
// an authorization block (Auth).
const (
	warmUser     = "natstest-warmup"
	warmPassword = "natstest-warmup-secret"
	warmSubjects = "natstest.warmup.>"
	warmTopic    = "natstest/warmup/"
)

// warmMQTT makes each node store and then delete a retained QoS 1
// message over MQTT (3.1.1, clean session), until it acknowledges both.
// nats-server creates an account's MQTT streams (sessions, retained
// messages, messages) at its first MQTT connection, and a node's first
// retained store goes through the retained stream's leader. On a loaded
// machine a cluster just started can lose or outlast either request: a
// client that came first was refused ("unable to persist session …
// timeout"), or its retained state went unacknowledged for 20 s with
// every later packet of that connection behind it (a device's PUBLISH
// and SUBSCRIBE, TestNATSPerDevicePermissions in CI). After this, every
// node has answered both, and the tests' clients find the streams made
// and their leaders known.
func (c *Cluster) warmMQTT() {
	t := c.t
	t.Helper()
	var user, password string
	for _, line := range strings.Split(c.extra, "\n") {
		if rest, ok := strings.CutPrefix(line, loginMark); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				user, password = f[0], f[1]
			}
		}
	}
	for _, nd := range c.nodes {
		deadline := time.Now().Add(60 * time.Second)
		for {
			err := nd.mqttWarm(user, password)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("natstest: MQTT on %s not storing a retained message within 60 s: %v", nd.name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// mqttWarm makes one MQTT 3.1.1 connection (clean session), publishes a
// retained QoS 1 message on the node's warm-up topic and then the empty
// retained message that deletes it, waits for both acknowledgements and
// disconnects; or says what the server did not do. It speaks MQTT itself:
// natstest imports the standard library only.
func (nd *Node) mqttWarm(user, password string) error {
	addr := "127.0.0.1:" + strconv.Itoa(nd.mqtt)
	d := &net.Dialer{Timeout: 10 * time.Second}
	var conn net.Conn
	var err error
	if p := nd.c.pki; p != nil {
		pem, rerr := os.ReadFile(p.CAFile)
		if rerr != nil {
			return rerr
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		conn, err = tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	} else {
		conn, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	str := func(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }
	packet := func(header byte, body []byte) error {
		if len(body) > 127 {
			return fmt.Errorf("MQTT packet %#x of %d bytes", header, len(body))
		}
		_, err := conn.Write(append([]byte{header, byte(len(body))}, body...))
		return err
	}
	flags := byte(0x02) // clean session
	body := append(str("MQTT"), 4, 0, 0, 60)
	body = append(body, str("natstest-warmup-"+nd.name)...)
	if user != "" {
		flags |= 0xC0
		body = append(append(body, str(user)...), str(password)...)
	}
	body[7] = flags
	if err := packet(0x10, body); err != nil {
		return err
	}
	var ack [4]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return fmt.Errorf("no CONNACK: %w", err)
	}
	if ack[0] != 0x20 || ack[3] != 0 {
		return fmt.Errorf("CONNACK % x", ack)
	}
	// PUBLISH, QoS 1, retained: first the message, then the empty one
	// that deletes it, so no later subscriber is sent it.
	for id, payload := range []string{"warm", ""} {
		body := append(str(warmTopic+nd.name), 0, byte(id+1))
		if err := packet(0x33, append(body, payload...)); err != nil {
			return err
		}
		if _, err := io.ReadFull(conn, ack[:]); err != nil {
			return fmt.Errorf("no PUBACK for a retained message: %w", err)
		}
		if ack[0] != 0x40 || ack[1] != 2 || ack[3] != byte(id+1) {
			return fmt.Errorf("PUBACK % x", ack)
		}
	}
	return packet(0xE0, nil)
}

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// MQTTURLs lists every node's MQTT address, tcp://127.0.0.1:port.
func (c *Cluster) MQTTURLs() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.MQTTURL())
	}
	return out
}

// CAFile is the PEM file of the CA that signed the nodes' certificates
// (StartTLS); "" without TLS.
func (c *Cluster) CAFile() string {
	if c.pki == nil {
		return ""
	}
	return c.pki.CAFile
}

// NATSURLs lists every node's client address, nats://127.0.0.1:port
// (tls:// with TLS).
func (c *Cluster) NATSURLs() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.NATSURL())
	}
	return out
}

// NATSURL is the node's client (NATS protocol) address,
// nats://127.0.0.1:port (tls:// with TLS).
func (nd *Node) NATSURL() string {
	if nd.c.pki != nil {
		return "tls://127.0.0.1:" + strconv.Itoa(nd.client)
	}
	return "nats://127.0.0.1:" + strconv.Itoa(nd.client)
}

// MQTTURL is the node's MQTT address, tcp://127.0.0.1:port (ssl:// with
// TLS).
func (nd *Node) MQTTURL() string {
	if nd.c.pki != nil {
		return "ssl://127.0.0.1:" + strconv.Itoa(nd.mqtt)
	}
	return "tcp://127.0.0.1:" + strconv.Itoa(nd.mqtt)
}

// Pid is the running node's process ID (for measurements).
func (nd *Node) Pid() int { return nd.proc.Pid() }

func (nd *Node) start() {
	t := nd.c.t
	t.Helper()
	var routes []string
	for _, o := range nd.c.nodes {
		if o != nd {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", o.clusterPt))
		}
	}
	conf := strings.NewReplacer("{{NAME}}", nd.name, "{{DIR}}", nd.dir, "{{CLIENT}}", strconv.Itoa(nd.client),
		"{{MQTT}}", strconv.Itoa(nd.mqtt), "{{HTTP}}", strconv.Itoa(nd.http), "{{CLUSTER}}", strconv.Itoa(nd.clusterPt),
		"{{ROUTES}}", strings.Join(routes, ", ")).Replace(nodeConf)
	if p := nd.c.pki; p != nil {
		// The same certificate serves clients and, as server and client,
		// the routes, which verify each other's.
		cert, key := p.Server()
		block := fmt.Sprintf("tls {\n    cert_file: %q\n    key_file: %q\n    ca_file: %q\n    timeout: 5\n", cert, key, p.CAFile)
		conf = strings.Replace(conf, "# {{TLS}}", block+"  }", 1)
		conf = strings.Replace(conf, "  # {{MQTT_TLS}}", "  "+block+"  }", 1)
		conf = strings.Replace(conf, "  # {{CLUSTER_TLS}}", "  "+block+"    verify: true\n  }", 1)
	}
	conf += "\n" + nd.c.extra + "\n"
	if len(nd.c.nodes) < 3 {
		conf = strings.Replace(conf, "stream_replicas: 3", "stream_replicas: 1", 1)
	}
	if len(nd.c.nodes) == 1 { // JetStream refuses a cluster block without routes
		if i := strings.Index(conf, "\ncluster {"); i >= 0 {
			if j := strings.Index(conf[i:], "\n}\n"); j >= 0 {
				conf = conf[:i] + conf[i+j+2:]
			}
		}
	}
	path := filepath.Join(nd.dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nd.c.bin, "-c", path, "-l", filepath.Join(nd.dir, "nats.log"))
	cmd.Dir = nd.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var err error
	if nd.proc, err = proc.Start(cmd); err != nil {
		t.Fatalf("natstest: start %s: %v", nd.c.bin, err)
	}
}

// waitReady waits until the node's health check passes with JetStream
// current (a meta leader elected, the node caught up).
func (nd *Node) waitReady() {
	t := nd.c.t
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", nd.http)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-nd.proc.Done():
			log, _ := os.ReadFile(filepath.Join(nd.dir, "nats.log"))
			t.Fatalf("natstest: nats-server %s exited at start-up:\n%s", nd.name, proc.Tail(string(log), 20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("natstest: nats-server %s not healthy within 30 s (%v)", nd.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the node (SIGTERM, SIGKILL after 10 s). Stopping a stopped
// node does nothing.
func (nd *Node) Stop() {
	if nd.proc == nil {
		return
	}
	nd.proc.Stop(syscall.SIGTERM, 10*time.Second)
	nd.proc = nil
}

// Kill stops the node at once (SIGKILL), as a crash would.
func (nd *Node) Kill() {
	if nd.proc == nil {
		return
	}
	nd.proc.Kill()
	nd.proc = nil
}

// Restart starts a stopped node again on its ports and directory and
// waits until it is healthy.
func (nd *Node) Restart() {
	nd.c.t.Helper()
	nd.Stop()
	nd.start()
	nd.waitReady()
}
