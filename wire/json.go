package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ProtocolVersion is the "v" field of every JSON payload.
const ProtocolVersion = 1

// Size caps. A payload is refused if its bytes are above its cap, checked
// before it is parsed, or if what it re-encodes to (what Marshal writes)
// is, checked after: a receiver can store or pass on whatever it accepted
// (decodeStrict).
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
// no unknown fields, nothing after the object, "v" == ProtocolVersion
// (read through version), and at most max bytes once re-encoded.
//
// The second bound is what makes the first mean something to whoever
// re-encodes what it accepted: JSON lets a sender write '<', '>' and '&'
// as one byte each, which encoding/json writes as six (\u003c); a byte
// that is not UTF-8 as one, which the decoder turns into U+FFFD, three
// bytes; U+2028 and U+2029 as three, written as six; and leave out a
// field, written back as "field":0. An event of 900 bytes could
// re-encode to 5 KB, above its 4 KiB cap. The re-encoding is bounded
// work (the input is at most max bytes) and is the encoding every
// Marshal method writes.
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
	again, err := json.Marshal(v)
	if err != nil {
		return decodeErr(ErrMalformed, what, "", "does not re-encode: %v", err)
	}
	if len(again) > max {
		return decodeErr(ErrTooLarge, what, "", "%d bytes, %d once re-encoded (<, > and & become \\u003c…, bytes not UTF-8 U+FFFD), cap %d", len(data), len(again), max)
	}
	return nil
}
