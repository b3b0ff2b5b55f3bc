// Package bundle encodes, signs and strictly decodes trit model bundles: the
// signed, self-contained artifact the fleet ships to gateways. A bundle holds
// everything needed to classify and nothing more — the random transform is
// regenerated from (generator version, seed, σ, D, P), the ternary weights
// ship as bit planes or five to a byte over the kept columns, the scaler and
// thresholds as float16 — so a 784-feature, 10-class, p = 2048 model fits in
// under 10 KB.
//
// The byte layout, decoding order, key IDs, error types and versioning
// policy are specified in docs/BUNDLE.md. In short (formats 3 and 4):
//
//	"TRIT" | version | header | compat | classes | scaler | thresholds |
//	trees | projection | transform | kept columns | weights | α |
//	self-test | fingerprint | info | key ID (8) | Ed25519 signature (64)
//
// Format 4 is format 3 with one more byte in the trees section, the leaf
// planes (inference.Trees.Planes, 2..MaxTreePlanes); format 2 is format 3
// without the trees section; format 1, the legacy layout (no thresholds,
// projection, clipping, fingerprint or info), still decodes. Encode writes
// the oldest of formats 2 to 4 that can express the model — 4 only for a
// model with tree leaf planes, 3 only for one with one-plane trees, so
// every other model still reads on agents that predate formats 3 and 4 —
// unless Bundle.Format asks for one.
//
// The signature covers every byte before it, key ID included. Decode checks
// the size cap, magic and version, then the signature, and only then parses
// a field; every parse step is bounds-checked before it allocates.
//
// The package imports the standard library and package inference only: it
// runs on the gateway.
package bundle

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trit-iot/trit/inference"
)

// Format constants.
const (
	Magic          = "TRIT"    // first four bytes of every bundle
	FormatVersion  = 5         // the newest byte layout (Decode reads up to it; Encode writes it for a calibrated model)
	OldestFormat   = 1         // the oldest layout Decode reads (and Encode can write)
	DefaultMaxSize = 30 * 1024 // Decode's default size cap, in bytes

	KeyIDSize    = 8              // bytes of the key ID in the trailer
	trailerSize  = KeyIDSize + 64 // key ID + Ed25519 signature
	preambleSize = len(Magic) + 1 // magic + version byte
	minSize      = preambleSize + trailerSize
)

// Limits on the strings a bundle carries, in bytes of UTF-8.
const (
	MaxModelID = 64 // model ID
	MaxLabel   = 64 // each feature name, class label and the hardware label
	MaxVersion = 32 // minimum agent version
	MaxClasses = 4096
)

// Limits on the info section (format 2).
const (
	MaxInfoPairs = 64   // key/value pairs
	MaxInfoKey   = 64   // bytes of a key, 1..MaxInfoKey of [a-z0-9._-]
	MaxInfoValue = 4096 // bytes of a value, valid UTF-8 without control characters
)

// Bundle is a decoded bundle, or the input to Encode.
type Bundle struct {
	// Format is the format version: Decode sets it to the version read,
	// Encode writes it, 0 meaning 4 for a model with tree leaf planes
	// (Trees.NumPlanes() > 1), 3 for a model with one-plane trees and 2 for
	// any other. Encode writes a format only for a model it can express:
	// format 4 holds only models with leaf planes, format 3 no planes,
	// format 2 no trees; format 1 (for agents that predate format 2) no
	// thresholds, trees, projection, clipping, fingerprint or info.
	Format int
	Header Header
	Compat Compat
	Spec   *inference.ModelSpec
	// Info is free-form provenance (format 2): how the training file was
	// read, training metrics. Keys are 1..MaxInfoKey bytes of [a-z0-9._-];
	// values valid UTF-8 without control characters, at most MaxInfoValue
	// bytes; at most MaxInfoPairs pairs. It is signed like every other byte;
	// agents ignore it, tools show it. Nil and empty both mean none; Decode
	// returns nil for none.
	Info map[string]string
	// SelfTest holds the expected results of the self-test (see SelfTest).
	// Decode fills it; Encode computes it from Spec and ignores this field.
	SelfTest SelfTestVector
	// KeyID, Signature and Signed describe the trailer. Decode fills them
	// (Signed means the signature was verified against the trusted keys);
	// Encode ignores them and always writes an unsigned bundle.
	KeyID     [KeyIDSize]byte
	Signature [64]byte
	Signed    bool
}

// Header identifies a release of a model.
type Header struct {
	// ModelID names the model: 1..MaxModelID bytes of UTF-8, no control
	// characters.
	ModelID string
	// Release only grows from one release of a model to the next; an agent
	// refuses a bundle whose Release is not above the one it runs
	// (anti-rollback). It must be at least 1.
	Release uint64
	// CreatedAt is required; ExpiresAt is optional (zero means never). Both
	// are stored as whole Unix seconds; Decode returns them in UTC.
	CreatedAt, ExpiresAt time.Time
}

// Compat says what a gateway needs to run the model. The feature count is
// the model's Spec.NumFeatures().
type Compat struct {
	// Features are the ordered input feature names: nil (meaning f0 … f{D-1})
	// or exactly D distinct non-empty labels. If both this and Spec.Features
	// are set they must be equal; Decode sets both.
	Features []string
	// MinAgentVersion is the oldest agent that can run the bundle, as
	// "major.minor.patch" (decimal, no leading zeros).
	MinAgentVersion string
	// Hardware labels the hardware/sensor set the model was trained for;
	// empty means any.
	Hardware string
}

// SelfTestVector is what a bundle expects of its model on the self-test
// input (see SelfTestInput): the integer score wᵀz of each weight vector and
// the predicted class index.
type SelfTestVector struct {
	Scores []int32
	Class  int
}

// CheckAgent returns nil if an agent of the given "major.minor.patch"
// version may run the bundle, an error wrapping ErrAgentTooOld if it is
// older than MinAgentVersion, or ErrInvalid if a version is malformed.
func (c Compat) CheckAgent(version string) error {
	have, err := parseVersion(version)
	if err != nil {
		return fmt.Errorf("%w: agent version %q: %v", ErrInvalid, version, err)
	}
	want, err := parseVersion(c.MinAgentVersion)
	if err != nil {
		return fmt.Errorf("%w: minimum agent version %q: %v", ErrInvalid, c.MinAgentVersion, err)
	}
	for i := range have {
		if have[i] != want[i] {
			if have[i] < want[i] {
				return fmt.Errorf("%w: agent %s, bundle needs %s", ErrAgentTooOld, version, c.MinAgentVersion)
			}
			return nil
		}
	}
	return nil
}

// parseVersion parses "major.minor.patch": three decimal numbers without
// signs or leading zeros, each below 10⁹.
func parseVersion(v string) ([3]int, error) {
	var out [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("want major.minor.patch")
	}
	for i, p := range parts {
		if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') || strings.TrimLeft(p, "0123456789") != "" {
			return out, fmt.Errorf("component %q is not a decimal number without leading zeros", p)
		}
		out[i], _ = strconv.Atoi(p)
	}
	return out, nil
}

// checkLabel reports why s cannot be a bundle string of at most max bytes,
// or returns nil. Control characters are refused so that a label can be
// printed and logged as is.
func checkLabel(s string, max int, allowEmpty bool) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%d bytes, at most %d", len(s), max)
	case s == "" && !allowEmpty:
		return fmt.Errorf("empty")
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("contains control character %U", r)
		}
	}
	return nil
}

// checkNames checks a list of feature names or class labels: each a valid
// label, no two equal.
func checkNames(names []string, what string) error {
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if err := checkLabel(n, MaxLabel, false); err != nil {
			return fmt.Errorf("%s %d: %v", what, i, err)
		}
		if seen[n] {
			return fmt.Errorf("%s %d: %q listed twice", what, i, n)
		}
		seen[n] = true
	}
	return nil
}

// checkScaler checks values the decoder and the encoder both require: D
// finite ranges with Lo <= Hi whose width Hi-Lo is finite in float32 (the
// self-test input is drawn inside it).
func checkScaler(s inference.Scaler, d int) error {
	if len(s.Lo) != d || len(s.Hi) != d {
		return fmt.Errorf("%d lo and %d hi values for %d features", len(s.Lo), len(s.Hi), d)
	}
	for i := range d {
		lo, hi := s.Lo[i], s.Hi[i]
		w := hi - lo
		if !(lo <= hi) || w-w != 0 {
			return fmt.Errorf("feature %d has range [%g, %g]", i, lo, hi)
		}
	}
	return nil
}

// checkTimes checks the header's times as Unix seconds.
func checkTimes(created, expires int64) error {
	switch {
	case created <= 0:
		return fmt.Errorf("created-at %d, want a positive Unix time", created)
	case expires < 0:
		return fmt.Errorf("expires-at %d, want 0 (never) or a positive Unix time", expires)
	case expires != 0 && expires < created:
		return fmt.Errorf("expires-at %d is before created-at %d", expires, created)
	}
	return nil
}

// unixTime is the decoder's inverse of Time.Unix, with 0 meaning the zero
// Time.
func unixTime(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// unixSeconds is the encoder's time conversion, with the zero Time as 0.
func unixSeconds(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
