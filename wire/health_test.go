package wire

import "testing"

// TestSlowSensorStateIsV1: a slow sensor travels in the fields every
// receiver knows (state "slow", its rates in last_error), so the strict
// decoder of a fleet older than it takes the state, and what people read
// says which sensor and why.
func TestSlowSensorStateIsV1(t *testing.T) {
	// The payload of an agent with a slow accelerometer, as an older
	// fleet's decoder (this one: no field was added) receives it.
	raw := []byte(`{"v":1,"device":"gw-1","session":3,"online":true,"health":"degraded",` +
		`"sensors":[{"sensor":"accel","state":"slow","since":1750000000,"last_error":"reads 1.8 kHz of the configured 20 kHz"},` +
		`{"sensor":"env","state":"ok","since":1750000000}]}`)
	s, err := DecodeState(raw)
	if err != nil {
		t.Fatalf("a degraded state with a slow sensor is refused: %v", err)
	}
	if got, want := HealthDetail(s.Health, s.Sensors), "degraded: accel reads 1.8 kHz of the configured 20 kHz"; got != want {
		t.Errorf("HealthDetail = %q, want %q", got, want)
	}
	for _, c := range []struct {
		h    SensorHealth
		want string
	}{
		{SensorHealth{Sensor: "env", State: SensorOK, LastError: "recovered since"}, ""},
		{SensorHealth{Sensor: "env", State: SensorFailed, LastError: "device did not respond"}, "env failed: device did not respond"},
		{SensorHealth{Sensor: "env", State: SensorFailed}, "env failed"},
		{SensorHealth{Sensor: "accel", State: SensorSlow}, "accel slow"},
	} {
		if got := c.h.Describe(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
	if got := HealthDetail("no-model", nil); got != "no-model" {
		t.Errorf("no sensor to blame: %q", got)
	}
}
