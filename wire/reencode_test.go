package wire

import (
	"errors"
	"strings"
	"testing"
)

// reencodeCases are payloads within their byte cap whose re-encoding is
// not: JSON lets a sender write '<', '>' and '&' as one byte each and a
// byte that is not UTF-8 as one, and this package's encoder writes them
// as six (\u003c) and three (U+FFFD, which the decoder put in its place).
// Found reading the decoders during the fuzz campaign: FuzzDecodePayloads
// claims that what decodes re-encodes to something accepted.
func reencodeCases() []struct{ name, payload string } {
	event := func(reason string) string {
		return `{"v":1,"id":"r/1/FAILED","device":"d","rollout":"r","seq":1,"state":"FAILED","code":"self-test","reason":"` + reason + `","time":1}`
	}
	counts := make([]string, 0, 200)
	for i := range 200 {
		counts = append(counts, `"`+strings.Repeat("<", 16)+string(rune('A'+i%26))+string(rune('a'+i/26))+`":1`)
	}
	return []struct{ name, payload string }{
		{"event: 800 '<' in the reason", event(strings.Repeat("<", 800))},
		{"event: 1,500 bytes not UTF-8 in the reason", event(strings.Repeat("\xff", 1500))},
		{"event: 700 U+2028 in the reason", event(strings.Repeat("\u2028", 700))},
		{"state: labels of '&'", `{"v":1,"device":"d","session":1,"online":true,"labels":{"site":"` + strings.Repeat("&", 3000) + `"}}`},
		{"telemetry: class labels of '<'", `{"v":1,"device":"d","session":1,"seq":1,"from":0,"to":1,"predictions":200,"counts":{` + strings.Join(counts, ",") + `}}`},
	}
}

// TestDecodedPayloadsReencodeWithinTheirCap: a payload is accepted only if
// what it re-encodes to (what Marshal writes) fits the cap too, so a
// receiver can store or pass on what it accepted. Each case was accepted
// and re-encoded to 4.3–4.9 KB against a 4 KiB cap, or 18–21 KB against
// 16 KiB; each is now refused, saying so.
func TestDecodedPayloadsReencodeWithinTheirCap(t *testing.T) {
	for _, c := range reencodeCases() {
		t.Run(c.name, func(t *testing.T) {
			var err error
			switch {
			case strings.Contains(c.payload, `"state":"FAILED"`):
				_, err = DecodeEvent([]byte(c.payload))
			case strings.Contains(c.payload, `"online"`):
				_, err = DecodeState([]byte(c.payload))
			default:
				_, err = DecodeTelemetry([]byte(c.payload))
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "once re-encoded") {
				t.Fatalf("%d bytes: got %v, want ErrTooLarge once re-encoded", len(c.payload), err)
			}
			checkRoundTrip(t, []byte(c.payload))
		})
	}
	// A payload that fits once re-encoded is still accepted, and one
	// that shrinks (escapes written out, white space) too.
	ok := `{"v":1,"id":"r/1/FAILED","device":"d","rollout":"r","seq":1,"state":"FAILED","reason":"` + strings.Repeat("<", 600) + `","time":1}`
	if _, err := DecodeEvent([]byte(ok)); err != nil {
		t.Fatalf("600 '<': %v", err)
	}
	shrinks := `{"v":1, "id":"r/1/FAILED", "device":"d", "rollout":"r", "seq":1, "state":"FAILED", "reason":"` + strings.Repeat(`\u0041`, 650) + `", "time":1}`
	if _, err := DecodeEvent([]byte(shrinks)); err != nil {
		t.Fatalf("escaped letters: %v", err)
	}
}

// checkRoundTrip is FuzzDecodePayloads' property on one input: whatever
// decodes as a payload re-encodes to bytes that decode again.
func checkRoundTrip(t *testing.T, data []byte) {
	t.Helper()
	roundTrip(t, "response", data, DecodeResponse)
	roundTrip(t, "state", data, DecodeState)
	roundTrip(t, "event", data, DecodeEvent)
	roundTrip(t, "ack", data, DecodeAck)
	roundTrip(t, "telemetry", data, DecodeTelemetry)
}

// roundTrip checks checkRoundTrip's property for one kind of payload.
func roundTrip[P interface{ Marshal() ([]byte, error) }](t *testing.T, kind string, data []byte, decode func([]byte) (P, error)) {
	t.Helper()
	p, err := decode(data)
	if err != nil {
		return
	}
	b, _ := p.Marshal()
	if _, err := decode(b); err != nil {
		t.Fatalf("%s re-encode: %v", kind, err)
	}
}
