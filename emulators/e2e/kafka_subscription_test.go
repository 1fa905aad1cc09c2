package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/kafkasrc"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/firestorestore"
	"github.com/noetl/gcpengine/shared/subscribe"
)

// The Kafka subscription of this project's own conformance set
// (lastmile/kafka): the Pub/Sub subscription cases (subscription_test.go)
// with a Kafka source on the stack's Kafka cluster (NOETL_KAFKA_BROKERS):
// the subscribe function pulls the topic on the stack's ticks.
const (
	kafkaResource = "kafka/orders.subscription.yaml"
	kafkaPlaybook = "kafka/ingest.yaml"
	kafkaSubName  = "lastmile_kafka_orders"
	kafkaPath     = "lastmile/kafka_orders"
	kafkaIngest   = "lastmile/kafka_ingest"
)

// kafkaEnv is one test's topic (two partitions) and group on the stack's
// Kafka, with the clients the test uses.
type kafkaEnv struct {
	t        *testing.T
	cl       *kgo.Client
	adm      *kadm.Client
	gcs      *storage.Client
	topic    string
	group    string
	funcs    string
	registry *firestorestore.Firestore
}

func newKafkaEnv(t *testing.T) *kafkaEnv {
	t.Helper()
	setupV2(t) // the kafka_local credential
	ctx := t.Context()
	e := &kafkaEnv{t: t, funcs: os.Getenv("NOETL_FUNCTIONS_URL")}
	suffix := randSuffix()
	e.topic, e.group = "orders-"+suffix, "noetl-"+suffix
	var err error
	if e.cl, err = kgo.NewClient(kgo.SeedBrokers(os.Getenv("NOETL_KAFKA_BROKERS")), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cl.Close)
	e.adm = kadm.NewClient(e.cl)
	if _, err := e.adm.CreateTopic(ctx, 2, 1, nil, e.topic); err != nil {
		t.Fatalf("create topic %s on %s: %v", e.topic, os.Getenv("NOETL_KAFKA_BROKERS"), err)
	}
	if e.gcs, err = storage.NewClient(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.gcs.Close() })
	if err := e.gcs.Bucket(spoolBucket).Create(ctx, os.Getenv("GOOGLE_CLOUD_PROJECT"), nil); err != nil && !strings.Contains(err.Error(), "409") && !strings.Contains(strings.ToLower(err.Error()), "already") {
		t.Fatal(err)
	}
	if e.registry, err = firestorestore.OpenFirestore(ctx, os.Getenv("GOOGLE_CLOUD_PROJECT")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.registry.Close() })
	src, err := os.ReadFile(lastmile(kafkaPlaybook))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, e.funcs+"/api/playbooks", src); code != 201 && code != 200 {
		t.Fatalf("POST /playbooks: %d %s", code, body)
	}
	return e
}

// register posts the resource with its placeholders substituted; it is
// deleted when the test ends.
func (e *kafkaEnv) register(serverURL string) {
	e.t.Helper()
	ref, err := os.ReadFile(lastmile(kafkaResource))
	if err != nil {
		e.t.Fatal(err)
	}
	res, missing := dsl.Substitute(string(ref), map[string]string{"KAFKA_TOPIC": e.topic, "KAFKA_GROUP": e.group, "SPOOL_BUCKET": spoolBucket, "NOETL_SERVER_URL": serverURL})
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
	if r["pubsub_subscription"] != "kafka:"+e.topic+"#"+e.group || r["delivery"] != "pull" || r["topic"] != e.topic || r["playbook"] != kafkaIngest {
		e.t.Fatalf("registration %s", out)
	}
	e.t.Cleanup(func() { deleteSubscription(e.t, e.funcs, kafkaSubName, true) })
}

// deleteSubscription unregisters name (allowMissing: a 404 is fine).
func deleteSubscription(t *testing.T, funcs, name string, allowMissing bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, funcs+"/api/subscriptions/"+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != 204 && !(allowMissing && resp.StatusCode == 404) {
		t.Errorf("DELETE /subscriptions/%s: %d", name, resp.StatusCode)
	}
}

// produce writes message i ({"seq": i, "hello": "kafka"}, header
// x-idempotency-key: k-i) to partition i mod 2 and returns its id
// (topic:partition:offset).
func (e *kafkaEnv) produce(i int, extra map[string]string) string {
	e.t.Helper()
	r := &kgo.Record{Topic: e.topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"seq": %d, "hello": "kafka"}`, i),
		Headers: []kgo.RecordHeader{{Key: "x-idempotency-key", Value: fmt.Appendf(nil, "k-%d", i)}}}
	for k, v := range extra {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	got, err := e.cl.ProduceSync(e.t.Context(), r).First()
	if err != nil {
		e.t.Fatal(err)
	}
	return kafkasrc.ID(got.Topic, got.Partition, got.Offset)
}

// executionID is the id the engine derives for a message of the topic.
func (e *kafkaEnv) executionID(messageID string) string {
	return subscribe.ExecutionID(kafkaSubName, "msg:"+e.topic+"/"+messageID)
}

// checkIngested waits for the execution of message i and checks its
// outcome and the workload built from the Kafka record.
func (e *kafkaEnv) checkIngested(i int, messageID string) {
	e.t.Helper()
	id := e.executionID(messageID)
	m := waitDone(e.t, id)
	start, _ := m["results"].(map[string]any)["start"].(map[string]any)
	if m["status"] != "ok" || m["playbook"] != kafkaIngest || start["ingested"] != true || start["message_id"] != messageID || start["source"] != "kafka" {
		e.t.Errorf("message %d (%s): execution %s: status %v, playbook %v, start %s", i, messageID, id, m["status"], m["playbook"], MustJSON(start))
	}
	rec, err := e.registry.ExecutionGet(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	w := rec.State.Workload
	msg, _ := w["message"].(map[string]any)
	headers, _ := msg["headers"].(map[string]any)
	if asInt(w["seq"]) != int64(i) || w["hello"] != "kafka" || w["idempotency_key"] != fmt.Sprintf("k-%d", i) || w["source"] != "kafka" ||
		w["subscription"] != kafkaPath || msg["id"] != messageID || headers["x-idempotency-key"] != fmt.Sprintf("k-%d", i) {
		e.t.Errorf("message %d: workload %s", i, MustJSON(w))
	}
}

// committed is the group's committed offset summed over the topic's
// partitions; ends the topic's end offsets summed.
func (e *kafkaEnv) committed() (committed, ends int64) {
	e.t.Helper()
	offs, err := e.adm.FetchOffsets(e.t.Context(), e.group)
	if err == nil {
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == e.topic && o.At > 0 {
				committed += o.At
			}
		})
	}
	le, err := e.adm.ListEndOffsets(e.t.Context(), e.topic)
	if err != nil {
		e.t.Fatal(err)
	}
	le.Each(func(o kadm.ListedOffset) { ends += o.Offset })
	return committed, ends
}

// waitCommitted waits until the group has committed want offsets (summed
// over the partitions).
func (e *kafkaEnv) waitCommitted(want int64, within time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, _ := e.committed()
		if c == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("group %s committed %d offsets of %s within %v; want %d", e.group, c, e.topic, within, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestKafkaSubscriptionResource is TestSubscriptionResource with a Kafka
// source: the resource registered through the api (delivery pull: the
// ticks read the topic), N messages produced on the stack's Kafka start N
// executions of lastmile/kafka_ingest with the record's body and headers
// in the workload, and the group commits past them; the messages read
// again (the group's offsets reset to the start, as a redelivery after a
// crash before the commit) start nothing new; the W3C trace context of a
// record is recorded; a resource with placeholders is refused; after
// DELETE a message produced starts nothing and the group does not commit
// past it.
func TestKafkaSubscriptionResource(t *testing.T) {
	e := newKafkaEnv(t)
	t0 := time.Now()
	ref, _ := os.ReadFile(lastmile(kafkaResource))
	if code, out := post(t, e.funcs+"/api/subscriptions", ref); code != 400 || !strings.Contains(out, "${KAFKA_TOPIC}") {
		t.Errorf("a resource with placeholders: %d %s; want 400 naming them", code, out)
	}
	e.register(e.funcs)
	got := getJSON(t, e.funcs+"/api/subscriptions/"+kafkaSubName)
	if !strings.Contains(fmt.Sprint(got["source"]), "topic: "+e.topic) {
		t.Errorf("GET /subscriptions/%s = %s", kafkaSubName, MustJSON(got))
	}

	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ids := map[string]bool{}
	msgIDs := make([]string, nMessages+1)
	for i := 1; i <= nMessages; i++ {
		var extra map[string]string
		if i == 1 {
			extra = map[string]string{"traceparent": traceparent}
		}
		msgIDs[i] = e.produce(i, extra)
		ids[e.executionID(msgIDs[i])] = true
	}
	for i := 1; i <= nMessages; i++ {
		e.checkIngested(i, msgIDs[i])
	}
	e.waitCommitted(nMessages, 30*time.Second)

	// Redelivery: the group's offsets back at the start of both
	// partitions; the ticks read the five messages again and commit past
	// them again, starting nothing new.
	if _, err := e.adm.CommitOffsets(t.Context(), e.group, kadm.OffsetsFromRecords(kgo.Record{Topic: e.topic, Partition: 0, Offset: -1}, kgo.Record{Topic: e.topic, Partition: 1, Offset: -1})); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.committed(); c != 0 {
		t.Fatalf("committed %d after the reset; want 0", c)
	}
	e.waitCommitted(nMessages, 30*time.Second)
	time.Sleep(2 * time.Second) // anything a redelivery would have started is listed by now
	if mine, others := executionsOf(t, e.funcs, kafkaIngest, t0, ids); mine != nMessages || others != 0 {
		t.Errorf("executions of %s since the test began: %d of the messages, %d others; want exactly %d and 0", kafkaIngest, mine, others, nMessages)
	}
	// The record's W3C trace context is recorded with the execution's
	// request.
	var tc any
	for _, ev := range Events(t, e.executionID(msgIDs[1])) {
		if ev["event_type"] == "playbook.execution.requested" {
			tc = payload(ev)["trace"]
		}
	}
	if m, _ := tc.(map[string]any); m["traceparent"] != traceparent {
		t.Errorf("request event trace = %v; want traceparent %s", tc, traceparent)
	}

	// DELETE: the ticks stop reading the topic; a message produced now
	// waits in it (the group does not commit past it) and starts nothing.
	deleteSubscription(t, e.funcs, kafkaSubName, false)
	late := e.produce(99, nil)
	// A tick that began after the message was produced has ended (and
	// no longer knows the registration).
	if phase := tickPhase(t, e.funcs, kafkaSubName); phase != "" {
		t.Errorf("the tick after DELETE still reports %s (circuit %s)", kafkaSubName, phase)
	}
	if c, ends := e.committed(); c != nMessages || ends != nMessages+1 {
		t.Errorf("after DELETE the group committed %d of %d offsets; want %d (the late message waits)", c, ends, nMessages)
	}
	if _, err := e.registry.ExecutionGet(t.Context(), e.executionID(late)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the message produced after DELETE started an execution: %v", err)
	}
}

// executionsOf counts the executions of playbook created since t0 whose
// id is in ids, and those that are not.
func executionsOf(t *testing.T, funcs, playbook string, t0 time.Time, ids map[string]bool) (mine, others int) {
	t.Helper()
	m := getJSON(t, funcs+"/api/executions?playbook="+playbook+"&limit=1000")
	list, _ := m["executions"].([]any)
	for _, x := range list {
		ex, _ := x.(map[string]any)
		created, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ex["created_at"]))
		if err != nil || created.Before(t0) {
			continue
		}
		if ids[fmt.Sprint(ex["execution_id"])] {
			mine++
		} else {
			others++
		}
	}
	return mine, others
}

// spoolItems decodes the spool objects of name.
func spoolItems(t *testing.T, gcs *storage.Client, name string) []subscribe.Item {
	t.Helper()
	return listSpool(t, gcs, subscribe.SpoolPrefix(name))
}

// TestKafkaSubscriptionSpool is TestSubscriptionSpool with a Kafka source:
// while the control plane is unreachable the messages read from the
// topic are written to the spool (and committed: buffer_and_ack) and
// start nothing; once it answers the spool drains to zero and every
// message's execution completes.
func TestKafkaSubscriptionSpool(t *testing.T) {
	e := newKafkaEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // unreachable until the recovery below
	e.register("http://" + addr)
	deadline := time.Now().Add(30 * time.Second)
	for tickPhase(t, e.funcs, kafkaSubName) != "open" {
		if time.Now().After(deadline) {
			t.Fatal("the circuit did not open while its probe target refused connections")
		}
		time.Sleep(500 * time.Millisecond)
	}
	msgIDs := make([]string, nMessages+1)
	for i := 1; i <= nMessages; i++ {
		msgIDs[i] = e.produce(i, nil)
	}
	list := func() []subscribe.Item { return spoolItems(t, e.gcs, kafkaSubName) }
	items := awaitSpooled(t, list, nMessages, kafkaSubName, "k-", msgIDs, func(id string) error { _, err := e.registry.ExecutionGet(t.Context(), e.executionID(id)); return err })
	e.waitCommitted(nMessages, 30*time.Second) // spooled, then acked
	// Recovery: the probe target answers.
	recoverAndDrain(t, addr, list)
	if phase := tickPhase(t, e.funcs, kafkaSubName); phase != "closed" {
		t.Errorf("circuit %s after recovery", phase)
	}
	for i := 1; i <= nMessages; i++ {
		e.checkIngested(i, msgIDs[i])
	}
	t.Logf("%d Kafka messages spooled while %s refused connections; the spool drained to zero after recovery", len(items), addr)
}

// tickPhase calls the subscribe function's tick and returns the phase of
// name's control_plane circuit.
func tickPhase(t *testing.T, funcs, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, funcs+"/subscribe/tick", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Subscriptions map[string]struct {
			Circuit map[string]string `json:"circuit"`
		} `json:"subscriptions"`
	}
	if resp.StatusCode != 200 {
		t.Fatalf("POST /subscribe/tick: %d", resp.StatusCode)
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return r.Subscriptions[name].Circuit["control_plane"]
}
