package worker

import (
	"context"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// TestCancelStopsABatch: an execution canceled while its loop runs a
// batch inline stops the batch at its next item: the items after the
// one that ran when the cancel came never start, nothing is enqueued
// for them, and every item that started ends in the log.
func TestCancelStopsABatch(t *testing.T) {
	var env *controltest.Env
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if n == 5 {
			if _, err := env.Control.Cancel(ctx, req.ExecutionID, "enough", "api"); err != nil {
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
			}
			// Units look at a state at most 250 ms old.
			env.Clock.Advance(300 * time.Millisecond)
		}
		return ok(req, n)
	}}
	env = controltest.NewEnv()
	w := newWorker(env, py, nil)
	start(t, env, "ex1", batchLoop("max_in_flight: 1, chunk_size: 20", "", `{kind: python, code: "x()"}`), batchItems(20))
	w.ContinueUnits, w.ContinueBudget = 16, time.Minute
	drain(t, env, w)
	if st := status(t, env, "ex1"); st.Status != engine.ExecCanceled {
		t.Fatalf("execution %s, want canceled", st.Status)
	}
	if n := py.calls(""); n != 5 {
		t.Fatalf("the batch ran %d items after the cancel at its 5th, want 5", n)
	}
	if n := iterationTasks(env); n != 1 {
		t.Fatalf("%d iteration tasks created, want the batch's 1", n)
	}
	started := map[int]bool{}
	for _, e := range eventsOf(env, "ex1", types.EvLoopIterationStarted) {
		started[*e.Iteration] = true
	}
	if len(started) > 5 {
		t.Fatalf("%d iterations started, want at most 5", len(started))
	}
	ended := map[int]int{}
	for _, typ := range []types.EventType{types.EvLoopIterationDone, types.EvLoopIterationFailed, types.EvLoopIterationCanceled} {
		for _, e := range eventsOf(env, "ex1", typ) {
			ended[*e.Iteration]++
		}
	}
	for i := range started {
		if ended[i] != 1 {
			t.Fatalf("iteration %d started and has %d ends, want 1", i, ended[i])
		}
	}
}
