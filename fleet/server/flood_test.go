package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// floodFleetEnv names the configuration TestFloodFleetProcess serves.
const floodFleetEnv = "TRIT_FLOOD_FLEET_CONFIG"

// TestFloodFleetProcess is not a test: it is trit-fleet's Serve in a
// process of its own for TestFloodAtEmbeddedBroker (so that the fleet's
// CPU time is measured apart from the devices'). It prints the addresses
// as one JSON line and serves until SIGTERM.
func TestFloodFleetProcess(t *testing.T) {
	path := os.Getenv(floodFleetEnv)
	if path == "" {
		t.Skip("runs only as TestFloodAtEmbeddedBroker's fleet process")
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ready := make(chan Ready, 1)
	go func() {
		r := <-ready
		json.NewEncoder(os.Stdout).Encode(r)
	}()
	if err := Serve(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), ready); err != nil {
		t.Fatal(err)
	}
}

// TestFloodAtEmbeddedBroker: a device with valid credentials floods QoS 0
// telemetry at the embedded broker (20,000 reports of one prediction
// each, or TRIT_FLOOD_MESSAGES) while three others report as agents do,
// QoS 1. The others lose nothing: the fleet stores every one of their
// reports. The flooder is cut to its budget (burst + rate × the time it
// flooded), and what was cut is counted on its record, exactly: stored +
// dropped = sent. (With no per-device limit its 20,000 reports were all
// counted as predictions.) The fleet runs in a process of its own; its CPU
// time over the flood is logged for docs/BENCHMARKS.md.
func TestFloodAtEmbeddedBroker(t *testing.T) {
	flood := 20000
	if v := os.Getenv("TRIT_FLOOD_MESSAGES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TRIT_FLOOD_MESSAGES=%q", v)
		}
		flood = n
	}
	const reports = 50 // per other device, one every 20 ms
	others := []string{"gw-1", "gw-2", "gw-3"}
	files := writeFleetFiles(t, "embedded")
	listen := freeAddr(t)
	config := strings.Replace(files.config, `broker = "embedded"`, fmt.Sprintf("broker = \"embedded\"\nembedded_listen = %q\nembedded_credentials = %q",
		listen, filepath.Join(files.dir, "mqtt-credentials")), 1)
	confPath := filepath.Join(files.dir, "fleet.toml")
	if err := os.WriteFile(confPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{}
	for _, id := range append([]string{"flood"}, others...) {
		pw := filepath.Join(files.dir, id+".password")
		var out, errb strings.Builder
		if code := Main([]string{"credentials", "add", id, "--config", confPath, "--password-file", pw}, &out, &errb); code != 0 {
			t.Fatalf("credentials add %s: %s", id, errb.String())
		}
		raw, _ := os.ReadFile(pw)
		secrets[id] = strings.TrimSpace(string(raw))
	}
	fleet := startFleetProcess(t, confPath)
	url := "tcp://" + listen
	tp, _ := wire.NewTopics("it")

	dial := func(id string) mqtt.Client {
		c, err := dialEmbedded(t, url, id, id, secrets[id], func(o *mqtt.ClientOptions) { o.SetOrderMatters(false) })
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		st := &wire.State{Device: id, Session: 1, Online: true, Health: "ok"}
		raw, _ := st.Marshal()
		if err := pub(t, c, tp.State(id), 1, true, raw); err != nil {
			t.Fatalf("%s: state: %v", id, err)
		}
		return c
	}
	telemetry := func(id string, seq uint64) []byte {
		now := time.Now().UnixMilli()
		raw, _ := (&wire.Telemetry{Device: id, Session: 1, Seq: seq, From: now - 10, To: now, Predictions: 1}).Marshal()
		return raw
	}
	flooder := dial("flood")
	clients := map[string]mqtt.Client{}
	for _, id := range others {
		clients[id] = dial(id)
	}
	payloads := make([][]byte, flood)
	for i := range payloads {
		payloads[i] = telemetry("flood", uint64(i+1))
	}

	cpu0, wall0 := fleet.cpu(t), time.Now()
	var wg sync.WaitGroup
	for _, id := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint64(1); seq <= reports; seq++ {
				if err := pub(t, clients[id], tp.Telemetry(id), 1, false, telemetry(id, seq)); err != nil {
					t.Errorf("%s: report %d: %v", id, seq, err)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	start := time.Now()
	for _, p := range payloads {
		flooder.Publish(tp.Telemetry("flood"), 0, false, p)
	}
	// A QoS 1 message after the flood: its PUBACK says the broker has
	// handled every one before it (a client's packets are read in order).
	st, _ := (&wire.State{Device: "flood", Session: 1, Online: true, Health: "ok"}).Marshal()
	if err := pub(t, flooder, tp.State("flood"), 1, true, st); err != nil {
		t.Fatalf("the flooder's marker: %v", err)
	}
	floodTime := time.Since(start)
	wg.Wait()

	var flooded apiDevice
	waitUntil(t, "every report accounted for", func() bool {
		for _, id := range others {
			if d := getAPIDevice(t, fleet.api, files.token, id); d.Predictions != reports {
				return false
			}
		}
		flooded = getAPIDevice(t, fleet.api, files.token, "flood")
		return flooded.Limited != nil && flooded.Predictions+flooded.Limited.Dropped() == uint64(flood)
	})
	cpu, wall := fleet.cpu(t)-cpu0, time.Since(wall0)
	lost := 0
	for _, id := range others {
		lost += reports - int(getAPIDevice(t, fleet.api, files.token, id).Predictions)
	}
	lim := defaultDeviceLimit
	budget := uint64(lim.Burst) + uint64(lim.Rate*floodTime.Seconds()) + 1
	if flooded.Predictions > budget {
		t.Errorf("the flooder had %d of its %d reports stored in %v, over its budget of %d", flooded.Predictions, flood, floodTime, budget)
	}
	if lost != 0 {
		t.Errorf("the other devices lost %d of their %d reports", lost, reports*len(others))
	}
	metrics := callAPI(t, fleet.api, files.token, "GET", "/metrics", nil)
	if want := fmt.Sprintf(`trit_fleet_device_dropped_messages_total{device="flood",reason="rate"} %d`, flooded.Limited.Rate); !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %s", want)
	}
	t.Logf("flooder: %d QoS 0 reports in %v; %d stored, %d dropped (rate %d, bytes %d, queue %d); others: %d reports sent, %d lost; "+
		"trit-fleet CPU %.2f s over %.1f s (%.0f%% of a core)",
		flood, floodTime.Round(time.Millisecond), flooded.Predictions, flooded.Limited.Dropped(), flooded.Limited.Rate, flooded.Limited.Bytes,
		flooded.Limited.Queue, reports*len(others), lost, cpu.Seconds(), wall.Seconds(), 100*cpu.Seconds()/wall.Seconds())
}

// apiDevice is what the flood test reads of a device record.
type apiDevice struct {
	Predictions uint64       `json:"predictions"`
	Limited     *api.Limited `json:"limited"`
}

func getAPIDevice(t *testing.T, addr, token, id string) apiDevice {
	var d apiDevice
	if err := json.Unmarshal(callAPI(t, addr, token, "GET", "/v1/devices/"+id, nil), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// fleetProcess is trit-fleet's Serve running in a child process.
type fleetProcess struct {
	cmd *exec.Cmd
	api string
}

func startFleetProcess(t *testing.T, confPath string) *fleetProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodFleetProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), floodFleetEnv+"="+confPath)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-lines:
		var r Ready
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.API == "" {
			t.Fatalf("the fleet process said %q", line)
		}
		return &fleetProcess{cmd: cmd, api: r.API}
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet process did not become ready")
	}
	return nil
}

// cpu returns the process's user and system CPU time so far
// (/proc/PID/stat, in clock ticks of 1/100 s, Linux's USER_HZ).
func (p *fleetProcess) cpu(t *testing.T) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(raw), ") ") // the command name may hold spaces
	f := strings.Fields(rest)
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
