package config

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestDecodeError: every kind of decoding error toml gives reads as the
// programs' other configuration errors do — file, line, key, message —
// and none panics (ParseError.ErrorWithPosition did, on an unterminated
// string ending in a backslash).
func TestDecodeError(t *testing.T) {
	type conf struct {
		Tick   Duration `toml:"tick"`
		Models struct {
			Dir string `toml:"dir"`
		} `toml:"models"`
	}
	for _, c := range []struct{ text, want string }{
		{"tick = \"5\"\n", `f.toml:1: tick: time: missing unit in duration "5"`},
		{"x = 1\n[models\n", `f.toml:3: expected '.' or ']' to end table name, but got '\n' instead`},
		{"tick = \"1s\"\nmodels = 5\n", `f.toml:2: models: type mismatch for struct { Dir string "toml:\"dir\"" }: expected table but found int64`},
		{"a = \"x\\", `f.toml: a: invalid escape in string …`}, // no line from toml; no panic
		// toml's deprecated ParseError.Line holds the number's length here.
		{"tick = \"1s\"\n\n\nx = 99999999999999999999999999999999999\n", `f.toml:4: x: 99999999999999999999999999999999999 is out of range for int64`},
	} {
		var v conf
		_, err := toml.Decode(c.text, &v)
		if err == nil {
			t.Fatalf("%q decoded", c.text)
		}
		e := DecodeError("f.toml", err)
		if got := e.Error(); got != c.want && !(strings.HasSuffix(c.want, "…") && strings.HasPrefix(got, strings.TrimSuffix(c.want, "…"))) {
			t.Errorf("%q:\n got %q\nwant %q", c.text, e.Error(), c.want)
		}
		if (e.Line < 1 && c.text != "a = \"x\\") || e.File != "f.toml" {
			t.Errorf("%q: line %d file %q (%s)", c.text, e.Line, e.File, e)
		}
	}
}

func TestErrorWording(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{File: "fleet.toml", Key: "rollouts.command_ttl", Msg: "5s is shorter than a minute"}, "fleet.toml: rollouts.command_ttl: 5s is shorter than a minute"},
		{Error{File: "a.toml", Line: 7, Key: "mqtt.timeout", Msg: "m"}, "a.toml:7: mqtt.timeout: m"},
		{Error{File: "a.toml", Line: 3, Msg: "m"}, "a.toml:3: m"},
		{Error{Key: "label_source.channel", Msg: "m"}, "label_source.channel: m"},
		{Error{File: "a.toml", Msg: "larger than 1048576 bytes"}, "a.toml: larger than 1048576 bytes"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
