package worker

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/tools"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// TestStepEndWithLostLeaseCommitsNothing: a side-effecting step unit
// whose lease another delivery took over while its task ran ends with
// one store call that checks the lease: nothing is committed (the holder
// ends the step run), its events still reach the log, and the delivery
// is told to retry later. (Before CompleteUnit the end was committed
// whoever held the lease, and the lease released afterwards.)
func TestStepEndWithLostLeaseCommitsNothing(t *testing.T) {
	ctx := context.Background()
	g := newGate()
	py := gated(g)
	env, w := setup(t, py, single, nil)
	cmd := take(t, env)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), Holder: "first"}) }()
	g.waitEntered(t)
	// The lease expires and a reclaim takes it over.
	if err := env.Memory.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: "ex1", Unit: cmd.UnitKey(), Holder: "second",
		TTL: w.ttl(), Now: env.Clock.Now().Add(w.ttl() + 1)}); err != nil {
		t.Fatal(err)
	}
	g.release()
	err := <-done
	if !errors.Is(err, store.ErrLeaseLost) || !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("delivery that lost its lease: %v, want ErrLeaseLost", err)
	}
	if st := status(t, env, "ex1"); st.Steps["start"].Status != types.StatusRunning {
		t.Fatalf("step %s after an end without the lease, want still running (its holder ends it)", st.Steps["start"].Status)
	}
	if holder, _, err := env.Memory.LeaseGet(ctx, "ex1", cmd.UnitKey()); err != nil || holder != "second" {
		t.Fatalf("lease %q, %v; want kept by its new holder", holder, err)
	}
	if n := len(env.Bus.EventsOf("ex1", types.EvStepDone)); n != 1 {
		t.Fatalf("%d step.done events in the log, want the losing run's one", n)
	}
}

// TestStepEndReleasesLeaseInItsCommit: a side-effecting step unit's end
// commits the transition and drops its lease in the same store call.
func TestStepEndReleasesLeaseInItsCommit(t *testing.T) {
	ctx := context.Background()
	py := &fakeTool{}
	env, w := setup(t, py, single, nil)
	cmd := take(t, env)
	if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
		t.Fatal(err)
	}
	if st := status(t, env, "ex1"); st.Steps["start"].Status != types.StatusOK {
		t.Fatalf("step %s, want ok", st.Steps["start"].Status)
	}
	if _, _, err := env.Memory.LeaseGet(ctx, "ex1", cmd.UnitKey()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LeaseGet after the end: %v, want ErrNotFound (released)", err)
	}
}

// callCounter counts the store calls a unit's end used to make one by one.
type callCounter struct {
	store.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *callCounter) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	c.count("CompleteUnit")
	return c.Store.CompleteUnit(ctx, p)
}

func (c *callCounter) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	c.count("ExecutionCheckpoint")
	return c.Store.ExecutionCheckpoint(ctx, p)
}

func (c *callCounter) IterationEnd(ctx context.Context, p store.IterationEndParams) (bool, error) {
	c.count("IterationEnd")
	return c.Store.IterationEnd(ctx, p)
}

func (c *callCounter) IterationGet(ctx context.Context, id, key string, i int) (types.Status, string, time.Time, error) {
	c.count("IterationGet")
	return c.Store.IterationGet(ctx, id, key, i)
}

func (c *callCounter) LaneDone(ctx context.Context, id, key string, lane int) error {
	c.count("LaneDone")
	return c.Store.LaneDone(ctx, id, key, lane)
}

func (c *callCounter) LaneCount(ctx context.Context, id, key string) (int, error) {
	c.count("LaneCount")
	return c.Store.LaneCount(ctx, id, key)
}

func (c *callCounter) LoopDoneCreate(ctx context.Context, id, key, owner string) (string, error) {
	c.count("LoopDoneCreate")
	return c.Store.LoopDoneCreate(ctx, id, key, owner)
}

func (c *callCounter) IterationList(ctx context.Context, id, key string) ([]engine.IterationRecord, error) {
	c.count("IterationList")
	return c.Store.IterationList(ctx, id, key)
}

func (c *callCounter) IterationRelease(ctx context.Context, id, key string, i int, holder string) error {
	c.count("IterationRelease")
	return c.Store.IterationRelease(ctx, id, key, i, holder)
}

func (c *callCounter) LeaseRelease(ctx context.Context, id, unit, holder string) error {
	c.count("LeaseRelease")
	return c.Store.LeaseRelease(ctx, id, unit, holder)
}

// TestUnitEndIsOneStoreCall: every unit of a loop step — its iterations,
// including each lane's last and the one that completes the loop — ends
// with one store call (CompleteUnit), none of the separate record, lane,
// claim, list, checkpoint and release calls it once took.
func TestUnitEndIsOneStoreCall(t *testing.T) {
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: int64(num(req.Args["v"]) * 2)}
	}}
	env, w := setup(t, py, sideEffectLoop, map[string]any{"items": []any{int64(1), int64(2), int64(3), int64(4), int64(5)}})
	cc := &callCounter{Store: env.Memory, calls: map[string]int{}}
	env.Control.Store, w.Store = cc, cc
	drain(t, env, w)
	wantOK(t, env)
	want := map[string]int{"CompleteUnit": 5}
	if !reflect.DeepEqual(cc.calls, want) {
		t.Fatalf("store calls ending 5 iterations: %v, want %v", cc.calls, want)
	}
}
