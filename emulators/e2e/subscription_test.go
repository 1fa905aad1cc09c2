package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/subscribe"
)

// The Subscription resource of the DSL v2 conformance set (README
// "Subscription resource"): subscription/cloudrun_pubsub_stream.subscription.yaml
// with its placeholders substituted for an emulator subscription, a
// fake-gcs-server bucket and the engine's own URL.
const (
	subResource = "subscription/cloudrun_pubsub_stream.subscription.yaml"
	subPlaybook = "subscription/sub_ingest_default.yaml"
	subName     = "cloudrun_pubsub_stream"
	spoolBucket = "noetl-subscription-spool"
	nMessages   = 5
)

// subEnv is one test's Pub/Sub topic and subscription (unique names) and
// the clients the test uses.
type subEnv struct {
	t        *testing.T
	ps       *pubsub.Client
	gcs      *storage.Client
	project  string
	topic    string // full name
	subPath  string // full name
	funcs    string // NOETL_FUNCTIONS_URL
	registry *firestorestore.Firestore
}

func newSubEnv(t *testing.T) *subEnv {
	t.Helper()
	RequireStack(t)
	ctx := t.Context()
	e := &subEnv{t: t, project: os.Getenv("GOOGLE_CLOUD_PROJECT"), funcs: os.Getenv("NOETL_FUNCTIONS_URL")}
	var err error
	if e.ps, err = pubsub.NewClient(ctx, e.project); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ps.Close() })
	if e.gcs, err = storage.NewClient(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.gcs.Close() })
	if e.registry, err = firestorestore.OpenFirestore(ctx, e.project); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.registry.Close() })
	suffix := randSuffix()
	e.topic = "projects/" + e.project + "/topics/sub-e2e-" + suffix
	e.subPath = "projects/" + e.project + "/subscriptions/sub-e2e-" + suffix
	if _, err := e.ps.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: e.topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ps.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: e.subPath, Topic: e.topic, AckDeadlineSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	if err := e.gcs.Bucket(spoolBucket).Create(ctx, e.project, nil); err != nil && !strings.Contains(err.Error(), "409") && !strings.Contains(strings.ToLower(err.Error()), "already") {
		t.Fatal(err)
	}
	// The playbook each message starts, in the catalog under its
	// metadata.path (tests/fixtures/sub_ingest_default).
	src, err := os.ReadFile(Conformance("noetl-v2", subPlaybook))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, e.funcs+"/api/playbooks", src); code != 201 {
		t.Fatalf("POST /playbooks: %d %s", code, body)
	}
	return e
}

// register posts the reference resource with its placeholders substituted;
// it is deleted when the test ends.
func (e *subEnv) register(serverURL string) {
	e.t.Helper()
	ref, err := os.ReadFile(Conformance("noetl-v2", subResource))
	if err != nil {
		e.t.Fatal(err)
	}
	res, missing := dsl.Substitute(string(ref), map[string]string{"PUBSUB_SUBSCRIPTION": e.subPath, "SPOOL_BUCKET": spoolBucket, "NOETL_SERVER_URL": serverURL})
	if len(missing) > 0 {
		e.t.Fatalf("placeholders left: %v", missing)
	}
	body, _ := json.Marshal(map[string]any{"resource": res})
	code, out := post(e.t, e.funcs+"/api/subscriptions", body)
	if code != 201 {
		e.t.Fatalf("POST /subscriptions: %d %s", code, out)
	}
	var r map[string]any
	_ = jsonx.Unmarshal([]byte(out), &r)
	if r["pubsub_subscription"] != e.subPath || r["delivery"] != "push" || r["push_endpoint"] != e.funcs+"/subscribe/push/"+subName || r["topic"] != e.topic {
		e.t.Fatalf("registration %s", out)
	}
	e.t.Cleanup(func() { e.delete(true) })
}

// delete unregisters the resource (allowMissing: a 404 is fine).
func (e *subEnv) delete(allowMissing bool) { deleteSubscription(e.t, e.funcs, subName, allowMissing) }

// publish publishes the README's message i ({"seq": i, "hello":
// "cloud-run"}, attribute x-idempotency-key: cr-i) and returns its id.
func (e *subEnv) publish(i int, extra map[string]string) string {
	e.t.Helper()
	attrs := map[string]string{"x-idempotency-key": fmt.Sprintf("cr-%d", i)}
	for k, v := range extra {
		attrs[k] = v
	}
	p := e.ps.Publisher(e.topic)
	defer p.Stop()
	id, err := p.Publish(e.t.Context(), &pubsub.Message{Data: fmt.Appendf(nil, `{"seq": %d, "hello": "cloud-run"}`, i), Attributes: attrs}).Get(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// executionID is the id the engine derives for a message of the topic.
func (e *subEnv) executionID(messageID string) string {
	return subscribe.ExecutionID(subName, "msg:"+e.topic+"/"+messageID)
}

// checkIngested waits for the execution of message i and checks the
// README's outcome (start.ingested true, start.via "default") and the
// workload NoETL's runtime builds.
func (e *subEnv) checkIngested(i int, messageID string) {
	e.t.Helper()
	id := e.executionID(messageID)
	m := waitDone(e.t, id)
	start, _ := m["results"].(map[string]any)["start"].(map[string]any)
	if m["status"] != "ok" || m["playbook"] != "tests/fixtures/sub_ingest_default" || start["ingested"] != true || start["via"] != "default" || start["message_id"] != messageID {
		e.t.Errorf("message %d (%s): execution %s: status %v, playbook %v, start %s", i, messageID, id, m["status"], m["playbook"], MustJSON(start))
	}
	rec, err := e.registry.ExecutionGet(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	w := rec.State.Workload
	msg, _ := w["message"].(map[string]any)
	headers, _ := msg["headers"].(map[string]any)
	if asInt(w["seq"]) != int64(i) || w["hello"] != "cloud-run" || w["idempotency_key"] != fmt.Sprintf("cr-%d", i) || w["source"] != "pubsub" ||
		w["subscription"] != "subscriptions/"+subName || msg["id"] != messageID || headers["x-idempotency-key"] != fmt.Sprintf("cr-%d", i) {
		e.t.Errorf("message %d: workload %s", i, MustJSON(w))
	}
}

// executionsSince counts the executions of sub_ingest_default created
// since t0 whose id is in ids, and those that are not.
func (e *subEnv) executionsSince(t0 time.Time, ids map[string]bool) (mine, others int) {
	return executionsOf(e.t, e.funcs, "tests/fixtures/sub_ingest_default", t0, ids)
}

// pushTwice posts the same Pub/Sub push body to the subscribe function
// twice (a redelivery) and returns the execution ids of both answers.
func (e *subEnv) pushTwice(messageID string, i int) [2]string {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{
		"message": map[string]any{
			"data":       base64.StdEncoding.EncodeToString(fmt.Appendf(nil, `{"seq": %d, "hello": "cloud-run"}`, i)),
			"attributes": map[string]string{"x-idempotency-key": fmt.Sprintf("cr-%d", i)},
			"messageId":  messageID, "message_id": messageID, "publishTime": time.Now().UTC().Format(time.RFC3339Nano),
		},
		"subscription": e.subPath,
	})
	var out [2]string
	for k := range out {
		code, resp := post(e.t, e.funcs+"/subscribe/push/"+subName, body)
		var r map[string]any
		_ = jsonx.Unmarshal([]byte(resp), &r)
		if code != 200 || r["outcome"] != "started" {
			e.t.Fatalf("redelivery %d of message %s: %d %s", k+1, messageID, code, resp)
		}
		out[k], _ = r["execution_id"].(string)
	}
	return out
}

// TestSubscriptionResource is the conformance README's outcome: the
// resource registered through the api, N messages published on its
// Pub/Sub subscription start N executions of sub_ingest_default with
// start.ingested true and start.via "default"; a redelivered message
// starts nothing new; the W3C trace context is recorded; a resource with
// placeholders is refused; after DELETE the subscription delivers nothing
// more (its messages wait in it).
func TestSubscriptionResource(t *testing.T) {
	e := newSubEnv(t)
	t0 := time.Now()
	ref, _ := os.ReadFile(Conformance("noetl-v2", subResource))
	if code, out := post(t, e.funcs+"/api/subscriptions", ref); code != 400 || !strings.Contains(out, "${PUBSUB_SUBSCRIPTION}") {
		t.Errorf("a resource with placeholders: %d %s; want 400 naming them", code, out)
	}
	e.register(e.funcs)
	got := getJSON(t, e.funcs+"/api/subscriptions/"+subName)
	if got["pubsub_subscription"] != e.subPath || !strings.Contains(fmt.Sprint(got["source"]), "subscription: "+e.subPath) {
		t.Errorf("GET /subscriptions/%s = %s", subName, MustJSON(got))
	}
	sub, err := e.ps.SubscriptionAdminClient.GetSubscription(t.Context(), &pubsubpb.GetSubscriptionRequest{Subscription: e.subPath})
	if err != nil || sub.GetPushConfig().GetPushEndpoint() != e.funcs+"/subscribe/push/"+subName {
		t.Fatalf("the emulator subscription's push config: %v, %v", sub.GetPushConfig(), err)
	}

	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ids := map[string]bool{}
	msgIDs := make([]string, nMessages+1)
	for i := 1; i <= nMessages; i++ {
		var extra map[string]string
		if i == 1 {
			extra = map[string]string{"traceparent": traceparent}
		}
		msgIDs[i] = e.publish(i, extra)
		ids[e.executionID(msgIDs[i])] = true
	}
	for i := 1; i <= nMessages; i++ {
		e.checkIngested(i, msgIDs[i])
	}
	// A redelivery of message 3 (the push body Pub/Sub would send again).
	if dup := e.pushTwice(msgIDs[3], 3); dup[0] != e.executionID(msgIDs[3]) || dup[1] != dup[0] {
		t.Errorf("redeliveries of message 3 started %v; want the existing %s", dup, e.executionID(msgIDs[3]))
	}
	time.Sleep(2 * time.Second) // anything a duplicate would have started is listed by now
	if mine, others := e.executionsSince(t0, ids); mine != nMessages || others != 0 {
		t.Errorf("executions of sub_ingest_default since the test began: %d of the messages, %d others; want exactly %d and 0", mine, others, nMessages)
	}
	// The message's W3C trace context is recorded with the execution's
	// request (its sampled flag makes the execution sampled).
	evs := Events(t, e.executionID(msgIDs[1]))
	var tc any
	for _, ev := range evs {
		if ev["event_type"] == "playbook.execution.requested" {
			tc = payload(ev)["trace"]
		}
	}
	if m, _ := tc.(map[string]any); m["traceparent"] != traceparent {
		t.Errorf("request event trace = %v; want traceparent %s", tc, traceparent)
	}

	// DELETE: the subscription stops pushing; a message published now
	// waits in it and starts nothing.
	e.delete(false)
	if code, _ := post(t, e.funcs+"/subscribe/push/"+subName, []byte(`{"message": {"data": "", "messageId": "x"}}`)); code != 404 {
		t.Errorf("a push for the deleted registration answered %d; want 404 (Pub/Sub keeps the message)", code)
	}
	late := e.publish(99, nil)
	pctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	var pulled []string
	for len(pulled) == 0 && pctx.Err() == nil {
		resp, err := e.ps.SubscriptionAdminClient.Pull(pctx, &pubsubpb.PullRequest{Subscription: e.subPath, MaxMessages: 10})
		if err != nil && pctx.Err() == nil {
			t.Fatal(err)
		}
		for _, rm := range resp.GetReceivedMessages() {
			pulled = append(pulled, rm.GetMessage().GetMessageId())
		}
	}
	if len(pulled) != 1 || pulled[0] != late {
		t.Errorf("pulled %v after DELETE; want the late message %s waiting in the subscription", pulled, late)
	}
	if _, err := e.registry.ExecutionGet(t.Context(), e.executionID(late)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the message published after DELETE started an execution: %v", err)
	}
}

// spoolObjects lists the .json objects under the subscription's spool
// prefix and decodes them.
func (e *subEnv) spoolObjects() []subscribe.Item {
	return listSpool(e.t, e.gcs, subscribe.SpoolPrefix(subName))
}

// listSpool lists the .json objects under prefix of the spool bucket and
// decodes them.
func listSpool(t *testing.T, gcs *storage.Client, prefix string) []subscribe.Item {
	t.Helper()
	it := gcs.Bucket(spoolBucket).Objects(t.Context(), &storage.Query{Prefix: prefix})
	var out []subscribe.Item
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(a.Name, ".json") {
			t.Errorf("spool object %s is not .json", a.Name)
		}
		r, err := gcs.Bucket(spoolBucket).Object(a.Name).NewReader(t.Context())
		if err != nil {
			continue // drained meanwhile
		}
		b, _ := io.ReadAll(r)
		r.Close()
		var item subscribe.Item
		if err := json.Unmarshal(b, &item); err != nil {
			t.Fatalf("spool object %s: %v", a.Name, err)
		}
		out = append(out, item)
	}
}

// tickCircuit calls the subscribe function's tick and returns the phase of
// the control_plane circuit.
func (e *subEnv) tickCircuit() string { return tickPhase(e.t, e.funcs, subName) }

// TestSubscriptionSpool is the README's spool case: while the control
// plane is unreachable (the circuit's http probe target refuses
// connections) messages are written as .json objects under
// gs://<bucket>/subscriptions/<name>/spool/ and start nothing; once it
// answers again the spool drains to zero and every message's execution
// completes.
func TestSubscriptionSpool(t *testing.T) {
	e := newSubEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // unreachable until the recovery below
	e.register("http://" + addr)
	deadline := time.Now().Add(30 * time.Second)
	for e.tickCircuit() != "open" {
		if time.Now().After(deadline) {
			t.Fatal("the circuit did not open while its probe target refused connections")
		}
		time.Sleep(500 * time.Millisecond)
	}
	msgIDs := make([]string, nMessages+1)
	for i := 1; i <= nMessages; i++ {
		msgIDs[i] = e.publish(i, nil)
	}
	list := func() []subscribe.Item { return e.spoolObjects() }
	items := awaitSpooled(t, list, nMessages, subName, "cr-", msgIDs, func(id string) error { _, err := e.registry.ExecutionGet(t.Context(), e.executionID(id)); return err })
	// Recovery: the probe target answers.
	recoverAndDrain(t, addr, list)
	if phase := e.tickCircuit(); phase != "closed" {
		t.Errorf("circuit %s after recovery", phase)
	}
	for i := 1; i <= nMessages; i++ {
		e.checkIngested(i, msgIDs[i])
	}
	t.Logf("%d messages spooled while %s refused connections; the spool drained to zero after recovery", len(items), addr)
}

// awaitSpooled waits (30 s) until list holds n spool items and checks
// them: each of subscription sub, held for the control plane's open
// circuit, its idempotency key prefixed keyPrefix; every message of
// msgIDs (1-based) among them and none of them started (started returns
// store.ErrNotFound for a message that started no execution). It returns
// the items.
func awaitSpooled(t *testing.T, list func() []subscribe.Item, n int, sub, keyPrefix string, msgIDs []string, started func(messageID string) error) []subscribe.Item {
	t.Helper()
	var items []subscribe.Item
	deadline := time.Now().Add(30 * time.Second)
	for items = list(); len(items) < n; items = list() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages spooled", len(items), n)
		}
		time.Sleep(300 * time.Millisecond)
	}
	spooled := map[string]bool{}
	for _, it := range items {
		spooled[it.MessageID] = true
		if it.Subscription != sub || it.Downstream != "control_plane" || it.Reason != "circuit_open" || !strings.HasPrefix(it.IdempotencyKey, keyPrefix) {
			t.Errorf("spool item %+v", it)
		}
	}
	for i := 1; i <= n; i++ {
		if !spooled[msgIDs[i]] {
			t.Errorf("message %s not in the spool", msgIDs[i])
		}
		if err := started(msgIDs[i]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("message %d started an execution while the control plane was unreachable: %v", i, err)
		}
	}
	return items
}

// recoverAndDrain makes the probe target at addr answer again and waits
// (60 s) until list, the spool, is empty.
func recoverAndDrain(t *testing.T, addr string, list func() []subscribe.Item) {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })}
	rl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	go srv.Serve(rl)
	t.Cleanup(func() { srv.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for left := list(); len(left) > 0; left = list() {
		if time.Now().After(deadline) {
			t.Fatalf("the spool still holds %d objects a minute after recovery", len(left))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
