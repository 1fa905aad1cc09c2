package s3

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/types"
)

type M = map[string]any

// fakeS3 starts an in-process S3 server (gofakes3) with bucket and
// returns its URL.
func fakeS3(t *testing.T, buckets ...string) string {
	t.Helper()
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s: %+v", o.Status, o.Error)
	}
	return o.Result.(M)
}

func failed(t *testing.T, o types.Outcome, kind types.ErrorKind, msg string) {
	t.Helper()
	if o.Status != types.StatusError || o.Error.Kind != kind || !strings.Contains(o.Error.Message, msg) {
		t.Fatalf("%+v, want kind %s with %q", o.Error, kind, msg)
	}
}

// TestPutGetListDelete: the four actions against an S3 server, with an s3
// credential by name: text, JSON data and a local file go in; get returns
// the text (and the decoded JSON) or writes a file; list sees the keys
// under a prefix; delete removes one and reports a missing one.
func TestPutGetListDelete(t *testing.T) {
	url := fakeS3(t, "lake")
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "aws_credential", Kind: "s3",
		Data: M{"access_key_id": "AKID", "secret_access_key": "secret", "endpoint": url, "region": "eu-west-1"}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tl := New(Options{Credentials: store, LocalDirs: []string{dir}})
	ctx := context.Background()
	run := func(cfg M) types.Outcome { cfg["auth"] = "aws_credential"; return tl.Exec(ctx, nil, cfg, 0) }

	r := ok(t, run(M{"action": "put", "uri": "s3://lake/in/hello.txt", "content": "hello s3"}))
	if r["uri"] != "s3://lake/in/hello.txt" || r["size"] != int64(8) || r["content_type"] != "text/plain; charset=utf-8" {
		t.Fatalf("put %#v", r)
	}
	ok(t, run(M{"operation": "upload", "bucket": "lake", "key": "in/rows.json", "data": []any{M{"id": int64(1)}, M{"id": int64(2)}}}))
	local := filepath.Join(dir, "local.csv")
	if err := os.WriteFile(local, []byte("id,name\n1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, run(M{"action": "put", "source": local, "destination": "s3://lake/in/local.csv"}))

	r = ok(t, run(M{"action": "get", "uri": "s3://lake/in/hello.txt"}))
	if r["content"] != "hello s3" || r["size"] != int64(8) {
		t.Fatalf("get %#v", r)
	}
	r = ok(t, run(M{"action": "download", "source": "s3://lake/in/rows.json"}))
	if d, _ := r["data"].([]any); len(d) != 2 || d[1].(M)["id"] != int64(2) {
		t.Fatalf("get json %#v", r)
	}
	out := filepath.Join(dir, "copy.csv")
	r = ok(t, run(M{"action": "get", "uri": "s3://lake/in/local.csv", "destination": out}))
	if b, _ := os.ReadFile(out); string(b) != "id,name\n1,a\n" || r["destination"] != out {
		t.Fatalf("get to file %#v %q", r, b)
	}

	r = ok(t, run(M{"action": "list", "uri": "s3://lake/in/"}))
	if r["count"] != int64(3) {
		t.Fatalf("list %#v", r)
	}
	keys := []string{}
	for _, o := range r["objects"].([]any) {
		keys = append(keys, o.(M)["key"].(string))
	}
	if strings.Join(keys, ",") != "in/hello.txt,in/local.csv,in/rows.json" {
		t.Fatalf("keys %v", keys)
	}

	r = ok(t, run(M{"action": "delete", "uri": "s3://lake/in/hello.txt"}))
	if r["deleted"] != true {
		t.Fatalf("delete %#v", r)
	}
	failed(t, run(M{"action": "get", "uri": "s3://lake/in/hello.txt"}), "not_found", "hello.txt")
	failed(t, run(M{"action": "delete", "uri": "s3://lake/in/hello.txt"}), "not_found", "missing_ok")
	if r = ok(t, run(M{"action": "delete", "uri": "s3://lake/in/hello.txt", "missing_ok": true})); r["deleted"] != false {
		t.Fatalf("delete missing %#v", r)
	}
	failed(t, run(M{"action": "list", "bucket": "nope"}), "not_found", "nope")
}

// TestRefusals: configuration problems are config errors; local files
// outside the allowed directories and the engine's results bucket are
// refused before anything is sent; a policy-refused endpoint is never
// dialed.
func TestRefusals(t *testing.T) {
	url := fakeS3(t, "lake", "noetl-results")
	tl := New(Options{LocalDirs: []string{t.TempDir()}, ReservedBuckets: []string{"noetl-results"}})
	ctx := context.Background()
	auth := M{"access_key_id": "a", "secret_access_key": "b", "endpoint": url}
	failed(t, tl.Exec(ctx, nil, M{"uri": "s3://lake/x", "auth": auth}, 0), "config", "action")
	failed(t, tl.Exec(ctx, nil, M{"action": "copy", "uri": "s3://lake/x", "auth": auth}, 0), "config", "action")
	failed(t, tl.Exec(ctx, nil, M{"action": "get", "uri": "gs://lake/x", "auth": auth}, 0), "config", "s3://bucket/key")
	failed(t, tl.Exec(ctx, nil, M{"action": "put", "uri": "s3://lake/x", "source": "/etc/passwd", "auth": auth}, 0), "config", "outside the directories")
	failed(t, tl.Exec(ctx, nil, M{"action": "get", "uri": "s3://lake/x", "destination": "/etc/owned", "auth": auth}, 0), "config", "outside the directories")
	failed(t, tl.Exec(ctx, nil, M{"action": "list", "bucket": "noetl-results", "auth": auth}, 0), types.ErrKindForbidden, "results bucket")
	failed(t, tl.Exec(ctx, nil, M{"action": "put", "uri": "s3://NOETL-RESULTS/x", "content": "x", "auth": auth}, 0), types.ErrKindForbidden, "results bucket")
	failed(t, tl.Exec(ctx, nil, M{"action": "get", "uri": "s3://lake/x", "auth": M{"access_key_id": "only"}}, 0), "config", "together")

	p, err := egress.New("local", []string{strings.TrimPrefix(url, "http://")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pt := New(Options{Egress: p})
	for _, ep := range []string{"http://169.254.169.254", "http://metadata.google.internal", "http://127.0.0.1:1"} {
		failed(t, pt.Exec(ctx, nil, M{"action": "list", "bucket": "lake", "endpoint": ep}, 0), "forbidden_address", ep)
	}
	ok(t, pt.Exec(ctx, nil, M{"action": "put", "uri": "s3://lake/allowed", "content": "x", "auth": auth}, 0))
}
