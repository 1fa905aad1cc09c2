package subscribe

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

// fakeAdmin holds subscriptions by full name.
type fakeAdmin struct {
	mu   sync.Mutex
	subs map[string]*pubsubpb.Subscription
	fail error
}

func (a *fakeAdmin) GetSubscription(_ context.Context, req *pubsubpb.GetSubscriptionRequest, _ ...gax.CallOption) (*pubsubpb.Subscription, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.subs[req.Subscription]
	if !ok {
		return nil, status.Error(codes.NotFound, "no subscription "+req.Subscription)
	}
	return &pubsubpb.Subscription{Name: s.Name, Topic: s.Topic, PushConfig: s.PushConfig}, nil
}

func (a *fakeAdmin) ModifyPushConfig(_ context.Context, req *pubsubpb.ModifyPushConfigRequest, _ ...gax.CallOption) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return a.fail
	}
	s, ok := a.subs[req.Subscription]
	if !ok {
		return status.Error(codes.NotFound, "no subscription")
	}
	s.PushConfig = req.PushConfig
	return nil
}

func (a *fakeAdmin) endpoint(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.subs[name].GetPushConfig().GetPushEndpoint()
}

func newRegistrar(t *testing.T) (*Registrar, *fakeAdmin, string) {
	t.Helper()
	f := newFixture(t)
	admin := &fakeAdmin{subs: map[string]*pubsubpb.Subscription{
		"projects/noetl-local/subscriptions/stream": {Name: "projects/noetl-local/subscriptions/stream", Topic: "projects/noetl-local/topics/stream"},
		"projects/noetl-local/subscriptions/other":  {Name: "projects/noetl-local/subscriptions/other", Topic: "projects/noetl-local/topics/stream"},
		"projects/noetl-local/subscriptions/taken": {Name: "projects/noetl-local/subscriptions/taken", Topic: "projects/noetl-local/topics/stream",
			PushConfig: &pubsubpb.PushConfig{PushEndpoint: "https://someone.else/push"}},
	}}
	r := &Registrar{Store: f.st, Admin: admin, Playbooks: &catalog.Catalog{Store: f.st, Root: t.TempDir()}, Project: "noetl-local",
		SubscribeURL: "http://127.0.0.1:9680/subscribe", PushServiceAccount: "noetl-push@noetl-local.iam.gserviceaccount.com"}
	src := string(mustRead(t, confSub+"/cloudrun_pubsub_stream.subscription.yaml"))
	src, _ = dsl.Substitute(src, map[string]string{"PUBSUB_SUBSCRIPTION": "stream", "SPOOL_BUCKET": "spool-bucket", "NOETL_SERVER_URL": "http://127.0.0.1:9680"})
	return r, admin, src
}

// TestRegisterWiresPushAndDeleteUnwires: registration stores the resource
// and points the subscription's push config at the subscribe function
// (with the push account's OIDC token); DELETE makes it a pull
// subscription again and removes the registration.
func TestRegisterWiresPushAndDeleteUnwires(t *testing.T) {
	r, admin, src := newRegistrar(t)
	ctx := context.Background()
	rec, spec, err := r.Register(ctx, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	const sub = "projects/noetl-local/subscriptions/stream"
	if rec.Name != "cloudrun_pubsub_stream" || rec.PubSubSubscription != sub || rec.Topic != "projects/noetl-local/topics/stream" ||
		rec.Delivery != store.DeliveryPush || rec.PushEndpoint != "http://127.0.0.1:9680/subscribe/push/cloudrun_pubsub_stream" || rec.Generation != 1 || spec.Metadata.Name != rec.Name {
		t.Fatalf("record %+v", rec)
	}
	pc := admin.subs[sub].PushConfig
	if pc.PushEndpoint != rec.PushEndpoint || pc.GetOidcToken().GetServiceAccountEmail() != r.PushServiceAccount || pc.GetOidcToken().GetAudience() != r.SubscribeURL {
		t.Errorf("push config %v", pc)
	}
	again, _, err := r.Register(ctx, []byte(src))
	if err != nil || again.Generation != 2 {
		t.Fatalf("re-registration: %+v, %v", again, err)
	}
	// Moving the registration to another subscription unwires the first.
	moved, _, err := r.Register(ctx, []byte(strings.Replace(src, "subscription: stream", "subscription: other", 1)))
	if err != nil || moved.PubSubSubscription != "projects/noetl-local/subscriptions/other" {
		t.Fatalf("move: %+v, %v", moved, err)
	}
	if admin.endpoint(sub) != "" || admin.endpoint("projects/noetl-local/subscriptions/other") != rec.PushEndpoint {
		t.Errorf("after the move: stream pushes to %q, other to %q", admin.endpoint(sub), admin.endpoint("projects/noetl-local/subscriptions/other"))
	}
	if err := r.Delete(ctx, "cloudrun_pubsub_stream"); err != nil {
		t.Fatal(err)
	}
	if admin.endpoint("projects/noetl-local/subscriptions/other") != "" {
		t.Error("delete left the push config")
	}
	if _, err := r.Store.SubscriptionGet(ctx, "cloudrun_pubsub_stream"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("registration after delete: %v", err)
	}
	if err := r.Delete(ctx, "cloudrun_pubsub_stream"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// TestRegisterRefuses: placeholders, invalid resources, unknown playbooks
// and subscriptions, and subscriptions that push elsewhere or are taken
// are refused and change nothing.
func TestRegisterRefuses(t *testing.T) {
	r, admin, src := newRegistrar(t)
	ctx := context.Background()
	ref := string(mustRead(t, confSub+"/cloudrun_pubsub_stream.subscription.yaml"))
	_, _, err := r.Register(ctx, []byte(ref))
	if !errs.Is(err, errs.InvalidArgument) || !strings.Contains(err.Error(), "${PUBSUB_SUBSCRIPTION}, ${SPOOL_BUCKET}, ${NOETL_SERVER_URL}") {
		t.Errorf("placeholders: %v", err)
	}
	var ve *dsl.ValidationError
	if _, _, err := r.Register(ctx, []byte(strings.Replace(src, "source: pubsub", "source: kafka", 1))); !errors.As(err, &ve) {
		t.Errorf("invalid resource: %v", err)
	}
	if _, _, err := r.Register(ctx, []byte(strings.Replace(src, "tests/fixtures/sub_ingest_default", "tests/fixtures/none", 1))); !errs.Is(err, errs.InvalidArgument) || !strings.Contains(err.Error(), "register it first") {
		t.Errorf("unknown playbook: %v", err)
	}
	if _, _, err := r.Register(ctx, []byte(strings.Replace(src, "subscription: stream", "subscription: missing", 1))); !errs.Is(err, errs.InvalidArgument) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("unknown subscription: %v", err)
	}
	if _, _, err := r.Register(ctx, []byte(strings.Replace(src, "subscription: stream", "subscription: taken", 1))); !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "https://someone.else/push") {
		t.Errorf("foreign push subscription: %v", err)
	}
	if _, _, err := r.Register(ctx, []byte(src)); err != nil {
		t.Fatal(err)
	}
	second := strings.Replace(src, "name: cloudrun_pubsub_stream", "name: second", 1)
	if _, _, err := r.Register(ctx, []byte(second)); !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "cloudrun_pubsub_stream") {
		t.Errorf("subscription consumed by another registration: %v", err)
	}
	admin.fail = status.Error(codes.Unavailable, "pubsub down")
	if _, _, err := r.Register(ctx, []byte(strings.Replace(second, "subscription: stream", "subscription: other", 1))); err == nil {
		t.Error("a failed push config change must fail the registration")
	}
	if _, err := r.Store.SubscriptionGet(ctx, "second"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a registration whose wiring failed was kept: %v", err)
	}
	list, _ := r.Store.SubscriptionList(ctx)
	if len(list) != 1 {
		t.Errorf("registrations %v; want only cloudrun_pubsub_stream", list)
	}
}

// TestRegisterBatchDispatchKeepsPull: a batch_dispatch registration leaves
// (or makes) its subscription a pull subscription.
func TestRegisterBatchDispatchKeepsPull(t *testing.T) {
	r, admin, src := newRegistrar(t)
	ctx := context.Background()
	if _, _, err := r.Register(ctx, []byte(src)); err != nil {
		t.Fatal(err)
	}
	batch := strings.Replace(src, "    execution_pool: subscription\n", "    execution_pool: subscription\n    batch_dispatch: true\n", 1)
	rec, _, err := r.Register(ctx, []byte(batch))
	if err != nil || rec.Delivery != store.DeliveryPull || rec.PushEndpoint != "" {
		t.Fatalf("batch registration %+v, %v", rec, err)
	}
	if ep := admin.endpoint("projects/noetl-local/subscriptions/stream"); ep != "" {
		t.Errorf("batch dispatch subscription still pushes to %s", ep)
	}
}
