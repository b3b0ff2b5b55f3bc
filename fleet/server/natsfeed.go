package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/wire"
)

// Feed is a source of device messages that redelivers what is not
// acknowledged: NATSFeed, and fakes in tests. Start hands each message to
// deliver with its ack, which the service calls once the message's effect
// is stored (Service.DeliverAcked).
type Feed interface {
	Start(deliver func(topic string, payload []byte, ack func())) error
	Connected() bool
	Close()
}

// Device messages on a NATS cluster. nats-server's MQTT (2.9) stores every
// QoS 1 PUBLISH in the JetStream stream $MQTT_msgs, under the subject
// "$MQTT.msgs." + the topic with "/" as ".", before it sends the PUBACK;
// an MQTT subscription is a consumer of that stream per session, so every
// replica subscribing over MQTT gets every message (2.9 has no shared
// subscriptions). NATSFeed instead reads the stream through NATS's own
// client with one durable pull consumer per message kind (state, events,
// telemetry), the same consumers for every replica of the fleet: the
// server hands each message to one replica, and hands it again — to any
// replica — if it is not acknowledged within the ack wait (the replica
// died, its store transaction failed, its queue was full). A replica
// acknowledges a message only once its effect is committed, so a report
// the broker acknowledged to the device reaches the fleet's store even if
// the replica that took it dies; the handlers are idempotent (events by
// ID, telemetry by session and sequence, states by session), so a message
// handled twice changes nothing the second time. Responses to the fleet's
// requests go to the replica that waits for them: every replica takes
// them with a plain (core NATS) subscription, and the others drop them.
// docs/SCALING.md has the design and its measurements.
type NATSFeed struct {
	urls    []string
	fleet   string
	opts    []nats.Option
	ackWait time.Duration
	timeout time.Duration
	log     *slog.Logger

	nc *nats.Conn

	// window holds a token for each message delivered to the service
	// and not yet finished (natsWindow); done is closed by Close, to free
	// a delivery waiting for a token.
	window chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	closed   bool
	consumes []jetstream.ConsumeContext // one per kind of natsKinds; nil until its Consume returns
}

// natsStream is the stream in which nats-server's MQTT keeps QoS 1
// messages; natsSubjectPrefix starts its subjects.
const (
	natsStream        = "$MQTT_msgs"
	natsSubjectPrefix = "$MQTT.msgs."
)

// NATSInbox starts the subjects on which the fleet's NATS connection
// receives replies and pulled messages (its permissions allow
// NATSInbox.> rather than every client's _INBOX.>).
const NATSInbox = "_INBOX_trit_fleet"

// natsKinds are the device-to-fleet kinds the replicas share.
var natsKinds = []wire.Kind{wire.KindState, wire.KindEvents, wire.KindTelemetry}

// NATSConsumerName is the durable consumer the replicas of fleet share
// for messages of kind k (the NATS permissions name it).
func NATSConsumerName(fleet string, k wire.Kind) string {
	return "trit-fleet_" + fleet + "_" + string(k)
}

// NewNATSFeed prepares the feed of m.NATS for fleet; Start connects. It
// logs in as m.Username with m.PasswordFile's password and trusts
// m.CAFile (with m.CertFile as its client certificate), as the MQTT
// connection does.
func NewNATSFeed(m *MQTTConfig, fleet, replica string, log *slog.Logger) (*NATSFeed, error) {
	f := &NATSFeed{urls: m.NATS, fleet: fleet, ackWait: m.NATSAckWait.Duration, timeout: m.Timeout.Duration, log: log,
		window: make(chan struct{}, natsWindowFor(m.Queue)), done: make(chan struct{})}
	f.opts = []nats.Option{nats.Name("trit-fleet " + replica), nats.Timeout(m.Timeout.Duration),
		nats.CustomInboxPrefix(NATSInbox), // the replies it may read, not every client's
		nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.DontRandomize(), // in the order given, as mqtt.brokers: a replica can be kept near its node
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("NATS connection lost; reconnecting", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("NATS error", "err", err) }),
	}
	if m.Username != "" {
		pw := ""
		if m.PasswordFile != "" {
			b, err := readFileCapped(m.PasswordFile, maxPasswordFile, "a password file")
			if err != nil {
				return nil, fmt.Errorf("mqtt.password_file: %w", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		f.opts = append(f.opts, nats.UserInfo(m.Username, pw))
	}
	if m.CAFile != "" || m.CertFile != "" || strings.HasPrefix(m.NATS[0], "tls://") {
		t, err := wire.ClientTLS(m.CAFile, m.CertFile, m.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt.nats: %w", err)
		}
		f.opts = append(f.opts, nats.Secure(t))
	}
	return f, nil
}

// Start connects, creates (or updates) the shared consumers and starts
// taking messages. It fails if no server answers, if JetStream refuses
// the consumers (permissions; no MQTT stream: mqtt.broker is not this
// cluster) or if the subscription to responses is refused.
func (f *NATSFeed) Start(deliver func(topic string, payload []byte, ack func())) error {
	nc, err := nats.Connect(strings.Join(f.urls, ","), f.opts...)
	if err != nil {
		return fmt.Errorf("mqtt.nats: connecting to %s: %w", strings.Join(f.urls, ", "), err)
	}
	f.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		f.Close()
		return fmt.Errorf("mqtt.nats: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*f.timeout)
	defer cancel()
	topics, err := wire.NewTopics(f.fleet)
	if err != nil {
		f.Close()
		return err
	}
	f.mu.Lock()
	f.consumes = make([]jetstream.ConsumeContext, len(natsKinds))
	f.mu.Unlock()
	for i, k := range natsKinds {
		name := NATSConsumerName(f.fleet, k)
		filter := natsSubjectPrefix + mqttToSubject(topics.AllDevices(k))
		c, err := f.consumer(ctx, js, jetstream.ConsumerConfig{
			Durable: name, FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: f.ackWait, MaxAckPending: natsMaxAckPending, MaxDeliver: -1,
		})
		if err != nil {
			f.Close()
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return fmt.Errorf("mqtt.nats: JetStream has no stream %s: nats-server creates it when the first MQTT client connects; is mqtt.broker this cluster's MQTT listener?", natsStream)
			}
			return fmt.Errorf("mqtt.nats: creating the shared consumer %s (filter %s) on stream %s: %w (the fleet's NATS user needs the permissions in docs/FLEET.md \"NATS\")",
				name, filter, natsStream, err)
		}
		if err := f.consume(i, c, name, deliver); err != nil {
			f.Close()
			return fmt.Errorf("mqtt.nats: consuming %s: %w", name, err)
		}
	}
	resp := mqttToSubject(topics.AllDevices(wire.KindResponses))
	if _, err := nc.Subscribe(resp, func(m *nats.Msg) { deliver(subjectToMQTT(m.Subject), m.Data, nil) }); err != nil {
		f.Close()
		return fmt.Errorf("mqtt.nats: subscribing to %s: %w", resp, err)
	}
	// A refused subscription arrives as an asynchronous error; a round
	// trip makes it show here.
	if err := nc.FlushTimeout(f.timeout); err != nil {
		f.Close()
		return fmt.Errorf("mqtt.nats: subscribing to %s: %w", resp, err)
	}
	if err := nc.LastError(); err != nil {
		f.Close()
		return fmt.Errorf("mqtt.nats: subscribing to %s: %w (the fleet's NATS user must be allowed to subscribe to it)", resp, err)
	}
	f.log.Info("taking device messages from NATS", "server", nc.ConnectedUrlRedacted(), "consumers", len(natsKinds), "ack_wait", f.ackWait.String())
	return nil
}

// consume starts taking the messages of consumer c (natsKinds[i]) in pull
// requests. A pull request that reaches no leader is answered "no
// responders" and, in nats.go's Consume, then nothing is asked again
// until two heartbeats are missed (30 s with its defaults): the replica
// would take no message of that kind meanwhile. That happens to the
// first replica at every start of a fleet on a new cluster (its first pull
// leaves the moment the consumer's leader is elected, before the leader's
// subscription is known on the replica's node: TestNATSFeedSharesDeviceMessages
// on a loaded machine, 3 of 20 runs, a replica took no report) and when
// a consumer's leader moves. So on "no responders" consume starts again,
// a moment later.
func (f *NATSFeed) consume(i int, c jetstream.Consumer, name string, deliver func(topic string, payload []byte, ack func())) error {
	cc, err := c.Consume(func(msg jetstream.Msg) {
		// Wait for room in the window: blocking here is what stops
		// Consume asking for more (natsWindow).
		select {
		case f.window <- struct{}{}:
		case <-f.done:
			return // not acknowledged: it comes again, to another replica
		}
		var finished atomic.Bool
		finish := func() {
			if finished.CompareAndSwap(false, true) {
				<-f.window
			}
		}
		// A message the service drops (its queue full, its store
		// transaction failed) is never acknowledged: it comes again after
		// the ack wait, and from then on it no longer takes room here.
		expire := time.AfterFunc(f.ackWait, finish)
		deliver(subjectToMQTT(strings.TrimPrefix(msg.Subject(), natsSubjectPrefix)), msg.Data(), func() {
			if err := msg.Ack(); err != nil {
				f.log.Debug("NATS ack not sent; the message will come again", "err", err)
			}
			expire.Stop()
			finish()
		})
	}, jetstream.PullMaxMessages(natsPull), jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) {
		if errors.Is(err, nats.ErrNoResponders) {
			f.log.Debug("NATS consumer: its leader did not take the pull request (being elected or moved); pulling again", "consumer", name)
			go f.reconsume(i, cc, c, name, deliver)
			return
		}
		f.log.Warn("NATS consumer", "consumer", name, "err", err)
	}))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		cc.Stop()
		return nil
	}
	f.consumes[i] = cc
	return nil
}

// reconsume replaces consumption cc of natsKinds[i] by a new one, unless
// the feed is closed or cc was already replaced.
func (f *NATSFeed) reconsume(i int, cc jetstream.ConsumeContext, c jetstream.Consumer, name string, deliver func(topic string, payload []byte, ack func())) {
	for {
		time.Sleep(natsRepull)
		f.mu.Lock()
		cur, closed := f.consumes[i], f.closed
		if closed || cur != nil && cur != cc {
			f.mu.Unlock()
			return
		}
		if cur == cc {
			f.consumes[i] = nil
			f.mu.Unlock()
			break
		}
		f.mu.Unlock() // nil: Consume has not returned cc yet, or another reconsume is replacing it
	}
	cc.Stop()
	for {
		err := f.consume(i, c, name, deliver)
		if err == nil {
			return
		}
		f.log.Warn("NATS consumer: pulling again failed; trying again", "consumer", name, "err", err)
		time.Sleep(natsRepull)
		f.mu.Lock()
		closed := f.closed
		f.mu.Unlock()
		if closed {
			return
		}
	}
}

// natsRepull is the pause before consuming again.
const natsRepull = 250 * time.Millisecond

// consumer creates the shared consumer cfg, or updates it to cfg (the
// same request, answered with the consumer either way), asking again
// while JetStream does not answer, until ctx ends. A clustered JetStream
// sometimes never answers a consumer create or update although it applies
// it (nats-server issue 8350; here: a second replica's update of a
// consumer the first had just made, and a first create, went unanswered
// for 30 s on a loaded machine while the consumers' leaders were elected
// at once); the request is idempotent, so asking again is safe, and it is
// answered. An answer that is an error (no such stream, a permission) is
// final, except JetStream's own "temporarily unavailable" (503).
func (f *NATSFeed) consumer(ctx context.Context, js jetstream.JetStream, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	wait := min(f.timeout, natsAPIWait)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, wait)
		c, err := js.CreateOrUpdateConsumer(actx, natsStream, cfg)
		cancel()
		var apiErr *jetstream.APIError
		retry := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) ||
			errors.As(err, &apiErr) && apiErr.Code == 503
		if err == nil || !retry || ctx.Err() != nil {
			if retry {
				err = fmt.Errorf("no answer in %d attempts: %w", attempt, err)
			}
			return c, err
		}
		f.log.Warn("NATS: JetStream did not answer the consumer request; asking again", "consumer", cfg.Durable, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second)):
		}
	}
}

// natsAPIWait bounds the wait for one answer of JetStream's API (nats.go's
// own default); mqtt.timeout when shorter.
const natsAPIWait = 5 * time.Second

// natsPull is how many messages a replica asks each consumer for at once;
// natsMaxAckPending bounds those delivered and not yet acknowledged, over
// all replicas, per consumer.
const (
	natsPull          = 256
	natsMaxAckPending = 16000
)

// natsWindow bounds the messages a replica holds delivered and not yet
// finished — acknowledged once their effect is stored, or past the ack
// wait, after which JetStream delivers them again — (at most half its
// mqtt.queue). A replica that fell behind then leaves its backlog in the
// stream instead of its own queue. Without the window it took all that
// natsMaxAckPending allows; a message queued longer than the ack wait
// was delivered again, to it or the other replica, while it still
// waited, and the copies filled the queue: at 10,000 devices 21,843
// messages were dropped by a full queue and waited a minute for the
// devices to send them again, and the rollout took 7 min. The nodes'
// passes over each consumer's unacknowledged messages cost less too. make
// scale-nats on two cores (docs/BENCHMARKS.md): 512 finished in 50–75 s,
// 2,048 in 90–112 s, 8,192 in 140 s, 128 in 110 s (the window then
// limits the pace: each message waits for its commit's acknowledgement).
const natsWindow = 512

// natsWindowFor is the window of a replica whose mqtt.queue is queue (0:
// the default): natsWindow, or half the queue when that is less, so the
// responses have room beside the window.
func natsWindowFor(queue int) int {
	if queue <= 0 {
		queue = fleet.DefaultQueue
	}
	return max(1, min(natsWindow, queue/2))
}

// Connected reports whether the NATS connection is up.
func (f *NATSFeed) Connected() bool { return f.nc != nil && f.nc.IsConnected() }

// Close stops taking messages and closes the connection. Messages
// delivered and not yet acknowledged come again, to another replica,
// after the ack wait.
func (f *NATSFeed) Close() {
	f.mu.Lock()
	if !f.closed {
		close(f.done)
	}
	f.closed = true
	for _, cc := range f.consumes {
		if cc != nil {
			cc.Stop()
		}
	}
	f.mu.Unlock()
	if f.nc != nil {
		f.nc.Close()
	}
}

// mqttToSubject maps an MQTT topic or filter to nats-server's subject
// ("/" to ".", "+" to "*", "#" to ">"): trit's topics have no empty
// levels and their IDs no "." (checked in the configuration).
func mqttToSubject(topic string) string {
	return strings.NewReplacer("/", ".", "+", "*", "#", ">").Replace(topic)
}

// subjectToMQTT maps a subject back to its topic.
func subjectToMQTT(subject string) string { return strings.ReplaceAll(subject, ".", "/") }

// checkNATS checks and defaults mqtt.nats and mqtt.nats_ack_wait.
func (m *MQTTConfig) checkNATS(fleet string) error {
	fail := badValue
	if len(m.NATS) == 0 {
		if m.NATSAckWait.Duration != 0 {
			return fail("mqtt.nats_ack_wait", "set without mqtt.nats")
		}
		return nil
	}
	if m.Broker == "embedded" {
		return fail("mqtt.nats", "the client addresses of the NATS cluster whose MQTT listener mqtt.broker is; not with the embedded broker")
	}
	if len(m.NATS) > 16 {
		return fail("mqtt.nats", "%d addresses, at most 16", len(m.NATS))
	}
	for _, u := range m.NATS {
		tls := strings.HasPrefix(u, "tls://")
		if !tls && !strings.HasPrefix(u, "nats://") || len(u) == len("nats://") {
			return fail("mqtt.nats", "%q: want nats://host:port or tls://host:port", u)
		}
		if tls == strings.HasPrefix(m.Broker, "tcp://") {
			return fail("mqtt.nats", "%q: the NATS addresses use TLS if and only if mqtt.broker does (it is %q): both carry the fleet's password", u, m.Broker)
		}
	}
	// Topics become subjects: "." separates their tokens.
	if strings.Contains(fleet, ".") {
		return fail("fleet", "%q has a \".\": on NATS a topic level may not (it separates subject tokens)", fleet)
	}
	if m.NATSAckWait.Duration == 0 {
		m.NATSAckWait.Duration = 30 * time.Second
	}
	if d := m.NATSAckWait.Duration; d < time.Second || d > time.Hour {
		return fail("mqtt.nats_ack_wait", "%v: want 1s to 1h", d)
	}
	return nil
}

// natsPublisher is the service's broker on a NATS cluster: it publishes
// over MQTT (retained commands and bundles need nats-server's MQTT) and
// is connected when both connections are.
type natsPublisher struct {
	*Conn
	feed Feed
}

func (p natsPublisher) Connected() bool { return p.Conn.Connected() && p.feed.Connected() }

// withNATS prepares, for a configuration with mqtt.nats, the feed and the
// publisher the service uses; without it, conn and a nil feed. On NATS the
// MQTT session is clean: it keeps no subscription (a persistent one left
// by an earlier run that subscribed over MQTT would still deliver every
// device message to this replica); at each connection it only takes the
// devices' retained states.
func withNATS(m *MQTTConfig, fleet, replica string, conn *Conn, log *slog.Logger) (fleet.Publisher, *NATSFeed, error) {
	if len(m.NATS) == 0 {
		return conn, nil, nil
	}
	feed, err := NewNATSFeed(m, fleet, replica, log)
	if err != nil {
		return nil, nil, err
	}
	conn.opts.SetCleanSession(true)
	topics, err := wire.NewTopics(fleet)
	if err != nil {
		return nil, nil, err
	}
	// The devices' retained states fill the inventory, as over MQTT
	// subscriptions (a new database, a restore); live ones come from NATS.
	conn.snapshots = []string{topics.AllDevices(wire.KindState)}
	return natsPublisher{conn, feed}, feed, nil
}
