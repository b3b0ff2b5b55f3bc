package console

import (
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/trit-iot/trit/api"
)

// funcs are the templates' helpers. None of them returns a template.HTML
// or template.URL: the templates escape everything they print.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"asset":   c.assetURL,
		"htmxURL": func() (string, error) { return c.assetURL(htmxFile) },
		"ago":     func(t time.Time) string { return ago(t, c.opt.Now()) },
		"when":    when,
		"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"unix":    func(s int64) time.Time { return time.Unix(s, 0) },
		"unixms":  func(ms int64) time.Time { return time.UnixMilli(ms) },
		"short":   func(h string) string { return shorten(h, 12) },
		"pathesc": url.PathEscape,
		"num":     func(n any) string { return thousands(toUint(n)) },
		"pct":     func(f float64) string { return fmt.Sprintf("%.0f%%", f) },
		// The confidence gate decides as counted by these windows (api.ConfidenceGate.Judge).
		"decideWindows": func(min uint64) uint64 { return api.DecideWindowsFactor * min },
		"decideFactor":  func() int { return api.DecideWindowsFactor },
		"mul100":        func(f float64) float64 { return 100 * f },
		"f1":            func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"join":          strings.Join,
		"hasPrefix":     strings.HasPrefix,
		"labels":        sortedLabels,
		"list":          func(s ...string) []string { return s },
		"plural":        func(n any, one, many string) string { return plural(int(toUint(n)), one, many) },
		"dur":           shortDuration,
		"add":           func(a, b any) float64 { return toFloat(a) + toFloat(b) },
		"sub":           func(a, b any) float64 { return toFloat(a) - toFloat(b) },
		"mul":           func(a, b any) float64 { return toFloat(a) * toFloat(b) },
		"div":           func(a, b any) float64 { return toFloat(a) / toFloat(b) },
	}
}

// toFloat reads the numbers chart templates compute with.
func toFloat(n any) float64 {
	switch v := n.(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return 0
}

func toUint(n any) uint64 {
	switch v := n.(type) {
	case int:
		return uint64(max(v, 0))
	case int64:
		return uint64(max(v, 0))
	case uint64:
		return v
	}
	return 0
}

// plural returns "1 device" or "3 devices".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ago says how long before now t was: "just now", "12 s ago", "3 min ago".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + shortDuration(-d.Round(time.Second))
	case d < 2*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d d ago", int(d/(24*time.Hour)))
}

// when formats a time in UTC; "" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// kv is one label.
type kv struct{ K, V string }

func sortedLabels(m map[string]string) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}
