package fleet

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// Conn is the fleet's MQTT connection (eclipse/paho.mqtt.golang, MQTT
// 3.1.1). It reconnects by itself, re-subscribes in the OnConnect handler
// so subscriptions survive reconnects, and bounds every wait by the
// configured timeout. Its message handler only hands messages to the
// service's queue, so it never blocks paho's goroutine.
type Conn struct {
	c       mqtt.Client
	timeout time.Duration
}

// Dial connects to the broker of m and subscribes (QoS 1) to filters, each
// delivering to deliver. It fails if the first connection fails.
func Dial(m *MQTTConfig, broker string, filters []string, deliver func(topic string, payload []byte), log *slog.Logger) (*Conn, error) {
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
		t, err := clientTLS(m.CAFile, m.CertFile, m.KeyFile)
		if err != nil {
			return nil, err
		}
		o.SetTLSConfig(t)
	}
	handler := func(_ mqtt.Client, msg mqtt.Message) { deliver(msg.Topic(), msg.Payload()) }
	timeout := m.Timeout.Duration
	o.SetOnConnectHandler(func(c mqtt.Client) {
		for _, f := range filters {
			tok := c.Subscribe(f, 1, handler)
			if !tok.WaitTimeout(timeout) {
				log.Error("MQTT subscribe timed out; reconnecting", "filter", f)
				go c.Disconnect(0) // auto-reconnect subscribes again
				return
			}
			if err := tok.Error(); err != nil {
				log.Error("MQTT subscribe failed", "filter", f, "err", err)
			}
		}
		log.Info("connected to the MQTT broker", "broker", broker)
	})
	o.SetConnectionLostHandler(func(_ mqtt.Client, err error) {
		log.Warn("MQTT connection lost; reconnecting", "broker", broker, "err", err)
	})
	c := mqtt.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(timeout) {
		return nil, fmt.Errorf("mqtt: connecting to %s timed out after %v", broker, timeout)
	}
	if err := tok.Error(); err != nil {
		return nil, fmt.Errorf("mqtt: connecting to %s: %w", broker, err)
	}
	return &Conn{c: c, timeout: timeout}, nil
}

// Publish publishes and waits for the broker's acknowledgement (QoS 1) at
// most the configured timeout.
func (c *Conn) Publish(topic string, qos byte, retained bool, payload []byte) error {
	tok := c.c.Publish(topic, qos, retained, payload)
	if !tok.WaitTimeout(c.timeout) {
		return fmt.Errorf("mqtt: publish to %s timed out after %v", topic, c.timeout)
	}
	return tok.Error()
}

// Close disconnects, letting in-flight work finish for up to a second.
func (c *Conn) Close() { c.c.Disconnect(1000) }

// clientTLS loads the CA and the client certificate for a TLS connection.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mqtt.ca_file %s: no PEM certificate found", caFile)
		}
		t.RootCAs = pool
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			// The error text of LoadX509KeyPair never contains key bytes.
			return nil, fmt.Errorf("mqtt.cert_file/key_file: %w", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil // without ca_file, the system's roots verify the broker
}
