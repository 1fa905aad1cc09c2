package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

const recordPipeline = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: recordpipeline, path: tests/recordpipeline}
workflow:
  - step: s1
    tool:
      - first: {kind: python, code: "result = 1"}
      - last: {kind: python, code: "result = 2"}
`

// recorded reports whether ex1's unit s1.1 has a durable record of its
// task at index idx, attempt 1.
func recorded(t *testing.T, env *controltest.Env, idx string) bool {
	t.Helper()
	_, err := env.Memory.AttemptGet(context.Background(), "ex1", "s1.1", idx+".1.0")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestTheEndCarriesTheLastRecord: a side-effecting attempt that ends its
// unit is not recorded apart (its unit's end commits its outcome: one
// write fewer per side-effecting step); one the unit goes on from is
// recorded before the next task runs.
func TestTheEndCarriesTheLastRecord(t *testing.T) {
	var env *controltest.Env
	firstRecorded := false
	py := &fakeTool{}
	py.run = func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if req.Task == "last" {
			firstRecorded = recorded(t, env, "0")
		}
		return ok(req, n)
	}
	env, w := setup(t, py, recordPipeline, nil)
	drain(t, env, w)
	wantOK(t, env)
	if !firstRecorded {
		t.Fatal("the first task's record was not durable when the second task ran")
	}
	if recorded(t, env, "1") {
		t.Fatal("the last task's outcome was recorded apart from the unit's end")
	}
	if n := py.calls(""); n != 2 {
		t.Fatalf("%d tool calls, want 2", n)
	}
}

// TestAFailedEndWritesTheRecord: when the end of a unit whose last
// attempt's record rode with it does not commit, the record is written
// before the delivery fails, and the retry adopts the outcome instead of
// running the task again (the side-effect barrier holds).
func TestAFailedEndWritesTheRecord(t *testing.T) {
	py := &fakeTool{}
	env, w := setup(t, py, recordPipeline, nil)
	var fails atomic.Int32
	env.Control.Store = &controltest.FlakyStore{Store: env.Memory, Fail: func(op, id string) error {
		if op == "CompleteUnit" && fails.Add(1) == 1 {
			return errDown
		}
		return nil
	}}
	cmd := take(t, env)
	if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); !errors.Is(err, errDown) {
		t.Fatalf("first delivery: %v, want the failed end", err)
	}
	if !recorded(t, env, "1") {
		t.Fatal("the failed end left the last task's outcome unrecorded")
	}
	if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName(), RetryCount: 1}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	drain(t, env, w)
	wantOK(t, env)
	if n := py.calls("last"); n != 1 {
		t.Fatalf("the last task ran %d times, want once (the retry adopts its record)", n)
	}
	if !adopted(env) {
		t.Fatal("no attempt adopted the recorded outcome")
	}
}

// TestAContinuedEndKnowsItsLease: in a chain of side-effecting steps run
// in one invocation, each continued unit's end passes the version of the
// lease the commit that released it took, so its lease is checked by the
// end's commit without a read of its own: the whole chain reads the
// lease once (the first unit's, taken by a LeaseAcquire). Each continued
// unit's watchdog is armed all the same.
func TestAContinuedEndKnowsItsLease(t *testing.T) {
	env, w := setup(t, nil, pychain3, nil)
	w.ContinueUnits, w.ContinueBudget = 8, time.Minute
	// reads runs the chain on env and w and returns the Firestore reads
	// it metered (the unit's own and those its batches carry).
	reads := func(env *controltest.Env, w *Worker) float64 {
		t.Helper()
		m := meter.New()
		cmd := take(t, env)
		before := len(env.Bus.Batches())
		if err := w.Run(meter.With(context.Background(), m), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		wantOK(t, env)
		return opsSince(env, m, before)[meter.FirestoreRead]
	}
	withVersion := reads(env, w)
	env2, w2 := setup(t, nil, pychain3, nil)
	w2.ContinueUnits, w2.ContinueBudget = 8, time.Minute
	env2.Control.Store = versionless{env2.Memory}
	without := reads(env2, w2)
	if without-withVersion != 2 {
		t.Fatalf("the chain read %v documents with the lease versions, %v without; want 2 fewer (s2's and s3's lease)", withVersion, without)
	}
	if n := len(pending(env, isLeaseCheck)); n != 3 {
		t.Fatalf("%d watchdogs armed, want 3 (one per unit, the continued ones while they ran)", n)
	}
}

// versionless is a store whose ends never know their lease's version.
type versionless struct{ store.Store }

func (v versionless) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	p.LeaseVersion = ""
	return v.Store.CompleteUnit(ctx, p)
}
