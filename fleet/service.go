package fleet

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/trit-iot/trit/fleet/access"
	"github.com/trit-iot/trit/store"
	"github.com/trit-iot/trit/wire"
)

// Publisher is what the service needs of an MQTT connection: publishing.
// Incoming messages reach the service through Service.Deliver, which the
// connection's subscription handlers call. The paho adapter and a
// recording fake for tests implement it.
type Publisher interface {
	Publish(topic string, qos byte, retained bool, payload []byte) error
}

// The incoming queue's default bounds. 65,536 messages hold the burst of a
// rollout's last phase to 10,000 devices at once (their job events arrive
// faster than one writer stores them; docs/BENCHMARKS.md "Fleet: 10,000
// simulated agents"), where 4,096 dropped 91,205 events that the devices
// then re-sent. Device messages are a few hundred bytes; the byte bound
// keeps the worst case (every message wire.MaxPacket) to 64 MiB.
const (
	DefaultQueue      = 1 << 16
	DefaultQueueBytes = 64 << 20
)

// Options configure a Service. Zero values mean the defaults.
type Options struct {
	// CommandTTL is how long a deployment command stays valid; default 24 h.
	CommandTTL time.Duration
	// Tick is how often rollouts are stepped; default 1 s.
	Tick time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// Queue and QueueBytes bound the incoming messages waiting to be
	// handled, in messages and in bytes (topic and payload); defaults
	// DefaultQueue and DefaultQueueBytes.
	Queue      int
	QueueBytes int
	// TrainingDir is where datasets for remote training live; "" disables
	// training on the fleet.
	TrainingDir string
	// DriftAlert is the drift score at or above which a device is
	// reported as drifting (a warning in the log, a metric); 0 disables.
	DriftAlert float64
	// Replica names this process among the replicas of a shared store
	// (lead.go); default DefaultReplicaID().
	Replica string
	// LeaseTTL is how long the leader's lease lasts after its last
	// renewal; default DefaultLeaseTTL. Replicas of one database should
	// agree on it.
	LeaseTTL time.Duration
	// UnknownAlert is the share of a telemetry interval's windows reported
	// unknown at or above which a device is reported uncertain; 0
	// disables.
	UnknownAlert float64
	// Reconcile is how often the desired command of every online device
	// whose job is unfinished is published again (reconcile.go); default
	// DefaultReconcile.
	Reconcile time.Duration
	// Audit bounds the audit trail (audit.go); zero fields: the store's
	// defaults.
	Audit store.AuditLimits
	// TwoPerson makes every new rollout, rollbacks included, wait before
	// its first device for a person other than its creator to approve it
	// (approval.go).
	TwoPerson bool
	// Policies are the retraining policies (policy.go), checked with
	// CheckPolicy; they need TrainingDir.
	Policies []RetrainPolicy
	// LabelPull is how often devices with a label source are asked for
	// their labelled windows (labelsource.go); default DefaultLabelPull,
	// negative: never.
	LabelPull time.Duration
}

// Service is trit-fleet's core: registry, inventory and rollouts over one
// store, driven by incoming device messages and a ticker.
type Service struct {
	db      store.Database
	reg     *Registry
	topics  wire.Topics
	pub     Publisher
	cmdKey  ed25519.PrivateKey
	opt     Options
	log     *slog.Logger
	in      *intake
	mu      sync.Mutex // serialises rollout changes between the loop and API calls
	metrics *Metrics
	audit   *access.Audit // the audit trail (fleet/access)
	trainer *trainer
	// reqs matches devices' responses to waiting requests (Samples).
	reqs requests
	// running indexes the rollouts that are not done, so a tick reads only
	// those; nil until the first Tick loads it (guarded by mu).
	running map[string]bool
	// recon re-asserts the devices' desired commands (reconcile.go).
	recon reconciler
	// leader is this replica's view of the rollout lease (lead.go).
	leader leadership
	// extras are the server's alarm sources and metrics (alarms.go).
	extras extras
	// labels tracks the label requests to devices (labelsource.go).
	labels labelPuller
	// windowDamage is the latest count of damaged windows (windows.go).
	windowDamage windowDamage
}

// NewService returns a service for fleet that signs deployment commands
// with cmdKey (the fleet's online key) and accepts bundles through reg.
func NewService(db store.Database, reg *Registry, fleet string, pub Publisher, cmdKey ed25519.PrivateKey, opt *Options) (*Service, error) {
	topics, err := wire.NewTopics(fleet)
	if err != nil {
		return nil, err
	}
	if len(cmdKey) != ed25519.PrivateKeySize {
		return nil, errors.New("fleet: the command signing key is not an Ed25519 private key")
	}
	var o Options
	if opt != nil {
		o = *opt
	}
	if o.CommandTTL <= 0 {
		o.CommandTTL = 24 * time.Hour
	}
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.Reconcile <= 0 {
		o.Reconcile = DefaultReconcile
	}
	if o.Replica == "" {
		o.Replica = DefaultReplicaID()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	for i := range o.Policies {
		if err := CheckPolicy(&o.Policies[i]); err != nil {
			return nil, fmt.Errorf("fleet: retraining policy %d: %w", i+1, err)
		}
		if o.TrainingDir == "" {
			return nil, errors.New("fleet: a retraining policy needs a training data directory")
		}
	}
	if _, shared := db.(Leases); shared && o.LeaseTTL < 2*o.Tick {
		return nil, fmt.Errorf("fleet: the rollout lease (%v) must last at least two ticks (%v): it is renewed once a tick", o.LeaseTTL, o.Tick)
	}
	if o.Audit.Key == nil {
		o.Audit.Key = cmdKey // the trail's head is signed with the fleet's online key
	}
	s := &Service{db: db, reg: reg, topics: topics, pub: pub, cmdKey: cmdKey, opt: o, log: o.Logger, audit: access.NewAudit(db, o.Audit, o.Logger, o.Now),
		in: newIntake(o.Queue, o.QueueBytes), metrics: newMetrics(),
		trainer: &trainer{dir: o.TrainingDir, runner: o.Replica + "/" + randomHex(8)}}
	s.AddAlarms(s.auditAlarms)
	if o.TwoPerson {
		s.AddAlarms(s.emergencyAlarms)
	}
	return s, nil
}

// Audit returns the service's audit trail.
func (s *Service) Audit() *access.Audit { return s.audit }

// auditAlarms raises the audit trail's alarms (access.Audit.Alarms) among
// the service's.
func (s *Service) auditAlarms() []Alarm {
	var out []Alarm
	for _, a := range s.audit.Alarms() {
		out = append(out, Alarm(a))
	}
	return out
}

// Topics returns the fleet's topic builder.
func (s *Service) Topics() wire.Topics { return s.topics }

// Registry returns the bundle registry.
func (s *Service) Registry() *Registry { return s.reg }

// Store returns the service's store, which the HTTP API and the console
// read the inventory from.
func (s *Service) Store() store.Database { return s.db }

// Logger returns the service's logger.
func (s *Service) Logger() *slog.Logger { return s.log }

// Now returns the time on the service's clock (Options.Now).
func (s *Service) Now() time.Time { return s.opt.Now() }

// Subscriptions lists the topic filters the service's connection must
// subscribe to (QoS 1), each delivering to Deliver.
func (s *Service) Subscriptions() []string {
	return []string{s.topics.AllDevices(wire.KindState), s.topics.AllDevices(wire.KindEvents), s.topics.AllDevices(wire.KindTelemetry),
		s.topics.AllDevices(wire.KindResponses)}
}

// PublishBundle publishes a registered bundle, retained, on its
// content-addressed topic.
func (s *Service) PublishBundle(hash string) error {
	_, data, err := s.reg.Bundle(hash)
	if err != nil {
		return err
	}
	if err := s.pub.Publish(s.topics.Bundle(hash), 1, true, data); err != nil {
		return fmt.Errorf("fleet: publish bundle %s: %w", hash[:12], err)
	}
	return s.reg.MarkPublished(hash)
}
