package subscription

import (
	"context"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/types"
)

type M = map[string]any

// fixture makes a topic and a subscription on the Pub/Sub server at addr
// and returns a publish function.
func fixture(t *testing.T, addr, project, name string) (sub string, publish func(data string, attrs map[string]string)) {
	t.Helper()
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	tc, err := pubsubapi.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	sc, err := pubsubapi.NewSubscriptionAdminClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	topic := "projects/" + project + "/topics/" + name
	sub = "projects/" + project + "/subscriptions/" + name
	if _, err := tc.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sc.DeleteSubscription(context.Background(), &pubsubpb.DeleteSubscriptionRequest{Subscription: sub})
		_ = tc.DeleteTopic(context.Background(), &pubsubpb.DeleteTopicRequest{Topic: topic})
	})
	return sub, func(data string, attrs map[string]string) {
		if _, err := tc.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic, Messages: []*pubsubpb.PubsubMessage{{Data: []byte(data), Attributes: attrs}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s: %+v", o.Status, o.Error)
	}
	return o.Result.(M)
}

// conformanceDrain is subscription_pubsub_drain.yaml's drain step: 5
// messages published, one bounded drain (batch 50, timeout 4000 ms, ack
// on_success) returns them acked; a second drain finds nothing.
func conformanceDrain(t *testing.T, tl *Tool, auth any, sub string, publish func(string, map[string]string)) {
	for i := 1; i <= 5; i++ {
		publish(fmt.Sprintf(`{"seq": %d, "hello": "pubsub"}`, i), map[string]string{"X-Idempotency-Key": fmt.Sprintf("k-%d", i)})
	}
	cfg := M{"source": "pubsub", "operation": "poll", "auth": auth, "subscription": sub, "batch": int64(50), "timeout_ms": int64(4000), "ack": "on_success"}
	r := ok(t, tl.Exec(context.Background(), nil, cfg, 0))
	if r["source"] != "pubsub" || r["count"] != int64(5) || r["acked"] != true || r["status"] != "success" {
		t.Fatalf("%#v", r)
	}
	seqs := map[int64]bool{}
	for _, m := range r["messages"].([]any) {
		mm := m.(M)
		d := mm["data"].(M)
		seqs[d["seq"].(int64)] = true
		if d["hello"] != "pubsub" || mm["id"] == "" || !strings.HasPrefix(mm["headers"].(M)["x-idempotency-key"].(string), "k-") {
			t.Fatalf("message %#v", mm)
		}
	}
	if len(seqs) != 5 {
		t.Fatalf("seqs %v", seqs)
	}
	start := time.Now()
	cfg["timeout_ms"] = int64(500)
	r = ok(t, tl.Exec(context.Background(), nil, cfg, 0))
	if r["count"] != int64(0) || r["acked"] != false || len(r["messages"].([]any)) != 0 {
		t.Fatalf("second drain %#v", r)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("an empty drain took %s", el)
	}
}

func TestConformanceDrainFake(t *testing.T) {
	srv := newFakePubSub(t)
	store := credentials.NewMemory()
	if err := store.CredentialPut(context.Background(), credentials.Credential{Name: "pubsub_e2e", Kind: "pubsub", Data: M{"endpoint": srv.REST}}); err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Credentials: store})
	defer tl.Close()
	sub, publish := fixture(t, srv.Addr, "noetl-e2e", "drain")
	conformanceDrain(t, tl, "pubsub_e2e", sub, publish)
}

// TestManualAckAndBatch: batch bounds the drain; manual leaves messages
// pending with ack ids, which operation ack disposes.
func TestManualAckAndBatch(t *testing.T) {
	srv := newFakePubSub(t)
	tl := New(Options{Project: "p1"})
	defer tl.Close()
	sub, publish := fixture(t, srv.Addr, "p1", "manual")
	for i := 0; i < 4; i++ {
		publish(fmt.Sprintf("text %d", i), nil)
	}
	r := ok(t, tl.Exec(context.Background(), nil, M{"source": "pubsub", "endpoint": srv.REST, "subscription": "manual", "batch": 3, "ack": false, "timeout_ms": 1000}, 0))
	if r["count"] != int64(3) || r["acked"] != false || len(r["ack_ids"].([]any)) != 3 || r["ack_mode"] != "manual" {
		t.Fatalf("%#v", r)
	}
	if d := r["messages"].([]any)[0].(M)["data"].(string); !strings.HasPrefix(d, "text ") {
		t.Fatalf("text body %q", d)
	}
	ids := r["ack_ids"].([]any)
	r2 := ok(t, tl.Exec(context.Background(), nil, M{"source": "pubsub", "endpoint": srv.REST, "subscription": sub, "operation": "ack", "ack_ids": ids[:2]}, 0))
	if r2["disposed"] != int64(2) {
		t.Fatalf("%#v", r2)
	}
	// nack redelivers the third at once.
	ok(t, tl.Exec(context.Background(), nil, M{"source": "pubsub", "endpoint": srv.REST, "subscription": sub, "operation": "nack", "ack_ids": ids[2:], "nack_delay_ms": 0}, 0))
	r = ok(t, tl.Exec(context.Background(), nil, M{"source": "pubsub", "endpoint": srv.REST, "subscription": sub, "timeout_ms": 1000}, 0))
	if r["count"] != int64(2) {
		t.Fatalf("after ack of 2 and nack of 1, %d messages, want 2 (the nacked and the unread): %#v", r["count"], r)
	}

}

func TestErrors(t *testing.T) {
	srv := newFakePubSub(t)
	tl := New(Options{})
	defer tl.Close()
	for _, c := range []struct {
		cfg  M
		kind string
	}{
		{M{}, "config"},
		{M{"source": "nats", "subscription": "x"}, "config"},
		{M{"source": "pubsub"}, "config"},
		{M{"source": "pubsub", "subscription": "short"}, "config"}, // no project
		{M{"source": "pubsub", "subscription": "projects/p/topics/t"}, "config"},
		{M{"source": "pubsub", "endpoint": srv.REST, "subscription": "projects/p/subscriptions/s", "ack": "sometimes"}, "config"},
		{M{"source": "pubsub", "endpoint": srv.REST, "subscription": "projects/p/subscriptions/s", "batch": "many"}, "config"},
		{M{"source": "pubsub", "endpoint": srv.REST, "subscription": "projects/p/subscriptions/s", "operation": "seek"}, "config"},
		{M{"source": "pubsub", "auth": "pubsub_e2e", "subscription": "projects/p/subscriptions/s"}, "config"}, // no store
		{M{"source": "pubsub", "endpoint": srv.REST, "subscription": "projects/p/subscriptions/missing"}, "not_found"},
	} {
		o := tl.Exec(context.Background(), nil, c.cfg, 0)
		if o.Status != types.StatusError || string(o.Error.Kind) != c.kind {
			t.Errorf("%v: %+v", c.cfg, o.Error)
		}
	}
	if !reflect.DeepEqual(decodeData([]byte{0xff, 0x00}), M{"encoding": "base64", "data": "/wA="}) {
		t.Error("binary body")
	}
}

// TestStackEmulator runs the conformance drain against the stack's Pub/Sub
// emulator (PUBSUB_EMULATOR_HOST from .stack/env).
func TestStackEmulator(t *testing.T) {
	host := os.Getenv("PUBSUB_EMULATOR_HOST")
	if host == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but PUBSUB_EMULATOR_HOST is unset: source .stack/env")
		}
		t.Skip("Pub/Sub emulator not configured (run scripts/up and source .stack/env)")
	}
	c, err := net.DialTimeout("tcp", host, 3*time.Second)
	if err != nil {
		t.Fatalf("Pub/Sub emulator at %s unreachable: %v", host, err)
	}
	c.Close()
	name := fmt.Sprintf("noetl-drain-%d", time.Now().UnixNano())
	sub, publish := fixture(t, host, "noetl-e2e", name)
	tl := New(Options{})
	defer tl.Close()
	conformanceDrain(t, tl, M{"endpoint": host}, sub, publish)
}

// With an egress policy, a refused endpoint (the engine's Pub/Sub, the
// metadata server) fails the task with forbidden_address before anything
// dials it — never an empty drain — and an allowed one is drained.
func TestEgressPolicy(t *testing.T) {
	srv := newFakePubSub(t)
	p, err := egress.New("local", []string{srv.REST}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := New(Options{Egress: p})
	t.Cleanup(tl.Close)
	for _, ep := range []string{"169.254.169.254:8085", "metadata.google.internal:8085", "127.0.0.1:1", "[::1]:8085"} {
		o := tl.Exec(context.Background(), nil, M{"source": "pubsub", "operation": "poll", "auth": M{"endpoint": ep},
			"subscription": "projects/p/subscriptions/s", "timeout_ms": 500}, 5)
		if o.Error == nil || o.Error.Kind != "forbidden_address" || o.Error.Retryable {
			t.Errorf("%s: %+v, want forbidden_address", ep, o.Error)
		}
	}
	sub, publish := fixture(t, srv.Addr, "p", "allowed")
	publish("one", nil)
	o := tl.Exec(context.Background(), nil, M{"source": "pubsub", "operation": "poll", "auth": M{"endpoint": srv.REST}, "subscription": sub, "timeout_ms": 2000}, 5)
	if o.Status != types.StatusOK || o.Result.(map[string]any)["count"] != int64(1) {
		t.Fatalf("allowed endpoint: %+v %v", o.Error, o.Result)
	}
}
