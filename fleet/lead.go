package fleet

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trit-iot/trit/store"
)

// Leadership among replicas. Every replica of trit-fleet on one shared
// database serves the API and the console and handles device messages;
// one at a time — the leader — steps rollouts and re-asserts commands
// (Tick). The leader is whoever holds the store's lease "rollouts"
// (Leases), expiring Options.LeaseTTL after its last renewal by the
// database's clock, so another replica takes over at most LeaseTTL +
// Tick after the leader dies. A store without leases (the bbolt file: one
// process holds its lock) makes its one replica the leader.
//
// Renewals run on a goroutine of their own (keepLease), every LeaseTTL/3,
// not in the loop that handles device messages and ticks: a slow batch,
// a slow tick or a starved loop no longer lets the lease lapse while the
// replica is alive (it flapped 6 times, nothing killed, when renewals
// waited for the loop).
//
// Invariants:
//   - A replica leads until its own deadline: the moment it sent its last
//     successful renewal plus LeaseTTL, by its monotonic clock. The
//     database expires the lease LeaseTTL after it received that renewal,
//     which is later, so a replica stops leading (Leading, the
//     trit_fleet_leading metric) before any other can take the lease:
//     two replicas never both report leading, whatever their clocks say
//     (up to clock-rate drift over one lease).
//   - Every write only the leader may make (a rollout's step: its state
//     and the devices' command counters) is fenced: its transaction first
//     checks, and share-locks until it commits, that the lease is still
//     this replica's, in the term it took it (FencedTx) — so a deposed
//     leader (paused past its lease, its renewals starved) has its step
//     refused (ErrFenced), not applied over the new leader's. What could
//     repeat is a command publication, which devices handle by (rollout,
//     seq).
//   - A leader that cannot reach the broker (its Publisher says it is not
//     connected at two renewals in a row) gives the lease up, so a replica
//     that can publish commands takes over, and does not take it again
//     until it is connected.
//   - A replica that becomes leader forgets its index of running rollouts
//     (others created rollouts meanwhile) and resyncs: bundles published
//     again and a full reconciliation pass. While leading on a shared
//     store it reloads the index every leaseRescan, so a rollout created
//     through another replica's API starts within that time.

// Leases is what the service needs of a store shared by several replicas:
// a named lease held by one holder at a time. store/postgres implements
// it.
type Leases interface {
	AcquireLease(name, holder string, ttl time.Duration) (held bool, term int64, err error)
	ReleaseLease(name, holder string) error
	LeaseHolder(name string) (string, error)
}

// leaseName is the lease of stepping rollouts.
const leaseName = "rollouts"

// DefaultLeaseTTL is how long the leader's lease lasts after its last
// renewal unless configured: the longest a dead leader's rollouts wait.
const DefaultLeaseTTL = 5 * time.Second

// leaseRescan is how often a leader on a shared store reloads its index
// of running rollouts.
const leaseRescan = 5 * time.Second

// DefaultReplicaID names this process among replicas: host name and
// process ID.
func DefaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// leadership is the service's view of the lease.
type leadership struct {
	mu       sync.Mutex
	until    time.Time // this replica leads before it (monotonic); zero: it does not
	term     int64     // the lease's term when this replica last took or renewed it
	changes  atomic.Int64
	released atomic.Bool
	renewing atomic.Bool // keepLease runs: Tick only reads the lease
	down     int         // renewals in a row that found the broker unreachable (keepLease)

	// The loop's view (Tick only): leading at its last tick, and in which
	// term, to see a change of leadership; when the index was reloaded.
	was     bool
	wasTerm int64
	rescan  time.Time
}

// leaseRenewals is how many renewals fit in one lease: a renewal that
// fails or comes late leaves the others time before the lease lapses.
const leaseRenewals = 3

// renew takes or renews the lease and records until when this replica
// leads. A replica whose broker is unreachable gives it up instead.
func (s *Service) renew(ls Leases) {
	l := &s.leader
	if l.released.Load() {
		return
	}
	if c, ok := s.pub.(interface{ Connected() bool }); ok && c.Connected() {
		l.mu.Lock()
		l.down = 0
		l.mu.Unlock()
	} else if ok {
		l.mu.Lock()
		l.down++
		down, leading := l.down, time.Now().Before(l.until)
		if down >= 2 {
			l.until = time.Time{}
		}
		l.mu.Unlock()
		if down >= 2 && leading {
			s.log.Warn("giving up the rollout lease: this replica cannot reach the broker, so it could not publish commands; another replica takes over", "replica", s.opt.Replica)
			if err := ls.ReleaseLease(leaseName, s.opt.Replica); err != nil {
				s.log.Warn("rollout lease not released; another replica takes over when it expires", "err", err)
			}
		}
		if down >= 2 {
			return
		}
	}
	sent := time.Now()
	held, term, err := ls.AcquireLease(leaseName, s.opt.Replica, s.opt.LeaseTTL)
	if err != nil {
		s.log.Warn("rollout lease not renewed", "replica", s.opt.Replica, "err", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case held:
		l.until, l.term = sent.Add(s.opt.LeaseTTL), term
	case err == nil: // another holds it
		l.until = time.Time{}
	}
	// An error leaves the deadline as it was: the lease may still be ours
	// until then, and no longer.
}

// keepLease renews the lease every LeaseTTL/leaseRenewals until ctx
// ends, apart from the service's loop (Run starts it on a shared store).
func (s *Service) keepLease(ctx context.Context, ls Leases) {
	defer s.leader.renewing.Store(false)
	every := max(s.opt.LeaseTTL/leaseRenewals, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.renew(ls)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lead reports whether this replica leads for this tick, doing what a new
// leader must. Without keepLease (a service driven by Tick alone, as in
// tests) it renews the lease itself first.
func (s *Service) lead(now time.Time) bool {
	ls, ok := s.db.(Leases)
	if !ok {
		return true
	}
	if !s.leader.renewing.Load() {
		s.renew(ls)
	}
	l := &s.leader
	l.mu.Lock()
	held, term := time.Now().Before(l.until), l.term
	l.mu.Unlock()
	switch {
	case held && (!l.was || term != l.wasTerm):
		l.changes.Add(1)
		s.log.Info("leading: this replica steps rollouts", "replica", s.opt.Replica, "term", term)
		s.forgetRunning(now)
		s.Resync() // bundles again, and a full reconciliation pass
	case held && now.Sub(l.rescan) >= leaseRescan:
		s.forgetRunning(now)
	case !held && l.was:
		s.log.Warn("no longer leading: another replica steps rollouts", "replica", s.opt.Replica)
	}
	l.was, l.wasTerm = held, term
	return held
}

// forgetRunning drops the index of running rollouts; the next tick
// reloads it from the store.
func (s *Service) forgetRunning(now time.Time) {
	s.mu.Lock()
	s.running = nil
	s.mu.Unlock()
	s.leader.rescan = now
}

// Leading reports whether this replica steps rollouts now: on a shared
// store, whether its lease has not lapsed by its own clock.
func (s *Service) Leading() bool {
	if _, ok := s.db.(Leases); !ok {
		return true
	}
	l := &s.leader
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Before(l.until)
}

// FencedTx is a transaction that can check, and hold until it commits,
// that a lease is still a holder's in a given term (store/postgres): the
// fencing token of the leader's writes.
type FencedTx interface {
	Fence(lease, holder string, term int64) error
}

// leaderUpdate runs fn in a store transaction that is refused
// (store.ErrFenced) if this replica no longer holds the lease it led
// with: a deposed leader's step is not applied.
func (s *Service) leaderUpdate(fn func(tx store.Tx) error) error {
	s.leader.mu.Lock()
	term := s.leader.term
	s.leader.mu.Unlock()
	return s.db.Update(func(tx store.Tx) error {
		if f, ok := tx.(FencedTx); ok {
			if err := f.Fence(leaseName, s.opt.Replica, term); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// Leader returns the replica that holds the lease, "" if none does; on a
// store without leases, this one.
func (s *Service) Leader() (string, error) {
	ls, ok := s.db.(Leases)
	if !ok {
		return s.opt.Replica, nil
	}
	return ls.LeaseHolder(leaseName)
}

// ReleaseLead gives the lease up, for a clean shutdown: another replica
// takes over at its next tick instead of after the lease expires. The
// service does not lead again.
func (s *Service) ReleaseLead() {
	ls, ok := s.db.(Leases)
	if !ok {
		return
	}
	s.leader.released.Store(true)
	s.mu.Lock() // no step in flight
	defer s.mu.Unlock()
	s.leader.mu.Lock()
	leading := time.Now().Before(s.leader.until)
	s.leader.until = time.Time{}
	s.leader.mu.Unlock()
	if leading {
		if err := ls.ReleaseLease(leaseName, s.opt.Replica); err != nil {
			s.log.Warn("rollout lease not released; another replica takes over when it expires", "err", err)
		}
	}
}
