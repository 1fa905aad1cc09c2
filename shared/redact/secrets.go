package redact

import (
	"bytes"
	"encoding/json"
)

// Empty reports whether r masks no literal secret (it may still apply the
// key and pattern rules).
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// Secrets returns a deep copy of v with only r's literal secrets masked
// (the credential values and other secrets it was built with, in their
// escaped spellings too), wherever they occur in strings and mapping keys;
// the key and pattern rules are not applied. It is the masking of the
// engine's own data — execution state, commands and Cloud Task bodies,
// loop plans, stored results and attempt records (README "Security") —
// where a value under a secret-looking name that is not a known secret (a
// pagination next_token, an OAuth token a task fetched) must keep flowing
// to the next step, while output (events, logs, API responses) gets Value.
// Result references keep their engine-derived fields, and values keep
// their types as with Value (the same walk, without the key rule). v is
// never modified; a v without secrets to mask is returned as it is.
func (r *Redactor) Secrets(v any) any {
	if r.Empty() {
		return v
	}
	return r.secretsValue(v)
}

// secretsValue is Secrets without the emptiness check.
func (r *Redactor) secretsValue(v any) any { return walker{str: r.SecretsString}.value(v) }

// SecretsString returns s with r's literal secrets masked (no pattern
// rule); s itself when none occurs.
func (r *Redactor) SecretsString(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	return untilStable(s, r.literalOnce(s), r.literalOnce)
}

// SecretsBytes is Secrets for a body: a JSON document is decoded, masked
// and re-encoded (numbers keep their spelling unless their text holds a
// secret; object keys sorted),
// anything else is masked as text. b is returned as it is when nothing
// was masked.
func (r *Redactor) SecretsBytes(b []byte) []byte {
	if r.Empty() || !r.hasSecret(string(b)) {
		return b
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if out, err := json.Marshal(r.secretsValue(v)); err == nil {
				return out
			}
		}
	}
	return []byte(r.SecretsString(string(b)))
}

// literalOnce masks every occurrence of r's secrets in s (one pass).
func (r *Redactor) literalOnce(s string) string { return maskSpans(s, r.literalSpans(s)) }
