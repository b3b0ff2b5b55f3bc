package api

import (
	"reflect"
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
