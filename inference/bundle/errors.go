package bundle

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Decode, Inspect and Sign return wraps exactly
// one of the first ten (test with errors.Is); most arrive inside a
// *FormatError that says where.
var (
	ErrTooLarge   = errors.New("bundle: larger than the size cap")
	ErrBadMagic   = errors.New("bundle: not a trit bundle (bad magic)")
	ErrVersion    = errors.New("bundle: unsupported format version")
	ErrTruncated  = errors.New("bundle: truncated")
	ErrSignature  = errors.New("bundle: bad signature")
	ErrUnknownKey = errors.New("bundle: signed by a key that is not trusted")
	ErrUnsigned   = errors.New("bundle: not signed")
	ErrExpired    = errors.New("bundle: expired")
	ErrInvalid    = errors.New("bundle: invalid field")
	ErrTrailing   = errors.New("bundle: trailing bytes after the last section")

	// ErrSigned is returned by Sign for a bundle that already has a
	// signature.
	ErrSigned = errors.New("bundle: already signed")
	// ErrSelfTest is wrapped by the *SelfTestError SelfTest returns.
	ErrSelfTest = errors.New("bundle: self-test failed")
	// ErrKeyFile reports a key file that is not a PEM Ed25519 key of the
	// expected kind.
	ErrKeyFile = errors.New("bundle: bad key file")
	// ErrAgentTooOld is returned by Compat.CheckAgent when the agent's
	// version is below the bundle's minimum.
	ErrAgentTooOld = errors.New("bundle: agent version below the bundle's minimum")
)

// FormatError describes what is wrong with a bundle and where. Err is one of
// the sentinels above; Cause, if not nil, is the underlying error (for
// example an inference.ErrModel from ModelSpec.Validate). errors.Is matches
// both.
type FormatError struct {
	Section string // "magic", "header", "compat", "classes", "scaler", "thresholds", "projection", "transform", "kept", "weights", "alpha", "selftest", "info", "signature", "model"
	Offset  int    // byte offset in the bundle, or -1 when not tied to one (Encode)
	Msg     string
	Err     error
	Cause   error
}

func (e *FormatError) Error() string {
	msg := e.Err.Error()
	if e.Section != "" {
		msg += ": " + e.Section
	}
	if e.Offset >= 0 {
		msg += fmt.Sprintf(" at byte %d", e.Offset)
	}
	if e.Msg != "" {
		msg += ": " + e.Msg
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns the sentinel and the cause, for errors.Is and errors.As.
func (e *FormatError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

func formatErr(sentinel error, section string, offset int, format string, args ...any) *FormatError {
	return &FormatError{Section: section, Offset: offset, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

// SelfTestError reports the first difference SelfTest found between the
// model's results on the self-test input and the bundle's expected values.
type SelfTestError struct {
	Vector    int // weight vector whose integer score differs, or -1 for the class
	Got, Want int // the model's value and the bundle's
}

func (e *SelfTestError) Error() string {
	if e.Vector < 0 {
		return fmt.Sprintf("%v: model predicts class %d, bundle expects %d", ErrSelfTest, e.Got, e.Want)
	}
	return fmt.Sprintf("%v: weight vector %d scores %d, bundle expects %d", ErrSelfTest, e.Vector, e.Got, e.Want)
}

// Unwrap returns ErrSelfTest.
func (e *SelfTestError) Unwrap() error { return ErrSelfTest }
