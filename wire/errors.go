package wire

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrTooLarge means a payload is above its size cap.
	ErrTooLarge = errors.New("wire: payload larger than its cap")
	// ErrMalformed means a payload or topic does not parse, or a field is
	// missing or out of range.
	ErrMalformed = errors.New("wire: malformed")
	// ErrVersion means a payload's protocol version is not ProtocolVersion.
	ErrVersion = errors.New("wire: unsupported protocol version")
	// ErrUnknownKey means a command is signed by a key that is not trusted.
	ErrUnknownKey = errors.New("wire: command signed by an untrusted key")
	// ErrSignature means a command's signature does not verify.
	ErrSignature = errors.New("wire: bad command signature")
	// ErrExpired means a command's expiry time has passed.
	ErrExpired = errors.New("wire: command expired")
	// ErrWrongTarget means a command is addressed to another device or
	// fleet.
	ErrWrongTarget = errors.New("wire: command addressed to another device")
)

// DecodeError describes why a payload or topic was refused. It matches its
// sentinel with errors.Is.
type DecodeError struct {
	What  string // "command", "state", "event", "telemetry", "ack", "topic"
	Field string // JSON field or topic level, when one is to blame
	Msg   string
	Err   error // one of the sentinels
}

// Error implements error.
func (e *DecodeError) Error() string {
	s := e.Err.Error() + ": " + e.What
	if e.Field != "" {
		s += ": field " + e.Field
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Unwrap returns the sentinel.
func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(sentinel error, what, field, format string, args ...any) *DecodeError {
	return &DecodeError{What: what, Field: field, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
