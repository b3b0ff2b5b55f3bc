package bundle

import (
	"fmt"
	"slices"
)

// The info section (format 2) carries provenance as key/value strings: how
// the training file was read, training metrics. Agents ignore it; tools
// show it. Invariants, checked by Encode and Decode alike:
//
//   - at most MaxInfoPairs pairs, keys in strictly ascending byte order
//     (so each map has exactly one encoding);
//   - a key is 1..MaxInfoKey bytes, each one of a-z 0-9 . _ - ;
//   - a value is 0..MaxInfoValue bytes of valid UTF-8 with no control
//     character at all (Unicode category Cc: not even tab or newline), so
//     that it prints on one line and is safe to log. Encode a tab, say, as
//     a word ("tab") or an escape ("\t") in the value.

// checkInfoKey reports why k cannot be an info key, or returns nil.
func checkInfoKey(k string) error {
	if k == "" || len(k) > MaxInfoKey {
		return fmt.Errorf("key of %d bytes, want 1..%d", len(k), MaxInfoKey)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("key %q: byte %d (%q) is not one of a-z 0-9 . _ -", k, i, c)
		}
	}
	return nil
}

// checkInfoValue reports why v cannot be the value of info key k.
func checkInfoValue(k, v string) error {
	if err := checkLabel(v, MaxInfoValue, true); err != nil {
		return fmt.Errorf("value of %q: %v", k, err)
	}
	return nil
}

// infoKeys checks info and returns its keys in encoding order.
func infoKeys(info map[string]string) ([]string, error) {
	if len(info) > MaxInfoPairs {
		return nil, fmt.Errorf("%d pairs, at most %d", len(info), MaxInfoPairs)
	}
	keys := make([]string, 0, len(info))
	for k, v := range info {
		if err := checkInfoKey(k); err != nil {
			return nil, err
		}
		if err := checkInfoValue(k, v); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}
