// Package sensors turns sensors into timestamped readings for the agent.
//
// A Source yields Readings: one sample of several named channels such as
// "accel.x" or "bme280.temperature". Sources come from hardware drivers
// built on periph.io (sub-packages bmxx80, ads1115, adxl345, gpio), from
// recorded files (replay) or from a simulated machine (synthetic). Each of
// those sub-packages registers its kinds here in an init function; import
// sensors/all to get every kind:
//
//	import _ "github.com/trit-iot/trit/sensors/all"
//
//	cfg := sensors.Config{Kind: "bme280", Bus: "I2C1", Address: 0x76, Rate: 1}
//	src, err := sensors.OpenRetrying(cfg, nil, nil) // err only for bad config
//	...
//	r, err := src.Read(ctx) // paced at cfg.Rate
//	h := src.Health()       // ok / failed / slow + last error + since
//
// Invariants:
//   - Channel names are "<name>.<channel>" where <name> is Config.Name (or the
//     kind's default) and are known from the Config alone, before any hardware
//     is touched (Config.Channels), so a model's features can be checked at
//     start-up even when a sensor is missing.
//   - Reading.Values is parallel to Source.Channels() and is owned by the
//     caller once returned; Reading.Time is when it was read (a replay's
//     time column, when it has one).
//   - A paced source keeps its rate on average: sample n is due at
//     start + n/rate by the clock, and a late wake-up is made up by the
//     next reads (Pacer); a Retrying source configured with a rate
//     reports StateSlow while it delivers less than 90% of it.
//   - Opening real hardware calls host.Init exactly once per process.
//   - A device that does not answer fails with ErrNoResponse, one that
//     answers with the wrong identity with ErrWrongDevice, and one that
//     returns impossible values with ErrBadReading (all wrapped in a
//     *DeviceError naming the sensor).
//
// The agent opens its configured sensors with OpenInput: OpenAll (each a
// Retrying source), then Merge (the fastest sensor paces, the others are
// sampled and held); it reports them with Healths, and its configuration
// check calls PrimaryOf and CheckSpecRate. Feature extraction over windows of readings
// lives in sensors/features; the "trit-agent sensors" command (probe, read)
// in sensors/sensorcmd.
package sensors
