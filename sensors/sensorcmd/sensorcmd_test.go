package sensorcmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2ctest"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// run executes the sensors command in-process with args and returns its
// output and error.
func run(t *testing.T, d *deps, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	d.stdout, d.stderr = &out, &out
	d.signals = func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
	cmd := newCmd(d)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

func fakeDeps(buses *sensortest.Buses) *deps {
	clock := sensortest.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	return &deps{
		env:    &sensors.Env{Buses: buses, Clock: clock},
		policy: &sensors.RetryPolicy{Clock: clock},
		probe:  func(w io.Writer) error { _, err := io.WriteString(w, "I²C buses: none\n"); return err },
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadSynthetic(t *testing.T) {
	out, err := run(t, fakeDeps(&sensortest.Buses{}), "read", "--kind", "synthetic", "--state", "imbalance", "--count", "600", "--every", "100")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "reading accel.x, accel.y, accel.z, accel.temperature; 16 features: accel.x.rms, accel.x.p2p, accel.x.band_0_50") {
		t.Fatalf("header %q", lines[0])
	}
	// 600 samples: 6 readings printed, feature vectors after 256 and 512.
	if n := strings.Count(out, " accel.x="); n != 6 {
		t.Fatalf("%d readings printed, want 6:\n%s", n, out)
	}
	if n := strings.Count(out, "  features: accel.x.rms="); n != 2 {
		t.Fatalf("%d feature lines, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "2025-06-01T12:00:00.1Z accel.x=") || !strings.HasSuffix(out, "health: accel ok\n") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestReadReplay(t *testing.T) {
	csv := writeFile(t, "rec.csv", "time,vib.x,vib.y\n1735830245.0,0.5,1\n1735830245.5,-0.5,2\n")
	out, err := run(t, fakeDeps(&sensortest.Buses{}), "read", "--kind", "replay", "--file", csv, "--features", "none")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "reading vib.x, vib.y\n" +
		"2025-01-02T15:04:05Z vib.x=0.5 vib.y=1\n" +
		"2025-01-02T15:04:05.5Z vib.x=-0.5 vib.y=2\n" +
		"health: replay ok\n"
	if out != want {
		t.Fatalf("output\n%s\nwant\n%s", out, want)
	}
	// A spec file: the mean over windows of 2.
	spec := writeFile(t, "spec.toml", "[[feature]]\nchannel = \"vib.y\"\nwindow = 2\nstats = [\"mean\", \"p2p\"]\n")
	out, err = run(t, fakeDeps(&sensortest.Buses{}), "read", "--kind", "replay", "--file", csv, "--features", spec)
	if err != nil || !strings.Contains(out, "  features: vib.y.mean=1.5 vib.y.p2p=1\n") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// bme280 start-up and one measurement (23.72 °C) on I²C at 0x76, as in
// sensors/bmxx80's tests.
func bme280Ops() []i2ctest.IO {
	calib := []byte{0x10, 0x6e, 0x6c, 0x66, 0x32, 0x0, 0x5d, 0x95, 0xb8, 0xd5, 0xd0, 0xb, 0x77, 0x1e, 0x9d, 0xff, 0xf9, 0xff, 0xac, 0x26, 0xa, 0xd8, 0xbd, 0x10, 0x0, 0x4b}
	return []i2ctest.IO{
		{Addr: 0x76, W: []byte{0xD0}, R: []byte{0x60}},
		{Addr: 0x76, W: []byte{0x88}, R: calib},
		{Addr: 0x76, W: []byte{0xE1}, R: []byte{0x6e, 0x1, 0x0, 0x13, 0x5, 0x0, 0x1e}},
		{Addr: 0x76, W: []byte{0xF4, 0x6C, 0xF2, 0x03, 0xF5, 0x84, 0xF4, 0x6F}},
		{Addr: 0x76, W: []byte{0xF7}, R: []byte{0x4a, 0x52, 0xc0, 0x80, 0x96, 0xc0, 0x7a, 0x76}},
		{Addr: 0x76, W: []byte{0xF4, 0x6C}}, // sleep at close
	}
}

const twoSensors = `
# other agent settings are ignored here
[mqtt]
broker = "tcp://127.0.0.1:1883"

[[sensor]]
kind = "synthetic"
state = "bearing_fault"

[[sensor]]
kind = "bme280"
name = "env"
bus = "I2C1"

[[sensor]]
kind = "bmp280"
name = "gone"
bus = "I2C7"

[features]
rate = 1000
[[features.feature]]
channel = "accel.x"
window = 64
stats = ["rms"]
bands = [[250, 500]]
[[features.feature]]
channel = "env.temperature"
window = 64
stats = ["mean"]
`

// bmeFirstClock is the real clock, except that the 1 kHz primary's
// sleeps (1 ms or less) wait until the BME280 read in the background holds
// its first measurement: on a loaded machine the primary's 200 samples
// (200 ms) could otherwise all be read before the background goroutine
// ran. The value is in the merged reading once that goroutine, having
// made the data transfer (the playback's fifth), sleeps towards its next
// sample at 1 Hz.
type bmeFirstClock struct {
	bus   *i2ctest.Playback
	once  sync.Once
	ready chan struct{}
}

func (c *bmeFirstClock) Now() time.Time { return time.Now() }

func (c *bmeFirstClock) Sleep(ctx context.Context, d time.Duration) error {
	c.bus.Lock()
	measured := c.bus.Count >= 5
	c.bus.Unlock()
	switch {
	case d <= time.Millisecond:
		select {
		case <-c.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	case d >= 100*time.Millisecond && measured:
		c.once.Do(func() { close(c.ready) })
	}
	return sensors.SystemClock.Sleep(ctx, d)
}

func TestReadConfigMergesSensors(t *testing.T) {
	// Real time here: the synthetic machine at 1 kHz paces the output and
	// the BME280 (at 1 Hz) and the missing BMP280 are read in the
	// background, as on a gateway.
	bus := &i2ctest.Playback{Ops: bme280Ops(), DontPanic: true}
	clock := &bmeFirstClock{bus: bus, ready: make(chan struct{})}
	d := &deps{
		env:    &sensors.Env{Buses: &sensortest.Buses{I2C: map[string]i2c.Bus{"I2C1": bus}}, Clock: clock},
		policy: &sensors.RetryPolicy{ReopenDelay: time.Hour, Clock: clock},
	}
	cfg := writeFile(t, "agent.toml", twoSensors)
	out, err := run(t, d, "read", "--config", cfg, "--count", "200", "--every", "199")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "reading accel.x, accel.y, accel.z, accel.temperature, env.temperature, env.pressure, env.humidity, gone.temperature, gone.pressure; 3 features: accel.x.rms, accel.x.band_250_500, env.temperature.mean\n") {
		t.Fatalf("header:\n%s", out)
	}
	// The last printed reading holds the BME280's value; the missing
	// sensor's channels are NaN and its health says why.
	if !regexp.MustCompile(`accel.temperature=\S+ env.temperature=23.72 env.pressure=1009.43 env.humidity=65.3056 gone.temperature=NaN gone.pressure=NaN\n`).MatchString(out) {
		t.Fatalf("merged reading:\n%s", out)
	}
	if !strings.Contains(out, "features: accel.x.rms=") || !strings.Contains(out, "health: accel ok\nhealth: env ok\nhealth: gone failed since") ||
		!strings.Contains(out, `I2C7`) {
		t.Fatalf("output:\n%s", out)
	}
	if bus.Count != len(bus.Ops) {
		t.Fatalf("BME280: %d of %d transfers", bus.Count, len(bus.Ops))
	}

	// --sensor picks sensors of the config; the config's features then
	// cannot be computed without env.temperature: refused by name.
	out, err = run(t, fakeDeps(&sensortest.Buses{}), "read", "--config", cfg, "--sensor", "accel", "--count", "1")
	if err == nil || !strings.Contains(err.Error(), `"env.temperature"`) {
		t.Fatalf("features without their channel: %v\n%s", err, out)
	}
	if out, err = run(t, fakeDeps(&sensortest.Buses{}), "read", "--config", cfg, "--sensor", "accel", "--features", "synthetic", "--count", "256", "--every", "1000"); err != nil || !strings.Contains(out, "features: accel.x.rms=") {
		t.Fatalf("--sensor accel --features synthetic: %v\n%s", err, out)
	}
}

func TestProbe(t *testing.T) {
	d := fakeDeps(&sensortest.Buses{I2C: map[string]i2c.Bus{"I2C1": &i2ctest.Playback{Ops: bme280Ops()[:5], DontPanic: true}}})
	out, err := run(t, d, "probe")
	if err != nil || out != "I²C buses: none\n" {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	cfg := writeFile(t, "agent.toml", twoSensors)
	out, err = run(t, d, "probe", "--config", cfg)
	if err == nil || err.Error() != "1 of 3 configured sensors failed" {
		t.Fatalf("probe --config: %v\n%s", err, out)
	}
	for _, want := range []string{
		"configured sensors (" + cfg + "):\n",
		"  accel        synthetic  simulated              ok: accel.x=",
		"  env          bme280     I2C1 0x76              ok: env.temperature=23.72 env.pressure=1009.4 env.humidity=65.306\n",
		"  gone         bmp280     I2C7 0x76              FAILED: sensor \"gone\": open: sensortest: no I²C bus \"I2C7\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("probe output lacks %q:\n%s", want, out)
		}
	}
	// A failing host is reported, and the command fails.
	d.probe = func(io.Writer) error { return errors.New("periph host.Init: boom") }
	if out, err := run(t, d, "probe"); err == nil || !strings.Contains(out, "host: periph host.Init: boom") {
		t.Fatalf("failing host: %v\n%s", err, out)
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	cfg := writeFile(t, "agent.toml", twoSensors)
	for _, args := range [][]string{
		{"read"},
		{"read", "--config", cfg, "--kind", "synthetic"},
		{"read", "--kind", "synthetic", "--sensor", "accel"},
		{"read", "--kind", "bme280", "--address", "0x50"},
		{"read", "--kind", "thermocouple"},
		{"read", "--kind", "synthetic", "--count", "-1"},
		{"read", "--config", cfg, "--sensor", "nope"},
	} {
		_, err := run(t, fakeDeps(&sensortest.Buses{}), args...)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{"[[sensor]]\nkind = \"bme280\"\nadress = 0x76\n", "unknown key sensor.adress"},
		{"[[sensor]]\nkind = \"bme280\"\naddress = 0x76\n[features]\nrate = 100\n[[features.feature]]\nchanel = \"x\"\n", "unknown key features.feature.chanel"},
		{"[[sensor]]\nkind = \"bme280\"\naddress = \"0x76\"\n", "line 3"},
		{"[[sensor]]\nkind = \"bme280\"\naddress = 0x50\n", "field address"},
	} {
		path := writeFile(t, "bad.toml", c.doc)
		_, err := run(t, fakeDeps(&sensortest.Buses{}), "read", "--config", path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.toml") {
			t.Errorf("%q: got %v, want an error containing %q", c.doc, err, c.want)
		}
	}
	// A band spec for 1 kHz cannot run on a 100 Hz accelerometer.
	_, err := run(t, fakeDeps(&sensortest.Buses{}), "read", "--kind", "adxl345", "--features", "synthetic")
	if err == nil || !strings.Contains(err.Error(), "set its rate to 1000") {
		t.Fatalf("rate mismatch: %v", err)
	}
}

// TestDocExamples parses every TOML example of docs/SENSORS.md: the sensor
// tables as an agent configuration, the feature table as a pipeline spec.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/SENSORS.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 6 {
		t.Fatalf("found %d TOML examples in docs/SENSORS.md", len(blocks))
	}
	kinds := map[string]bool{}
	for _, b := range blocks {
		text := b[1]
		if !strings.Contains(text, "[[sensor]]") {
			path := writeFile(t, "spec.toml", text)
			if _, err := LoadSpec(path); err != nil {
				t.Errorf("spec example:\n%s\n%v", text, err)
			}
			continue
		}
		cfg, err := ParseConfig(text)
		if err != nil {
			t.Errorf("config example:\n%s\n%v", text, err)
			continue
		}
		for _, c := range cfg.Sensors {
			kinds[c.Kind] = true
		}
	}
	for _, k := range []string{"bme280", "ads1115", "adxl345", "gpio", "synthetic", "replay"} {
		if !kinds[k] {
			t.Errorf("docs/SENSORS.md has no config example of kind %s", k)
		}
	}
}
