package fleet

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire/mqtttest"
)

// countingPub is a Publisher that only counts (the fleet's own cost, no
// broker).
type countingPub struct{ n, bytes atomic.Int64 }

func (c *countingPub) Publish(_ string, _ byte, _ bool, payload []byte) error {
	c.n.Add(1)
	c.bytes.Add(int64(len(payload)))
	return nil
}

// reconcileFleet stores n online devices and one rollout to all of them,
// every device notified (its job unfinished), on a service publishing to
// pub.
func reconcileFleet(b *testing.B, n int, pub Publisher) *Service {
	b.Helper()
	f := newFixture(b)
	svc, err := NewService(f.db, f.svc.Registry(), "f", pub, fleettest.Key(2),
		&Options{Now: f.clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	err = f.db.Update(func(tx store.Tx) error {
		for i := range ids {
			ids[i] = fmt.Sprintf("gw-%05d", i)
			d := &inventory.Device{Device: api.Device{ID: ids[i], Online: true, Session: 1, Health: "ok", Labels: map[string]string{"site": "north"}}}
			if err := tx.Put(store.FleetDevices, ids[i], d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	info, err := svc.Registry().Add(fleettest.SignedBundle(b, "vib", 1, f.release))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateRollout(api.RolloutRequest{ID: "big", Bundle: info.Hash, Devices: ids, Timeout: time.Hour}); err != nil {
		b.Fatal(err)
	}
	svc.Tick()                         // notifies every device
	f.clk.t = f.clk.t.Add(time.Second) // a pass re-sends what was sent before it started
	return svc
}

// fullPass runs one full reconciliation pass to its end and returns the
// ticks it took.
func fullPass(b *testing.B, svc *Service) int {
	svc.recon.full.Store(true)
	ticks := 0
	for {
		svc.reconcile(svc.opt.Now())
		ticks++
		if svc.recon.pass == nil {
			return ticks
		}
		if ticks > 1000 {
			b.Fatal("the pass does not end")
		}
	}
}

// cpuTime is the user and system CPU time of process pid so far (0: this
// one), from /proc; it does not depend on how busy the machine is.
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	name := "/proc/self/stat"
	if pid != 0 {
		name = fmt.Sprintf("/proc/%d/stat", pid)
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which ends with the last ')': state is
	// field 3, utime and stime fields 14 and 15, in clock ticks (100 Hz).
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("%s: %v %v", name, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkReconcile measures one full reconciliation pass (what trit-fleet
// does after every (re)connection) over 10,000 devices whose job is
// unfinished: every command is re-signed and published. "counted" is the
// fleet's own cost (store reads, signing; a publisher that only counts);
// "mosquitto" publishes each command, QoS 1 retained, to a real Mosquitto
// on loopback, waiting for its PUBACK as trit-fleet does. The periodic pass
// costs the same per online device with an unfinished job.
//
//	go test -run '^$' -bench BenchmarkReconcile -benchtime 3x ./fleet/
func BenchmarkReconcile(b *testing.B) {
	const n = 10000
	b.Run(fmt.Sprintf("devices=%d/counted", n), func(b *testing.B) {
		pub := &countingPub{}
		svc := reconcileFleet(b, n, pub)
		pub.n.Store(0)
		pub.bytes.Store(0)
		ticks := 0
		cpu := cpuTime(b, 0)
		b.ResetTimer()
		for b.Loop() {
			ticks = fullPass(b, svc)
		}
		b.ReportMetric(float64((cpuTime(b, 0)-cpu).Milliseconds())/float64(b.N), "cpu-ms/pass")
		b.ReportMetric(float64(pub.n.Load())/float64(b.N), "commands/pass")
		b.ReportMetric(float64(pub.bytes.Load())/float64(pub.n.Load()), "bytes/command")
		b.ReportMetric(float64(ticks), "ticks/pass")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(pub.n.Load()), "µs/command")
	})
	b.Run(fmt.Sprintf("devices=%d/mosquitto", n), func(b *testing.B) {
		broker := mqtttest.Start(b)
		conn := connectPaho(b, broker.URL())
		defer conn.c.Disconnect(1000)
		svc := reconcileFleet(b, n, conn)
		cpu, bcpu := cpuTime(b, 0), cpuTime(b, broker.Pid())
		b.ResetTimer()
		for b.Loop() {
			fullPass(b, svc)
		}
		b.ReportMetric(float64((cpuTime(b, 0)-cpu).Milliseconds())/float64(b.N), "cpu-ms/pass")
		b.ReportMetric(float64((cpuTime(b, broker.Pid())-bcpu).Milliseconds())/float64(b.N), "broker-cpu-ms/pass")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/command")
	})
}

// pahoPub publishes as the fleet's broker adapter (fleet/server's Conn)
// does: the same paho client options, each publish waited for.
type pahoPub struct{ c mqtt.Client }

func connectPaho(b *testing.B, url string) pahoPub {
	b.Helper()
	const timeout = 10 * time.Second
	o := mqtt.NewClientOptions().AddBroker(url).SetClientID("trit-fleet").
		SetCleanSession(false).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(timeout).SetWriteTimeout(timeout).
		SetKeepAlive(30 * time.Second).SetOrderMatters(false)
	c := mqtt.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(timeout) || tok.Error() != nil {
		b.Fatalf("connecting to %s: %v", url, tok.Error())
	}
	return pahoPub{c}
}

func (p pahoPub) Publish(topic string, qos byte, retained bool, payload []byte) error {
	tok := p.c.Publish(topic, qos, retained, payload)
	if !tok.WaitTimeout(10 * time.Second) {
		return fmt.Errorf("mqtt: publish to %s timed out", topic)
	}
	return tok.Error()
}
