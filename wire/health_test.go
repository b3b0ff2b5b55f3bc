package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

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

// TestUnloadableState: a device whose committed model does not load
// says so in its state, beside the model it runs instead; the decoder
// takes it, checks its model reference and bounds its error.
func TestUnloadableState(t *testing.T) {
	h1, h2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	s := &State{Device: "gw-1", Session: 3, Online: true, Health: "degraded",
		Model:      &ModelRef{ID: "vib", Release: 1, Bundle: h1, Install: "committed"},
		Unloadable: &UnloadableModel{ModelRef: ModelRef{ID: "vib", Release: 2, Bundle: h2, Install: "committed"}, Error: "content does not match its hash"}}
	raw, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"unloadable":{"id":"vib","release":2,"bundle":"`+h2+`","install":"committed","error":"content does not match its hash"}`) {
		t.Errorf("encoded as %s", raw)
	}
	back, err := DecodeState(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Unloadable, s.Unloadable) {
		t.Errorf("decoded %+v, want %+v", back.Unloadable, s.Unloadable)
	}
	if got, want := back.Unloadable.Describe(), "model vib release 2 (bundle 222222222222) does not load: content does not match its hash"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	for name, u := range map[string]string{
		"no bundle":     `{"id":"vib","release":2,"error":"x"}`,
		"no id":         `{"release":2,"bundle":"` + h2 + `","error":"x"}`,
		"long error":    `{"id":"vib","release":2,"bundle":"` + h2 + `","error":"` + strings.Repeat("x", MaxUnloadableError+1) + `"}`,
		"unknown field": `{"id":"vib","release":2,"bundle":"` + h2 + `","error":"x","why":1}`,
	} {
		raw := `{"v":1,"device":"gw-1","session":3,"online":true,"unloadable":` + u + `}`
		if _, err := DecodeState([]byte(raw)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}
