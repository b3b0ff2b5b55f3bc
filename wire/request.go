package wire

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Request asks a device for something it keeps (RequestSamples): the fleet
// publishes it, signed with its command key, not retained, on the device's
// requests topic; the device answers with a Response of the same ID on its
// responses topic. A request changes nothing on the device.
type Request struct {
	V      int    `json:"v"`
	Fleet  string `json:"fleet"`
	Device string `json:"device"`
	ID     string `json:"id"`   // CheckRolloutID rules; echoed in the response
	Kind   string `json:"kind"` // RequestSamples or RequestPlan
	// Bundle is RequestPlan's candidate (its hash); empty otherwise.
	Bundle string `json:"bundle,omitempty"`
	// After is RequestLabels's acknowledgement: the fleet stores every
	// labelled window of the device read at or before these Unix
	// milliseconds, so the device may drop them; 0 otherwise.
	After     int64  `json:"after,omitempty"`
	IssuedAt  int64  `json:"issued_at"`
	ExpiresAt int64  `json:"expires_at"`
	KeyID     string `json:"key_id"`
	Sig       string `json:"sig"`
}

// Request kinds.
const (
	// RequestSamples asks for the device's sample ring (Response.Samples).
	RequestSamples = "samples"
	// RequestPlan asks the device to score candidate Bundle on its window
	// history without activating it (Response.Plan).
	RequestPlan = "plan"
	// RequestLabels asks for the windows the device's label source
	// labelled after After (Response.Labels), and acknowledges those up to
	// After.
	RequestLabels = "labels"
)

const requestMagic = "trit-request/v1\n"

// Canonical returns the bytes the signature covers, as Command.Canonical:
// a header line, then fleet, device, id, kind, bundle (empty when none),
// issued_at, expires_at and key_id lines.
func (r *Request) Canonical() []byte {
	var b strings.Builder
	b.WriteString(requestMagic)
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	line("fleet", r.Fleet)
	line("device", r.Device)
	line("id", r.ID)
	line("kind", r.Kind)
	line("bundle", r.Bundle)
	if r.Kind == RequestLabels {
		// Only this kind has it, so the other kinds sign what they did.
		line("after", strconv.FormatInt(r.After, 10))
	}
	line("issued_at", strconv.FormatInt(r.IssuedAt, 10))
	line("expires_at", strconv.FormatInt(r.ExpiresAt, 10))
	line("key_id", r.KeyID)
	return []byte(b.String())
}

// Validate checks every field except the signature.
func (r *Request) Validate() error {
	fail := func(field, format string, args ...any) error {
		return decodeErr(ErrMalformed, "request", field, format, args...)
	}
	if r.V != ProtocolVersion {
		return decodeErr(ErrVersion, "request", "v", "version %d, this program speaks %d", r.V, ProtocolVersion)
	}
	if err := CheckID(r.Fleet); err != nil {
		return fail("fleet", "%v", err)
	}
	if err := CheckID(r.Device); err != nil {
		return fail("device", "%v", err)
	}
	if err := CheckRolloutID(r.ID); err != nil {
		return fail("id", "%v", err)
	}
	if r.After != 0 && r.Kind != RequestLabels {
		return fail("after", "only a labels request acknowledges windows")
	}
	switch r.Kind {
	case RequestSamples, RequestLabels:
		if r.Bundle != "" {
			return fail("bundle", "a %s request names no bundle", r.Kind)
		}
		if r.After < 0 {
			return fail("after", "%d: want Unix milliseconds, 0 or more", r.After)
		}
	case RequestPlan:
		if err := CheckHash(r.Bundle); err != nil {
			return fail("bundle", "%v", err)
		}
	default:
		return fail("kind", "%q, want %q, %q or %q", r.Kind, RequestSamples, RequestPlan, RequestLabels)
	}
	if r.IssuedAt <= 0 || r.ExpiresAt <= r.IssuedAt {
		return fail("expires_at", "issued_at %d, expires_at %d: want 0 < issued_at < expires_at", r.IssuedAt, r.ExpiresAt)
	}
	return nil
}

// Sign validates r, sets its KeyID to priv's and signs it.
func (r *Request) Sign(priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("wire: sign request: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if r.V == 0 {
		r.V = ProtocolVersion
	}
	if err := r.Validate(); err != nil {
		return err
	}
	r.KeyID = KeyID(priv.Public().(ed25519.PublicKey))
	r.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, r.Canonical()))
	return nil
}

// Marshal returns the JSON payload of a signed request.
func (r *Request) Marshal() ([]byte, error) {
	if r.Sig == "" {
		return nil, fmt.Errorf("wire: request for %s is not signed", r.Device)
	}
	return json.Marshal(r)
}

// VerifyRequest decodes a request strictly and checks its key, signature,
// target and expiry, as VerifyCommand does for commands.
func VerifyRequest(data []byte, keys *KeySet, target Target, now time.Time) (*Request, error) {
	var r Request
	if err := decodeStrict(data, MaxRequestSize, "request", &r, func() int { return r.V }); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if _, err := hex.DecodeString(r.KeyID); err != nil || len(r.KeyID) != 16 || r.KeyID != strings.ToLower(r.KeyID) {
		return nil, decodeErr(ErrMalformed, "request", "key_id", "want 16 lowercase hex digits")
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(r.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, decodeErr(ErrMalformed, "request", "sig", "want %d bytes in padded standard base64", ed25519.SignatureSize)
	}
	pub, ok := keys.lookup(r.KeyID)
	if !ok {
		return nil, decodeErr(ErrUnknownKey, "request", "key_id", "key %s is not among the %d trusted command keys", r.KeyID, keys.Len())
	}
	if !ed25519.Verify(pub, r.Canonical(), sig) {
		return nil, decodeErr(ErrSignature, "request", "sig", "Ed25519 signature by key %s does not verify", r.KeyID)
	}
	if r.Fleet != target.Fleet || r.Device != target.Device {
		return nil, decodeErr(ErrWrongTarget, "request", "device", "request is for %s/%s, this is %s/%s", r.Fleet, r.Device, target.Fleet, target.Device)
	}
	if !now.Before(time.Unix(r.ExpiresAt, 0)) {
		return nil, decodeErr(ErrExpired, "request", "expires_at", "expired at %s", time.Unix(r.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	return &r, nil
}

// Response is a device's answer to a Request.
type Response struct {
	V      int    `json:"v"`
	Device string `json:"device"`
	ID     string `json:"id"`   // the request's
	Kind   string `json:"kind"` // the request's
	// Error says why the request was not served (then nothing else is set).
	Error   string     `json:"error,omitempty"`
	Samples *SampleSet `json:"samples,omitempty"`
	Plan    *Plan      `json:"plan,omitempty"`
	Labels  *LabelSet  `json:"labels,omitempty"`
}

// Plan is what a candidate would have changed on a device's window
// history: of Windows windows, Changed would have been classified
// differently than the active model did.
type Plan struct {
	Bundle  string `json:"bundle"`
	Windows uint64 `json:"windows"`
	Changed uint64 `json:"changed"`
	// Transitions counts the changes as "active→candidate" class pairs
	// (at most MaxShadowClasses² entries).
	Transitions map[string]uint64 `json:"transitions,omitempty"`
}

// SampleSet is a device's sample ring: windows kept for retraining.
type SampleSet struct {
	Model    *ModelRef `json:"model,omitempty"` // the active model when the set was sent
	Features []string  `json:"features"`        // names of Sample.X, the model's input features
	Samples  []Sample  `json:"samples"`         // oldest first
	// Dropped counts samples evicted to keep the ring within MaxBytes.
	Dropped  uint64 `json:"dropped,omitempty"`
	MaxBytes int    `json:"max_bytes"`
}

// Sample is one kept window.
type Sample struct {
	Time   int64     `json:"time"` // Unix milliseconds of the reading
	X      []float32 `json:"x"`    // the feature vector the model classified
	Class  string    `json:"class"`
	Margin float64   `json:"margin"` // normalised margin, 0 … 1
	// Candidate is the shadow candidate's class, when one ran.
	Candidate string `json:"candidate,omitempty"`
	// Reason is why the window was kept: SampleUnknown, SampleLowMargin,
	// SampleDisagreement or SampleRate.
	Reason string `json:"reason"`
}

// Sample reasons.
const (
	SampleLowMargin    = "low-margin"
	SampleDisagreement = "disagreement"
	SampleRate         = "sampled"
	// SampleUnknown: a calibrated model reported the window unknown
	// (low confidence or far from the training data): the windows most
	// worth labelling, which the ring keeps longest.
	SampleUnknown = "unknown"
)

// MaxSamples bounds a SampleSet.
const MaxSamples = 4096

// Marshal encodes r, setting V.
func (r *Response) Marshal() ([]byte, error) {
	r.V = ProtocolVersion
	return json.Marshal(r)
}

// DecodeResponse parses a response strictly.
func DecodeResponse(data []byte) (*Response, error) {
	var r Response
	if err := decodeStrict(data, MaxResponseSize, "response", &r, func() int { return r.V }); err != nil {
		return nil, err
	}
	fail := func(field, format string, args ...any) (*Response, error) {
		return nil, decodeErr(ErrMalformed, "response", field, format, args...)
	}
	if err := CheckID(r.Device); err != nil {
		return fail("device", "%v", err)
	}
	if err := CheckRolloutID(r.ID); err != nil {
		return fail("id", "%v", err)
	}
	if r.Kind != RequestSamples && r.Kind != RequestPlan && r.Kind != RequestLabels {
		return fail("kind", "%q, want %q, %q or %q", r.Kind, RequestSamples, RequestPlan, RequestLabels)
	}
	if len(r.Error) > 1024 {
		return fail("error", "%d bytes, at most 1024", len(r.Error))
	}
	if p := r.Plan; p != nil {
		if err := CheckHash(p.Bundle); err != nil {
			return fail("plan", "bundle: %v", err)
		}
		if p.Changed > p.Windows || len(p.Transitions) > MaxShadowClasses*MaxShadowClasses {
			return fail("plan", "%d changed of %d windows, %d transitions", p.Changed, p.Windows, len(p.Transitions))
		}
		var sum uint64
		for k, n := range p.Transitions {
			if len(k) > 513 || n > p.Changed-sum { // sum ≤ Changed: no wrap, as sum+n could
				return fail("plan", "transition %q: counts above the %d changed windows", k, p.Changed)
			}
			sum += n
		}
	}
	if l := r.Labels; l != nil {
		if err := l.check(); err != nil {
			return fail("labels", "%v", err)
		}
	}
	if s := r.Samples; s != nil {
		if s.Model != nil {
			if err := s.Model.check(); err != nil {
				return fail("samples", "model: %v", err)
			}
		}
		if len(s.Features) == 0 || len(s.Features) > 4096 || len(s.Samples) > MaxSamples {
			return fail("samples", "%d features, %d samples: want 1..4096 features, at most %d samples", len(s.Features), len(s.Samples), MaxSamples)
		}
		for i, f := range s.Features {
			if f == "" || len(f) > 128 || strings.ContainsAny(f, ",\"\r\n") {
				return fail("samples", "feature %d: %q: want 1..128 bytes without comma, quote or newline", i, f)
			}
		}
		for i, x := range s.Samples {
			if len(x.X) != len(s.Features) {
				return fail("samples", "sample %d has %d values for %d features", i, len(x.X), len(s.Features))
			}
			if !(x.Margin >= 0 && x.Margin <= 1) || math.IsNaN(x.Margin) {
				return fail("samples", "sample %d: margin %v, want 0..1", i, x.Margin)
			}
			switch x.Reason {
			case SampleLowMargin, SampleDisagreement, SampleRate, SampleUnknown:
			default:
				return fail("samples", "sample %d: reason %q", i, x.Reason)
			}
			if len(x.Class) > 256 || len(x.Candidate) > 256 {
				return fail("samples", "sample %d: class label too long", i)
			}
		}
	}
	return &r, nil
}
