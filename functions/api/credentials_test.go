package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/store"
)

// useStore installs s as the instance's credential store for the test.
func useStore(t *testing.T, s credentials.Store) {
	t.Helper()
	setForTest(t, &credMu, &credStore, s)
}

// call runs one request through Credentials; path is the part after
// "/credentials".
func call(t *testing.T, method, path, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, "/credentials"+path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	Credentials(rec, req, path)
	var out map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, path, rec.Body.String(), err)
		}
	}
	return rec, out
}

const pgBody = `{"name": "pg_local", "kind": "postgres_credential", "description": "local db",
	"data": {"host": "127.0.0.1", "port": 55432, "user": "noetl", "password": "pg-S3cret", "database": "noetl"}}`

func TestCredentialsCreateGetListDelete(t *testing.T) {
	m := credentials.NewMemory()
	useStore(t, m)

	rec, out := call(t, http.MethodPost, "", pgBody)
	if rec.Code != http.StatusCreated || !reflect.DeepEqual(out, map[string]any{"name": "pg_local", "kind": "postgres", "grants": []any{}}) {
		t.Fatalf("POST = %d %v, want 201 {name pg_local, kind postgres, grants []}", rec.Code, out)
	}
	c, err := m.CredentialGet(context.Background(), "pg_local")
	if err != nil || c.Data["port"] != int64(55432) || c.Data["password"] != "pg-S3cret" || c.Description != "local db" {
		t.Fatalf("stored = %+v, %v", c, err)
	}
	rec, _ = call(t, http.MethodPost, "/", `{"name": "api", "kind": "http_bearer", "data": {"token": "tok-123456"}}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST api = %d %s", rec.Code, rec.Body)
	}

	// GET one: metadata and the data keys, never a value.
	rec, out = call(t, http.MethodGet, "/pg_local", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET = %d %s", rec.Code, rec.Body)
	}
	if out["name"] != "pg_local" || out["kind"] != "postgres" || out["description"] != "local db" ||
		!reflect.DeepEqual(out["keys"], []any{"database", "host", "password", "port", "user"}) {
		t.Errorf("GET view = %v", out)
	}
	for _, f := range []string{"created_at", "updated_at"} {
		if _, err := time.Parse(time.RFC3339Nano, out[f].(string)); err != nil {
			t.Errorf("%s = %v: %v", f, out[f], err)
		}
	}
	if _, ok := out["data"]; ok || strings.Contains(rec.Body.String(), "pg-S3cret") || strings.Contains(rec.Body.String(), "127.0.0.1") {
		t.Errorf("GET leaks data: %s", rec.Body)
	}

	// GET list: sorted, metadata only.
	rec, out = call(t, http.MethodGet, "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET list = %d %s", rec.Code, rec.Body)
	}
	list, _ := out["credentials"].([]any)
	if len(list) != 2 {
		t.Fatalf("list = %v", out)
	}
	first := list[0].(map[string]any)
	if first["name"] != "api" || first["kind"] != "http_bearer" || list[1].(map[string]any)["name"] != "pg_local" {
		t.Errorf("list order/content = %v", list)
	}
	for _, f := range []string{"name", "kind", "description", "created_at", "updated_at"} {
		if _, ok := first[f]; !ok {
			t.Errorf("list entry lacks %s: %v", f, first)
		}
	}
	if body := rec.Body.String(); strings.Contains(body, "tok-123456") || strings.Contains(body, "pg-S3cret") || strings.Contains(body, `"data"`) {
		t.Errorf("list leaks data: %s", body)
	}

	// DELETE, then 404s.
	rec, _ = call(t, http.MethodDelete, "/pg_local", "")
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("DELETE = %d %q, want 204 and no body", rec.Code, rec.Body)
	}
	rec, out = call(t, http.MethodDelete, "/pg_local", "")
	if rec.Code != http.StatusNotFound || out["error"] != "credential pg_local not found" {
		t.Fatalf("second DELETE = %d %v", rec.Code, out)
	}
	rec, _ = call(t, http.MethodGet, "/pg_local/", "")
	if rec.Code != http.StatusNotFound {
		t.Fatalf("GET deleted = %d", rec.Code)
	}
}

func TestCredentialsReplaceKeepsCreatedAt(t *testing.T) {
	useStore(t, credentials.NewMemory())
	call(t, http.MethodPost, "", `{"name": "k", "kind": "secret", "data": {"a": "1"}}`)
	_, v1 := call(t, http.MethodGet, "/k", "")
	time.Sleep(5 * time.Millisecond)
	rec, _ := call(t, http.MethodPost, "", `{"name": "k", "kind": "secret", "data": {"b": "2"}}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("replace = %d %s", rec.Code, rec.Body)
	}
	_, v2 := call(t, http.MethodGet, "/k", "")
	if v2["created_at"] != v1["created_at"] || v2["updated_at"] == v1["updated_at"] || !reflect.DeepEqual(v2["keys"], []any{"b"}) {
		t.Errorf("after replace %v (before %v)", v2, v1)
	}
}

func TestCredentialsCreateInvalid(t *testing.T) {
	m := credentials.NewMemory()
	useStore(t, m)
	cases := []struct {
		body string
		want []string
	}{
		{`{}`, []string{"name is required", "kind is required", "data is required"}},
		{`{"name": "x", "kind": "ldap", "data": {"a": "b"}}`, []string{`unknown kind "ldap" (one of gcs, http_basic, http_bearer, http_header, kafka, nats, postgres, pubsub, s3, secret)`}},
		{`{"name": "x", "kind": "secret", "data": "text"}`, []string{"data must be a JSON object of the secret fields", "data is required"}},
		{`{"name": "x", "kind": "secret", "data": {}}`, []string{"data is required"}},
		{`{"name": "a/b", "kind": "secret", "data": {"a": "b"}}`, []string{`name "a/b" may only contain letters, digits, '_' and '-'`}},
		{`{"name": "t", "kind": "http_bearer", "data": {"tok": "b"}}`, []string{"an http_bearer credential needs a string token in data"}},
		{`{"name": "p", "kind": "postgres", "data": {"user": "u"}}`, []string{"a postgres credential needs host (or db_host) or dsn in data"}},
		{`not json`, []string{"body must be a JSON object"}},
		{`["x"]`, []string{"body must be a JSON object"}},
		{`{"name": "x", "kind": "secret", "data": {"a": "` + strings.Repeat("x", maxCredentialBody) + `"}}`, []string{"body is larger than 1 MiB"}},
	}
	for _, c := range cases {
		rec, out := call(t, http.MethodPost, "", c.body)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("POST %.60s = %d %s, want 400", c.body, rec.Code, rec.Body)
			continue
		}
		msg, _ := out["error"].(string)
		if !strings.HasPrefix(msg, "invalid credential: ") {
			t.Errorf("POST %.60s: error = %q", c.body, msg)
		}
		problems, _ := out["problems"].([]any)
		joined := ""
		for _, p := range problems {
			joined += p.(string) + "\n"
		}
		for _, w := range c.want {
			if !strings.Contains(joined, w) {
				t.Errorf("POST %.60s: problems %q lack %q", c.body, joined, w)
			}
		}
	}
	if list, _ := m.CredentialList(context.Background()); len(list) != 0 {
		t.Errorf("invalid requests stored %v", list)
	}
}

func TestCredentialsRoutes(t *testing.T) {
	useStore(t, credentials.NewMemory())
	cases := []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodPut, "", http.StatusMethodNotAllowed, "GET, POST"},
		{http.MethodDelete, "/", http.StatusMethodNotAllowed, "GET, POST"},
		{http.MethodPatch, "/x", http.StatusMethodNotAllowed, "GET, DELETE"},
		{http.MethodPost, "/x", http.StatusMethodNotAllowed, "GET, DELETE"},
		{http.MethodGet, "/a/b", http.StatusNotFound, ""},
		{http.MethodGet, "/missing", http.StatusNotFound, ""},
		{http.MethodGet, "/", http.StatusOK, ""},
	}
	for _, c := range cases {
		rec, out := call(t, c.method, c.path, "")
		if rec.Code != c.code || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s /credentials%s = %d Allow %q %v; want %d Allow %q", c.method, c.path, rec.Code, rec.Header().Get("Allow"), out, c.code, c.allow)
		}
	}
	_, out := call(t, http.MethodGet, "", "")
	if list, ok := out["credentials"].([]any); !ok || len(list) != 0 {
		t.Errorf("empty list = %v, want credentials: []", out)
	}
}

// brokenStore fails every call like an unreachable Firestore.
type brokenStore struct{}

var errDown = errors.New("firestore: unavailable")

func (brokenStore) CredentialPut(context.Context, credentials.Credential) error { return errDown }
func (brokenStore) CredentialGet(context.Context, string) (*credentials.Credential, error) {
	return nil, errDown
}
func (brokenStore) CredentialInfo(context.Context, string) (*credentials.Summary, error) {
	return nil, errDown
}
func (brokenStore) CredentialList(context.Context) ([]credentials.Summary, error) {
	return nil, errDown
}
func (brokenStore) CredentialDelete(context.Context, string) error { return errDown }

func TestCredentialsStoreFailure(t *testing.T) {
	useStore(t, brokenStore{})
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "", `{"name": "k", "kind": "secret", "data": {"a": "b"}}`},
		{http.MethodGet, "", ""},
		{http.MethodGet, "/k", ""},
		{http.MethodDelete, "/k", ""},
	} {
		rec, out := call(t, c.method, c.path, c.body)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(out["error"].(string), "unavailable") {
			t.Errorf("%s %s = %d %v, want 503", c.method, c.path, rec.Code, out)
		}
	}
}

func TestCredentialStoreReturnsInjected(t *testing.T) {
	m := credentials.NewMemory()
	useStore(t, m)
	s, err := CredentialStore(context.Background())
	if err != nil || s != m {
		t.Fatalf("CredentialStore = %v, %v; want the injected store", s, err)
	}
}

// answer decodes a recorded {"error", ...} answer.
func answer(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("answer %q is not JSON: %v", rec.Body.String(), err)
	}
	return out
}

// The shared answers keep each route's status codes and bodies: 500 when
// the runtime cannot be opened, 404 with the route's message or the
// route's own mapping after a store read, 400 for a body that is not JSON
// or a document that does not validate.
func TestSharedAnswers(t *testing.T) {
	rec := httptest.NewRecorder()
	if v, ok := opened(context.Background(), rec, func(context.Context) (int, error) { return 0, errors.New("no runtime") }); ok || v != 0 ||
		rec.Code != http.StatusInternalServerError || answer(t, rec)["error"] != "no runtime" {
		t.Errorf("opened failing = %v %v, %d %s", v, ok, rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	if v, ok := opened(context.Background(), rec, func(context.Context) (string, error) { return "deps", nil }); !ok || v != "deps" || rec.Body.Len() != 0 {
		t.Errorf("opened = %v %v, wrote %s", v, ok, rec.Body)
	}

	rec = httptest.NewRecorder()
	if !found(rec, nil, store.ErrNotFound, "x not found", unavailable) || rec.Body.Len() != 0 {
		t.Errorf("found(nil) wrote %s", rec.Body)
	}
	rec = httptest.NewRecorder()
	if found(rec, errors.Join(errors.New("lookup"), store.ErrNotFound), store.ErrNotFound, "subscription s not registered", subscriptionError) ||
		rec.Code != http.StatusNotFound || answer(t, rec)["error"] != "subscription s not registered" {
		t.Errorf("found(not found) = %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	if found(rec, errors.New("firestore: unavailable"), store.ErrNotFound, "x not found", unavailable) ||
		rec.Code != http.StatusServiceUnavailable || answer(t, rec)["error"] != "firestore: unavailable" {
		t.Errorf("found(down) = %d %s", rec.Code, rec.Body)
	}

	rec = httptest.NewRecorder()
	var req CancelRequest
	if decodeJSON(rec, []byte(`{"reason": 3`), &req) || rec.Code != http.StatusBadRequest ||
		!strings.HasPrefix(answer(t, rec)["error"].(string), "invalid JSON body: ") {
		t.Errorf("decodeJSON(bad) = %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	if !decodeJSON(rec, []byte(`{"reason": "why"}`), &req) || req.Reason != "why" || rec.Body.Len() != 0 {
		t.Errorf("decodeJSON = %+v, wrote %s", req, rec.Body)
	}

	_, err := dsl.Load([]byte("apiVersion: noetl.io/v2\nkind: Playbook\nworkflow: 3\n"), "playbook")
	rec = httptest.NewRecorder()
	if !invalidDocument(rec, err, "invalid playbook p") || rec.Code != http.StatusBadRequest {
		t.Fatalf("invalidDocument(%v) = %d %s", err, rec.Code, rec.Body)
	}
	if out := answer(t, rec); out["error"] != "invalid playbook p" || out["message"] != err.Error() || len(out["problems"].([]any)) == 0 {
		t.Errorf("invalidDocument body %v", out)
	}
	rec = httptest.NewRecorder()
	if invalidDocument(rec, errors.New("either path or playbook is required"), "invalid playbook") || rec.Body.Len() != 0 {
		t.Errorf("invalidDocument(plain error) wrote %s", rec.Body)
	}
}
