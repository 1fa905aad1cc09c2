package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
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
