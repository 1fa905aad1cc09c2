package redact

import (
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
