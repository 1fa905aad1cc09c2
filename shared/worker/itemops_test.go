package worker

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// callStore counts the store calls a loop item makes.
type callStore struct {
	store.Store
	mu sync.Mutex
	n  map[string]int
	// groupBytes is the JSON size of each group record document committed.
	groupBytes []int
}

func (s *callStore) count(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[name]++
}

func (s *callStore) calls(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[name]
}

func (s *callStore) LoopGet(ctx context.Context, executionID, key string) (*engine.LoopPlan, error) {
	s.count("LoopGet")
	return s.Store.LoopGet(ctx, executionID, key)
}

func (s *callStore) IterationBegin(ctx context.Context, p store.IterationBeginParams) (*engine.IterationRecord, error) {
	s.count("IterationBegin")
	return s.Store.IterationBegin(ctx, p)
}

func (s *callStore) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error {
	s.count("LeaseAcquire")
	return s.Store.LeaseAcquire(ctx, p)
}

func (s *callStore) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	s.count("CompleteUnit")
	if it := p.Iteration; it != nil && len(it.Group) > 0 {
		size := 0
		for _, r := range it.GroupRecords() {
			b, _ := json.Marshal(r)
			size += len(b)
		}
		s.mu.Lock()
		s.groupBytes = append(s.groupBytes, size)
		s.mu.Unlock()
	}
	return s.Store.CompleteUnit(ctx, p)
}

func (s *callStore) IterationList(ctx context.Context, executionID, loopKey string) ([]engine.IterationRecord, error) {
	s.count("IterationList")
	return s.Store.IterationList(ctx, executionID, loopKey)
}

// itemLoop runs a parallel noop loop over items (its step "each",
// max_in_flight 4, loop.spec extra), every delivery on one worker under a
// meter, after batched fan-out's setting budget (0: one task per item).
// It returns the store calls, the metered operations (with those the bus
// drained into the batches it published) and the deliveries run.
func itemLoop(t *testing.T, items int, extra string, budget time.Duration) (*controltest.Env, *callStore, map[string]float64, int) {
	t.Helper()
	return itemLoopOf(t, items, extra, "{kind: noop}", budget)
}

// itemLoopOf is itemLoop with the step's tool.
func itemLoopOf(t *testing.T, items int, extra, tool string, budget time.Duration) (*controltest.Env, *callStore, map[string]float64, int) {
	t.Helper()
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: items}
workflow:
  - step: each
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, max_in_flight: 4` + extra + `}
    tool: ` + tool + `
`
	env := controltest.NewEnv()
	cs := &callStore{Store: env.Memory}
	env.Control = &control.Control{Store: cs, Bus: env.Bus, Tasks: env.Tasks, Now: env.Clock.Now, Source: "execute", Log: env.Log}
	w := newWorker(env, nil, nil)
	if budget > 0 {
		w.ContinueUnits, w.ContinueBudget = 16, budget
	}
	var list []any
	for i := range items {
		list = append(list, int64(i))
	}
	start(t, env, "ex1", src, map[string]any{"items": list})
	m := meter.New()
	ctx := meter.With(context.Background(), m)
	before := len(env.Bus.Batches())
	ran := 0
	for range 10 * items {
		cmd, ok := env.Tasks.Take(isUnit)
		if !ok {
			break
		}
		env.Clock.Set(cmd.NotBefore)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatalf("delivery of %s: %v", cmd.UnitKey(), err)
		}
		ran++
	}
	wantOK(t, env)
	// The bus drains the meter's counts into the batches it publishes.
	return env, cs, opsSince(env, m, before), ran
}

// TestNoopLoopItemStoreOps pins what a side-effect-free loop item costs the
// store (docs/benchmarks.md "A loop item's Firestore operations"): no
// lease record (no IterationBegin, no LeaseAcquire), one CompleteUnit (its
// record: one document write) and the loop plan read once per instance
// (the plan cache). Writes are counted on the in-memory driver's meter,
// which counts what Firestore would bill.
func TestNoopLoopItemStoreOps(t *testing.T) {
	const items, lanes = 40, 4
	_, cs, ops, ran := itemLoop(t, items, "", 0)
	if ran != items {
		t.Fatalf("%d units ran, want the %d items", ran, items)
	}
	for name, want := range map[string]int{"IterationBegin": 0, "LeaseAcquire": 0, "CompleteUnit": items} {
		if got := cs.calls(name); got != want {
			t.Errorf("%s called %d times for %d noop items, want %d", name, got, items, want)
		}
	}
	if got := cs.calls("LoopGet"); got > 1 {
		t.Errorf("LoopGet called %d times, want at most once (the plan cache)", got)
	}
	// One record per item; per lane its marker; the loop's end (claim,
	// checkpoint with its outbox): a few.
	if w := ops[meter.FirestoreWrite]; w < items || w > items+lanes+4 {
		t.Errorf("%v Firestore writes for %d items in %d lanes, want %d to %d", w, items, lanes, items, items+lanes+4)
	}
	t.Logf("%d noop items: %v Firestore writes, %v reads", items, ops[meter.FirestoreWrite], ops[meter.FirestoreRead])
}

// TestBatchedLoopItemGroupsEnds: in a batched loop (chunk_size 10, the
// invocation's budget running each batch inline) an unleased batch's
// iteration ends commit together (control batch.go): one CompleteUnit
// per batch, whose group record document is one write for its ten
// records — at most 0.3 Firestore writes per item (README "Architecture",
// the loop item's write target), against one per item ungrouped
// (TestNoopLoopItemStoreOps). Every item still has its record and its
// loop.iteration.done.
func TestBatchedLoopItemGroupsEnds(t *testing.T) {
	const items, lanes, chunk = 80, 4, 10
	env, cs, ops, ran := itemLoop(t, items, ", chunk_size: 10", time.Minute)
	batches := items / chunk
	if ran != batches {
		t.Fatalf("%d deliveries ran, want the %d batches", ran, batches)
	}
	if got := cs.calls("CompleteUnit"); got != batches {
		t.Errorf("CompleteUnit called %d times for %d batches of %d items, want one per batch", got, batches, chunk)
	}
	recs, err := env.Memory.IterationList(context.Background(), "ex1", engine.LoopKey("each", 1))
	if err != nil || len(recs) != items {
		t.Fatalf("IterationList: %d records, %v; want %d", len(recs), err, items)
	}
	wantEachOnce(t, env, items, types.EvLoopIterationDone)
	if w := ops[meter.FirestoreWrite]; w > 0.3*items {
		t.Errorf("%v Firestore writes for %d items in %d lanes, want at most %v (0.3 per item)", w, items, lanes, 0.3*items)
	}
	t.Logf("%d noop items in batches of %d: %v Firestore writes, %v reads", items, chunk, ops[meter.FirestoreWrite], ops[meter.FirestoreRead])
}

// TestBatchedLoopGroupBounded: a batched loop whose items return large
// results still groups their ends, but no group record document exceeds
// control.MaxGroupBytes of records (the worker sums the deferred records'
// sizes as it goes): 40 items of 20 KiB each in batches of 20 commit in
// groups of three at most, each item recorded once.
func TestBatchedLoopGroupBounded(t *testing.T) {
	const items = 40
	big := strings.Repeat("x", 20<<10)
	env, cs, _, _ := itemLoopOf(t, items, ", chunk_size: 20", "{kind: noop, result: "+big+"}", time.Minute)
	if len(cs.groupBytes) == 0 {
		t.Fatal("no group record document was committed")
	}
	for _, n := range cs.groupBytes {
		if n > control.MaxGroupBytes {
			t.Errorf("a group record document of %d bytes of records, over %d", n, control.MaxGroupBytes)
		}
	}
	if got := cs.calls("CompleteUnit"); got < items/3 {
		t.Errorf("CompleteUnit called %d times for %d items of 20 KiB, want at least %d (groups of at most three)", got, items, items/3)
	}
	recs, err := env.Memory.IterationList(context.Background(), "ex1", engine.LoopKey("each", 1))
	if err != nil || len(recs) != items {
		t.Fatalf("IterationList: %d records, %v; want %d", len(recs), err, items)
	}
	wantEachOnce(t, env, items, types.EvLoopIterationDone)
}

func (s *callStore) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	s.count("ExecutionCheckpoint")
	return s.Store.ExecutionCheckpoint(ctx, p)
}
