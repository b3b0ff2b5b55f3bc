package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
)

// Conn is the fleet's MQTT connection (eclipse/paho.mqtt.golang, MQTT
// 3.1.1, persistent session). It keeps itself connected instead of using
// paho's reconnect, whose backoff has no randomness: after a lost
// connection it waits a random time drawn by wire.Backoff (1 s doubling to
// 1 min) before each attempt. On every connection it subscribes (QoS 1) to
// the service's filters and counts as connected only once the broker has
// granted all of them: a refused subscription (SUBACK 0x80, typically an
// ACL that does not let the fleet read device topics) fails the connection,
// is logged as an error naming the filter, and is retried like any other
// failure, so the fleet is never silently deaf. Connected reports the
// state (metric trit_fleet_broker_connected). Every wait is bounded by the
// configured timeout; the message handler only hands messages to the
// service's queue, so it never blocks paho's goroutine.
type Conn struct {
	opts    *mqtt.ClientOptions
	broker  string
	timeout time.Duration
	servers int // addresses paho tries in turn at each connection
	log     *slog.Logger
	backoff wire.Backoff // reconnect delays; tests shorten them

	filters   []string
	snapshots []string // filters whose retained messages are taken at each connection, then unsubscribed (withNATS)
	deliver   func(topic string, payload []byte)
	onConnect func()

	mu        sync.Mutex
	c         mqtt.Client // the current connection's client, nil if none
	since     time.Time   // when it connected
	closed    bool
	connected atomic.Bool
	lost      chan struct{} // a connection was lost
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// ErrClosed is returned by a Conn after Close.
var ErrClosed = errors.New("fleet: MQTT connection closed")

// NewConn prepares a connection to broker with the settings of m; Connect
// connects it. Until then Publish fails.
func NewConn(m *MQTTConfig, broker string, log *slog.Logger) (*Conn, error) {
	o := mqtt.NewClientOptions().AddBroker(broker)
	if broker == m.Broker { // not the embedded broker's loopback address
		for _, b := range m.Brokers {
			if b != broker {
				o.AddBroker(b) // tried in turn when the first fails
			}
		}
	}
	o.SetClientID(m.ClientID).SetProtocolVersion(wire.MQTTVersion).
		SetCleanSession(false).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(m.Timeout.Duration).SetWriteTimeout(m.Timeout.Duration).
		SetKeepAlive(30 * time.Second).SetOrderMatters(false)
	if m.Username != "" {
		o.SetUsername(m.Username)
	}
	if m.PasswordFile != "" {
		pw, err := readFileCapped(m.PasswordFile, maxPasswordFile, "a password file")
		if err != nil {
			return nil, fmt.Errorf("mqtt.password_file: %w", err)
		}
		o.SetPassword(strings.TrimRight(string(pw), "\r\n"))
	}
	if m.CAFile != "" || m.CertFile != "" || !strings.HasPrefix(broker, "tcp://") {
		t, err := wire.ClientTLS(m.CAFile, m.CertFile, m.KeyFile)
		if err != nil {
			return nil, err
		}
		o.SetTLSConfig(t)
		if cn := wire.ClientCertName(t); cn != "" && cn != m.ClientID {
			log.Warn("mqtt.cert_file names another identity: trit's Mosquitto configuration makes the certificate's common name the client ID and user name, and its ACL grants the fleet's topics to the name trit-fleet only",
				"common_name", cn, "client_id", m.ClientID)
		}
	}
	c := &Conn{opts: o, broker: broker, timeout: m.Timeout.Duration, servers: len(o.Servers), log: log,
		backoff: wire.Backoff{Min: time.Second, Max: time.Minute},
		lost:    make(chan struct{}, 1), done: make(chan struct{})}
	o.SetConnectionLostHandler(func(_ mqtt.Client, err error) {
		c.connected.Store(false)
		log.Warn("MQTT connection lost; reconnecting", "broker", broker, "err", err)
		select {
		case c.lost <- struct{}{}:
		default:
		}
	})
	return c, nil
}

// setCredentials replaces the user name and password (the embedded
// broker's credentials for the fleet's own connection).
func (c *Conn) setCredentials(user, password string) {
	c.opts.SetUsername(user).SetPassword(password)
}

// Connect connects and, on this and every later connection, subscribes
// (QoS 1) to filters, each delivering to deliver, then runs onConnect (if
// not nil) in a goroutine of its own. A broker that cannot be reached at
// all (refused, timed out: not started yet, restarting) is no reason to
// stop: Connect logs it and returns, and the connection is retried with
// backoff, as after a lost one (trit_fleet_broker_connected says 0 until
// then). It fails if the broker answers and refuses (credentials, TLS,
// a subscription): a configuration to fix. Later failures are logged and
// retried.
func (c *Conn) Connect(filters []string, deliver func(topic string, payload []byte), onConnect func()) error {
	c.filters, c.deliver, c.onConnect = filters, deliver, onConnect
	// Messages queued in the persistent session arrive right after the
	// CONNACK, before the subscriptions are renewed: the default handler
	// takes them.
	c.opts.SetDefaultPublishHandler(func(_ mqtt.Client, msg mqtt.Message) { deliver(msg.Topic(), msg.Payload()) })
	err := c.connectOnce()
	if err != nil && !unreachable(err) {
		return err
	}
	if err != nil {
		c.log.Warn("MQTT broker not reachable at start; trit-fleet serves its API and connects when the broker is up", "broker", c.broker, "err", err)
		c.lost <- struct{}{} // keep starts reconnecting at once
	}
	go c.keep()
	return nil
}

// errTimedOut marks a connection attempt that got no answer in time.
var errTimedOut = errors.New("timed out")

// unreachable reports whether err from connectOnce says the broker could
// not be reached (no answer, connection refused or reset), as opposed to a
// broker that answered and refused.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, errTimedOut) || errors.As(err, &op) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

// connectOnce makes one connection and its subscriptions.
func (c *Conn) connectOnce() error {
	cl := mqtt.NewClient(c.opts)
	tok := cl.Connect()
	wait := c.timeout * time.Duration(max(1, c.servers)) // each address gets the timeout
	if !tok.WaitTimeout(wait) {
		cl.Disconnect(0)
		return fmt.Errorf("mqtt: connecting to %s: %w after %v", c.broker, errTimedOut, wait)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("mqtt: connecting to %s: %w", c.broker, err)
	}
	handler := func(_ mqtt.Client, msg mqtt.Message) { c.deliver(msg.Topic(), msg.Payload()) }
	for _, f := range c.filters {
		if err := c.subscribe(cl, f, 1, handler); err != nil {
			cl.Disconnect(250)
			return err
		}
	}
	for _, f := range c.snapshots {
		if err := c.snapshot(cl, f, handler); err != nil {
			cl.Disconnect(250)
			return err
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cl.Disconnect(250)
		return ErrClosed
	}
	c.c, c.since = cl, time.Now()
	c.connected.Store(true)
	c.mu.Unlock()
	c.log.Info("connected to the MQTT broker", "broker", c.broker, "subscriptions", len(c.filters))
	if c.onConnect != nil {
		go c.onConnect()
	}
	return nil
}

// snapshot takes filter's retained messages: a QoS 0 subscription (no
// queue kept for it) the broker answers with them right after its SUBACK,
// then an unsubscription, whose UNSUBACK comes after them.
func (c *Conn) snapshot(cl mqtt.Client, filter string, h mqtt.MessageHandler) error {
	if err := c.subscribe(cl, filter, 0, h); err != nil {
		return err
	}
	if tok := cl.Unsubscribe(filter); !tok.WaitTimeout(c.timeout) || tok.Error() != nil {
		return fmt.Errorf("mqtt: unsubscribing from %s: not confirmed within %v (%v)", filter, c.timeout, tok.Error())
	}
	return nil
}

// subscribe subscribes to filter and checks the broker's answer.
func (c *Conn) subscribe(cl mqtt.Client, filter string, qos byte, h mqtt.MessageHandler) error {
	tok := cl.Subscribe(filter, qos, h)
	if !tok.WaitTimeout(c.timeout) {
		return fmt.Errorf("mqtt: subscription to %s not confirmed within %v", filter, c.timeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("mqtt: subscribing to %s: %w", filter, err)
	}
	st, ok := tok.(*mqtt.SubscribeToken)
	if !ok {
		return nil
	}
	code, ok := st.Result()[filter]
	if !ok || code >= 0x80 {
		return fmt.Errorf("mqtt: the broker refused the subscription to %s (SUBACK return code %#x): its ACL must let client %q read %s",
			filter, code, c.opts.ClientID, filter)
	}
	return nil
}

// keep reconnects after every lost connection until Close.
func (c *Conn) keep() {
	for {
		select {
		case <-c.done:
			return
		case <-c.lost:
		}
		c.mu.Lock()
		if time.Since(c.since) > c.backoff.Max {
			c.backoff.Reset() // the connection lasted: start again from Min
		}
		c.c = nil
		c.mu.Unlock()
		for {
			wait, _ := c.backoff.Next()
			c.log.Info("MQTT reconnecting", "broker", c.broker, "in", wait.String())
			select {
			case <-c.done:
				return
			case <-time.After(wait):
			}
			err := c.connectOnce()
			if err == nil || errors.Is(err, ErrClosed) {
				break
			}
			c.log.Error("MQTT reconnect failed; not connected", "broker", c.broker, "err", err)
		}
	}
}

// Connected reports whether the connection is up with every subscription
// granted.
func (c *Conn) Connected() bool { return c.connected.Load() }

// Publish publishes and waits for the broker's acknowledgement (QoS 1) at
// most the configured timeout.
func (c *Conn) Publish(topic string, qos byte, retained bool, payload []byte) error {
	c.mu.Lock()
	cl := c.c
	c.mu.Unlock()
	if cl == nil || !c.connected.Load() {
		return fmt.Errorf("mqtt: not connected to %s", c.broker)
	}
	tok := cl.Publish(topic, qos, retained, payload)
	if !tok.WaitTimeout(c.timeout) {
		return fmt.Errorf("mqtt: publish to %s timed out after %v", topic, c.timeout)
	}
	return tok.Error()
}

// Close disconnects, letting in-flight work finish for up to a second, and
// stops reconnecting.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		cl := c.c
		c.c = nil
		c.mu.Unlock()
		close(c.done)
		c.connected.Store(false)
		if cl != nil {
			cl.Disconnect(1000)
		}
	})
}
