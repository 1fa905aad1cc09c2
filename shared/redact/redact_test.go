package redact_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/redact"
)

// keychain is a resolved keychain as credentials.Resolve returns it.
func keychain() map[string]any {
	return map[string]any{
		"pg_local": map[string]any{
			"kind": "postgres", "source": "store",
			"host": "db.internal", "port": int64(5432), "user": "app_user", "password": "S3cr3t!pw", "database": "noetl",
		},
		"api": map[string]any{
			"kind": "http_bearer", "source": "store", "token": "tok_live_ABCDEF123",
			"headers": map[string]any{"Authorization": "Bearer tok_live_ABCDEF123"},
		},
		"basic": map[string]any{
			"kind": "http_basic", "source": "inline", "username": "bob", "password": "hunter2!",
			"headers": map[string]any{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:hunter2!"))},
		},
		"nested": map[string]any{"kind": "secret", "list": []any{"alpha-key-1", map[string]any{"deep": "deepvalue"}}, "short": "abc"},
	}
}

func TestIsSecretKey(t *testing.T) {
	secret := []string{"password", "PASSWORD", "Password", "passwd", "db_password", "DB_PASSWORD", "secret", "client_secret",
		"clientSecret", "token", "access_token", "accessToken", "refresh_token", "X-Auth-Token", "api_key", "apikey", "apiKey",
		"APIKey", "X-Api-Key", "x-api-key", "Authorization", "authorization", "Proxy-Authorization", "private_key",
		"ssh.private_key", "bearer", "aws_secret_access_key", "Set-Cookie", "cookie",
		// Seed 000 §8.9 and README "Security" additions, exact or as the last segments.
		"key", "Key", "auth", "basic_auth", "credential", "credentials", "aws_credentials", "dsn", "DATABASE_DSN",
		"pwd", "pass", "api_pass", "passphrase", "ssh_passphrase", "access_key", "AWS_ACCESS_KEY", "jwt", "id_jwt",
		"Ocp-Apim-Subscription-Key", "subscriptionKey", "X-Goog-Api-Key"}
	plain := []string{"", "user", "username", "host", "port", "token_type", "max_tokens", "total_tokens", "tokenizer",
		"keychain", "kind", "passwords_policy", "secretary", "description", "api_url",
		// Secret names match whole segments, never substrings.
		"monkey", "keyboard", "hotkey", "keys", "author", "authority", "oauth", "oauth_scope", "passenger", "compass",
		"bypass", "dsn_host", "jwt_issuer", "credential_name", "access_key_id",
		// key and auth count only as the whole key.
		"sort_key", "prepared_key", "cache_key", "requires_auth", "use_auth"}
	for _, k := range secret {
		if !redact.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false, want true", k)
		}
	}
	for _, k := range plain {
		if redact.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true, want false", k)
		}
	}
}

func TestString(t *testing.T) {
	r := redact.New(keychain())
	cases := []struct{ in, want string }{
		{"", ""},
		{"nothing to hide here", "nothing to hide here"},
		{"S3cr3t!pw", "***"},
		// A password inside a DSN, and the kind/short values left alone.
		{"postgres://app_user:S3cr3t!pw@db.internal:5432/noetl", "postgres://***:***@***:5432/***"},
		// URL-escaped spelling of the secret.
		{"postgresql://x:S3cr3t%21pw@h/db", "postgresql://x:***@h/db"},
		{"host=db.internal password=S3cr3t!pw sslmode=disable", "host=*** password=*** sslmode=disable"},
		{"GET https://api/x?token=tok_live_ABCDEF123&page=2", "GET https://api/x?token=***&page=2"},
		{`{"auth":"Bearer tok_live_ABCDEF123"}`, `{"auth":"***"}`},
		{"a deepvalue and alpha-key-1 in text", "a *** and *** in text"},
		// Shorter than MinSecretLen: not a secret by value.
		{"abc bob", "abc bob"},
		// The kind and source descriptors are not secrets.
		{"postgres task from store", "postgres task from store"},
		{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bob:hunter2!")), "Authorization: ***"},
		// Adjacent and repeated occurrences.
		{"S3cr3t!pwS3cr3t!pw|S3cr3t!pw", "***|***"},
	}
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestStringOverlappingSecrets(t *testing.T) {
	r := redact.FromSecrets("abcdef", "defghi", "xy")
	if got := r.String("--abcdefghi--"); got != "--***--" {
		t.Errorf("overlap = %q, want --***--", got)
	}
	if got := r.String("xy xy"); got != "xy xy" {
		t.Errorf("short secret masked: %q", got)
	}
	// A secret containing another is masked whole.
	r = redact.FromSecrets("pass", "password123")
	if got := r.String("is password123!"); got != "is ***!" {
		t.Errorf("nested = %q", got)
	}
	// JSON-escaped spelling.
	r = redact.FromSecrets(`we"ird\pw`)
	if got := r.String(`{"p":"we\"ird\\pw"}`); got != `{"p":"***"}` {
		t.Errorf("json-escaped = %q", got)
	}
	// Whitespace-only strings are not secrets.
	if got := redact.FromSecrets("     ").String("a     b"); got != "a     b" {
		t.Errorf("blank secret masked: %q", got)
	}
}

func TestPatternsWithoutKeychain(t *testing.T) {
	var r *redact.Redactor // nil behaves like Keys
	cases := []struct{ in, want string }{
		{"postgres://u:SECRET@h:5432/db", "postgres://u:***@h:5432/db"},
		{"dial postgresql://user:p%40ss@10.0.0.1/db failed", "dial postgresql://user:***@10.0.0.1/db failed"},
		{"https://host:8443/path@x", "https://host:8443/path@x"},
		{"user=u password='a b\\'c' host=h", "user=u password=*** host=h"},
		{"https://x/?db_password=abc&q=1", "https://x/?db_password=***&q=1"},
		{"Authorization: Bearer eyJhbGciOi.J9x-y_z", "Authorization: ***"},
		{"sent with Bearer eyJhbGciOi.J9x-y_z today", "sent with Bearer *** today"},
		{"uses Bearer authentication", "uses Bearer authentication"},
		{"plain text", "plain text"},
	}
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("nil.String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestValueNested(t *testing.T) {
	r := redact.New(keychain())
	in := map[string]any{
		"step": "load",
		"n":    int64(3),
		"ok":   true,
		"none": nil,
		"dsn":  "postgres://app_user:S3cr3t!pw@db.internal/noetl",
		"rows": []any{
			map[string]any{"id": int64(1), "note": "pw is S3cr3t!pw"},
			[]any{"tok_live_ABCDEF123", 2.5},
		},
		"headers":   map[string]any{"Authorization": "Bearer whatever", "Accept": "application/json"},
		"config":    map[string]any{"api_key": "k", "Password": map[string]any{"x": 1}, "token_type": "bearer"},
		"strs":      []string{"x", "deepvalue"},
		"smap":      map[string]string{"db_password": "anything", "host": "db.internal"},
		"header":    http.Header{"X-Api-Key": {"1", "2"}, "Accept": {"S3cr3t!pw"}},
		"maps":      []map[string]any{{"secret": "s"}},
		"bytes":     []byte("token tok_live_ABCDEF123"),
		"err":       errors.New("connect as app_user failed"),
		"S3cr3t!pw": "key holding a secret",
	}
	want := map[string]any{
		"step": "load",
		"n":    int64(3),
		"ok":   true,
		"none": nil,
		"dsn":  "***",
		"rows": []any{
			map[string]any{"id": int64(1), "note": "pw is ***"},
			[]any{"***", 2.5},
		},
		"headers": map[string]any{"Authorization": "***", "Accept": "application/json"},
		"config":  map[string]any{"api_key": "***", "Password": "***", "token_type": "bearer"},
		"strs":    []string{"x", "***"},
		"smap":    map[string]string{"db_password": "***", "host": "***"},
		"header":  http.Header{"X-Api-Key": {"***", "***"}, "Accept": {"***"}},
		"maps":    []map[string]any{{"secret": "***"}},
		"bytes":   []byte("token ***"),
		"err":     "connect as *** failed",
		"***":     "key holding a secret",
	}
	before := deepCopy(in)
	got := r.Value(in)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Value =\n%#v\nwant\n%#v", got, want)
	}
	if !reflect.DeepEqual(in, before) {
		t.Fatal("Value modified its input")
	}
}

type event struct {
	Type    string         `json:"event_type"`
	Payload map[string]any `json:"payload"`
	Attempt int            `json:"attempt"`
}

func TestValueStructsViaJSON(t *testing.T) {
	r := redact.New(keychain())
	got := r.Value(&event{Type: "task.failed", Payload: map[string]any{"error": "auth failed for S3cr3t!pw", "password": "x"}, Attempt: 2})
	want := map[string]any{"event_type": "task.failed", "attempt": "2", "payload": map[string]any{"error": "auth failed for ***", "password": "***"}}
	// Numbers decode as json.Number; compare through their text.
	m, ok := got.(map[string]any)
	if !ok {
		t.Fatalf("Value(struct) = %T, want map[string]any", got)
	}
	if n, ok := m["attempt"].(interface{ String() string }); ok {
		m["attempt"] = n.String()
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Value(struct) = %#v\nwant %#v", m, want)
	}
	// Unencodable values fall back to their printed form, masked.
	if got := r.Value(make(chan int)); !strings.HasPrefix(got.(string), "0x") {
		t.Errorf("Value(chan) = %#v", got)
	}
}

func TestKeys(t *testing.T) {
	in := map[string]any{
		"workload": map[string]any{"api_url": "https://x", "db_password": "pw", "Token": int64(5), "empty": nil},
		"list":     []any{map[string]any{"client_secret": "s", "user": "u"}},
		"note":     "S3cr3t!pw is not known without a keychain",
		"secret":   nil,
	}
	want := map[string]any{
		"workload": map[string]any{"api_url": "https://x", "db_password": "***", "Token": "***", "empty": nil},
		"list":     []any{map[string]any{"client_secret": "***", "user": "u"}},
		"note":     "S3cr3t!pw is not known without a keychain",
		"secret":   nil,
	}
	if got := redact.Keys(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys =\n%#v\nwant\n%#v", got, want)
	}
	if got := redact.Keys("scalar"); got != "scalar" {
		t.Errorf("Keys(scalar) = %#v", got)
	}
}

func TestEmptyKeychain(t *testing.T) {
	r := redact.New(nil)
	in := map[string]any{"a": "value", "password": "p"}
	if got := r.Value(in); !reflect.DeepEqual(got, map[string]any{"a": "value", "password": "***"}) {
		t.Fatalf("Value = %#v", got)
	}
}

func TestStringNoMatchDoesNotAllocate(t *testing.T) {
	r := redact.New(keychain())
	s := strings.Repeat("ordinary log line without secrets; ", 20)
	if n := testing.AllocsPerRun(100, func() { _ = r.String(s) }); n != 0 {
		t.Errorf("String without a match allocates %.0f times", n)
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]string:
		out := map[string]string{}
		for k, e := range x {
			out[k] = e
		}
		return out
	case []string:
		return append([]string(nil), x...)
	case []byte:
		return append([]byte(nil), x...)
	}
	return v
}

func BenchmarkValue(b *testing.B) {
	r := redact.New(keychain())
	v := map[string]any{"rows": []any{}, "dsn": "postgres://app_user:S3cr3t!pw@db.internal/noetl"}
	rows := make([]any, 200)
	for i := range rows {
		rows[i] = map[string]any{"id": int64(i), "name": "row name text", "password": "x"}
	}
	v["rows"] = rows
	for b.Loop() {
		r.Value(v)
	}
}

// TestSetExtraKeys: NOETL_LOGGING_REDACT_KEYS adds key names, matched as
// the built-in ones (a whole key or its last segments, any spelling), and
// never removes a built-in one.
func TestSetExtraKeys(t *testing.T) {
	t.Cleanup(func() { redact.SetExtraKeys(nil) })
	if redact.IsSecretKey("tenant_pin") {
		t.Fatal("tenant_pin is secret before the setting")
	}
	redact.SetExtraKeys([]string{"pin", " Customer-Ref "})
	for _, k := range []string{"pin", "tenant_pin", "TenantPin", "customer_ref", "X-Customer-Ref", "password"} {
		if !redact.IsSecretKey(k) {
			t.Errorf("%s is not secret with NOETL_LOGGING_REDACT_KEYS=pin,Customer-Ref", k)
		}
	}
	if redact.IsSecretKey("spinner") || redact.IsSecretKey("pin_code") {
		t.Error("a key that only contains the name, or starts with it, is secret")
	}
	if got := redact.Keys(map[string]any{"tenant_pin": "1234", "name": "x"}).(map[string]any); got["tenant_pin"] == "1234" || got["name"] != "x" {
		t.Errorf("masked %v", got)
	}
}

// A bare JSON scalar whose text holds a secret is masked and stays JSON
// (found by FuzzRedact: "10001" with the secret "0001" became "1***").
func TestBytesScalarStaysJSON(t *testing.T) {
	r := redact.FromSecrets("0001")
	for in, want := range map[string]string{
		"10001":   `"1` + redact.Mask + `"`,
		" 10001 ": `"1` + redact.Mask + `"`,
		"true":    "true",
		"42":      "42",
	} {
		got := r.Bytes([]byte(in))
		if string(got) != want || !json.Valid(got) {
			t.Errorf("Bytes(%q) = %q, want %q (valid JSON)", in, got, want)
		}
	}
	if got := string(r.Bytes([]byte("x10001"))); got != "x1"+redact.Mask {
		t.Errorf("text body: %q", got)
	}
}
