package agent

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
)

// PahoDialer implements Dialer with eclipse/paho.mqtt.golang. It does not
// use paho's automatic reconnect: the agent reconnects itself (with
// randomized backoff, see session), with a new Last Will per session.
type PahoDialer struct {
	// Broker is the broker's address; Brokers, when set, all of them (the
	// nodes of a cluster), tried in turn: each Dial starts one further
	// along, from a place that depends on the client ID, so that devices
	// spread over the nodes and a device whose node failed tries another
	// first.
	Broker    string
	Brokers   []string
	Username  string
	Password  string // never logged
	TLS       *tls.Config
	KeepAlive time.Duration
	Timeout   time.Duration // bound on every token wait
	// MaxPacket is the largest MQTT packet read from the broker, in bytes:
	// a larger one closes the connection before its body is read
	// (wire.LimitPackets), as paho itself has no limit. 0 means
	// wire.MaxPacket; Run sets MaxPacket(install.max_bundle_bytes).
	MaxPacket int
	dials     atomic.Uint32
}

// order returns the addresses in the order this dial tries them.
func (d *PahoDialer) order(clientID string) []string {
	all := d.Brokers
	if len(all) == 0 {
		all = []string{d.Broker}
	}
	h := fnv.New32a()
	h.Write([]byte(clientID))
	start := int((h.Sum32() + d.dials.Add(1) - 1) % uint32(len(all)))
	return append(append([]string(nil), all[start:]...), all[:start]...)
}

// MaxPacket is the agent's limit on incoming MQTT packets for bundles of at
// most maxBundle bytes: the bundle plus its topic and headers, and never
// less than wire.MaxPacket.
func MaxPacket(maxBundle int) int { return max(wire.MaxPacket, maxBundle+1024) }

// NewPahoDialer builds a dialer from validated configuration; it reads the
// password file and the TLS material.
func NewPahoDialer(m *MQTTConfig) (*PahoDialer, error) {
	addrs := m.Addresses()
	d := &PahoDialer{Broker: addrs[0], Brokers: addrs, Username: m.Username, KeepAlive: m.KeepAlive.Duration, Timeout: m.Timeout.Duration, MaxPacket: wire.MaxPacket}
	if m.PasswordFile != "" {
		pw, err := readPassword(m.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt.password_file: %w", err)
		}
		d.Password = pw
	}
	if m.CAFile != "" || m.CertFile != "" || m.tlsScheme() {
		t, err := wire.ClientTLS(m.CAFile, m.CertFile, m.KeyFile)
		if err != nil {
			return nil, err
		}
		d.TLS = t
	}
	return d, nil
}

// Dial implements Dialer.
func (d *PahoDialer) Dial(ctx context.Context, opt DialOptions) (Conn, error) {
	o := mqtt.NewClientOptions()
	addrs := d.order(opt.ClientID)
	for _, b := range addrs {
		o.AddBroker(b)
	}
	o.SetClientID(opt.ClientID).
		SetProtocolVersion(wire.MQTTVersion).
		SetCleanSession(false).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetKeepAlive(d.KeepAlive).
		SetPingTimeout(d.Timeout).
		SetConnectTimeout(d.Timeout).
		SetWriteTimeout(d.Timeout).
		SetOrderMatters(false). // handlers never block; ordering is the agent's job
		SetBinaryWill(opt.Will.Topic, opt.Will.Payload, opt.Will.QoS, opt.Will.Retained).
		SetCustomOpenConnectionFn(func(u *url.URL, o mqtt.ClientOptions) (net.Conn, error) {
			return wire.DialBroker(u, o.TLSConfig, o.ConnectTimeout, cmp.Or(d.MaxPacket, wire.MaxPacket))
		})
	if d.Username != "" {
		o.SetUsername(d.Username).SetPassword(d.Password)
	}
	if d.TLS != nil {
		o.SetTLSConfig(d.TLS)
	}
	onMsg := func(_ mqtt.Client, m mqtt.Message) {
		opt.OnMessage(Message{Topic: m.Topic(), Payload: m.Payload(), QoS: m.Qos(), Retained: m.Retained()})
	}
	o.SetDefaultPublishHandler(onMsg)
	subscribed := make(chan error, 1)
	// Subscriptions are made in the OnConnect handler, as paho recommends,
	// so that they are in place whatever connected the client.
	o.SetOnConnectHandler(func(c mqtt.Client) {
		var err error
		for _, s := range opt.Subscriptions {
			if err = wait(ctx, c.Subscribe(s.Topic, s.QoS, onMsg), d.Timeout, "subscribe "+s.Topic); err != nil {
				break
			}
		}
		select {
		case subscribed <- err:
		default:
		}
	})
	o.SetConnectionLostHandler(func(_ mqtt.Client, err error) {
		if opt.OnLost != nil {
			opt.OnLost(err)
		}
	})
	c := mqtt.NewClient(o)
	if err := wait(ctx, c.Connect(), d.Timeout*time.Duration(len(addrs)), "connect to "+strings.Join(addrs, " or ")); err != nil {
		return nil, err
	}
	// A refused or unconfirmed subscription (SUBACK 0x80: an ACL that does
	// not let the device read its own commands) fails the connection: an
	// agent that cannot hear the fleet is not connected. The DISCONNECT is
	// given time to go out, so the broker does not publish the will of a
	// session that never started.
	select {
	case err := <-subscribed:
		if err != nil {
			c.Disconnect(250)
			return nil, err
		}
	case <-time.After(d.Timeout * time.Duration(1+len(opt.Subscriptions))):
		c.Disconnect(250)
		return nil, fmt.Errorf("mqtt: subscriptions not confirmed within %v", d.Timeout)
	case <-ctx.Done():
		c.Disconnect(250)
		return nil, ctx.Err()
	}
	return &pahoConn{c: c, timeout: d.Timeout}, nil
}

type pahoConn struct {
	c       mqtt.Client
	timeout time.Duration
}

func (p *pahoConn) Publish(ctx context.Context, m Message) error {
	if !p.c.IsConnectionOpen() {
		return ErrNotConnected
	}
	return wait(ctx, p.c.Publish(m.Topic, m.QoS, m.Retained, m.Payload), p.timeout, "publish "+m.Topic)
}

func (p *pahoConn) Subscribe(ctx context.Context, s Subscription) error {
	return wait(ctx, p.c.Subscribe(s.Topic, s.QoS, nil), p.timeout, "subscribe "+s.Topic)
}

func (p *pahoConn) Unsubscribe(ctx context.Context, topic string) error {
	return wait(ctx, p.c.Unsubscribe(topic), p.timeout, "unsubscribe "+topic)
}

func (p *pahoConn) Close() { p.c.Disconnect(250) }

// wait waits for a paho token, at most timeout and never past ctx.
func wait(ctx context.Context, tok mqtt.Token, timeout time.Duration, what string) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			return fmt.Errorf("mqtt: %s: %w", what, err)
		}
		if st, ok := tok.(*mqtt.SubscribeToken); ok {
			for topic, code := range st.Result() {
				if code >= 0x80 {
					return fmt.Errorf("mqtt: %s: broker refused subscription to %s (code %#x; check the ACL)", what, topic, code)
				}
			}
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("mqtt: %s: no answer within %v", what, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}
