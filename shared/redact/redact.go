// Package redact masks secrets in values before they leave the engine:
// logs, events, error messages, DLQ payloads and API responses (seed 000
// §8.9 "Redaction & PII Safety": redact known keys in logs/traces, mask
// secrets in API responses).
//
// Three rules, applied together by Redactor:
//
//   - by value: every secret a Redactor knows (the string leaves of the
//     resolved keychain, New) is replaced by Mask wherever it occurs, as a
//     whole string or as a substring (a password inside a DSN, a token
//     inside a URL or an error message), including its URL- and
//     JSON-escaped spellings;
//   - by key: the value of a mapping key that names a secret (IsSecretKey:
//     password, token, authorization, api_key, ...) is replaced by Mask,
//     whatever it is;
//   - by pattern: the password of a URL's userinfo (scheme://user:PASS@host),
//     a password=... keyword (libpq DSNs, query strings) and the token after
//     "Bearer " (8 or more characters with a digit) are masked in every
//     string.
//
// Keys applies the key and pattern rules only, for values shown without a
// keychain at hand (API responses). Masking is for output only: the
// engine's state and the values tasks receive are never redacted.
package redact

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Mask replaces every secret.
const Mask = "***"

// MinSecretLen is the shortest keychain string treated as a secret by
// value: shorter strings (a port "5432" is a number, not a string; "on",
// "dev") would mask ordinary text everywhere.
const MinSecretLen = 4

// secretKeys are the key names (normalised by normKey) whose values are
// masked: the brief's list plus seed 000 §8.9's "bearer", AWS's
// secret_access_key and cookies. Seed 000 also lists key, auth and
// credential; they are left out on purpose: `auth:` and `credential:`
// hold keychain names in NoETL playbooks, and `key` names GCS objects and
// idempotency keys everywhere.
var secretKeys = []string{
	"password", "passwd", "secret", "token", "api_key", "apikey", "authorization",
	"private_key", "client_secret", "bearer", "secret_access_key", "secret_key", "cookie",
}

var secretKeySet = func() map[string]bool {
	m := make(map[string]bool, len(secretKeys))
	for _, k := range secretKeys {
		m[k] = true
	}
	return m
}()

// normKey lower-cases k, splits camelCase with '_' and turns '-', '.' and
// ' ' into '_' ("X-Api-Key" → "x_api_key", "clientSecret" →
// "client_secret").
func normKey(k string) string {
	var b strings.Builder
	b.Grow(len(k) + 4)
	var prev rune
	for i, r := range k {
		switch {
		case r == '-' || r == '.' || r == ' ':
			r = '_'
		case r >= 'A' && r <= 'Z':
			if i > 0 && (prev >= 'a' && prev <= 'z' || prev >= '0' && prev <= '9') {
				b.WriteByte('_')
			}
			prev = r
			r += 'a' - 'A'
			b.WriteRune(r)
			continue
		}
		prev = r
		b.WriteRune(r)
	}
	return b.String()
}

// IsSecretKey reports whether the value of a mapping key k must be masked:
// after normalising k (case-insensitive; '-', '.', ' ' and camelCase read
// as '_'), k equals one of the secret names or ends with "_" + one of them.
// So password, DB_PASSWORD, X-Api-Key, access_token, clientSecret,
// Proxy-Authorization and set-cookie are secret; token_type, max_tokens,
// keychain, auth and key are not.
func IsSecretKey(k string) bool {
	n := normKey(k)
	if secretKeySet[n] {
		return true
	}
	for i := 0; i < len(n); i++ {
		if n[i] == '_' && secretKeySet[n[i+1:]] {
			return true
		}
	}
	return false
}

// Redactor masks the secrets it was built with, plus secret-named keys and
// secret patterns (see the package doc). A nil *Redactor is valid and
// behaves like Keys. It is immutable and safe for concurrent use.
type Redactor struct {
	// secrets are the literal spellings to mask, longest first.
	secrets []string
}

// Descriptor fields of a resolved keychain entry that are not secrets
// (credentials.FieldKind and credentials.FieldSource): they are skipped
// when harvesting secrets.
var descriptorFields = map[string]bool{"kind": true, "source": true}

// New builds a Redactor from a resolved keychain (credentials.Resolve's
// result: entry name → mapping of fields). Every string leaf of every
// entry, at any depth, of at least MinSecretLen characters (ignoring
// surrounding space) is a secret, except the top-level descriptor fields
// kind and source of each entry. Entry names and mapping keys are not
// secrets. A nil or empty keychain gives a Redactor that only applies the
// key and pattern rules.
func New(keychain map[string]any) *Redactor {
	var found []string
	for _, entry := range keychain {
		if m, ok := entry.(map[string]any); ok {
			for k, v := range m {
				if !descriptorFields[k] {
					collect(v, &found)
				}
			}
			continue
		}
		collect(entry, &found)
	}
	return FromSecrets(found...)
}

// collect appends the string leaves of v.
func collect(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			collect(e, out)
		}
	case []any:
		for _, e := range x {
			collect(e, out)
		}
	case map[string]string:
		for _, e := range x {
			*out = append(*out, e)
		}
	case []string:
		*out = append(*out, x...)
	}
}

// FromSecrets builds a Redactor that masks the given literal secrets
// (those shorter than MinSecretLen, ignoring surrounding space, are
// ignored), plus their URL- and JSON-escaped spellings.
func FromSecrets(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var list []string
	add := func(s string) {
		if len(strings.TrimSpace(s)) >= MinSecretLen && !seen[s] {
			seen[s] = true
			list = append(list, s)
		}
	}
	for _, s := range secrets {
		if len(strings.TrimSpace(s)) < MinSecretLen {
			continue
		}
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		if b, err := json.Marshal(s); err == nil {
			add(string(b[1 : len(b)-1]))
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if len(list[i]) != len(list[j]) {
			return len(list[i]) > len(list[j])
		}
		return list[i] < list[j]
	})
	return &Redactor{secrets: list}
}

// keysOnly is the Redactor without secrets that Keys uses.
var keysOnly = &Redactor{}

// Keys returns a deep copy of v with the values of secret-named keys
// (IsSecretKey) masked and secret patterns (URL passwords, password=...,
// "Bearer <token>") masked in strings; no keychain is needed. It is what
// API responses apply when the execution's keychain is not at hand.
func Keys(v any) any { return keysOnly.Value(v) }

// Value returns a deep copy of v with every secret masked (see the package
// doc); v is never modified. JSON-like values keep their types (nil,
// bools, numbers, strings, []byte, map[string]any, []any,
// map[string]string, []string, map[string][]string, http.Header,
// []map[string]any); an error becomes its masked message; any other value
// (structs, typed maps and slices) is converted through encoding/json to
// its generic form first, so nothing escapes unmasked. Mapping keys that
// contain a secret are masked too. The work is linear in the size of v
// times the number of secrets.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return x
	case string:
		return r.String(x)
	case []byte:
		return []byte(r.String(string(x)))
	case error:
		return r.String(x.Error())
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if IsSecretKey(k) && e != nil {
				out[r.String(k)] = Mask
			} else {
				out[r.String(k)] = r.Value(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			if IsSecretKey(k) {
				out[r.String(k)] = Mask
			} else {
				out[r.String(k)] = r.String(e)
			}
		}
		return out
	case map[string][]string:
		return r.multi(x)
	case http.Header:
		return http.Header(r.multi(x))
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = r.String(s)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, m := range x {
			out[i], _ = r.Value(m).(map[string]any)
		}
		return out
	}
	b, err := json.Marshal(v)
	if err != nil {
		return r.String(fmt.Sprint(v))
	}
	var g any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return r.String(string(b))
	}
	return r.Value(g)
}

// multi redacts a map of string lists (http.Header, url.Values).
func (r *Redactor) multi(x map[string][]string) map[string][]string {
	out := make(map[string][]string, len(x))
	for k, e := range x {
		vs := make([]string, len(e))
		for i, s := range e {
			if IsSecretKey(k) {
				vs[i] = Mask
			} else {
				vs[i] = r.String(s)
			}
		}
		out[r.String(k)] = vs
	}
	return out
}

// String returns s with every known secret and every secret pattern
// replaced by Mask. Overlapping or adjacent matches are masked as one span.
// s is returned unchanged (without copying) when nothing matches.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	var spans []span
	if r != nil {
		for _, sec := range r.secrets {
			if len(sec) > len(s) {
				continue
			}
			for i := 0; i <= len(s)-len(sec); {
				j := strings.Index(s[i:], sec)
				if j < 0 {
					break
				}
				spans = append(spans, span{i + j, i + j + len(sec)})
				i += j + 1
			}
		}
	}
	spans = patternSpans(s, spans)
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	b.Grow(len(s))
	pos := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(s[pos:start])
		b.WriteString(Mask)
		pos = end
	}
	b.WriteString(s[pos:])
	return b.String()
}

// span is a byte range [start, end) of a string to mask.
type span struct{ start, end int }

var (
	// urlPassword matches scheme://user:PASSWORD@ (group 1 is the password).
	urlPassword = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:]*:([^\s/@]+)@`)
	// kvPassword matches password=VALUE in libpq DSNs and query strings
	// (group 1 is the value, quoted or not).
	kvPassword = regexp.MustCompile(`(?i)(?:password|passwd|pwd)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s'&;,]+)`)
	// bearerToken matches the token after "Bearer " (group 1); only
	// tokens of 8 or more characters with a digit count, so prose such as
	// "Bearer authentication" stays readable.
	bearerToken = regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{8,}=*)`)
)

// patternSpans appends the spans of the secret patterns in s. Cheap
// substring checks keep the regular expressions off ordinary strings.
func patternSpans(s string, spans []span) []span {
	addGroup := func(re *regexp.Regexp, needDigit bool) {
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			if m[2] >= 0 && m[3] > m[2] && (!needDigit || strings.ContainsAny(s[m[2]:m[3]], "0123456789")) {
				spans = append(spans, span{m[2], m[3]})
			}
		}
	}
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		addGroup(urlPassword, false)
	}
	if strings.Contains(s, "=") && containsFold(s, "pass", "pwd") {
		addGroup(kvPassword, false)
	}
	if containsFold(s, "bearer") {
		addGroup(bearerToken, true)
	}
	return spans
}

// containsFold reports whether s contains any of the lower-case words,
// ignoring ASCII case.
func containsFold(s string, words ...string) bool {
	for _, w := range words {
		n := len(w)
		for i := 0; i+n <= len(s); i++ {
			if s[i]|0x20 == w[0] && strings.EqualFold(s[i:i+n], w) {
				return true
			}
		}
	}
	return false
}
