package natstest

import (
	"fmt"
	"strings"
)

// Auth is the authorization block of trit's production cluster
// (fleet/nats/node.conf) for fleet: the user trit-fleet with
// fleetPassword and the permissions of a replica taking device messages
// from NATS (mqtt.nats; FleetPermissions), and one user per device (ID →
// password), equivalent to fleet/mosquitto/acl: a device writes only its
// own state, events, telemetry and responses and reads only its own
// desired command, requests and acks, and the bundles. MQTT topics are
// NATS subjects there ("/" becomes "."); "$MQTT.sub.>" is where
// nats-server delivers a QoS 1 subscription's messages to the client's
// own connection. It also has natstest's own user, which may only
// publish and subscribe under natstest/warmup/ (warmMQTT).
func Auth(fleet, fleetPassword string, devices map[string]string) string {
	q := func(ss ...string) string {
		var out []string
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%q", s))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	pub, sub := FleetPermissions(fleet)
	var b strings.Builder
	fmt.Fprintf(&b, "authorization {\n  users = [\n    {user: \"trit-fleet\", password: %q, permissions: {publish: %s, subscribe: %s}}\n",
		fleetPassword, q(pub...), q(sub...))
	for id, pw := range devices {
		d := "trit.v1." + fleet + ".devices." + id + "."
		fmt.Fprintf(&b, "    {user: %q, password: %q, permissions: {publish: %s, subscribe: %s}}\n", id, pw,
			q(d+"state", d+"events", d+"telemetry", d+"responses"),
			q(d+"desired", d+"requests", d+"acks", "trit.v1."+fleet+".bundles.*", "$MQTT.sub.>"))
	}
	// natstest's own login, which warms MQTT up (warmMQTT) on a subject
	// no fleet or device reads.
	fmt.Fprintf(&b, "    {user: %q, password: %q, permissions: {publish: %s, subscribe: %s}}\n",
		warmUser, warmPassword, q(warmSubjects), q(warmSubjects))
	b.WriteString("  ]\n}\n")
	fmt.Fprintf(&b, "%s %s %s\n", loginMark, warmUser, warmPassword)
	return b.String()
}

// FleetPermissions are the subjects trit-fleet with mqtt.nats may publish
// and subscribe to: the fleet-to-device topics (over MQTT), its three
// shared consumers on $MQTT_msgs (create, pull, acknowledge), replies on
// its own inbox prefix, the devices' responses and (for their retained
// messages) states. The names are fleet/server's (NATSConsumerName,
// NATSInbox; its tests check they agree).
func FleetPermissions(fleet string) (pub, sub []string) {
	p := "trit.v1." + fleet + "."
	pub = append(pub, p+"bundles.*", p+"devices.*.desired", p+"devices.*.acks", p+"devices.*.requests")
	for _, kind := range []string{"state", "events", "telemetry"} {
		name := "trit-fleet_" + fleet + "_" + kind
		pub = append(pub, "$JS.API.CONSUMER.CREATE.$MQTT_msgs."+name+".>",
			"$JS.API.CONSUMER.MSG.NEXT.$MQTT_msgs."+name, "$JS.ACK.$MQTT_msgs."+name+".>")
	}
	return pub, append(sub, "_INBOX_trit_fleet.>", p+"devices.*.responses", p+"devices.*.state")
}
