package wire

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func key(n byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = n + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

const hashA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var now = time.Unix(1_750_000_000, 0)

func testCommand(t *testing.T, priv ed25519.PrivateKey) *Command {
	t.Helper()
	c := &Command{Fleet: "plant-a", Device: "gw-001", Bundle: hashA, Rollout: "r1", Seq: 3,
		IssuedAt: now.Unix() - 10, ExpiresAt: now.Unix() + 3600}
	if err := c.Sign(priv); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTopicsRoundTrip(t *testing.T) {
	tp, err := NewTopics("plant-a")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want Topic
	}{
		{tp.Bundle(hashA), Topic{Fleet: "plant-a", Kind: KindBundle, Hash: hashA}},
		{tp.Desired("gw-1"), Topic{Fleet: "plant-a", Kind: KindDesired, Device: "gw-1"}},
		{tp.State("gw-1"), Topic{Fleet: "plant-a", Kind: KindState, Device: "gw-1"}},
		{tp.Events("gw-1"), Topic{Fleet: "plant-a", Kind: KindEvents, Device: "gw-1"}},
		{tp.Telemetry("gw-1"), Topic{Fleet: "plant-a", Kind: KindTelemetry, Device: "gw-1"}},
		{tp.Acks("gw-1"), Topic{Fleet: "plant-a", Kind: KindAcks, Device: "gw-1"}},
	}
	for _, c := range cases {
		got, err := ParseTopic(c.name)
		if err != nil || got != c.want {
			t.Errorf("ParseTopic(%q) = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if got := tp.AllDevices(KindState); got != "trit/v1/plant-a/devices/+/state" {
		t.Errorf("AllDevices = %q", got)
	}
	for _, bad := range []string{"", "trit/v2/a/bundles/" + hashA, "trit/v1/a/bundles/xyz", "trit/v1/a/devices/+/state",
		"trit/v1/a/devices/gw/other", "trit/v1/#/devices/gw/state", "trit/v1/a/devices/gw/state/x", "trit/v1/.a/bundles/" + hashA} {
		if _, err := ParseTopic(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseTopic(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	if _, err := NewTopics("a/b"); err == nil {
		t.Error("NewTopics accepted a fleet name with a slash")
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"a", "gw-0001", "A.b_c-9", strings.Repeat("x", MaxIDLen)} {
		if err := CheckID(ok); err != nil {
			t.Errorf("CheckID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".a", "-a", "a/b", "a+", "a#", "a b", "a\n", "é", strings.Repeat("x", MaxIDLen+1)} {
		if err := CheckID(bad); err == nil {
			t.Errorf("CheckID(%q) = nil", bad)
		}
	}
}

func TestCommandVerify(t *testing.T) {
	priv := key(1)
	keys, err := NewKeySet(priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	c := testCommand(t, priv)
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	target := Target{Fleet: "plant-a", Device: "gw-001"}
	got, err := VerifyCommand(data, keys, target, now)
	if err != nil {
		t.Fatalf("VerifyCommand: %v", err)
	}
	if *got != *c {
		t.Errorf("round trip: got %+v, want %+v", got, c)
	}

	// Every signed field is covered: change each and the signature fails.
	mutations := map[string]func(c *Command){
		"fleet":      func(c *Command) { c.Fleet = "plant-b" },
		"device":     func(c *Command) { c.Device = "gw-002" },
		"bundle":     func(c *Command) { c.Bundle = strings.Repeat("f", 64) },
		"rollout":    func(c *Command) { c.Rollout = "r2" },
		"seq":        func(c *Command) { c.Seq++ },
		"issued_at":  func(c *Command) { c.IssuedAt-- },
		"expires_at": func(c *Command) { c.ExpiresAt++ },
		"rollback":   func(c *Command) { c.Rollback = true },
		"mode":       func(c *Command) { c.Mode = ModeShadow },
	}
	for name, mut := range mutations {
		m := *c
		mut(&m)
		data, _ := json.Marshal(&m)
		if _, err := VerifyCommand(data, keys, Target{Fleet: m.Fleet, Device: m.Device}, now); !errors.Is(err, ErrSignature) {
			t.Errorf("%s changed: err = %v, want ErrSignature", name, err)
		}
	}

	other := testCommand(t, key(2))
	data2, _ := other.Marshal()
	if _, err := VerifyCommand(data2, keys, target, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("untrusted key: %v", err)
	}
	if _, err := VerifyCommand(data, keys, Target{Fleet: "plant-a", Device: "gw-002"}, now); !errors.Is(err, ErrWrongTarget) {
		t.Errorf("wrong device: %v", err)
	}
	if _, err := VerifyCommand(data, keys, target, c.Expiry()); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v", err)
	}
	if _, err := VerifyCommand(data, nil, target, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("nil key set: %v", err)
	}
}

func TestDecodeCommandStrict(t *testing.T) {
	c := testCommand(t, key(1))
	good, _ := c.Marshal()
	if _, err := DecodeCommand(good); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(good, &m)
	edit := func(f func(m map[string]any)) []byte {
		cp := map[string]any{}
		for k, v := range m {
			cp[k] = v
		}
		f(cp)
		b, _ := json.Marshal(cp)
		return b
	}
	cases := map[string]struct {
		data []byte
		want error
	}{
		"unknown field":   {edit(func(m map[string]any) { m["extra"] = 1 }), ErrMalformed},
		"missing device":  {edit(func(m map[string]any) { delete(m, "device") }), ErrMalformed},
		"version 2":       {edit(func(m map[string]any) { m["v"] = 2 }), ErrVersion},
		"seq 0":           {edit(func(m map[string]any) { m["seq"] = 0 }), ErrMalformed},
		"seq negative":    {edit(func(m map[string]any) { m["seq"] = -1 }), ErrMalformed},
		"bad hash":        {edit(func(m map[string]any) { m["bundle"] = "ABC" }), ErrMalformed},
		"device wildcard": {edit(func(m map[string]any) { m["device"] = "gw/+" }), ErrMalformed},
		"expires<=issued": {edit(func(m map[string]any) { m["expires_at"] = m["issued_at"] }), ErrMalformed},
		"short sig":       {edit(func(m map[string]any) { m["sig"] = "AAAA" }), ErrMalformed},
		"upper key id":    {edit(func(m map[string]any) { m["key_id"] = strings.ToUpper(c.KeyID) }), ErrMalformed},
		"trailing data":   {append(append([]byte{}, good...), []byte(` {}`)...), ErrMalformed},
		"not json":        {[]byte("hello"), ErrMalformed},
		"too large":       {[]byte(strings.Repeat(" ", MaxCommandSize+1)), ErrTooLarge},
	}
	for name, tc := range cases {
		_, err := DecodeCommand(tc.data)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
		var de *DecodeError
		if err != nil && !errors.As(err, &de) {
			t.Errorf("%s: %T is not a *DecodeError", name, err)
		}
	}
}

func TestPayloadRoundTrips(t *testing.T) {
	model := &ModelRef{ID: "m", Release: 4, Bundle: hashA, Install: "committed"}
	st := &State{Device: "gw-1", Session: 9, Online: true, Time: now.Unix(), Model: model,
		Sensors: []SensorHealth{{Sensor: "accel", State: "ok", Since: 1}}, Outbox: &OutboxInfo{Count: 1}, Health: "ok"}
	b, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	st2, err := DecodeState(b)
	if err != nil || st2.Session != 9 || st2.Model.Release != 4 || !st2.Online {
		t.Fatalf("state round trip: %+v, %v", st2, err)
	}
	will, _ := Offline("gw-1", "", 9)
	w, err := DecodeState(will)
	if err != nil || w.Online || w.Session != 9 {
		t.Fatalf("will: %+v, %v", w, err)
	}
	if !Newer(w, st2) || Newer(st2, w) {
		t.Error("offline of the same session must supersede online")
	}
	older, _ := Offline("gw-1", "", 8)
	ow, _ := DecodeState(older)
	if Newer(ow, st2) {
		t.Error("a stale will (lower session) must not supersede")
	}
	// Instances: a new life (database reset, sessions from 1) supersedes
	// when online; a will of the former life never does.
	st.Instance = "00000000000000aa"
	b, _ = st.Marshal()
	life1, err := DecodeState(b)
	if err != nil || life1.Instance != "00000000000000aa" {
		t.Fatalf("state with instance: %+v, %v", life1, err)
	}
	life2 := &State{Device: "gw-1", Session: 1, Online: true, Instance: "00000000000000bb"}
	if !Newer(life2, life1) {
		t.Error("the online state of a new instance must supersede a higher session of the old one")
	}
	oldWill, _ := Offline("gw-1", "00000000000000aa", 10)
	w1, err := DecodeState(oldWill)
	if err != nil || Newer(w1, life2) {
		t.Errorf("the will of a former instance must not supersede (%v)", err)
	}
	for _, bad := range []string{"AA00000000000000", "abc", "00000000000000zz"} {
		st.Instance = bad
		b, _ = st.Marshal()
		if _, err := DecodeState(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("instance %q accepted: %v", bad, err)
		}
	}
	st.Instance = ""

	ev := &Event{Device: "gw-1", Rollout: "r1", Seq: 2, State: JobRejected, Code: CodeHashMismatch, Reason: "x", Bundle: hashA, Time: 1}
	b, _ = ev.Marshal()
	ev2, err := DecodeEvent(b)
	if err != nil || ev2.ID != "r1/2/REJECTED" || ev2.Code != CodeHashMismatch {
		t.Fatalf("event: %+v, %v", ev2, err)
	}
	bad := strings.Replace(string(b), `"r1/2/REJECTED"`, `"r1/3/REJECTED"`, 1)
	if _, err := DecodeEvent([]byte(bad)); !errors.Is(err, ErrMalformed) {
		t.Errorf("event with mismatched id: %v", err)
	}

	ack := &Ack{Device: "gw-1", IDs: []string{ev2.ID}}
	b, _ = ack.Marshal()
	if a, err := DecodeAck(b); err != nil || a.IDs[0] != ev2.ID {
		t.Fatalf("ack: %+v, %v", a, err)
	}
	if _, err := DecodeAck([]byte(`{"v":1,"device":"gw-1","ids":["r1/x/QUEUED"]}`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("ack with bad id: %v", err)
	}

	tm := &Telemetry{Device: "gw-1", Session: 1, Seq: 5, From: 1, To: 2, Model: model, Predictions: 3,
		Counts: map[string]uint64{"a": 2, "b": 1}, Latency: &Latency{P50: 1}}
	b, _ = tm.Marshal()
	if t2, err := DecodeTelemetry(b); err != nil || t2.Seq != 5 || t2.Counts["a"] != 2 {
		t.Fatalf("telemetry: %+v, %v", t2, err)
	}
	tm.Counts["a"] = 10
	b, _ = tm.Marshal()
	if _, err := DecodeTelemetry(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("counts above predictions: %v", err)
	}
}

// TestStateClockOrders: two online states of one session are ordered by
// the device clock; a will still supersedes its session's online states;
// states without a clock keep the rule of agents before it.
func TestStateClockOrders(t *testing.T) {
	early := &State{Device: "gw", Session: 4, Online: true, Clock: ClockAt(3, 7)}
	late := &State{Device: "gw", Session: 4, Online: true, Clock: ClockAt(3, 9)}
	will := &State{Device: "gw", Session: 4}
	next := &State{Device: "gw", Session: 5, Online: true, Clock: ClockAt(3, 10)}
	for _, c := range []struct {
		b, a *State
		want bool
	}{
		{late, early, true}, {early, late, false}, {will, late, true}, {late, will, false},
		{next, will, true}, {early, next, false},
		{&State{Session: 4, Online: true}, late, true}, // no clock: as before
	} {
		if got := Newer(c.b, c.a); got != c.want {
			t.Errorf("Newer(%+v, %+v) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
	raw, err := late.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(raw)
	if err != nil || back.Clock != late.Clock || back.Clock.Boot() != 3 {
		t.Fatalf("round trip: %v, %+v", err, back)
	}
	if _, err := DecodeTelemetry([]byte(`{"v":1,"device":"gw","session":3,"boot":4,"seq":1,"from":1,"to":2,"predictions":0}`)); err == nil {
		t.Error("a report whose boot is above its session accepted")
	}
	if m, err := DecodeTelemetry([]byte(`{"v":1,"device":"gw","session":5,"boot":4,"seq":1,"from":1,"to":2,"predictions":0}`)); err != nil || m.Boot != 4 {
		t.Errorf("a report with a boot: %v, %+v", err, m)
	}
}
