package subscribe

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/store"
)

// kafkaResource is a kafka subscription of topic orders for group g.
func kafkaResource(brokers, auth string) string {
	conn := "  brokers: \"" + brokers + "\"\n"
	if auth != "" {
		conn = "  auth: " + auth + "\n"
	}
	return `apiVersion: noetl.io/v1
kind: Subscription
metadata: {name: orders_kafka, path: subs/orders_kafka}
spec:
  source: kafka
  topic: orders
  group: g
` + conn + `  runtime: {batch: 10, timeout_ms: 500}
  dispatch:
    playbook: tests/fixtures/sub_ingest_default
    batch_max: 2
`
}

// registerKafka stores a kafka registration as the Registrar does.
func (f *fixture) registerKafka(src string) *Registration {
	f.t.Helper()
	spec, err := dsl.LoadSubscription([]byte(src), "kafka")
	if err != nil {
		f.t.Fatal(err)
	}
	if !spec.Dispatch.BatchDispatch {
		f.t.Fatal("a kafka subscription is not batch dispatch")
	}
	rec, err := f.st.SubscriptionPut(context.Background(), store.SubscriptionPutParams{Name: spec.Metadata.Name, Path: spec.Metadata.Path, Source: src,
		PubSubSubscription: spec.SourceKey(""), Topic: spec.Topic, Playbook: spec.Dispatch.Playbook, Delivery: store.DeliveryPull})
	if err != nil {
		f.t.Fatal(err)
	}
	reg, err := ParseRegistration(rec)
	if err != nil {
		f.t.Fatal(err)
	}
	return reg
}

func kafkaOrders(t *testing.T, n int) (string, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for i := 1; i <= n; i++ {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprintf(`{"seq": %d, "hello": "kafka"}`, i)),
			Headers: []kgo.RecordHeader{{Key: "x-idempotency-key", Value: []byte(fmt.Sprintf("k-%d", i))}}}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return addr, cl
}

func committedTotal(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "g")
	if err != nil {
		return 0
	}
	var n int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == "orders" && o.At > 0 {
			n += o.At
		}
	})
	return n
}

// TestKafkaBatchDispatch is TestBatchDispatch's case for a kafka source:
// the ticks pull the topic in batches of batch_max, every message starts
// its own execution (source kafka in its workload) and the group's offsets
// advance past them; a message pulled again (offsets reset) starts nothing
// new; messages the control plane refuses are not committed and come
// again on a later tick (at least once).
func TestKafkaBatchDispatch(t *testing.T) {
	addr, cl := kafkaOrders(t, 5)
	f := newFixture(t)
	reg := f.registerKafka(kafkaResource(addr, ""))
	ctx := context.Background()

	// The control plane refuses: nothing is committed.
	f.bus.setFail(errDown)
	rep, _ := f.svc.Tick(ctx)
	if r := rep.Subscriptions[reg.Record.Name]; r.Pulled == 0 || r.Err == "" {
		t.Fatalf("tick while refused: %+v", r)
	}
	if n := committedTotal(t, cl); n != 0 {
		t.Fatalf("committed %d while every start was refused", n)
	}
	f.bus.setFail(nil)

	rep, err := f.svc.Tick(ctx)
	if err != nil || rep.Subscriptions[reg.Record.Name].Pulled != 5 {
		t.Fatalf("tick %+v, %v; want 5 pulled", rep.Subscriptions[reg.Record.Name], err)
	}
	list, _ := f.st.ExecutionList(ctx, store.ExecutionListParams{})
	if len(list) != 5 {
		t.Fatalf("%d executions; want 5", len(list))
	}
	wl := f.execution(list[0].ExecutionID)
	if wl["source"] != SourceKafka || wl["hello"] != "kafka" || wl["subscription"] != "subs/orders_kafka" {
		t.Fatalf("workload %v", wl)
	}
	if n := committedTotal(t, cl); n != 5 {
		t.Fatalf("committed %d, want 5 (every message handled)", n)
	}
	if rep, _ := f.svc.Tick(ctx); rep.Subscriptions[reg.Record.Name].Pulled != 0 {
		t.Fatalf("drained topic pulled again: %+v", rep.Subscriptions[reg.Record.Name])
	}

	// Redelivery (the group's offsets back at the start): nothing new starts.
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: -1}, kgo.Record{Topic: "orders", Partition: 1, Offset: -1})); err != nil {
		t.Fatal(err)
	}
	if rep, _ := f.svc.Tick(ctx); rep.Subscriptions[reg.Record.Name].Pulled != 5 {
		t.Fatalf("after the reset: %+v", rep.Subscriptions[reg.Record.Name])
	}
	if list, _ := f.st.ExecutionList(ctx, store.ExecutionListParams{}); len(list) != 5 {
		t.Fatalf("%d executions after redelivery; want still 5", len(list))
	}
}

// TestKafkaBrokersFromCredential: spec.auth names a kafka credential whose
// brokers the ticks use; without the credential the tick reports the
// error and pulls nothing.
func TestKafkaBrokersFromCredential(t *testing.T) {
	addr, _ := kafkaOrders(t, 2)
	f := newFixture(t)
	creds := credentials.NewMemory()
	f.svc.Credentials = creds
	reg := f.registerKafka(kafkaResource("", "kafka_e2e"))
	rep, _ := f.svc.Tick(context.Background())
	if r := rep.Subscriptions[reg.Record.Name]; r.Pulled != 0 || r.Err == "" {
		t.Fatalf("without the credential: %+v", r)
	}
	if err := creds.CredentialPut(context.Background(), credentials.Credential{Name: "kafka_e2e", Kind: "kafka", Data: map[string]any{"brokers": addr}, Grants: []string{"subscription:*"}}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := f.svc.Tick(context.Background()); rep.Subscriptions[reg.Record.Name].Pulled != 2 {
		t.Fatalf("with the credential: %+v", rep.Subscriptions[reg.Record.Name])
	}
}
