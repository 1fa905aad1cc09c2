// Package subscribetest is the conformance suite of the interfaces the
// subscribe service runs on (in the manner of google/go-cloud's
// drivertest and river's driver suite): every driver and every in-memory
// fake runs the same cases through the interface, so a fake cannot drift
// from its driver.
//
//   - subscribe.Bucket (the spool's object store; BucketSuite): the GCS
//     driver (gcsspool.Buckets) and the in-memory bucket of the
//     package's tests. Put overwrites; Get of a missing object is
//     subscribe.ErrNoObject; List returns the objects under a prefix (and
//     only those) sorted by name, with their sizes; Delete removes, and a
//     missing object is no error.
//   - subscribe.Puller (batch dispatch; PullerSuite): the Pub/Sub driver
//     (pubsubpull.Puller), the Kafka driver (subscribe.KafkaPuller)
//     and the in-memory puller of the package's tests. Pull waits at most
//     wait and returns what arrived, at most max messages (none is no
//     error); every message carries an ack id, its id, data, attributes
//     and an RFC 3339 publish time; an acked message does not come again;
//     a nacked one comes again (same id and data).
//   - subscribe.SubscriptionAdmin (registration; AdminSuite): the Pub/Sub
//     admin client and the fake of the package's tests. GetSubscription
//     returns the subscription's name, topic and push config, or an error
//     of gRPC code NotFound; ModifyPushConfig sets the push endpoint and
//     its OIDC token, an empty config makes the subscription a pull one,
//     and a missing subscription is NotFound.
package subscribetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/subscribe"
)

const opTimeout = time.Minute

// BucketSuite runs the subscribe.Bucket cases; newBucket returns an empty
// bucket, once per case.
func BucketSuite(t *testing.T, newBucket func(t *testing.T) subscribe.Bucket) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, b subscribe.Bucket)
	}{
		{"PutThenGet", testPutGet},
		{"PutOverwrites", testPutOverwrites},
		{"GetMissingIsErrNoObject", testGetMissing},
		{"ListPrefixSortedWithSizes", testList},
		{"DeleteRemoves", testDelete},
		{"DeleteMissingIsNoError", testDeleteMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			c.fn(ctx, t, newBucket(t))
		})
	}
}

func mustPut(ctx context.Context, t *testing.T, b subscribe.Bucket, name, data string) {
	t.Helper()
	if err := b.Put(ctx, name, []byte(data)); err != nil {
		t.Fatalf("Put %s: %v", name, err)
	}
}

func wantGet(ctx context.Context, t *testing.T, b subscribe.Bucket, name, want string) {
	t.Helper()
	got, err := b.Get(ctx, name)
	if err != nil || string(got) != want {
		t.Fatalf("Get %s = %q, %v; want %q", name, got, err, want)
	}
}

func testPutGet(ctx context.Context, t *testing.T, b subscribe.Bucket) {
	data := `{"seq":1,"payload":"` + strings.Repeat("x", 4096) + `"}`
	mustPut(ctx, t, b, "subscriptions/s/spool/a.json", data)
	wantGet(ctx, t, b, "subscriptions/s/spool/a.json", data)
}

func testPutOverwrites(ctx context.Context, t *testing.T, b subscribe.Bucket) {
	mustPut(ctx, t, b, "subscriptions/s/spool/a.json", `{"v":1}`)
	mustPut(ctx, t, b, "subscriptions/s/spool/a.json", `{"v":2,"longer":true}`)
	wantGet(ctx, t, b, "subscriptions/s/spool/a.json", `{"v":2,"longer":true}`)
	objs, err := b.List(ctx, "subscriptions/s/spool/")
	if err != nil || len(objs) != 1 || objs[0].Size != int64(len(`{"v":2,"longer":true}`)) {
		t.Fatalf("List after an overwrite = %+v, %v; want one object of the new size", objs, err)
	}
}

func testGetMissing(ctx context.Context, t *testing.T, b subscribe.Bucket) {
	if _, err := b.Get(ctx, "subscriptions/s/spool/none.json"); !errors.Is(err, subscribe.ErrNoObject) {
		t.Fatalf("Get of a missing object: %v, want subscribe.ErrNoObject", err)
	}
}

func testList(ctx context.Context, t *testing.T, b subscribe.Bucket) {
	objs, err := b.List(ctx, "subscriptions/s/spool/")
	if err != nil || len(objs) != 0 {
		t.Fatalf("List of an empty bucket = %+v, %v; want none and no error", objs, err)
	}
	// Put out of order, plus objects under other prefixes.
	for _, n := range []string{"c", "a", "b"} {
		mustPut(ctx, t, b, "subscriptions/s/spool/"+n+".json", strings.Repeat(n, len(n)+int(n[0]-'a')))
	}
	mustPut(ctx, t, b, "subscriptions/s/dlq/z.json", "dead")
	mustPut(ctx, t, b, "subscriptions/s2/spool/a.json", "other subscription")
	objs, err = b.List(ctx, "subscriptions/s/spool/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s:%d", o.Name, o.Size))
	}
	want := []string{"subscriptions/s/spool/a.json:1", "subscriptions/s/spool/b.json:2", "subscriptions/s/spool/c.json:3"}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v (sorted by name, this prefix only, with sizes)", got, want)
	}
}

func testDelete(ctx context.Context, t *testing.T, b subscribe.Bucket) {
	mustPut(ctx, t, b, "subscriptions/s/spool/a.json", "a")
	mustPut(ctx, t, b, "subscriptions/s/spool/b.json", "b")
	if err := b.Delete(ctx, "subscriptions/s/spool/a.json"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := b.Get(ctx, "subscriptions/s/spool/a.json"); !errors.Is(err, subscribe.ErrNoObject) {
		t.Fatalf("Get after Delete: %v, want subscribe.ErrNoObject", err)
	}
	objs, err := b.List(ctx, "subscriptions/s/spool/")
	if err != nil || len(objs) != 1 || objs[0].Name != "subscriptions/s/spool/b.json" {
		t.Fatalf("List after Delete = %+v, %v; want only b.json", objs, err)
	}
}

func testDeleteMissing(ctx context.Context, t *testing.T, b subscribe.Bucket) {
	if err := b.Delete(ctx, "subscriptions/s/spool/none.json"); err != nil {
		t.Fatalf("Delete of a missing object: %v, want no error", err)
	}
}

// PullerHarness is one subscription under test, empty when returned.
type PullerHarness struct {
	Puller subscribe.Puller
	// Subscription is the name passed to the Puller's calls.
	Subscription string
	// Publish puts one message on the subscription's topic.
	Publish func(ctx context.Context, data []byte, attrs map[string]string) error
}

// pullWait is the wait of each Pull call.
const pullWait = 2 * time.Second

// PullerSuite runs the subscribe.Puller cases; newHarness is called once
// per case.
func PullerSuite(t *testing.T, newHarness func(t *testing.T) PullerHarness) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, h PullerHarness)
	}{
		{"EmptyPullIsNoError", testPullEmpty},
		{"PullReturnsPublished", testPullPublished},
		{"PullBoundedByMax", testPullMax},
		{"AckedNotAgain", testAcked},
		{"NackedComesAgain", testNacked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			c.fn(ctx, t, newHarness(t))
		})
	}
}

func publish(ctx context.Context, t *testing.T, h PullerHarness, n int) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	for i := range n {
		data := fmt.Sprintf(`{"seq":%d}`, i)
		if err := h.Publish(ctx, []byte(data), map[string]string{"x-seq": fmt.Sprint(i), "x-idempotency-key": fmt.Sprintf("k-%d", i)}); err != nil {
			t.Fatalf("publish: %v", err)
		}
		want[data] = true
	}
	return want
}

// pullN pulls until n messages arrived (or the context ends) and returns
// them; each Pull asks for at most max. With ack, each pull's messages are
// acked before the next Pull, as the service does (a Kafka puller reads
// from the group's committed offsets: what is not acked comes again).
func pullN(ctx context.Context, t *testing.T, h PullerHarness, n, max int, ack bool) []subscribe.Pulled {
	t.Helper()
	var got []subscribe.Pulled
	for len(got) < n {
		if ctx.Err() != nil {
			t.Fatalf("pulled %d of %d messages before the deadline", len(got), n)
		}
		ms, err := h.Puller.Pull(ctx, h.Subscription, max, pullWait)
		if err != nil {
			t.Fatalf("Pull: %v", err)
		}
		if len(ms) > max {
			t.Fatalf("Pull(max %d) returned %d messages", max, len(ms))
		}
		got = append(got, ms...)
		if ack && len(ms) > 0 {
			ids := make([]string, len(ms))
			for i, m := range ms {
				ids[i] = m.AckID
			}
			if err := h.Puller.Ack(ctx, h.Subscription, ids); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
	}
	return got
}

// pullNone pulls for about three waits and fails on any message.
func pullNone(ctx context.Context, t *testing.T, h PullerHarness, what string) {
	t.Helper()
	for range 3 {
		ms, err := h.Puller.Pull(ctx, h.Subscription, 10, pullWait/2)
		if err != nil {
			t.Fatalf("Pull: %v", err)
		}
		if len(ms) > 0 {
			t.Fatalf("%s: Pull returned %d message(s), first %s %q", what, len(ms), ms[0].ID, ms[0].Data)
		}
	}
}

func testPullEmpty(ctx context.Context, t *testing.T, h PullerHarness) {
	start := time.Now()
	ms, err := h.Puller.Pull(ctx, h.Subscription, 10, pullWait)
	if err != nil || len(ms) != 0 {
		t.Fatalf("Pull of an empty subscription = %d message(s), %v; want none and no error", len(ms), err)
	}
	// The wait bounds the call (slack for a loaded machine).
	if d := time.Since(start); d > pullWait+10*time.Second {
		t.Fatalf("Pull waited %v, want at most about %v", d, pullWait)
	}
}

func testPullPublished(ctx context.Context, t *testing.T, h PullerHarness) {
	want := publish(ctx, t, h, 3)
	got := pullN(ctx, t, h, 3, 10, true)
	ids, acks := map[string]bool{}, map[string]bool{}
	for _, m := range got {
		if !want[string(m.Data)] {
			t.Fatalf("pulled unexpected data %q", m.Data)
		}
		delete(want, string(m.Data))
		if m.AckID == "" || m.ID == "" || ids[m.ID] || acks[m.AckID] {
			t.Fatalf("message %+v: want a distinct id and ack id", m)
		}
		ids[m.ID], acks[m.AckID] = true, true
		var seq int
		if _, err := fmt.Sscanf(string(m.Data), `{"seq":%d}`, &seq); err != nil || m.Attributes["x-seq"] != fmt.Sprint(seq) || m.Attributes["x-idempotency-key"] != fmt.Sprintf("k-%d", seq) {
			t.Fatalf("message %s attributes %v, want its x-seq and x-idempotency-key", m.Data, m.Attributes)
		}
		if pt := m.PublishTime; pt.IsZero() || time.Since(pt) > time.Hour || time.Until(pt) > time.Minute {
			t.Fatalf("message %s publish time %v: want a recent time", m.Data, m.PublishTime)
		}
	}
	if len(want) != 0 {
		t.Fatalf("messages never pulled: %v", want)
	}
}

func testPullMax(ctx context.Context, t *testing.T, h PullerHarness) {
	publish(ctx, t, h, 5)
	got := pullN(ctx, t, h, 5, 2, true) // fails on a Pull over max
	seen := map[string]bool{}
	for _, m := range got {
		if seen[string(m.Data)] {
			t.Fatalf("%q pulled twice though acked", m.Data)
		}
		seen[string(m.Data)] = true
	}
}

func testAcked(ctx context.Context, t *testing.T, h PullerHarness) {
	publish(ctx, t, h, 2)
	pullN(ctx, t, h, 2, 10, true)
	if err := h.Puller.Ack(ctx, h.Subscription, nil); err != nil {
		t.Fatalf("Ack of no ids: %v, want no error", err)
	}
	pullNone(ctx, t, h, "after every message was acked")
}

func testNacked(ctx context.Context, t *testing.T, h PullerHarness) {
	publish(ctx, t, h, 1)
	first := pullN(ctx, t, h, 1, 10, false)
	if err := h.Puller.Nack(ctx, h.Subscription, []string{first[0].AckID}); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	if err := h.Puller.Nack(ctx, h.Subscription, nil); err != nil {
		t.Fatalf("Nack of no ids: %v, want no error", err)
	}
	again := pullN(ctx, t, h, 1, 10, false)
	if again[0].ID != first[0].ID || string(again[0].Data) != string(first[0].Data) {
		t.Fatalf("after Nack pulled %s %q, want the same message %s %q", again[0].ID, again[0].Data, first[0].ID, first[0].Data)
	}
	if err := h.Puller.Ack(ctx, h.Subscription, []string{again[0].AckID}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	pullNone(ctx, t, h, "after the redelivered message was acked")
}

// AdminHarness is one Pub/Sub project under test.
type AdminHarness struct {
	Admin subscribe.SubscriptionAdmin
	// Create makes a pull subscription (full name) on topic (full name),
	// creating the topic when needed.
	Create func(ctx context.Context, subscription, topic string) error
	// Project is the project of the names Create accepts.
	Project string
}

// AdminSuite runs the subscribe.SubscriptionAdmin cases; newHarness is
// called once per case.
func AdminSuite(t *testing.T, newHarness func(t *testing.T) AdminHarness) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(ctx context.Context, t *testing.T, h AdminHarness, sub, topic string)
	}{
		{"GetReturnsTopicAndPull", testAdminGet},
		{"GetMissingIsNotFound", testAdminGetMissing},
		{"PushConfigSetAndCleared", testAdminPush},
		{"PushConfigOfMissingIsNotFound", testAdminPushMissing},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			h := newHarness(t)
			n := fmt.Sprintf("subtest-%d-%d", time.Now().UnixNano(), i)
			c.fn(ctx, t, h, "projects/"+h.Project+"/subscriptions/"+n, "projects/"+h.Project+"/topics/"+n)
		})
	}
}

func testAdminGet(ctx context.Context, t *testing.T, h AdminHarness, sub, topic string) {
	if err := h.Create(ctx, sub, topic); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := h.Admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub})
	if err != nil || got.GetName() != sub || got.GetTopic() != topic || got.GetPushConfig().GetPushEndpoint() != "" {
		t.Fatalf("GetSubscription = %v, %v; want %s on %s, a pull subscription", got, err, sub, topic)
	}
}

func testAdminGetMissing(ctx context.Context, t *testing.T, h AdminHarness, sub, _ string) {
	if _, err := h.Admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetSubscription of a missing subscription: %v (code %s), want NotFound", err, status.Code(err))
	}
}

func testAdminPush(ctx context.Context, t *testing.T, h AdminHarness, sub, topic string) {
	if err := h.Create(ctx, sub, topic); err != nil {
		t.Fatalf("create: %v", err)
	}
	const endpoint, account = "http://127.0.0.1:1/subscribe/push/s", "push@p.iam.gserviceaccount.com"
	pc := &pubsubpb.PushConfig{PushEndpoint: endpoint, AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{
		OidcToken: &pubsubpb.PushConfig_OidcToken{ServiceAccountEmail: account, Audience: "http://127.0.0.1:1/subscribe"}}}
	if err := h.Admin.ModifyPushConfig(ctx, &pubsubpb.ModifyPushConfigRequest{Subscription: sub, PushConfig: pc}); err != nil {
		t.Fatalf("ModifyPushConfig: %v", err)
	}
	got, err := h.Admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub})
	if err != nil || got.GetPushConfig().GetPushEndpoint() != endpoint || got.GetPushConfig().GetOidcToken().GetServiceAccountEmail() != account || got.GetTopic() != topic {
		t.Fatalf("after ModifyPushConfig GetSubscription = %v, %v; want push to %s with %s's token", got, err, endpoint, account)
	}
	if err := h.Admin.ModifyPushConfig(ctx, &pubsubpb.ModifyPushConfigRequest{Subscription: sub, PushConfig: &pubsubpb.PushConfig{}}); err != nil {
		t.Fatalf("ModifyPushConfig (pull): %v", err)
	}
	got, err = h.Admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub})
	if err != nil || got.GetPushConfig().GetPushEndpoint() != "" {
		t.Fatalf("after an empty push config GetSubscription = %v, %v; want a pull subscription", got, err)
	}
}

func testAdminPushMissing(ctx context.Context, t *testing.T, h AdminHarness, sub, _ string) {
	err := h.Admin.ModifyPushConfig(ctx, &pubsubpb.ModifyPushConfigRequest{Subscription: sub, PushConfig: &pubsubpb.PushConfig{PushEndpoint: "http://127.0.0.1:1/x"}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("ModifyPushConfig of a missing subscription: %v (code %s), want NotFound", err, status.Code(err))
	}
}
