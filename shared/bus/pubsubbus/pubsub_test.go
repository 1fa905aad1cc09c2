package pubsubbus_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/noetl/gcpengine/shared/bus/bustest"
	"github.com/noetl/gcpengine/shared/bus/pubsubbus"
	"github.com/noetl/gcpengine/shared/sign"
)

var topicSeq atomic.Int64

// pubsubHarness returns a harness on the Pub/Sub server the client reaches
// (PUBSUB_EMULATOR_HOST): fresh events and commands topics, a subscription
// on each that collects every message (once per message id), and a
// pubsubbus.PubSub publishing on the topics.
func pubsubHarness(t *testing.T, project string, signer *sign.Signer) bustest.Harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	n := fmt.Sprintf("bustest-%d-%d", time.Now().UnixNano(), topicSeq.Add(1))
	names := map[bustest.Topic]string{bustest.Events: n + "-events", bustest.Commands: n + "-commands"}
	rctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	var mu sync.Mutex
	got := map[bustest.Topic][]bustest.Message{}
	seen := map[string]bool{}
	for topic, name := range names {
		tp := fmt.Sprintf("projects/%s/topics/%s", project, name)
		sp := fmt.Sprintf("projects/%s/subscriptions/%s", project, name)
		if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: tp}); err != nil {
			t.Fatalf("create topic %s: %v", tp, err)
		}
		if _, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sp, Topic: tp, AckDeadlineSeconds: 60}); err != nil {
			t.Fatalf("create subscription %s: %v", sp, err)
		}
		t.Cleanup(func() {
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = c.SubscriptionAdminClient.DeleteSubscription(dctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: sp})
			_ = c.TopicAdminClient.DeleteTopic(dctx, &pubsubpb.DeleteTopicRequest{Topic: tp})
		})
		sub := c.Subscriber(sp)
		sub.ReceiveSettings.MaxOutstandingBytes = 64 << 20
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = sub.Receive(rctx, func(_ context.Context, m *pubsub.Message) {
				m.Ack()
				mu.Lock()
				defer mu.Unlock()
				if !seen[m.ID] {
					seen[m.ID] = true
					got[topic] = append(got[topic], bustest.Message{Data: m.Data, Attributes: m.Attributes})
				}
			})
		}()
	}
	p, err := pubsubbus.Open(ctx, project, names[bustest.Events], names[bustest.Commands], signer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return bustest.Harness{Publisher: p, Signer: signer,
		Received: func(ctx context.Context, topic bustest.Topic, n int) ([]bustest.Message, error) {
			for {
				mu.Lock()
				out := append([]bustest.Message(nil), got[topic]...)
				mu.Unlock()
				if len(out) >= n {
					return out, nil
				}
				select {
				case <-ctx.Done():
					return out, nil
				case <-time.After(20 * time.Millisecond):
				}
			}
		}}
}

// TestPubSubConformancePstest runs the bus suite on the Pub/Sub driver
// against the in-process pstest server (always, in plain go test).
func TestPubSubConformancePstest(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	signer := testSigner
	bustest.Run(t, func(t *testing.T) bustest.Harness { return pubsubHarness(t, "bustest", signer) })
}

// TestPubSubConformance runs the bus suite on the Pub/Sub driver against
// the Pub/Sub emulator of the stack (PUBSUB_EMULATOR_HOST, from
// .stack/env). Without it the test is skipped, or fails when NOETL_STACK=1
// (set by scripts/test) says the stack must be there.
func TestPubSubConformance(t *testing.T) {
	host := os.Getenv("PUBSUB_EMULATOR_HOST")
	if host == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatal("NOETL_STACK=1 but PUBSUB_EMULATOR_HOST is unset: source .stack/env")
		}
		t.Skip("Pub/Sub emulator not configured (set PUBSUB_EMULATOR_HOST, or run scripts/up and source .stack/env)")
	}
	if c, err := net.DialTimeout("tcp", host, 3*time.Second); err != nil {
		t.Fatalf("Pub/Sub emulator at %s unreachable: %v", host, err)
	} else {
		c.Close()
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT")
	if project == "" {
		project = "noetl-test"
	}
	signer := testSigner
	bustest.Run(t, func(t *testing.T) bustest.Harness { return pubsubHarness(t, project, signer) })
}

var testSigner, _ = sign.Parse("bus-test-signing-key-0123456789abcdef0123")
