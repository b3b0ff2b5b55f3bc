package fleet

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// Leadership among replicas. Every replica of trit-fleet on one shared
// database serves the API and the console and handles device messages;
// one at a time — the leader — steps rollouts and re-asserts commands
// (Tick). The leader is whoever holds the store's lease "rollouts"
// (Leases), renewed at every tick and expiring Options.LeaseTTL after the
// last renewal, so another replica takes over at most LeaseTTL + Tick
// after the leader dies. A store without leases (the bbolt file: one
// process holds its lock) makes its one replica the leader.
//
// Invariants:
//   - A replica steps rollouts only in a tick in which it renewed the lease
//     (a failed renewal, an error included, means following).
//   - The lease makes stepping efficient, not safe: every step is one
//     store transaction that re-reads the rollout, and writers are
//     serialised, so two replicas that both believed they led (a leader
//     paused past its lease) would take turns on the latest state, not
//     undo each other. What could repeat is a command publication, which
//     devices handle by (rollout, seq).
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
	leading  atomic.Bool
	term     atomic.Int64
	changes  atomic.Int64 // times this replica became leader
	rescan   time.Time    // when the running index was last reloaded (loop only)
	released atomic.Bool
}

// lead renews or takes the lease and reports whether this replica leads
// for this tick, doing what a new leader must.
func (s *Service) lead(now time.Time) bool {
	ls, ok := s.db.(Leases)
	if !ok {
		s.leader.leading.Store(true)
		return true
	}
	if s.leader.released.Load() {
		return false
	}
	held, term, err := ls.AcquireLease(leaseName, s.opt.Replica, s.opt.LeaseTTL)
	if err != nil {
		s.log.Warn("rollout lease not renewed: not stepping rollouts this tick", "replica", s.opt.Replica, "err", err)
		held = false
	}
	was := s.leader.leading.Swap(held)
	switch {
	case held && (!was || term != s.leader.term.Load()):
		s.leader.term.Store(term)
		s.leader.changes.Add(1)
		s.log.Info("leading: this replica steps rollouts", "replica", s.opt.Replica, "term", term)
		s.forgetRunning(now)
		s.Resync() // bundles again, and a full reconciliation pass
	case held && now.Sub(s.leader.rescan) >= leaseRescan:
		s.forgetRunning(now)
	case !held && was:
		s.log.Warn("no longer leading: another replica steps rollouts", "replica", s.opt.Replica)
	}
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

// Leading reports whether this replica steps rollouts.
func (s *Service) Leading() bool { return s.leader.leading.Load() }

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
	if s.leader.leading.Swap(false) {
		if err := ls.ReleaseLease(leaseName, s.opt.Replica); err != nil {
			s.log.Warn("rollout lease not released; another replica takes over when it expires", "err", err)
		}
	}
}
