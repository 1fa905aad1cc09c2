//go:build cgo

package transfer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/runner/kinds/internal/pgtest"
	"github.com/noetl/gcpengine/runner/kinds/postgres"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/results"
	httptool "github.com/noetl/gcpengine/shared/tools/http"
	"github.com/noetl/gcpengine/shared/types"
)

type M = map[string]any
type L = []any

var (
	testDSN  string
	testPort int
)

// The tests run against a throwaway PostgreSQL server (pgtest), a DuckDB
// file in a temporary directory and an httptest server serving the
// fixture service's /posts.
func TestMain(m *testing.M) {
	dsn, port, stop, err := pgtest.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "transfer tests need a local PostgreSQL server: %v\n", err)
		os.Exit(1)
	}
	testDSN, testPort = dsn, port
	code := m.Run()
	stop()
	os.Exit(code)
}

// posts is the fixture service's GET /posts: 100 posts, 10 per userId.
func posts() []M {
	out := make([]M, 100)
	for i := range out {
		id := i + 1
		out[i] = M{"userId": (id-1)/10 + 1, "id": id, "title": fmt.Sprintf("title %d", id), "body": fmt.Sprintf("body of post %d", id)}
	}
	return out
}

func fixtureServer(t *testing.T) *httptest.Server {
	var flaky int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/posts":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(posts())
		case "/wrapped":
			if r.Header.Get("Authorization") != "Bearer tok-1" {
				http.Error(w, `{"detail": "unauthorized"}`, http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(M{"result": M{"items": posts()[:5]}})
		case "/down":
			flaky++
			http.Error(w, "down", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

type env struct {
	tool  *Tool
	pg    *postgres.Tool
	duck  *duckdb.Tool
	store *credentials.Memory
	// ctx is the context tasks run in (nil: context.Background()).
	ctx context.Context
}

func newEnv(t *testing.T) *env {
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "pg_local", Kind: "postgres",
		Data: M{"host": "127.0.0.1", "port": testPort, "user": "postgres", "password": "unused", "database": "postgres", "sslmode": "disable"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "api_token", Kind: "http_bearer", Data: M{"token": "tok-1"}}); err != nil {
		t.Fatal(err)
	}
	pg := postgres.New(postgres.Options{Credentials: store})
	duck := duckdb.New(duckdb.Options{})
	t.Cleanup(pg.Close)
	t.Cleanup(duck.Close)
	return &env{tool: New(Options{Postgres: pg, DuckDB: duck, HTTP: httptool.New(httptool.Options{}), Credentials: store}), pg: pg, duck: duck, store: store}
}

func (e *env) sql(t *testing.T, q string) M {
	t.Helper()
	o := e.pg.Exec(context.Background(), nil, M{"connection": testDSN, "command": q}, 0)
	if o.Status != types.StatusOK {
		t.Fatalf("%s: %+v", q, o.Error)
	}
	return o.Result.(M)
}

func (e *env) run(t *testing.T, cfg M) types.Outcome {
	t.Helper()
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return e.tool.Exec(ctx, nil, cfg, 0)
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s: %+v pg %+v", o.Status, o.Error, o.PG)
	}
	return o.Result.(M)
}

// TestHTTPToPostgresConformance is http_to_postgres_transfer.yaml: the
// table its create_table step makes, the transfer step's source, target
// and mapping (auth a credential name), 100 posts in batches.
func TestHTTPToPostgresConformance(t *testing.T) {
	e := newEnv(t)
	srv := fixtureServer(t)
	e.sql(t, `DROP TABLE IF EXISTS public.http_to_postgres_transfer;
		CREATE TABLE public.http_to_postgres_transfer (id SERIAL PRIMARY KEY, post_id INTEGER, user_id INTEGER, title TEXT, body TEXT, fetched_at TIMESTAMPTZ DEFAULT NOW())`)
	r := ok(t, e.run(t, M{
		"source":     M{"type": "http", "url": srv.URL + "/posts", "method": "GET"},
		"target":     M{"type": "postgres", "auth": "pg_local", "table": "public.http_to_postgres_transfer", "mapping": M{"user_id": "userId", "post_id": "id", "title": "title", "body": "body"}},
		"chunk_size": 30,
	}))
	if r["rows_transferred"] != int64(100) || r["chunks_processed"] != int64(4) || r["records_fetched"] != int64(100) ||
		r["direction"] != "http_to_postgres" || r["status"] != "success" || r["mode"] != "append" {
		t.Fatalf("%#v", r)
	}
	if !reflect.DeepEqual(r["columns"], L{"body", "post_id", "title", "user_id"}) {
		t.Fatalf("columns %#v", r["columns"])
	}
	got := e.sql(t, `SELECT count(*) AS n, count(DISTINCT user_id) AS users, min(post_id) AS lo, max(post_id) AS hi,
		bool_and(title = 'title ' || post_id) AS titles FROM public.http_to_postgres_transfer`)["rows"].(L)[0]
	if !reflect.DeepEqual(got, M{"n": int64(100), "users": int64(10), "lo": int64(1), "hi": int64(100), "titles": true}) {
		t.Fatalf("%#v", got)
	}
}

// TestHTTPDataPathAuthAndDuckDB: data_path, an http_bearer credential,
// and an http → duckdb transfer that creates the table.
func TestHTTPDataPathAuthAndDuckDB(t *testing.T) {
	e := newEnv(t)
	srv := fixtureServer(t)
	db := filepath.Join(t.TempDir(), "w.duckdb")
	r := ok(t, e.run(t, M{
		"source": M{"type": "http", "url": srv.URL + "/wrapped", "data_path": "result.items", "auth": "api_token"},
		"target": M{"type": "duckdb", "database": db, "table": "posts"},
	}))
	if r["rows_transferred"] != int64(5) || !reflect.DeepEqual(r["columns"], L{"body", "id", "title", "userId"}) {
		t.Fatalf("%#v", r)
	}
	o := e.duck.Exec(context.Background(), nil, M{"database": db, "query": `SELECT id, "userId", typeof(id) AS t FROM posts ORDER BY id DESC LIMIT 1`}, 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result.(M)["rows"], L{M{"id": int64(5), "userId": int64(1), "t": "BIGINT"}}) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	// Without the credential the API answers 401: the http kind's error.
	o = e.run(t, M{"source": M{"type": "http", "url": srv.URL + "/wrapped"}, "target": M{"type": "duckdb", "database": db, "table": "posts"}})
	if o.Status != types.StatusError || o.Error.Kind != "auth" || o.Error.Status != 401 || !strings.HasPrefix(o.Error.Message, "transfer source: ") {
		t.Fatalf("%+v", o.Error)
	}
	o = e.run(t, M{"source": M{"type": "http", "url": srv.URL + "/down"}, "target": M{"type": "duckdb", "database": db, "table": "posts"}})
	if o.Status != types.StatusError || o.Error.Kind != "server_error" || !o.Error.Retryable {
		t.Fatalf("%+v", o.Error)
	}
}

// TestPostgresDuckDBRoundTrip: a postgres table reaches DuckDB through the
// transfer kind (no DuckDB extension), DuckDB queries it, and the rows go
// back to postgres unchanged.
func TestPostgresDuckDBRoundTrip(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(t.TempDir(), "rt.duckdb")
	e.sql(t, `DROP TABLE IF EXISTS rt_src, rt_back;
		CREATE TABLE rt_src (id INT PRIMARY KEY, name TEXT, score NUMERIC(6,2), active BOOLEAN, born DATE, meta JSONB, tags TEXT[]);
		INSERT INTO rt_src SELECT g, 'name ' || g, g * 1.25, g % 2 = 0, DATE '2024-01-01' + g, jsonb_build_object('g', g), ARRAY['t' || g, 'x']
		  FROM generate_series(1, 2500) g;
		CREATE TABLE rt_back (LIKE rt_src)`)
	r := ok(t, e.run(t, M{
		"source":     M{"type": "postgres", "connection": testDSN, "query": "SELECT id, name, score, active, born, meta FROM rt_src ORDER BY id"},
		"target":     M{"type": "duckdb", "database": db, "table": "people"},
		"chunk_size": 1000,
	}))
	if r["rows_transferred"] != int64(2500) || r["chunks_processed"] != int64(3) || r["direction"] != "postgres_to_duckdb" {
		t.Fatalf("%#v", r)
	}
	o := e.duck.Exec(context.Background(), nil, M{"database": db, "query": "SELECT count(*) AS n, sum(score) AS s, count(*) FILTER (WHERE active) AS a, max(born) AS b, max(meta->>'g') AS g FROM people"}, 0)
	if o.Status != types.StatusOK {
		t.Fatalf("%+v", o.Error)
	}
	if got := o.Result.(M)["rows"].(L)[0]; !reflect.DeepEqual(got, M{"n": int64(2500), "s": 3907812.5, "a": int64(1250), "b": "2030-11-05", "g": "999"}) {
		t.Fatalf("duckdb view %#v", got)
	}
	// And back, with mapping and the postgres column types (numeric,
	// date, jsonb from DuckDB's doubles, text and JSON text).
	r = ok(t, e.run(t, M{
		"source": M{"type": "duckdb", "database": db, "query": "SELECT * FROM people WHERE id <= $n", "params": M{"n": 2000}},
		"target": M{"type": "postgres", "connection": testDSN, "table": "rt_back", "mapping": M{"id": "id", "name": "name", "score": "score", "active": "active", "born": "born", "meta": "meta"}},
	}))
	if r["rows_transferred"] != int64(2000) || r["direction"] != "duckdb_to_postgres" {
		t.Fatalf("%#v", r)
	}
	diff := e.sql(t, `SELECT count(*) AS n FROM (SELECT id, name, score, active, born, meta FROM rt_src WHERE id <= 2000
		EXCEPT SELECT id, name, score, active, born, meta FROM rt_back) d`)["rows"].(L)[0].(M)["n"]
	if diff != int64(0) {
		t.Fatalf("%v rows differ after the round trip", diff)
	}
	// Arrays go to array columns as array literals.
	ok(t, e.run(t, M{"source": M{"type": "postgres", "connection": testDSN, "query": "SELECT id, tags FROM rt_src WHERE id = 7"},
		"target": M{"type": "postgres", "connection": testDSN, "table": "rt_back", "mode": "replace"}}))
	if got := e.sql(t, "SELECT id, tags FROM rt_back")["rows"]; !reflect.DeepEqual(got, L{M{"id": int64(7), "tags": L{"t7", "x"}}}) {
		t.Fatalf("%#v", got)
	}
}

// TestModesAndAtomicity: replace empties the table, upsert updates by
// key, and a failure in a later batch leaves the target untouched.
func TestModesAndAtomicity(t *testing.T) {
	e := newEnv(t)
	e.sql(t, `DROP TABLE IF EXISTS m_src, m_dst;
		CREATE TABLE m_src (k INT, v TEXT); INSERT INTO m_src SELECT g, 'v' || g FROM generate_series(1, 10) g;
		CREATE TABLE m_dst (k INT PRIMARY KEY, v TEXT); INSERT INTO m_dst VALUES (1, 'old'), (100, 'keep')`)
	src := M{"type": "postgres", "connection": testDSN, "query": "SELECT k, v FROM m_src ORDER BY k"}
	ok(t, e.run(t, M{"source": src, "target": M{"type": "postgres", "connection": testDSN, "table": "m_dst"}, "mode": "upsert"}))
	if got := e.sql(t, "SELECT count(*) AS n, max(v) FILTER (WHERE k = 1) AS v1, max(v) FILTER (WHERE k = 100) AS v100 FROM m_dst")["rows"].(L)[0]; !reflect.DeepEqual(got, M{"n": int64(11), "v1": "v1", "v100": "keep"}) {
		t.Fatalf("upsert %#v", got)
	}
	// A duplicate key in the third batch: nothing of the first two stays.
	e.sql(t, "INSERT INTO m_src VALUES (5, 'dup')")
	o := e.run(t, M{"source": src, "target": M{"type": "postgres", "connection": testDSN, "table": "m_dst", "mode": "replace"}, "chunk_size": 4})
	if o.Status != types.StatusError || o.Error.Kind != "postgres" || o.PG == nil || o.PG.Code != "23505" || !strings.HasPrefix(o.Error.Message, "transfer target: ") {
		t.Fatalf("%+v %+v", o.Error, o.PG)
	}
	if n := e.sql(t, "SELECT count(*) AS n FROM m_dst")["rows"].(L)[0].(M)["n"]; n != int64(11) {
		t.Fatalf("target changed by a failed transfer: %v rows", n)
	}
	e.sql(t, "DELETE FROM m_src WHERE v = 'dup'")
	r := ok(t, e.run(t, M{"source": src, "target": M{"type": "postgres", "connection": testDSN, "table": "m_dst", "mode": "replace"}, "chunk_size": 4}))
	if r["chunks_processed"] != int64(3) || e.sql(t, "SELECT count(*) AS n FROM m_dst")["rows"].(L)[0].(M)["n"] != int64(10) {
		t.Fatalf("replace %#v", r)
	}
	// An empty source with replace empties the target.
	ok(t, e.run(t, M{"source": M{"type": "postgres", "connection": testDSN, "query": "SELECT k, v FROM m_src WHERE false"},
		"target": M{"type": "postgres", "connection": testDSN, "table": "m_dst", "mode": "replace"}}))
	if n := e.sql(t, "SELECT count(*) AS n FROM m_dst")["rows"].(L)[0].(M)["n"]; n != int64(0) {
		t.Fatalf("%v rows after replace from an empty source", n)
	}
}

func TestConfigErrors(t *testing.T) {
	e := newEnv(t)
	srv := fixtureServer(t)
	pgT := M{"type": "postgres", "connection": testDSN, "table": "nope_missing_table"}
	for _, c := range []M{
		{},
		{"source": M{"type": "http", "url": srv.URL}},
		{"source": M{"type": "ftp"}, "target": pgT},
		{"source": M{"type": "snowflake", "query": "x"}, "target": pgT},
		{"source": M{"type": "postgres"}, "target": pgT},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": M{"type": "postgres", "connection": testDSN}},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": M{"type": "duckdb", "table": "x"}},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": pgT, "mode": "merge-all"},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": pgT, "chunk_size": 0},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": M{"type": "postgres", "auth": "missing_cred", "table": "t"}},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": pgT}, // table does not exist
		{"source": M{"type": "http", "url": srv.URL + "/posts", "method": "DELETE"}, "target": pgT},
		{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": pgT, "direction": "postgres_to_duckdb"},
	} {
		o := e.run(t, c)
		if o.Status != types.StatusError || o.Error.Kind != "config" {
			t.Errorf("%v: %+v", c, o.Error)
		}
	}
}

// TestResultSource: a stored table streams from the results tier into
// PostgreSQL and DuckDB, by reference or by URI; a lost result fails the
// transfer with kind result_lost and leaves the target untouched.
func TestResultSource(t *testing.T) {
	e := newEnv(t)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "ex"})
	e.ctx = ctx // the task reads for execution ex (results by ownership)
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 64}
	e.tool.opts.Results = rs
	rows := make([]any, 5000)
	for i := range rows {
		rows[i] = M{"id": int64(i), "name": fmt.Sprint("n", i), "tags": L{"a", fmt.Sprint(i)}, "geo": M{"x": float64(i) / 2}}
	}
	ref, err := rs.Offload(ctx, types.ResultCoords{ExecutionID: "ex", Step: "big", Attempt: 1}, rows)
	if err != nil || !results.IsRef(ref) {
		t.Fatal(ref, err)
	}
	e.sql(t, `DROP TABLE IF EXISTS from_result; CREATE TABLE from_result (id BIGINT PRIMARY KEY, name TEXT, tags TEXT[], geo JSONB)`)
	r := ok(t, e.run(t, M{
		"source": M{"type": "result", "ref": ref},
		"target": M{"type": "postgres", "connection": testDSN, "table": "from_result"},
	}))
	if r["rows_transferred"] != int64(5000) || r["direction"] != "result_to_postgres" {
		t.Fatalf("%#v", r)
	}
	got := e.sql(t, "SELECT count(*) AS n, sum(id) AS s, max(geo->>'x') AS x, min(tags[2]) AS t FROM from_result")["rows"].(L)[0]
	if !reflect.DeepEqual(got, M{"n": int64(5000), "s": "12497500", "x": "999.5", "t": "0"}) && !reflect.DeepEqual(got, M{"n": int64(5000), "s": int64(12497500), "x": "999.5", "t": "0"}) {
		t.Fatalf("%#v", got)
	}
	db := filepath.Join(t.TempDir(), "r.duckdb")
	uri := ref.(M)[results.RefKey].(M)["uri"].(string)
	r = ok(t, e.run(t, M{"source": M{"type": "result", "ref": uri}, "target": M{"type": "duckdb", "database": db, "table": "t"}}))
	if r["rows_transferred"] != int64(5000) {
		t.Fatalf("%#v", r)
	}
	// Another execution's result is refused before anything is read or
	// written.
	e.ctx = results.WithReader(context.Background(), results.Reader{Execution: "other"})
	o := e.run(t, M{"source": M{"type": "result", "ref": ref}, "target": M{"type": "postgres", "connection": testDSN, "table": "from_result", "mode": "replace"}})
	if o.Status == types.StatusOK || o.Error.Kind != types.ErrKindForbidden || o.Error.Retryable {
		t.Fatalf("another execution's result: %+v", o.Error)
	}
	if n := e.sql(t, "SELECT count(*) AS n FROM from_result")["rows"].(L)[0].(M)["n"]; n != int64(5000) {
		t.Fatalf("target changed by a refused transfer: %v rows", n)
	}
	e.ctx = ctx
	// Lost: the object is gone; the target is left as it was.
	e.sql(t, "DELETE FROM from_result WHERE id >= 10")
	if err := rs.Delete(ctx, ref.(M)[results.RefKey].(M)["key"].(string)); err != nil {
		t.Fatal(err)
	}
	o = e.run(t, M{"source": M{"type": "result", "ref": ref}, "target": M{"type": "postgres", "connection": testDSN, "table": "from_result", "mode": "replace"}})
	if o.Status == types.StatusOK || o.Error.Kind != types.ErrKindResultLost || o.Error.Retryable || !strings.Contains(o.Error.Message, uri) {
		t.Fatalf("lost: %+v", o.Error)
	}
	if n := e.sql(t, "SELECT count(*) AS n FROM from_result")["rows"].(L)[0].(M)["n"]; n != int64(10) {
		t.Fatalf("target changed: %v rows", n)
	}
	for _, bad := range []M{{"type": "result"}, {"type": "result", "ref": "gs://b/k"}} {
		if o := e.run(t, M{"source": bad, "target": M{"type": "postgres", "connection": testDSN, "table": "from_result"}}); o.Error == nil || o.Error.Kind != "config" {
			t.Errorf("%v: %+v", bad, o.Error)
		}
	}
}
