package store

import (
	"encoding/json"
	"errors"
	"testing"
)

func FuzzDecodeConsoleSession(f *testing.F) {
	key := ConsoleSessionKey("id")
	f.Add(key, []byte(`{"operator":"alice","role":"operator","csrf":"c","created":"2026-01-02T03:04:05Z","seen":"2026-01-02T03:05:05Z"}`))
	f.Add(key, []byte(`{"operator":"token-file","role":"admin","csrf":"c","created":"2026-01-02T03:04:05Z","seen":"2026-01-02T03:04:05Z","flash":"Rollout r1 paused.","flash_error":true}`))
	f.Add(key, []byte(`{"operator":"","csrf":"c"}`))
	f.Add(key, []byte(`null`))
	f.Fuzz(func(t *testing.T, key string, v []byte) {
		s, err := decodeConsoleSession(key, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if s.check() != nil {
			t.Fatalf("accepted an invalid record: %+v", s)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodeConsoleSession(key, again)
		if err != nil || s2.Operator != s.Operator || s2.Role != s.Role || s2.CSRF != s.CSRF || s2.Flash != s.Flash ||
			s2.FlashError != s.FlashError || !s2.Created.Equal(s.Created) || !s2.Seen.Equal(s.Seen) {
			t.Fatalf("round trip: %+v -> %+v, %v", s, s2, err)
		}
	})
}
