package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/redact"
)

// FuzzRedact checks, for any text and any secret, that String, Value,
// Bytes and Keys return without panicking; that a secret (at least
// MinSecretLen characters) never survives String; that String is
// idempotent; that a JSON body stays valid JSON through Bytes; and that a
// secret-named key's value is always masked by Keys. Seeds:
// testdata/fuzz/FuzzRedact and the ones below.
//
//	scripts/fuzz --target FuzzRedact --time 5m
func FuzzRedact(f *testing.F) {
	for _, c := range [][2]string{
		{"postgres://app:S3cr3t!pw@db/x", "S3cr3t!pw"},
		{"GET /x?api_key=abc123&page=2", "abc123"},
		{"Authorization: Basic c3ZjOnA0c3M=", "p4ss"},
		{`{"password": "x1", "n": 1}`, "x1x1"},
		{"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "tokentoken"},
		{"aaaa", "aaa"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, s, secret string) {
		if len(s) > 1<<14 || len(secret) > 256 {
			return
		}
		r := redact.FromSecrets(secret)
		out := r.String(s)
		if len(strings.TrimSpace(secret)) >= redact.MinSecretLen && strings.Contains(out, secret) {
			t.Fatalf("secret %q survives in %q -> %q", secret, s, out)
		}
		if again := r.String(out); again != out {
			t.Fatalf("String not idempotent: %q -> %q -> %q", s, out, again)
		}
		if b := r.Bytes([]byte(s)); json.Valid([]byte(s)) && !json.Valid(b) {
			t.Fatalf("Bytes broke JSON: %q -> %q", s, b)
		}
		_ = r.Value(map[string]any{s: []any{s, map[string]any{"k": s}}, "x": s})
		if k, ok := redact.Keys(map[string]any{"token": s, "n": s}).(map[string]any); !ok || (k["token"] != redact.Mask) {
			t.Fatalf("Keys left a token readable: %#v", k)
		}
	})
}
