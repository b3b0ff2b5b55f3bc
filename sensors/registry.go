package sensors

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/spi"
)

// Kind describes one kind of source, such as "bme280" or "replay". Driver
// packages register their kinds in an init function.
type Kind struct {
	Name        string  // e.g. "bme280"
	Doc         string  // one line, shown by Probe
	DefaultName string  // channel prefix when Config.Name is empty
	DefaultRate float64 // samples per second when Config.Rate is 0
	// Fields lists the Config TOML keys this kind uses besides kind and name.
	Fields []string
	// Prepare fills in kind-specific defaults and validates them; it returns
	// errors made with FieldError. It runs after the common fields were
	// checked and Name and Rate defaulted.
	Prepare func(c *Config) error
	// Channels returns the channel names for a prepared config without
	// touching hardware.
	Channels func(c Config) ([]string, error)
	// Open opens a source for a prepared config, paced at c.Rate.
	Open func(c Config, env Env) (Source, error)

	// I2CAddrs are the addresses Probe tries with DetectI2C.
	I2CAddrs []uint16
	// DetectI2C reports, using reads only, whether the device at addr is of
	// this kind, and its model name.
	DetectI2C func(b i2c.Bus, addr uint16) (model string, ok bool)
	// DetectSPI is like DetectI2C for a SPI port.
	DetectSPI func(p spi.Port) (model string, ok bool)
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]*Kind{}
)

// Register makes a kind available to Open. It panics if the kind is
// incomplete or already registered: both are programming errors found at
// init time.
func Register(k Kind) {
	if k.Name == "" || k.DefaultName == "" || k.Channels == nil || k.Open == nil {
		panic(fmt.Sprintf("sensors: Register(%q): Name, DefaultName, Channels and Open are required", k.Name))
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[k.Name]; dup {
		panic("sensors: Register called twice for kind " + k.Name)
	}
	k.Fields = slices.Clone(k.Fields)
	kinds[k.Name] = &k
}

// Kinds returns the names of the registered kinds, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookup(name string) *Kind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return kinds[name]
}

func allKinds() []*Kind {
	var ks []*Kind
	for _, n := range Kinds() {
		ks = append(ks, lookup(n))
	}
	return ks
}

// Env is what opening a source needs from the outside world. Nil fields
// mean defaults; a nil *Env means all defaults.
type Env struct {
	Buses Buses // nil: HostBuses()
	Clock Clock // nil: SystemClock
}

func (e *Env) orDefaults() Env {
	var out Env
	if e != nil {
		out = *e
	}
	if out.Buses == nil {
		out.Buses = HostBuses()
	}
	out.Clock = orSystem(out.Clock)
	return out
}

// Open validates cfg and opens its source on the real hardware (host.Init
// runs once, on first use). The source is paced at the config's rate.
func Open(cfg Config) (Source, error) {
	return OpenWith(cfg, nil)
}

// OpenWith is Open with the buses and clock of env; tests pass fakes.
func OpenWith(cfg Config, env *Env) (Source, error) {
	c, k, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	return k.Open(c, env.orDefaults())
}
