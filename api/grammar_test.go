package api

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParsePhases(t *testing.T) {
	for in, want := range map[string][]Phase{
		"":              nil,
		"100%":          {{Percent: 100}},
		"5,50%,100%":    {{Count: 5}, {Percent: 50}, {Percent: 100}},
		"1, 50%,100%":   {{Count: 1}, {Percent: 50}, {Percent: 100}},
		" 5 25% 100% ":  {{Count: 5}, {Percent: 25}, {Percent: 100}},
		"0.5%, 100%":    {{Percent: 0.5}, {Percent: 100}},
		"3":             {{Count: 3}},
		"1,,2":          {{Count: 1}, {Count: 2}},
		"10%, 20, 100%": {{Percent: 10}, {Count: 20}, {Percent: 100}},
	} {
		got, err := ParsePhases(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParsePhases(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "0%", "101%", "NaN%", "1.5", "x", "%", "1e3%", "Inf%", strings.Repeat("1,", MaxPhases+1)} {
		if got, err := ParsePhases(in); err == nil {
			t.Errorf("ParsePhases(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseRetries(t *testing.T) {
	for in, want := range map[string]map[string]int{
		"":                     nil,
		"timed-out=2":          {"timed-out": 2},
		"timed-out=2,failed=1": {"timed-out": 2, "failed": 1},
		"failed=1 any=3":       {"failed": 1, "any": 3},
		"failed=1,failed=1":    {"failed": 1},
	} {
		got, err := ParseRetries(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseRetries(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"failed", "failed=", "failed=x", "=", "failed=1.5"} {
		if got, err := ParseRetries(in); err == nil || !strings.Contains(err.Error(), "is not kind=count") {
			t.Errorf("ParseRetries(%q) = %v, %v; want an error", in, got, err)
		}
	}
	// A kind given twice with different counts is a mistake, not the last
	// one winning.
	if got, err := ParseRetries("timed-out=2,failed=1,timed-out=5"); err == nil || err.Error() != `"timed-out" is given twice` {
		t.Errorf("ParseRetries of a kind twice = %v, %v; want an error naming it", got, err)
	}
}

func TestParseSelector(t *testing.T) {
	got, err := ParseSelector(" site=north, tier=a b=  ")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"site": "north", "tier": "a", "b": ""}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseSelector("a=1,a=1"); err != nil || !reflect.DeepEqual(got, map[string]string{"a": "1"}) {
		t.Errorf("a label given twice alike: %v %v", got, err)
	}
	for _, in := range []string{"site", "=x", "a=1,a=2"} {
		if _, err := ParseSelector(in); err == nil {
			t.Errorf("ParseSelector(%q): no error", in)
		}
	}
}

func TestParseRate(t *testing.T) {
	got, err := ParseRate("10, 2,20")
	if err != nil || *got != (Rate{BasePerMinute: 10, Factor: 2, IncreaseAfter: 20}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, in := range []string{"", "fast", "1,2", "1,2,3,4", "1,2,x", "NaN,2,3", "1,NaN,3"} {
		if got, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", in, got)
		}
	}
}

// FuzzGrammar drives the rollout grammar's four parsers with the same
// operator text (tritctl's flags, the console's form). Whatever one
// accepts respects its bounds, says exactly what was written (every part
// is in the result, unchanged) and reads back the same from its canonical
// spelling; whatever it refuses gets an error naming the offending text.
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{
		// ParsePhases
		"5,50%,100%", "1, 100%", " 5 25% 100% ", "0.5%,100%", "0%", "101%", "NaN%", "Inf%", "1e2%", "0x1p-2%",
		"-1", "99999999999999999999", "1,,2", strings.Repeat("1,", MaxPhases+1),
		// ParseRetries
		"timed-out=2,failed=1", "failed=1 any=3", "failed=1,failed=2", "failed=1,failed=1", "=2", "failed=", "failed=x",
		// ParseSelector
		"site=north, tier=a", "a=1,a=2", "a=1\ta=1", "=x", "a==b", "k=v\n", "é=ü",
		// ParseRate
		"10,2,20", "10, 2 ,20", "1,2", "1,2,3,4", "NaN,2,3", "Inf,1,1", "1e308,1e308,9223372036854775807", "1,2,x",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ph, err := ParsePhases(s); err != nil {
			namesPart(t, "ParsePhases", s, err, fields(s), "at most")
		} else {
			checkPhases(t, s, ph)
		}
		if r, err := ParseRetries(s); err != nil {
			namesPart(t, "ParseRetries", s, err, fields(s), "")
		} else {
			checkPairs(t, "ParseRetries", s, fields(s), r, strconv.Itoa, func(v string) (int, error) { return strconv.Atoi(v) })
			canon := make([]string, 0, len(r))
			for k, n := range r {
				canon = append(canon, k+"="+strconv.Itoa(n))
			}
			if again, err := ParseRetries(strings.Join(canon, ",")); err != nil || !reflect.DeepEqual(again, r) {
				t.Fatalf("ParseRetries(%q) = %v, which reads back as %v, %v", s, r, again, err)
			}
		}
		selParts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
		if sel, err := ParseSelector(s); err != nil {
			namesPart(t, "ParseSelector", s, err, selParts, "")
		} else {
			checkPairs(t, "ParseSelector", s, selParts, sel, func(v string) string { return v }, func(v string) (string, error) { return v, nil })
			canon := make([]string, 0, len(sel))
			for k, v := range sel {
				if k == "" {
					t.Fatalf("ParseSelector(%q) gave an empty key", s)
				}
				canon = append(canon, k+"="+v)
			}
			if again, err := ParseSelector(strings.Join(canon, ",")); err != nil || !reflect.DeepEqual(again, sel) {
				t.Fatalf("ParseSelector(%q) = %v, which reads back as %v, %v", s, sel, again, err)
			}
		}
		if r, err := ParseRate(s); err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseRate(%q): error %q does not quote the input", s, err)
			}
		} else {
			if math.IsNaN(r.BasePerMinute) || math.IsNaN(r.Factor) {
				t.Fatalf("ParseRate(%q) = %+v: NaN", s, *r)
			}
			canon := strconv.FormatFloat(r.BasePerMinute, 'g', -1, 64) + "," + strconv.FormatFloat(r.Factor, 'g', -1, 64) + "," + strconv.Itoa(r.IncreaseAfter)
			if again, err := ParseRate(canon); err != nil || *again != *r {
				t.Fatalf("ParseRate(%q) = %+v, which reads back as %v, %v", s, *r, again, err)
			}
		}
	})
}

// namesPart fails t unless err is a non-empty message quoting one of
// parts, or (other != "") saying other.
func namesPart(t *testing.T, fn, s string, err error, parts []string, other string) {
	t.Helper()
	msg := err.Error()
	if msg == "" {
		t.Fatalf("%s(%q): empty error", fn, s)
	}
	if other != "" && strings.Contains(msg, other) {
		return
	}
	for _, p := range parts {
		if strings.Contains(msg, strconv.Quote(p)) {
			return
		}
		if k, _, ok := strings.Cut(p, "="); ok && strings.Contains(msg, strconv.Quote(k)) {
			return
		}
	}
	t.Fatalf("%s(%q): error %q names no part of the input", fn, s, msg)
}

// checkPhases checks an accepted phase list against its bounds, the text
// and its canonical spelling.
func checkPhases(t *testing.T, s string, ph []Phase) {
	t.Helper()
	parts := fields(s)
	if len(ph) > MaxPhases || len(ph) != len(parts) {
		t.Fatalf("ParsePhases(%q): %d phases from %d parts (at most %d)", s, len(ph), len(parts), MaxPhases)
	}
	canon := make([]string, len(ph))
	for i, p := range ph {
		switch {
		case p.Count == 0 && p.Percent > 0 && p.Percent <= 100:
			canon[i] = strconv.FormatFloat(p.Percent, 'g', -1, 64) + "%"
		case p.Percent == 0 && p.Count >= 1:
			canon[i] = strconv.Itoa(p.Count)
		default:
			t.Fatalf("ParsePhases(%q): phase %d is %+v, want a count >= 1 or a percentage in (0, 100]", s, i+1, p)
		}
		if strings.HasSuffix(parts[i], "%") != strings.HasSuffix(canon[i], "%") {
			t.Fatalf("ParsePhases(%q): part %q read as %+v", s, parts[i], p)
		}
	}
	if again, err := ParsePhases(strings.Join(canon, ",")); err != nil || !reflect.DeepEqual(again, ph) {
		t.Fatalf("ParsePhases(%q) = %v, which reads back as %v, %v", s, ph, again, err)
	}
}

// checkPairs checks that every key=value part of an accepted list is in
// the result as written: no part is dropped or overridden by another.
func checkPairs[V comparable](t *testing.T, fn, s string, parts []string, got map[string]V, format func(V) string, parse func(string) (V, error)) {
	t.Helper()
	for _, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		want, err := parse(v)
		if !ok || err != nil {
			t.Fatalf("%s(%q) accepted the part %q", fn, s, p)
		}
		if g, found := got[k]; !found || g != want {
			t.Fatalf("%s(%q): the part %q is in the result as %s=%s (%v)", fn, s, p, k, format(g), found)
		}
	}
}
