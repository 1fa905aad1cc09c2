package subscribe_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/noetl/gcpengine/shared/kafkasrc"
	"github.com/noetl/gcpengine/shared/subscribe"
	"github.com/noetl/gcpengine/shared/subscribe/gcsspool"
	"github.com/noetl/gcpengine/shared/subscribe/pubsubpull"
	"github.com/noetl/gcpengine/shared/subscribe/subscribetest"
)

var seq atomic.Int64

// name returns a fresh resource name.
func name(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), seq.Add(1))
}

// emulator returns the host of an emulator of the stack named by env, or
// skips (fails under NOETL_STACK=1, which says the stack must be there).
func emulator(t *testing.T, env string) string {
	t.Helper()
	host := os.Getenv(env)
	if host == "" {
		if os.Getenv("NOETL_STACK") == "1" {
			t.Fatalf("NOETL_STACK=1 but %s is unset: source .stack/env", env)
		}
		t.Skipf("emulator not configured (set %s, or run scripts/up and source .stack/env)", env)
	}
	addr := host
	if _, rest, ok := strings.Cut(host, "://"); ok { // STORAGE_EMULATOR_HOST carries a scheme
		addr = rest
	}
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatalf("emulator at %s (%s) unreachable: %v", host, env, err)
	}
	_ = c.Close()
	return host
}

// ---- Bucket ---------------------------------------------------------------

func TestMemBucketConformance(t *testing.T) {
	subscribetest.BucketSuite(t, func(*testing.T) subscribe.Bucket { return subscribe.NewMemBucket() })
}

// TestGCSBucketConformance runs the suite on the GCS driver against an
// in-process fake-gcs-server. STORAGE_EMULATOR_HOST is cleared: with the
// stack's env sourced, the storage client would send some calls to the
// stack's emulator instead.
func TestGCSBucketConformance(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	subscribetest.BucketSuite(t, func(t *testing.T) subscribe.Bucket {
		srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Writer: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "spool"})
		c := srv.Client()
		t.Cleanup(func() { _ = c.Close() })
		return gcsspool.Buckets(c)("spool")
	})
}

// TestGCSBucketConformanceEmulator runs the suite on the GCS driver
// against the stack's GCS emulator (STORAGE_EMULATOR_HOST), a fresh bucket
// per case.
func TestGCSBucketConformanceEmulator(t *testing.T) {
	emulator(t, "STORAGE_EMULATOR_HOST")
	c, err := storage.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	subscribetest.BucketSuite(t, func(t *testing.T) subscribe.Bucket {
		b := name("spooltest")
		if err := c.Bucket(b).Create(context.Background(), "noetl-test", nil); err != nil {
			t.Fatalf("create bucket %s: %v", b, err)
		}
		return gcsspool.Buckets(c)(b)
	})
}

// ---- Puller ---------------------------------------------------------------

func TestFakePullerConformance(t *testing.T) {
	subscribetest.PullerSuite(t, func(*testing.T) subscribetest.PullerHarness {
		p, publish := subscribe.NewFakePuller()
		return subscribetest.PullerHarness{Puller: p, Subscription: "projects/p/subscriptions/s", Publish: publish}
	})
}

// pubsubClients opens the admin clients of the Pub/Sub server at host.
func pubsubClients(t *testing.T, host string) (*pubsubapi.TopicAdminClient, *pubsubapi.SubscriptionAdminClient) {
	t.Helper()
	opts := []option.ClientOption{option.WithEndpoint(host), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	ctx := context.Background()
	tc, err := pubsubapi.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tc.Close() })
	sc, err := pubsubapi.NewSubscriptionAdminClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Close() })
	return tc, sc
}

// create makes topic (when missing) and a pull subscription on it.
func create(ctx context.Context, tc *pubsubapi.TopicAdminClient, sc *pubsubapi.SubscriptionAdminClient, sub, topic string) error {
	if _, err := tc.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: topic}); err != nil {
		if _, err := tc.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
			return err
		}
	}
	_, err := sc.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 60})
	return err
}

// pubsubPuller returns a harness on a fresh topic and subscription of the
// Pub/Sub server at host.
func pubsubPuller(t *testing.T, host, project string) subscribetest.PullerHarness {
	tc, sc := pubsubClients(t, host)
	n := name("pulltest")
	sub, topic := "projects/"+project+"/subscriptions/"+n, "projects/"+project+"/topics/"+n
	if err := create(context.Background(), tc, sc, sub, topic); err != nil {
		t.Fatal(err)
	}
	return subscribetest.PullerHarness{Puller: pubsubpull.Puller{Client: sc}, Subscription: sub,
		Publish: func(ctx context.Context, data []byte, attrs map[string]string) error {
			_, err := tc.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic, Messages: []*pubsubpb.PubsubMessage{{Data: data, Attributes: attrs}}})
			return err
		}}
}

// TestPubSubPullerConformance runs the suite on the Pub/Sub driver against
// the in-process pstest server.
func TestPubSubPullerConformance(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	subscribetest.PullerSuite(t, func(t *testing.T) subscribetest.PullerHarness { return pubsubPuller(t, srv.Addr, "p") })
}

// TestPubSubPullerConformanceEmulator runs the suite on the Pub/Sub driver
// against the stack's Pub/Sub emulator (PUBSUB_EMULATOR_HOST).
func TestPubSubPullerConformanceEmulator(t *testing.T) {
	host := emulator(t, "PUBSUB_EMULATOR_HOST")
	subscribetest.PullerSuite(t, func(t *testing.T) subscribetest.PullerHarness { return pubsubPuller(t, host, "noetl-test") })
}

// TestKafkaPullerConformance runs the suite on the Kafka driver against an
// in-process kfake cluster (as the package's Kafka tests do), a fresh
// topic and group per case.
func TestKafkaPullerConformance(t *testing.T) {
	subscribetest.PullerSuite(t, func(t *testing.T) subscribetest.PullerHarness {
		topic := name("orders")
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		addr := c.ListenAddrs()[0]
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return subscribetest.PullerHarness{
			Puller:       &subscribe.KafkaPuller{Source: kafkasrc.Source{Brokers: []string{addr}, Topic: topic, Group: "noetl-" + topic}},
			Subscription: topic,
			Publish: func(ctx context.Context, data []byte, attrs map[string]string) error {
				r := &kgo.Record{Topic: topic, Value: data}
				for k, v := range attrs {
					r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
				}
				return cl.ProduceSync(ctx, r).FirstErr()
			},
		}
	})
}

// ---- SubscriptionAdmin ----------------------------------------------------

func TestFakeAdminConformance(t *testing.T) {
	subscribetest.AdminSuite(t, func(*testing.T) subscribetest.AdminHarness {
		a, create := subscribe.NewFakeAdmin()
		return subscribetest.AdminHarness{Admin: a, Create: create, Project: "p"}
	})
}

func pubsubAdmin(t *testing.T, host, project string) subscribetest.AdminHarness {
	tc, sc := pubsubClients(t, host)
	return subscribetest.AdminHarness{Admin: sc, Project: project,
		Create: func(ctx context.Context, sub, topic string) error { return create(ctx, tc, sc, sub, topic) }}
}

// TestPubSubAdminConformanceEmulator runs the suite on the Pub/Sub admin
// client (the driver registration uses) against the stack's Pub/Sub
// emulator (PUBSUB_EMULATOR_HOST). The in-process pstest server cannot
// stand in: it does not implement ModifyPushConfig (Unimplemented).
func TestPubSubAdminConformanceEmulator(t *testing.T) {
	host := emulator(t, "PUBSUB_EMULATOR_HOST")
	subscribetest.AdminSuite(t, func(t *testing.T) subscribetest.AdminHarness { return pubsubAdmin(t, host, "noetl-test") })
}
