package postgres

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/store/postgres/pgtest"
)

func TestLease(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := mustOpen(t, dsn), mustOpen(t, dsn)
	const ttl = 400 * time.Millisecond
	held, term, err := a.AcquireLease("rollouts", "a", ttl)
	if err != nil || !held || term != 1 {
		t.Fatalf("first acquire = %v, %d, %v; want held, term 1", held, term, err)
	}
	if held, _, err := b.AcquireLease("rollouts", "b", ttl); err != nil || held {
		t.Fatalf("b took a's live lease: %v, %v", held, err)
	}
	if held, term, err := a.AcquireLease("rollouts", "a", ttl); err != nil || !held || term != 1 {
		t.Fatalf("renewal = %v, %d, %v; want held, the same term", held, term, err)
	}
	if h, err := b.LeaseHolder("rollouts"); err != nil || h != "a" {
		t.Fatalf("holder = %q, %v; want a", h, err)
	}
	// a stops renewing (dies): b gets it once it expires, not before.
	start := time.Now()
	for {
		held, term, err := b.AcquireLease("rollouts", "b", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if held {
			if waited := time.Since(start); waited < ttl/2 {
				t.Fatalf("b took the lease after %v, before it expired", waited)
			}
			if term != 2 {
				t.Fatalf("new holder's term %d, want 2", term)
			}
			break
		}
		if time.Since(start) > 10*ttl {
			t.Fatal("b never took the expired lease")
		}
		time.Sleep(ttl / 10)
	}
	if held, _, _ := a.AcquireLease("rollouts", "a", ttl); held {
		t.Fatal("a took back b's live lease")
	}
	// Released, it is free at once.
	if err := b.ReleaseLease("rollouts", "b"); err != nil {
		t.Fatal(err)
	}
	if h, _ := a.LeaseHolder("rollouts"); h != "" {
		t.Fatalf("holder %q after release", h)
	}
	if held, term, _ := a.AcquireLease("rollouts", "a", ttl); !held || term != 1 {
		t.Fatalf("after a release a acquires: %v, term %d (a released lease starts again)", held, term)
	}
	if _, _, err := a.AcquireLease("", "a", ttl); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("empty lease name = %v, want ErrInvalid", err)
	}
}

// TestLeaseOneHolder has replicas race for the lease: at every moment at
// most one holds it.
func TestLeaseOneHolder(t *testing.T) {
	dsn := pgtest.Database(t)
	const replicas, rounds = 4, 30
	var mu sync.Mutex
	holders := map[int64]map[string]bool{} // term → holders that got it
	var wg sync.WaitGroup
	for i := 0; i < replicas; i++ {
		db := mustOpen(t, dsn)
		name := string(rune('a' + i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				held, term, err := db.AcquireLease("x", name, 30*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if held {
					mu.Lock()
					if holders[term] == nil {
						holders[term] = map[string]bool{}
					}
					holders[term][name] = true
					mu.Unlock()
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if len(holders) == 0 {
		t.Fatal("no replica ever held the lease")
	}
	for term, hs := range holders {
		if len(hs) != 1 {
			t.Errorf("term %d held by %v, want one holder per term", term, hs)
		}
	}
}
