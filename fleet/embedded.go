package fleet

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// EmbeddedBroker is an in-process MQTT broker (mochi-mqtt) for the
// no-setup demo and single-machine trials. It authenticates nobody and keeps
// nothing on disk, so it refuses to listen anywhere but loopback; production
// fleets use Mosquitto with the configuration in fleet/mosquitto/.
type EmbeddedBroker struct {
	srv  *mochi.Server
	addr string
}

// StartEmbedded starts a broker listening on addr, a loopback host:port
// (port 0 picks a free one).
func StartEmbedded(addr string, log *slog.Logger) (*EmbeddedBroker, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("embedded broker: %s is not a loopback address; the embedded broker has no authentication", addr)
	}
	// Take the port ourselves so that port 0 works and the address is known.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	bound := ln.Addr().String()
	ln.Close()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: log.With("component", "embedded-broker")})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, err
	}
	if err := srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: bound})); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	// Serve starts the listeners asynchronously: wait until one accepts.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", bound, 100*time.Millisecond); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-errc:
			return nil, fmt.Errorf("embedded broker: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			srv.Close()
			return nil, fmt.Errorf("embedded broker: not accepting connections on %s", bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &EmbeddedBroker{srv: srv, addr: bound}, nil
}

// URL returns the broker's address as tcp://host:port.
func (b *EmbeddedBroker) URL() string { return "tcp://" + b.addr }

// Close stops the broker.
func (b *EmbeddedBroker) Close() error { return b.srv.Close() }
