package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Error is a configuration file's bad value or bad TOML, in the one
// wording of trit-agent and trit-fleet (an unknown key is an
// *UnknownKeyError, worded alike):
//
//	fleet.toml: rollouts.command_ttl: 5s is shorter than a minute
//	agent.toml:7: mqtt.timeout: time: missing unit in duration "5"
//	agent.toml:3: expected '.' or ']' to end table name, but got '\n' instead
type Error struct {
	File string // the file as the user named it; "" when parsed from text
	Line int    // 1-based; 0 when not known (a value checked after decoding)
	Key  string // dotted; "" when the error is not about one key
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// DecodeError is err, from toml.Decode of file, as an *Error: the line and
// the key the parser was at, and its message without the "toml: line N"
// prefix. (ParseError.ErrorWithPosition would quote the line, but it
// panics on some inputs, such as an unterminated string ending in a
// backslash: found by FuzzLoadConfig.)
func DecodeError(file string, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		// Position.Line, not the deprecated ParseError.Line: toml sets
		// that to the item's length for some errors (a number out of
		// range on line 4 read as line 35).
		return &Error{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	// Type mismatches come as text: toml: line N (last key "K"): message.
	e := &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	if m := decodeText.FindStringSubmatch(err.Error()); m != nil {
		if key, qerr := strconv.Unquote(m[2]); qerr == nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Key, e.Msg = key, m[3]
		}
	}
	return e
}

// decodeText is the text of toml's decoding errors that are not a
// ParseError (BurntSushi/toml v1.6.0, MetaData.e).
var decodeText = regexp.MustCompile(`(?s)^toml: (?:line (\d+) )?\(last key ("(?:[^"\\]|\\.)*")\): (.*)$`)
