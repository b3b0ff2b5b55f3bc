package wire

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"time"
)

// MQTTVersion is the MQTT protocol level trit speaks: 4, MQTT 3.1.1. Clients
// ask for it alone: left to choose, paho retries a refused connection as
// MQTT 3.1 ("MQIsdp"), which nats-server does not speak and a 3.1.1 broker
// has no reason to accept either — one more connection per failure, at the
// moment a broker is already refusing (docs/SCALING.md).
const MQTTVersion = 4

// MaxPacket is the largest MQTT control packet, in bytes, that trit-fleet
// reads from its broker and that the embedded broker accepts: everything in
// the protocol is far smaller (bundles are at most 30 KiB), and it is the
// max_packet_size of the production Mosquitto configuration. An agent's
// limit grows with its install.max_bundle_bytes (see agent.MaxPacket).
const MaxPacket = 64 * 1024

// LimitPackets wraps conn, a connection to an MQTT broker, so that reading
// a control packet larger than max bytes (fixed header included) fails
// with an error wrapping ErrTooLarge as soon as the packet's fixed header
// is complete, before any of its body is read. The MQTT client on top
// never learns the length of such a packet and so never allocates for it:
// MQTT 3.1.1 clients have no maximum packet size of their own, and a broker
// that does not enforce one (or a client allowed to publish to a device's
// topics) could otherwise make a gateway allocate up to 256 MB per message.
// A malformed remaining length fails with ErrMalformed. After an error the
// connection is closed and every later Read returns the same error, as
// does a Write that fails once it is closed: the client's writer (an
// acknowledgement, a ping) meets the closed connection as its reader
// meets the limit, and whichever the client hears first is what it says
// the connection was lost to — the limit, not "use of closed network
// connection" (TestLimitPacketsWriteSaysWhy).
//
// Bytes are passed through unchanged; writes are not inspected.
func LimitPackets(conn net.Conn, max int) net.Conn {
	return &limitConn{Conn: conn, max: max}
}

type limitConn struct {
	net.Conn
	max    int
	err    error                 // sticky read error
	closed atomic.Pointer[error] // err, once it closed the connection: for Write, on another goroutine

	// The fixed header being read, or the body being passed through.
	inBody bool
	inLen  bool // type byte seen, reading the remaining length
	lenVal int  // remaining length so far
	lenN   int  // remaining-length bytes so far
	body   int  // body bytes still to pass through
}

func (c *limitConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	ok, serr := c.scan(p[:n])
	if serr != nil {
		c.err = serr
		c.closed.Store(&serr) // before Close: a Write failing on it sees why
		c.Conn.Close()
		if ok > 0 {
			return ok, nil // what came before; the error on the next Read
		}
		return 0, serr
	}
	return n, err
}

func (c *limitConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		if why := c.closed.Load(); why != nil {
			return n, *why
		}
	}
	return n, err
}

// scan follows the packet framing over b and returns how many bytes of b
// may be passed on, with an error if a packet is refused.
func (c *limitConn) scan(b []byte) (int, error) {
	i := 0
	for i < len(b) {
		switch {
		case c.inBody:
			k := min(c.body, len(b)-i)
			c.body -= k
			i += k
			if c.body == 0 {
				c.inBody = false
			}
		case !c.inLen: // packet type and flags
			c.inLen, c.lenVal, c.lenN = true, 0, 0
			i++
		default: // remaining length: 1 to 4 bytes, 7 bits each, low first
			v := b[i]
			c.lenVal |= int(v&0x7f) << (7 * c.lenN)
			c.lenN++
			if v&0x80 != 0 {
				if c.lenN == 4 {
					return i, fmt.Errorf("%w: MQTT packet from the broker: remaining length longer than 4 bytes", ErrMalformed)
				}
				i++
				continue
			}
			if size := 1 + c.lenN + c.lenVal; size > c.max {
				return i, fmt.Errorf("%w: the broker sent an MQTT packet of %d bytes, more than the %d-byte limit; closing the connection", ErrTooLarge, size, c.max)
			}
			c.inLen = false
			c.body = c.lenVal
			c.inBody = c.body > 0
			i++
		}
	}
	return len(b), nil
}

// CheckBrokerHostPort checks that broker, an MQTT broker URL, names a host
// and a port. DialBroker dials the host as written: without a port every
// connection fails ("missing port in address"), for ever, and without a
// host it dials this machine. The agent's and trit-fleet's configurations
// check every broker address with it (the schemes each accepts are theirs
// to check), so both word the rule alike.
func CheckBrokerHostPort(broker string) error {
	u, err := url.Parse(broker)
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("%q: want scheme://host:port, e.g. tls://broker.example:8883 or tcp://127.0.0.1:1883", broker)
	}
	return nil
}

// DialBroker opens the network connection to the MQTT broker at u: plain
// TCP for the schemes tcp and mqtt, TLS with configuration t for ssl, tls
// and mqtts, within timeout (0: none). Incoming packets are limited to
// maxPacket bytes (LimitPackets). Its signature fits paho's
// OpenConnectionFunc, which the agent and the fleet set with it.
func DialBroker(u *url.URL, t *tls.Config, timeout time.Duration, maxPacket int) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	var conn net.Conn
	var err error
	switch u.Scheme {
	case "tcp", "mqtt":
		conn, err = d.Dial("tcp", u.Host)
	case "ssl", "tls", "mqtts":
		conn, err = tls.DialWithDialer(d, "tcp", u.Host, t)
	default:
		return nil, fmt.Errorf("broker %s: unsupported scheme %q (want tcp, mqtt, ssl, tls or mqtts)", u.Redacted(), u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return LimitPackets(conn, maxPacket), nil
}
