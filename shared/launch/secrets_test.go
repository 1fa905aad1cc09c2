package launch

import (
	"sort"
	"strings"
	"testing"
)

// The execution's secrets: keychain values and the values under
// secret-named workload fields (not a bare key or auth field).
func TestExecRedactor(t *testing.T) {
	wl := map[string]any{
		"api_token": "tok-123456", "db": map[string]any{"host": "db.local", "password": "pw-123456"},
		"creds": map[string]any{"secret": []any{"s-1234", map[string]any{"x": "s-5678"}}},
		"key":   "object/key/1", "auth": "pg_local", "plain": "visible-value",
	}
	got := WorkloadSecrets(wl)
	sort.Strings(got)
	if strings.Join(got, ",") != "pw-123456,s-1234,s-5678,tok-123456" {
		t.Fatalf("WorkloadSecrets = %v", got)
	}
	red := ExecRedactor(map[string]any{"pg": map[string]any{"kind": "postgres", "user": "kc-user-1"}}, wl)
	in := "tok-123456 pw-123456 s-5678 kc-user-1 object/key/1 pg_local visible-value db.local"
	out := red.SecretsString(in)
	for _, s := range []string{"tok-123456", "pw-123456", "s-5678", "kc-user-1"} {
		if strings.Contains(out, s) {
			t.Errorf("%s not masked: %s", s, out)
		}
	}
	for _, s := range []string{"object/key/1", "pg_local", "visible-value", "db.local"} {
		if !strings.Contains(out, s) {
			t.Errorf("%s masked: %s", s, out)
		}
	}
	if !ExecRedactor(nil, map[string]any{"n": 1}).Empty() {
		t.Error("an execution without secrets masks no literal value")
	}
}
