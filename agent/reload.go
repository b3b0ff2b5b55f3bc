package agent

import (
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/internal/config"
	"github.com/trit-iot/trit/wire"
)

// liveConfig is the part of the configuration a reload replaces as a
// whole; readers Load it once per use.
type liveConfig struct {
	labels   map[string]string
	hardware string
	interval time.Duration
}

func newLive(c *Config) *liveConfig {
	return &liveConfig{labels: c.Labels, hardware: c.Hardware, interval: c.Telemetry.Interval.Duration}
}

// loadKeys reads the trusted keys c names.
func (a *Agent) loadKeys(c *Config) error {
	ck, err := wire.LoadKeySet(c.CommandKeys...)
	if err != nil {
		return err
	}
	rk, err := bundle.LoadKeySet(c.ReleaseKeys...)
	if err != nil {
		return err
	}
	a.cmdKeys.Store(ck)
	a.relKeys.Store(rk)
	return nil
}

// reload re-reads the configuration (SIGHUP) and applies what can change
// while running: telemetry interval, sensors and features, labels,
// hardware, log level and trusted keys. A configuration that does not load
// (or whose sensors the running model cannot use) is refused as a whole and
// the running one kept; keys that need a restart (identity, broker, state,
// install and outbox settings) are reported and left as they are.
func (a *Agent) reload(ctx context.Context, o *Options) {
	if o.LoadConfig == nil {
		a.log.Warn("reload requested but this agent has no configuration file to re-read")
		return
	}
	refuse := func(err error) {
		a.log.Error("configuration reload refused; the running configuration is kept", "err", err)
	}
	next, err := o.LoadConfig()
	if err != nil {
		refuse(err)
		return
	}
	cur := a.applied
	var changed, restart []string
	diff := func(key string, x, y any) bool {
		if reflect.DeepEqual(x, y) {
			return false
		}
		changed = append(changed, key)
		return true
	}
	for _, k := range []struct {
		key  string
		x, y any
	}{
		{"device_id", cur.DeviceID, next.DeviceID}, {"fleet", cur.Fleet, next.Fleet}, {"state_dir", cur.StateDir, next.StateDir},
		{"mqtt", cur.MQTT, next.MQTT}, {"install", cur.Install, next.Install},
		{"telemetry.outbox_max_bytes", cur.Telemetry.OutboxMaxBytes, next.Telemetry.OutboxMaxBytes},
		{"telemetry.ack_retry", cur.Telemetry.AckRetry, next.Telemetry.AckRetry},
	} {
		if !reflect.DeepEqual(k.x, k.y) {
			restart = append(restart, k.key)
		}
	}

	sensorsChanged := diff("sensor", cur.Sensors, next.Sensors)
	sensorsChanged = diff("features", cur.Features, next.Features) || sensorsChanged
	var in *input
	if sensorsChanged {
		if in, err = openInput(next.Sensors, next.Features, o.SensorEnv); err != nil {
			refuse(err)
			return
		}
		if r := a.loop.cur.Load(); r != nil {
			if _, err := in.bind(r.names, r.d); err != nil {
				in.Close()
				a.log.Error("configuration reload refused: the running model cannot use the new sensors; the running configuration is kept",
					"model", r.ref.ID, "release", r.ref.Release, "err", err)
				return
			}
		}
	}
	keysChanged := diff("release_keys", cur.ReleaseKeys, next.ReleaseKeys)
	keysChanged = diff("command_keys", cur.CommandKeys, next.CommandKeys) || keysChanged
	if keysChanged {
		// Key files may have changed even where the names did not; they
		// were read and checked by LoadConfig.
		if err := a.loadKeys(next); err != nil {
			if in != nil {
				in.Close()
			}
			refuse(err)
			return
		}
	}
	if in != nil {
		old := a.in.Swap(in)
		old.Close() // interrupts the loop's read; it then reads the new sensors
	}
	labels := diff("labels", cur.Labels, next.Labels)
	labels = diff("hardware", cur.Hardware, next.Hardware) || labels
	diff("telemetry.interval", cur.Telemetry.Interval, next.Telemetry.Interval)
	a.live.Store(newLive(next))
	if diff("log_level", cur.LogLevel, next.LogLevel) && o.LogLevel != nil {
		level, _ := config.LogLevel(next.LogLevel) // LoadConfig checked it
		o.LogLevel.Set(level)
	}
	// Keep the keys that need a restart; take the rest.
	kept := *cur
	kept.Sensors, kept.Features = next.Sensors, next.Features
	kept.ReleaseKeys, kept.CommandKeys = next.ReleaseKeys, next.CommandKeys
	kept.Labels, kept.Hardware, kept.LogLevel = next.Labels, next.Hardware, next.LogLevel
	kept.Telemetry.Interval = next.Telemetry.Interval
	a.applied = &kept

	select {
	case a.reloaded <- struct{}{}:
	default:
	}
	if labels || sensorsChanged {
		a.sess.publishState(ctx)
	}
	// A committed model that did not load may load now (a release key
	// added, sensors it needs): the installer tries it again.
	if a.unloadable.Load() != nil {
		notify(a.inst.retry)
	}
	args := []any{"changed", strings.Join(changed, ", ")}
	if len(changed) == 0 {
		args = []any{"changed", "nothing"}
	}
	if len(restart) > 0 {
		args = append(args, "needs_restart", strings.Join(restart, ", "))
	}
	a.log.Info("configuration reloaded", args...)
	if len(restart) > 0 {
		a.log.Warn("configuration keys changed that take effect only at restart (systemctl restart trit-agent); they are not applied",
			"keys", strings.Join(restart, ", "))
	}
}
