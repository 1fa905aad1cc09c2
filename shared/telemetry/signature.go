package telemetry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/noetl/gcpengine/shared/redact"
)

// Limits of a signature: nesting depth, keys shown per mapping, length.
const (
	sigMaxDepth = 6
	sigMaxKeys  = 32
	sigMaxLen   = 512
)

// Signature returns the shape of v without its values (NoETL observability spec §8.9
// "signature_of: shape summary (no values)"): a mapping becomes
// {key:shape,...} with keys sorted, a list [shape of its first element]
// (or [] when empty), and a scalar its JSON type: string, int, float,
// bool, null. Depth is cut at 6 ("…"), a mapping shows its first 32 keys
// then "…", and the result at 512 bytes. Keys are passed through redact
// patterns. Use it for args_signature and for spec_signature of tools
// whose config has no better summary.
func Signature(v any) string {
	var b strings.Builder
	shape(&b, v, 0)
	return truncate(b.String(), sigMaxLen)
}

func shape(b *strings.Builder, v any, depth int) {
	if depth >= sigMaxDepth {
		b.WriteString("…")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString("string")
	case bool:
		b.WriteString("bool")
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		b.WriteString("int")
	case float32, float64:
		b.WriteString("float")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i == sigMaxKeys {
				b.WriteString(",…")
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(redact.Keys(k).(string))
			b.WriteByte(':')
			shape(b, x[k], depth+1)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		if len(x) > 0 {
			shape(b, x[0], depth+1)
		}
		b.WriteByte(']')
	case []map[string]any:
		b.WriteByte('[')
		if len(x) > 0 {
			shape(b, x[0], depth+1)
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "%T", v)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// HTTPSignature returns "METHOD scheme://host/path?key&key" for a request
// (NoETL observability spec §8.3 "spec_signature (redacted, e.g. GET
// https://api.example.com/users/{id})"): the method upper-cased (GET when
// empty), the URL without user info, query values or fragment, secret
// patterns masked. Pass the URL as written in the playbook (the template,
// e.g. "https://api/users/{{ id }}"), not the rendered one, so that ids
// and other values never reach the trace.
func HTTPSignature(method, rawURL string) string {
	m := strings.ToUpper(strings.TrimSpace(method))
	if m == "" {
		m = "GET"
	}
	u := rawURL
	query := ""
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		if u[i] == '?' {
			q := u[i+1:]
			if j := strings.IndexByte(q, '#'); j >= 0 {
				q = q[:j]
			}
			var keys []string
			for _, kv := range strings.Split(q, "&") {
				if k, _, _ := strings.Cut(kv, "="); k != "" {
					keys = append(keys, k)
				}
			}
			if len(keys) > 0 {
				query = "?" + strings.Join(keys, "&")
			}
		}
		u = u[:i]
	}
	// Drop user info: scheme://user:pass@host/... → scheme://host/...
	if s := strings.Index(u, "://"); s >= 0 {
		auth := u[s+3:]
		if j := strings.IndexByte(auth, '/'); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			u = u[:s+3] + u[s+3+at+1:]
		}
	}
	return truncate(redact.Keys(m+" "+u+query).(string), sigMaxLen)
}

// SpecSignature returns the spec_signature of a task of tool kind with
// config (the task's configuration as written, before rendering): for
// http, HTTPSignature of its method and url (or endpoint); for postgres,
// "postgres " plus the SQL verb of its command (SELECT, INSERT, ...); for
// python, "python"; otherwise kind plus Signature(config). No value of
// config is ever included besides the http URL template.
func SpecSignature(kind string, config map[string]any) string {
	switch kind {
	case "http":
		m, _ := config["method"].(string)
		u, ok := config["url"].(string)
		if !ok {
			u, _ = config["endpoint"].(string)
		}
		return HTTPSignature(m, u)
	case "postgres", "duckdb":
		for _, k := range []string{"command", "sql", "query"} {
			if s, ok := config[k].(string); ok {
				if v := sqlVerb(s); v != "" {
					return kind + " " + v
				}
			}
		}
		return kind
	case "python":
		return kind
	}
	return truncate(kind+" "+Signature(config), sigMaxLen)
}

// sqlVerb returns the first word of the first SQL statement of s,
// upper-cased, skipping "--" comment lines ("" when none).
func sqlVerb(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		f := strings.Fields(strings.TrimLeft(line, "(;"))
		if len(f) == 0 {
			continue
		}
		return strings.ToUpper(strings.TrimRight(f[0], ";("))
	}
	return ""
}
