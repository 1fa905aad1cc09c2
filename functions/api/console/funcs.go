package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// timeOf reads an RFC 3339 text or a time (zero when neither).
func timeOf(v any) (time.Time, string) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return time.Time{}, ""
		}
		p, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}, x
		}
		return p, ""
	case time.Time:
		return x, ""
	}
	return time.Time{}, ""
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// when formats an RFC 3339 text or a time as "2006-01-02 15:04:05Z".
	"when": func(v any) string {
		t, raw := timeOf(v)
		if t.IsZero() {
			return raw
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	// at is when as a <time> element: the page's script shows it in the
	// visitor's time zone (UTC without scripts).
	"at": func(v any) template.HTML {
		t, raw := timeOf(v)
		if t.IsZero() {
			return template.HTML(template.HTMLEscapeString(raw))
		}
		return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339Nano) + `">` + t.UTC().Format("2006-01-02 15:04:05Z") + `</time>`)
	},
	"dur": fmtDur,
	"ms":  func(ms int64) string { return fmtDur(time.Duration(ms) * time.Millisecond) },
	// f1 formats a number with one decimal.
	"f1": func(f float64) string { return fmt.Sprintf("%.1f", f) },
	// num formats a count (no exponent, no trailing zeros).
	"num": func(f float64) string {
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
	},
	"usd":   func(f float64) string { return fmt.Sprintf("%.8f", f) },
	"bytes": humanBytes,
	"pct": func(done, total int) int {
		if total <= 0 {
			return 0
		}
		return min(100, done*100/total)
	},
	"plus": func(a, b int) int { return a + b },
	// mid is the middle of a span.
	"mid":   func(a, b float64) float64 { return a + b/2 },
	"minus": func(a, b float64) float64 { return a - b },
	"add":   func(a, b float64) float64 { return a + b },
	// lineY is the baseline of a node's i-th line.
	"lineY": func(y float64, i int) float64 { return y + nodeTop + 10 + float64(i)*nodeLine },
	"ms1":   func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) },
	"mark": func(m string) string {
		switch m {
		case "entry":
			return "▶"
		case "loop":
			return "⟳"
		case "join":
			return "⋈"
		case "final":
			return "■"
		case "fan-out":
			return "⇉"
		}
		return ""
	},
	"joinStrings": strings.Join,
	// dict builds a map from key, value pairs (to pass several values to
	// a template).
	"dict": func(kv ...any) map[string]any {
		m := make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			if k, ok := kv[i].(string); ok {
				m[k] = kv[i+1]
			}
		}
		return m
	},
}

// humanBytes formats a size: 512 B, 1.5 KiB, 3.2 MiB.
func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
