package fleet

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres"
	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire"
)

// BenchmarkIntakePostgres measures telemetry intake on PostgreSQL: the
// service's decode, its transaction per batch (the device record and its
// health documents) and PostgreSQL's work, with one replica and with two
// sharing the devices (each report to one replica, as the NATS feed gives
// them). 2,000 devices report in turn, each report a new interval 10 s
// after the device's last. Reports are handed to the services directly: no
// broker. Reported: reports/s, and the CPU PostgreSQL (the postmaster and
// its backends) spent per 1,000 reports.
//
// The health history is as large as a fleet's is on average: before the
// clock starts, every device reports once an hour for twelve hours and
// then once a minute for thirty minutes (the fleet's clock moved on each
// time), so its day document holds 12 hour points and its hour document
// 29 minute points (the latest minute and hour are in its record) — half
// of what they hold at the end of a day and of an hour. The timed reports
// then come at the default interval, the clock 10 s on at each round of
// the devices, so every sixth report of a device moves its finished
// minute to the hour's document. (With the clock standing still no
// report would.)
//
//	go test -run '^$' -bench BenchmarkIntakePostgres -benchtime 20000x ./fleet
func BenchmarkIntakePostgres(b *testing.B) {
	// A PostgreSQL with durable settings (fsync and synchronous commits
	// on, as in production; pgtest's shared server has them off).
	srv, err := pgtest.StartDurable()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			benchIntake(b, srv, replicas)
		})
	}
}

func benchIntake(b *testing.B, srv *pgtest.Server, replicas int) {
	const devices = 2000
	dsn, err := srv.CreateDatabase()
	if err != nil {
		b.Fatal(err)
	}
	var fs []*fixture
	for i := range replicas {
		db, err := postgres.Open(dsn, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		fs = append(fs, newFixtureOn(b, db, func(o *Options) { o.Replica = fmt.Sprint("r", i) }))
	}
	topics := fs[0].svc.Topics()
	report := func(dev int, seq uint64, from time.Time) (topic string, raw []byte) {
		id := fmt.Sprintf("gw-%05d", dev)
		raw, err := (&wire.Telemetry{Device: id, Session: 1, Boot: 1, Seq: seq, From: from.UnixMilli(), To: from.UnixMilli() + 10000, Predictions: 10,
			Counts: map[string]uint64{"normal": 9, "fault": 1}, Latency: &wire.Latency{P50: 40, P90: 55, P99: 80, Max: 120}}).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		return topics.Telemetry(id), raw
	}
	// The health history, before the clock starts: hours 0–11 of the day,
	// then minutes 0–29 of hour 12 (t0), one report from every device at
	// each.
	var at []time.Time
	for h := 12; h > 0; h-- {
		at = append(at, t0.Add(-time.Duration(h)*time.Hour))
	}
	for m := range 30 {
		at = append(at, t0.Add(time.Duration(m)*time.Minute))
	}
	for k, now := range at {
		for _, f := range fs {
			f.clk.t = now
		}
		for dev := range devices {
			topic, raw := report(dev, uint64(k)+1, now)
			fs[dev%replicas].svc.Deliver(topic, raw)
		}
		for _, f := range fs {
			f.svc.Drain()
		}
	}
	warm := uint64(len(at))
	last := at[len(at)-1]
	if err := fs[0].db.View(func(tx store.Tx) error {
		points, err := inventory.HourPoints(tx, "gw-00000", t0)
		if err == nil && len(points) != 30 {
			err = fmt.Errorf("the hour holds %d minute points, want 30", len(points))
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	// The reports, made before the clock starts: device i%devices, its
	// k-th report one interval after the last.
	type msg struct {
		topic   string
		payload []byte
	}
	msgs := make([][]msg, replicas)
	for i := range b.N {
		dev, k := i%devices, uint64(i/devices)+1
		topic, raw := report(dev, warm+k, last.Add(time.Duration(k)*10*time.Second))
		r := dev % replicas
		msgs[r] = append(msgs[r], msg{topic, raw})
	}
	cpu0, self0 := procTreeCPU(srv.Pid()), selfCPU()
	load0 := loadAvg()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for r, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A round is one report from each of the replica's devices,
			// the interval's; the fleet's clock moves on 10 s a round, so
			// a device's minute ends every sixth (and its point moves to
			// the hour's document, as in a fleet).
			round := devices / replicas
			for lo, k := 0, 1; lo < len(msgs[r]); lo, k = lo+round, k+1 {
				f.clk.t = last.Add(time.Duration(k) * 10 * time.Second)
				for _, m := range msgs[r][lo:min(lo+round, len(msgs[r]))] {
					f.svc.Deliver(m.topic, m.payload)
				}
				f.svc.Drain()
			}
		}()
		if os.Getenv("SEQ") != "" {
			wg.Wait()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu, self := procTreeCPU(srv.Pid())-cpu0, selfCPU()-self0
	var applied uint64
	ds, err := inventory.Devices(fs[0].db)
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range ds {
		applied += d.Predictions / 10
	}
	applied -= warm * devices
	if applied != uint64(b.N) {
		b.Fatalf("%d reports applied of %d", applied, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reports/s")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N)*1000, "pg-cpu-ms/1k-reports")
	b.ReportMetric(self.Seconds()*1000/float64(b.N)*1000, "fleet-cpu-ms/1k-reports")
	b.Logf("%d reports from %d devices, %d replica(s): %v, %.0f reports/s; CPU: PostgreSQL %v (%.0f%% of one core), the replicas %v (%.0f%%); load average %s → %s",
		b.N, devices, replicas, elapsed.Round(time.Millisecond), float64(b.N)/elapsed.Seconds(), cpu.Round(time.Millisecond), 100*cpu.Seconds()/elapsed.Seconds(),
		self.Round(time.Millisecond), 100*self.Seconds()/elapsed.Seconds(), load0, loadAvg())
}

// procTreeCPU is the CPU time (user + system) process pid and its live
// children have used, with the children it already reaped.
func procTreeCPU(pid int) time.Duration {
	ticks := func(p string, withChildren bool) int64 {
		raw, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return 0
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
		var t int64
		n := 2 // utime, stime (fields 14, 15)
		if withChildren {
			n = 4 // cutime, cstime (16, 17)
		}
		for i := 11; i < 11+n; i++ {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			t += v
		}
		return t
	}
	total := ticks(strconv.Itoa(pid), true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			total += ticks(e.Name(), false)
		}
	}
	return time.Duration(total) * time.Second / 100 // USER_HZ
}

// selfCPU is the CPU time (user + system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadAvg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// TestConcurrentIntakeLosesNothing: two replicas on one PostgreSQL apply
// the same devices' reports at the same time (their transactions run side
// by side, UpdateShared): every report is counted exactly once, none
// lost to a concurrent write, whatever the interleaving — and copies
// handed to both are refused by whichever applies them second.
func TestConcurrentIntakeLosesNothing(t *testing.T) {
	dsn := pgtest.Database(t)
	var fs []*fixture
	for i := range 2 {
		db, err := postgres.Open(dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fs = append(fs, newFixtureOn(t, db, func(o *Options) { o.Replica = fmt.Sprint("r", i) }))
	}
	const devices, reports = 40, 60
	topics := fs[0].svc.Topics()
	var wg sync.WaitGroup
	for r, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := uint64(1); k <= reports; k++ {
				for dev := range devices {
					// Each replica gets every other report, and a copy of
					// every fifth report the other gets.
					if int(k)%2 != r && k%5 != 0 {
						continue
					}
					id := fmt.Sprintf("gw-%02d", dev)
					raw, err := (&wire.Telemetry{Device: id, Session: 1, Boot: 1, Seq: k, From: 1, To: 2, Predictions: k}).Marshal()
					if err != nil {
						t.Error(err)
						return
					}
					f.svc.Deliver(topics.Telemetry(id), raw)
				}
				if k%7 == 0 {
					f.svc.Drain()
				}
			}
			f.svc.Drain()
		}()
	}
	wg.Wait()
	ds, err := inventory.Devices(fs[0].db)
	if err != nil {
		t.Fatal(err)
	}
	const want = reports * (reports + 1) / 2
	if len(ds) != devices {
		t.Fatalf("%d devices, want %d", len(ds), devices)
	}
	for _, d := range ds {
		if d.Predictions != want || len(d.TelemetryRuns) != 1 || d.TelemetryRuns[0].To != reports || d.TelemetryMissing != 0 {
			t.Errorf("%s: %d predictions, runs %v, %d missing; want %d, one run 1–%d, none", d.ID, d.Predictions, d.TelemetryRuns, d.TelemetryMissing, want, reports)
		}
	}
}
