package nats

import (
	"context"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/types"
)

type M = map[string]any

// startServer runs a real NATS server (the nats-server module the stack
// embeds) in-process with JetStream, optionally with a user.
func startServer(t *testing.T, user, pass string) string {
	t.Helper()
	opts := &natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	if user != "" {
		opts.Username, opts.Password = user, pass
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s: %+v", o.Status, o.Error)
	}
	return o.Result.(M)
}

// conformanceKV is test_nats_kv.yaml's kv_put, kv_get, kv_delete steps on
// bucket sessions, with auth a nats credential.
func conformanceKV(t *testing.T, tl *Tool, auth any) {
	ctx := context.Background()
	value := M{"session_token": "test_session_123", "user_id": int64(1), "email": "test@example.com", "display_name": "Test User", "expires_at": "2026-01-31T23:59:59Z", "is_active": true}
	key := "test_session_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	r := ok(t, tl.Exec(ctx, nil, M{"auth": auth, "operation": "kv_put", "bucket": "sessions", "key": key, "value": value}, 0))
	if r["status"] != "success" || r["bucket"] != "sessions" || r["key"] != key || r["revision"].(int64) < 1 {
		t.Fatalf("put %#v", r)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"auth": auth, "operation": "kv_get", "bucket": "sessions", "key": key}, 0))
	if r["status"] != "success" || !reflect.DeepEqual(r["value"], value) {
		t.Fatalf("get %#v", r)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"auth": auth, "operation": "kv_delete", "bucket": "sessions", "key": key}, 0))
	if r["status"] != "success" {
		t.Fatalf("delete %#v", r)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"auth": auth, "operation": "kv_get", "bucket": "sessions", "key": key}, 0))
	if r["status"] != "not_found" || r["value"] != nil {
		t.Fatalf("get after delete %#v", r)
	}
}

func TestConformanceKVWithCredential(t *testing.T) {
	url := startServer(t, "noetl", "s3cret-pw")
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "nats_credential", Kind: "nats",
		Data: M{"nats_url": url, "nats_user": "noetl", "nats_password": "s3cret-pw"}}); err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Credentials: store})
	defer tl.Close()
	conformanceKV(t, tl, "nats_credential")
	// A wrong password is kind auth and never shows the password.
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "bad", Kind: "nats",
		Data: M{"nats_url": url, "nats_user": "noetl", "nats_password": "wrong-pw-123"}}); err != nil {
		t.Fatal(err)
	}
	o := tl.Exec(context.Background(), nil, M{"auth": "bad", "operation": "kv_get", "bucket": "sessions", "key": "k"}, 0)
	if o.Status != types.StatusError || o.Error.Kind != "auth" || o.Error.Retryable || strings.Contains(o.Error.Message, "wrong-pw-123") {
		t.Fatalf("%+v", o.Error)
	}
}

func TestKVMoreAndPublish(t *testing.T) {
	url := startServer(t, "", "")
	tl := New(Options{DefaultURL: url})
	defer tl.Close()
	ctx := context.Background()
	// Text is stored as is; keys and patterns; a missing bucket reads as
	// not_found.
	ok(t, tl.Exec(ctx, nil, M{"operation": "put", "bucket": "cfg", "key": "a.one", "value": "plain text", "ttl": 60, "history": 3}, 0))
	ok(t, tl.Exec(ctx, nil, M{"operation": "kv_put", "bucket": "cfg", "key": "a.two", "value": int64(2)}, 0))
	ok(t, tl.Exec(ctx, nil, M{"operation": "kv_put", "bucket": "cfg", "key": "b.one", "value": L{1, "x"}}, 0))
	if r := ok(t, tl.Exec(ctx, nil, M{"operation": "kv_get", "bucket": "cfg", "key": "a.one"}, 0)); r["value"] != "plain text" {
		t.Fatalf("%#v", r)
	}
	if r := ok(t, tl.Exec(ctx, nil, M{"operation": "kv_get", "bucket": "cfg", "key": "a.two"}, 0)); r["value"] != int64(2) {
		t.Fatalf("%#v", r)
	}
	r := ok(t, tl.Exec(ctx, nil, M{"operation": "kv_keys", "bucket": "cfg", "pattern": "a.*"}, 0))
	if !reflect.DeepEqual(r["keys"], []any{"a.one", "a.two"}) || r["count"] != int64(2) {
		t.Fatalf("%#v", r)
	}
	ok(t, tl.Exec(ctx, nil, M{"operation": "kv_purge", "bucket": "cfg", "key": "b.one"}, 0))
	if r := ok(t, tl.Exec(ctx, nil, M{"operation": "kv_keys", "bucket": "cfg"}, 0)); r["count"] != int64(2) {
		t.Fatalf("%#v", r)
	}
	if r := ok(t, tl.Exec(ctx, nil, M{"operation": "kv_get", "bucket": "nobucket", "key": "k"}, 0)); r["status"] != "not_found" {
		t.Fatalf("%#v", r)
	}

	// publish reaches a subscriber; js_publish lands in a stream.
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("events.test")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	r = ok(t, tl.Exec(ctx, nil, M{"operation": "publish", "subject": "events.test", "data": M{"n": 1}, "headers": M{"X-Id": "7"}}, 0))
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != `{"n":1}` || m.Header.Get("X-Id") != "7" || r["subject"] != "events.test" {
		t.Fatalf("%v %q %v", err, m.Data, r)
	}
	js, _ := nc.JetStream()
	if _, err := js.AddStream(&natsgo.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	r = ok(t, tl.Exec(ctx, nil, M{"operation": "js_publish", "subject": "orders.new", "data": "o-1"}, 0))
	if r["stream"] != "ORDERS" || r["seq"] != int64(1) {
		t.Fatalf("%#v", r)
	}
	// js_publish to a subject no stream captures fails (retryable nats).
	o := tl.Exec(ctx, nil, M{"operation": "js_publish", "subject": "nostream.x", "data": "x"}, 1)
	if o.Status != types.StatusError || (o.Error.Kind != "nats" && o.Error.Kind != "timeout") {
		t.Fatalf("%+v", o.Error)
	}
}

func TestErrors(t *testing.T) {
	url := startServer(t, "", "")
	tl := New(Options{})
	defer tl.Close()
	ctx := context.Background()
	for _, c := range []struct {
		cfg  M
		kind string
	}{
		{M{"url": url}, "config"},
		{M{"url": url, "operation": "watch"}, "config"},
		{M{"operation": "kv_get", "bucket": "b", "key": "k"}, "config"}, // no server
		{M{"url": url, "operation": "kv_get", "key": "k"}, "config"},
		{M{"url": url, "operation": "kv_get", "bucket": "b"}, "config"},
		{M{"url": url, "operation": "kv_put", "bucket": "b", "key": "k"}, "config"},
		{M{"url": url, "operation": "kv_put", "bucket": "b", "key": "k", "value": 1, "history": 100}, "config"},
		{M{"url": url, "operation": "kv_put", "bucket": "bad bucket", "key": "k", "value": 1}, "config"},
		{M{"url": url, "operation": "publish"}, "config"},
		{M{"auth": "nats_credential", "operation": "kv_get", "bucket": "b", "key": "k"}, "config"}, // no store
	} {
		o := tl.Exec(ctx, nil, c.cfg, 0)
		if o.Status != types.StatusError || string(o.Error.Kind) != c.kind {
			t.Errorf("%v: %+v", c.cfg, o.Error)
		}
	}
	// Nothing listens: retryable.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "nats://" + l.Addr().String()
	l.Close()
	o := tl.Exec(ctx, nil, M{"url": dead, "operation": "kv_get", "bucket": "b", "key": "k"}, 2)
	if o.Status != types.StatusError || !o.Error.Retryable || (o.Error.Kind != "nats" && o.Error.Kind != "timeout") {
		t.Fatalf("%+v", o.Error)
	}
}

// TestStackNATS runs the conformance KV steps against the stack's NATS
// server (NATS_URL from .stack/env).
func TestStackNATS(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but NATS_URL is unset: source .stack/env")
		}
		t.Skip("NATS not configured (run scripts/up and source .stack/env)")
	}
	tl := New(Options{})
	defer tl.Close()
	conformanceKV(t, tl, M{"nats_url": url, "nats_user": os.Getenv("NOETL_NATS_TASK_USER"), "nats_password": os.Getenv("NOETL_NATS_TASK_PASSWORD")})
	// Without the tasks' password the stack's NATS refuses the task.
	o := tl.Exec(context.Background(), nil, M{"auth": M{"nats_url": url, "nats_user": "noetl", "nats_password": "noetl"}, "operation": "kv_get", "bucket": "sessions", "key": "k"}, 5)
	if o.Status != types.StatusError || o.Error.Kind != "auth" {
		t.Fatalf("a credential the stack did not give: %+v", o.Error)
	}
}

// TestAccountLimits: a server that refuses a write for its account's
// limits (JetStream storage) fails the task once with kind limit, naming
// where the limits are set.
func TestAccountLimits(t *testing.T) {
	opts := &natsserver.Options{NoLog: true, NoSigs: true}
	if err := opts.ProcessConfigString(`host: 127.0.0.1
port: -1
jetstream { store_dir: ` + strconv.Quote(t.TempDir()) + ` }
accounts { T { users: [ {user: t, password: p} ], jetstream { max_file: 1048576, max_mem: 1048576 } } }`); err != nil {
		t.Fatal(err)
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	defer s.Shutdown()
	tl := New(Options{})
	defer tl.Close()
	auth := M{"nats_url": s.ClientURL(), "nats_user": "t", "nats_password": "p"}
	big := strings.Repeat("x", 200<<10)
	var o types.Outcome
	for i := 0; i < 20; i++ {
		if o = tl.Exec(context.Background(), nil, M{"auth": auth, "operation": "kv_put", "bucket": "park", "key": fmt.Sprintf("k%d", i), "value": big}, 10); o.Status != types.StatusOK {
			break
		}
	}
	if o.Status != types.StatusError || o.Error.Kind != "limit" || o.Error.Retryable || !strings.Contains(o.Error.Message, "NOETL_NATS_TASK_STORE_MB") {
		t.Fatalf("over the account's storage: %+v", o.Error)
	}
}

type L = []any
