package store

import (
	"time"

	"github.com/noetl/gcpengine/shared/errs"
)

// Subscription deliveries (Subscription.Delivery).
const (
	// DeliveryPush: the Pub/Sub subscription pushes each message to the
	// subscribe function (its push endpoint is PushEndpoint).
	DeliveryPush = "push"
	// DeliveryPull: the subscribe function pulls batches on its ticks
	// (dispatch.batch_dispatch).
	DeliveryPull = "pull"
)

// Subscription is a registered `kind: Subscription` resource (Firestore
// subscriptions/{name}; README "Running NoETL v2 playbooks"): what the subscribe function needs
// to turn a delivery into an execution, and what DELETE needs to undo the
// wiring.
type Subscription struct {
	// Name is the resource's metadata.name (the document id).
	Name string `json:"name"`
	// Path is its metadata.path.
	Path string `json:"path,omitempty"`
	// Source is the resource's YAML as registered (placeholders
	// substituted).
	Source string `json:"source,omitempty"`
	// PubSubSubscription is the consumed subscription,
	// projects/<p>/subscriptions/<s>.
	PubSubSubscription string `json:"pubsub_subscription"`
	// Topic is that subscription's topic, projects/<p>/topics/<t> (DLQ
	// replays republish there).
	Topic string `json:"topic,omitempty"`
	// Playbook is dispatch.playbook.
	Playbook string `json:"playbook"`
	// Delivery is DeliveryPush or DeliveryPull.
	Delivery string `json:"delivery"`
	// PushEndpoint is the push endpoint the registration set (push only).
	PushEndpoint string `json:"push_endpoint,omitempty"`
	// PreviousPushEndpoint is the subscription's push endpoint before the
	// first registration ("" = it was a pull subscription); DELETE
	// restores it.
	PreviousPushEndpoint string `json:"previous_push_endpoint,omitempty"`
	// Generation counts the registrations of this name (1, 2, ...).
	Generation int `json:"generation"`
	// CreatedAt is the first registration, UpdatedAt the last.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SubscriptionPutParams registers (creates or replaces) a subscription:
// every field of Subscription but Generation and the times, which the
// store keeps.
type SubscriptionPutParams struct {
	Name                 string
	Path                 string
	Source               string
	PubSubSubscription   string
	Topic                string
	Playbook             string
	Delivery             string
	PushEndpoint         string
	PreviousPushEndpoint string
}

// Record is the registration p makes as generation gen, first registered
// at created and registered again at now (what a driver stores).
func (p SubscriptionPutParams) Record(gen int, created, now time.Time) Subscription {
	return Subscription{Name: p.Name, Path: p.Path, Source: p.Source, PubSubSubscription: p.PubSubSubscription, Topic: p.Topic,
		Playbook: p.Playbook, Delivery: p.Delivery, PushEndpoint: p.PushEndpoint, PreviousPushEndpoint: p.PreviousPushEndpoint,
		Generation: gen, CreatedAt: created, UpdatedAt: now}
}

// Check validates p before SubscriptionPut: InvalidArgument without a
// name, source, Pub/Sub subscription or playbook, or with a delivery
// other than DeliveryPush or DeliveryPull.
func (p SubscriptionPutParams) Check() error {
	if p.Name == "" || p.Source == "" || p.PubSubSubscription == "" || p.Playbook == "" {
		return errs.New(errs.InvalidArgument, "store: put subscription: name, source, pubsub_subscription and playbook are required")
	}
	if p.Delivery != DeliveryPush && p.Delivery != DeliveryPull {
		return errs.New(errs.InvalidArgument, "store: put subscription %s: delivery %q is neither push nor pull", p.Name, p.Delivery)
	}
	return nil
}
