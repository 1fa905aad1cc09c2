package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

// SubscriptionAdmin is what registration needs of the Pub/Sub admin API
// (*pubsub/v2/apiv1.SubscriptionAdminClient).
type SubscriptionAdmin interface {
	GetSubscription(ctx context.Context, req *pubsubpb.GetSubscriptionRequest, opts ...gax.CallOption) (*pubsubpb.Subscription, error)
	ModifyPushConfig(ctx context.Context, req *pubsubpb.ModifyPushConfigRequest, opts ...gax.CallOption) error
}

// Registrar registers subscription resources for the api (POST and
// DELETE /subscriptions): it validates the resource, checks that its
// playbook and its Pub/Sub subscription exist, stores the registration
// and points the subscription's push config at the subscribe function
// (or leaves it a pull subscription for batch dispatch). The same calls
// run on GCP and on the stack (the Pub/Sub emulator delivers push
// subscriptions itself).
type Registrar struct {
	Store     store.Store
	Admin     SubscriptionAdmin
	Playbooks PlaybookLoader
	// Project qualifies a bare subscription id.
	Project string
	// SubscribeURL is the subscribe function's URL (NOETL_SUBSCRIBE_URL);
	// push endpoints are <SubscribeURL>/push/<name>.
	SubscribeURL string
	// PushServiceAccount is the email whose OIDC token Pub/Sub attaches to
	// pushes (audience SubscribeURL); "" = no token (the stack).
	PushServiceAccount string
	Log                *slog.Logger
}

// PushEndpoint returns the push endpoint of registration name.
func (r *Registrar) PushEndpoint(name string) string {
	return strings.TrimSuffix(r.SubscribeURL, "/") + "/push/" + name
}

func (r *Registrar) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// Register validates src and registers it (creating or replacing the
// registration of its metadata.name). Errors: a *dsl.ValidationError for
// an invalid resource; InvalidArgument for placeholders left, an unknown
// playbook or Pub/Sub subscription; AlreadyExists when the subscription
// already pushes elsewhere or another registration consumes it; others
// (Pub/Sub or Firestore unavailable) as they come. It returns the stored
// registration and the resource.
func (r *Registrar) Register(ctx context.Context, src []byte) (*store.Subscription, *dsl.Subscription, error) {
	if ph := dsl.Placeholders(string(src)); len(ph) > 0 {
		names := make([]string, len(ph))
		for i, p := range ph {
			names[i] = "${" + p + "}"
		}
		return nil, nil, errs.New(errs.InvalidArgument, "the resource still holds the placeholders %s: substitute them before registering (scripts/noetl subscription register FILE --set %s=VALUE ...)",
			strings.Join(names, ", "), ph[0])
	}
	spec, err := dsl.LoadSubscription(src, "subscription")
	if err != nil {
		return nil, nil, err
	}
	name := spec.Metadata.Name
	if _, err := r.Playbooks.Load(ctx, spec.Dispatch.Playbook, 0); err != nil {
		var ve *dsl.ValidationError
		if errors.Is(err, catalog.ErrNotFound) || errors.As(err, &ve) {
			return nil, nil, errs.Wrap(errs.InvalidArgument, err, fmt.Sprintf("subscription %s: dispatch.playbook %s is not a valid catalog playbook or file (register it first: POST /playbooks)", name, spec.Dispatch.Playbook))
		}
		return nil, nil, err
	}
	if spec.Source == "kafka" {
		return r.registerKafka(ctx, src, spec)
	}
	subPath := spec.SubscriptionPath(r.Project)
	got, err := r.Admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: subPath})
	if status.Code(err) == codes.NotFound {
		return nil, nil, errs.New(errs.InvalidArgument, "subscription %s: the Pub/Sub subscription %s does not exist: create it first (gcloud pubsub subscriptions create)", name, subPath)
	}
	if err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, err, "subscribe: get "+subPath)
	}
	all, err := r.Store.SubscriptionList(ctx)
	if err != nil {
		return nil, nil, err
	}
	var old *store.Subscription
	for i := range all {
		switch {
		case all[i].Name == name:
			old = &all[i]
		case all[i].PubSubSubscription == subPath:
			return nil, nil, errs.New(errs.AlreadyExists, "subscription %s: the Pub/Sub subscription %s is already consumed by registration %s (delete it first)", name, subPath, all[i].Name)
		}
	}
	endpoint := r.PushEndpoint(name)
	delivery := store.DeliveryPush
	if spec.Dispatch.BatchDispatch {
		delivery = store.DeliveryPull
	}
	if cur := got.GetPushConfig().GetPushEndpoint(); cur != "" && cur != endpoint {
		if other, ok := strings.CutPrefix(cur, strings.TrimSuffix(r.SubscribeURL, "/")+"/push/"); ok {
			return nil, nil, errs.New(errs.AlreadyExists, "subscription %s: the Pub/Sub subscription %s already delivers to registration %s", name, subPath, other)
		}
		return nil, nil, errs.New(errs.AlreadyExists, "subscription %s: the Pub/Sub subscription %s pushes to %s; registering would take it over: use a pull subscription of your own", name, subPath, cur)
	}
	p := store.SubscriptionPutParams{Name: name, Path: spec.Metadata.Path, Source: string(src), PubSubSubscription: subPath, Topic: got.GetTopic(),
		Playbook: spec.Dispatch.Playbook, Delivery: delivery}
	if delivery == store.DeliveryPush {
		p.PushEndpoint = endpoint
	}
	rec, err := r.Store.SubscriptionPut(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if err := r.setPush(ctx, subPath, p.PushEndpoint); err != nil {
		// Undo: no registration without its wiring.
		if old == nil {
			_ = r.Store.SubscriptionDelete(ctx, name)
		} else {
			_, _ = r.Store.SubscriptionPut(ctx, putParams(*old))
		}
		return nil, nil, err
	}
	if old != nil && old.PubSubSubscription != subPath {
		if err := r.unwire(ctx, old); err != nil {
			r.log().WarnContext(ctx, "subscription re-registered on another Pub/Sub subscription; the old one could not be unwired", "subscription", name, "old", old.PubSubSubscription, "error", err.Error())
		}
	}
	r.log().InfoContext(ctx, "subscription registered", "subscription", name, "pubsub_subscription", subPath, "delivery", delivery,
		"push_endpoint", p.PushEndpoint, "playbook", spec.Dispatch.Playbook, "generation", rec.Generation)
	return rec, spec, nil
}

// registerKafka registers a kafka source: nothing to wire (the subscribe
// function pulls it on its ticks: delivery pull); the registration's
// PubSubSubscription holds the source's key, kafka:<topic>#<group>
// (dsl.Subscription.SourceKey), so that one topic and group is consumed by
// one registration; Topic holds the topic.
func (r *Registrar) registerKafka(ctx context.Context, src []byte, spec *dsl.Subscription) (*store.Subscription, *dsl.Subscription, error) {
	name, key := spec.Metadata.Name, spec.SourceKey("")
	all, err := r.Store.SubscriptionList(ctx)
	if err != nil {
		return nil, nil, err
	}
	var old *store.Subscription
	for i := range all {
		switch {
		case all[i].Name == name:
			old = &all[i]
		case all[i].PubSubSubscription == key:
			return nil, nil, errs.New(errs.AlreadyExists, "subscription %s: the Kafka topic %s for group %s is already consumed by registration %s (delete it first)", name, spec.Topic, spec.Group, all[i].Name)
		}
	}
	rec, err := r.Store.SubscriptionPut(ctx, store.SubscriptionPutParams{Name: name, Path: spec.Metadata.Path, Source: string(src), PubSubSubscription: key,
		Topic: spec.Topic, Playbook: spec.Dispatch.Playbook, Delivery: store.DeliveryPull})
	if err != nil {
		return nil, nil, err
	}
	if old != nil && old.PubSubSubscription != key && !isKafkaKey(old.PubSubSubscription) {
		if err := r.unwire(ctx, old); err != nil {
			r.log().WarnContext(ctx, "subscription re-registered on a Kafka topic; the old Pub/Sub subscription could not be unwired", "subscription", name, "old", old.PubSubSubscription, "error", err.Error())
		}
	}
	r.log().InfoContext(ctx, "subscription registered", "subscription", name, "kafka_topic", spec.Topic, "group", spec.Group, "delivery", store.DeliveryPull,
		"playbook", spec.Dispatch.Playbook, "generation", rec.Generation)
	return rec, spec, nil
}

// isKafkaKey reports a registration of a kafka source (its
// PubSubSubscription is the source key kafka:<topic>#<group>).
func isKafkaKey(s string) bool { return strings.HasPrefix(s, "kafka:") }

func putParams(s store.Subscription) store.SubscriptionPutParams {
	return store.SubscriptionPutParams{Name: s.Name, Path: s.Path, Source: s.Source, PubSubSubscription: s.PubSubSubscription,
		Topic: s.Topic, Playbook: s.Playbook, Delivery: s.Delivery, PushEndpoint: s.PushEndpoint}
}

// setPush sets (endpoint != "") or clears the push config of subPath.
func (r *Registrar) setPush(ctx context.Context, subPath, endpoint string) error {
	pc := &pubsubpb.PushConfig{}
	if endpoint != "" {
		pc.PushEndpoint = endpoint
		if r.PushServiceAccount != "" {
			pc.AuthenticationMethod = &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{
				ServiceAccountEmail: r.PushServiceAccount, Audience: strings.TrimSuffix(r.SubscribeURL, "/")}}
		}
	}
	if err := r.Admin.ModifyPushConfig(ctx, &pubsubpb.ModifyPushConfigRequest{Subscription: subPath, PushConfig: pc}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "subscribe: set the push config of "+subPath)
	}
	return nil
}

// unwire makes the Pub/Sub subscription of rec a pull subscription again
// when it still pushes to rec's endpoint (a subscription re-pointed by
// someone else is left alone; a deleted one is ignored).
func (r *Registrar) unwire(ctx context.Context, rec *store.Subscription) error {
	if isKafkaKey(rec.PubSubSubscription) {
		return nil // nothing wired: the ticks stop pulling with the registration
	}
	got, err := r.Admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: rec.PubSubSubscription})
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "subscribe: get "+rec.PubSubSubscription)
	}
	if got.GetPushConfig().GetPushEndpoint() != r.PushEndpoint(rec.Name) {
		return nil
	}
	return r.setPush(ctx, rec.PubSubSubscription, "")
}

// Delete unregisters name: its Pub/Sub subscription stops pushing to the
// subscribe function (it becomes a pull subscription again: messages
// published afterwards wait there) and the registration is removed.
// ErrNotFound (store) when name is not registered.
func (r *Registrar) Delete(ctx context.Context, name string) error {
	rec, err := r.Store.SubscriptionGet(ctx, name)
	if err != nil {
		return err
	}
	if err := r.unwire(ctx, rec); err != nil {
		return err
	}
	if err := r.Store.SubscriptionDelete(ctx, name); err != nil {
		return err
	}
	r.log().InfoContext(ctx, "subscription deleted", "subscription", name, "pubsub_subscription", rec.PubSubSubscription)
	return nil
}
