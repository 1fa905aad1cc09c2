package credentials_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/template"
)

// seeded returns a memory store holding one credential of each kind.
func seeded(t *testing.T) *credentials.Memory {
	t.Helper()
	m := credentials.NewMemory()
	for _, c := range []credentials.Credential{
		{Name: "pg_local", Kind: "postgres", Data: map[string]any{"host": "127.0.0.1", "port": 55432, "user": "noetl", "password": "pg-S3cret", "database": "noetl"}},
		{Name: "api_token", Kind: "http_bearer", Data: map[string]any{"token": "tok-123456"}},
		{Name: "basic_auth", Kind: "http_basic", Data: map[string]any{"user": "bob", "password": "hunter22"}},
		{Name: "key_header", Kind: "http_header", Data: map[string]any{"header": "X-Api-Key", "value": "key-987654"}},
		{Name: "multi_header", Kind: "http_header", Data: map[string]any{"headers": map[string]any{"X-A": "aaaa1", "X-B": "bbbb2"}}},
		{Name: "generic", Kind: "secret", Data: map[string]any{"client_id": "cid", "client_secret": "csecret-1"}},
	} {
		if err := m.CredentialPut(context.Background(), c); err != nil {
			t.Fatalf("seed %s: %v", c.Name, err)
		}
	}
	return m
}

func decl(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestResolveKinds(t *testing.T) {
	s := seeded(t)
	decls := []any{
		decl("name", "pg_local", "kind", "postgres"),
		decl("name", "pg", "kind", "postgres_credential", "credential", "pg_local"),
		decl("name", "api", "kind", "bearer", "credential", "api_token"),
		decl("name", "basic", "credential", "basic_auth"),
		decl("name", "hdr", "kind", "http_header", "credential", "key_header"),
		decl("name", "hdrs", "credential", "multi_header"),
		decl("name", "generic"),
	}
	got, err := credentials.Resolve(context.Background(), s, decls, nil)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	pg := map[string]any{"kind": "postgres", "source": "store", "host": "127.0.0.1", "port": int64(55432), "user": "noetl", "password": "pg-S3cret", "database": "noetl"}
	want := map[string]any{
		"pg_local": pg,
		"pg":       pg,
		"api": map[string]any{"kind": "http_bearer", "source": "store", "token": "tok-123456",
			"headers": map[string]any{"Authorization": "Bearer tok-123456"}},
		"basic": map[string]any{"kind": "http_basic", "source": "store", "user": "bob", "username": "bob", "password": "hunter22",
			"headers": map[string]any{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:hunter22"))}},
		"hdr": map[string]any{"kind": "http_header", "source": "store", "header": "X-Api-Key", "value": "key-987654",
			"headers": map[string]any{"X-Api-Key": "key-987654"}},
		"hdrs": map[string]any{"kind": "http_header", "source": "store",
			"headers": map[string]any{"X-A": "aaaa1", "X-B": "bbbb2"}},
		"generic": map[string]any{"kind": "secret", "source": "store", "client_id": "cid", "client_secret": "csecret-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve =\n%#v\nwant\n%#v", got, want)
	}
	// Entries are independent copies.
	got["pg"].(map[string]any)["password"] = "changed"
	if got["pg_local"].(map[string]any)["password"] != "pg-S3cret" {
		t.Fatal("entries share their data")
	}
}

func TestResolveMissingNamesEveryCredential(t *testing.T) {
	s := seeded(t)
	decls := []any{
		decl("name", "pg_local", "kind", "postgres"),
		decl("name", "warehouse", "kind", "postgres"),
		decl("name", "api", "credential", "nope_token"),
	}
	got, err := credentials.Resolve(context.Background(), s, decls, nil)
	if !errors.Is(err, credentials.ErrNotFound) {
		t.Fatalf("Resolve error = %v, want ErrNotFound", err)
	}
	msg := err.Error()
	for _, want := range []string{`keychain warehouse: credential "warehouse" not found`, `keychain api: credential "nope_token" not found`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "pg_local") {
		t.Errorf("error names the resolvable entry: %q", msg)
	}
	var re *credentials.ResolveError
	if !errors.As(err, &re) || re.Name != "warehouse" || re.Credential != "warehouse" {
		t.Errorf("errors.As ResolveError = %+v", re)
	}
	if got == nil {
		t.Error("Resolve returned a nil map")
	}
}

func TestResolveInvalidDeclarations(t *testing.T) {
	s := seeded(t)
	cases := []struct {
		decl any
		want string
	}{
		{"pg_local", "keychain[0]: a keychain entry must be a mapping"},
		{decl("kind", "postgres"), "keychain[0]: name is required"},
		{decl("name", "x", "kind", "ldap"), `keychain x: unknown kind "ldap"`},
		{decl("name", "x", "kind", 5), "keychain x: kind must be a string"},
		{decl("name", "x", "kind", "secret_manager"), `keychain x: kind "secret_manager" is not supported`},
		{decl("name", "x", "map", map[string]any{"api_key": "projects/p/secrets/s"}), "keychain x: `map` (Secret Manager secret paths) is not supported"},
		{decl("name", "x", "credential", "pg_local", "value", map[string]any{"a": "b"}), "either credential"},
		{decl("name", "x", "kind", "http_bearer", "credential", "pg_local"), `keychain x: declared kind http_bearer but credential "pg_local" is postgres`},
		{decl("name", "x", "credential", "bad/name"), `keychain x: credential "bad/name"`},
		{decl("name", "x", "credential", ""), "credential must render to a credential name"},
		{decl("name", "x", "value", "text"), "value must render to a non-empty mapping"},
		{decl("name", "x", "kind", "http_bearer", "value", map[string]any{"tok": "a"}), "inline value: an http_bearer credential needs a string token"},
	}
	for _, c := range cases {
		_, err := credentials.Resolve(context.Background(), s, []any{c.decl}, nil)
		if !errors.Is(err, credentials.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Resolve(%v) = %v; want ErrInvalid containing %q", c.decl, err, c.want)
		}
	}
}

func TestResolveNoStore(t *testing.T) {
	got, err := credentials.Resolve(context.Background(), nil, []any{decl("name", "x", "value", map[string]any{"a": "bcde"})}, nil)
	if err != nil || got["x"].(map[string]any)["a"] != "bcde" {
		t.Fatalf("inline without store = %v, %v", got, err)
	}
	_, err = credentials.Resolve(context.Background(), nil, []any{decl("name", "pg")}, nil)
	if err == nil || errors.Is(err, credentials.ErrNotFound) || !strings.Contains(err.Error(), "no credential store") {
		t.Fatalf("stored credential without store = %v", err)
	}
	got, err = credentials.Resolve(context.Background(), nil, nil, nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no declarations = %#v, %v", got, err)
	}
}

type failingStore struct{ credentials.Store }

func (failingStore) CredentialGet(context.Context, string) (*credentials.Credential, error) {
	return nil, errors.New("firestore: unavailable")
}

func TestResolveStoreFailureIsNotNotFound(t *testing.T) {
	_, err := credentials.Resolve(context.Background(), failingStore{}, []any{decl("name", "pg")}, nil)
	if err == nil || errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) ||
		!strings.Contains(err.Error(), `keychain pg: credential "pg": firestore: unavailable`) {
		t.Fatalf("store failure = %v", err)
	}
}

// TestResolvePlaybook resolves a keychain as dsl.Load gives it (the list
// of mappings of the playbook below) with the engine's template renderer,
// the way the api will at execution start, and checks what templates and
// the redactor then see.
//
//	workload: {pg_cred: pg_local, use_api: false, api_user: svc, api_pass: inline-Pa55}
//	keychain:
//	  - {name: db, kind: postgres, credential: "{{ workload.pg_cred }}"}
//	  - {name: api, kind: http_bearer, credential: api_token, when: "{{ workload.use_api }}"}
//	  - name: partner
//	    kind: http_basic
//	    value: {username: "{{ workload.api_user }}", password: "{{ workload.api_pass }}"}
func TestResolvePlaybook(t *testing.T) {
	wl := map[string]any{"pg_cred": "pg_local", "use_api": false, "api_user": "svc", "api_pass": "inline-Pa55"}
	keychain := []any{
		decl("name", "db", "kind", "postgres", "credential", "{{ workload.pg_cred }}"),
		decl("name", "api", "kind", "http_bearer", "credential", "api_token", "when", "{{ workload.use_api }}"),
		decl("name", "partner", "kind", "http_basic", "value",
			map[string]any{"username": "{{ workload.api_user }}", "password": "{{ workload.api_pass }}"}),
	}
	scope := template.NewScope(template.ScopeParams{Workload: wl, ExecutionID: "e1"})
	render := func(v any) (any, error) { return template.RenderValue(v, scope) }
	kc, err := credentials.Resolve(context.Background(), seeded(t), keychain, render)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if _, ok := kc["api"]; ok {
		t.Error("entry with a false when was resolved")
	}
	if p := kc["partner"].(map[string]any); p["source"] != credentials.SourceInline || p["username"] != "svc" {
		t.Errorf("partner = %#v", p)
	}

	// Templates read keychain.<name>.<field>.
	ts := template.NewScope(template.ScopeParams{Workload: wl, Keychain: kc})
	for tmpl, want := range map[string]any{
		"{{ keychain.db.password }}":                               "pg-S3cret",
		"{{ keychain.db.port }}":                                   int64(55432),
		"postgres://{{ keychain.db.user }}@{{ keychain.db.host }}": "postgres://noetl@127.0.0.1",
		"{{ keychain.partner.headers.Authorization }}":             "Basic " + base64.StdEncoding.EncodeToString([]byte("svc:inline-Pa55")),
	} {
		got, err := template.Render(tmpl, ts)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Render(%s) = %#v, %v; want %#v", tmpl, got, err, want)
		}
	}

	// The redactor built from it masks every secret but not the kinds.
	r := redact.New(kc)
	line := "connect postgres://noetl:pg-S3cret@127.0.0.1:55432/noetl as svc/inline-Pa55 (kind postgres, source store)"
	want := "connect postgres://***:***@***:55432/*** as svc/*** (kind postgres, source store)"
	if got := r.String(line); got != want {
		t.Errorf("redacted\n got %q\nwant %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	err := credentials.Credential{Name: "a b", Kind: "nope"}.Validate()
	if !errors.Is(err, credentials.ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	var list interface{ Unwrap() []error }
	if !errors.As(err, &list) || len(list.Unwrap()) != 3 {
		t.Fatalf("Validate problems = %v, want 3 (name, kind, data)", err)
	}
	want := "name \"a b\" may only contain letters, digits, '_' and '-'\nunknown kind \"nope\" (one of gcs, http_basic, http_bearer, http_header, kafka, nats, postgres, pubsub, s3, secret)\ndata is required (a non-empty mapping of the secret fields)"
	if err.Error() != want {
		t.Errorf("Validate message =\n%s\nwant\n%s", err, want)
	}
	ok := credentials.Credential{Name: "pg-1_A", Kind: "PostgreSQL", Data: map[string]any{"dsn": "postgres://x"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
}

func TestNormalizeKind(t *testing.T) {
	for in, want := range map[string]string{"postgres": "postgres", " Postgres_Credential ": "postgres", "pg": "postgres",
		"bearer": "http_bearer", "basic": "http_basic", "header": "http_header", "credential": "secret", "secret": "secret"} {
		if got, ok := credentials.NormalizeKind(in); !ok || got != want {
			t.Errorf("NormalizeKind(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := credentials.NormalizeKind("oauth2"); ok {
		t.Error("oauth2 is not a supported kind")
	}
}
