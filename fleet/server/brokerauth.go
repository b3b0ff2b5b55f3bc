package server

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"strings"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/trit-iot/trit/fleet/fault"
)

// brokerAuth is the embedded broker's authentication and authorization
// (a mochi hook): who may connect, under which client ID, and which topics
// each identity may read and write.
type brokerAuth struct {
	mochi.HookBase
	fleetID  string
	fleetSum [sha256.Size]byte // SHA-256 of the fleet connection's secret
	creds    *credentialStore
	log      *slog.Logger
	// fleet is the topic level devices may use (trit/v1/<fleet>/…): the
	// embedded broker serves one fleet; "" admits any, as the Mosquitto
	// ACL's + does.
	fleet string
}

func sha256Sum(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }

// ID implements mochi.Hook.
func (h *brokerAuth) ID() string { return "trit-auth" }

// Provides implements mochi.Hook.
func (h *brokerAuth) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck || b == mochi.OnPacketRead
}

// OnConnectAuthenticate admits a client whose user name is the fleet's
// identity or a device with credentials, whose secret (password) matches,
// whose client ID is its user name, and whose Last Will, if any, is on a
// topic it may write. The reason of a refusal is logged, never the secret.
func (h *brokerAuth) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	user := string(cl.Properties.Username)
	refuse := func(reason string) bool {
		h.log.Warn("embedded broker: connection refused", "remote", cl.Net.Remote, "user", fault.Clip(user, 100), "client_id", fault.Clip(cl.ID, 100), "reason", fault.Clip(reason, 100))
		return false
	}
	switch {
	case user == "":
		return refuse("no user name (anonymous clients are not allowed)")
	case user == h.fleetID:
		sum := sha256.Sum256(pk.Connect.Password)
		if subtle.ConstantTimeCompare(sum[:], h.fleetSum[:]) != 1 {
			return refuse("wrong secret for the fleet's identity")
		}
	case !h.creds.check(user, pk.Connect.Password):
		return refuse("unknown device or wrong secret (trit-fleet credentials add)")
	}
	if cl.ID != user {
		return refuse("the client ID must be the user name (the device ID)")
	}
	if pk.Connect.WillFlag && !brokerACL(user, h.fleetID, h.fleet, pk.Connect.WillTopic, true) {
		if f, ok := h.otherFleet(user, pk.Connect.WillTopic); ok {
			return refuse(fmt.Sprintf("its topics are fleet %q's, this broker serves %q: check fleet in agent.toml", f, h.fleet))
		}
		return refuse("Last Will on a topic the client may not write: " + pk.Connect.WillTopic)
	}
	return true
}

// otherFleet reports the fleet level of topic when a device may write
// topic in some fleet but not in this broker's: its agent.toml names
// another fleet.
func (h *brokerAuth) otherFleet(user, topic string) (string, bool) {
	if h.fleet == "" || !brokerACL(user, h.fleetID, "", topic, true) {
		return "", false
	}
	return strings.SplitN(topic, "/", 4)[2], true // trit/v1/<fleet>/…
}

// OnPacketRead closes the connection of a client that publishes at QoS 1
// or 2 where it may not write, whatever the topic. mochi itself closes it
// for a topic its ACL check refuses, but drops a publish to a $SYS topic
// without a PUBACK and without a word, which left the client waiting for
// an acknowledgement that never came. (A refused QoS 0 publish is dropped
// silently, as Mosquitto does: nothing waits for it.) Returning
// ErrRejectPacket from this hook ends the client's read loop.
func (h *brokerAuth) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type != packets.Publish || pk.FixedHeader.Qos == 0 || cl.Net.Inline {
		return pk, nil
	}
	user := string(cl.Properties.Username)
	if !brokerACL(user, h.fleetID, h.fleet, pk.TopicName, true) {
		h.log.Warn("embedded broker: publish refused; connection closed", "remote", cl.Net.Remote, "user", fault.Clip(user, 100),
			"topic", fault.Clip(pk.TopicName, 100), "qos", pk.FixedHeader.Qos)
		return pk, packets.ErrRejectPacket
	}
	return pk, nil
}

// OnACLCheck implements mochi.Hook: topic is a subscription filter
// (subscribe) or a topic name (publish, delivery).
func (h *brokerAuth) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	return brokerACL(string(cl.Properties.Username), h.fleetID, h.fleet, topic, write)
}

// brokerACL is fleet/mosquitto/acl: the fleet's identity reads and writes
// everything under trit/v1/; a device reads its own commands and
// requests and acknowledgements and the bundles, and writes its own state,
// events, telemetry and responses. A subscription filter is allowed only if every topic it
// matches is. A device's topics are those of fleet (its topic level), or
// of any fleet when fleet is "": a device whose agent.toml names another
// fleet is refused, not left talking to no one.
func brokerACL(user, fleetID, fleet, topic string, write bool) bool {
	if user == "" || strings.ContainsAny(user, "/+#") {
		return false
	}
	if user == fleetID {
		return within(topic, "trit/v1/#")
	}
	f := "trit/v1/" + cmp.Or(fleet, "+")
	patterns := []string{
		f + "/devices/" + user + "/desired",
		f + "/devices/" + user + "/requests",
		f + "/devices/" + user + "/acks",
		f + "/bundles/+",
	}
	if write {
		patterns = []string{
			f + "/devices/" + user + "/state",
			f + "/devices/" + user + "/events",
			f + "/devices/" + user + "/telemetry",
			f + "/devices/" + user + "/responses",
		}
	}
	for _, p := range patterns {
		if within(topic, p) {
			return true
		}
	}
	return false
}

// within reports whether every topic that filter matches also matches
// pattern (both MQTT topic filters; a topic name is a filter without
// wildcards). A '+' in the pattern admits any one level, a final '#' any
// rest; a wildcard in filter is admitted only by a wildcard in pattern.
func within(filter, pattern string) bool {
	if filter == "" || strings.HasPrefix(filter, "$") {
		return false // $SYS, $share/...: never
	}
	f := strings.Split(filter, "/")
	p := strings.Split(pattern, "/")
	for i, pl := range p {
		if pl == "#" {
			return true
		}
		if i >= len(f) {
			return false
		}
		fl := f[i]
		switch {
		case fl == "#":
			return false // matches deeper topics than pattern
		case pl == "+":
		case fl == "+" || fl != pl:
			return false
		}
	}
	return len(f) == len(p)
}
