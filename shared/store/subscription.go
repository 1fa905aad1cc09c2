package store

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

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

func (p SubscriptionPutParams) record(gen int, created, now time.Time) Subscription {
	return Subscription{Name: p.Name, Path: p.Path, Source: p.Source, PubSubSubscription: p.PubSubSubscription, Topic: p.Topic,
		Playbook: p.Playbook, Delivery: p.Delivery, PushEndpoint: p.PushEndpoint, PreviousPushEndpoint: p.PreviousPushEndpoint,
		Generation: gen, CreatedAt: created, UpdatedAt: now}
}

func checkSubscriptionParams(p SubscriptionPutParams) error {
	if p.Name == "" || p.Source == "" || p.PubSubSubscription == "" || p.Playbook == "" {
		return errs.New(errs.InvalidArgument, "store: put subscription: name, source, pubsub_subscription and playbook are required")
	}
	if p.Delivery != DeliveryPush && p.Delivery != DeliveryPull {
		return errs.New(errs.InvalidArgument, "store: put subscription %s: delivery %q is neither push nor pull", p.Name, p.Delivery)
	}
	return nil
}

type subDoc struct {
	Name                 string    `firestore:"name"`
	Path                 string    `firestore:"path"`
	Source               string    `firestore:"source"`
	PubSubSubscription   string    `firestore:"pubsub_subscription"`
	Topic                string    `firestore:"topic"`
	Playbook             string    `firestore:"playbook"`
	Delivery             string    `firestore:"delivery"`
	PushEndpoint         string    `firestore:"push_endpoint"`
	PreviousPushEndpoint string    `firestore:"previous_push_endpoint"`
	Generation           int       `firestore:"generation"`
	CreatedAt            time.Time `firestore:"created_at"`
	UpdatedAt            time.Time `firestore:"updated_at"`
}

func (d subDoc) view() Subscription {
	return Subscription{Name: d.Name, Path: d.Path, Source: d.Source, PubSubSubscription: d.PubSubSubscription, Topic: d.Topic,
		Playbook: d.Playbook, Delivery: d.Delivery, PushEndpoint: d.PushEndpoint, PreviousPushEndpoint: d.PreviousPushEndpoint,
		Generation: d.Generation, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

func docOf(s Subscription) subDoc {
	return subDoc{Name: s.Name, Path: s.Path, Source: s.Source, PubSubSubscription: s.PubSubSubscription, Topic: s.Topic,
		Playbook: s.Playbook, Delivery: s.Delivery, PushEndpoint: s.PushEndpoint, PreviousPushEndpoint: s.PreviousPushEndpoint,
		Generation: s.Generation, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func (f *Firestore) subscription(name string) *firestore.DocumentRef {
	return f.c.Collection("subscriptions").Doc(url.PathEscape(name))
}

// SubscriptionPut implements Store: it creates or replaces
// subscriptions/{name} in a transaction, numbering the generation and
// keeping the first registration's created_at.
func (f *Firestore) SubscriptionPut(ctx context.Context, p SubscriptionPutParams) (*Subscription, error) {
	if err := checkSubscriptionParams(p); err != nil {
		return nil, err
	}
	ref := f.subscription(p.Name)
	var out Subscription
	err := f.c.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		now := time.Now().UTC().Truncate(time.Microsecond) // Firestore keeps microseconds
		gen, created := 1, now
		s, err := tx.Get(ref)
		switch {
		case err == nil:
			var d subDoc
			if err := s.DataTo(&d); err != nil {
				return err
			}
			gen, created = d.Generation+1, d.CreatedAt.UTC()
		case !isCode(err, codes.NotFound):
			return err
		}
		out = p.record(gen, created, now)
		return tx.Set(ref, docOf(out))
	})
	if err != nil {
		return nil, fmt.Errorf("store: put subscription %s: %w", p.Name, err)
	}
	return &out, nil
}

// SubscriptionGet implements Store; ErrNotFound when not registered.
func (f *Firestore) SubscriptionGet(ctx context.Context, name string) (*Subscription, error) {
	s, err := f.subscription(name).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: get subscription %s: %w", name, err)
	}
	var d subDoc
	if err := s.DataTo(&d); err != nil {
		return nil, err
	}
	v := d.view()
	return &v, nil
}

// SubscriptionList implements Store (sorted by name).
func (f *Firestore) SubscriptionList(ctx context.Context) ([]Subscription, error) {
	it := f.c.Collection("subscriptions").Documents(ctx)
	defer it.Stop()
	out := []Subscription{}
	for {
		s, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("store: list subscriptions: %w", err)
		}
		var d subDoc
		if err := s.DataTo(&d); err != nil {
			return nil, err
		}
		out = append(out, d.view())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SubscriptionDelete implements Store; ErrNotFound when not registered.
func (f *Firestore) SubscriptionDelete(ctx context.Context, name string) error {
	_, err := f.subscription(name).Delete(ctx, firestore.Exists)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return ErrNotFound
		}
		return fmt.Errorf("store: delete subscription %s: %w", name, err)
	}
	return nil
}

// SubscriptionPut implements Store.
func (m *Memory) SubscriptionPut(ctx context.Context, p SubscriptionPutParams) (*Subscription, error) {
	if err := checkSubscriptionParams(p); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.subs == nil {
		m.subs = map[string]Subscription{}
	}
	now := time.Now().UTC().Truncate(time.Microsecond) // Firestore keeps microseconds
	gen, created := 1, now
	if old, ok := m.subs[p.Name]; ok {
		gen, created = old.Generation+1, old.CreatedAt
	}
	s := p.record(gen, created, now)
	m.subs[p.Name] = s
	return &s, nil
}

// SubscriptionGet implements Store.
func (m *Memory) SubscriptionGet(ctx context.Context, name string) (*Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[name]
	if !ok {
		return nil, ErrNotFound
	}
	return &s, nil
}

// SubscriptionList implements Store.
func (m *Memory) SubscriptionList(ctx context.Context) ([]Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Subscription{}
	for _, s := range m.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SubscriptionDelete implements Store.
func (m *Memory) SubscriptionDelete(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[name]; !ok {
		return ErrNotFound
	}
	delete(m.subs, name)
	return nil
}
