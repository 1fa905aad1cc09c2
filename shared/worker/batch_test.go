package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// batchLoop is a loop over workload.items with the given spec and tool.
func batchLoop(spec, policy, tool string) string {
	return fmt.Sprintf(`
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: batch, path: tests/batch}
workflow:
  - step: each
%s    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, %s}
    tool: %s
`, policy, spec, tool)
}

func batchItems(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprint("i", i)
	}
	return map[string]any{"items": items}
}

// iterationTasks counts the Cloud Tasks created for the loop's iterations.
func iterationTasks(env *controltest.Env) int {
	n := 0
	for _, c := range env.Tasks.Created() {
		if c.Kind == types.CmdRunStep && c.Iteration != nil {
			n++
		}
	}
	return n
}

// wantEachOnce checks that each of the loop's n iterations has its record
// and its started and ended events exactly once, and the loop its
// loop.done (or step.failed) once.
func wantEachOnce(t *testing.T, env *controltest.Env, n int, ended types.EventType) {
	t.Helper()
	recs, err := env.Memory.IterationList(context.Background(), "ex1", engine.LoopKey("each", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d iteration records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r.Index != i {
			t.Fatalf("record %d has index %d", i, r.Index)
		}
	}
	for _, typ := range []types.EventType{types.EvLoopIterationStarted, ended} {
		seen := map[int]int{}
		for _, e := range eventsOf(env, "ex1", typ) {
			seen[*e.Iteration]++
		}
		for i := range n {
			if seen[i] != 1 {
				t.Fatalf("iteration %d has %d %s events, want 1", i, seen[i], typ)
			}
		}
	}
	if got := len(eventsOf(env, "ex1", types.EvLoopDone)); got != 1 {
		t.Fatalf("%d loop.done events, want 1", got)
	}
	checkCausal(t, env, "ex1")
}

// TestBatchedFanOut: a loop's lanes run their iterations in batches of
// loop.spec.chunk_size (batch): one Cloud Task per batch, the batch's
// other iterations inline in its delivery, each with its own record and
// events, exactly once.
func TestBatchedFanOut(t *testing.T) {
	for _, c := range []struct {
		name      string
		n         int
		spec      string
		budget    time.Duration
		wantTasks int
	}{
		{"1,000 noop items in batches of 50", 1000, "max_in_flight: 4, chunk_size: 50", time.Minute, 1000 / 50},
		{"the alias batch", 100, "max_in_flight: 3, batch: 10", time.Minute, 3 * 4}, // lanes of 34/33/33: 4 batches each
		{"automatic: noop batches of 50", 1000, "max_in_flight: 4", time.Minute, 1000 / 50},
		{"chunk_size 1 is one task per item", 40, "max_in_flight: 4, chunk_size: 1", time.Minute, 40},
		{"no budget: one task per item", 40, "max_in_flight: 4, chunk_size: 10", 0, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, w := setup(t, nil, batchLoop(c.spec, "", "{kind: noop}"), batchItems(c.n))
			w.ContinueUnits, w.ContinueBudget = 16, c.budget
			drain(t, env, w)
			wantOK(t, env)
			if got := iterationTasks(env); got != c.wantTasks {
				t.Fatalf("%d iteration tasks created, want %d", got, c.wantTasks)
			}
			wantEachOnce(t, env, c.n, types.EvLoopIterationDone)
		})
	}
	t.Run("a spent budget enqueues the next item, which runs to the end of its batch", func(t *testing.T) {
		env, w := setup(t, nil, batchLoop("max_in_flight: 1, chunk_size: 10", "", "{kind: noop}"), batchItems(20))
		w.ContinueUnits, w.ContinueBudget = 16, 5*time.Second
		now := controltest.T0
		w.Now = func() time.Time { now = now.Add(100 * time.Millisecond); return now }
		drain(t, env, w)
		wantOK(t, env)
		if got := iterationTasks(env); got <= 2 || got >= 20 {
			t.Fatalf("%d iteration tasks, want more than the 2 batches (the budget ran out) and fewer than one per item", got)
		}
		wantEachOnce(t, env, 20, types.EvLoopIterationDone)
	})
}

// faultOnHit makes the hit-th reach of fault point answer action (for the
// test's duration) and returns the count of its reaches.
func faultOnHit(t *testing.T, point string, hit int, action string) *int {
	hits := new(int)
	t.Cleanup(faults.SetScript(func(p, _, _ string) string {
		if p == point {
			if *hits++; *hits == hit {
				return action
			}
		}
		return ""
	}))
	return hits
}

// TestBatchCrashRecovered: a crash (or an error) in the middle of a batch
// is recovered by the redelivery of the batch's own Cloud Task, which
// skips the iterations that ended and goes on: no iteration is lost or
// run twice and loop.done happens once, with no other task created. The
// batch's ends are grouped (control batch.go): its fifth iteration's
// start finds four ends deferred, not committed (the redelivery runs
// them again); the first commit after an end is the whole batch's group
// (the redelivery finds all ten ended in it).
func TestBatchCrashRecovered(t *testing.T) {
	ctx := context.Background()
	for _, at := range []struct {
		point string
		hit   int
	}{{faults.ExecuteStart, 5}, {faults.ExecuteAfterIterationEnd, 1}} {
		point := at.point
		for _, action := range []string{"crash", "error"} {
			t.Run(point+" "+action, func(t *testing.T) {
				env, w := setup(t, nil, batchLoop("max_in_flight: 2, chunk_size: 10", "", "{kind: noop}"), batchItems(40))
				w.ContinueUnits, w.ContinueBudget = 16, time.Minute
				hits := faultOnHit(t, point, at.hit, action)
				cmd := take(t, env)
				func() {
					defer func() {
						if r := recover(); r != nil {
							if _, ok := r.(faults.Crashed); !ok {
								panic(r)
							}
						}
					}()
					if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err == nil {
						t.Fatal("the batch's delivery answered although an iteration failed in it")
					}
				}()
				if *hits < at.hit {
					t.Fatalf("fault point %s reached %d times, want %d", point, *hits, at.hit)
				}
				again := w
				if action == "crash" {
					again = otherInstance(env, w) // the crashed instance is gone
					again.ContinueUnits, again.ContinueBudget = 16, time.Minute
				}
				// The batch's task was not answered: Cloud Tasks delivers it again.
				if err := again.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), RetryCount: 1}); err != nil {
					t.Fatal(err)
				}
				recs, _ := env.Memory.IterationList(ctx, "ex1", engine.LoopKey("each", 1))
				if len(recs) != 10 {
					t.Fatalf("%d iterations ended after the redelivery, want the batch's 10", len(recs))
				}
				drain(t, env, again)
				wantOK(t, env)
				if got := iterationTasks(env); got != 4 {
					t.Fatalf("%d iteration tasks created, want 4 (2 lanes of 2 batches)", got)
				}
				wantEachOnce(t, env, 40, types.EvLoopIterationDone)
			})
		}
	}
}

// TestBatchFailureModes: an iteration that fails inside a batch fails the
// step under fail_fast (no later iteration of the batch runs) and, under
// best_effort, is recorded as failed while the batch goes on.
func TestBatchFailureModes(t *testing.T) {
	failing := func() *fakeTool {
		return &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
			if req.Args["v"] == "i6" {
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "python", Message: "no"}}
			}
			return ok(req, n)
		}}
	}
	tool := `{kind: python, code: "f()", input: {v: "{{ item }}"}}`
	t.Run("fail_fast", func(t *testing.T) {
		py := failing()
		env, w := setup(t, py, batchLoop("max_in_flight: 1, chunk_size: 10", "", tool), batchItems(20))
		w.ContinueUnits, w.ContinueBudget = 16, time.Minute
		drain(t, env, w)
		if st := status(t, env, "ex1"); st.Status != engine.ExecFailed {
			t.Fatalf("execution %s, want failed", st.Status)
		}
		if got := py.calls(""); got != 7 {
			t.Fatalf("%d items ran, want 7 (the batch stops at the failed one)", got)
		}
		if got := iterationTasks(env); got != 1 {
			t.Fatalf("%d iteration tasks, want 1", got)
		}
	})
	t.Run("best_effort", func(t *testing.T) {
		py := failing()
		env, w := setup(t, py, batchLoop("max_in_flight: 1, chunk_size: 10", "    spec: {policy: {failure: {mode: best_effort}}}\n", tool), batchItems(20))
		w.ContinueUnits, w.ContinueBudget = 16, time.Minute
		drain(t, env, w)
		wantOK(t, env)
		if got := py.calls(""); got != 20 {
			t.Fatalf("%d items ran, want 20", got)
		}
		if got := iterationTasks(env); got != 2 {
			t.Fatalf("%d iteration tasks, want 2", got)
		}
		recs, _ := env.Memory.IterationList(context.Background(), "ex1", engine.LoopKey("each", 1))
		if len(recs) != 20 || recs[6].Status != types.StatusError || recs[7].Status != types.StatusOK {
			t.Fatalf("records %+v, want 20 with the 7th failed", recs)
		}
		if got := len(eventsOf(env, "ex1", types.EvLoopIterationFailed)); got != 1 {
			t.Fatalf("%d loop.iteration.failed events, want 1", got)
		}
	})
}

// TestBatchLastAttempt: on the batch delivery's last attempt an inline
// iteration that fails with an error becomes a Cloud Task of its own (with
// its own attempts and DLQ) instead of failing the delivery, which nothing
// would retry.
func TestBatchLastAttempt(t *testing.T) {
	ctx := context.Background()
	env, w := setup(t, nil, batchLoop("max_in_flight: 1, chunk_size: 10", "", "{kind: noop}"), batchItems(10))
	w.ContinueUnits, w.ContinueBudget = 16, time.Minute
	faultOnHit(t, faults.ExecuteAfterIterationEnd, 5, "error")
	cmd := take(t, env)
	if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), RetryCount: 4, MaxAttempts: 5}); err != nil {
		t.Fatalf("the batch's last attempt failed: %v", err)
	}
	next := pending(env, isUnit)
	if len(next) != 1 || next[0].Iteration == nil || *next[0].Iteration != 4 {
		t.Fatalf("pending units %+v, want iteration 4's own task", next)
	}
	drain(t, env, w)
	wantOK(t, env)
	wantEachOnce(t, env, 10, types.EvLoopIterationDone)
}

// TestBatchStopCommitsGroupedEnds: a first delivery that is also its
// batch's last attempt runs its items without a lease, so their ends are
// grouped; when its fifth item fails at its start, that item becomes a
// task of its own and the four deferred ends before it are committed
// before the delivery answers (control.CommitGroup) — never lost with
// the delivery nothing retries.
func TestBatchStopCommitsGroupedEnds(t *testing.T) {
	ctx := context.Background()
	env, w := setup(t, nil, batchLoop("max_in_flight: 1, chunk_size: 10", "", "{kind: noop}"), batchItems(10))
	w.ContinueUnits, w.ContinueBudget = 16, time.Minute
	faultOnHit(t, faults.ExecuteStart, 5, "error")
	cmd := take(t, env)
	if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), MaxAttempts: 1}); err != nil {
		t.Fatalf("the batch's only attempt failed: %v", err)
	}
	recs, err := env.Memory.IterationList(ctx, "ex1", engine.LoopKey("each", 1))
	if err != nil || len(recs) != 4 || recs[3].Index != 3 {
		t.Fatalf("records after the delivery: %+v, %v; want iterations 0 to 3 (the deferred ends, committed)", recs, err)
	}
	next := pending(env, isUnit)
	if len(next) != 1 || next[0].Iteration == nil || *next[0].Iteration != 4 {
		t.Fatalf("pending units %+v, want iteration 4's own task", next)
	}
	drain(t, env, w)
	wantOK(t, env)
	wantEachOnce(t, env, 10, types.EvLoopIterationDone)
}

// TestBatchDeferredRetry: an iteration whose retry is deferred hands
// itself to a delayed Cloud Task; that task's delivery runs the rest of the
// batch (no other task is created), and every item ends once.
func TestBatchDeferredRetry(t *testing.T) {
	failed := false
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if req.Args["v"] == "i3" && !failed {
			failed = true
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "python", Message: "later"}}
		}
		return ok(req, n)
	}}
	tool := `
      kind: python
      code: "f()"
      input: {v: "{{ item }}"}
      spec:
        policy:
          rules:
            - when: "{{ outcome.status == 'error' }}"
              then: {do: retry, attempts: 3, backoff: fixed, delay: 60}
            - else:
                then: {do: continue}`
	env, w := setup(t, py, batchLoop("max_in_flight: 1, chunk_size: 10", "", tool), batchItems(10))
	w.ContinueUnits, w.ContinueBudget = 16, time.Minute
	cmd := take(t, env)
	deliver(t, w, cmd)
	next := pending(env, isUnit)
	if len(next) != 1 || next[0].Iteration == nil || *next[0].Iteration != 3 || !next[0].NotBefore.After(controltest.T0) {
		t.Fatalf("pending units %+v, want iteration 3's delayed retry", next)
	}
	drain(t, env, w)
	wantOK(t, env)
	if got := iterationTasks(env); got != 2 {
		t.Fatalf("%d iteration tasks, want 2 (the batch's and the delayed retry's)", got)
	}
	if got := py.calls(""); got != 11 {
		t.Fatalf("%d tool runs, want 11", got)
	}
	wantEachOnce(t, env, 10, types.EvLoopIterationDone)
}

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

// TestBatchLateLastAttemptOfAGroupedEnd: a late duplicate delivery of an
// iteration whose end was committed in its batch's group record, failing
// on its queue's last attempt while the loop still runs, finds the
// iteration ended: nothing is filed in the DLQ and nothing parked (soak
// seed 24257 filed one, and the operator's discard failed the execution).
func TestBatchLateLastAttemptOfAGroupedEnd(t *testing.T) {
	ctx := context.Background()
	env, w := setup(t, nil, batchLoop("max_in_flight: 1, chunk_size: 10", "", "{kind: noop}"), batchItems(20))
	w.ContinueUnits, w.ContinueBudget = 16, time.Minute
	first := take(t, env)
	deliver(t, w, first) // items 0-9; the second batch's task is pending
	if n := len(pending(env, isUnit)); n != 1 {
		t.Fatalf("%d units pending after the first batch, want its successor's", n)
	}
	faultOnHit(t, faults.ExecuteStart, 1, "error")
	// Another instance: this one remembers the task as ended here.
	if err := otherInstance(env, w).Run(ctx, first, Delivery{TaskName: first.TaskName(), RetryCount: 4, MaxAttempts: 5}); err != nil {
		t.Fatalf("the late last attempt: %v, want it answered (nothing to file)", err)
	}
	entries, err := env.Memory.DLQList(ctx, store.DLQPending, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("DLQ entries %+v, want none (the iteration ended in its batch's group)", entries)
	}
	drain(t, env, w)
	wantOK(t, env)
	wantEachOnce(t, env, 20, types.EvLoopIterationDone)
}
