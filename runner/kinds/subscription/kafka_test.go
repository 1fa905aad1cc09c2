package subscription

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/types"
)

// kafkaCluster starts an in-process Kafka cluster (kfake) with topic
// (partitions partitions) and returns its seed address and a producer.
func kafkaCluster(t *testing.T, topic string, partitions int32) (string, func(partition int32, key, value string, headers ...kgo.RecordHeader)) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return addr, func(partition int32, key, value string, headers ...kgo.RecordHeader) {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value), Headers: headers}
		if key != "" {
			r.Key = []byte(key)
		}
		if err := prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func seqsOf(t *testing.T, r M) []int64 {
	t.Helper()
	var out []int64
	for _, m := range r["messages"].([]any) {
		out = append(out, m.(M)["data"].(M)["seq"].(int64))
	}
	return out
}

// TestKafkaConformanceDrain is subscription_kafka_drain's drain step (a
// kafka credential named by auth, topic, group, batch 50, timeout 4000 ms,
// ack on_success) over 5 messages: one drain returns them with the group's
// offsets committed; the next finds nothing, at once.
func TestKafkaConformanceDrain(t *testing.T) {
	addr, produce := kafkaCluster(t, "noetl.e2e.kafka.orders", 2)
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "kafka_e2e", Kind: "kafka", Data: M{"brokers": addr}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		produce(int32(i%2), fmt.Sprintf("k%d", i), fmt.Sprintf(`{"seq": %d, "hello": "kafka"}`, i), kgo.RecordHeader{Key: "X-Idempotency-Key", Value: []byte(fmt.Sprintf("k-%d", i))})
	}
	tl := New(Options{Credentials: store})
	defer tl.Close()
	cfg := M{"source": "kafka", "operation": "poll", "auth": "kafka_e2e", "topic": "noetl.e2e.kafka.orders", "group": "noetl-e2e-kafka-drain",
		"batch": "50", "timeout_ms": int64(4000), "ack": "on_success"}
	r := ok(t, tl.Exec(context.Background(), nil, cfg, 0))
	if r["source"] != "kafka" || r["count"] != int64(5) || r["acked"] != true || r["status"] != "success" {
		t.Fatalf("%#v", r)
	}
	seen := map[int64]bool{}
	for _, m := range r["messages"].([]any) {
		mm := m.(M)
		d := mm["data"].(M)
		seen[d["seq"].(int64)] = true
		md := mm["metadata"].(M)
		if d["hello"] != "kafka" || !strings.HasPrefix(mm["id"].(string), "noetl.e2e.kafka.orders:") || md["topic"] != "noetl.e2e.kafka.orders" ||
			!strings.HasPrefix(mm["headers"].(M)["x-idempotency-key"].(string), "k-") || md["key"] != fmt.Sprintf("k%d", d["seq"]) {
			t.Fatalf("message %#v", mm)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("seqs %v", seen)
	}
	start := time.Now()
	r = ok(t, tl.Exec(context.Background(), nil, cfg, 0))
	if r["count"] != int64(0) || r["acked"] != false {
		t.Fatalf("second drain %#v", r)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("an empty drain took %s (it should end when every partition is read)", el)
	}
	// Another group starts from the earliest offsets: it sees all five.
	cfg["group"] = "other"
	if r := ok(t, tl.Exec(context.Background(), nil, cfg, 0)); r["count"] != int64(5) {
		t.Fatalf("a new group read %v messages, want 5", r["count"])
	}
}

// TestKafkaAtLeastOnce: batch bounds a drain and keeps each partition's
// messages in order; an unacked (manual) drain is redelivered by the next
// one; ack commits past the highest offset acked per partition (cumulative),
// a late ack of older ids moves nothing back, and nack commits nothing.
func TestKafkaAtLeastOnce(t *testing.T) {
	addr, produce := kafkaCluster(t, "orders", 1)
	for i := 0; i < 5; i++ {
		produce(0, "", fmt.Sprintf(`{"seq": %d}`, i))
	}
	tl := New(Options{})
	defer tl.Close()
	base := M{"source": "kafka", "brokers": []any{addr}, "topic": "orders", "group": "g"}
	with := func(kv ...any) M {
		m := M{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	r := ok(t, tl.Exec(context.Background(), nil, with("batch", 2, "ack", "manual"), 0))
	if fmt.Sprint(seqsOf(t, r)) != "[0 1]" || r["acked"] != false || len(r["ack_ids"].([]any)) != 2 {
		t.Fatalf("manual batch of 2: %#v", r)
	}
	ids := r["ack_ids"].([]any)
	// Not acked: the next drain gets the same messages again.
	r = ok(t, tl.Exec(context.Background(), nil, with("batch", 3, "ack", "defer"), 0))
	if fmt.Sprint(seqsOf(t, r)) != "[0 1 2]" {
		t.Fatalf("redelivery: %v", seqsOf(t, r))
	}
	ids3 := r["ack_ids"].([]any)
	// nack commits nothing.
	if d := ok(t, tl.Exec(context.Background(), nil, with("operation", "nack", "ack_ids", ids3), 0)); d["disposed"] != int64(3) {
		t.Fatalf("%#v", d)
	}
	if r = ok(t, tl.Exec(context.Background(), nil, with("batch", 1, "ack", "none"), 0)); fmt.Sprint(seqsOf(t, r)) != "[0]" {
		t.Fatalf("after nack: %v", seqsOf(t, r))
	}
	// Ack of seq 2 commits 0..2 (cumulative); a late ack of 0..1 changes nothing.
	ok(t, tl.Exec(context.Background(), nil, with("operation", "ack", "ack_ids", ids3[2:]), 0))
	ok(t, tl.Exec(context.Background(), nil, with("operation", "ack", "ack_ids", ids), 0))
	r = ok(t, tl.Exec(context.Background(), nil, with("batch", 10), 0))
	if fmt.Sprint(seqsOf(t, r)) != "[3 4]" || r["acked"] != true {
		t.Fatalf("after ack: %v %#v", seqsOf(t, r), r)
	}
	if r = ok(t, tl.Exec(context.Background(), nil, with(), 0)); r["count"] != int64(0) {
		t.Fatalf("drained topic: %#v", r)
	}

	// The committed offset is the group's own (a Kafka consumer of group g
	// would start there).
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addr))
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("orders", 0); o.At != 5 {
		t.Fatalf("group g committed %d, want 5", o.At)
	}
}

// TestKafkaErrors: configuration problems are config errors naming the
// key; an ack id of another topic is refused; an unknown topic is
// not_found.
func TestKafkaErrors(t *testing.T) {
	addr, _ := kafkaCluster(t, "known", 1)
	tl := New(Options{})
	defer tl.Close()
	cases := []struct {
		cfg  M
		kind string
		msg  string
	}{
		{M{"source": "kafka", "topic": "known", "group": "g"}, "config", "brokers"},
		{M{"source": "kafka", "brokers": addr, "group": "g"}, "config", "topic and group"},
		{M{"source": "kafka", "brokers": 42, "topic": "known", "group": "g"}, "config", "brokers"},
		{M{"source": "kafka", "brokers": addr, "topic": "known", "group": "g", "operation": "ack", "ack_ids": []any{"other:0:1"}}, "config", "ack id"},
		{M{"source": "kafka", "brokers": addr, "topic": "absent", "group": "g", "timeout_ms": 200}, "not_found", "absent"},
	}
	for _, c := range cases {
		o := tl.Exec(context.Background(), nil, c.cfg, 0)
		if o.Status != types.StatusError || string(o.Error.Kind) != c.kind || !strings.Contains(o.Error.Message, c.msg) {
			t.Errorf("%v: %+v, want kind %s with %q", c.cfg, o.Error, c.kind, c.msg)
		}
	}
}

// TestKafkaEgressPolicy: a broker the runner's egress policy refuses
// (the metadata server, loopback not allowed) is never dialed
// (forbidden_address, not an empty drain); an allowed one is drained
// through the policy's dialer.
func TestKafkaEgressPolicy(t *testing.T) {
	addr, produce := kafkaCluster(t, "t", 1)
	produce(0, "", `{"seq": 1}`)
	p, err := egress.New("local", []string{addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Egress: p})
	defer tl.Close()
	for _, b := range []string{"169.254.169.254:9092", "metadata.google.internal:9092", "127.0.0.1:1"} {
		o := tl.Exec(context.Background(), nil, M{"source": "kafka", "brokers": b, "topic": "t", "group": "g", "timeout_ms": 300}, 5)
		if o.Error == nil || o.Error.Kind != "forbidden_address" || o.Error.Retryable {
			t.Errorf("%s: %+v, want forbidden_address", b, o.Error)
		}
	}
	o := tl.Exec(context.Background(), nil, M{"source": "kafka", "brokers": addr, "topic": "t", "group": "g"}, 5)
	if o.Status != types.StatusOK || o.Result.(map[string]any)["count"] != int64(1) {
		t.Fatalf("allowed broker: %+v %v", o.Error, o.Result)
	}
}
