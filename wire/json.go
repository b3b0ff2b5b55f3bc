package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ProtocolVersion is the "v" field of every JSON payload.
const ProtocolVersion = 1

// Size caps, checked before a payload is parsed.
const (
	MaxCommandSize   = 2 << 10  // a signed deployment command
	MaxStateSize     = 16 << 10 // a device state
	MaxEventSize     = 4 << 10  // a job event
	MaxTelemetrySize = 16 << 10 // a telemetry report
	MaxAckSize       = 16 << 10 // an ack from the fleet
	MaxRequestSize   = 2 << 10  // a signed request from the fleet
	MaxResponseSize  = 60 << 10 // a device's response: one MQTT packet (MaxPacket) with room for the topic
)

// decodeStrict decodes one JSON object from data into v: at most max bytes,
// no unknown fields, nothing after the object, and "v" == ProtocolVersion
// (read through version).
func decodeStrict(data []byte, max int, what string, v any, version func() int) error {
	if len(data) > max {
		return decodeErr(ErrTooLarge, what, "", "%d bytes, cap %d", len(data), max)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return decodeErr(ErrMalformed, what, te.Field, "%v", err)
		}
		return decodeErr(ErrMalformed, what, "", "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return decodeErr(ErrMalformed, what, "", "data after the JSON object")
	}
	if got := version(); got != ProtocolVersion {
		return decodeErr(ErrVersion, what, "v", "version %d, this program speaks %d", got, ProtocolVersion)
	}
	return nil
}
