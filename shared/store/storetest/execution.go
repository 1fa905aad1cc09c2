package storetest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// concurrency is the number of goroutines of the concurrent subtests.
const concurrency = 8

var executionCases = []testCase{
	{"RoundTrip", testExecutionRoundTrip},
	{"RoundTripMinimal", testExecutionRoundTripMinimal},
	{"RoundTripOutbox", testExecutionRoundTripOutbox},
	{"CreateExists", testExecutionCreateExists},
	{"CreateConcurrentOnce", testExecutionCreateConcurrentOnce},
	{"GetNotFound", testExecutionGetNotFound},
	{"UpdateApplies", testExecutionUpdateApplies},
	{"UpdateNoWrite", testExecutionUpdateNoWrite},
	{"UpdateErrorAborts", testExecutionUpdateErrorAborts},
	{"UpdateNotFound", testExecutionUpdateNotFound},
	{"UpdateConcurrent", testExecutionUpdateConcurrent},
}

// sampleState returns a state that exercises every generic field with ints,
// floats, nulls, nested maps and lists of lists. Its Outbox is left nil
// (see outboxSample).
func sampleState(id string) *engine.State {
	return &engine.State{
		ExecutionID: id,
		ParentID:    "parent-" + id,
		Playbook:    "tests/storetest/sample",
		Status:      engine.ExecRunning,
		Workload: map[string]any{
			"count": int64(3),
			"big":   int64(1<<53 + 1), // not representable as float64
			"neg":   int64(-7),
			"zero":  int64(0),
			"ratio": 1.5,
			"name":  "storetest",
			"on":    true,
			"none":  nil,
			"matrix": []any{
				[]any{int64(1), int64(2)},
				[]any{int64(3), []any{int64(4), "x", []any{2.25}}},
				[]any{},
			},
			"obj": map[string]any{"k": int64(1), "list": []any{map[string]any{"n": int64(2)}}},
		},
		Ctx: map[string]any{
			"page": int64(1),
			"seen": []any{[]any{"a", int64(1)}, []any{"b", int64(2)}},
		},
		Results: map[string]any{
			"fetch": map[string]any{
				"rows":  []any{[]any{int64(1), "a", 2.5}, []any{int64(2), "b", nil}},
				"count": int64(2),
			},
			"start": int64(42),
		},
		Steps: map[string]*engine.StepState{
			"start": {Status: "ok", Run: 1, Runs: 1, StartedAt: "2026-01-02T03:04:05.000Z", FinishedAt: "2026-01-02T03:04:06.000Z", DurationMS: 1000},
			"fetch": {
				Status: "running", Run: 2, Runs: 1,
				Args:  map[string]any{"page": int64(2), "ids": []any{[]any{int64(1)}, []any{int64(2), int64(3)}}},
				Loop:  &engine.LoopStatus{Total: 3, Mode: "parallel", MaxInFlight: 2},
				Error: map[string]any{"kind": "http", "status": int64(503), "retryable": true},
			},
		},
		Active:      1,
		Version:     7,
		CreatedAt:   "2026-01-02T03:04:05.123Z",
		StartedAt:   "2026-01-02T03:04:05.200Z",
		Failures:    []string{"other"},
		Result:      []any{[]any{int64(1), 1.25}},
		LastStep:    "fetch",
		LastEventID: "ev-" + id,
	}
}

// outboxSample returns an Outbox whose generic fields hold ints and nested
// lists, as route stores it for idempotent republishing.
func outboxSample(id string) *engine.Output {
	return &engine.Output{
		Events: []types.Event{{
			EventID: "e1-" + id, EventType: types.EvLoopStarted, Timestamp: "2026-01-02T03:04:05.300Z",
			ExecutionID: id, Source: "route", EntityType: "loop", EntityID: "fetch", Seq: 3,
			Step: "fetch", StepRun: 2, Iteration: types.IntPtr(1),
			Payload: map[string]any{"total": int64(3), "items": []any{[]any{int64(1)}, "a"}},
		}},
		Commands: []types.Command{{
			ID: "c1-" + id, Kind: types.CmdRunStep, ExecutionID: id, Step: "fetch", StepRun: 2,
			Iteration: types.IntPtr(1), LoopTotal: 3,
			Item:         []any{int64(1), []any{"a", int64(2)}},
			Args:         map[string]any{"page": int64(2)},
			Attempt:      1,
			Iter:         map[string]any{"acc": []any{int64(1)}},
			Prev:         map[string]any{"n": int64(9)},
			HasPrev:      true,
			CtxPatch:     map[string]any{"page": int64(3), "ids": []any{[]any{int64(4)}}},
			NotBefore:    time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
			StateVersion: 7,
		}},
		Loops: []engine.LoopPlan{{
			Step: "fetch", Run: 2, Items: []any{int64(1), []any{int64(2), int64(3)}, map[string]any{"k": int64(4)}},
			Iterator: "item", Mode: "parallel", MaxInFlight: 2, FailureMode: "continue",
			Args: map[string]any{"n": int64(1)}, StateVersion: 7,
		}},
	}
}

func create(ctx context.Context, t *testing.T, s store.Store, st *engine.State) {
	t.Helper()
	if err := s.ExecutionCreate(ctx, &store.Execution{State: st, Source: "name: " + st.ExecutionID + "\n"}); err != nil {
		t.Fatalf("ExecutionCreate(%s): %v", st.ExecutionID, err)
	}
}

func get(ctx context.Context, t *testing.T, s store.Store, id string) *store.Execution {
	t.Helper()
	rec, err := s.ExecutionGet(ctx, id)
	if err != nil {
		t.Fatalf("ExecutionGet(%s): %v", id, err)
	}
	if rec == nil || rec.State == nil {
		t.Fatalf("ExecutionGet(%s) returned no state: %#v", id, rec)
	}
	return rec
}

func testExecutionRoundTrip(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: sample\n"
	if err := s.ExecutionCreate(ctx, &store.Execution{State: sampleState(id), Source: src}); err != nil {
		t.Fatalf("ExecutionCreate: %v", err)
	}
	rec := get(ctx, t, s, id)
	if rec.Source != src {
		t.Errorf("Source = %q, want %q", rec.Source, src)
	}
	mustEqual(t, "State", sampleState(id), rec.State)
	// A second read must not share mutable state with the first.
	rec.State.Workload["count"] = int64(100)
	mustEqual(t, "State (second read)", sampleState(id), get(ctx, t, s, id).State)
}

// testExecutionRoundTripMinimal: a state without maps reads back with
// usable (non-nil) maps.
func testExecutionRoundTripMinimal(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, &engine.State{ExecutionID: id, Status: engine.ExecRequested, CreatedAt: "2026-01-02T03:04:05.000Z"})
	st := get(ctx, t, s, id).State
	if st.ExecutionID != id || st.Status != engine.ExecRequested {
		t.Fatalf("got ExecutionID=%q Status=%q", st.ExecutionID, st.Status)
	}
	if st.Workload == nil || st.Ctx == nil || st.Results == nil || st.Steps == nil {
		t.Fatalf("nil maps after read: Workload=%v Ctx=%v Results=%v Steps=%v", st.Workload == nil, st.Ctx == nil, st.Results == nil, st.Steps == nil)
	}
}

// testExecutionRoundTripOutbox: the Outbox route stores for republishing
// keeps its numbers as int64 too.
func testExecutionRoundTripOutbox(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	st := sampleState(id)
	st.Outbox = outboxSample(id)
	create(ctx, t, s, st)
	want := sampleState(id)
	want.Outbox = outboxSample(id)
	mustEqual(t, "State", want, get(ctx, t, s, id).State)
}

func testExecutionCreateExists(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	other := sampleState(id)
	other.Status = engine.ExecFailed
	other.Version = 99
	err := s.ExecutionCreate(ctx, &store.Execution{State: other, Source: "other"})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("second ExecutionCreate: err = %v, want ErrExists", err)
	}
	rec := get(ctx, t, s, id)
	if rec.State.Status != engine.ExecRunning || rec.State.Version != 7 || rec.Source == "other" {
		t.Fatalf("second create overwrote the document: status=%q version=%d source=%q", rec.State.Status, rec.State.Version, rec.Source)
	}
}

func testExecutionCreateConcurrentOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() {
			st := sampleState(id)
			st.Version = int64(i)
			errs[i] = s.ExecutionCreate(ctx, &store.Execution{State: st})
		})
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case errors.Is(err, store.ErrExists):
		default:
			t.Errorf("creator %d: %v", i, err)
		}
	}
	if created != 1 {
		t.Fatalf("%d concurrent creates succeeded, want exactly 1", created)
	}
}

func testExecutionGetNotFound(ctx context.Context, t *testing.T, s store.Store) {
	rec, err := s.ExecutionGet(ctx, uniqueID(t))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionGet(unknown): rec=%v err=%v, want ErrNotFound", rec, err)
	}
}

func testExecutionUpdateApplies(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	calls := 0
	seen := ""
	err := s.ExecutionUpdate(ctx, id, func(rec *store.Execution) (bool, error) {
		calls++
		// fn sees the stored document.
		seen = firstDiff("State seen by fn", reflect.ValueOf(sampleState(id)), reflect.ValueOf(rec.State))
		rec.State.Status = engine.ExecOK
		rec.State.Version++
		rec.State.Ctx["page"] = int64(2)
		rec.State.Ctx["grid"] = []any{[]any{int64(1), int64(2)}, []any{int64(3)}}
		rec.State.Results["next"] = map[string]any{"n": int64(5), "f": 0.5}
		rec.State.Steps["next"] = &engine.StepState{Status: "ok", Run: 1, Runs: 1}
		rec.State.FinishedAt = "2026-01-02T03:05:00.000Z"
		return true, nil
	})
	if err != nil {
		t.Fatalf("ExecutionUpdate: %v", err)
	}
	if calls < 1 {
		t.Fatalf("fn was not called")
	}
	if seen != "" {
		t.Fatal(seen)
	}
	want := sampleState(id)
	want.Status = engine.ExecOK
	want.Version = 8
	want.Ctx["page"] = int64(2)
	want.Ctx["grid"] = []any{[]any{int64(1), int64(2)}, []any{int64(3)}}
	want.Results["next"] = map[string]any{"n": int64(5), "f": 0.5}
	want.Steps["next"] = &engine.StepState{Status: "ok", Run: 1, Runs: 1}
	want.FinishedAt = "2026-01-02T03:05:00.000Z"
	rec := get(ctx, t, s, id)
	mustEqual(t, "State", want, rec.State)
	if rec.Source != "name: "+id+"\n" {
		t.Errorf("Source after update = %q, want it kept", rec.Source)
	}
}

func testExecutionUpdateNoWrite(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	err := s.ExecutionUpdate(ctx, id, func(rec *store.Execution) (bool, error) {
		rec.State.Status = engine.ExecFailed
		rec.State.Version = 100
		rec.State.Ctx["page"] = int64(9)
		return false, nil
	})
	if err != nil {
		t.Fatalf("ExecutionUpdate(write=false): %v", err)
	}
	mustEqual(t, "State", sampleState(id), get(ctx, t, s, id).State)
}

func testExecutionUpdateErrorAborts(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	errBoom := errors.New("storetest: boom")
	err := s.ExecutionUpdate(ctx, id, func(rec *store.Execution) (bool, error) {
		rec.State.Status = engine.ExecFailed
		rec.State.Version = 100
		return true, errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("ExecutionUpdate: err = %v, want the error of fn", err)
	}
	mustEqual(t, "State", sampleState(id), get(ctx, t, s, id).State)
}

func testExecutionUpdateNotFound(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	called := false
	err := s.ExecutionUpdate(ctx, id, func(rec *store.Execution) (bool, error) {
		called = true
		return true, nil
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionUpdate(unknown): err = %v, want ErrNotFound", err)
	}
	if called {
		t.Fatalf("fn was called for an unknown execution")
	}
	if _, err := s.ExecutionGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionUpdate(unknown) created the document: ExecutionGet err = %v", err)
	}
}

// testExecutionUpdateConcurrent: read-modify-write increments from
// concurrent goroutines all land (fn runs in a transaction).
func testExecutionUpdateConcurrent(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	st := sampleState(id)
	st.Ctx["n"] = int64(0)
	create(ctx, t, s, st)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() {
			errs[i] = s.ExecutionUpdate(ctx, id, func(rec *store.Execution) (bool, error) {
				n, ok := rec.State.Ctx["n"].(int64)
				if !ok {
					return false, errors.New("storetest: ctx.n is not an int64")
				}
				rec.State.Ctx["n"] = n + 1
				rec.State.Version++
				return true, nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("updater %d: %v", i, err)
		}
	}
	got := get(ctx, t, s, id).State
	if got.Ctx["n"] != int64(concurrency) || got.Version != 7+concurrency {
		t.Fatalf("after %d concurrent increments: ctx.n = %#v, version = %d; want %d and %d", concurrency, got.Ctx["n"], got.Version, concurrency, 7+concurrency)
	}
}
