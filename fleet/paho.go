package fleet

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
)

// Conn is the fleet's MQTT connection (eclipse/paho.mqtt.golang, MQTT
// 3.1.1). It reconnects by itself, re-subscribes in the OnConnect handler
// so subscriptions survive reconnects, and bounds every wait by the
// configured timeout. Its message handler only hands messages to the
// service's queue, so it never blocks paho's goroutine.
type Conn struct {
	c       mqtt.Client
	opts    *mqtt.ClientOptions
	broker  string
	timeout time.Duration
	log     *slog.Logger
}

// NewConn prepares a connection to broker with the settings of m; Connect
// connects it. Until then Publish fails.
func NewConn(m *MQTTConfig, broker string, log *slog.Logger) (*Conn, error) {
	o := mqtt.NewClientOptions().AddBroker(broker).SetClientID(m.ClientID).
		SetCleanSession(false).SetAutoReconnect(true).SetConnectRetry(false).
		SetConnectTimeout(m.Timeout.Duration).SetWriteTimeout(m.Timeout.Duration).
		SetKeepAlive(30 * time.Second).SetMaxReconnectInterval(time.Minute).SetOrderMatters(false)
	if m.Username != "" {
		o.SetUsername(m.Username)
	}
	if m.PasswordFile != "" {
		pw, err := os.ReadFile(m.PasswordFile)
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
	}
	o.SetConnectionLostHandler(func(_ mqtt.Client, err error) {
		log.Warn("MQTT connection lost; reconnecting", "broker", broker, "err", err)
	})
	return &Conn{opts: o, broker: broker, timeout: m.Timeout.Duration, log: log}, nil
}

// Connect connects and, on this and every later connection, subscribes
// (QoS 1) to filters, each delivering to deliver, then runs onConnect (if
// not nil) in a goroutine of its own. It fails if the first connection
// fails.
func (c *Conn) Connect(filters []string, deliver func(topic string, payload []byte), onConnect func()) error {
	handler := func(_ mqtt.Client, msg mqtt.Message) { deliver(msg.Topic(), msg.Payload()) }
	c.opts.SetOnConnectHandler(func(cl mqtt.Client) {
		for _, f := range filters {
			tok := cl.Subscribe(f, 1, handler)
			if !tok.WaitTimeout(c.timeout) {
				c.log.Error("MQTT subscribe timed out; reconnecting", "filter", f)
				go cl.Disconnect(0) // auto-reconnect subscribes again
				return
			}
			if err := tok.Error(); err != nil {
				c.log.Error("MQTT subscribe failed", "filter", f, "err", err)
			}
		}
		c.log.Info("connected to the MQTT broker", "broker", c.broker)
		if onConnect != nil {
			go onConnect()
		}
	})
	c.c = mqtt.NewClient(c.opts)
	tok := c.c.Connect()
	if !tok.WaitTimeout(c.timeout) {
		return fmt.Errorf("mqtt: connecting to %s timed out after %v", c.broker, c.timeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("mqtt: connecting to %s: %w", c.broker, err)
	}
	return nil
}

// Publish publishes and waits for the broker's acknowledgement (QoS 1) at
// most the configured timeout.
func (c *Conn) Publish(topic string, qos byte, retained bool, payload []byte) error {
	if c.c == nil {
		return fmt.Errorf("mqtt: not connected to %s yet", c.broker)
	}
	tok := c.c.Publish(topic, qos, retained, payload)
	if !tok.WaitTimeout(c.timeout) {
		return fmt.Errorf("mqtt: publish to %s timed out after %v", topic, c.timeout)
	}
	return tok.Error()
}

// Close disconnects, letting in-flight work finish for up to a second.
func (c *Conn) Close() {
	if c.c != nil {
		c.c.Disconnect(1000)
	}
}
