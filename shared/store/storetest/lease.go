package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/store"
)

var leaseCases = []testCase{
	{"HeldReacquireExpire", testLeaseHeldReacquireExpire},
	{"RenewExtends", testLeaseRenewExtends},
	{"RenewLost", testLeaseRenewLost},
	{"ReleaseLetsOthersAcquire", testLeaseRelease},
	{"ReleaseByStaleHolderKeepsLease", testLeaseReleaseByStaleHolder},
	{"UnitsAreSeparate", testLeaseUnitsSeparate},
	{"ConcurrentExclusive", testLeaseConcurrentExclusive},
}

const leaseTTL = time.Minute

// leaser drives the lease of one unit with a base time.
type leaser struct {
	t    *testing.T
	s    store.Store
	id   string
	unit string
	t0   time.Time
}

func newLeaser(t *testing.T, s store.Store, id string) *leaser {
	return &leaser{t: t, s: s, id: id, unit: "fetch.2.i3", t0: time.Now().UTC().Truncate(time.Millisecond)}
}

func (l *leaser) params(holder string, at time.Duration) store.LeaseAcquireParams {
	return store.LeaseAcquireParams{ExecutionID: l.id, Unit: l.unit, Holder: holder, TTL: leaseTTL, Now: l.t0.Add(at)}
}

func (l *leaser) acquire(ctx context.Context, holder string, at time.Duration) error {
	return l.s.LeaseAcquire(ctx, l.params(holder, at))
}

// expect acquires as holder at t0+at: the lease, or ErrLeaseHeld when
// wantHeld is set.
func (l *leaser) expect(ctx context.Context, holder string, at time.Duration, wantHeld bool) {
	l.t.Helper()
	err := l.acquire(ctx, holder, at)
	switch {
	case wantHeld && !errors.Is(err, store.ErrLeaseHeld):
		l.t.Fatalf("LeaseAcquire(%s at +%v) = %v; want ErrLeaseHeld", holder, at, err)
	case !wantHeld && err != nil:
		l.t.Fatalf("LeaseAcquire(%s at +%v) = %v; want the lease", holder, at, err)
	}
}

// renew renews as holder at t0+at and checks for ErrLeaseLost (wantLost)
// or success.
func (l *leaser) renew(ctx context.Context, holder string, at time.Duration, wantLost bool) {
	l.t.Helper()
	err := l.s.LeaseRenew(ctx, l.params(holder, at))
	switch {
	case wantLost && !errors.Is(err, store.ErrLeaseLost):
		l.t.Fatalf("LeaseRenew(%s at +%v) = %v; want ErrLeaseLost", holder, at, err)
	case !wantLost && err != nil:
		l.t.Fatalf("LeaseRenew(%s at +%v) = %v; want it renewed", holder, at, err)
	}
}

func (l *leaser) release(ctx context.Context, holder string) {
	l.t.Helper()
	if err := l.s.LeaseRelease(ctx, l.id, l.unit, holder); err != nil {
		l.t.Fatalf("LeaseRelease(%s): %v", holder, err)
	}
}

// Values of expect's wantHeld and renew's wantLost.
const (
	held    = true
	free    = false
	lost    = true
	renewed = false
)

func testLeaseHeldReacquireExpire(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, free)
	l.expect(ctx, "B", 10*time.Second, held)
	// The holder's redelivery re-acquires (and renews until +20s+TTL).
	l.expect(ctx, "A", 20*time.Second, free)
	l.expect(ctx, "B", leaseTTL+10*time.Second, held)
	// Expired: another holder takes it over, and the first is now refused.
	l.expect(ctx, "B", leaseTTL+21*time.Second, free)
	l.expect(ctx, "A", leaseTTL+22*time.Second, held)
	l.expect(ctx, "C", leaseTTL+23*time.Second, held)
}

// testLeaseRenewExtends: LeaseRenew moves the expiry to now+ttl.
func testLeaseRenewExtends(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, free)
	l.renew(ctx, "A", 50*time.Second, renewed)
	l.expect(ctx, "B", leaseTTL+10*time.Second, held) // expired without the renewal
	l.expect(ctx, "B", leaseTTL+49*time.Second, held)
	l.expect(ctx, "B", leaseTTL+51*time.Second, free)
}

// testLeaseRenewLost: renewing a lease taken over, released or never taken
// reports ErrLeaseLost and does not take the lease.
func testLeaseRenewLost(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	l := newLeaser(t, s, id)
	l.renew(ctx, "A", 0, lost) // never taken
	l.expect(ctx, "B", time.Second, free)
	l.expect(ctx, "A", 2*time.Second, held)
	l.expect(ctx, "A", 2*leaseTTL, free) // taken over after expiry
	l.renew(ctx, "B", 2*leaseTTL+time.Second, lost)
	l.expect(ctx, "B", 2*leaseTTL+2*time.Second, held)
	l.release(ctx, "A")
	l.renew(ctx, "A", 2*leaseTTL+3*time.Second, lost) // released
	l.expect(ctx, "C", 2*leaseTTL+4*time.Second, free)
}

// testLeaseRelease: a released lease is taken by another holder at once;
// releasing twice, or a unit never leased, is harmless.
func testLeaseRelease(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, free)
	l.release(ctx, "A")
	l.release(ctx, "A")
	l.expect(ctx, "B", 0, free)
	l.expect(ctx, "A", time.Second, held)
	l.release(ctx, "B")
	l.expect(ctx, "C", time.Second, free)
	never := newLeaser(t, s, id)
	never.unit = "never.1"
	never.release(ctx, "A")
	never.expect(ctx, "B", 0, free)
}

// testLeaseReleaseByStaleHolder: an attempt whose lease expired and was
// taken over must not drop the new holder's lease when it releases.
func testLeaseReleaseByStaleHolder(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, free)
	l.expect(ctx, "B", 2*leaseTTL, free)
	l.release(ctx, "A")
	l.expect(ctx, "C", 2*leaseTTL+time.Second, held)
	l.renew(ctx, "B", 2*leaseTTL+2*time.Second, renewed)
}

func testLeaseUnitsSeparate(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	create(ctx, t, s, sampleState(id))
	create(ctx, t, s, sampleState(other))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, free)
	l2 := newLeaser(t, s, id)
	l2.unit = "fetch.2.i4"
	l2.expect(ctx, "B", 0, free)
	l3 := newLeaser(t, s, other)
	l3.expect(ctx, "C", 0, free)
	// Releasing one unit leaves the others alone.
	l2.release(ctx, "B")
	l.expect(ctx, "D", time.Second, held)
	l3.expect(ctx, "D", time.Second, held)
	l2.expect(ctx, "D", time.Second, free)
}

func testLeaseConcurrentExclusive(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() { errs[i] = l.acquire(ctx, "H"+strconv.Itoa(i), 0) })
	}
	wg.Wait()
	acquired := 0
	for i, err := range errs {
		switch {
		case err == nil:
			acquired++
		case errors.Is(err, store.ErrLeaseHeld):
		default:
			t.Errorf("holder %d: %v", i, err)
		}
	}
	if acquired != 1 {
		t.Fatalf("%d of %d concurrent holders acquired the lease, want exactly 1", acquired, concurrency)
	}
}
