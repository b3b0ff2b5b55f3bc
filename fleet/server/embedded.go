package server

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"

	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/wire"
)

// EmbeddedBroker is an in-process MQTT broker (mochi-mqtt) for demos,
// single-host trials and small sites, with the protections of the
// production Mosquitto configuration (fleet/mosquitto/) where mochi allows:
//
//   - authentication: a device logs in with its device ID as user name and
//     the secret made by `trit-fleet credentials add` (only its SHA-256 is
//     stored); the fleet's own connection has a random secret made at
//     start-up that never leaves the process. Anonymous clients are refused.
//   - the client ID must be the user name, so no client can take over
//     another's session (Mosquitto: use_username_as_clientid).
//   - the topic ACL of fleet/mosquitto/acl (brokerACL), also for Last Wills.
//   - packets of at most wire.MaxPacket bytes (Mosquitto: max_packet_size).
//   - retained messages never expire (mochi's default drops them after
//     24 h, which lost the bundles and commands of devices offline for a
//     day), and at most 1000 queued messages per offline device.
//   - per-device limits on message rate and bytes (brokerlimit.go): a
//     device's QoS 0 messages beyond its budget are dropped and counted,
//     its QoS 1 messages wait; one device cannot crowd out the others.
//     (Mosquitto 2.0 has no equivalent: docs/FLEET.md.)
//   - a refused QoS 1 publish closes the client's connection, whatever
//     the topic (brokerauth.go).
//   - plain TCP on loopback only; any other address needs a TLS server
//     certificate (EmbeddedOptions.CertFile), so that secrets never cross
//     a network in the clear.
//
// It keeps nothing on disk: after a restart of trit-fleet devices reconnect
// and the fleet republishes what rollouts need. Fleets beyond one site use
// Mosquitto.
type EmbeddedBroker struct {
	srv         *mochi.Server
	limits      *brokerLimits
	url         string // for devices
	local       string // for the fleet's own connection
	fleetID     string
	fleetSecret string
	listeners   *listenerSet
}

// EmbeddedOptions configure StartEmbedded.
type EmbeddedOptions struct {
	// Listen is host:port (port 0 picks a free one). A host that is not a
	// loopback address requires CertFile and KeyFile.
	Listen string
	// FleetID is the fleet service's identity: its client ID and user
	// name, with read and write access to everything under trit/v1/.
	// Default "trit-fleet".
	FleetID string
	// Fleet is the fleet's name, the topic level devices may use
	// (trit/v1/<Fleet>/…); "" admits any, as the Mosquitto ACL does.
	Fleet string
	// Credentials is the device credentials file (see credentials.go);
	// read again whenever it changes. A missing file means no device can
	// connect yet.
	Credentials string
	// CertFile and KeyFile are a TLS server certificate and key: the
	// broker then listens with TLS on Listen, and for the fleet's own
	// connection with plain TCP on a private loopback port.
	CertFile, KeyFile string
	// Limit is every device's budget; nil means defaultDeviceLimit.
	Limit *Limit
	// listeners, if not nil, is where the broker's listeners are counted
	// (Serve's set, which also has the API's); nil: the broker's own.
	listeners *listenerSet
	// OnCredentials, if not nil, is told each change the broker takes up
	// when it reads the credentials file again (added, removed, replaced
	// device IDs, and the file's owner): the fleet records them in its
	// audit trail (credentials_audit.go).
	OnCredentials func(c CredentialsChange)
}

// Embedded broker limits.
const (
	embeddedMaxQueued = 1000 // queued QoS 1 messages per client (Mosquitto: max_queued_messages)
)

// connectTimeout bounds how long a new connection may take to finish its
// TLS handshake and send its CONNECT: mochi sets no deadline until then,
// so a client that connects and says nothing would hold its goroutine
// forever. After the CONNECT the client's keepalive applies. A variable for
// tests.
var connectTimeout = 10 * time.Second

// listen returns a mochi listener on addr, with TLS if conf is not nil,
// over a guardedListener (listener.go) registered in set as name: it rides
// out temporary accept errors and gives each connection connectTimeout.
func listen(set *listenerSet, name, addr string, conf *tls.Config, log *slog.Logger) (*listeners.Net, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	var l net.Listener = guard(ln, set.add(name), log, connectTimeout, 0)
	if conf != nil {
		l = tls.NewListener(l, conf)
	}
	return listeners.NewNet(name, l), nil
}

// StartEmbedded starts an embedded broker.
func StartEmbedded(o *EmbeddedOptions, log *slog.Logger) (*EmbeddedBroker, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("component", "embedded-broker")
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if !isLoopback(host) && o.CertFile == "" {
		return nil, fmt.Errorf("embedded broker: %s is not a loopback address and no TLS certificate is set: devices would send their secrets in the clear", o.Listen)
	}
	fleetID := cmp.Or(o.FleetID, "trit-fleet")
	if err := wire.CheckID(fleetID); err != nil {
		return nil, fmt.Errorf("embedded broker: fleet identity: %v", err)
	}
	limit := defaultDeviceLimit
	if o.Limit != nil {
		limit = *o.Limit
	}
	if err := limit.check(); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	creds, err := openCredentials(o.Credentials, log.Warn)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	creds.onChange = o.OnCredentials
	if creds.count() == 0 {
		log.Warn("embedded broker: no device credentials yet; add them with `trit-fleet credentials add <device-id>`", "file", o.Credentials)
	}
	secret, _, err := newSecret()
	if err != nil {
		return nil, err
	}
	var tlsConf *tls.Config
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("embedded broker: TLS certificate %s / %s: %w", o.CertFile, o.KeyFile, err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}

	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = wire.MaxPacket
	caps.MaximumMessageExpiryInterval = 0 // no forced expiry of retained or queued messages
	caps.MaximumInflight = embeddedMaxQueued
	caps.TopicAliasMaximum = 0  // MQTT 5 topic aliases are not needed
	caps.SharedSubAvailable = 0 // nor shared ones (announced only; brokerACL refuses $share/ filters)
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: newBrokerLog(log), Capabilities: caps})
	auth := &brokerAuth{fleetID: fleetID, fleet: o.Fleet, creds: creds, log: log}
	auth.fleetSum = sha256Sum(secret)
	if err := srv.AddHook(auth, nil); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	limits := newBrokerLimits(fleetID, limit, log)
	if err := srv.AddHook(limits, nil); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	set := o.listeners
	if set == nil {
		set = &listenerSet{}
	}
	dev, err := listen(set, "mqtt-devices", o.Listen, tlsConf, log)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("embedded broker: %w (another broker, such as a system Mosquitto, or another trit-fleet? set mqtt.embedded_listen to a free port)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if err := srv.AddListener(dev); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	b := &EmbeddedBroker{srv: srv, limits: limits, fleetID: fleetID, fleetSecret: secret, listeners: set}
	if tlsConf != nil {
		b.url = "ssl://" + dev.Address()
		local, err := listen(set, "mqtt-fleet", "127.0.0.1:0", nil, log)
		if err == nil {
			err = srv.AddListener(local)
		}
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("embedded broker: %w", err)
		}
		b.local = "tcp://" + local.Address()
	} else {
		b.url = "tcp://" + dev.Address()
		b.local = b.url
	}
	// The listeners are bound: Serve starts accepting in the background.
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	return b, nil
}

// URL returns the address devices connect to: tcp://host:port, or
// ssl://host:port with a TLS certificate.
func (b *EmbeddedBroker) URL() string { return b.url }

// FleetURL returns the address of the fleet's own connection (loopback).
func (b *EmbeddedBroker) FleetURL() string { return b.local }

// FleetCredentials returns the user name and the secret of the fleet's own
// connection. The secret is made at start-up and never stored.
func (b *EmbeddedBroker) FleetCredentials() (user, secret string) { return b.fleetID, b.fleetSecret }

// TakeLimited returns, per device, what its limits did to its messages
// since the last call (dropped, delayed), and forgets it. The service
// adds the counts to the devices' records (Service.CountLimited).
func (b *EmbeddedBroker) TakeLimited() map[string]api.Limited { return b.limits.TakeLimited() }

// Close stops the broker.
func (b *EmbeddedBroker) Close() error { return b.srv.Close() }
