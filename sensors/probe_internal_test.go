package sensors

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
)

// fakeKind detects a device by reading register 0xD0 at 0x76 (I²C) and
// answers on any SPI port whose name says so.
func registerFakeKind(t *testing.T) {
	t.Helper()
	kindsMu.Lock()
	kinds["fake"] = &Kind{
		Name: "fake", DefaultName: "fake",
		Channels: func(Config) ([]string, error) { return nil, nil },
		Open:     func(Config, Env) (Source, error) { return nil, errors.New("no") },
		I2CAddrs: []uint16{0x76, 0x77},
		DetectI2C: func(b i2c.Bus, addr uint16) (string, bool) {
			var r [1]byte
			return "FAKE280", b.Tx(addr, []byte{0xD0}, r[:]) == nil && r[0] == 0x60
		},
		DetectSPI: func(p spi.Port) (string, bool) { return "FAKESPI", strings.Contains(p.String(), "yes") },
	}
	kindsMu.Unlock()
	t.Cleanup(func() {
		kindsMu.Lock()
		delete(kinds, "fake")
		kindsMu.Unlock()
	})
}

// answerBus answers register reads at one address.
type answerBus struct {
	addr uint16
	val  byte
}

func (b *answerBus) String() string                    { return "answer" }
func (b *answerBus) Close() error                      { return nil }
func (b *answerBus) SetSpeed(f physic.Frequency) error { return nil }
func (b *answerBus) Tx(addr uint16, w, r []byte) error {
	if addr != b.addr {
		return errors.New("NAK")
	}
	for i := range r {
		r[i] = b.val
	}
	return nil
}

type namedPort struct{ name string }

func (p namedPort) String() string                    { return p.name }
func (p namedPort) Close() error                      { return nil }
func (p namedPort) LimitSpeed(physic.Frequency) error { return nil }
func (p namedPort) Connect(physic.Frequency, spi.Mode, int) (spi.Conn, error) {
	return nil, errors.New("unused")
}

func TestProbeReport(t *testing.T) {
	registerFakeKind(t)
	inv := inventory{
		i2c: []busRef[i2c.BusCloser]{
			{name: "/dev/i2c-1 (I2C1)", open: func() (i2c.BusCloser, error) { return &answerBus{addr: 0x77, val: 0x60}, nil }},
			{name: "/dev/i2c-2", open: func() (i2c.BusCloser, error) { return &answerBus{addr: 0x10}, nil }},
			{name: "/dev/i2c-3", open: func() (i2c.BusCloser, error) { return nil, errors.New("permission denied") }},
		},
		spi: []busRef[spi.PortCloser]{
			{name: "SPI0.0", open: func() (spi.PortCloser, error) { return namedPort{"yes"}, nil }},
		},
		pins: []string{"GPIO2", "GPIO3"},
	}
	var buf bytes.Buffer
	if err := probe(&buf, inv); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"/dev/i2c-1 (I2C1)\n",
		"    0x77  FAKE280",
		"    0x77  BME280", // sensors/all is linked into this test binary
		"kind fake",
		"/dev/i2c-2\n    no known device answers",
		"/dev/i2c-3\n    cannot open: permission denied",
		"SPI0.0\n    FAKESPI",
		"GPIO pins: 2\n  GPIO2 GPIO3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	if err := probe(&buf, inventory{}); err != nil || !strings.Contains(buf.String(), "I²C buses: none (enable I²C") {
		t.Errorf("empty machine: %v\n%s", err, buf.String())
	}
}

func TestProbeHost(t *testing.T) {
	var buf bytes.Buffer
	if err := Probe(&buf); err != nil {
		t.Skipf("no periph host here: %v", err)
	}
	if !strings.Contains(buf.String(), "I²C buses") || !strings.Contains(buf.String(), "GPIO pins") {
		t.Fatalf("report:\n%s", buf.String())
	}
	t.Logf("this machine:\n%s", buf.String())
}
