package wire

import (
	"fmt"
	"strings"
)

// Root is the first two levels of every trit topic; the version level
// changes only with an incompatible protocol.
const Root = "trit/v1"

// Kind is the kind of a trit topic.
type Kind string

// Topic kinds; the value is the last topic level.
const (
	KindBundle    Kind = "bundles"   // trit/v1/{fleet}/bundles/{sha256}
	KindDesired   Kind = "desired"   // trit/v1/{fleet}/devices/{id}/desired
	KindState     Kind = "state"     // trit/v1/{fleet}/devices/{id}/state
	KindEvents    Kind = "events"    // trit/v1/{fleet}/devices/{id}/events
	KindTelemetry Kind = "telemetry" // trit/v1/{fleet}/devices/{id}/telemetry
	KindAcks      Kind = "acks"      // trit/v1/{fleet}/devices/{id}/acks
	KindRequests  Kind = "requests"  // trit/v1/{fleet}/devices/{id}/requests
	KindResponses Kind = "responses" // trit/v1/{fleet}/devices/{id}/responses
)

// deviceKinds are the per-device topic kinds.
var deviceKinds = []Kind{KindDesired, KindState, KindEvents, KindTelemetry, KindAcks, KindRequests, KindResponses}

// Topics builds the topic names of one fleet. Build it with NewTopics so the
// fleet name is checked once.
type Topics struct {
	fleet  string
	prefix string // Root/fleet/
}

// NewTopics returns the topic builder for fleet, which must pass CheckID.
func NewTopics(fleet string) (Topics, error) {
	if err := CheckID(fleet); err != nil {
		return Topics{}, fmt.Errorf("wire: fleet name: %v: %w", err, ErrMalformed)
	}
	return Topics{fleet: fleet, prefix: Root + "/" + fleet + "/"}, nil
}

// Fleet returns the fleet name.
func (t Topics) Fleet() string { return t.fleet }

// Bundle is the retained, content-addressed topic of the bundle with this
// SHA-256 (lowercase hex). The caller checks the hash (CheckHash).
func (t Topics) Bundle(hash string) string { return t.prefix + "bundles/" + hash }

// Desired is the device's retained deployment-command topic.
func (t Topics) Desired(device string) string { return t.device(device, KindDesired) }

// State is the device's retained state topic (and its Last Will topic).
func (t Topics) State(device string) string { return t.device(device, KindState) }

// Events is the device's job-event topic.
func (t Topics) Events(device string) string { return t.device(device, KindEvents) }

// Telemetry is the device's telemetry topic.
func (t Topics) Telemetry(device string) string { return t.device(device, KindTelemetry) }

// Acks is the topic on which the fleet acknowledges the device's events.
func (t Topics) Acks(device string) string { return t.device(device, KindAcks) }

// Requests is the topic on which the fleet sends the device signed
// requests (samples).
func (t Topics) Requests(device string) string { return t.device(device, KindRequests) }

// Responses is the topic on which the device answers them.
func (t Topics) Responses(device string) string { return t.device(device, KindResponses) }

func (t Topics) device(id string, k Kind) string {
	return t.prefix + "devices/" + id + "/" + string(k)
}

// AllDevices returns the subscription filter matching topic kind k of every
// device of the fleet, e.g. trit/v1/{fleet}/devices/+/state.
func (t Topics) AllDevices(k Kind) string { return t.prefix + "devices/+/" + string(k) }

// Topic is a parsed trit topic name.
type Topic struct {
	Fleet  string
	Kind   Kind
	Device string // per-device kinds
	Hash   string // KindBundle
}

// ParseTopic parses a topic name built by Topics and validates every level.
func ParseTopic(name string) (Topic, error) {
	fail := func(level, format string, args ...any) (Topic, error) {
		return Topic{}, decodeErr(ErrMalformed, "topic", level, "%q: "+format, append([]any{name}, args...)...)
	}
	rest, ok := strings.CutPrefix(name, Root+"/")
	if !ok {
		return fail("", "does not start with %s/", Root)
	}
	parts := strings.Split(rest, "/")
	if err := CheckID(parts[0]); err != nil {
		return fail("fleet", "%v", err)
	}
	t := Topic{Fleet: parts[0]}
	switch {
	case len(parts) == 3 && parts[1] == string(KindBundle):
		if err := CheckHash(parts[2]); err != nil {
			return fail("hash", "%v", err)
		}
		t.Kind, t.Hash = KindBundle, parts[2]
		return t, nil
	case len(parts) == 4 && parts[1] == "devices":
		if err := CheckID(parts[2]); err != nil {
			return fail("device", "%v", err)
		}
		for _, k := range deviceKinds {
			if parts[3] == string(k) {
				t.Kind, t.Device = k, parts[2]
				return t, nil
			}
		}
		return fail("kind", "unknown device topic %q", parts[3])
	}
	return fail("", "not a trit topic (want bundles/{sha256} or devices/{id}/{kind})")
}
