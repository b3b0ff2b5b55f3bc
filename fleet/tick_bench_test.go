package fleet

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet/fleettest"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/store"
)

// putFinished stores n finished rollouts of 10 devices each, as a fleet
// with a long history has.
func putFinished(b *testing.B, db store.Database, n int) {
	b.Helper()
	for lo := 0; lo < n; lo += 1000 {
		err := db.Update(func(tx store.Tx) error {
			for i := lo; i < min(lo+1000, n); i++ {
				r := &rollout.Rollout{Rollout: api.Rollout{ID: fmt.Sprintf("r-%06d", i), Bundle: "ab", ModelID: "vib", Release: uint64(i + 1),
					State: api.RolloutCompleted, Devices: map[string]*api.DeviceProgress{}, Started: t0, Updated: t0, Finished: t0}}
				for d := range 10 {
					id := fmt.Sprintf("gw-%04d", d)
					r.Order = append(r.Order, id)
					r.Devices[id] = &api.DeviceProgress{}
				}
				r.Successes = 10
				if err := tx.Put(store.FleetRollouts, r.ID, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTick measures the fleet's periodic tick with no running rollout
// and 0 or 10,000 finished ones in the store: with the index of running
// rollouts the steady-state tick does not grow with history. "cold" is
// the first tick after a start, which builds the index by reading every
// rollout once.
func BenchmarkTick(b *testing.B) {
	for _, n := range []int{0, 10000} {
		f := newFixture(b)
		putFinished(b, f.db, n)
		b.Run(fmt.Sprintf("finished=%d", n), func(b *testing.B) {
			f.svc.Tick() // builds the index
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				f.svc.Tick()
			}
		})
		b.Run(fmt.Sprintf("finished=%d/cold", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				svc, err := NewService(f.db, f.svc.Registry(), "f", f.pub, fleettest.Key(2),
					&Options{Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				svc.Tick()
			}
		})
	}
}
