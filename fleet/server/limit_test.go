package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/trit-iot/trit/wire"
)

// TestDeviceLimits: a device's message bucket empties after its burst and
// refills at its rate; its byte bucket refuses what would overdraw it; a
// waiting message is paced at the rate.
func TestDeviceLimits(t *testing.T) {
	l := Limit{Rate: 10, Burst: 5, ByteRate: 1000, ByteBurst: wire.MaxPacket}
	d := newDeviceLimits(l)
	now := time.Unix(1e9, 0)
	for i := range 5 {
		if v := d.allow("gw-1", 10, now); v != pass {
			t.Fatalf("message %d of the burst: %v", i, v)
		}
	}
	if v := d.allow("gw-1", 10, now); v != overRate {
		t.Fatalf("past the burst: %v, want overRate", v)
	}
	if v := d.allow("gw-2", 10, now); v != pass {
		t.Fatalf("another device: %v", v)
	}
	now = now.Add(100 * time.Millisecond) // one token
	if v := d.allow("gw-1", 10, now); v != pass {
		t.Fatalf("after 1/rate: %v", v)
	}
	if v := d.allow("gw-3", wire.MaxPacket, now); v != pass {
		t.Fatalf("a largest packet on a full byte bucket: %v", v)
	}
	if v := d.allow("gw-3", 10, now); v != overBytes {
		t.Fatalf("bytes past the byte burst: %v, want overBytes", v)
	}
	// Waiting: gw-1 is empty, so each message waits one more 1/rate.
	for i := 1; i <= 3; i++ {
		if w := d.wait("gw-1", 10, now); w != time.Duration(i)*100*time.Millisecond {
			t.Fatalf("wait %d: %v, want %v", i, w, time.Duration(i)*100*time.Millisecond)
		}
	}
}

// TestDeviceLimitsForgetIdle: buckets that have refilled are forgotten,
// so devices that come and go leave nothing behind.
func TestDeviceLimitsForgetIdle(t *testing.T) {
	l := Limit{Rate: 10, Burst: 5, ByteRate: 1000, ByteBurst: wire.MaxPacket}
	d := newDeviceLimits(l)
	now := time.Unix(1e9, 0)
	for i := range 5000 {
		d.allow(fmt.Sprintf("gw-%d", i), 100, now)
	}
	if n := d.size(); n < 1000 {
		t.Fatalf("%d entries right after 5000 devices sent: the active ones were forgotten", n)
	}
	// Byte buckets refill in (ByteBurst/ByteRate) s; message ones sooner.
	now = now.Add(time.Duration(float64(wire.MaxPacket)/l.ByteRate*float64(time.Second)) + sweepEvery)
	d.allow("gw-new", 1, now)
	if n := d.size(); n != 1 {
		t.Errorf("%d entries after every other device went quiet, want 1", n)
	}
	for _, bad := range []Limit{{}, {Rate: 1, Burst: 1, ByteRate: 1, ByteBurst: wire.MaxPacket - 1}, {Rate: 1, Burst: 0, ByteRate: 1, ByteBurst: wire.MaxPacket}} {
		if bad.check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := defaultDeviceLimit.check(); err != nil {
		t.Error(err)
	}
}
