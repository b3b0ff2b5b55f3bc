package agent

import (
	"context"
	"errors"
)

// Message is an MQTT message, in or out.
type Message struct {
	Topic    string
	Payload  []byte
	QoS      byte
	Retained bool
}

// Subscription is a topic filter and its QoS.
type Subscription struct {
	Topic string
	QoS   byte
}

// DialOptions configure one MQTT connection (one agent session).
type DialOptions struct {
	// ClientID is the stable client ID (the device ID); the session is
	// persistent (clean session off), so the broker keeps subscriptions
	// and queued QoS 1 messages between connections.
	ClientID string
	// Will is published by the broker if the connection dies.
	Will Message
	// Subscriptions are (re)made as soon as the connection is up.
	Subscriptions []Subscription
	// OnMessage receives every incoming message. It is called from the
	// client's goroutine and must not block.
	OnMessage func(Message)
	// OnLost is called once when an established connection drops.
	OnLost func(error)
}

// Dialer opens MQTT connections. The agent builds one connection per
// session, because the Last Will carries the session number.
type Dialer interface {
	Dial(ctx context.Context, opt DialOptions) (Conn, error)
}

// Conn is one established MQTT connection. Every method returns when the
// broker acknowledged (QoS 1), when ctx is done, or after the dialer's
// timeout, whichever comes first.
type Conn interface {
	Publish(ctx context.Context, m Message) error
	Subscribe(ctx context.Context, s Subscription) error
	Unsubscribe(ctx context.Context, topic string) error
	// Close disconnects cleanly; the broker does not publish the will.
	Close()
}

// ErrNotConnected is returned by a Conn whose connection is gone.
var ErrNotConnected = errors.New("agent: not connected to the broker")
