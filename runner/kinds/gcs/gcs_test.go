package gcs

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/types"
)

type M = map[string]any

// fake starts an in-process fake-gcs-server (unit tests); the stack test
// below runs the same operations against the stack's.
func fake(t *testing.T, buckets ...string) *fakestorage.Server {
	t.Helper()
	var objs []fakestorage.Object
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0, InitialObjects: objs})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	t.Cleanup(srv.Stop)
	return srv
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s: %+v", o.Status, o.Error)
	}
	return o.Result.(M)
}

// roundTrip uploads a local file, a text and a JSON value, lists, downloads
// to a file and into the result, and deletes, with auth giving the
// endpoint.
func roundTrip(t *testing.T, tl *Tool, auth any, bucket string) {
	ctx := context.Background()
	dir := t.TempDir()
	run := func(cfg M) types.Outcome {
		if auth != nil {
			cfg["auth"] = auth
		}
		return tl.Exec(ctx, nil, cfg, 0)
	}
	prefix := "noetl-test/" + time.Now().Format("150405.000000") + "/"
	src := filepath.Join(dir, "rows.csv")
	if err := os.WriteFile(src, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ok(t, run(M{"action": "upload", "source": src, "destination": "gs://" + bucket + "/" + prefix + "rows.csv", "metadata": M{"run": 1}}))
	if r["size"] != int64(8) || r["uri"] != "gs://"+bucket+"/"+prefix+"rows.csv" || !strings.HasPrefix(r["content_type"].(string), "text/csv") {
		t.Fatalf("upload %#v", r)
	}
	ok(t, run(M{"content": "hello", "bucket": bucket, "object": prefix + "hello.txt"}))
	ok(t, run(M{"data": M{"k": []any{1, 2}}, "destination": "gs://" + bucket + "/" + prefix + "v.json"}))

	r = ok(t, run(M{"action": "list", "uri": "gs://" + bucket + "/" + prefix}))
	var names []string
	for _, o := range r["objects"].([]any) {
		names = append(names, strings.TrimPrefix(o.(M)["name"].(string), prefix))
	}
	if !reflect.DeepEqual(names, []string{"hello.txt", "rows.csv", "v.json"}) || r["count"] != int64(3) {
		t.Fatalf("list %v", r)
	}
	r = ok(t, run(M{"action": "download", "source": "gs://" + bucket + "/" + prefix + "v.json"}))
	if !reflect.DeepEqual(r["data"], M{"k": []any{int64(1), int64(2)}}) || r["content"] != `{"k":[1,2]}` {
		t.Fatalf("download json %#v", r)
	}
	dest := filepath.Join(dir, "copy.csv")
	r = ok(t, run(M{"action": "download", "source": "gs://" + bucket + "/" + prefix + "rows.csv", "destination": dest}))
	if b, err := os.ReadFile(dest); err != nil || string(b) != "a,b\n1,2\n" || r["size"] != int64(8) {
		t.Fatalf("download file %q %v %#v", b, err, r)
	}
	r = ok(t, run(M{"action": "delete", "uri": "gs://" + bucket + "/" + prefix + "hello.txt"}))
	if r["deleted"] != true {
		t.Fatalf("%#v", r)
	}
	o := run(M{"action": "download", "source": "gs://" + bucket + "/" + prefix + "hello.txt"})
	if o.Status != types.StatusError || o.Error.Kind != "not_found" || o.Error.Retryable {
		t.Fatalf("%+v", o.Error)
	}
	if r := ok(t, run(M{"action": "delete", "uri": "gs://" + bucket + "/" + prefix + "hello.txt", "missing_ok": true})); r["deleted"] != false {
		t.Fatalf("%#v", r)
	}
	for _, name := range []string{"rows.csv", "v.json"} {
		ok(t, run(M{"action": "delete", "uri": "gs://" + bucket + "/" + prefix + name}))
	}
}

func TestRoundTripInlineEndpoint(t *testing.T) {
	srv := fake(t, "b1")
	roundTrip(t, New(Options{LocalDirs: []string{os.TempDir()}}), M{"endpoint": srv.URL()}, "b1")
}

// TestRoundTripCredential resolves `auth: <name>` to a gcs credential.
func TestRoundTripCredential(t *testing.T) {
	srv := fake(t, "b2")
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "gcs_local", Kind: "gcs", Data: M{"endpoint": strings.TrimPrefix(srv.URL(), "http://")}}); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, New(Options{Credentials: store}), "gcs_local", "b2")
}

// TestStackEmulator runs against the stack's fake-gcs-server through the
// process default client (STORAGE_EMULATOR_HOST from .stack/env).
func TestStackEmulator(t *testing.T) {
	host := os.Getenv("STORAGE_EMULATOR_HOST")
	if host == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but STORAGE_EMULATOR_HOST is unset: source .stack/env")
		}
		t.Skip("GCS emulator not configured (run scripts/up and source .stack/env)")
	}
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(host, "http://"), 3*time.Second)
	if err != nil {
		t.Fatalf("GCS emulator at %s unreachable: %v", host, err)
	}
	c.Close()
	bucket := os.Getenv("NOETL_RESULTS_BUCKET")
	if bucket == "" {
		bucket = "noetl-results"
	}
	roundTrip(t, New(Options{}), nil, bucket)
}

func TestErrors(t *testing.T) {
	srv := fake(t, "b3")
	tl := New(Options{LocalDirs: []string{t.TempDir()}})
	auth := M{"endpoint": srv.URL()}
	for _, c := range []struct {
		cfg  M
		kind string
	}{
		{M{"action": "copy"}, "config"},
		{M{"content": "x"}, "config"},                                              // no destination
		{M{"destination": "gs://b3/x"}, "config"},                                  // nothing to upload
		{M{"destination": "gs://b3/x", "source": "/etc/hostname"}, "config"},       // outside LocalDirs
		{M{"destination": "gs://b3/x", "content": M{"a": 1}}, "config"},            // content not text
		{M{"destination": "gs://b3/x", "content": "x", "metadata": "m"}, "config"}, // metadata not a mapping
		{M{"action": "download", "source": "gs://b3/x", "destination": "/etc/x"}, "config"},
		{M{"action": "download", "source": "gs://nobucket/x"}, "not_found"},
		{M{"action": "list"}, "config"},
		{M{"destination": "gs://b3/x", "content": "x", "auth": "no_store"}, "config"},
	} {
		cfg := c.cfg
		if _, has := cfg["auth"]; !has {
			cfg["auth"] = auth
		}
		o := tl.Exec(context.Background(), nil, cfg, 0)
		if o.Status != types.StatusError || string(o.Error.Kind) != c.kind {
			t.Errorf("%v: %+v", c.cfg, o.Error)
		}
	}
	small := New(Options{MaxInlineBytes: 4})
	ok(t, small.Exec(context.Background(), nil, M{"auth": auth, "content": "12345", "destination": "gs://b3/big"}, 0))
	if o := small.Exec(context.Background(), nil, M{"auth": auth, "action": "download", "source": "gs://b3/big"}, 0); o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Errorf("over the inline cap: %+v", o.Error)
	}
}

// The engine's results bucket is out of every task's reach (README "Security"
// item 6: a task could otherwise overwrite another execution's stored
// results, or read them around the ownership check of artifact tasks).
func TestReservedBucket(t *testing.T) {
	srv := fake(t, "noetl-results", "user-data")
	tl := New(Options{ReservedBuckets: []string{"noetl-results"}})
	ctx := context.Background()
	victim := "noetl/env=default/region=default/cell=default/shard=0003/tenant=default/project=default/date=2026-01-02/execution=484377543601029219/results/start/0/0/0.json"
	for name, cfg := range map[string]M{
		"overwrite":        {"destination": "gs://noetl-results/" + victim, "content": `{"forged": true}`},
		"overwrite by key": {"bucket": "NOETL-RESULTS", "object": victim, "data": M{"forged": true}},
		"read":             {"action": "download", "source": "gs://noetl-results/" + victim},
		"delete":           {"action": "delete", "uri": "gs://noetl-results/" + victim},
		"list":             {"action": "list", "uri": "gs://noetl-results/noetl/"},
	} {
		cfg["auth"] = M{"endpoint": srv.URL()}
		o := tl.Exec(ctx, nil, cfg, 0)
		if o.Status != types.StatusError || o.Error.Kind != types.ErrKindForbidden || !strings.Contains(o.Error.Message, `bucket "`) || !strings.Contains(o.Error.Message, "is the engine's results bucket") {
			t.Errorf("%s: %+v, want kind forbidden", name, o.Error)
		}
	}
	if _, err := srv.GetObject("noetl-results", victim); err == nil {
		t.Fatal("the reserved bucket was written")
	}
	ok(t, tl.Exec(ctx, nil, M{"auth": M{"endpoint": srv.URL()}, "destination": "gs://user-data/x.json", "data": M{"a": 1}}, 0))
}

// TestDeleteListSpellings: delete and list are reachable with the keys the
// validator now accepts (they were unreachable from a playbook):
// bucket + object (key, blob), prefix, operation for action, credential
// for auth, and rendered strings for booleans; an unknown key is a
// config error naming the kind's keys.
func TestDeleteListSpellings(t *testing.T) {
	srv := fake(t, "b5")
	tl := New(Options{LocalDirs: []string{t.TempDir()}})
	ctx := context.Background()
	cred := M{"endpoint": srv.URL()}
	ok(t, tl.Exec(ctx, nil, M{"credential": cred, "content": "x", "bucket": "b5", "key": "p/one.txt"}, 0))
	ok(t, tl.Exec(ctx, nil, M{"credential": cred, "content": "y", "bucket": "b5", "blob": "q/two.txt"}, 0))
	r := ok(t, tl.Exec(ctx, nil, M{"credential": cred, "operation": "list", "bucket": "b5", "prefix": "p/"}, 0))
	if r["count"] != int64(1) || r["objects"].([]any)[0].(M)["name"] != "p/one.txt" {
		t.Fatalf("list bucket+prefix %#v", r)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"credential": cred, "operation": "remove", "bucket": "b5", "object": "p/one.txt"}, 0))
	if r["deleted"] != true {
		t.Fatalf("delete bucket+object %#v", r)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"credential": cred, "action": "delete", "bucket": "b5", "object": "p/one.txt", "missing_ok": "true"}, 0))
	if r["deleted"] != false {
		t.Fatalf("delete missing_ok %#v", r)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"credential": cred, "action": "list", "bucket": "b5"}, 0))
	if r["count"] != int64(1) {
		t.Fatalf("list bucket %#v", r)
	}
	o := tl.Exec(ctx, nil, M{"credential": cred, "action": "list", "buckett": "b5"}, 0)
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, `key "buckett" is not read by kind gcs (it reads:`) {
		t.Fatalf("unknown key: %+v", o.Error)
	}
}
