package sensors_test

import (
	"context"
	"testing"
	"time"

	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/sensors/sensortest"
)

// lateClock is a virtual clock whose sleeps end late, as a coarse timer's
// or a loaded machine's do: Sleep(d) takes d + late.
type lateClock struct {
	*sensortest.FakeClock
	late time.Duration
}

func (c lateClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return c.FakeClock.Sleep(ctx, d+c.late)
}

// TestPacerCatchesUp: at 20 kHz, with every sleep ending 0.5 ms late, a
// pacer that sleeps once per sample delivers about 1.8 kHz (what the
// issue measured); timed from the clock, it delivers the configured rate.
func TestPacerCatchesUp(t *testing.T) {
	start := time.Unix(0, 0)
	clock := lateClock{sensortest.NewFakeClock(start), 500 * time.Microsecond}
	p := sensors.NewPacer(20000, clock)
	n := 0
	for clock.Now().Sub(start) < time.Second {
		if err := p.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 19990 || n > 20020 {
		t.Fatalf("%d samples in one second at 20 kHz with late sleeps, want 20000", n)
	}
}
