package stack

// Tests against a running stack. They run only with NOETL_STACK=1:
//
//	scripts/up && NOETL_STACK=1 go test ./emulators/stack/ -run Stack -v
//
// The stack's environment is taken from the process (source .stack/env) or,
// when PUBSUB_EMULATOR_HOST is unset, read from <repo>/.stack/env.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/storage"
	"github.com/jackc/pgx/v5"
)

// stackEnv skips the test unless NOETL_STACK=1 and makes sure the stack's
// environment is set.
func stackEnv(t *testing.T) {
	t.Helper()
	if os.Getenv("NOETL_STACK") != "1" {
		t.Skip("set NOETL_STACK=1 (after scripts/up) to run tests against the local stack")
	}
	if os.Getenv("PUBSUB_EMULATOR_HOST") != "" {
		return
	}
	wd, _ := os.Getwd()
	root, err := FindRepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("NOETL_STACK_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".stack")
	}
	f, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatalf("stack environment: %v (run scripts/up)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if uq, err := unquoteShell(v); err == nil {
			t.Setenv(k, uq)
		}
	}
}

// unquoteShell undoes shellQuote.
func unquoteShell(s string) (string, error) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", fmt.Errorf("not single-quoted: %s", s)
	}
	return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`), nil
}

func project() string { return os.Getenv("GOOGLE_CLOUD_PROJECT") }

func emulatorClient(t *testing.T) *pubsub.Client {
	t.Helper()
	c, err := NewPubSubClient(context.Background(), project(), os.Getenv("PUBSUB_EMULATOR_HOST"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStackOrderedPublishPull publishes 20 ordered messages through the
// emulator and reads them back, in order, from a temporary pull
// subscription.
func TestStackOrderedPublishPull(t *testing.T) {
	stackEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := emulatorClient(t)
	e := newScenario(t, ctx, c, project())
	ids := e.publish(t, ctx, []string{"exec-1"}, 20)

	var mu sync.Mutex
	var got []int
	rctx, rcancel := context.WithCancel(ctx)
	err := c.Subscriber(e.sub).Receive(rctx, func(_ context.Context, m *pubsub.Message) {
		var p payload
		_ = json.Unmarshal(m.Data, &p)
		mu.Lock()
		defer mu.Unlock()
		if m.OrderingKey != "exec-1" || ids[fmt.Sprintf("exec-1/%d", p.Seq)] != m.ID {
			t.Errorf("message %s: key %q payload %+v", m.ID, m.OrderingKey, p)
		}
		got = append(got, p.Seq)
		m.Ack()
		if len(got) == 20 {
			rcancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, seq := range got {
		if seq != i {
			t.Fatalf("received %v, want 0..19 in order", got)
		}
	}
	if len(got) != 20 {
		t.Fatalf("received %d messages, want 20", len(got))
	}
}

// TestStackBridgeEmulator runs the bridge scenarios against the emulator:
// CloudEvent format, ordering under failures, retries, dead-lettering and
// bounded parallelism across keys.
func TestStackBridgeEmulator(t *testing.T) {
	stackEnv(t)
	c := emulatorClient(t)
	t.Run("ordering-retry-deadletter", func(t *testing.T) { runBridgeScenario(t, c, project()) })
	t.Run("concurrency", func(t *testing.T) { runConcurrencyScenario(t, c, project()) })
}

// TestStackProvisioned checks the topics, subscriptions, queues and bucket
// the supervisor provisions.
func TestStackProvisioned(t *testing.T) {
	stackEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := emulatorClient(t)
	p := project()
	for _, id := range []string{EventsTopic, CommandsTopic, EventsDeadTopic, CommandsDeadTopic} {
		if _, err := c.TopicAdminClient.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: "projects/" + p + "/topics/" + id}); err != nil {
			t.Errorf("topic %s: %v", id, err)
		}
	}
	for _, s := range Subscriptions {
		got, err := c.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: "projects/" + p + "/subscriptions/" + s.Name})
		if err != nil {
			t.Errorf("subscription %s: %v", s.Name, err)
			continue
		}
		if got.Topic != "projects/"+p+"/topics/"+s.Topic || got.EnableMessageOrdering || got.Filter != s.Filter || got.AckDeadlineSeconds != 60 {
			t.Errorf("subscription %s: %v", s.Name, got)
		}
	}

	tc, err := NewTasksClient(ctx, os.Getenv("CLOUDTASKS_EMULATOR_HOST"))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	conc, _ := strconv.Atoi(os.Getenv("NOETL_WORK_CONCURRENCY"))
	attempts, _ := strconv.Atoi(os.Getenv("NOETL_TASKS_MAX_ATTEMPTS"))
	for _, id := range []string{WorkQueue, TimersQueue} {
		name := "projects/" + p + "/locations/" + os.Getenv("NOETL_LOCATION") + "/queues/" + id
		q, err := tc.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: name})
		if err != nil {
			t.Errorf("queue %s: %v", id, err)
			continue
		}
		rc := q.GetRetryConfig()
		if q.GetRateLimits().GetMaxConcurrentDispatches() != int32(conc) || rc.GetMaxAttempts() != int32(attempts) ||
			rc.GetMinBackoff().AsDuration() != 200*time.Millisecond || rc.GetMaxBackoff().AsDuration() != 2*time.Second {
			t.Errorf("queue %s: %v", id, q)
		}
	}

	// GCS through STORAGE_EMULATOR_HOST, as the functions use it.
	sc, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	obj := sc.Bucket(os.Getenv("NOETL_RESULTS_BUCKET")).Object(fmt.Sprintf("stack-test/%d.json", time.Now().UnixNano()))
	w := obj.NewWriter(ctx)
	w.ContentType = "application/json"
	_, _ = w.Write([]byte(`{"ok":true}`))
	if err := w.Close(); err != nil {
		t.Fatalf("GCS write: %v", err)
	}
	r, err := obj.NewReader(ctx)
	if err != nil {
		t.Fatalf("GCS read: %v", err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != `{"ok":true}` {
		t.Errorf("GCS read back %q", b)
	}
	if err := obj.Delete(ctx); err != nil {
		t.Errorf("GCS delete: %v", err)
	}
}

// TestStackFirestore writes and reads a document through
// FIRESTORE_EMULATOR_HOST.
func TestStackFirestore(t *testing.T) {
	stackEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs, err := firestore.NewClient(ctx, project())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	doc := fs.Collection("stack-test").Doc(fmt.Sprint(time.Now().UnixNano()))
	if _, err := doc.Create(ctx, map[string]any{"n": 1}); err != nil {
		t.Fatalf("create: %v", err)
	}
	snap, err := doc.Get(ctx)
	if err != nil || snap.Data()["n"] != int64(1) {
		t.Fatalf("get: %v %v", snap.Data(), err)
	}
	_, _ = doc.Delete(ctx)
}

// TestStackPostgres connects with NOETL_PG_DSN and uses the subdivisions
// table the stack's SQL creates.
func TestStackPostgres(t *testing.T) {
	stackEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, os.Getenv("NOETL_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO subdivisions (code, country_code, name, type) VALUES ('ZZ-T1', 'ZZ', 'Test', 'Test')`); err != nil {
		t.Fatal(err)
	}
	var n int
	var updated time.Time
	if err := tx.QueryRow(ctx, `SELECT count(*), max(updated_at) FROM subdivisions WHERE code = 'ZZ-T1'`).Scan(&n, &updated); err != nil || n != 1 || updated.IsZero() {
		t.Fatalf("count %d updated %v: %v", n, updated, err)
	}
}

// TestStackHTTPEndpoints checks the fixtures and the functions server.
func TestStackHTTPEndpoints(t *testing.T) {
	stackEnv(t)
	for _, u := range []string{
		os.Getenv("NOETL_FIXTURES_URL") + "/healthz",
		os.Getenv("NOETL_FIXTURES_URL") + "/api/v1/assessments?page=4&pageSize=10",
		os.Getenv("NOETL_FUNCTIONS_URL") + "/api/healthz",
	} {
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("GET %s: %v", u, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", u, resp.Status)
		}
	}
}
