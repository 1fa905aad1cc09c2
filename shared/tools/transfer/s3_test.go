package transfer

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/tools/s3"
	"github.com/noetl/gcpengine/shared/types"
)

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
