package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for every decoder of stored values. Each checks that
// arbitrary bytes give a value or a *CorruptError (never a panic), and that
// whatever decodes re-encodes to something that decodes the same.

func FuzzDecodeSlot(f *testing.F) {
	h := hashOfString("A")
	for _, seed := range []string{
		`{"hash":"` + h + `","model_id":"m","release":3,"rollout_id":"r","seq":9,"installed_at":"2025-01-02T03:04:05Z","state":"committed"}`,
		`{"hash":"` + h + `","model_id":"m","release":1,"installed_at":"2025-01-02T03:04:05.123+02:00","state":"pending-health-check","rollback":true}`,
		`{"hash":"` + h + `","model_id":"m","state":"failed","failed_at":"2025-01-02T03:04:05Z"}`,
		`{"hash":1}`, `null`, `[]`, ``, `{"hash":"` + h + `","model_id":"m","state":"committed","installed_at":"not a time"}`,
	} {
		f.Add("active", []byte(seed))
		f.Add("failed", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, key string, v []byte) {
		r, err := decodeSlot(key, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := decodeSlot(key, again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
		}
		if r2.Hash != r.Hash || r2.ModelID != r.ModelID || r2.Release != r.Release || r2.State != r.State ||
			r2.Seq != r.Seq || r2.RolloutID != r.RolloutID || !r2.InstalledAt.Equal(r.InstalledAt) || !r2.FailedAt.Equal(r.FailedAt) {
			t.Fatalf("round trip changed the record: %+v -> %+v", r, r2)
		}
	})
}

func FuzzDecodeOutboxRecord(f *testing.F) {
	for _, m := range []OutboxMsg{
		{Topic: "t", Payload: nil},
		{Topic: "trit/v1/f/devices/d/events", Payload: []byte(`{"state":"QUEUED"}`), QoS: 1, Retained: true},
		{Topic: "ü", Payload: []byte{0, 0xff}, QoS: 2},
	} {
		rec, err := encodeOutboxRecord(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rec)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 3, 0, 1, 'a'})
	f.Add([]byte{1, 0, 0xff, 0xff, 'a'})
	f.Fuzz(func(t *testing.T, rec []byte) {
		m, err := decodeOutboxRecord(rec)
		if err != nil {
			return
		}
		// Decoding accepts only what encoding produces.
		again, err := encodeOutboxRecord(m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		if !bytes.Equal(again, rec) {
			t.Fatalf("round trip changed the record:\n%x\n%x", rec, again)
		}
		if len(rec) > 0 {
			rec[len(rec)-1] ^= 0xff // the message must not alias the record
			if len(m.Payload) > 0 && m.Payload[len(m.Payload)-1] == rec[len(rec)-1] {
				t.Fatal("decoded payload aliases the record")
			}
		}
	})
}

func FuzzDecodeJob(f *testing.F) {
	f.Add(jobKey("r1", 7), []byte(`{"state":"SUCCEEDED","reason":"ok","time":"2025-01-02T03:04:05Z"}`))
	f.Add(jobKey("rollout-with-long-id", 0), []byte(`{"state":"QUEUED","time":"2025-01-02T03:04:05Z"}`))
	f.Add([]byte("short"), []byte(`{}`))
	f.Add(append([]byte("a\x00b"), make([]byte, 9)...), []byte(`{"state":"FAILED"}`))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		j, err := decodeJob(k, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if !bytes.Equal(jobKey(j.RolloutID, j.Seq), k) {
			t.Fatalf("key %q does not round-trip (%q/%d)", k, j.RolloutID, j.Seq)
		}
		again, err := json.Marshal(jobRecord{State: j.State, Reason: j.Reason, Time: j.Time})
		if err != nil {
			t.Fatal(err)
		}
		j2, err := decodeJob(k, again)
		if err != nil || j2.State != j.State || j2.Reason != j.Reason || !j2.Time.Equal(j.Time) {
			t.Fatalf("round trip: %+v -> %+v, %v", j, j2, err)
		}
	})
}

func FuzzDecodeU64(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, v []byte) {
		n, err := decodeU64(bucketDevice, "session", v)
		if v == nil || len(v) == 8 {
			if err != nil {
				t.Fatalf("8-byte value rejected: %v", err)
			}
			if v != nil && !bytes.Equal(u64Bytes(n), v) {
				t.Fatal("round trip changed the value")
			}
			return
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d-byte value: %v, want ErrCorrupt", len(v), err)
		}
	})
}

// fuzzDoc is a document of the kinds the fleet stores (device records,
// rollouts, windows): strings, counters, times, maps, slices, bytes.
type fuzzDoc struct {
	ID       string            `json:"id"`
	Release  uint64            `json:"release,omitempty"`
	Attempts int               `json:"attempts,omitempty"`
	Percent  float64           `json:"percent,omitempty"`
	Online   bool              `json:"online,omitempty"`
	Seen     time.Time         `json:"seen,omitzero"`
	Timeout  time.Duration     `json:"timeout,omitempty"`
	Expires  *time.Time        `json:"expires,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Counts   map[string]uint64 `json:"counts,omitempty"`
	X        []float32         `json:"x,omitempty"`
	Raw      []byte            `json:"raw,omitempty"`
	Next     *fuzzDoc          `json:"next,omitempty"`
}

// FuzzDecodeDoc: a stored document either decodes (to the value
// encoding/json gives), re-encodes (to encoding/json's bytes) and decodes
// to the same value, or fails with an error naming its collection and key
// that is a *CorruptError exactly when the bytes are not JSON (anything
// else is the caller's type mismatch, as DecodeDoc documents); given an
// unknown collection it is ErrInvalid, never a panic.
func FuzzDecodeDoc(f *testing.F) {
	seen := time.Date(2026, 11, 21, 3, 4, 5, 6, time.FixedZone("", 3600))
	good, err := json.Marshal(fuzzDoc{ID: "d1", Release: 3, Attempts: 1, Percent: 12.5, Online: true, Seen: seen, Timeout: time.Minute, Expires: &seen,
		Labels: map[string]string{"site": "north"}, Counts: map[string]uint64{"a": 1}, X: []float32{0.5, -1e-7}, Raw: []byte{0, 0xff},
		Next: &fuzzDoc{ID: "d2"}})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(good), `{"id":"r1",`, `{"id":"r1"}x`, `{"release":"3"}`, `{"release":-1}`, `{"seen":"2026-11-21T03:0$:05Z"}`,
		`{"seen":1}`, `{"timeout":60000000000}`, `{"timeout":"1m0s"}`, `{"x":[1e40]}`, `{"raw":"not base64"}`, `{"id":"\ud800"}`, `{"next":{"next":{"next":null}}}`,
		`null`, `[]`, `"a string"`, ``, ` `, "{\"id\":\"\xff\"}",
	} {
		f.Add(uint8(FleetDevices), "d1", []byte(seed))
	}
	f.Add(uint8(FleetWindows), "w/d1/1750000000000", good)
	f.Add(uint8(FleetAudit), "00000000000000000001", []byte(`{"seq":1`))
	colls := Collections()
	f.Fuzz(func(t *testing.T, c uint8, key string, raw []byte) {
		coll := colls[int(c)%len(colls)]
		named := func(err error) {
			t.Helper()
			msg := err.Error()
			if !strings.Contains(msg, coll.String()) || !strings.Contains(msg, strconv.Quote(key)) {
				t.Fatalf("error %q does not name %s %q", msg, coll, key)
			}
			var ce *CorruptError
			if errors.Is(err, ErrCorrupt) != !json.Valid(raw) {
				t.Fatalf("%q: error %v; ErrCorrupt %v, but JSON valid %v", raw, err, errors.Is(err, ErrCorrupt), json.Valid(raw))
			}
			if errors.As(err, &ce) && (ce.Bucket != coll.String() || ce.Key != key) {
				t.Fatalf("CorruptError names %s %q, want %s %q", ce.Bucket, ce.Key, coll, key)
			}
		}
		var rm json.RawMessage
		for _, unknown := range []Collection{Collection(len(colls) + int(c)), Collection(-1 - int(c))} {
			if err := DecodeDoc(unknown, key, raw, &rm); !errors.Is(err, ErrInvalid) {
				t.Fatalf("DecodeDoc(%d, %q) = %v, want ErrInvalid", int(unknown), raw, err)
			}
		}
		if err := DecodeDoc(coll, key, raw, &rm); err != nil {
			named(err)
		} else if !json.Valid(raw) {
			t.Fatalf("%q is not JSON but decoded", raw)
		}
		var any1, stdAny any
		if err := DecodeDoc(coll, key, raw, &any1); err != nil {
			named(err)
		} else if json.Unmarshal(raw, &stdAny); !reflect.DeepEqual(any1, stdAny) {
			t.Fatalf("%q: the codec decodes %v, encoding/json %v", raw, any1, stdAny)
		} else {
			again, err := json.Marshal(any1)
			if err != nil {
				t.Fatalf("decoded %q does not re-encode: %v", raw, err)
			}
			var any2 any
			if err := DecodeDoc(coll, key, again, &any2); err != nil || !reflect.DeepEqual(any1, any2) {
				t.Fatalf("round trip of %q: %v -> %s -> %v, %v", raw, any1, again, any2, err)
			}
		}
		var d, std fuzzDoc
		err := DecodeDoc(coll, key, raw, &d)
		// The codec (codec.go) reads what encoding/json reads, to the same
		// value, and writes the same bytes. It may read more: a duration
		// written as a string.
		stdErr := json.Unmarshal(raw, &std)
		switch {
		case stdErr == nil && err != nil:
			t.Fatalf("%q: the codec says %v, encoding/json reads it", raw, err)
		case err == nil && !json.Valid(raw):
			t.Fatalf("%q is not JSON but decoded", raw)
		}
		if err != nil {
			named(err)
			return
		}
		if stdErr == nil && !reflect.DeepEqual(d, std) {
			t.Fatalf("%q: the codec decodes %+v, encoding/json %+v", raw, d, std)
		}
		again, err := EncodeDoc(coll, key, d)
		if err != nil {
			t.Fatalf("decoded %q does not re-encode: %v", raw, err)
		}
		if stdAgain, _ := json.Marshal(d); !bytes.Equal(again, stdAgain) {
			t.Fatalf("%q: the codec encodes %s, encoding/json %s", raw, again, stdAgain)
		}
		var d2 fuzzDoc
		if err := DecodeDoc(coll, key, again, &d2); err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", again, err)
		}
		if again2, _ := json.Marshal(d2); !bytes.Equal(again, again2) {
			t.Fatalf("round trip of %q changed the document:\n%s\n%s", raw, again, again2)
		}
	})
}
