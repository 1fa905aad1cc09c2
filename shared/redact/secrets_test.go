package redact

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Secrets masks the literal secrets only: the engine's data keeps values
// under secret-looking names that are not known secrets (a pagination
// next_token), result references stay usable, and nothing is modified in
// place.
func TestSecretsOnlyLiteral(t *testing.T) {
	r := New(map[string]any{"db": map[string]any{"password": "Hunter2-pw", "database": "noetl"}})
	in := map[string]any{
		"next_token": "page-2-cursor",
		"dsn":        "postgres://u:Hunter2-pw@h/noetl",
		"list":       []any{"Hunter2-pw", 5, nil},
		"Hunter2-pw": "key",
		"ref": map[string]any{"$ref": map[string]any{"uri": "noetl://default/default/results/e/s/1/0/1", "bucket": "noetl-results",
			"key": "results/e/x.json", "format": "json", "bytes": int64(10), "note": "noetl"}, "extracted": map[string]any{"sample": "noetl"}},
	}
	out := r.Secrets(in).(map[string]any)
	if out["next_token"] != "page-2-cursor" {
		t.Errorf("a non-secret value under a secret-looking key was masked: %v", out["next_token"])
	}
	if s := out["dsn"].(string); strings.Contains(s, "Hunter2") || !strings.Contains(s, "postgres://u:") {
		t.Errorf("dsn %q", s)
	}
	if out["list"].([]any)[0] != Mask || out["list"].([]any)[1] != 5 {
		t.Errorf("list %v", out["list"])
	}
	if _, ok := out[Mask]; !ok {
		t.Error("a secret used as a key must be masked")
	}
	ref := out["ref"].(map[string]any)["$ref"].(map[string]any)
	if ref["uri"] != "noetl://default/default/results/e/s/1/0/1" || ref["bucket"] != "noetl-results" || ref["note"] != Mask {
		t.Errorf("reference fields: %v", ref)
	}
	if out["ref"].(map[string]any)["extracted"].(map[string]any)["sample"] != Mask {
		t.Error("the extracted block is data: masked")
	}
	if in["dsn"] != "postgres://u:Hunter2-pw@h/noetl" {
		t.Error("input modified")
	}
	// Value keeps references usable too (a credential value inside the
	// engine's URI or bucket name must not break the reference).
	v := r.Value(in).(map[string]any)["ref"].(map[string]any)["$ref"].(map[string]any)
	if v["uri"] != "noetl://default/default/results/e/s/1/0/1" || v["bucket"] != "noetl-results" {
		t.Errorf("Value broke the reference: %v", v)
	}
	if b := string(r.SecretsBytes([]byte(`{"a":"x Hunter2-pw y","n":1.50}`))); strings.Contains(b, "Hunter2") || !strings.Contains(b, "1.50") {
		t.Errorf("SecretsBytes = %s", b)
	}
	// String-list maps keep their type, as with Value; only the literal
	// secret is masked (no key rule: the Authorization value is not a
	// known secret here).
	h, ok := r.Secrets(http.Header{"Authorization": {"Bearer abc"}, "X-Db": {"pw=Hunter2-pw"}}).(http.Header)
	if !ok || h.Get("Authorization") != "Bearer abc" || h.Get("X-Db") != "pw="+Mask {
		t.Errorf("Secrets(http.Header) = %#v", h)
	}
	var none *Redactor
	if none.Secrets(in).(map[string]any)["dsn"] != in["dsn"] || !none.Empty() {
		t.Error("a nil redactor masks nothing")
	}
}

// A secret kept in a numeric field (a PIN, an account number) must not
// pass through as a number: Value, Secrets, Bytes and SecretsBytes mask
// it, keep every other number as a number, and keep JSON valid.
func TestNumbersHoldingASecretAreMasked(t *testing.T) {
	r := FromSecrets("73194628")
	in := map[string]any{"account": json.Number("73194628"), "id": int64(731946281), "count": 3, "ratio": 0.5}
	for name, out := range map[string]any{"Value": r.Value(in), "Secrets": r.Secrets(in)} {
		m := out.(map[string]any)
		if s, ok := m["account"].(string); !ok || strings.Contains(s, "73194628") {
			t.Errorf("%s: account = %#v, want a masked string", name, m["account"])
		}
		if s, ok := m["id"].(string); !ok || strings.Contains(s, "73194628") {
			t.Errorf("%s: id = %#v, want a masked string (its text holds the secret)", name, m["id"])
		}
		if m["count"] != 3 || m["ratio"] != 0.5 {
			t.Errorf("%s: other numbers changed: %#v %#v", name, m["count"], m["ratio"])
		}
	}
	for name, f := range map[string]func([]byte) []byte{"Bytes": r.Bytes, "SecretsBytes": r.SecretsBytes} {
		out := f([]byte(`{"account":73194628,"n":7}`))
		if !json.Valid(out) || strings.Contains(string(out), "73194628") || !strings.Contains(string(out), `"n":7`) {
			t.Errorf("%s = %s, want valid JSON without the secret and with n a number", name, out)
		}
	}
}
