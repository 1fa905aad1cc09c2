// Package redact masks secrets in values before they leave the engine:
// logs, events, error messages, DLQ payloads, Cloud Task bodies and API
// responses (NoETL observability spec §8.9 "Redaction & PII Safety": redact known keys in
// logs/traces, mask secrets in API responses; README "Security").
//
// Three rules, applied together by Redactor:
//
//   - by value: every value of every resolved credential a Redactor was
//     built with (New: all string fields, also those with ordinary names
//     such as user or host, except the descriptors kind and source) is
//     replaced by Mask wherever it occurs, as a whole string or as a
//     substring (a password inside a DSN, a token inside a URL or an error
//     message), including its URL-, JSON- and base64-escaped spellings;
//   - by key: the value of a mapping key that names a secret (IsSecretKey:
//     password, token, key, auth, api_key, credential, dsn, jwt,
//     Ocp-Apim-Subscription-Key, ...) is replaced by Mask, whatever it is;
//   - by pattern, in every string: the password of a URL's userinfo
//     (scheme://user:PASS@host); a `name=value` pair whose name is a secret
//     key (URL query strings `?api_key=...&token=...`, form bodies, libpq
//     DSNs `password=...`); a JSON member `"name": value` and a header line
//     `Name: value` whose name is a secret key, inside text; the
//     credentials after `Basic ` (base64 of user:password) and the token
//     after `Bearer `; JSON Web Tokens (eyJ....eyJ....sig).
//
// Keys applies the key and pattern rules only, for values shown without a
// keychain at hand. Secrets applies the literal secrets only: the engine
// masks its own data with it (execution state, commands, stored results),
// so values under secret-looking names keep flowing; the values tasks
// receive (their scope: keychain, workload) are never masked.
//
// Where the engine must apply it (README "Security"): every log line's
// message and attributes (NewHandler around the service's slog handler,
// WithRedactor on an execution's context), every event payload and error
// before it is published or stored (Value/Error), DLQ payloads (Bytes or
// Value), Cloud Task bodies and outbox commands (Bytes), API responses
// (Value), the metadata of offloaded results, and span attributes.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
)

// Mask replaces every secret.
const Mask = "***"

// MinSecretLen is the shortest credential string treated as a secret by
// value: shorter strings ("on", "dev", "us") would mask ordinary text
// everywhere.
const MinSecretLen = 4

// secretKeys are the key names (normalised by normKey) whose values are
// masked: NoETL observability spec §8.9's list (password, token, authorization, secret,
// key and auth — exactSecretKeys —, api_key, bearer, credential) plus
// README "Security"'s additions
// (credentials, dsn, pwd, pass, passphrase, access_key, jwt,
// subscription_key for Azure's Ocp-Apim-Subscription-Key) and common
// spellings (passwd, apikey, private_key, client_secret, secret_key,
// secret_access_key, cookie).
var secretKeys = []string{
	"password", "passwd", "pwd", "pass", "passphrase", "secret", "token",
	"authorization", "api_key", "apikey", "access_key", "secret_key",
	"private_key", "client_secret", "secret_access_key", "subscription_key",
	"basic_auth", "proxy_auth", "bearer", "cookie", "dsn", "jwt",
	"credential", "credentials",
}

// exactSecretKeys are secret only as the whole key: as the last segment
// of a longer name they mostly name ordinary things (sort_key, cache_key,
// requires_auth), and the secret spellings (api_key, basic_auth, ...) are
// listed above.
var exactSecretKeys = map[string]bool{"key": true, "auth": true}

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

// IsSecretKey reports whether the value of a mapping key k must be masked
// (NoETL observability spec §8.9): after normalising k (case-insensitive; '-', '.', ' '
// and camelCase read as '_'), k equals one of the secret names or its last
// '_'-separated segments do; key and auth count only as the whole key. So
// password, DB_PASSWORD, db_pass, key, auth, api_key, X-Api-Key,
// Ocp-Apim-Subscription-Key, access_token, clientSecret, basic_auth,
// Proxy-Authorization, credentials and set-cookie are secret; monkey,
// keyboard, keychain, sort_key, requires_auth, token_type, max_tokens,
// oauth_scope, passwords_policy and secretary are not (secret names match
// whole segments, never substrings).
func IsSecretKey(k string) bool {
	n := normKey(k)
	extra := *extraKeys.Load()
	if secretKeySet[n] || exactSecretKeys[n] || extra[n] {
		return true
	}
	for i := 0; i < len(n); i++ {
		if n[i] == '_' && (secretKeySet[n[i+1:]] || extra[n[i+1:]]) {
			return true
		}
	}
	return false
}

// extraKeys are the deployment's additional secret key names
// (SetExtraKeys), normalised.
var extraKeys atomic.Pointer[map[string]bool]

func init() { SetExtraKeys(nil) }

// SetExtraKeys adds key names to the secret ones for the whole process
// (NOETL_LOGGING_REDACT_KEYS, NoETL observability spec §8.9, §8.12): a
// key equal to one of them, or whose last '_'-separated segments are
// one, after normalising (see IsSecretKey), is masked in logs, events,
// traces and API responses. The built-in names are always secret; keys
// replace the previous extra set. Call it at start-up.
func SetExtraKeys(keys []string) {
	m := map[string]bool{}
	for _, k := range keys {
		if n := normKey(strings.TrimSpace(k)); n != "" {
			m[n] = true
		}
	}
	extraKeys.Store(&m)
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
// surrounding space) is a secret — the values of ordinary-named fields
// (user, host, database, a header's value) as much as password or token
// (README "Security") — except the top-level descriptor fields kind and
// source of each entry. Entry names, mapping keys, numbers and booleans
// are not secrets. A nil or empty keychain gives a Redactor that only
// applies the key and pattern rules.
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

// FromCredential builds a Redactor from one resolved credential's fields
// (field name → value), with New's rules.
func FromCredential(fields map[string]any) *Redactor {
	return New(map[string]any{"credential": fields})
}

// FromSecrets builds a Redactor that masks the given literal secrets
// (those shorter than MinSecretLen, ignoring surrounding space, are
// ignored), plus their URL-, JSON- and base64-escaped spellings.
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
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			b64 := enc.EncodeToString([]byte(s))
			add(b64)
			add(strings.TrimRight(b64, "="))
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
// doc); v is never modified. The engine's own result references
// ({"$ref": {"key": <object key>, ...}}, NoETL result storage RFC) keep their object key
// readable (it is still masked by value and pattern). JSON-like values keep their types (nil,
// bools, numbers, strings, []byte, map[string]any, []any,
// map[string]string, []string, map[string][]string, http.Header,
// []map[string]any); an error becomes its masked message; any other value
// (structs, typed maps and slices) is converted through encoding/json to
// its generic form first, so nothing escapes unmasked. A number whose
// text holds a secret becomes the string of its masked text. Mapping keys
// that contain a secret are masked too. The work is linear in the size of v
// times the number of secrets.
func (r *Redactor) Value(v any) any { return walker{str: r.String, keys: true}.value(v) }

// walker is the deep copy that Value and Secrets share: str masks one
// string (a value or a mapping key), and keys says whether the value under
// a secret-named key (IsSecretKey) is replaced by Mask whole.
type walker struct {
	str  func(string) string
	keys bool
}

// secretKey reports whether the value e under key k is masked whole.
func (w walker) secretKey(k string, e any) bool { return w.keys && e != nil && IsSecretKey(k) }

// value is Value/Secrets for one node (see Value for the types kept).
func (w walker) value(v any) any {
	switch x := v.(type) {
	case nil, bool:
		return x
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		// A number whose text holds a secret (a PIN, an account number
		// kept in a numeric field) becomes the string of its masked text;
		// any other number keeps its type and spelling.
		text := fmt.Sprint(x)
		if m := w.str(text); m != text {
			return m
		}
		return x
	case string:
		return w.str(x)
	case []byte:
		return []byte(w.str(string(x)))
	case error:
		return w.str(x.Error())
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch ref, isRef := e.(map[string]any); {
			case k == "$ref" && isRef:
				out[k] = w.ref(ref)
			case k == "$ref":
				out[k] = w.value(e)
			case w.secretKey(k, e):
				out[w.str(k)] = Mask
			default:
				out[w.str(k)] = w.value(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = w.value(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			if w.secretKey(k, e) {
				out[w.str(k)] = Mask
			} else {
				out[w.str(k)] = w.str(e)
			}
		}
		return out
	case map[string][]string:
		return w.multi(x)
	case http.Header:
		return http.Header(w.multi(x))
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = w.str(s)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, m := range x {
			out[i], _ = w.value(m).(map[string]any)
		}
		return out
	}
	b, err := json.Marshal(v)
	if err != nil {
		return w.str(fmt.Sprint(v))
	}
	var g any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return w.str(string(b))
	}
	return w.value(g)
}

// refFields are the fields of a result reference ({"$ref": {...}}, seed
// 004) that the engine derives itself (object key, logical URI, bucket,
// format, sizes): never secrets, and masking them would break the
// reference (a credential value "noetl" inside "noetl://..." or the bucket
// name would make the stored result unreadable).
var refFields = map[string]bool{"key": true, "uri": true, "bucket": true, "format": true, "bytes": true, "rows": true}

// ref redacts a result reference: its engine-derived fields (refFields)
// are kept as they are, anything else is masked like any value.
func (w walker) ref(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		switch {
		case refFields[k]:
			out[k] = e
		case w.secretKey(k, e):
			out[w.str(k)] = Mask
		default:
			out[w.str(k)] = w.value(e)
		}
	}
	return out
}

// Error returns err with its message masked, or nil for nil. The result
// prints only the masked message; errors.Is and errors.As still see err
// (Unwrap), so callers keep classifying errors — print the returned error,
// never the unwrapped one.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: r.String(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Bytes returns a masked copy of a body: a JSON document is decoded,
// masked with Value (numbers keep their spelling unless their text holds a
// secret) and re-encoded (object
// keys sorted); a bare JSON number, true, false or null whose text holds
// a secret becomes the JSON string of its masked text (still JSON);
// anything else is masked as text with String. b is never modified; a body
// without anything to mask is returned as it is.
func (r *Redactor) Bytes(b []byte) []byte {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[' || trimmed[0] == '"') && json.Valid(trimmed) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if out, err := json.Marshal(r.Value(v)); err == nil {
				if bytes.Equal(out, trimmed) {
					return b
				}
				return out
			}
		}
	}
	s := string(b)
	if m := r.String(s); m != s {
		if len(trimmed) > 0 && json.Valid(trimmed) {
			// A scalar document: masked text would not be JSON.
			if out, err := json.Marshal(r.String(string(trimmed))); err == nil {
				return out
			}
		}
		return []byte(m)
	}
	return b
}

// multi redacts a map of string lists (http.Header, url.Values).
func (w walker) multi(x map[string][]string) map[string][]string {
	out := make(map[string][]string, len(x))
	for k, e := range x {
		vs := make([]string, len(e))
		for i, s := range e {
			if w.keys && IsSecretKey(k) {
				vs[i] = Mask
			} else {
				vs[i] = w.str(s)
			}
		}
		out[w.str(k)] = vs
	}
	return out
}

// String returns s with every known secret and every secret pattern
// replaced by Mask. Overlapping or adjacent matches are masked as one span.
// s is returned unchanged (without copying) when nothing matches.
func (r *Redactor) String(s string) string {
	// A mask can make new matches: a secret that contains the mask itself
	// ("x***") can reappear where masks were put next to text, and a mask
	// can end a word so that what follows starts a name=value pair
	// ("AbC123key=0" with secret "C123" -> "Ab***key=0"). Mask again until
	// nothing changes, so that String is idempotent. A pass that changes
	// anything either shortens the text (a secret of at least MinSecretLen
	// bytes becomes len(Mask) bytes) or masks a value that was not masked
	// before, so the loop ends; passes are capped anyway.
	return untilStable(s, r.maskOnce(s), r.maskOnce)
}

// untilStable applies pass to out (pass's result for s) until it changes
// nothing, at most 16 more times: String and SecretsString mask to a
// fixpoint (see String).
func untilStable(s, out string, pass func(string) string) string {
	for i := 0; i < 16 && out != s; i++ {
		s, out = out, pass(out)
	}
	return out
}

// hasSecret reports whether s contains one of r's secrets.
func (r *Redactor) hasSecret(s string) bool {
	if r == nil {
		return false
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// maskOnce is one masking pass of String.
func (r *Redactor) maskOnce(s string) string {
	if s == "" {
		return s
	}
	return maskSpans(s, patternSpans(s, r.literalSpans(s)))
}

// literalSpans returns where r's secrets occur in s (overlaps included);
// none for a nil r.
func (r *Redactor) literalSpans(s string) []span {
	if r == nil {
		return nil
	}
	var spans []span
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
	return spans
}

// maskSpans returns s with every span replaced by Mask, overlapping or
// adjacent spans as one; s itself when there is none.
func maskSpans(s string, spans []span) string {
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
	// kvPair matches name=VALUE in query strings, form bodies and libpq
	// DSNs (group 1 the name, group 2 the value: quoted parts and other
	// characters up to a separator); the value is masked when the name is
	// a secret key.
	kvPair = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*((?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s'"&;,#])+)`)
	// jsonMember matches "name": VALUE inside text (group 1 the name,
	// group 2 the value: a string, or a scalar up to , } ] or space).
	jsonMember = regexp.MustCompile(`"([^"\\]{1,128})"\s*:\s*("(?:[^"\\]|\\.)*"|[^\s,}\]]+)`)
	// headerLine matches a "Name: value" line (HTTP headers, YAML) inside
	// text (group 1 the name, group 2 the value up to the end of the line).
	headerLine = regexp.MustCompile(`(?m)^[ \t]*([A-Za-z][A-Za-z0-9_\-]*)[ \t]*:[ \t]*([^\r\n]+)`)
	// basicCreds matches the credentials after "Basic " (group 1); masked
	// when they decode as base64 to user:password.
	basicCreds = regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/_\-]{4,}={0,2})`)
	// bearerToken matches the token after "Bearer " (group 1).
	bearerToken = regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{8,}=*)`)
	// jwtToken matches a JSON Web Token: base64url header and payload
	// (both JSON objects, so starting with "eyJ") and a signature.
	jwtToken = regexp.MustCompile(`eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`)
)

// patternSpans appends the spans of the secret patterns in s. Cheap
// substring checks keep the regular expressions off ordinary strings.
func patternSpans(s string, spans []span) []span {
	addGroup := func(re *regexp.Regexp, group int, keep func(name, value string) bool) {
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			a, b := m[2*group], m[2*group+1]
			if a < 0 || b <= a {
				continue
			}
			name := ""
			if group == 2 {
				name = s[m[2]:m[3]]
			}
			if keep == nil || keep(name, s[a:b]) {
				if re == jsonMember && b-a >= 2 && s[a] == '"' {
					// Keep the quotes: "token": "***".
					a, b = a+1, b-1
					if a == b {
						continue
					}
				}
				spans = append(spans, span{a, b})
			}
		}
	}
	secretName := func(name, _ string) bool { return IsSecretKey(name) }
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		addGroup(urlPassword, 1, nil)
	}
	if strings.IndexByte(s, '=') >= 0 {
		addGroup(kvPair, 2, secretName)
	}
	if strings.Contains(s, "\"") && strings.IndexByte(s, ':') >= 0 {
		addGroup(jsonMember, 2, func(name, value string) bool {
			return IsSecretKey(name) && value != "null" && value != `""`
		})
	}
	if strings.IndexByte(s, ':') >= 0 {
		addGroup(headerLine, 2, secretName)
	}
	if containsFold(s, "basic") {
		addGroup(basicCreds, 1, func(_, v string) bool { return isBasicCredentials(v) })
	}
	if containsFold(s, "bearer") {
		addGroup(bearerToken, 1, func(_, v string) bool { return looksLikeToken(v) })
	}
	if strings.Contains(s, "eyJ") {
		addGroup(jwtToken, 0, nil)
	}
	return spans
}

// isBasicCredentials reports whether v is base64 (any alphabet, padded or
// not) of "user:password".
func isBasicCredentials(v string) bool {
	raw := strings.TrimRight(v, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(raw); err == nil && bytes.IndexByte(b, ':') >= 0 {
			return true
		}
	}
	return false
}

// looksLikeToken tells a bearer token from prose ("Bearer authentication"):
// a token has a digit, a symbol or mixed case.
func looksLikeToken(v string) bool {
	var lower, upper bool
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9', strings.ContainsRune("-._~+/=", c):
			return true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	return lower && upper
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
