package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

var loopCases = []testCase{
	{"RoundTrip", testLoopRoundTrip},
	{"GetNotFound", testLoopGetNotFound},
}

var iterationCases = []testCase{
	{"BeginEnd", testIterationBeginEnd},
	{"LeaseHeldRenewedExpired", testIterationLeaseHeld},
	{"EndWithoutHolderOnce", testIterationEndWithoutHolder},
	{"ReleaseHandsOff", testIterationRelease},
	{"ConcurrentBeginExclusive", testIterationConcurrentBegin},
	{"ListOrderedEndedOnly", testIterationListOrdered},
	{"Empty", testIterationEmpty},
	{"LoopsAreSeparate", testIterationLoopsSeparate},
	{"EndInvalidStatus", testIterationEndInvalidStatus},
}

var laneCases = []testCase{
	{"DoneIdempotentCount", testLaneDone},
	{"ConcurrentDone", testLaneConcurrent},
}

var loopDoneCases = []testCase{
	{"CreateOnce", testLoopDoneOnce},
	{"ConcurrentOnce", testLoopDoneConcurrentOnce},
}

func samplePlan() engine.LoopPlan {
	return engine.LoopPlan{
		Step:  "fetch",
		Run:   2,
		Total: 7,
		Items: []any{
			int64(1),
			"a",
			2.5,
			nil,
			[]any{int64(2), []any{int64(3), "b"}},
			map[string]any{"id": int64(4), "tags": []any{[]any{"x"}}},
			int64(1<<53 + 1),
		},
		ItemsRef:     map[string]any{"uri": "noetl://default/default/x", "size": int64(10)},
		Iterator:     "item",
		Mode:         "parallel",
		MaxInFlight:  4,
		FailureMode:  "best_effort",
		Args:         map[string]any{"page": int64(1), "grid": []any{[]any{int64(1)}}},
		StateVersion: 12,
	}
}

// putPlans writes plans through a checkpoint (the only writer of loop
// plans).
func putPlans(ctx context.Context, t *testing.T, s store.Store, id string, plans ...engine.LoopPlan) {
	t.Helper()
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "plans-" + id, Apply: func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Version++
		return &engine.Output{Loops: plans}, nil
	}})
}

func testLoopRoundTrip(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	p := samplePlan()
	putPlans(ctx, t, s, id, p)
	got := plan(ctx, t, s, id, p.Key())
	mustEqual(t, "LoopPlan", samplePlan(), *got)
	got.Items[0] = int64(100)
	mustEqual(t, "LoopPlan (second read)", samplePlan(), *plan(ctx, t, s, id, p.Key()))
}

func testLoopGetNotFound(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	expectNoPlan(ctx, t, s, id, "fetch.1")
	create(ctx, t, s, sampleState(id))
	putPlans(ctx, t, s, id, samplePlan())
	expectNoPlan(ctx, t, s, id, engine.LoopKey("fetch", 3))
}

// iteration returns the record of iteration i: even ones ok with a nested
// result and a cursor frame, odd ones errors.
func iteration(i int) engine.IterationRecord {
	if i%2 == 1 {
		return engine.IterationRecord{Index: i, Status: types.StatusError, Clock: int64(100 + i),
			Error: map[string]any{"kind": "http", "status": int64(500 + i), "message": "boom"}}
	}
	return engine.IterationRecord{Index: i, Status: types.StatusOK, Clock: int64(100 + i), Result: map[string]any{
		"i":    int64(i),
		"half": float64(i) + 0.5,
		"rows": []any{[]any{int64(i), "r"}, []any{}},
	}, Cursor: &engine.CursorFrame{Rest: []any{map[string]any{"id": int64(i + 1), "w": 0.5}}}}
}

const iterLeaseTTL = time.Minute

// iters drives the iteration calls of one loop run with a base time.
type iters struct {
	t   *testing.T
	s   store.Store
	id  string
	key string
	t0  time.Time
}

func newIters(t *testing.T, s store.Store, id string) *iters {
	return &iters{t: t, s: s, id: id, key: samplePlan().Key(), t0: time.Now().UTC().Truncate(time.Millisecond)}
}

func (it *iters) begin(ctx context.Context, idx int, holder string, at time.Duration) (*engine.IterationRecord, error) {
	return it.s.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: it.id, LoopKey: it.key, Index: idx, Holder: holder, TTL: iterLeaseTTL, Now: it.t0.Add(at)})
}

// mustBegin begins idx as holder and fails unless the caller now holds it.
func (it *iters) mustBegin(ctx context.Context, idx int, holder string, at time.Duration) {
	it.t.Helper()
	rec, err := it.begin(ctx, idx, holder, at)
	if err != nil || rec != nil {
		it.t.Fatalf("IterationBegin(%d, %s at +%v) = %s, %v; want the lease", idx, holder, at, dump(rec), err)
	}
}

// mustBeHeld begins idx as holder and fails unless ErrLeaseHeld.
func (it *iters) mustBeHeld(ctx context.Context, idx int, holder string, at time.Duration) {
	it.t.Helper()
	rec, err := it.begin(ctx, idx, holder, at)
	if !errors.Is(err, store.ErrLeaseHeld) {
		it.t.Fatalf("IterationBegin(%d, %s at +%v) = %s, %v; want ErrLeaseHeld", idx, holder, at, dump(rec), err)
	}
}

func (it *iters) end(ctx context.Context, r engine.IterationRecord, holder string) (bool, error) {
	return it.s.IterationEnd(ctx, store.IterationEndParams{ExecutionID: it.id, LoopKey: it.key, Record: r, Holder: holder})
}

// mustEnd ends r as holder and checks first.
func (it *iters) mustEnd(ctx context.Context, r engine.IterationRecord, holder string, wantFirst bool) {
	it.t.Helper()
	first, err := it.end(ctx, r, holder)
	if err != nil || first != wantFirst {
		it.t.Fatalf("IterationEnd(%d, holder %q) = %v, %v; want first=%v", r.Index, holder, first, err, wantFirst)
	}
}

func (it *iters) release(ctx context.Context, idx int, holder string) {
	it.t.Helper()
	if err := it.s.IterationRelease(ctx, it.id, it.key, idx, holder); err != nil {
		it.t.Fatalf("IterationRelease(%d, %s): %v", idx, holder, err)
	}
}

func (it *iters) list(ctx context.Context) []engine.IterationRecord {
	it.t.Helper()
	return list(ctx, it.t, it.s, it.id, it.key)
}

func count(ctx context.Context, t *testing.T, s store.Store, id, key string) int {
	t.Helper()
	n, err := s.IterationCount(ctx, id, key)
	if err != nil {
		t.Fatalf("IterationCount(%s): %v", key, err)
	}
	return n
}

func list(ctx context.Context, t *testing.T, s store.Store, id, key string) []engine.IterationRecord {
	t.Helper()
	its, err := s.IterationList(ctx, id, key)
	if err != nil {
		t.Fatalf("IterationList(%s): %v", key, err)
	}
	return its
}

// testIterationBeginEnd: Begin takes the lease; End by the holder records
// the iteration once (a repeated End is a duplicate); Begin of an ended
// iteration returns its record whoever asks.
func testIterationBeginEnd(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustBegin(ctx, 3, "A", 0)
	it.mustEnd(ctx, iteration(3), "A", true)
	it.mustEnd(ctx, iteration(3), "A", false)
	other := iteration(3)
	other.Error = "different"
	it.mustEnd(ctx, other, "B", false)
	it.mustEnd(ctx, other, "", false)
	for _, holder := range []string{"A", "B"} {
		rec, err := it.begin(ctx, 3, holder, time.Second)
		if err != nil || rec == nil {
			t.Fatalf("IterationBegin(ended, %s) = %s, %v; want the record", holder, dump(rec), err)
		}
		mustEqual(t, "record of the ended iteration", iteration(3), *rec)
	}
	mustEqual(t, "IterationList", []engine.IterationRecord{iteration(3)}, it.list(ctx))
	if n := count(ctx, t, s, id, it.key); n != 1 {
		t.Fatalf("IterationCount = %d, want 1", n)
	}
}

// testIterationLeaseHeld: another holder is refused while the lease runs;
// the holder's redelivery renews it; an expired lease is taken over and
// the first holder's End then reports ErrLeaseLost.
func testIterationLeaseHeld(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustBegin(ctx, 0, "A", 0)
	it.mustBeHeld(ctx, 0, "B", 10*time.Second)
	it.mustBegin(ctx, 0, "A", 20*time.Second) // renewed until +20s+TTL
	it.mustBeHeld(ctx, 0, "B", iterLeaseTTL+10*time.Second)
	it.mustBegin(ctx, 0, "B", iterLeaseTTL+21*time.Second)
	it.mustBeHeld(ctx, 0, "A", iterLeaseTTL+22*time.Second)
	if first, err := it.end(ctx, iteration(0), "A"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("IterationEnd by the lease's former holder = %v, %v; want ErrLeaseLost", first, err)
	}
	if n := count(ctx, t, s, id, it.key); n != 0 {
		t.Fatalf("IterationCount after a lost End = %d, want 0", n)
	}
	it.mustEnd(ctx, iteration(0), "B", true)
	mustEqual(t, "IterationList", []engine.IterationRecord{iteration(0)}, it.list(ctx))
}

// testIterationEndWithoutHolder: an iteration run without a lease is
// recorded by its first End only (the first copy wins).
func testIterationEndWithoutHolder(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustEnd(ctx, iteration(2), "", true)
	again := iteration(2)
	again.Result = "second copy"
	it.mustEnd(ctx, again, "", false)
	mustEqual(t, "IterationList", []engine.IterationRecord{iteration(2)}, it.list(ctx))
	rec, err := it.begin(ctx, 2, "A", 0)
	if err != nil || rec == nil {
		t.Fatalf("IterationBegin(ended) = %s, %v; want the record", dump(rec), err)
	}
	mustEqual(t, "record", iteration(2), *rec)
}

// testIterationRelease: a released iteration is taken at once by its
// continuation; a release by a non-holder changes nothing; the releaser
// can no longer end it.
func testIterationRelease(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustBegin(ctx, 1, "A", 0)
	it.release(ctx, 1, "A")
	it.mustBegin(ctx, 1, "B", 0)
	it.mustBeHeld(ctx, 1, "C", time.Second)
	it.release(ctx, 1, "A") // stale: A no longer holds it
	it.release(ctx, 1, "C") // never held it
	it.mustBeHeld(ctx, 1, "C", 2*time.Second)
	if first, err := it.end(ctx, iteration(1), "A"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("IterationEnd by the releaser = %v, %v; want ErrLeaseLost", first, err)
	}
	it.mustEnd(ctx, iteration(1), "B", true)
	// Releasing an ended iteration keeps its record.
	it.release(ctx, 1, "B")
	mustEqual(t, "IterationList", []engine.IterationRecord{iteration(1)}, it.list(ctx))
	// Releasing an iteration that never began is harmless.
	it.release(ctx, 9, "A")
	it.mustBegin(ctx, 9, "D", 0)
}

// testIterationConcurrentBegin: of concurrent holders beginning the same
// iteration exactly one gets the lease.
func testIterationConcurrentBegin(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	recs := make([]*engine.IterationRecord, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() { recs[i], errs[i] = it.begin(ctx, 0, fmt.Sprintf("H%d", i), 0) })
	}
	wg.Wait()
	won := 0
	for i := range concurrency {
		switch {
		case errs[i] == nil && recs[i] == nil:
			won++
		case errors.Is(errs[i], store.ErrLeaseHeld):
		default:
			t.Errorf("holder %d: %s, %v", i, dump(recs[i]), errs[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent holders got the iteration's lease, want exactly 1", won, concurrency)
	}
}

const iterations = 30

// endShuffled ends iterations 0..n-1 in a deterministic shuffled order,
// even ones under a lease, odd ones without.
func endShuffled(ctx context.Context, t *testing.T, s store.Store, id, key string, n int) {
	t.Helper()
	it := newIters(t, s, id)
	it.key = key
	r := rand.New(rand.NewPCG(1, 2))
	for _, i := range r.Perm(n) {
		holder := ""
		if i%2 == 0 {
			holder = fmt.Sprintf("H%d", i)
			it.mustBegin(ctx, i, holder, 0)
		}
		it.mustEnd(ctx, iteration(i), holder, true)
	}
}

// testIterationListOrdered: List returns the ended iterations ordered by
// index and Count counts them; begun (running) ones are in neither.
func testIterationListOrdered(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	key := samplePlan().Key()
	endShuffled(ctx, t, s, id, key, iterations)
	it := newIters(t, s, id)
	for _, i := range []int{iterations, iterations + 5, iterations + 1} {
		it.mustBegin(ctx, i, "R", 0)
	}
	if n := count(ctx, t, s, id, key); n != iterations {
		t.Fatalf("IterationCount = %d, want %d", n, iterations)
	}
	want := make([]engine.IterationRecord, iterations)
	for i := range want {
		want[i] = iteration(i)
	}
	mustEqual(t, "IterationList", want, list(ctx, t, s, id, key))
}

func testIterationEmpty(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	for _, created := range []bool{false, true} {
		if created {
			create(ctx, t, s, sampleState(id))
		}
		if n := count(ctx, t, s, id, "fetch.1"); n != 0 {
			t.Fatalf("IterationCount(empty loop, execution created %v) = %d, want 0", created, n)
		}
		if its := list(ctx, t, s, id, "fetch.1"); len(its) != 0 {
			t.Fatalf("IterationList(empty loop, execution created %v) = %v, want none", created, its)
		}
	}
}

func testIterationLoopsSeparate(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	a, b := engine.LoopKey("fetch", 1), engine.LoopKey("fetch", 2)
	endShuffled(ctx, t, s, id, a, 3)
	endShuffled(ctx, t, s, id, b, 5)
	endShuffled(ctx, t, s, other, a, 7)
	for _, c := range []struct {
		id, key string
		want    int
	}{{id, a, 3}, {id, b, 5}, {other, a, 7}, {other, b, 0}} {
		if n := count(ctx, t, s, c.id, c.key); n != c.want {
			t.Errorf("IterationCount(%s, %s) = %d, want %d", c.id, c.key, n, c.want)
		}
		if its := list(ctx, t, s, c.id, c.key); len(its) != c.want {
			t.Errorf("IterationList(%s, %s) has %d entries, want %d", c.id, c.key, len(its), c.want)
		}
	}
}

// testIterationEndInvalidStatus: an iteration ends ok or error; any other
// status is refused (InvalidArgument) and nothing is recorded.
func testIterationEndInvalidStatus(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustBegin(ctx, 0, "A", 0)
	for _, st := range []types.Status{types.StatusFailed, types.StatusRunning, ""} {
		for _, holder := range []string{"A", ""} {
			r := iteration(0)
			r.Status = st
			if _, err := it.end(ctx, r, holder); !errs.Is(err, errs.InvalidArgument) {
				t.Errorf("IterationEnd(status %q, holder %q): err = %v, want InvalidArgument", st, holder, err)
			}
		}
	}
	if n := count(ctx, t, s, id, it.key); n != 0 {
		t.Fatalf("IterationCount = %d after refused ends, want 0", n)
	}
	it.mustEnd(ctx, iteration(0), "A", true)
}

func laneCount(ctx context.Context, t *testing.T, s store.Store, id, key string) int {
	t.Helper()
	n, err := s.LaneCount(ctx, id, key)
	if err != nil {
		t.Fatalf("LaneCount(%s): %v", key, err)
	}
	return n
}

func laneDone(ctx context.Context, t *testing.T, s store.Store, id, key string, lane int) {
	t.Helper()
	if err := s.LaneDone(ctx, id, key, lane); err != nil {
		t.Fatalf("LaneDone(%s, %d): %v", key, lane, err)
	}
}

// testLaneDone: LaneDone is idempotent and LaneCount counts distinct lanes
// of one loop run.
func testLaneDone(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	a, b := engine.LoopKey("fetch", 1), engine.LoopKey("fetch", 2)
	if n := laneCount(ctx, t, s, id, a); n != 0 {
		t.Fatalf("LaneCount(no lanes) = %d, want 0", n)
	}
	laneDone(ctx, t, s, id, a, 0)
	laneDone(ctx, t, s, id, a, 0)
	laneDone(ctx, t, s, id, a, 2)
	laneDone(ctx, t, s, id, b, 1)
	laneDone(ctx, t, s, other, a, 5)
	for _, c := range []struct {
		id, key string
		want    int
	}{{id, a, 2}, {id, b, 1}, {other, a, 1}, {other, b, 0}} {
		if n := laneCount(ctx, t, s, c.id, c.key); n != c.want {
			t.Errorf("LaneCount(%s, %s) = %d, want %d", c.id, c.key, n, c.want)
		}
	}
}

// testLaneConcurrent: every lane of a loop marked done twice, concurrently,
// counts once.
func testLaneConcurrent(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	key := samplePlan().Key()
	errs := make([]error, 2*concurrency)
	var wg sync.WaitGroup
	for i := range 2 * concurrency {
		wg.Go(func() { errs[i] = s.LaneDone(ctx, id, key, i%concurrency) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("LaneDone #%d: %v", i, err)
		}
	}
	if n := laneCount(ctx, t, s, id, key); n != concurrency {
		t.Fatalf("LaneCount = %d, want %d", n, concurrency)
	}
}

func loopDone(ctx context.Context, t *testing.T, s store.Store, id, key, owner string) string {
	t.Helper()
	w, err := s.LoopDoneCreate(ctx, id, key, owner)
	if err != nil {
		t.Fatalf("LoopDoneCreate(%s, %s, %s): %v", id, key, owner, err)
	}
	return w
}

func testLoopDoneOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	if w := loopDone(ctx, t, s, id, "fetch.1", "task-a"); w != "task-a" {
		t.Fatalf("first claim: winner %q, want task-a", w)
	}
	for range 2 {
		// The owner's redelivery keeps the claim; anyone else sees it.
		if w := loopDone(ctx, t, s, id, "fetch.1", "task-a"); w != "task-a" {
			t.Fatalf("owner again: winner %q, want task-a", w)
		}
		if w := loopDone(ctx, t, s, id, "fetch.1", "task-b"); w != "task-a" {
			t.Fatalf("other owner: winner %q, want task-a", w)
		}
	}
	if w := loopDone(ctx, t, s, id, "fetch.2", "task-b"); w != "task-b" {
		t.Fatalf("another run: winner %q, want task-b", w)
	}
	other := uniqueID(t)
	create(ctx, t, s, sampleState(other))
	if w := loopDone(ctx, t, s, other, "fetch.1", "task-c"); w != "task-c" {
		t.Fatalf("another execution: winner %q, want task-c", w)
	}
}

func testLoopDoneConcurrentOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	winners := make([]string, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() { winners[i] = loopDone(ctx, t, s, id, "fetch.1", fmt.Sprintf("task-%d", i)) })
	}
	wg.Wait()
	won := 0
	for i, w := range winners {
		if w != winners[0] {
			t.Fatalf("callers disagree on the winner: %q and %q", winners[0], w)
		}
		if w == fmt.Sprintf("task-%d", i) {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent claims won, want exactly 1", won)
	}
}
