package wire

import (
	"errors"
	"strings"
	"testing"
)

// TestCountSumsNear2To64: counts that each pass but add up past 2⁶⁴ wrapped
// the running sum of a histogram, of telemetry counts, of a confusion
// matrix and of a plan's transitions, and were accepted as adding up to at
// most their total. Each payload here sums to 2⁶⁴ against a total of
// 2⁶⁴ − 1 and must be refused, naming the field.
func TestCountSumsNear2To64(t *testing.T) {
	const half = "9223372036854775808"  // 2⁶³
	const most = "18446744073709551615" // 2⁶⁴ − 1
	for _, c := range []struct {
		name, field string
		decode      func([]byte) error
		payload     string
	}{
		{"confidence histogram", "confidence", decodeTelemetry,
			`{"v":1,"device":"d","session":1,"seq":1,"predictions":` + most + `,"confidence":{"unknown":0,"histogram":[` + half + `,` + half + `,0,0,0,0,0,0,0,0],"mean":0.5}}`},
		{"telemetry counts", "counts", decodeTelemetry,
			`{"v":1,"device":"d","session":1,"seq":1,"predictions":` + most + `,"counts":{"a":` + half + `,"b":` + half + `}}`},
		{"shadow confusion", "shadow", decodeTelemetry,
			`{"v":1,"device":"d","session":1,"seq":1,"predictions":1,"shadow":{"rollout":"r","seq":1,"bundle":"` + hashA + `","windows":` + most +
				`,"agree":0,"active_classes":["a","b"],"candidate_classes":["a"],"confusion":[[` + half + `],[` + half + `]],"active_low_margin":0,"candidate_low_margin":0,"low_margin":0}}`},
		{"plan transitions", "plan", decodeResponse,
			`{"v":1,"device":"d","id":"q","kind":"plan","plan":{"bundle":"` + hashA + `","windows":` + most + `,"changed":` + most + `,"transitions":{"a":` + half + `,"b":` + half + `}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.decode([]byte(c.payload))
			var de *DecodeError
			if !errors.Is(err, ErrMalformed) || !errors.As(err, &de) || de.Field != c.field {
				t.Fatalf("%v, want ErrMalformed on field %s", err, c.field)
			}
		})
	}
}

// TestShadowConfidenceBoundExact: 255 × windows computed in 64 bits wraps
// above 2⁶⁴/255 windows, and a shadow report whose confidence sum was
// within the bound was refused.
func TestShadowConfidenceBoundExact(t *testing.T) {
	const windows = "72340172838076674" // ⌈2⁶⁴/255⌉: 255 × it wraps to 254
	shadow := func(conf string) string {
		return `{"v":1,"device":"d","session":1,"seq":1,"predictions":1,"shadow":{"rollout":"r","seq":1,"bundle":"` + hashA + `","windows":` + windows +
			`,"agree":0,"active_low_margin":0,"candidate_low_margin":0,"low_margin":0,"active_confidence":` + conf + `}}`
	}
	if err := decodeTelemetry([]byte(shadow("255"))); err != nil {
		t.Fatalf("confidence 255 of 255 × %s windows refused: %v", windows, err)
	}
	if err := decodeTelemetry([]byte(shadow(most64))); err != nil {
		t.Fatalf("confidence 2⁶⁴ − 1, below 255 × %s windows, refused: %v", windows, err)
	}
	// Exactly at the bound and one above, where it does not wrap.
	if !above255Times(256, 1) || above255Times(255, 1) || above255Times(most64u, 1<<60) {
		t.Fatal("above255Times wrong near the bound")
	}
	if err := decodeTelemetry([]byte(strings.Replace(shadow("256"), windows, "1", 1))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("confidence 256 of one window: %v, want ErrMalformed", err)
	}
}

const (
	most64  = "18446744073709551615"
	most64u = uint64(1<<64 - 1)
)

func decodeTelemetry(b []byte) error { _, err := DecodeTelemetry(b); return err }
func decodeResponse(b []byte) error  { _, err := DecodeResponse(b); return err }
