package store

import (
	stdjson "encoding/json"
	"errors"
	"fmt"

	"github.com/segmentio/encoding/json"
)

// The documents' JSON codec. Every document of every collection, on bbolt
// and on PostgreSQL, is encoded by EncodeDoc and decoded by DecodeDoc.
//
// Decoding is github.com/segmentio/encoding/json: it reads what
// encoding/json reads, to the same values and with encoding/json's error
// types (and a time.Duration written as a string too, which nothing here
// writes), at about half the CPU — a fleet's intake decodes a device record,
// and often a health document, for every report (docs/BENCHMARKS.md
// "Intake on PostgreSQL"). Encoding stays encoding/json: that library
// does not know the omitzero option the api types use, so it would write
// other bytes. FuzzDecodeDoc holds both to encoding/json's results.

// EncodeDoc encodes v as a document of coll under key.
func EncodeDoc(coll Collection, key string, v any) ([]byte, error) {
	raw, err := stdjson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store: encode %s %q: %w", coll, key, err)
	}
	return raw, nil
}

// decodeDoc is DecodeDoc for a known collection: a JSON syntax error means
// the stored bytes are damaged, any other error is the caller's type
// mismatch.
func decodeDoc(coll Collection, key string, raw []byte, v any) error {
	err := json.Unmarshal(raw, v)
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return corrupt(collectionBuckets[coll], key, err)
	default:
		return fmt.Errorf("store: decode %s %q: %w", coll, key, err)
	}
}
