package fleet

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/inventory"
	"github.com/trit-iot/trit/store"
)

// Metrics are the service's counters. Gauges that describe stored state
// (devices online, rollout progress) are computed from the store when
// Prometheus scrapes, so they are always consistent with it.
type Metrics struct {
	commands, telemetry, invalid, dropped atomic.Uint64
	succeeded, failed, rejected, timedOut atomic.Uint64
	driftAlerts                           atomic.Uint64
	unknownAlerts                         atomic.Uint64
}

func newMetrics() *Metrics { return &Metrics{} }

func (m *Metrics) finished(s api.DeviceState) {
	switch s {
	case api.DeviceSucceeded:
		m.succeeded.Add(1)
	case api.DeviceFailed:
		m.failed.Add(1)
	case api.DeviceRejected:
		m.rejected.Add(1)
	case api.DeviceTimedOut:
		m.timedOut.Add(1)
	}
}

// MetricsHandler returns the Prometheus exposition handler for the service,
// on a registry of its own (no global state).
func (s *Service) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{s: s})
	for _, c := range s.collectors() {
		reg.MustRegister(c)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

type collector struct{ s *Service }

var (
	descDevices  = prometheus.NewDesc("trit_fleet_devices", "Devices in the inventory, by online state.", []string{"online"}, nil)
	descRollout  = prometheus.NewDesc("trit_fleet_rollout_devices", "Devices of each rollout that is not done, by device state.", []string{"rollout", "state"}, nil)
	descCommands = prometheus.NewDesc("trit_fleet_commands_sent_total", "Deployment commands published.", nil, nil)
	descJobs     = prometheus.NewDesc("trit_fleet_jobs_finished_total", "Device jobs finished, by result.", []string{"result"}, nil)
	descTelem    = prometheus.NewDesc("trit_fleet_telemetry_reports_total", "Telemetry reports received.", nil, nil)
	descInvalid  = prometheus.NewDesc("trit_fleet_invalid_messages_total", "Incoming messages refused by the strict decoders.", nil, nil)
	descDropped  = prometheus.NewDesc("trit_fleet_dropped_messages_total", "Incoming messages dropped because the queue was full (each from the device holding the most of it).", nil, nil)

	descDevDropped   = prometheus.NewDesc("trit_fleet_device_dropped_messages_total", "A device's messages dropped by its per-device limits: reason rate or bytes (the embedded broker), queue (the fleet's intake).", []string{"device", "reason"}, nil)
	descDevThrottled = prometheus.NewDesc("trit_fleet_device_throttled_messages_total", "A device's QoS 1 messages the embedded broker delayed to keep it within its limits (not lost).", []string{"device"}, nil)
	descBroker       = prometheus.NewDesc("trit_fleet_broker_connected", "1 when connected to the MQTT broker with every subscription granted (and, with mqtt.nats, to NATS), else 0.", nil, nil)
	descLeading      = prometheus.NewDesc("trit_fleet_leading", "1 while this replica holds the rollout lease and steps rollouts, else 0.", []string{"replica"}, nil)
	descLeaderTerms  = prometheus.NewDesc("trit_fleet_leader_changes_total", "Times this replica became the leader.", []string{"replica"}, nil)

	descDrift       = prometheus.NewDesc("trit_fleet_device_drift", "Drift score of each device's active model (mean Jensen-Shannon divergence in bits of its fingerprinted embedding bits, 0-1).", []string{"device"}, nil)
	descDrifting    = prometheus.NewDesc("trit_fleet_devices_drifting", "Devices whose drift score is at or above the alert threshold.", nil, nil)
	descUnknown     = prometheus.NewDesc("trit_fleet_unknown_share", "Share (0-1) of the windows in the devices' latest telemetry intervals that their calibrated models reported unknown (devices running a calibrated bundle only; absent without one).", nil, nil)
	descUncertain   = prometheus.NewDesc("trit_fleet_devices_uncertain", "Devices whose unknown rate (latest telemetry interval) is at or above the alert threshold.", nil, nil)
	descUnkAlerts   = prometheus.NewDesc("trit_fleet_unknown_alerts_total", "Times a device's unknown rate crossed the alert threshold.", nil, nil)
	descDriftAlerts = prometheus.NewDesc("trit_fleet_drift_alerts_total", "Times a device's drift score crossed the alert threshold.", nil, nil)
	descShadowWin   = prometheus.NewDesc("trit_fleet_shadow_windows", "Windows a device scored with a shadow candidate, per running rollout.", []string{"rollout", "device"}, nil)
	descShadowAgree = prometheus.NewDesc("trit_fleet_shadow_agreement", "Share of windows on which the shadow candidate predicted the active model's class.", []string{"rollout", "device"}, nil)
	descShadowDiv   = prometheus.NewDesc("trit_fleet_shadow_divergence", "Jensen-Shannon divergence (bits) between the candidate's and the active model's class distributions.", []string{"rollout", "device"}, nil)
	descMissing     = prometheus.NewDesc("trit_fleet_device_telemetry_missing", "Reports of a device's telemetry sequence the fleet has not received (gaps less late arrivals): dropped by a broker or by the device's full outbox.", []string{"device"}, nil)
	descMissingAll  = prometheus.NewDesc("trit_fleet_telemetry_missing", "Reports missing from the devices' telemetry sequences, over all devices (trit_fleet_device_telemetry_missing summed).", nil, nil)
	descDamaged     = prometheus.NewDesc("trit_fleet_damaged_records", "Stored records that do not decode and are skipped, by collection (docs/FLEET.md \"Damaged records\").", []string{"collection"}, nil)
	descAlarms      = prometheus.NewDesc("trit_fleet_alarms", "1 for each alarm raised now about trit-fleet itself (a listener that stopped; the console's overview says what to do).", []string{"alarm"}, nil)
	descShadowLow   = prometheus.NewDesc("trit_fleet_shadow_low_margin_rate", "Share of the shadow candidate's predictions with a low margin.", []string{"rollout", "device"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDevices, descRollout, descCommands, descJobs, descTelem, descInvalid, descDropped, descBroker, descLeading, descLeaderTerms,
		descDevDropped, descDevThrottled, descDrift, descDrifting, descUnknown, descUncertain, descUnkAlerts, descDriftAlerts, descShadowWin, descShadowAgree, descShadowDiv, descShadowLow, descAlarms, descDamaged, descMissing, descMissingAll} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.s.metrics
	ch <- prometheus.MustNewConstMetric(descCommands, prometheus.CounterValue, float64(m.commands.Load()))
	ch <- prometheus.MustNewConstMetric(descTelem, prometheus.CounterValue, float64(m.telemetry.Load()))
	ch <- prometheus.MustNewConstMetric(descInvalid, prometheus.CounterValue, float64(m.invalid.Load()))
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(m.dropped.Load()))
	ch <- prometheus.MustNewConstMetric(descDriftAlerts, prometheus.CounterValue, float64(m.driftAlerts.Load()))
	leading := 0.0
	if c.s.Leading() {
		leading = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeading, prometheus.GaugeValue, leading, c.s.opt.Replica)
	ch <- prometheus.MustNewConstMetric(descLeaderTerms, prometheus.CounterValue, float64(c.s.leader.changes.Load()), c.s.opt.Replica)
	ch <- prometheus.MustNewConstMetric(descUnkAlerts, prometheus.CounterValue, float64(m.unknownAlerts.Load()))
	alarmed := map[string]bool{}
	for _, a := range c.s.Alarms() {
		if !alarmed[a.Name] { // one series per name, however many sources raise it
			alarmed[a.Name] = true
			ch <- prometheus.MustNewConstMetric(descAlarms, prometheus.GaugeValue, 1, a.Name)
		}
	}
	if bc, ok := c.s.pub.(interface{ Connected() bool }); ok {
		up := 0.0
		if bc.Connected() {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descBroker, prometheus.GaugeValue, up)
	}
	for result, v := range map[string]*atomic.Uint64{"succeeded": &m.succeeded, "failed": &m.failed, "rejected": &m.rejected, "timed-out": &m.timedOut} {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.CounterValue, float64(v.Load()), result)
	}
	damaged := func(coll store.Collection, bad []api.Damaged) {
		ch <- prometheus.MustNewConstMetric(descDamaged, prometheus.GaugeValue, float64(len(bad)), coll.String())
	}
	if _, bad, err := c.s.reg.BundlesAndDamaged(); err == nil {
		damaged(store.FleetBundles, bad)
	}
	if jobs, windows, err := c.s.DamagedJobsAndWindows(); err == nil {
		damaged(store.FleetTrainJobs, jobs)
		ch <- prometheus.MustNewConstMetric(descDamaged, prometheus.GaugeValue, float64(windows), store.FleetWindows.String())
	}
	if devices, bad, err := inventory.All(c.s.db); err == nil {
		damaged(store.FleetDevices, bad)
		online := 0
		for _, d := range devices {
			if d.Online {
				online++
			}
		}
		drifting := 0
		var unknown, windows, missing float64
		uncertain := 0
		for _, d := range devices {
			if d.Uncertain {
				uncertain++
			}
			if u, ok := d.UnknownRate(); ok {
				n := 0.0
				for _, k := range d.Confidence.Histogram {
					n += float64(k)
				}
				unknown, windows = unknown+u*n, windows+n
			}
			if l := d.Limited; l != nil {
				for reason, n := range map[string]uint64{"rate": l.Rate, "bytes": l.Bytes, "queue": l.Queue} {
					ch <- prometheus.MustNewConstMetric(descDevDropped, prometheus.CounterValue, float64(n), d.ID, reason)
				}
				ch <- prometheus.MustNewConstMetric(descDevThrottled, prometheus.CounterValue, float64(l.Throttled), d.ID)
			}
			if d.Drift != nil {
				ch <- prometheus.MustNewConstMetric(descDrift, prometheus.GaugeValue, d.Drift.Score, d.ID)
			}
			if d.TelemetryMissing > 0 {
				ch <- prometheus.MustNewConstMetric(descMissing, prometheus.GaugeValue, float64(d.TelemetryMissing), d.ID)
				missing += float64(d.TelemetryMissing)
			}
			if d.Drifting {
				drifting++
			}
		}
		ch <- prometheus.MustNewConstMetric(descDrifting, prometheus.GaugeValue, float64(drifting))
		ch <- prometheus.MustNewConstMetric(descMissingAll, prometheus.GaugeValue, missing)
		ch <- prometheus.MustNewConstMetric(descUncertain, prometheus.GaugeValue, float64(uncertain))
		if windows > 0 {
			ch <- prometheus.MustNewConstMetric(descUnknown, prometheus.GaugeValue, unknown/windows)
		}
		ch <- prometheus.MustNewConstMetric(descDevices, prometheus.GaugeValue, float64(online), "true")
		ch <- prometheus.MustNewConstMetric(descDevices, prometheus.GaugeValue, float64(len(devices)-online), "false")
	}
	if rollouts, bad, err := c.s.RolloutsAndDamaged(); err == nil {
		damaged(store.FleetRollouts, bad)
		for _, r := range rollouts {
			if r.State.Done() {
				continue
			}
			for state, n := range r.Counts() {
				ch <- prometheus.MustNewConstMetric(descRollout, prometheus.GaugeValue, float64(n), r.ID, string(state))
			}
			for _, id := range r.Order {
				rep := r.Devices[id].Shadow
				if rep == nil {
					continue
				}
				ch <- prometheus.MustNewConstMetric(descShadowWin, prometheus.GaugeValue, float64(rep.Windows), r.ID, id)
				ch <- prometheus.MustNewConstMetric(descShadowAgree, prometheus.GaugeValue, rep.Agreement(), r.ID, id)
				if rep.ClassesCounted() { // not reported: no series, rather than a 0
					ch <- prometheus.MustNewConstMetric(descShadowDiv, prometheus.GaugeValue, rep.Divergence(), r.ID, id)
				}
				ch <- prometheus.MustNewConstMetric(descShadowLow, prometheus.GaugeValue, rep.LowMarginRate(), r.ID, id)
			}
		}
	}
}
