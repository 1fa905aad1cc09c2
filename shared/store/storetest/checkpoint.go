package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

var checkpointCases = []testCase{
	{"Applies", testCheckpointApplies},
	{"NilOutputWritesNothing", testCheckpointNilOutput},
	{"EmptyOutputWritesStateOnly", testCheckpointEmptyOutput},
	{"ErrorAborts", testCheckpointErrorAborts},
	{"NotFound", testCheckpointNotFound},
	{"ConcurrentExactlyOnce", func(ctx context.Context, t *testing.T, s store.Store) { testCheckpointConcurrent(ctx, t, s, false) }},
	{"ConcurrentOptimisticExactlyOnce", func(ctx context.Context, t *testing.T, s store.Store) { testCheckpointConcurrent(ctx, t, s, true) }},
	{"MetersReadAndWrites", testCheckpointMeters},
	{"OptimisticUnchanged", testCheckpointOptimistic},
	{"OptimisticStaleUsesFreshState", testCheckpointOptimisticStale},
	{"OptimisticStaleNotApplicable", testCheckpointOptimisticStaleNotApplicable},
	{"BaseWithoutUpdateTimeIsRead", testCheckpointBaseWithoutUpdateTime},
	{"ReturnsTheWrittenUpdateTime", testCheckpointUpdateTime},
}

var outboxCases = []testCase{
	{"GetKindsPreserved", testOutboxGet},
	{"GetNotFound", testOutboxGetNotFound},
	{"PerExecution", testOutboxPerExecution},
}

// outboxSample returns a transition output whose generic fields hold ints,
// floats and nested lists, with two loop plans.
func outboxSample(id string) *engine.Output {
	second := samplePlan()
	second.Step, second.Items, second.Total = "other", []any{[]any{int64(9)}}, 1
	return &engine.Output{
		Events: []types.Event{{
			EventID: "e1-" + id, EventType: types.EvLoopStarted, Timestamp: types.EventTimeOf(time.Date(2026, 1, 2, 3, 4, 5, 300*int(time.Millisecond), time.UTC)),
			ExecutionID: id, Source: "execute", EntityType: "loop", EntityID: "fetch", Seq: 3, Clock: 14,
			Step: "fetch", StepRun: 2, Iteration: types.IntPtr(1), Status: types.StatusRunning,
			Payload: map[string]any{"total": int64(3), "items": []any{[]any{int64(1)}, "a"}, "f": 0.5},
		}, {
			EventID: "e2-" + id, EventType: types.EvStepScheduled, ExecutionID: id, Clock: 15, Step: "other", StepRun: 1,
		}},
		Commands: []types.Command{{
			ID: "c1-" + id, Kind: types.CmdRunStep, ExecutionID: id, Step: "fetch", StepRun: 2,
			Iteration: types.IntPtr(1), LoopTotal: 3,
			Item:         []any{int64(1), []any{"a", int64(2)}},
			Args:         map[string]any{"page": int64(2)},
			Attempt:      1,
			Iter:         map[string]any{"acc": []any{int64(1)}},
			Prev:         map[string]any{"n": int64(9), "f": 2.5},
			HasPrev:      true,
			CtxPatch:     map[string]any{"page": int64(3), "ids": []any{[]any{int64(4)}}},
			TaskResults:  map[string]any{"first": []any{[]any{int64(1), nil}}},
			Spill:        []any{int64(5)},
			CursorRest:   []any{[]any{int64(6), 0.25}},
			StepVars:     map[string]any{"s": int64(7)},
			Vars:         map[string]any{"v": []any{int64(8)}},
			NotBefore:    time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
			StateVersion: 7,
			Clock:        15,
		}},
		Loops: []engine.LoopPlan{samplePlan(), second},
	}
}

// incOutput is the output increment produces for counter value n.
func incOutput(id string, n int64) *engine.Output {
	return &engine.Output{
		Events: []types.Event{{
			EventID: fmt.Sprintf("inc%03d-%s", n, id), EventType: types.EvStepDone, ExecutionID: id,
			Step: "count", StepRun: int(n), Clock: n, Status: types.StatusOK,
			Payload: map[string]any{"n": n, "rows": []any{[]any{n, 0.5}}},
		}},
		Commands: []types.Command{{
			ID: fmt.Sprintf("cmd%03d-%s", n, id), Kind: types.CmdRunStep, ExecutionID: id,
			Step: "count", StepRun: int(n), Args: map[string]any{"n": n}, Attempt: 1, StateVersion: n,
		}},
	}
}

// increment returns a transition that increments the int64 counter
// ctx[key] (absent = 0) and the version, and outputs incOutput for the new
// value with plans: a deterministic function of the state it is given.
func increment(key string, plans []engine.LoopPlan) store.CheckpointFunc {
	return func(rec *store.Execution) (*engine.Output, error) {
		var n int64
		if v, ok := rec.State.Ctx[key]; ok {
			if n, ok = v.(int64); !ok {
				return nil, fmt.Errorf("storetest: ctx.%s is %T, not int64", key, v)
			}
		}
		n++
		rec.State.Ctx[key] = n
		rec.State.Version++
		out := incOutput(rec.State.ExecutionID, n)
		out.Loops = plans
		return out, nil
	}
}

// applyOnce returns a transition that applies event once: when
// ctx.applied[event] is set it returns nil (a duplicate), else it sets it
// and increments ctx.n as increment does.
func applyOnce(event string, plans []engine.LoopPlan) store.CheckpointFunc {
	inc := increment("n", plans)
	return func(rec *store.Execution) (*engine.Output, error) {
		applied, _ := rec.State.Ctx["applied"].(map[string]any)
		if applied[event] == true {
			return nil, nil
		}
		if applied == nil {
			applied = map[string]any{}
			rec.State.Ctx["applied"] = applied
		}
		applied[event] = true
		return inc(rec)
	}
}

func checkpoint(ctx context.Context, t *testing.T, s store.Store, p store.CheckpointParams) store.Checkpoint {
	t.Helper()
	cp, err := s.ExecutionCheckpoint(ctx, p)
	if err != nil {
		t.Fatalf("ExecutionCheckpoint(%s, outbox %s): %v", p.ExecutionID, p.OutboxID, err)
	}
	return cp
}

// expectNoOutbox fails unless outbox id of execution is absent.
func expectNoOutbox(ctx context.Context, t *testing.T, s store.Store, execID, id string) {
	t.Helper()
	if o, err := s.OutboxGet(ctx, execID, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OutboxGet(%s): output=%s err=%v, want ErrNotFound", id, dump(o), err)
	}
}

// expectNoPlan fails unless loop plan key of execution is absent.
func expectNoPlan(ctx context.Context, t *testing.T, s store.Store, execID, key string) {
	t.Helper()
	if p, err := s.LoopGet(ctx, execID, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoopGet(%s): plan=%s err=%v, want ErrNotFound", key, dump(p), err)
	}
}

func outbox(ctx context.Context, t *testing.T, s store.Store, execID, id string) *engine.Output {
	t.Helper()
	o, err := s.OutboxGet(ctx, execID, id)
	if err != nil {
		t.Fatalf("OutboxGet(%s): %v", id, err)
	}
	return o
}

func plan(ctx context.Context, t *testing.T, s store.Store, execID, key string) *engine.LoopPlan {
	t.Helper()
	p, err := s.LoopGet(ctx, execID, key)
	if err != nil {
		t.Fatalf("LoopGet(%s): %v", key, err)
	}
	return p
}

// mutateSample applies the changes testCheckpointApplies makes to a
// sample state.
func mutateSample(st *engine.State) {
	st.Status = engine.ExecOK
	st.Version++
	st.Clock = 15
	st.Ctx["page"] = int64(2)
	st.Ctx["grid"] = []any{[]any{int64(1), int64(2)}, []any{int64(3)}}
	st.Results["next"] = map[string]any{"n": int64(5), "f": 0.5}
	st.Steps["next"] = &engine.StepState{Status: types.StatusOK, Run: 1, Runs: 1}
	st.Steps["fetch"].Pending = nil
	st.FinishedAt = rfc3339("2026-01-02T03:05:00.000Z")
}

// testCheckpointApplies: Apply sees the stored document; the new state,
// the outbox document and every loop plan are written, and the result
// reports them.
func testCheckpointApplies(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	calls := 0
	seen := ""
	cp := checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob-" + id, Apply: func(rec *store.Execution) (*engine.Output, error) {
		calls++
		seen = firstDiff("State seen by Apply", reflect.ValueOf(sampleState(id)), reflect.ValueOf(rec.State))
		if rec.Source != "name: "+id+"\n" {
			seen = fmt.Sprintf("Source seen by Apply = %q", rec.Source)
		}
		mutateSample(rec.State)
		return outboxSample(id), nil
	}})
	if calls < 1 {
		t.Fatal("Apply was not called")
	}
	if seen != "" {
		t.Fatal(seen)
	}
	want := sampleState(id)
	mutateSample(want)
	if !cp.Applied {
		t.Fatal("Checkpoint.Applied = false, want true")
	}
	mustEqual(t, "Checkpoint.Output", outboxSample(id), cp.Output)
	mustEqual(t, "Checkpoint.State", want, cp.State)
	rec := get(ctx, t, s, id)
	mustEqual(t, "stored State", want, rec.State)
	if rec.Source != "name: "+id+"\n" {
		t.Errorf("Source after checkpoint = %q, want it kept", rec.Source)
	}
	mustEqual(t, "outbox", outboxSample(id), outbox(ctx, t, s, id, "ob-"+id))
	for _, p := range outboxSample(id).Loops {
		mustEqual(t, "loop plan "+p.Key(), p, *plan(ctx, t, s, id, p.Key()))
	}
}

// testCheckpointNilOutput: an Apply that returns no output writes nothing,
// even if it changed the state it was given.
func testCheckpointNilOutput(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	before := get(ctx, t, s, id)
	cp := checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Status = engine.ExecFailed
		rec.State.Version = 100
		rec.State.Ctx["page"] = int64(9)
		return nil, nil
	}})
	if cp.Applied || cp.Output != nil {
		t.Fatalf("Checkpoint = applied %v, output %s; want not applied, no output", cp.Applied, dump(cp.Output))
	}
	if cp.State == nil || cp.State.ExecutionID != id {
		t.Fatalf("Checkpoint.State = %s, want the state as read", dump(cp.State))
	}
	after := get(ctx, t, s, id)
	mustEqual(t, "State", sampleState(id), after.State)
	if !after.UpdateTime.Equal(before.UpdateTime) {
		t.Fatalf("UpdateTime changed (%v → %v): the document was written", before.UpdateTime, after.UpdateTime)
	}
	expectNoOutbox(ctx, t, s, id, "ob")
}

// testCheckpointEmptyOutput: an empty output writes the state but no
// outbox document.
func testCheckpointEmptyOutput(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	cp := checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: func(rec *store.Execution) (*engine.Output, error) {
		mutateSample(rec.State)
		return &engine.Output{}, nil
	}})
	if !cp.Applied {
		t.Fatal("Checkpoint.Applied = false, want true")
	}
	want := sampleState(id)
	mutateSample(want)
	mustEqual(t, "stored State", want, get(ctx, t, s, id).State)
	expectNoOutbox(ctx, t, s, id, "ob")
}

// testCheckpointErrorAborts: an Apply error is returned and nothing is
// written (state, outbox, loop plans).
func testCheckpointErrorAborts(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	errBoom := errors.New("storetest: boom")
	for _, base := range []bool{false, true} {
		p := store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: func(rec *store.Execution) (*engine.Output, error) {
			mutateSample(rec.State)
			return outboxSample(id), errBoom
		}}
		if base {
			p.Base = get(ctx, t, s, id)
		}
		cp, err := s.ExecutionCheckpoint(ctx, p)
		if !errors.Is(err, errBoom) {
			t.Fatalf("ExecutionCheckpoint (base %v): err = %v, want the error of Apply", base, err)
		}
		if cp.Applied {
			t.Fatalf("ExecutionCheckpoint (base %v) failed but reports Applied", base)
		}
	}
	mustEqual(t, "State", sampleState(id), get(ctx, t, s, id).State)
	expectNoOutbox(ctx, t, s, id, "ob")
	for _, p := range outboxSample(id).Loops {
		expectNoPlan(ctx, t, s, id, p.Key())
	}
}

func testCheckpointNotFound(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	called := false
	_, err := s.ExecutionCheckpoint(ctx, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: func(rec *store.Execution) (*engine.Output, error) {
		called = true
		return outboxSample(id), nil
	}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionCheckpoint(unknown): err = %v, want ErrNotFound", err)
	}
	if called {
		t.Fatal("Apply was called for an unknown execution")
	}
	if _, err := s.ExecutionGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionCheckpoint(unknown) created the document: ExecutionGet err = %v", err)
	}
	expectNoOutbox(ctx, t, s, id, "ob")
}

// testCheckpointConcurrent: concurrent checkpoints on one execution (with
// or without a Base read just before) each apply exactly once, on the
// state left by the previous ones: the counter ends at N, the counter
// values the checkpoints produced are 1..N once each, and each outbox
// holds the output computed with its value.
func testCheckpointConcurrent(ctx context.Context, t *testing.T, s store.Store, optimistic bool) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	res := make([]store.Checkpoint, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() {
			p := store.CheckpointParams{ExecutionID: id, OutboxID: fmt.Sprintf("ob-%d", i), Apply: increment("n", nil)}
			if optimistic {
				if p.Base, errs[i] = s.ExecutionGet(ctx, id); errs[i] != nil {
					return
				}
			}
			res[i], errs[i] = s.ExecutionCheckpoint(ctx, p)
		})
	}
	wg.Wait()
	seen := map[int64]int{}
	for i := range concurrency {
		if errs[i] != nil {
			t.Errorf("checkpoint %d: %v", i, errs[i])
			continue
		}
		if !res[i].Applied || res[i].State == nil {
			t.Errorf("checkpoint %d: applied %v, state %v; want applied with its state", i, res[i].Applied, res[i].State != nil)
			continue
		}
		n, _ := res[i].State.Ctx["n"].(int64)
		seen[n]++
		mustEqual(t, fmt.Sprintf("checkpoint %d Output", i), incOutput(id, n), res[i].Output)
		mustEqual(t, fmt.Sprintf("outbox ob-%d", i), incOutput(id, n), outbox(ctx, t, s, id, fmt.Sprintf("ob-%d", i)))
	}
	for n := int64(1); n <= concurrency; n++ {
		if seen[n] != 1 {
			t.Errorf("counter value %d produced by %d checkpoints, want 1 (all: %v)", n, seen[n], seen)
		}
	}
	got := get(ctx, t, s, id).State
	if got.Ctx["n"] != int64(concurrency) || got.Version != 7+concurrency {
		t.Fatalf("after %d concurrent checkpoints: ctx.n = %#v, version = %d; want %d and %d", concurrency, got.Ctx["n"], got.Version, concurrency, 7+concurrency)
	}
}

// testCheckpointMeters: a checkpoint without Base meters the read of the
// document and one write per document (state, outbox, each loop plan), as
// Firestore bills them.
func testCheckpointMeters(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	m := meter.New()
	checkpoint(meter.With(ctx, m), t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: increment("n", []engine.LoopPlan{samplePlan()})})
	ops := m.Drain(id)
	if ops[meter.FirestoreRead] != 1 || ops[meter.FirestoreWrite] != 3 {
		t.Fatalf("metered %v; want 1 read and 3 writes (state, outbox, loop plan)", ops)
	}
}

// testCheckpointOptimistic: with a current Base the transition is computed
// once, on Base, and committed without reading the document (no read is
// metered; the writes are); the result and the stored documents are those
// of the transition.
func testCheckpointOptimistic(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	base := get(ctx, t, s, id)
	m := meter.New()
	calls := 0
	inc := increment("n", []engine.LoopPlan{samplePlan()})
	cp := checkpoint(meter.With(ctx, m), t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Base: base, Apply: func(rec *store.Execution) (*engine.Output, error) {
		calls++
		return inc(rec)
	}})
	if calls != 1 {
		t.Errorf("Apply called %d times, want once", calls)
	}
	ops := m.Drain(id)
	if ops[meter.FirestoreRead] != 0 || ops[meter.FirestoreWrite] != 3 {
		t.Errorf("metered %v; want no read and 3 writes (state, outbox, loop plan)", ops)
	}
	want := sampleState(id)
	want.Ctx["n"] = int64(1)
	want.Version++
	if !cp.Applied {
		t.Fatal("Checkpoint.Applied = false, want true")
	}
	mustEqual(t, "Checkpoint.State", want, cp.State)
	wantOut := incOutput(id, 1)
	wantOut.Loops = []engine.LoopPlan{samplePlan()}
	mustEqual(t, "Checkpoint.Output", wantOut, cp.Output)
	mustEqual(t, "stored State", want, get(ctx, t, s, id).State)
	mustEqual(t, "outbox", wantOut, outbox(ctx, t, s, id, "ob"))
	mustEqual(t, "loop plan", samplePlan(), *plan(ctx, t, s, id, samplePlan().Key()))
}

// testCheckpointOptimisticStale: when the document changed after Base was
// read, the transition is computed again on the fresh state: the result,
// the stored state and the outbox reflect it, not Base.
func testCheckpointOptimisticStale(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	base := get(ctx, t, s, id)
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "first", Apply: increment("n", nil)})
	m := meter.New()
	cp := checkpoint(meter.With(ctx, m), t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "second", Base: base, Apply: increment("n", nil)})
	if !cp.Applied {
		t.Fatal("Checkpoint.Applied = false, want true")
	}
	if ops := m.Drain(id); ops[meter.FirestoreRead] < 1 {
		t.Errorf("metered %v; want the fresh read of the document", ops)
	}
	want := sampleState(id)
	want.Ctx["n"] = int64(2)
	want.Version += 2
	mustEqual(t, "Checkpoint.State", want, cp.State)
	mustEqual(t, "Checkpoint.Output", incOutput(id, 2), cp.Output)
	mustEqual(t, "stored State", want, get(ctx, t, s, id).State)
	mustEqual(t, "outbox first", incOutput(id, 1), outbox(ctx, t, s, id, "first"))
	mustEqual(t, "outbox second", incOutput(id, 2), outbox(ctx, t, s, id, "second"))
}

// testCheckpointOptimisticStaleNotApplicable: an event already applied by
// a checkpoint that committed after Base was read does not apply again:
// nothing of the stale attempt (state, outbox, loop plan) is written.
func testCheckpointOptimisticStaleNotApplicable(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	base := get(ctx, t, s, id)
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "first", Apply: applyOnce("E", nil)})
	after := get(ctx, t, s, id)
	stalePlan := samplePlan()
	stalePlan.Step = "stale"
	cp := checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "second", Base: base, Apply: applyOnce("E", []engine.LoopPlan{stalePlan})})
	if cp.Applied || cp.Output != nil {
		t.Fatalf("stale checkpoint of an applied event: applied %v, output %s; want not applied", cp.Applied, dump(cp.Output))
	}
	now := get(ctx, t, s, id)
	mustEqual(t, "stored State", after.State, now.State)
	if !now.UpdateTime.Equal(after.UpdateTime) {
		t.Errorf("UpdateTime changed (%v → %v): the stale checkpoint wrote the document", after.UpdateTime, now.UpdateTime)
	}
	expectNoOutbox(ctx, t, s, id, "second")
	expectNoPlan(ctx, t, s, id, stalePlan.Key())
}

// testCheckpointBaseWithoutUpdateTime: a Base not read from the store (zero
// UpdateTime) is not trusted: the document is read and the transition
// computed on it.
func testCheckpointBaseWithoutUpdateTime(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	st := sampleState(id)
	st.Ctx["n"] = int64(5)
	create(ctx, t, s, st)
	base := &store.Execution{State: sampleState(id), Source: "name: " + id + "\n"} // n absent: stale
	cp := checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Base: base, Apply: increment("n", nil)})
	if got := get(ctx, t, s, id).State.Ctx["n"]; got != int64(6) || cp.State.Ctx["n"] != int64(6) {
		t.Fatalf("ctx.n stored %#v, returned %#v; want 6 (computed on the stored state)", got, cp.State.Ctx["n"])
	}
	mustEqual(t, "outbox", incOutput(id, 6), outbox(ctx, t, s, id, "ob"))
}

// testCheckpointUpdateTime: an applied checkpoint returns the update time
// it wrote (what ExecutionGet then reads), and a Base of its State with
// it is current: the next checkpoint on it reads nothing and is computed
// on it. Once the document changed again, the same Base is stale: read.
func testCheckpointUpdateTime(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	cp := checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob1", Apply: increment("n", nil)})
	stored := get(ctx, t, s, id)
	if cp.UpdateTime.IsZero() || !cp.UpdateTime.Equal(stored.UpdateTime) {
		t.Fatalf("Checkpoint.UpdateTime %v, the document's %v", cp.UpdateTime, stored.UpdateTime)
	}
	next := &store.Execution{State: cp.State, Source: stored.Source, UpdateTime: cp.UpdateTime}
	next.State.Ctx["marker"] = "base" // only the Base has it: found stored only if computed on it
	m := meter.New()
	cp2 := checkpoint(meter.With(ctx, m), t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob2", Base: next, Apply: increment("n", nil)})
	if ops := m.Drain(id); ops[meter.FirestoreRead] != 0 {
		t.Errorf("metered %v on the returned update time; want no read", ops)
	}
	after := get(ctx, t, s, id)
	if after.State.Ctx["n"] != int64(2) || after.State.Ctx["marker"] != "base" {
		t.Fatalf("stored ctx %v; want n 2 computed on the Base (marker)", after.State.Ctx)
	}
	if !cp2.UpdateTime.Equal(after.UpdateTime) || cp2.UpdateTime.Equal(cp.UpdateTime) {
		t.Fatalf("second Checkpoint.UpdateTime %v, the document's %v, the first %v", cp2.UpdateTime, after.UpdateTime, cp.UpdateTime)
	}
	stale := &store.Execution{State: sampleState(id), Source: stored.Source, UpdateTime: cp.UpdateTime}
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob3", Base: stale, Apply: increment("n", nil)})
	if got := get(ctx, t, s, id).State.Ctx["n"]; got != int64(3) {
		t.Fatalf("ctx.n %#v after a checkpoint on a stale update time; want 3 (computed on the stored state)", got)
	}
}

func testOutboxGet(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Version++
		return outboxSample(id), nil
	}})
	o := outbox(ctx, t, s, id, "ob")
	mustEqual(t, "outbox", outboxSample(id), o)
	// A second read does not share mutable values with the first.
	o.Commands[0].Args["page"] = int64(100)
	maps.Copy(o.Events[0].Payload, map[string]any{"total": int64(100)}) // mutates the read copy in place
	mustEqual(t, "outbox (second read)", outboxSample(id), outbox(ctx, t, s, id, "ob"))
}

func testOutboxGetNotFound(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	expectNoOutbox(ctx, t, s, id, "ob")
	create(ctx, t, s, sampleState(id))
	expectNoOutbox(ctx, t, s, id, "ob")
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob", Apply: increment("n", nil)})
	expectNoOutbox(ctx, t, s, id, "other")
}

// testOutboxPerExecution: the same outbox id in two executions names two
// documents.
func testOutboxPerExecution(ctx context.Context, t *testing.T, s store.Store) {
	a, b := uniqueID(t), uniqueID(t)
	create(ctx, t, s, sampleState(a))
	create(ctx, t, s, sampleState(b))
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: a, OutboxID: "ob", Apply: increment("n", nil)})
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: b, OutboxID: "ob", Apply: increment("n", nil)})
	mustEqual(t, "outbox of a", incOutput(a, 1), outbox(ctx, t, s, a, "ob"))
	mustEqual(t, "outbox of b", incOutput(b, 1), outbox(ctx, t, s, b, "ob"))
}
