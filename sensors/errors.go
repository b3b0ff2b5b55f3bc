package sensors

import (
	"errors"
	"fmt"
)

// Sentinel errors a caller can test with errors.Is.
var (
	// ErrNoResponse means the device did not answer on its bus (NAK, I/O
	// error, missing device).
	ErrNoResponse = errors.New("device did not respond")
	// ErrWrongDevice means something answered, but its identity (chip ID or
	// register read-back) is not that of the configured device.
	ErrWrongDevice = errors.New("unexpected device")
	// ErrBadReading means the device answered with values outside what it
	// can physically produce.
	ErrBadReading = errors.New("implausible reading")
	// ErrClosed is returned by Read after Close.
	ErrClosed = errors.New("source closed")
	// ErrUnknownKind means no source kind of that name is registered.
	ErrUnknownKind = errors.New("unknown sensor kind")
)

// DeviceError reports a failure of one named sensor.
type DeviceError struct {
	Sensor string // sensor name, e.g. "bme280" or "accel"
	Op     string // "open" or "read"
	Err    error  // wraps one of the sentinel errors where one applies
}

// Error implements error.
func (e *DeviceError) Error() string {
	return fmt.Sprintf("sensor %q: %s: %v", e.Sensor, e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *DeviceError) Unwrap() error { return e.Err }

// NewDeviceError returns a *DeviceError whose error wraps sentinel (which may
// be nil) and carries cause's message. Driver packages use it so that callers
// can tell failures apart with errors.Is.
func NewDeviceError(sensor, op string, sentinel, cause error) error {
	var err error
	switch {
	case sentinel == nil:
		err = cause
	case cause == nil:
		err = sentinel
	default:
		err = fmt.Errorf("%w: %w", sentinel, cause)
	}
	return &DeviceError{Sensor: sensor, Op: op, Err: err}
}
