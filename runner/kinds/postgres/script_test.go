package postgres

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/types"
)

// TestAuthCredentialName: `auth: pg_k8s` (a credential name, no keychain)
// resolves through the credential store.
func TestAuthCredentialName(t *testing.T) {
	store := credentials.NewMemory()
	ctx := context.Background()
	if err := store.CredentialPut(ctx, credentials.Credential{Name: "pg_k8s", Kind: "postgres",
		Data: M{"host": "127.0.0.1", "port": testPort, "user": "postgres", "password": "x", "database": "postgres", "sslmode": "disable"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.CredentialPut(ctx, credentials.Credential{Name: "api", Kind: "http_bearer", Data: M{"token": "t"}}); err != nil {
		t.Fatal(err)
	}
	tl := newTool(t, Options{Credentials: store})
	cfg := M{"auth": "pg_k8s", "command": "SELECT current_user AS u"}
	eq(t, ok(t, tl.run(ctx, request{Config: cfg}))["rows"], L{M{"u": "postgres"}})
	if cfg["auth"] != "pg_k8s" {
		t.Fatal("Exec modified the task's config")
	}
	for name, msg := range map[string]string{"missing": `credential "missing" not found`, "api": "kind http_bearer cannot be used"} {
		o := tl.run(ctx, request{Config: M{"auth": name, "command": "SELECT 1"}})
		if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, msg) {
			t.Errorf("%s: %+v", name, o.Error)
		}
	}
	// A DSN in auth is still a DSN.
	eq(t, ok(t, tl.run(ctx, request{Config: M{"auth": testDSN, "command": "SELECT 1 AS one"}}))["rows"], L{M{"one": int64(1)}})
}

// TestScriptSQL: `script:` gives the SQL (file source relative to the
// scripts' base directory; it wins over command).
func TestScriptSQL(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "q.sql"), []byte("CREATE TEMP TABLE s (a int); INSERT INTO s VALUES (1), (2); SELECT sum(a) AS total FROM s;"), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := newTool(t, Options{Scripts: script.Options{BaseDir: dir}})
	r := ok(t, tl.run(context.Background(), request{Config: M{"connection": testDSN, "command": "SELECT 'ignored'", "script": M{"uri": "q.sql", "source": M{"type": "file"}}}}))
	eq(t, r["rows"], L{M{"total": int64(3)}})
	o := tl.run(context.Background(), request{Config: M{"connection": testDSN, "script": M{"uri": "none.sql", "source": M{"type": "file"}}}})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("%+v", o.Error)
	}
	r = ok(t, tl.run(context.Background(), request{Config: M{"connection": testDSN, "script": M{"source": M{"type": "inline", "code": "SELECT 7 AS n"}}}}))
	eq(t, r["rows"], L{M{"n": int64(7)}})
}

// TestAlternateSQLSpellings: NoETL's commands list and base64 spellings.
func TestAlternateSQLSpellings(t *testing.T) {
	tl := newTool(t, Options{})
	ctx := context.Background()
	r := ok(t, tl.run(ctx, request{Config: M{"connection": testDSN, "commands": L{"CREATE TEMP TABLE c (a int);", "INSERT INTO c VALUES (4)", "SELECT a FROM c"}}}))
	eq(t, r["rows"], L{M{"a": int64(4)}})
	r = ok(t, tl.run(ctx, request{Config: M{"connection": testDSN, "command_b64": "U0VMRUNUIDUgQVMgbg=="}})) // SELECT 5 AS n
	eq(t, r["rows"], L{M{"n": int64(5)}})
	for _, cfg := range []M{{"connection": testDSN, "command_b64": "%%%"}, {"connection": testDSN, "commands": L{1}}} {
		if o := tl.run(ctx, request{Config: cfg}); o.Status != types.StatusError || o.Error.Kind != "config" {
			t.Errorf("%v: %+v", cfg, o.Error)
		}
	}
}

// TestCredentialSpelling: `credential:` is NoETL's spelling of auth (the
// validator accepted it while the tool read only auth: the task failed
// with "no connection"); it resolves like auth, and both at once is a
// config error.
func TestCredentialSpelling(t *testing.T) {
	store := credentials.NewMemory()
	ctx := context.Background()
	if err := store.CredentialPut(ctx, credentials.Credential{Name: "pg_local", Kind: "postgres",
		Data: M{"host": "127.0.0.1", "port": testPort, "user": "postgres", "password": "x", "database": "postgres", "sslmode": "disable"}}); err != nil {
		t.Fatal(err)
	}
	tl := newTool(t, Options{Credentials: store})
	eq(t, ok(t, tl.run(ctx, request{Config: M{"credential": "pg_local", "sql": "SELECT current_user AS u"}}))["rows"], L{M{"u": "postgres"}})
	o := tl.run(ctx, request{Config: M{"credential": "pg_local", "auth": "pg_local", "command": "SELECT 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "auth and credential are spellings of the same key") {
		t.Fatalf("both spellings: %+v", o.Error)
	}
	o = tl.run(ctx, request{Config: M{"credential": "pg_local", "comand": "SELECT 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, `key "comand" is not read by kind postgres`) {
		t.Fatalf("unknown key: %+v", o.Error)
	}
	// The other NoETL spellings the validator accepts reach the tool too.
	for _, cfg := range []M{
		{"credential": "pg_local", "cmd": "SELECT 7 AS n"},
		{"credential": "pg_local", "queries": L{"SELECT 7 AS n"}},
		{"credential": "pg_local", "cmds": L{"SELECT 7 AS n"}},
		{"db_conn_string": testDSN, "command": "SELECT 7 AS n"},
		{"host": "127.0.0.1", "port": testPort, "user": "postgres", "database": "postgres", "sslmode": "disable", "command": "SELECT 7 AS n"},
	} {
		eq(t, ok(t, tl.run(ctx, request{Config: cfg}))["rows"], L{M{"n": int64(7)}})
	}
}
