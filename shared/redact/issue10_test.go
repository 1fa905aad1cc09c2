package redact_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/redact"
)

// Issue 10 item 6: what redaction used to miss.

func TestPatternsIssue10(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("svc:p4ss-w0rd"))
	cases := []struct{ name, in, want string }{
		// URL query secrets.
		{"api_key query", "GET https://api.example.com/v1/items?api_key=AbC123xyz&page=2", "GET https://api.example.com/v1/items?api_key=***&page=2"},
		{"token query", "https://h/cb?code=1&token=abcdef", "https://h/cb?code=1&token=***"},
		{"access_token first", "https://h/x?access_token=ya29.a0Af&x=1", "https://h/x?access_token=***&x=1"},
		{"key query", "https://maps.example.com/api?key=AIzaSyD-123", "https://maps.example.com/api?key=***"},
		{"subscription key query", "https://h/q?subscription-key=0123abcd", "https://h/q?subscription-key=***"},
		{"sas credential", "https://b.example/o?X-Amz-Credential=AKIA%2F2024&X-Amz-Date=1", "https://b.example/o?X-Amz-Credential=***&X-Amz-Date=1"},
		{"form body", "grant_type=password&username=bob&password=hunter22&client_secret=cs_99", "grant_type=password&username=bob&password=***&client_secret=***"},
		{"dsn keyword", "host=db user=app pwd=zz99 dbname=x", "host=db user=app pwd=*** dbname=x"},
		{"query value named like a secret is kept", "https://h/search?q=password&sort=key", "https://h/search?q=password&sort=key"},
		{"monkey is not a key", "monkey=banana&keyboard=qwerty", "monkey=banana&keyboard=qwerty"},
		// Basic and Bearer values.
		{"basic header", "Authorization: Basic " + basic, "Authorization: ***"},
		{"basic in prose", "curl -H 'X: Basic " + basic + "' https://h", "curl -H 'X: Basic ***' https://h"},
		{"basic authentication words", "uses basic authentication here", "uses basic authentication here"},
		{"bearer mixed case", "bearer AbCdEfGhIjKl", "bearer ***"},
		{"bearer prose", "Bearer authentication required", "Bearer authentication required"},
		// JWTs anywhere.
		{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fw expired", "token *** expired"},
		// Secret-named members and header lines inside text (error maps in logs).
		{"json in error", `upstream said {"error": "bad", "password": "x1y2", "user": "u"}`, `upstream said {"error": "bad", "password": "***", "user": "u"}`},
		{"json number secret", `{"pin": 1, "api_key": 123456}`, `{"pin": 1, "api_key": ***}`},
		{"header lines", "POST /x\nContent-Type: json\nOcp-Apim-Subscription-Key: 0f0f0f0f\nX-Api-Key: k-123\n", "POST /x\nContent-Type: json\nOcp-Apim-Subscription-Key: ***\nX-Api-Key: ***\n"},
		{"yaml line", "db:\n  dsn: postgres://u:p@h/db\n  host: h", "db:\n  dsn: ***\n  host: h"},
	}
	for _, c := range cases {
		if got := redact.Keys(c.in); got != c.want {
			t.Errorf("%s: Keys(%q)\n got %q\nwant %q", c.name, c.in, got, c.want)
		}
	}
}

func TestKeysIssue10(t *testing.T) {
	in := map[string]any{
		"key":                       "k-1",
		"auth":                      "pg_local",
		"credentials":               map[string]any{"user": "u", "password": "p"},
		"dsn":                       "postgres://u:p@h/db",
		"pwd":                       "x",
		"pass":                      "y",
		"passphrase":                "z",
		"access_key":                "AKIA",
		"jwt":                       "eyJ",
		"Ocp-Apim-Subscription-Key": "0f0f",
		"x-api-key":                 "abc",
		"monkey":                    "banana",
		"keyboard":                  "qwerty",
		"token_type":                "bearer",
		"$ref":                      map[string]any{"key": "noetl/env=dev/x.feather", "uri": "noetl://x", "token": "t"},
	}
	want := map[string]any{
		"key":                       "***",
		"auth":                      "***",
		"credentials":               "***",
		"dsn":                       "***",
		"pwd":                       "***",
		"pass":                      "***",
		"passphrase":                "***",
		"access_key":                "***",
		"jwt":                       "***",
		"Ocp-Apim-Subscription-Key": "***",
		"x-api-key":                 "***",
		"monkey":                    "banana",
		"keyboard":                  "qwerty",
		"token_type":                "bearer",
		// A result reference's object key stays readable (NoETL result storage RFC).
		"$ref": map[string]any{"key": "noetl/env=dev/x.feather", "uri": "noetl://x", "token": "***"},
	}
	if got := redact.Keys(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("Keys =\n%#v\nwant\n%#v", got, want)
	}
}

func TestCredentialMasksEveryField(t *testing.T) {
	// The values of ordinary-named fields of a credential are secrets too.
	r := redact.FromCredential(map[string]any{
		"kind": "postgres", "source": "store",
		"host": "db-7.corp.internal", "user": "svc_reporting", "database": "finance_prod",
		"password": "Pw-9912!", "port": 5432,
		"headers": map[string]any{"X-Tenant": "tenant-4471"},
	})
	cases := []struct{ in, want string }{
		{"connect svc_reporting@db-7.corp.internal/finance_prod failed", "connect ***@***/*** failed"},
		{"tenant tenant-4471 rejected", "tenant *** rejected"},
		{"the postgres task from store", "the postgres task from store"},
		{"port 5432", "port 5432"},
		// Escaped spellings: URL, JSON and base64.
		{"pw=Pw-9912%21", "pw=***"},
		{"b64 " + base64.StdEncoding.EncodeToString([]byte("Pw-9912!")), "b64 ***"},
	}
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	v := r.Value(map[string]any{"result": map[string]any{"note": "ran as svc_reporting"}, "n": 1})
	if !reflect.DeepEqual(v, map[string]any{"result": map[string]any{"note": "ran as ***"}, "n": 1}) {
		t.Errorf("Value = %#v", v)
	}
}

func TestError(t *testing.T) {
	r := redact.FromSecrets("hunter22")
	if r.Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
	base := fs.ErrNotExist
	err := r.Error(errors.Join(errors.New("login hunter22 failed"), base))
	if strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "login *** failed") {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is lost through Error")
	}
	var nilRedactor *redact.Redactor
	if got := nilRedactor.Error(errors.New("dial postgres://u:pw99@h/db")); got.Error() != "dial postgres://u:***@h/db" {
		t.Errorf("nil redactor Error = %q", got)
	}
}

func TestBytes(t *testing.T) {
	r := redact.FromSecrets("tok_123456")
	body := []byte(`{"args": {"url": "https://h/?api_key=zz", "n": 12345678901234567890, "auth": "x"}, "note": "uses tok_123456"}`)
	got := r.Bytes(body)
	want := `{"args":{"auth":"***","n":12345678901234567890,"url":"https://h/?api_key=***"},"note":"uses ***"}`
	if string(got) != want {
		t.Errorf("Bytes(json)\n got %s\nwant %s", got, want)
	}
	if !bytes.Contains(body, []byte("tok_123456")) {
		t.Error("Bytes modified its input")
	}
	if got := r.Bytes([]byte("plain tok_123456 text")); string(got) != "plain *** text" {
		t.Errorf("Bytes(text) = %q", got)
	}
	clean := []byte(`{"a":1}`)
	if got := r.Bytes(clean); &got[0] != &clean[0] {
		t.Error("Bytes copied a body with nothing to mask")
	}
	if got := r.Bytes([]byte(`{"a": "tok_123456"`)); string(got) != `{"a": "***"` {
		t.Errorf("Bytes(invalid json) = %q", got)
	}
}
