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
	{"ReleaseCompleted", testLeaseReleaseCompleted},
	{"ReleaseNotCompleted", testLeaseReleaseNotCompleted},
	{"UnitsAreSeparate", testLeaseUnitsSeparate},
	{"ConcurrentExclusive", testLeaseConcurrentExclusive},
	{"ReleaseByStaleHolderKeepsLease", testLeaseReleaseByStaleHolder},
	{"CompletedIsFinal", testLeaseCompletedIsFinal},
}

const leaseTTL = time.Minute

// leaser wraps LeaseAcquire for one unit with a base time.
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

func (l *leaser) acquire(ctx context.Context, holder string, at time.Duration) (store.LeaseState, error) {
	return l.s.LeaseAcquire(ctx, store.LeaseAcquireParams{
		ExecutionID: l.id, Unit: l.unit, Holder: holder, TTL: leaseTTL, Now: l.t0.Add(at),
	})
}

// expect acquires as holder at t0+at and checks the outcome: a LeaseState,
// or ErrLeaseHeld when wantHeld is set.
func (l *leaser) expect(ctx context.Context, holder string, at time.Duration, want store.LeaseState, wantHeld bool) {
	l.t.Helper()
	got, err := l.acquire(ctx, holder, at)
	switch {
	case wantHeld:
		if !errors.Is(err, store.ErrLeaseHeld) {
			l.t.Fatalf("LeaseAcquire(%s at +%v) = %v, %v; want ErrLeaseHeld", holder, at, stateName(got), err)
		}
	case err != nil:
		l.t.Fatalf("LeaseAcquire(%s at +%v): %v; want %s", holder, at, err, stateName(want))
	case got != want:
		l.t.Fatalf("LeaseAcquire(%s at +%v) = %s, want %s", holder, at, stateName(got), stateName(want))
	}
}

func (l *leaser) release(ctx context.Context, holder string, completed bool) {
	l.t.Helper()
	if err := l.s.LeaseRelease(ctx, l.id, l.unit, holder, completed); err != nil {
		l.t.Fatalf("LeaseRelease(%s, completed=%v): %v", holder, completed, err)
	}
}

func stateName(s store.LeaseState) string {
	switch s {
	case store.LeaseAcquired:
		return "LeaseAcquired"
	case store.LeaseCompleted:
		return "LeaseCompleted"
	}
	return "LeaseState(?)"
}

// Values of expect's wantHeld.
const (
	held = true
	free = false
)

func testLeaseHeldReacquireExpire(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, store.LeaseAcquired, free)
	l.expect(ctx, "B", 10*time.Second, 0, held)
	// The holder's redelivery re-acquires (and renews until +20s+TTL).
	l.expect(ctx, "A", 20*time.Second, store.LeaseAcquired, free)
	l.expect(ctx, "B", leaseTTL+10*time.Second, 0, held)
	// Expired: another holder takes it over, and the first is now refused.
	l.expect(ctx, "B", leaseTTL+21*time.Second, store.LeaseAcquired, free)
	l.expect(ctx, "A", leaseTTL+22*time.Second, 0, held)
	l.expect(ctx, "C", leaseTTL+23*time.Second, 0, held)
}

func testLeaseReleaseCompleted(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, store.LeaseAcquired, free)
	l.release(ctx, "A", true)
	l.expect(ctx, "A", time.Second, store.LeaseCompleted, free)
	l.expect(ctx, "B", 2*time.Second, store.LeaseCompleted, free)
	l.expect(ctx, "C", 10*leaseTTL, store.LeaseCompleted, free)
}

func testLeaseReleaseNotCompleted(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, store.LeaseAcquired, free)
	l.release(ctx, "A", false)
	// Handed off: the continuation takes the unit at once.
	l.expect(ctx, "B", 0, store.LeaseAcquired, free)
	l.expect(ctx, "A", time.Second, 0, held)
	l.release(ctx, "B", false)
	l.expect(ctx, "C", time.Second, store.LeaseAcquired, free)
}

func testLeaseUnitsSeparate(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	create(ctx, t, s, sampleState(id))
	create(ctx, t, s, sampleState(other))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, store.LeaseAcquired, free)
	l2 := newLeaser(t, s, id)
	l2.unit = "fetch.2.i4"
	l2.expect(ctx, "B", 0, store.LeaseAcquired, free)
	l3 := newLeaser(t, s, other)
	l3.expect(ctx, "C", 0, store.LeaseAcquired, free)
	// Completing one unit leaves the others alone.
	l2.release(ctx, "B", true)
	l.expect(ctx, "A", time.Second, store.LeaseAcquired, free)
	l3.expect(ctx, "C", time.Second, store.LeaseAcquired, free)
}

func testLeaseConcurrentExclusive(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	states := make([]store.LeaseState, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() { states[i], errs[i] = l.acquire(ctx, "H"+strconv.Itoa(i), 0) })
	}
	wg.Wait()
	acquired := 0
	for i := range concurrency {
		switch {
		case errs[i] == nil && states[i] == store.LeaseAcquired:
			acquired++
		case errors.Is(errs[i], store.ErrLeaseHeld):
		default:
			t.Errorf("holder %d: %s, %v", i, stateName(states[i]), errs[i])
		}
	}
	if acquired != 1 {
		t.Fatalf("%d of %d concurrent holders acquired the lease, want exactly 1", acquired, concurrency)
	}
}

// testLeaseReleaseByStaleHolder: an attempt whose lease expired and was
// taken over must not drop the new holder's lease when it releases
// ("LeaseRelease drops the holder's lease").
func testLeaseReleaseByStaleHolder(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, store.LeaseAcquired, free)
	l.expect(ctx, "B", 2*leaseTTL, store.LeaseAcquired, free)
	l.release(ctx, "A", false)
	l.expect(ctx, "C", 2*leaseTTL+time.Second, 0, held)
}

// testLeaseCompletedIsFinal: once a unit is completed no later release
// (a stale attempt handing off) reopens it.
func testLeaseCompletedIsFinal(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	l := newLeaser(t, s, id)
	l.expect(ctx, "A", 0, store.LeaseAcquired, free)
	l.expect(ctx, "B", 2*leaseTTL, store.LeaseAcquired, free)
	l.release(ctx, "B", true)
	l.release(ctx, "A", false)
	l.expect(ctx, "C", 2*leaseTTL+time.Second, store.LeaseCompleted, free)
}
