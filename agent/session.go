package agent

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/trit-iot/trit/wire"
)

// session keeps the agent connected. Each connection is a new MQTT session
// number (store.NextSession): the Last Will is the retained offline state of
// that session, and the first message on the connection is the retained
// online state with it, so the fleet can tell a stale will from a current
// state. Reconnects back off exponentially between mqtt.reconnect_min and
// mqtt.reconnect_max, each wait drawn at random from the upper half of the
// current delay (wire.Backoff).
type session struct {
	a *Agent

	mu      sync.Mutex
	conn    Conn
	gen     uint64          // connection generation, +1 per connection
	number  uint64          // MQTT session counter of the current connection
	extra   map[string]bool // subscriptions besides desired and acks (bundles being fetched)
	changed chan struct{}   // signalled on connect
	started time.Time       // when run began (startingUp)
	// firstSession is the boot number, for the first connection attempt
	// (run's goroutine only).
	firstSession uint64
}

// startupGrace is how long after start a broker that refuses connections
// is taken for one still starting (the agent and the fleet started
// together) rather than warned about.
const startupGrace = 30 * time.Second

// startingUp reports whether a failed connection is the expected kind
// before the first one: refused, within startupGrace of the start.
func (s *session) startingUp(err error) bool {
	s.mu.Lock()
	never := s.gen == 0
	s.mu.Unlock()
	return never && time.Since(s.started) < startupGrace && strings.Contains(err.Error(), "connection refused")
}

// bundleQoS is the QoS of the subscriptions want makes: a bundle's retained
// message. Retained messages arrive on every subscription, and the session
// subscribes again on every connection, so QoS 1 would add no delivery
// guarantee; on nats-server it would add a replicated JetStream consumer
// per download, whose creation stalls when a whole fleet downloads at once
// (docs/SCALING.md).
const bundleQoS = 0

// ackQoS is the QoS of the acks and requests subscriptions. An ack lost
// costs a re-sent event (the agent re-sends unacknowledged events on every
// connection and every telemetry.ack_retry, and the fleet acknowledges
// again); a request is for now (nothing waits for an offline device). So
// QoS 1 would buy nothing worth its cost on nats-server: a replicated
// JetStream consumer per subscription.
const ackQoS = 0

// desiredQoS is the QoS of the desired subscription. The command is
// retained, delivered on every subscription, and the session subscribes
// again on every connection; the fleet re-asserts an unfinished job's
// command to an online device every rollouts.reconcile (fleet/reconcile.go)
// and the agent handles a command by (rollout, seq), so a copy lost or
// repeated changes nothing. QoS 1 would add a replicated JetStream
// consumer per device on nats-server, and each acknowledgement on its
// stream checks every consumer of the stream: with one a device, a
// rollout's cost grew with the square of the fleet (docs/SCALING.md). So
// no subscription of the agent is QoS 1: no consumer per device.
const desiredQoS = 0

func newSession(a *Agent) *session {
	return &session{a: a, extra: map[string]bool{}, changed: make(chan struct{}, 1), firstSession: a.clock.bootSession()}
}

// current returns the live connection and its generation, or nil.
func (s *session) current() (Conn, uint64, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn, s.gen, s.number
}

func (s *session) subscriptions() []Subscription {
	t, id := s.a.topics, s.a.cfg.DeviceID
	subs := []Subscription{{Topic: t.Desired(id), QoS: desiredQoS}, {Topic: t.Acks(id), QoS: ackQoS}, {Topic: t.Requests(id), QoS: ackQoS}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic := range s.extra {
		subs = append(subs, Subscription{Topic: topic, QoS: bundleQoS})
	}
	return subs
}

// want adds a subscription, now if connected and on every later connection.
func (s *session) want(ctx context.Context, topic string) {
	s.mu.Lock()
	s.extra[topic] = true
	conn, gen := s.conn, s.gen
	s.mu.Unlock()
	if conn != nil {
		if err := conn.Subscribe(ctx, Subscription{Topic: topic, QoS: bundleQoS}); err != nil {
			s.a.log.Warn("mqtt subscribe failed; retrying", "topic", topic, "err", err)
			go s.retrySubscribe(ctx, conn, gen, topic)
		}
	}
}

// retrySubscribe subscribes topic on conn again, with backoff from
// mqtt.reconnect_min to reconnect_max, until it succeeds, the topic is no
// longer wanted, the connection is replaced (a new connection subscribes
// everything wanted) or ctx ends. A clustered broker refuses a
// subscription for a while after a node failed (nats-server: SUBACK 0x80
// until JetStream has placed the new consumer); the connection itself is
// fine, so waiting for a reconnection would wait for nothing.
func (s *session) retrySubscribe(ctx context.Context, conn Conn, gen uint64, topic string) {
	wait := s.a.cfg.MQTT.ReconnectMin.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		s.mu.Lock()
		still := s.extra[topic] && s.conn == conn && s.gen == gen
		s.mu.Unlock()
		if !still {
			return
		}
		err := conn.Subscribe(ctx, Subscription{Topic: topic, QoS: bundleQoS})
		if err == nil {
			s.a.log.Info("mqtt subscribed after a retry", "topic", topic)
			return
		}
		s.a.log.Warn("mqtt subscribe failed; retrying", "topic", topic, "err", err)
		wait = min(2*wait, s.a.cfg.MQTT.ReconnectMax.Duration)
	}
}

// unwant removes a subscription added by want.
func (s *session) unwant(ctx context.Context, topic string) {
	s.mu.Lock()
	delete(s.extra, topic)
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		conn.Unsubscribe(ctx, topic) // a failure only means a retained message we ignore
	}
}

// publishState publishes the current retained state, if connected.
func (s *session) publishState(ctx context.Context) {
	conn, _, n := s.current()
	if conn == nil {
		return
	}
	payload, err := s.a.state(n, true)
	if err == nil {
		err = conn.Publish(ctx, Message{Topic: s.a.topics.State(s.a.cfg.DeviceID), Payload: payload, QoS: 1, Retained: true})
	}
	if err != nil {
		s.a.log.Warn("state publish failed", "err", err)
	}
}

func (s *session) run(ctx context.Context) {
	s.started = time.Now()
	cfg := s.a.cfg.MQTT
	backoff := wire.Backoff{Min: cfg.ReconnectMin.Duration, Max: cfg.ReconnectMax.Duration}
	for ctx.Err() == nil {
		if s.connectOnce(ctx) {
			backoff.Reset()
		}
		if ctx.Err() != nil {
			return
		}
		// Randomized, so that the gateways of a fleet that lost their
		// broker do not all come back in the same instant.
		wait, nominal := backoff.Next()
		s.a.log.Info("mqtt reconnecting", "in", wait.String(), "backoff", nominal.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// connectOnce runs one connection until it is lost or ctx ends; it reports
// whether the connection lasted long enough to reset the backoff.
func (s *session) connectOnce(ctx context.Context) bool {
	a := s.a
	// The first attempt takes the session number the process reserved
	// at start as its clock's boot (clock.go): a new database's first
	// session is 1, as before the clock.
	n, err := s.firstSession, error(nil)
	s.firstSession = 0
	if n == 0 {
		n, err = a.db.NextSession()
	}
	if err != nil {
		a.log.Error("cannot advance the session counter", "err", err)
		return false
	}
	will, err := wire.Offline(a.cfg.DeviceID, a.instance, n)
	if err != nil {
		return false
	}
	stateTopic := a.topics.State(a.cfg.DeviceID)
	lost := make(chan error, 1)
	subs := s.subscriptions()
	conn, err := a.dialer.Dial(ctx, DialOptions{
		ClientID:      a.cfg.DeviceID,
		Will:          Message{Topic: stateTopic, Payload: will, QoS: 1, Retained: true},
		Subscriptions: subs,
		OnMessage:     a.dispatch,
		OnLost: func(err error) {
			select {
			case lost <- err:
			default:
			}
		},
	})
	if err != nil {
		args := []any{"broker", strings.Join(a.cfg.MQTT.Addresses(), " "), "session", n, "err", err}
		if a.cfg.MQTT.CAFile != "" || a.cfg.MQTT.CertFile != "" || a.cfg.MQTT.tlsScheme() {
			if msg := err.Error(); strings.Contains(msg, "connection reset") || strings.HasSuffix(msg, "EOF") {
				// TLS 1.3 brokers check the client certificate after the
				// handshake; a refusal can then look like a reset.
				args = append(args, "hint", "the broker may have refused the client certificate (cert_file/key_file, its CA); its log says why")
			}
		}
		if s.startingUp(err) {
			// Started with (or just before) the fleet: its broker is not
			// listening yet, which the next attempts fix by themselves.
			a.log.Info("mqtt broker not accepting connections yet; retrying", args...)
			return false
		}
		a.log.Warn("mqtt connect failed", args...)
		return false
	}
	online, err := a.state(n, true)
	if err == nil {
		err = conn.Publish(ctx, Message{Topic: stateTopic, Payload: online, QoS: 1, Retained: true})
	}
	if err != nil {
		a.log.Warn("online state publish failed; reconnecting", "err", err)
		conn.Close()
		return false
	}
	a.log.Info("mqtt connected", "broker", strings.Join(a.cfg.MQTT.Addresses(), " "), "session", n)
	start := time.Now()
	initial := map[string]bool{}
	for _, sub := range subs {
		initial[sub.Topic] = true
	}
	s.mu.Lock()
	s.conn, s.number = conn, n
	s.gen++
	var late []string
	for topic := range s.extra {
		if !initial[topic] {
			late = append(late, topic)
		}
	}
	s.mu.Unlock()
	// A queued command can arrive while Dial is still connecting and start
	// a download whose subscription (want) found no connection yet: make
	// those subscriptions on this connection now.
	for _, topic := range late {
		if err := conn.Subscribe(ctx, Subscription{Topic: topic, QoS: bundleQoS}); err != nil {
			a.log.Warn("mqtt subscribe failed; retrying", "topic", topic, "err", err)
			s.mu.Lock()
			gen := s.gen
			s.mu.Unlock()
			go s.retrySubscribe(ctx, conn, gen, topic)
		}
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
	a.pub.kickNow()

	var lostErr error
	select {
	case <-ctx.Done():
	case lostErr = <-lost:
	}
	s.mu.Lock()
	s.conn = nil
	s.mu.Unlock()
	if lostErr != nil {
		a.log.Warn("mqtt connection lost", "session", n, "err", lostErr)
		conn.Close()
	} else {
		// A clean disconnect sends no will: say offline ourselves.
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn.Publish(c, Message{Topic: stateTopic, Payload: will, QoS: 1, Retained: true})
		cancel()
		conn.Close()
		a.log.Info("mqtt disconnected", "session", n)
	}
	return time.Since(start) > a.cfg.MQTT.ReconnectMax.Duration
}
