package config

import (
	"errors"
	"testing"

	"github.com/BurntSushi/toml"
)

type sample struct {
	Name  string                           `toml:"name"`
	Tags  map[string]string                `toml:"tags"`
	Skip  int                              `toml:"-"`
	Net   struct{ Broker, Timeout string } `toml:"net"`
	Items []struct {
		Kind string `toml:"kind"`
		Rate int    `toml:"rate"`
	} `toml:"item"`
}

// TestUnknown: each unknown key is found on its line (dotted keys, quoted
// keys, arrays of tables), keys under an unknown table are not listed
// again, and the suggestion is the nearest key of the same table, or the
// same name in another.
func TestUnknown(t *testing.T) {
	for _, c := range []struct {
		text string
		want UnknownKeyError
	}{
		{"name = \"x\"\nnaem2 = 1\n", UnknownKeyError{Line: 2, Key: "naem2"}},
		{"nmae = \"x\"\n", UnknownKeyError{Line: 1, Key: "nmae", Suggestion: "name"}},
		{"[net]\nBroker = \"a\"\n\n[[item]]\nkind = \"k\"\n[[item]]\nrat = 2\n", UnknownKeyError{Line: 7, Key: "item.rat", Suggestion: "item.rate"}},
		{"net.Brokr = \"a\"\n", UnknownKeyError{Line: 1, Key: "net.Brokr", Suggestion: "net.Broker"}},
		{"Timeout = \"1s\"\n", UnknownKeyError{Line: 1, Key: "Timeout", Suggestion: "net.Timeout"}},
		{"[nett]\nBroker = \"a\"\nTimeout = \"b\"\n[extra]\nx = 1\n", UnknownKeyError{Line: 1, Key: "nett", Suggestion: "net", Others: []string{"extra"}}},
		{"# a comment\n\"quoted key\" = 1\n", UnknownKeyError{Line: 2, Key: `"quoted key"`}},
		{"net = { Brokr = \"a\" }\n", UnknownKeyError{Line: 0, Key: "net.Brokr", Suggestion: "net.Broker"}}, // inline: no line
	} {
		var v sample
		md, err := toml.Decode(c.text, &v)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		err = Unknown("f.toml", c.text, md, &v, "doc")
		var got *UnknownKeyError
		if !errors.As(err, &got) {
			t.Fatalf("%q: %v, want an *UnknownKeyError", c.text, err)
		}
		w := c.want
		w.File, w.Doc = "f.toml", "doc"
		if got.Error() != w.Error() {
			t.Errorf("%q:\n got %s\nwant %s", c.text, got, &w)
		}
	}
	var v sample
	md, _ := toml.Decode("name = \"x\"\n[tags]\nany = \"y\"\n", &v)
	if err := Unknown("f.toml", "", md, &v, "doc"); err != nil {
		t.Errorf("known keys only: %v", err)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"timeout", "timeuot", 1}, {"broker", "brokr", 1}, {"", "abc", 3}, {"same", "same", 0}, {"drift", "drfit", 1}} {
		if got := distance(c.a, c.b); got != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
