package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// Regression tests of README "The soak" (the fault soak holds for any seed): each
// replays, through the in-memory drivers, the fault schedule of a defect
// the soak found, with faults.SetScript choosing where each delivery
// fails or dies.

// maxAttempts is the stack's Cloud Tasks max attempts (a delivery with
// RetryCount 9 is the last one).
const maxAttempts = 10

// runCrashing runs f (one delivery) and reports whether it died at an
// injected crash (faults.Crashed: the process would have exited there,
// leaving no answer and whatever it held).
func runCrashing(f func() error) (crashed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(faults.Crashed); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	return false, f()
}

// script replays a fault schedule: the action for a point, asked with the
// delivery counter it reads (the test moves it between deliveries).
func script(t *testing.T, fn func(point string) string) {
	t.Helper()
	t.Cleanup(faults.SetScript(func(point, executionID, step string) string { return fn(point) }))
}

// settle delivers every pending task — units and watchdogs — in the order
// they fall due, moving the clock to each one's time, until none is left;
// a delivery told to retry later is dropped (as a queue that ran out of
// attempts would).
func settle(t *testing.T, env *controltest.Env, w *Worker) {
	t.Helper()
	for range 1000 {
		cmd, ok := env.Tasks.Take(nil)
		if !ok {
			return
		}
		env.Clock.Set(cmd.NotBefore)
		if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName(), MaxAttempts: maxAttempts}); err != nil && !errors.Is(err, ErrRetryLater) {
			t.Fatalf("delivery of %s (%s, task %d attempt %d): %v", cmd.UnitKey(), cmd.Kind, cmd.TaskIndex, cmd.Attempt, err)
		}
	}
	t.Fatal("tasks kept coming")
}

// pendingAndDone returns the DLQ entries of ex1 that are pending while
// their unit completed (the soak's dlq_and_done).
func pendingAndDone(t *testing.T, env *controltest.Env) []store.DLQEntry {
	t.Helper()
	ctx := context.Background()
	entries, err := env.Memory.DLQList(ctx, store.DLQPending, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.DLQEntry
	for _, e := range entries {
		if e.Kind != "unit" || e.ExecutionID != "ex1" {
			continue
		}
		if e.LoopIndex != nil {
			status, _, _, err := env.Memory.IterationGet(ctx, "ex1", e.LoopKey, *e.LoopIndex)
			if err == nil && (status == types.StatusOK || status == types.StatusError) {
				out = append(out, e)
			}
			continue
		}
		if ss := status(t, env, "ex1").Steps[e.StepID]; ss != nil && ss.Status == types.StatusOK {
			out = append(out, e)
		}
	}
	return out
}

// TestLastAttemptOfAHeldIterationIsLeftToItsHolder replays defect 1 of
// README "The soak" (scripts/soak --executions 40, default seed): a loop
// iteration's delivery takes the iteration's lease, runs its tool and
// dies; the task's retries find the lease held; its last attempt fails at
// execute.start, before it looks at the lease. That attempt must not file
// the iteration in the DLQ: the dead holder's watchdog reclaims it and it
// completes. (It used to be filed, and stay pending while it completed.)
func TestLastAttemptOfAHeldIterationIsLeftToItsHolder(t *testing.T) {
	ctx := context.Background()
	py := &fakeTool{}
	env, w := setup(t, py, sideEffectLoop, map[string]any{"items": []any{"a"}})
	it := take(t, env)
	delivery := 0
	script(t, func(point string) string {
		switch {
		case delivery == 0 && point == faults.ExecuteAfterTool:
			return "crash"
		case delivery == maxAttempts-1 && point == faults.ExecuteStart:
			return "error"
		}
		return ""
	})
	if crashed, err := runCrashing(func() error {
		return w.Run(ctx, it, Delivery{TaskName: it.TaskName(), MaxAttempts: maxAttempts})
	}); !crashed {
		t.Fatalf("first delivery: %v, want the injected crash", err)
	}
	host := otherInstance(env, w) // the restarted host
	for delivery = 1; delivery < maxAttempts; delivery++ {
		err := host.Run(ctx, it, Delivery{TaskName: it.TaskName(), RetryCount: delivery, MaxAttempts: maxAttempts})
		switch {
		case delivery < maxAttempts-1 && !errors.Is(err, ErrRetryLater):
			t.Fatalf("attempt %d: %v, want retry later (the lease is held)", delivery+1, err)
		case delivery == maxAttempts-1 && err != nil:
			t.Fatalf("last attempt: %v, want it acked", err)
		}
	}
	if e, err := env.Memory.DLQGet(ctx, DLQMessageID(it)); err == nil {
		t.Fatalf("the last attempt filed the held iteration in the DLQ: %+v", e)
	}
	settle(t, env, host)
	wantOK(t, env)
	if n := py.calls("send"); n != 1 {
		t.Fatalf("send ran %d times, want 1 (the reclaim adopts its outcome)", n)
	}
	if bad := pendingAndDone(t, env); len(bad) > 0 {
		t.Fatalf("pending DLQ entries of completed units: %+v", bad)
	}
	checkCausal(t, env, "ex1")
}

// TestCompletionAfterFilingResolvesTheEntry: an iteration whose holder is
// slow (its lease expired, it still runs) is filed by its task's last
// attempt; when the holder then completes it, the completion sees the
// park and resolves the entry done in the same commit — and a replay of
// the entry then has nothing to do. For a step unit, the transition that
// ends its step run resolves it (engine.State.Parked).
func TestCompletionAfterFilingResolvesTheEntry(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", single, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			g := newGate()
			env, w := setup(t, gated(g), c.src, c.wl)
			unit := take(t, env)
			delivery := 0
			script(t, func(point string) string {
				if delivery == maxAttempts-1 && point == faults.ExecuteStart {
					return "error"
				}
				return ""
			})
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), MaxAttempts: maxAttempts}) }()
			g.waitEntered(t)
			// The holder stalls past its lease; the last attempt fails.
			env.Clock.Advance(w.ttl() + time.Second)
			delivery = maxAttempts - 1
			if err := otherInstance(env, w).Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: delivery, MaxAttempts: maxAttempts}); err != nil {
				t.Fatalf("last attempt: %v, want it acked", err)
			}
			e, err := env.Memory.DLQGet(ctx, DLQMessageID(unit))
			if err != nil || e.Status != store.DLQPending {
				t.Fatalf("entry %+v (%v); want it filed pending", e, err)
			}
			g.release()
			if err := <-done; err != nil {
				t.Fatalf("the slow holder: %v", err)
			}
			settle(t, env, w)
			wantOK(t, env)
			if e, err = env.Memory.DLQGet(ctx, DLQMessageID(unit)); err != nil || e.Status != store.DLQDone {
				t.Fatalf("entry after the completion: %+v (%v); want done", e, err)
			}
			if bad := pendingAndDone(t, env); len(bad) > 0 {
				t.Fatalf("pending DLQ entries of completed units: %+v", bad)
			}
			if st := status(t, env, "ex1"); len(st.Parked) != 0 {
				t.Fatalf("parks left in the state: %+v", st.Parked)
			}
			checkCausal(t, env, "ex1")
		})
	}
}

// TestFilingAfterCompletionFilesNothing: a unit that completed before its
// task's last attempt failed (a duplicate delivery) is not filed.
func TestFilingAfterCompletionFilesNothing(t *testing.T) {
	ctx := context.Background()
	env, w := setup(t, nil, sideEffectLoop, map[string]any{"items": []any{"a", "b"}})
	it := take(t, env)
	deliver(t, w, it)
	script(t, func(point string) string {
		if point == faults.ExecuteStart {
			return "error"
		}
		return ""
	})
	if err := otherInstance(env, w).Run(ctx, it, Delivery{TaskName: it.TaskName(), RetryCount: maxAttempts - 1, MaxAttempts: maxAttempts}); err != nil {
		t.Fatalf("last attempt: %v, want it acked", err)
	}
	if e, err := env.Memory.DLQGet(ctx, DLQMessageID(it)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a completed iteration was filed: %+v (%v)", e, err)
	}
}

// TestParkedUnitRunsOnlyThroughItsReplay: once filed, a unit's other
// deliveries (a duplicate of its task, its watchdogs) are dropped; its
// replay (ReplayOf the entry) runs it, and the entry ends replayed.
func TestParkedUnitRunsOnlyThroughItsReplay(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", single, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{}
			env, w := setup(t, py, c.src, c.wl)
			unit := take(t, env)
			script(t, func(point string) string {
				if point == faults.ExecuteStart {
					return "error"
				}
				return ""
			})
			if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: maxAttempts - 1, MaxAttempts: maxAttempts}); err != nil {
				t.Fatalf("last attempt: %v", err)
			}
			faults.SetScript(nil)
			id := DLQMessageID(unit)
			if e, err := env.Memory.DLQGet(ctx, id); err != nil || e.Status != store.DLQPending {
				t.Fatalf("entry %+v (%v)", e, err)
			}
			// A duplicate of the filed task is dropped.
			if err := otherInstance(env, w).Run(ctx, unit, Delivery{TaskName: unit.TaskName()}); err != nil {
				t.Fatalf("duplicate: %v", err)
			}
			if py.calls("") != 0 {
				t.Fatal("a delivery of the parked unit ran it")
			}
			replay := unit
			replay.Replay, replay.ReplayOf = 1, id
			replay.ID = replay.TaskName()
			deliver(t, otherInstance(env, w), replay)
			settle(t, env, w)
			wantOK(t, env)
			if e, err := env.Memory.DLQGet(ctx, id); err != nil || e.Status != store.DLQReplayed {
				t.Fatalf("entry after its replay completed: %+v (%v); want replayed", e, err)
			}
			if n := py.calls(""); n != 1 {
				t.Fatalf("the unit ran %d times, want 1", n)
			}
		})
	}
}

// TestWatchdogIsArmedBeforeTheLease replays the wedge the soak found
// with seed 7 (README "The soak"): a delivery took a unit's lease and died before
// arming the lease's watchdog; every retry found the lease held, the last
// one left the unit to its holder, and nothing ever ran it again — the
// execution stayed running. The watchdog is now armed first: a delivery
// that fails there holds nothing, and one that holds a lease has a
// watchdog.
func TestWatchdogIsArmedBeforeTheLease(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", single, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{}
			env, w := setup(t, py, c.src, c.wl)
			unit := take(t, env)
			// The first delivery dies while arming its watchdog.
			env.Tasks.FailCreate = controltest.FailTimes(1, errDown, isLeaseCheck)
			if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), MaxAttempts: maxAttempts}); !errors.Is(err, errDown) {
				t.Fatalf("first delivery: %v, want the outage", err)
			}
			for retry := 1; retry < maxAttempts; retry++ {
				err := otherInstance(env, w).Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: retry, MaxAttempts: maxAttempts})
				if err == nil {
					break
				}
				if !errors.Is(err, ErrRetryLater) {
					t.Fatalf("retry %d: %v", retry, err)
				}
			}
			settle(t, env, w)
			wantOK(t, env)
			if n := py.calls(""); n != 1 {
				t.Fatalf("the unit ran %d times, want 1", n)
			}
		})
	}
}

// TestDiscardIsIdempotent: discarding a parked unit fails its iteration
// or step run and marks the entry discarded in the same commit; repeated
// (the operation failed after it), it finishes what was left and changes
// nothing else; a unit that completed otherwise is ErrUnitEnded.
func TestDiscardIsIdempotent(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", single, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			env, w := setup(t, nil, c.src, c.wl)
			unit := take(t, env)
			script(t, func(point string) string {
				if point == faults.ExecuteStart {
					return "error"
				}
				return ""
			})
			if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: maxAttempts - 1, MaxAttempts: maxAttempts}); err != nil {
				t.Fatalf("last attempt: %v", err)
			}
			faults.SetScript(nil)
			id := DLQMessageID(unit)
			// The first discard's follow-up (the loop's next step, or the
			// transition's outbox) fails after its commit.
			env.Bus.FailBatch = controltest.FailTimes[types.Batch](1, errDown, nil)
			if err := w.DiscardUnit(ctx, unit, id, "bad input"); !errors.Is(err, errDown) {
				t.Fatalf("first discard: %v, want the outage", err)
			}
			if e, err := env.Memory.DLQGet(ctx, id); err != nil || e.Status != store.DLQDiscarded || e.Note != "bad input" {
				t.Fatalf("entry after the discard's commit: %+v (%v); want discarded", e, err)
			}
			if err := w.DiscardUnit(ctx, unit, id, "bad input"); err != nil {
				t.Fatalf("repeated discard: %v", err)
			}
			settle(t, env, w)
			if st := status(t, env, "ex1"); st.Status != engine.ExecFailed {
				t.Fatalf("execution %s, want failed (its unit discarded)", st.Status)
			}
			if err := w.DiscardUnit(ctx, unit, "unit-other", "bad input"); !errors.Is(err, ErrUnitEnded) {
				t.Fatalf("discard through another entry: %v, want ErrUnitEnded", err)
			}
		})
	}
}

// TestCancelClosesEveryStartedIteration (README "The soak"): a cancellation
// cuts short a loop whose iterations are in every state — one runs (it
// stops at its next task boundary), one waits for a delayed retry (its
// task is deleted), one's holder died, one is parked in the DLQ — and
// every loop.iteration.started of the log gets its terminal event; the
// parked one's entry is resolved.
func TestCancelClosesEveryStartedIteration(t *testing.T) {
	ctx := context.Background()
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop, path: tests/loop}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, max_in_flight: 4}
    tool:
      - send:
          kind: python
          code: "send()"
          input: {v: "{{ item }}"}
          spec:
            policy:
              rules:
                - when: "{{ outcome.status == 'error' }}"
                  then: {do: retry, attempts: 3, backoff: fixed, delay: 60}
                - else:
                    then: {do: continue}
      - after: {kind: python, code: "after()", input: {v: "{{ item }}"}}
`
	g := newGate()
	var env *controltest.Env
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		switch req.Args["v"] {
		case "dead":
			// Long enough that its first events are published before
			// it dies (in its second task).
			env.Clock.Advance(flushEvery + time.Second)
		case "retry":
			if req.Task == "send" {
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "python", Message: "try again"}}
			}
		case "running":
			if req.Task == "after" {
				g.wait(ctx)
			}
		}
		return ok(req, n)
	}}
	env = controltest.NewEnv()
	w := newWorker(env, py, nil)
	start(t, env, "ex1", src, map[string]any{"items": []any{"running", "retry", "dead", "parked"}})
	byItem := map[string]types.Command{}
	for range 4 {
		c := take(t, env)
		byItem[c.Item.(string)] = c
	}
	// "retry" runs its first attempt and hands off for 60 s.
	deliver(t, w, byItem["retry"])
	// "dead" dies after its second tool, holding its lease.
	tools := 0
	script(t, func(point string) string {
		if point == faults.ExecuteAfterTool {
			if tools++; tools == 2 {
				return "crash"
			}
		}
		return ""
	})
	if crashed, err := runCrashing(func() error { return w.Run(ctx, byItem["dead"], Delivery{TaskName: byItem["dead"].TaskName()}) }); !crashed {
		t.Fatalf("dead: %v, want the crash", err)
	}
	// "parked" fails its last attempt.
	script(t, func(point string) string {
		if point == faults.ExecuteStart {
			return "error"
		}
		return ""
	})
	parked := byItem["parked"]
	if err := otherInstance(env, w).Run(ctx, parked, Delivery{TaskName: parked.TaskName(), RetryCount: maxAttempts - 1, MaxAttempts: maxAttempts}); err != nil {
		t.Fatalf("parked: %v", err)
	}
	faults.SetScript(nil)
	// "running" blocks in its second task.
	running := otherInstance(env, w)
	done := make(chan error, 1)
	go func() { done <- running.Run(ctx, byItem["running"], Delivery{TaskName: byItem["running"].TaskName()}) }()
	select {
	case <-g.entered:
	case err := <-done:
		t.Fatalf("the running unit ended before its second task: %v", err)
	}

	if ended, err := env.Control.Cancel(ctx, "ex1", "enough", "api"); err != nil || ended != "" {
		t.Fatalf("cancel: %q %v", ended, err)
	}
	// The running unit reaches its next task boundary after the check
	// interval.
	env.Clock.Advance(CancelCheckEvery + time.Second)
	g.release()
	if err := <-done; err != nil {
		t.Fatalf("running unit: %v", err)
	}
	settle(t, env, w)
	started := map[int]bool{}
	for _, e := range eventsOf(env, "ex1", types.EvLoopIterationStarted) {
		started[*e.Iteration] = true
	}
	ended := map[int]types.EventType{}
	for _, typ := range []types.EventType{types.EvLoopIterationDone, types.EvLoopIterationFailed, types.EvLoopIterationCanceled} {
		for _, e := range eventsOf(env, "ex1", typ) {
			if prev, ok := ended[*e.Iteration]; ok {
				t.Fatalf("iteration %d ended twice: %s and %s", *e.Iteration, prev, typ)
			}
			ended[*e.Iteration] = typ
		}
	}
	for i := range started {
		if ended[i] == "" {
			t.Fatalf("iteration %d (%v) started and never ended; ended: %v", i, w, ended)
		}
	}
	if len(started) != 3 {
		t.Fatalf("iterations started in the log: %v; want running, retry and dead (parked never started)", started)
	}
	if e, err := env.Memory.DLQGet(ctx, DLQMessageID(parked)); err != nil || e.Status != store.DLQDone {
		t.Fatalf("the parked iteration's entry: %+v (%v); want done (its execution ended)", e, err)
	}
	log := env.Bus.Log("ex1")
	if log[len(log)-1].EventType == types.EvPlaybookFinished {
		// The closing events come after the finish; the log ends with
		// them, which is fine. Only the finish must be there.
	}
	finished := 0
	for _, e := range log {
		if e.EventType == types.EvPlaybookFinished {
			finished++
		}
	}
	if finished != 1 {
		t.Fatalf("%d playbook.finished events", finished)
	}
	if c := env.Bus.Conflicts(); len(c) > 0 {
		t.Fatalf("events published twice with different contents: %v", c)
	}
}

// TestCancelStopsTheNextTaskPromptly: a unit whose execution is canceled
// while its first task runs starts no further task once 300 ms have
// passed (the state it checks between tasks is at most CancelCheckEvery,
// 250 ms, old) — the soak (seed 7) found units starting inserts up to 2 s
// after their cancel, when a unit only looked after running 2 s. A loop
// iteration cut short so ends with loop.iteration.canceled.
func TestCancelStopsTheNextTaskPromptly(t *testing.T) {
	const step = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cancel, path: tests/cancel}
workflow:
  - step: start
    tool:
      - first: {kind: python, code: "first()"}
      - second: {kind: python, code: "second()"}
`
	const loop = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cancel, path: tests/cancel}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: item
    tool:
      - first: {kind: python, code: "first()"}
      - second: {kind: python, code: "second()"}
`
	for _, src := range []string{step, loop} {
		var env *controltest.Env
		py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
			if req.Task == "first" {
				if _, err := env.Control.Cancel(ctx, req.ExecutionID, "test", "api"); err != nil {
					return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
				}
				env.Clock.Advance(300 * time.Millisecond)
			}
			return ok(req, n)
		}}
		env = controltest.NewEnv()
		w := newWorker(env, py, nil)
		start(t, env, "ex1", src, map[string]any{"items": []any{"a"}})
		deliver(t, w, take(t, env))
		if py.calls("first") != 1 || py.calls("second") != 0 {
			t.Fatalf("first ran %d, second %d times; want 1, 0", py.calls("first"), py.calls("second"))
		}
		if n := len(eventsOf(env, "ex1", types.EvLoopIterationCanceled)); src == loop && n != 1 {
			t.Fatalf("%d loop.iteration.canceled events, want 1", n)
		}
	}
}

// TestFollowUpOfAnEndedUnitSurvivesItsLastAttempt: a unit ends (its
// iteration record, its step's boundary) and then fails its follow-up —
// the loop's completion, the transition's outbox — on its task's last
// attempt. It is not filed in the DLQ (it completed), and its follow-up is
// not dropped either: a new delivery carries it out. (The first
// implementation of README "The soak"'s parks dropped it; the soak wedged an
// execution that way.)
func TestFollowUpOfAnEndedUnitSurvivesItsLastAttempt(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", pipeline, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{}
			env, w := setup(t, py, c.src, c.wl)
			unit := take(t, env)
			// The loop's completion (a checkpoint), or the next step's
			// task, fails.
			if c.name == "iteration" {
				failCheckpoints(env)
			} else {
				env.Tasks.FailCreate = controltest.FailTimes(1, errDown, func(c types.Command) bool { return c.Step == "after" })
			}
			err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: maxAttempts - 1, MaxAttempts: maxAttempts})
			env.Control.Store = env.Memory
			if err != nil {
				t.Fatalf("last attempt: %v, want it handed over", err)
			}
			if e, err := env.Memory.DLQGet(ctx, DLQMessageID(unit)); err == nil {
				t.Fatalf("a unit that completed was filed: %+v", e)
			}
			settle(t, env, w)
			wantOK(t, env)
			if n := py.calls(""); c.name == "iteration" && n != 1 {
				t.Fatalf("the tool ran %d times, want 1", n)
			}
		})
	}
}

// TestHolderDyingAfterItsLeaseIsReclaimed (fault point
// execute.after_lease): a delivery dies right after taking its lease; its
// task's retries find the lease held, its last attempt leaves the unit to
// the holder, and the holder's watchdog (armed before the lease) reclaims
// it.
func TestHolderDyingAfterItsLeaseIsReclaimed(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", single, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{}
			env, w := setup(t, py, c.src, c.wl)
			unit := take(t, env)
			delivery := 0
			script(t, func(point string) string {
				if delivery == 0 && point == faults.ExecuteAfterLease {
					return "crash"
				}
				return ""
			})
			if crashed, err := runCrashing(func() error {
				return w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), MaxAttempts: maxAttempts})
			}); !crashed {
				t.Fatalf("first delivery: %v, want the crash", err)
			}
			host := otherInstance(env, w)
			for delivery = 1; delivery < maxAttempts; delivery++ {
				err := host.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: delivery, MaxAttempts: maxAttempts})
				if (delivery < maxAttempts-1 && !errors.Is(err, ErrRetryLater)) || (delivery == maxAttempts-1 && err != nil) {
					t.Fatalf("attempt %d: %v", delivery+1, err)
				}
			}
			settle(t, env, host)
			wantOK(t, env)
			if n := py.calls(""); n != 1 {
				t.Fatalf("the unit ran %d times, want 1", n)
			}
		})
	}
}

// TestLostLastAttemptsAreFiledByTheGuard replays what the soak found with
// README "The soak"'s first fixes (seed 7): a unit fails on every attempt that
// reaches execute, and its task's last attempts meet the host down — the
// task ends and no last attempt ever files the unit, so its execution
// waits forever. The first failed delivery armed a guard, due once every
// attempt left has had time to come; it files the unit, whose replay then
// lets the execution go on.
func TestLostLastAttemptsAreFiledByTheGuard(t *testing.T) {
	for _, c := range []struct {
		name, src string
		wl        map[string]any
	}{
		{"iteration", sideEffectLoop, map[string]any{"items": []any{"a"}}},
		{"step unit", single, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{}
			env, w := setup(t, py, c.src, c.wl)
			unit := take(t, env)
			script(t, func(point string) string {
				if point == faults.ExecuteStart {
					return "error"
				}
				return ""
			})
			const backoff = 2 * time.Second
			// Attempts 1 to 8 fail at execute.start; 9 and 10 never reach
			// execute.
			for retry := range maxAttempts - 2 {
				d := Delivery{TaskName: unit.TaskName(), RetryCount: retry, MaxAttempts: maxAttempts, MaxBackoff: backoff}
				if err := w.Run(ctx, unit, d); err == nil {
					t.Fatalf("attempt %d succeeded", retry+1)
				}
				env.Clock.Advance(backoff)
			}
			guards := pending(env, func(c types.Command) bool {
				return c.Kind == types.CmdLeaseCheck && strings.HasPrefix(c.Holder, GuardPrefix)
			})
			if len(guards) != 1 {
				t.Fatalf("%d guards armed by 8 failed deliveries, want 1", len(guards))
			}
			faults.SetScript(nil)
			settle(t, env, w)
			e, err := env.Memory.DLQGet(ctx, DLQMessageID(unit))
			if err != nil || e.Status != store.DLQPending {
				t.Fatalf("entry %+v (%v); want the guard to have filed the unit", e, err)
			}
			if st := status(t, env, "ex1"); st.Status != engine.ExecRunning {
				t.Fatalf("execution %s, want running (parked)", st.Status)
			}
			replay := unit
			replay.Replay, replay.ReplayOf = 1, e.MessageID
			replay.ID = replay.TaskName()
			deliver(t, w, replay)
			settle(t, env, w)
			wantOK(t, env)
		})
	}
}

// TestLastAttemptDyingAfterItsEndIsFinishedByItsGuard replays another
// wedge the soak found (seed 7): a loop iteration's last attempt ran and
// recorded its end, then died before what follows (its lane done, the
// loop's completion) — nothing retries a last attempt. The guard the last
// attempt armed before it ran carries the rest out (and for a step unit,
// whose rest is its step run's outbox, replays it); so does the holder's
// watchdog for an iteration (TestIterationEndedByADeadHolderIsFinishedByItsWatchdog).
func TestLastAttemptDyingAfterItsEndIsFinishedByItsGuard(t *testing.T) {
	for _, c := range []struct {
		name, src, point string
		wl               map[string]any
	}{
		{"iteration", sideEffectLoop, faults.ExecuteAfterIterationEnd, map[string]any{"items": []any{"a"}}},
		{"step unit", pipeline, faults.ExecuteAfterCommit, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{}
			env, w := setup(t, py, c.src, c.wl)
			unit := take(t, env)
			script(t, func(point string) string {
				if point == c.point {
					return "crash"
				}
				return ""
			})
			if crashed, err := runCrashing(func() error {
				return w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: maxAttempts - 1, MaxAttempts: maxAttempts})
			}); !crashed {
				t.Fatalf("last attempt: %v, want the crash", err)
			}
			faults.SetScript(nil)
			settle(t, env, otherInstance(env, w))
			wantOK(t, env)
			if n := py.calls(""); c.name == "iteration" && n != 1 {
				t.Fatalf("the tool ran %d times, want 1", n)
			}
			if e, err := env.Memory.DLQGet(ctx, DLQMessageID(unit)); err == nil {
				t.Fatalf("a unit that completed was filed: %+v", e)
			}
		})
	}
}

// TestIterationEndedByADeadHolderIsFinishedByItsWatchdog replays the
// wedge of scripts/soak --executions 40 (seed 1): a delivery of a loop
// iteration's task that is not its last attempt (a chaos duplicate of
// attempt 8) runs the iteration and records its end, then its host dies
// before what follows (the lane done, the loop's completion). While it
// ran, the task's next attempt reached the same instance and was told to
// retry later (the unit in flight there), and its last attempt met the
// host restarting: no attempt is left to carry the end out, and no guard
// was armed (none failed in execute). The holder's watchdog, armed before
// its lease, is all that remains: it must finish what follows the end (it
// used to see an ended iteration and stop, leaving the execution running
// forever).
func TestIterationEndedByADeadHolderIsFinishedByItsWatchdog(t *testing.T) {
	ctx := context.Background()
	g := newGate()
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		g.wait(ctx)
		return ok(req, n)
	}}
	env, w := setup(t, py, sideEffectLoop, map[string]any{"items": []any{"a"}})
	it := take(t, env)
	script(t, func(point string) string {
		if point == faults.ExecuteAfterIterationEnd {
			return "crash"
		}
		return ""
	})
	const doomed = maxAttempts - 3 // attempt 8
	type result struct {
		crashed bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		crashed, err := runCrashing(func() error {
			return w.Run(ctx, it, Delivery{TaskName: it.TaskName(), RetryCount: doomed, MaxAttempts: maxAttempts})
		})
		done <- result{crashed, err}
	}()
	g.waitEntered(t)
	// Attempt 9 reaches the same instance while the doomed delivery runs.
	if err := w.Run(ctx, it, Delivery{TaskName: it.TaskName(), RetryCount: doomed + 1, MaxAttempts: maxAttempts}); !errors.Is(err, ErrRetryLater) {
		t.Fatalf("attempt 9 during the doomed delivery: %v, want retry later", err)
	}
	g.release()
	if r := <-done; !r.crashed {
		t.Fatalf("doomed delivery: %v, want the crash after the iteration's end", r.err)
	}
	if status, _, _, err := env.Memory.IterationGet(ctx, "ex1", engine.LoopKey(it.Step, it.StepRun), *it.Iteration); err != nil || status != types.StatusOK {
		t.Fatalf("iteration %s (%v), want its end recorded before the crash", status, err)
	}
	// Attempt 10 never reaches execute (the host restarts): only the
	// watchdogs are left.
	faults.SetScript(nil)
	if n := len(pending(env, isUnit)); n != 0 {
		t.Fatalf("%d units pending after the crash, want none (the loop's follow-up was lost)", n)
	}
	settle(t, env, otherInstance(env, w))
	wantOK(t, env)
	if n := py.calls(""); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}
