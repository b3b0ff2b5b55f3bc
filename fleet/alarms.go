package fleet

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Alarms are conditions of trit-fleet itself, not of a device, that need an
// operator: a listener that stopped accepting connections. Each comes from a source the server adds (AddAlarms), asked
// whenever someone looks, so an alarm lasts exactly as long as its
// condition. The console's overview lists them first among its alerts;
// /metrics counts them (trit_fleet_alarms).
type Alarm struct {
	Name string // stable, for the metric's label: "listener-mqtt-devices"
	Text string // what is wrong and what to do, for a person
}

// extras are the server's additions to the service: alarm sources and
// metrics collectors of the parts the service does not own (the embedded
// broker's listeners).
type extras struct {
	mu      sync.Mutex
	alarms  []func() []Alarm
	metrics []prometheus.Collector
}

// AddAlarms adds a source of alarms; src must be cheap and safe to call
// from any goroutine.
func (s *Service) AddAlarms(src func() []Alarm) {
	s.extras.mu.Lock()
	defer s.extras.mu.Unlock()
	s.extras.alarms = append(s.extras.alarms, src)
}

// AddMetrics adds a collector to the service's /metrics.
func (s *Service) AddMetrics(c prometheus.Collector) {
	s.extras.mu.Lock()
	defer s.extras.mu.Unlock()
	s.extras.metrics = append(s.extras.metrics, c)
}

// Alarms returns the alarms raised now.
func (s *Service) Alarms() []Alarm {
	s.extras.mu.Lock()
	srcs := slices.Clone(s.extras.alarms)
	s.extras.mu.Unlock()
	var out []Alarm
	for _, src := range srcs {
		out = append(out, src()...)
	}
	return out
}

// collectors returns the added collectors.
func (s *Service) collectors() []prometheus.Collector {
	s.extras.mu.Lock()
	defer s.extras.mu.Unlock()
	return slices.Clone(s.extras.metrics)
}
