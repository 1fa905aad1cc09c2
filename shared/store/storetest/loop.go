package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
)

var loopCases = []testCase{
	{"RoundTrip", testLoopRoundTrip},
	{"PutKeepsFirst", testLoopPutKeepsFirst},
	{"GetNotFound", testLoopGetNotFound},
}

var iterationCases = []testCase{
	{"PutCountListOrdered", testIterationOrdered},
	{"OverwriteKeepsCount", testIterationOverwrite},
	{"EmptyLoop", testIterationEmpty},
	{"LoopsAreSeparate", testIterationLoopsSeparate},
}

var loopDoneCases = []testCase{
	{"CreateOnce", testLoopDoneOnce},
	{"ConcurrentOnce", testLoopDoneConcurrentOnce},
}

func samplePlan() engine.LoopPlan {
	return engine.LoopPlan{
		Step: "fetch",
		Run:  2,
		Items: []any{
			int64(1),
			"a",
			2.5,
			nil,
			[]any{int64(2), []any{int64(3), "b"}},
			map[string]any{"id": int64(4), "tags": []any{[]any{"x"}}},
			int64(1<<53 + 1),
		},
		Iterator:     "item",
		Mode:         "parallel",
		MaxInFlight:  4,
		FailureMode:  "continue",
		Args:         map[string]any{"page": int64(1), "grid": []any{[]any{int64(1)}}},
		StateVersion: 12,
	}
}

func testLoopRoundTrip(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	p := samplePlan()
	if err := s.LoopPut(ctx, id, p); err != nil {
		t.Fatalf("LoopPut: %v", err)
	}
	got, err := s.LoopGet(ctx, id, p.Key())
	if err != nil {
		t.Fatalf("LoopGet(%s): %v", p.Key(), err)
	}
	mustEqual(t, "LoopPlan", samplePlan(), *got)
}

func testLoopPutKeepsFirst(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	if err := s.LoopPut(ctx, id, samplePlan()); err != nil {
		t.Fatalf("LoopPut: %v", err)
	}
	second := samplePlan()
	second.Items = []any{"other"}
	second.MaxInFlight = 1
	second.StateVersion = 13
	if err := s.LoopPut(ctx, id, second); err != nil {
		t.Fatalf("second LoopPut: %v (want nil: LoopPut is idempotent)", err)
	}
	got, err := s.LoopGet(ctx, id, second.Key())
	if err != nil {
		t.Fatalf("LoopGet: %v", err)
	}
	mustEqual(t, "LoopPlan", samplePlan(), *got)
}

func testLoopGetNotFound(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	if p, err := s.LoopGet(ctx, id, "fetch.1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoopGet(unknown execution): plan=%v err=%v, want ErrNotFound", p, err)
	}
	create(ctx, t, s, sampleState(id))
	if err := s.LoopPut(ctx, id, samplePlan()); err != nil {
		t.Fatalf("LoopPut: %v", err)
	}
	if p, err := s.LoopGet(ctx, id, engine.LoopKey("fetch", 3)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoopGet(unknown run): plan=%v err=%v, want ErrNotFound", p, err)
	}
}

// iteration returns the record of iteration i: even ones ok with a nested
// result, odd ones errors.
func iteration(i int) store.Iteration {
	if i%2 == 1 {
		return store.Iteration{Index: i, Status: "error", Error: map[string]any{"kind": "http", "status": int64(500 + i), "message": "boom"}}
	}
	return store.Iteration{Index: i, Status: "ok", Result: map[string]any{
		"i":    int64(i),
		"half": float64(i) + 0.5,
		"rows": []any{[]any{int64(i), "r"}, []any{}},
	}}
}

const iterations = 30

// putShuffled writes iterations 0..n-1 in a deterministic shuffled order.
func putShuffled(ctx context.Context, t *testing.T, s store.Store, id, key string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for _, i := range r.Perm(n) {
		if err := s.IterationPut(ctx, id, key, iteration(i)); err != nil {
			t.Fatalf("IterationPut(%d): %v", i, err)
		}
	}
}

func count(ctx context.Context, t *testing.T, s store.Store, id, key string) int {
	t.Helper()
	n, err := s.IterationCount(ctx, id, key)
	if err != nil {
		t.Fatalf("IterationCount(%s): %v", key, err)
	}
	return n
}

func list(ctx context.Context, t *testing.T, s store.Store, id, key string) []store.Iteration {
	t.Helper()
	its, err := s.IterationList(ctx, id, key)
	if err != nil {
		t.Fatalf("IterationList(%s): %v", key, err)
	}
	return its
}

func testIterationOrdered(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	key := samplePlan().Key()
	putShuffled(ctx, t, s, id, key, iterations)
	if n := count(ctx, t, s, id, key); n != iterations {
		t.Fatalf("IterationCount = %d, want %d", n, iterations)
	}
	want := make([]store.Iteration, iterations)
	for i := range want {
		want[i] = iteration(i)
	}
	mustEqual(t, "IterationList", want, list(ctx, t, s, id, key))
}

func testIterationOverwrite(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	key := samplePlan().Key()
	putShuffled(ctx, t, s, id, key, iterations)
	redo := store.Iteration{Index: 5, Status: "ok", Result: []any{[]any{int64(5)}}}
	for range 2 { // the same outcome redelivered is idempotent too
		if err := s.IterationPut(ctx, id, key, redo); err != nil {
			t.Fatalf("IterationPut(overwrite 5): %v", err)
		}
	}
	if n := count(ctx, t, s, id, key); n != iterations {
		t.Fatalf("IterationCount after overwrite = %d, want %d", n, iterations)
	}
	want := make([]store.Iteration, iterations)
	for i := range want {
		want[i] = iteration(i)
	}
	want[5] = redo
	mustEqual(t, "IterationList", want, list(ctx, t, s, id, key))
}

func testIterationEmpty(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	if n := count(ctx, t, s, id, "fetch.1"); n != 0 {
		t.Fatalf("IterationCount(empty loop) = %d, want 0", n)
	}
	if its := list(ctx, t, s, id, "fetch.1"); len(its) != 0 {
		t.Fatalf("IterationList(empty loop) = %v, want none", its)
	}
}

func testIterationLoopsSeparate(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	create(ctx, t, s, sampleState(id))
	create(ctx, t, s, sampleState(other))
	a, b := engine.LoopKey("fetch", 1), engine.LoopKey("fetch", 2)
	putShuffled(ctx, t, s, id, a, 3)
	putShuffled(ctx, t, s, id, b, 5)
	putShuffled(ctx, t, s, other, a, 7)
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

func testLoopDoneOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	if err := s.LoopDoneCreate(ctx, id, "fetch.1"); err != nil {
		t.Fatalf("first LoopDoneCreate: %v", err)
	}
	for range 2 {
		if err := s.LoopDoneCreate(ctx, id, "fetch.1"); !errors.Is(err, store.ErrExists) {
			t.Fatalf("repeated LoopDoneCreate: err = %v, want ErrExists", err)
		}
	}
	if err := s.LoopDoneCreate(ctx, id, "fetch.2"); err != nil {
		t.Fatalf("LoopDoneCreate of another run: %v", err)
	}
	other := uniqueID(t)
	create(ctx, t, s, sampleState(other))
	if err := s.LoopDoneCreate(ctx, other, "fetch.1"); err != nil {
		t.Fatalf("LoopDoneCreate of another execution: %v", err)
	}
}

func testLoopDoneConcurrentOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() { errs[i] = s.LoopDoneCreate(ctx, id, "fetch.1") })
	}
	wg.Wait()
	done := 0
	for i, err := range errs {
		switch {
		case err == nil:
			done++
		case errors.Is(err, store.ErrExists):
		default:
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if done != 1 {
		t.Fatalf("%d concurrent LoopDoneCreate calls succeeded, want exactly 1", done)
	}
}
