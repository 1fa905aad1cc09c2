package allkinds

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/storage"

	"github.com/noetl/gcpengine/runner/kinds"
	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/credentials/credfirestore"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/results/gcsresults"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// stackEnv returns the stack's environment (.stack/env); without it the
// test is skipped, or fails when NOETL_STACK=1 says the stack must be up.
func stackEnv(t *testing.T, keys ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range keys {
		v := os.Getenv(k)
		if v == "" {
			if os.Getenv("NOETL_STACK") == "1" {
				t.Fatalf("NOETL_STACK=1 but %s is unset: source .stack/env", k)
			}
			t.Skipf("%s not set (run scripts/up and source .stack/env)", k)
		}
		out[k] = v
	}
	return out
}

// TestStackKinds runs the tool kinds through the registry against the
// services of the local stack, with the credentials registered in the
// stack's Firestore credential store the way the conformance playbooks
// expect them (pg_local, nats_credential, pubsub_e2e): postgres (auth by
// name), transfer http → postgres → duckdb (a postgres table read by
// DuckDB through the engine's transfer kind, no DuckDB extension), nats
// kv_put/kv_get/kv_delete, a Pub/Sub subscription drain, gcs upload and
// download, secrets from the store, and artifact get of a result stored
// in the stack's GCS results bucket.
func TestStackKinds(t *testing.T) {
	env := stackEnv(t, "FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST", "STORAGE_EMULATOR_HOST", "NATS_URL", "NOETL_NATS_TASK_USER", "NOETL_NATS_TASK_PASSWORD", "NOETL_PG_PORT", "NOETL_PG_DSN")
	for _, hp := range []string{env["FIRESTORE_EMULATOR_HOST"], env["PUBSUB_EMULATOR_HOST"], strings.TrimPrefix(env["STORAGE_EMULATOR_HOST"], "http://"), strings.TrimPrefix(env["NATS_URL"], "nats://")} {
		c, err := net.DialTimeout("tcp", hp, 3*time.Second)
		if err != nil {
			t.Fatalf("stack service %s unreachable: %v", hp, err)
		}
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	if project == "" {
		project = "noetl-local"
	}
	fc, err := firestore.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	signer, err := sign.New([]byte("tools-stack-test-key-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	store := credfirestore.NewFirestore(fc, credfirestore.NewFirestoreValues(fc, credfirestore.SealWith(signer)))
	suffix := fmt.Sprint(time.Now().UnixNano())
	// The tasks run as one execution (results by ownership).
	ctx = results.WithReader(ctx, results.Reader{Execution: suffix})
	pgCred, natsCred, psCred, apiCred := "pg_local_"+suffix, "nats_credential_"+suffix, "pubsub_e2e_"+suffix, "api_"+suffix
	for _, c := range []credentials.Credential{
		{Name: pgCred, Kind: "postgres", Data: map[string]any{"host": "127.0.0.1", "port": env["NOETL_PG_PORT"], "user": "noetl", "password": "", "database": "noetl", "sslmode": "disable"}},
		{Name: natsCred, Kind: "nats", Data: map[string]any{"nats_url": env["NATS_URL"], "nats_user": env["NOETL_NATS_TASK_USER"], "nats_password": env["NOETL_NATS_TASK_PASSWORD"]}},
		{Name: psCred, Kind: "pubsub", Data: map[string]any{"endpoint": env["PUBSUB_EMULATOR_HOST"]}},
		{Name: apiCred, Kind: "http_bearer", Data: map[string]any{"token": "tok-" + suffix}},
	} {
		if err := store.CredentialPut(ctx, c); err != nil {
			t.Fatalf("put %s: %v", c.Name, err)
		}
		name := c.Name
		t.Cleanup(func() { _ = store.CredentialDelete(context.Background(), name) })
	}
	gcsClient, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gcsClient.Close()
	bucket := os.Getenv("NOETL_RESULTS_BUCKET")
	if bucket == "" {
		bucket = "noetl-results"
	}
	rs := &results.Store{Backend: gcsresults.NewGCS(gcsClient, bucket)}
	reg, closeFn := Default(kinds.Options{Credentials: store, Results: rs, Project: project})
	defer closeFn()
	run := func(kind string, args, cfg map[string]any) map[string]any {
		t.Helper()
		o := reg[kind].Run(ctx, tools.Request{Args: args, Config: cfg})
		if o.Status != types.StatusOK {
			t.Fatalf("%s %v: %+v", kind, cfg, o.Error)
		}
		m, _ := o.Result.(map[string]any)
		return m
	}

	// postgres + transfer (http → postgres, postgres → duckdb) + duckdb.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var posts []map[string]any
		for id := 1; id <= 100; id++ {
			posts = append(posts, map[string]any{"userId": (id-1)/10 + 1, "id": id, "title": fmt.Sprint("t", id), "body": "b"})
		}
		_ = json.NewEncoder(w).Encode(posts)
	}))
	defer api.Close()
	table := "public.tools_stack_" + suffix
	run(tools.KindPostgres, nil, map[string]any{"auth": pgCred, "command": "CREATE TABLE " + table + " (id SERIAL PRIMARY KEY, post_id INTEGER, user_id INTEGER, title TEXT, body TEXT)"})
	defer run(tools.KindPostgres, nil, map[string]any{"auth": pgCred, "command": "DROP TABLE IF EXISTS " + table})
	r := run(tools.KindTransfer, nil, map[string]any{
		"source": map[string]any{"type": "http", "url": api.URL + "/posts", "method": "GET"},
		"target": map[string]any{"type": "postgres", "auth": pgCred, "table": table, "mapping": map[string]any{"user_id": "userId", "post_id": "id", "title": "title", "body": "body"}},
	})
	if r["rows_transferred"] != int64(100) {
		t.Fatalf("transfer %#v", r)
	}
	r = run(tools.KindPostgres, nil, map[string]any{"auth": pgCred, "command": "SELECT count(*) AS n, count(DISTINCT user_id) AS u, min(post_id) AS lo, max(post_id) AS hi FROM " + table})
	if got := r["rows"].([]any)[0]; !reflect.DeepEqual(got, map[string]any{"n": int64(100), "u": int64(10), "lo": int64(1), "hi": int64(100)}) {
		t.Fatalf("postgres %#v", got)
	}
	if duckdb.Available {
		db := filepath.Join(t.TempDir(), "stack.duckdb")
		run(tools.KindTransfer, nil, map[string]any{
			"source": map[string]any{"type": "postgres", "auth": pgCred, "query": "SELECT post_id, user_id, title FROM " + table},
			"target": map[string]any{"type": "duckdb", "database": db, "table": "posts"},
		})
		r = run(tools.KindDuckDB, nil, map[string]any{"database": db, "query": "SELECT user_id, count(*) AS n FROM posts GROUP BY user_id ORDER BY user_id LIMIT 2"})
		if !reflect.DeepEqual(r["rows"], []any{map[string]any{"user_id": int64(1), "n": int64(10)}, map[string]any{"user_id": int64(2), "n": int64(10)}}) {
			t.Fatalf("duckdb %#v", r)
		}
	}

	// nats (test_nats_kv.yaml).
	val := map[string]any{"session_token": "s-" + suffix, "user_id": int64(1), "is_active": true}
	run(tools.KindNATS, nil, map[string]any{"auth": natsCred, "operation": "kv_put", "bucket": "sessions", "key": "k" + suffix, "value": val})
	if r = run(tools.KindNATS, nil, map[string]any{"auth": natsCred, "operation": "kv_get", "bucket": "sessions", "key": "k" + suffix}); !reflect.DeepEqual(r["value"], val) {
		t.Fatalf("kv_get %#v", r)
	}
	run(tools.KindNATS, nil, map[string]any{"auth": natsCred, "operation": "kv_delete", "bucket": "sessions", "key": "k" + suffix})

	// subscription (subscription_pubsub_drain.yaml).
	ps, err := pubsubapi.NewTopicAdminClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	sc, err := pubsubapi.NewSubscriptionAdminClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	topic, sub := "projects/noetl-e2e/topics/drain-"+suffix, "projects/noetl-e2e/subscriptions/drain-"+suffix
	if _, err := ps.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	defer ps.DeleteTopic(context.Background(), &pubsubpb.DeleteTopicRequest{Topic: topic})
	if _, err := sc.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic}); err != nil {
		t.Fatal(err)
	}
	defer sc.DeleteSubscription(context.Background(), &pubsubpb.DeleteSubscriptionRequest{Subscription: sub})
	for i := 0; i < 5; i++ {
		if _, err := ps.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic, Messages: []*pubsubpb.PubsubMessage{{Data: []byte(fmt.Sprintf(`{"i": %d}`, i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	r = run(tools.KindSubscription, nil, map[string]any{"source": "pubsub", "operation": "poll", "auth": psCred, "subscription": sub, "batch": int64(50), "timeout_ms": int64(4000), "ack": "on_success"})
	if r["source"] != "pubsub" || r["count"] != int64(5) || r["acked"] != true {
		t.Fatalf("drain %#v", r)
	}

	// gcs, secrets, artifact.
	// The results bucket is out of the tasks' reach; another is not.
	if o := reg[tools.KindGCS].Run(ctx, tools.Request{Config: map[string]any{"data": map[string]any{"forged": true}, "destination": "gs://" + bucket + "/x.json"}}); o.Status != types.StatusError || o.Error.Kind != types.ErrKindForbidden {
		t.Fatalf("gcs into the results bucket: %+v", o)
	}
	userBucket := "tools-stack-" + suffix
	if err := gcsClient.Bucket(userBucket).Create(ctx, project, nil); err != nil {
		t.Fatal(err)
	}
	obj := "gs://" + userBucket + "/tools-stack/" + suffix + ".json"
	run(tools.KindGCS, nil, map[string]any{"data": map[string]any{"ok": true}, "destination": obj})
	if r = run(tools.KindGCS, nil, map[string]any{"action": "download", "source": obj}); !reflect.DeepEqual(r["data"], map[string]any{"ok": true}) {
		t.Fatalf("gcs %#v", r)
	}
	run(tools.KindGCS, nil, map[string]any{"action": "delete", "uri": obj})
	if r = run(tools.KindSecrets, nil, map[string]any{"provider": "credential", "key": apiCred}); r["token"] != "tok-"+suffix {
		t.Fatalf("secrets %#v", r)
	}
	big := map[string]any{"items": strings.Repeat("x", 80000), "count": int64(1)}
	ref, err := rs.Offload(ctx, types.ResultCoords{ExecutionID: suffix, Step: "start"}, big)
	if err != nil || ref == nil {
		t.Fatalf("offload %v %v", ref, err)
	}
	if r = run(tools.KindArtifact, map[string]any{"result_ref": ref}, map[string]any{"action": "get"}); !reflect.DeepEqual(r, big) {
		t.Fatal("artifact get did not return the stored value")
	}
}
