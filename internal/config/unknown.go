// Package config holds what trit-agent's and trit-fleet's TOML
// configuration files share: how their errors are worded — an unknown key
// with its line and the nearest known key (UnknownKeyError), a bad value
// or bad TOML with its file, line and key (Error) — and the types both
// read (Duration).
package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// UnknownKeyError reports a key in a configuration file that the program
// does not know. Its text is the one wording of both programs:
//
//	agent.toml:9: unknown key mqtt.timeuot; did you mean mqtt.timeout? (docs/OPERATIONS.md lists every key)
type UnknownKeyError struct {
	File       string   // the file as the user named it
	Line       int      // 1-based; 0 when it could not be found
	Key        string   // dotted, as toml.Key prints it
	Suggestion string   // the nearest known key; "" when none is close
	Doc        string   // where every key is listed
	Others     []string // further unknown keys, in the file's order
}

func (e *UnknownKeyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	fmt.Fprintf(&b, ": unknown key %s", e.Key)
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %s?", e.Suggestion)
	}
	if len(e.Others) > 0 {
		fmt.Fprintf(&b, "; also unknown: %s", strings.Join(e.Others, ", "))
	}
	if e.Doc != "" {
		fmt.Fprintf(&b, " (%s lists every key)", e.Doc)
	}
	return b.String()
}

// Unknown returns an *UnknownKeyError for the keys of text (decoded into
// into, which gave md) that into has no field for, or nil if there are
// none. file names the file in the message, doc where the keys are listed.
//
// BurntSushi/toml (v1.6.0) reports undecoded keys but not where they are
// (the positions it keeps are private), so the line is found by reading
// the text again.
func Unknown(file, text string, md toml.MetaData, into any, doc string) error {
	und := md.Undecoded()
	var keys []toml.Key
	for _, k := range und {
		// A key under an unknown table is implied by the table.
		covered := false
		for _, p := range keys {
			if len(p) < len(k) && slicesEqual(p, k[:len(p)]) {
				covered = true
				break
			}
		}
		if !covered {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	known := KnownKeys(into)
	e := &UnknownKeyError{File: file, Key: keys[0].String(), Doc: doc,
		Line: findLine(text, keys[0]), Suggestion: suggest(keys[0], known)}
	for _, k := range keys[1:] {
		e.Others = append(e.Others, k.String())
	}
	return e
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// KnownKeys lists the dotted keys a value of v's type decodes, tables
// included (mqtt, mqtt.broker, sensor, sensor.kind, …), from its toml tags.
// A map's keys are free and not listed.
func KnownKeys(v any) []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			out = append(out, key)
			walk(f.Type, key)
		}
	}
	walk(reflect.TypeOf(v), "")
	return out
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()

// suggest returns the known key nearest to k: one a small edit away with
// the same parent, else one with the same last part (or a small edit of it)
// in another table; "" when none is close.
func suggest(k toml.Key, known []string) string {
	full, last := k.String(), k[len(k)-1]
	parent := strings.Join(k[:len(k)-1], ".")
	best, bestD := "", -1
	for _, c := range known {
		cParent, cLast := splitLast(c)
		if cParent != parent {
			continue
		}
		if d := distance(last, cLast); d <= closeEnough(last) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	// The right name in the wrong table (broker at the top instead of
	// under [mqtt]).
	for _, c := range known {
		if _, cLast := splitLast(c); c != full {
			if d := distance(last, cLast); d <= closeEnough(last)/2 && (bestD < 0 || d < bestD) {
				best, bestD = c, d
			}
		}
	}
	return best
}

func splitLast(key string) (parent, last string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// closeEnough is the largest edit distance taken for a typo of s.
func closeEnough(s string) int {
	return max(1, min(3, len(s)/3))
}

// distance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours each cost 1.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// findLine returns the 1-based line of text where key k is defined, as a
// table header ([k] or [[k]]) or as a key = value line under its table; 0
// if not found (a key inside an inline table, say). It reads TOML as
// people write configuration files, not every corner of the grammar.
func findLine(text string, k toml.Key) int {
	want := k.String()
	var table []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			inner := strings.TrimLeft(line, "[")
			if end := strings.IndexByte(inner, ']'); end >= 0 {
				table = splitKey(inner[:end])
				if joinKey(table) == want {
					return i + 1
				}
			}
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if joinKey(append(append([]string(nil), table...), splitKey(name)...)) == want {
			return i + 1
		}
	}
	return 0
}

// splitKey splits a dotted key (a.b, "a.b".c) into its parts, unquoted.
func splitKey(s string) []string {
	var parts []string
	var cur strings.Builder
	quote := rune(0)
	for _, r := range strings.TrimSpace(s) {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
		case r == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

func joinKey(parts []string) string { return toml.Key(parts).String() }
