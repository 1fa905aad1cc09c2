package firestorestore

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"

	"github.com/noetl/gcpengine/shared/store"
)

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

func (d subDoc) view() store.Subscription {
	return store.Subscription{Name: d.Name, Path: d.Path, Source: d.Source, PubSubSubscription: d.PubSubSubscription, Topic: d.Topic,
		Playbook: d.Playbook, Delivery: d.Delivery, PushEndpoint: d.PushEndpoint, PreviousPushEndpoint: d.PreviousPushEndpoint,
		Generation: d.Generation, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

func docOf(s store.Subscription) subDoc {
	return subDoc{Name: s.Name, Path: s.Path, Source: s.Source, PubSubSubscription: s.PubSubSubscription, Topic: s.Topic,
		Playbook: s.Playbook, Delivery: s.Delivery, PushEndpoint: s.PushEndpoint, PreviousPushEndpoint: s.PreviousPushEndpoint,
		Generation: s.Generation, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func (f *Firestore) subscription(name string) *firestore.DocumentRef {
	return f.c.Collection("subscriptions").Doc(url.PathEscape(name))
}

// SubscriptionPut implements store.Store: it creates or replaces
// subscriptions/{name} in a transaction, numbering the generation and
// keeping the first registration's created_at.
func (f *Firestore) SubscriptionPut(ctx context.Context, p store.SubscriptionPutParams) (*store.Subscription, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	ref := f.subscription(p.Name)
	var out store.Subscription
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
		out = p.Record(gen, created, now)
		return tx.Set(ref, docOf(out))
	})
	if err != nil {
		return nil, fmt.Errorf("store: put subscription %s: %w", p.Name, err)
	}
	return &out, nil
}

// SubscriptionGet implements store.Store; ErrNotFound when not registered.
func (f *Firestore) SubscriptionGet(ctx context.Context, name string) (*store.Subscription, error) {
	s, err := f.subscription(name).Get(ctx)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return nil, store.ErrNotFound
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

// SubscriptionList implements store.Store (sorted by name).
func (f *Firestore) SubscriptionList(ctx context.Context) ([]store.Subscription, error) {
	out, err := listDocs(ctx, f.c.Collection("subscriptions").Query, "list subscriptions", func(_ *firestore.DocumentSnapshot, d *subDoc) (store.Subscription, error) {
		return d.view(), nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SubscriptionDelete implements store.Store; ErrNotFound when not registered.
func (f *Firestore) SubscriptionDelete(ctx context.Context, name string) error {
	_, err := f.subscription(name).Delete(ctx, firestore.Exists)
	if err != nil {
		if isCode(err, codes.NotFound) {
			return store.ErrNotFound
		}
		return fmt.Errorf("store: delete subscription %s: %w", name, err)
	}
	return nil
}
