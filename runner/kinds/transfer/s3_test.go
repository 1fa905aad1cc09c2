package transfer

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/noetl/gcpengine/runner/kinds/s3"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/types"
)

// s3Env is a transfer env with a gofakes3 server holding bucket lake, the
// s3 credential aws_credential pointing at it, and the s3 kind.
func s3Env(t *testing.T) (*env, *s3.Tool, *s3mem.Backend) {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	e := newEnv(t)
	if err := e.store.CredentialPut(context.Background(), credentials.Credential{Name: "aws_credential", Kind: "s3",
		Data: M{"access_key_id": "AKID", "secret_access_key": "s", "endpoint": srv.URL}}); err != nil {
		t.Fatal(err)
	}
	s3t := s3.New(s3.Options{Credentials: e.store, ReservedBuckets: []string{"noetl-results"}})
	e.tool.opts.S3 = s3t
	return e, s3t, be
}

// object reads an object of the fake store with the s3 kind.
func object(t *testing.T, s3t *s3.Tool, uri string) M {
	t.Helper()
	o := s3t.Exec(context.Background(), nil, M{"action": "get", "uri": uri, "auth": "aws_credential"}, 0)
	if o.Status != types.StatusOK {
		t.Fatalf("get %s: %+v", uri, o.Error)
	}
	return o.Result.(M)
}

// TestS3Target: every source writes an s3 object in each format (json: a
// list of objects keyed by the target columns in order; jsonl; csv with a
// header row), the format following the key's extension or format; the
// object is replaced whole, and round-trips through an s3 source.
func TestS3Target(t *testing.T) {
	e, s3t, _ := s3Env(t)
	e.sql(t, `DROP TABLE IF EXISTS s3_out, s3_back;
		CREATE TABLE s3_out (id int PRIMARY KEY, name text, score numeric(6,2), tags text[], meta jsonb, note text);
		INSERT INTO s3_out VALUES (1, 'a', 1.50, ARRAY['x','y'], '{"k": 1}', NULL), (2, 'b, "quoted"', 2.25, ARRAY[]::text[], '{}', 'n');
		CREATE TABLE s3_back (id int PRIMARY KEY, name text, note text)`)
	src := M{"type": "postgres", "auth": "pg_local", "query": "SELECT id, name, score, tags, meta, note FROM s3_out ORDER BY id"}
	r := ok(t, e.run(t, M{"source": src, "target": M{"type": "s3", "uri": "s3://lake/out/rows.json", "auth": "aws_credential"}, "chunk_size": 1}))
	if r["rows_transferred"] != int64(2) || r["chunks_processed"] != int64(2) || r["direction"] != "postgres_to_s3" || r["target_uri"] != "s3://lake/out/rows.json" ||
		r["format"] != "json" || r["mode"] != "replace" || r["target_table"] != nil || r["size"] == nil || r["etag"] == nil {
		t.Fatalf("%#v", r)
	}
	got := object(t, s3t, "s3://lake/out/rows.json")
	want := `[{"id":1,"name":"a","score":1.5,"tags":["x","y"],"meta":{"k":1},"note":null},{"id":2,"name":"b, \"quoted\"","score":2.25,"tags":[],"meta":{},"note":"n"}]`
	if got["content"] != want || got["content_type"] != "application/json" {
		t.Fatalf("json object %q (%v)", got["content"], got["content_type"])
	}
	// A mapping names and orders the columns (sorted by target column).
	ok(t, e.run(t, M{"source": src, "target": M{"type": "s3", "bucket": "lake", "key": "out/rows.csv", "auth": "aws_credential",
		"mapping": M{"id": "id", "label": "name", "first_tag": "tags", "k": "meta.k"}}}))
	if c := object(t, s3t, "s3://lake/out/rows.csv")["content"]; c != "first_tag,id,k,label\n\"[\"\"x\"\",\"\"y\"\"]\",1,1,a\n[],2,,\"b, \"\"quoted\"\"\"\n" {
		t.Fatalf("csv object %q", c)
	}
	// jsonl by format (the key has no extension); ndjson is its alias.
	for _, f := range []string{"jsonl", "ndjson"} {
		ok(t, e.run(t, M{"source": M{"type": "postgres", "auth": "pg_local", "query": "SELECT id, name FROM s3_out ORDER BY id"},
			"target": M{"type": "s3", "uri": "s3://lake/out/rows", "format": f, "auth": "aws_credential"}}))
		if c := object(t, s3t, "s3://lake/out/rows")["content"]; c != "{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"name\":\"b, \\\"quoted\\\"\"}\n" {
			t.Fatalf("%s object %q", f, c)
		}
	}
	// Replaced whole: a second run with fewer rows leaves only those.
	r = ok(t, e.run(t, M{"source": M{"type": "postgres", "auth": "pg_local", "query": "SELECT id, name FROM s3_out WHERE id = 2"},
		"target": M{"type": "s3", "uri": "s3://lake/out/rows.json", "auth": "aws_credential"}, "mode": "replace"}))
	if c := object(t, s3t, "s3://lake/out/rows.json")["content"]; c != `[{"id":2,"name":"b, \"quoted\""}]` {
		t.Fatalf("replaced object %q", c)
	}
	// An empty source writes an empty list.
	ok(t, e.run(t, M{"source": M{"type": "postgres", "auth": "pg_local", "query": "SELECT id FROM s3_out WHERE false"},
		"target": M{"type": "s3", "uri": "s3://lake/out/empty.json", "auth": "aws_credential"}}))
	if c := object(t, s3t, "s3://lake/out/empty.json")["content"]; c != "[]" {
		t.Fatalf("empty object %q", c)
	}
	// Round trip: the csv object back into postgres through an s3 source.
	ok(t, e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/out/rows.csv", "auth": "aws_credential"},
		"target": M{"type": "postgres", "auth": "pg_local", "table": "s3_back", "mapping": M{"id": "id", "name": "label", "note": "k"}}}))
	if got := e.sql(t, "SELECT id, name, note FROM s3_back ORDER BY id")["rows"]; !reflect.DeepEqual(got, L{M{"id": int64(1), "name": "a", "note": "1"}, M{"id": int64(2), "name": `b, "quoted"`, "note": ""}}) {
		t.Fatalf("round trip %#v", got)
	}
	// http, duckdb and s3 sources write s3 targets too.
	srv := fixtureServer(t)
	r = ok(t, e.run(t, M{"source": M{"type": "http", "url": srv.URL + "/posts"}, "target": M{"type": "s3", "uri": "s3://lake/posts.jsonl", "auth": "aws_credential",
		"mapping": M{"id": "id", "user": "userId"}}, "direction": "http_to_s3"}))
	if r["rows_transferred"] != int64(100) || r["records_fetched"] != int64(100) || r["format"] != "jsonl" {
		t.Fatalf("%#v", r)
	}
	db := filepath.Join(t.TempDir(), "s3t.duckdb")
	ok(t, e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/posts.jsonl", "auth": "aws_credential"}, "target": M{"type": "duckdb", "database": db, "table": "posts"}}))
	ok(t, e.run(t, M{"source": M{"type": "duckdb", "database": db, "query": "SELECT \"user\", count(*) AS n FROM posts GROUP BY 1 ORDER BY 1 LIMIT 2"},
		"target": M{"type": "s3", "uri": "s3://lake/per_user.csv", "auth": "aws_credential"}}))
	if c := object(t, s3t, "s3://lake/per_user.csv")["content"]; c != "user,n\n1,10\n2,10\n" {
		t.Fatalf("duckdb → s3 %q", c)
	}
	r = ok(t, e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/per_user.csv", "auth": "aws_credential"}, "target": M{"type": "aws_s3", "uri": "s3://lake/per_user.json", "auth": "aws_credential"}}))
	if c := object(t, s3t, "s3://lake/per_user.json")["content"]; r["direction"] != "s3_to_s3" || c != `[{"n":"10","user":"1"},{"n":"10","user":"2"}]` {
		t.Fatalf("s3 → s3 %v %q", r["direction"], c)
	}
}

// TestS3TargetRefusals: configuration an s3 target cannot honour is
// refused before anything is read; the engine's results bucket is
// forbidden; a failed source leaves the object as it was; a missing bucket
// is the s3 kind's not_found, prefixed with the side.
func TestS3TargetRefusals(t *testing.T) {
	e, s3t, _ := s3Env(t)
	src := M{"type": "postgres", "auth": "pg_local", "query": "SELECT 1 AS id"}
	for _, c := range []struct {
		target M
		mode   string
		want   string
	}{
		{M{"type": "s3", "auth": "aws_credential"}, "", "target.uri (s3://bucket/key), or target.bucket and target.key"},
		{M{"type": "s3", "uri": "s3://lake/"}, "", "names no object key"},
		{M{"type": "s3", "uri": "gs://lake/x.json"}, "", "is not an s3://bucket/key URI"},
		{M{"type": "s3", "uri": "s3://lake/x.json", "table": "t"}, "", "target.table does not apply to an s3 target"},
		{M{"type": "s3", "uri": "s3://lake/x.json"}, "append", `mode "append" does not apply to an s3 target`},
		{M{"type": "s3", "uri": "s3://lake/x.json", "mode": "upsert"}, "", `mode "upsert" does not apply to an s3 target`},
		{M{"type": "s3", "uri": "s3://lake/x.json", "upsert_key": "id"}, "", "target.upsert_key does not apply"},
		{M{"type": "s3", "uri": "s3://lake/x.parquet", "format": "parquet"}, "", `target.format "parquet" is not supported (json, jsonl or csv)`},
	} {
		cfg := M{"source": src, "target": c.target}
		if c.mode != "" {
			cfg["mode"] = c.mode
		}
		o := e.run(t, cfg)
		if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, c.want) {
			t.Errorf("%v mode %q: %+v; want config error %q", c.target, c.mode, o.Error, c.want)
		}
	}
	o := e.run(t, M{"source": src, "target": M{"type": "s3", "uri": "s3://noetl-results/x.json", "auth": "aws_credential"}})
	if o.Status != types.StatusError || o.Error.Kind != types.ErrKindForbidden || !strings.HasPrefix(o.Error.Message, "transfer target: ") {
		t.Fatalf("results bucket: %+v", o.Error)
	}
	o = e.run(t, M{"source": src, "target": M{"type": "s3", "uri": "s3://nobucket/x.json", "auth": "aws_credential"}})
	if o.Status != types.StatusError || o.Error.Kind != "not_found" || !strings.HasPrefix(o.Error.Message, "transfer target: ") {
		t.Fatalf("missing bucket: %+v", o.Error)
	}
	ok(t, e.run(t, M{"source": src, "target": M{"type": "s3", "uri": "s3://lake/keep.json", "auth": "aws_credential"}}))
	o = e.run(t, M{"source": M{"type": "postgres", "auth": "pg_local", "query": "SELECT 1/0 AS id"}, "target": M{"type": "s3", "uri": "s3://lake/keep.json", "auth": "aws_credential"}})
	if o.Status != types.StatusError || !strings.HasPrefix(o.Error.Message, "transfer source: ") {
		t.Fatalf("failing source: %+v", o.Error)
	}
	if c := object(t, s3t, "s3://lake/keep.json")["content"]; c != `[{"id":1}]` {
		t.Fatalf("the object after a failed attempt: %q", c)
	}
}

// TestS3Source: an S3 object (JSON with data_path, JSON lines, CSV) is a
// transfer source (s3 → duckdb, s3 → postgres), read with the s3 kind's
// credential; a missing object is the s3 kind's not_found.
func TestS3Source(t *testing.T) {
	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	defer srv.Close()
	e := newEnv(t)
	if err := e.store.CredentialPut(context.Background(), credentials.Credential{Name: "aws_credential", Kind: "s3",
		Data: M{"access_key_id": "AKID", "secret_access_key": "s", "endpoint": srv.URL}}); err != nil {
		t.Fatal(err)
	}
	s3t := s3.New(s3.Options{Credentials: e.store})
	e.tool.opts.S3 = s3t
	put := func(key, content string) {
		if o := s3t.Exec(context.Background(), nil, M{"action": "put", "uri": "s3://lake/" + key, "content": content, "auth": "aws_credential"}, 0); o.Status != types.StatusOK {
			t.Fatalf("put %s: %+v", key, o.Error)
		}
	}
	put("posts.json", `{"result": {"items": [{"id": 1, "title": "a"}, {"id": 2, "title": "b"}]}}`)
	put("posts.jsonl", "{\"id\": 3, \"title\": \"c\"}\n\n{\"id\": 4, \"title\": \"d\"}\n")
	put("posts.csv", "id,title\n5,e\n6,f\n")
	db := filepath.Join(t.TempDir(), "s3.duckdb")
	r := ok(t, e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/posts.json", "data_path": "result.items", "auth": "aws_credential"},
		"target": M{"type": "duckdb", "database": db, "table": "posts"}, "direction": "s3_to_duckdb"}))
	if r["rows_transferred"] != int64(2) || r["direction"] != "s3_to_duckdb" {
		t.Fatalf("%#v", r)
	}
	ok(t, e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/posts.jsonl", "auth": "aws_credential"}, "target": M{"type": "duckdb", "database": db, "table": "posts"}}))
	o := e.duck.Exec(context.Background(), nil, M{"database": db, "query": "SELECT id, title FROM posts ORDER BY id"}, 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result.(M)["rows"], L{M{"id": int64(1), "title": "a"}, M{"id": int64(2), "title": "b"}, M{"id": int64(3), "title": "c"}, M{"id": int64(4), "title": "d"}}) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	// CSV into postgres: text fields cast to the column types.
	e.sql(t, "CREATE TABLE s3_posts (id int PRIMARY KEY, title text)")
	r = ok(t, e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/posts.csv", "auth": "aws_credential"},
		"target": M{"type": "postgres", "auth": "pg_local", "table": "s3_posts"}}))
	if r["rows_transferred"] != int64(2) {
		t.Fatalf("%#v", r)
	}
	if got := e.sql(t, "SELECT sum(id) AS s FROM s3_posts")["rows"]; !reflect.DeepEqual(got, L{M{"s": int64(11)}}) {
		t.Fatalf("csv rows %v", got)
	}
	o = e.run(t, M{"source": M{"type": "s3", "uri": "s3://lake/missing.json", "auth": "aws_credential"}, "target": M{"type": "duckdb", "database": db, "table": "posts"}})
	if o.Status != types.StatusError || o.Error.Kind != "not_found" || !strings.HasPrefix(o.Error.Message, "transfer source: ") {
		t.Fatalf("%+v", o.Error)
	}
}

// TestS3TargetDiskLimit: an s3 target's object is staged in the task's
// workspace, so the task's disk limit bounds it: an object larger than a
// 256 KiB workspace fails with kind limit, nothing is put, and nothing is
// left in the workspace. (The workspace is a tmpfs only where the test
// may mount one, as the runner may.)
func TestS3TargetDiskLimit(t *testing.T) {
	e, s3t, _ := s3Env(t)
	ws, err := sandbox.NewWorkspace(t.TempDir(), 256<<10, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if !ws.Tmpfs {
		t.Fatalf("cannot mount a tmpfs workspace here (the runner mounts one per task): this check needs the privilege the runner has")
	}
	e.ctx = sandbox.WithWorkspace(context.Background(), ws)
	big := M{"type": "postgres", "auth": "pg_local", "query": "SELECT g AS id, repeat('x', 100) AS pad FROM generate_series(1, 10000) g"}
	o := e.run(t, M{"source": big, "target": M{"type": "s3", "uri": "s3://lake/big.csv", "auth": "aws_credential"}})
	if o.Status != types.StatusError || o.Error.Kind != "limit" || !strings.Contains(o.Error.Message, "NOETL_SANDBOX_DISK_MB") {
		t.Fatalf("%+v", o.Error)
	}
	if o := s3t.Exec(context.Background(), nil, M{"action": "get", "uri": "s3://lake/big.csv", "auth": "aws_credential"}, 0); o.Error == nil || o.Error.Kind != "not_found" {
		t.Fatalf("the object was put: %+v", o)
	}
	// A small one fits, and the staging file is gone afterwards.
	ok(t, e.run(t, M{"source": M{"type": "postgres", "auth": "pg_local", "query": "SELECT 1 AS id"}, "target": M{"type": "s3", "uri": "s3://lake/small.csv", "auth": "aws_credential"}}))
	if left, _ := os.ReadDir(ws.Dir); len(left) != 0 {
		t.Fatalf("the workspace keeps %v", left)
	}
}
