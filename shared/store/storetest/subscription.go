package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

var subscriptionCases = []testCase{
	{"PutGetReplaceDelete", testSubscriptionPutGet},
	{"List", testSubscriptionList},
	{"Invalid", testSubscriptionInvalid},
	{"ConcurrentPutsNumbered", testSubscriptionConcurrentPut},
}

func subParams(name, src string) store.SubscriptionPutParams {
	return store.SubscriptionPutParams{Name: name, Path: "subscriptions/" + name, Source: src,
		PubSubSubscription: "projects/p/subscriptions/" + name, Topic: "projects/p/topics/t", Playbook: "tests/fixtures/pb",
		Delivery: store.DeliveryPush, PushEndpoint: "http://127.0.0.1/subscribe/push/" + name}
}

// testSubscriptionPutGet: a registration round-trips every field; a
// second put replaces it with generation 2 and the first created_at;
// delete removes it (ErrNotFound afterwards, and for a second delete).
// Names may contain '.', which Firestore ids allow.
func testSubscriptionPutGet(ctx context.Context, t *testing.T, s store.Store) {
	name := "sub." + uniqueID(t)
	p := subParams(name, "kind: Subscription\n")
	p.PreviousPushEndpoint = "https://elsewhere.example/push"
	first, err := s.SubscriptionPut(ctx, p)
	if err != nil {
		t.Fatalf("SubscriptionPut: %v", err)
	}
	if first.Generation != 1 || first.CreatedAt.IsZero() || !first.CreatedAt.Equal(first.UpdatedAt) {
		t.Errorf("first put = %+v; want generation 1, created_at = updated_at", first)
	}
	got, err := s.SubscriptionGet(ctx, name)
	if err != nil {
		t.Fatalf("SubscriptionGet: %v", err)
	}
	want := *first
	if got.Name != want.Name || got.Path != want.Path || got.Source != want.Source || got.PubSubSubscription != want.PubSubSubscription ||
		got.Topic != want.Topic || got.Playbook != want.Playbook || got.Delivery != want.Delivery || got.PushEndpoint != want.PushEndpoint ||
		got.PreviousPushEndpoint != "https://elsewhere.example/push" || got.Generation != 1 || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("SubscriptionGet = %+v; want %+v", got, want)
	}
	p2 := p
	p2.Source, p2.Delivery, p2.PushEndpoint = "kind: Subscription # v2\n", store.DeliveryPull, ""
	second, err := s.SubscriptionPut(ctx, p2)
	if err != nil {
		t.Fatalf("second SubscriptionPut: %v", err)
	}
	if second.Generation != 2 || !second.CreatedAt.Equal(first.CreatedAt) || second.UpdatedAt.Before(first.UpdatedAt) {
		t.Errorf("second put = %+v; want generation 2, the first created_at, a later updated_at", second)
	}
	got, err = s.SubscriptionGet(ctx, name)
	if err != nil || got.Source != p2.Source || got.Delivery != store.DeliveryPull || got.PushEndpoint != "" || got.Generation != 2 {
		t.Errorf("after replace: %+v, %v", got, err)
	}
	if err := s.SubscriptionDelete(ctx, name); err != nil {
		t.Fatalf("SubscriptionDelete: %v", err)
	}
	if _, err := s.SubscriptionGet(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SubscriptionGet after delete: %v; want ErrNotFound", err)
	}
	if err := s.SubscriptionDelete(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second SubscriptionDelete: %v; want ErrNotFound", err)
	}
	again, err := s.SubscriptionPut(ctx, p)
	if err != nil || again.Generation != 1 {
		t.Errorf("put after delete = %+v, %v; want generation 1 again", again, err)
	}
}

// testSubscriptionList: the list holds each registration once, sorted by
// name.
func testSubscriptionList(ctx context.Context, t *testing.T, s store.Store) {
	prefix := "list-" + uniqueID(t) + "-"
	for _, n := range []string{"c", "a", "b"} {
		if _, err := s.SubscriptionPut(ctx, subParams(prefix+n, "src "+n)); err != nil {
			t.Fatalf("SubscriptionPut(%s): %v", n, err)
		}
	}
	if _, err := s.SubscriptionPut(ctx, subParams(prefix+"a", "src a2")); err != nil {
		t.Fatal(err)
	}
	all, err := s.SubscriptionList(ctx)
	if err != nil {
		t.Fatalf("SubscriptionList: %v", err)
	}
	if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Name < all[j].Name }) {
		t.Error("SubscriptionList is not sorted by name")
	}
	var got []string
	for _, r := range all {
		if strings.HasPrefix(r.Name, prefix) {
			got = append(got, fmt.Sprintf("%s:%s:%d", strings.TrimPrefix(r.Name, prefix), r.Source, r.Generation))
		}
	}
	if strings.Join(got, ",") != "a:src a2:2,b:src b:1,c:src c:1" {
		t.Errorf("listed %v; want a (generation 2), b, c", got)
	}
}

// testSubscriptionInvalid: incomplete registrations are InvalidArgument
// and store nothing; unknown names are ErrNotFound.
func testSubscriptionInvalid(ctx context.Context, t *testing.T, s store.Store) {
	name := "invalid-" + uniqueID(t)
	for i, mut := range []func(*store.SubscriptionPutParams){
		func(p *store.SubscriptionPutParams) { p.Source = "" },
		func(p *store.SubscriptionPutParams) { p.PubSubSubscription = "" },
		func(p *store.SubscriptionPutParams) { p.Playbook = "" },
		func(p *store.SubscriptionPutParams) { p.Delivery = "carrier-pigeon" },
	} {
		p := subParams(name, "src")
		mut(&p)
		if _, err := s.SubscriptionPut(ctx, p); !errs.Is(err, errs.InvalidArgument) {
			t.Errorf("case %d: SubscriptionPut = %v; want InvalidArgument", i, err)
		}
	}
	if _, err := s.SubscriptionGet(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SubscriptionGet of a refused registration: %v; want ErrNotFound", err)
	}
}

// testSubscriptionConcurrentPut: concurrent registrations of one name end
// with one record whose generation counts them all.
func testSubscriptionConcurrentPut(ctx context.Context, t *testing.T, s store.Store) {
	name := "conc-" + uniqueID(t)
	var wg sync.WaitGroup
	errs := make([]error, concurrency)
	for i := range concurrency {
		wg.Go(func() {
			_, errs[i] = s.SubscriptionPut(ctx, subParams(name, fmt.Sprintf("src %d", i)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put #%d: %v", i, err)
		}
	}
	got, err := s.SubscriptionGet(ctx, name)
	if err != nil || got.Generation != concurrency {
		t.Fatalf("after %d concurrent puts: %+v, %v; want generation %d", concurrency, got, err, concurrency)
	}
}
