package subscribe

import (
	"context"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// The in-memory fakes of this package's tests, exported to its external
// test package so that they run the conformance suites of
// shared/subscribe/subscribetest beside the drivers (conformance_test.go).

// NewMemBucket returns an empty in-memory Bucket (memBucket).
func NewMemBucket() Bucket { return &memBucket{objs: map[string][]byte{}} }

// NewFakePuller returns an empty in-memory Puller (fakePuller) and the
// function that publishes a message to it.
func NewFakePuller() (Puller, func(ctx context.Context, data []byte, attrs map[string]string) error) {
	p := &fakePuller{}
	return p, func(_ context.Context, data []byte, attrs map[string]string) error {
		p.publish(data, attrs)
		return nil
	}
}

// NewFakeAdmin returns an in-memory SubscriptionAdmin (fakeAdmin) without
// subscriptions and the function that creates one.
func NewFakeAdmin() (SubscriptionAdmin, func(ctx context.Context, subscription, topic string) error) {
	a := &fakeAdmin{subs: map[string]*pubsubpb.Subscription{}}
	return a, func(_ context.Context, subscription, topic string) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.subs[subscription] = &pubsubpb.Subscription{Name: subscription, Topic: topic}
		return nil
	}
}
