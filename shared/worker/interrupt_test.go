package worker

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// blockingTool is a task kind that runs until its context ends (a long
// SQL, python or shell task), then reports what a tool reports for a
// canceled context. It records the cause of its context's end.
type blockingTool struct {
	entered chan struct{}
	causes  chan error
}

func newBlockingTool() *blockingTool {
	return &blockingTool{entered: make(chan struct{}, 8), causes: make(chan error, 8)}
}

func (b *blockingTool) Run(ctx context.Context, req tools.Request) types.Outcome {
	b.entered <- struct{}{}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		b.causes <- errors.New("not interrupted within a minute")
		return types.Outcome{Status: types.StatusOK, Result: "ran to its end"}
	}
	b.causes <- context.Cause(ctx)
	return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "canceled", Retryable: true, Message: "python task canceled"}}
}

// TestStopInterruptsRunningAttempt: a stop while a task attempt runs
// reaches it (interrupt.go): its context ends with an *Interrupted cause
// (the runner client aborts its request with it, the runner its sandbox),
// and the attempt ends as canceled — task.attempt.failed with status
// canceled and kind canceled, then task.canceled — with no policy, no
// retry, no side-effect record, and the unit stops as at a task boundary
// (its lease released; an iteration ends with loop.iteration.canceled).
// The stop comes before the watch is armed (it is seen in the watch's
// first snapshot) and after (a change the watch is told of).
func TestStopInterruptsRunningAttempt(t *testing.T) {
	const step = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: interrupt, path: tests/interrupt}
workflow:
  - step: start
    tool:
      - first: {kind: python, code: "first()"}
      - second: {kind: python, code: "second()"}
`
	const loop = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: interrupt_loop, path: tests/interrupt_loop}
workflow:
  - step: start
    loop: {in: "{{ workload.items }}", iterator: item}
    tool:
      - first: {kind: python, code: "first()"}
      - second: {kind: python, code: "second()"}
`
	for _, tc := range []struct {
		name, src string
		after     time.Duration // Worker.InterruptAfter
		stopAfter time.Duration // when the stop comes, after the tool started
	}{
		{"step, stop after the watch is armed", step, 5 * time.Millisecond, 100 * time.Millisecond},
		{"step, stop before the watch is armed", step, 150 * time.Millisecond, 0},
		{"iteration, stop after the watch is armed", loop, 5 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env := controltest.NewEnv()
			py := newBlockingTool()
			w := newWorker(env, py, nil)
			w.InterruptAfter = tc.after
			start(t, env, "ex1", tc.src, map[string]any{"items": []any{"a"}})
			unit := take(t, env)
			stopped := make(chan time.Time, 1)
			go func() {
				<-py.entered
				time.Sleep(tc.stopAfter)
				if _, err := env.Control.Cancel(ctx, "ex1", "test", "api"); err != nil {
					t.Error(err)
				}
				stopped <- time.Now()
			}()
			if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName()}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			var ie *Interrupted
			if cause := <-py.causes; !errors.As(cause, &ie) {
				t.Fatalf("the tool's context ended with %v, want an *Interrupted cause", cause)
			}
			if since := time.Since(<-stopped); since > 20*time.Second {
				t.Fatalf("the unit ended %s after the stop", since)
			}
			if st := status(t, env, "ex1"); st.Status != engine.ExecCanceled {
				t.Fatalf("execution %s, want canceled", st.Status)
			}
			var failed []types.Event
			for _, e := range eventsOf(env, "ex1", types.EvTaskAttemptFailed) {
				if e.Task == "first" {
					failed = append(failed, e)
				}
			}
			if len(failed) != 1 || failed[0].Status != types.StatusCanceled {
				t.Fatalf("task.attempt.failed of first: %+v, want one with status canceled", failed)
			}
			if p, err := history.Decode[history.TaskAttempt](failed[0]); err != nil || p.Error == nil || p.Error.Kind != string(types.ErrKindCanceled) {
				t.Fatalf("attempt payload %+v (%v), want error kind canceled", p, err)
			}
			canceled := eventsOf(env, "ex1", types.EvTaskCanceled)
			if len(canceled) != 1 || canceled[0].Task != "first" || canceled[0].Status != types.StatusCanceled {
				t.Fatalf("task.canceled events %+v, want one of first", canceled)
			}
			if p, err := history.Decode[history.TaskCanceled](canceled[0]); err != nil || p.Reason != "the execution ended (canceled)" {
				t.Fatalf("task.canceled payload %+v (%v)", p, err)
			}
			for _, e := range eventsOf(env, "ex1", types.EvPolicyTaskEvaluated) {
				t.Fatalf("a policy was evaluated for the interrupted attempt: %+v", e)
			}
			if n := len(eventsOf(env, "ex1", types.EvTaskAttemptStarted)); n != 1 {
				t.Fatalf("%d task attempts started, want 1 (no retry, second never runs)", n)
			}
			if tc.src == loop {
				if n := len(eventsOf(env, "ex1", types.EvLoopIterationCanceled)); n != 1 {
					t.Fatalf("%d loop.iteration.canceled, want 1", n)
				}
			} else {
				wantReleased(t, env, unit, "after the interruption")
				// python is side-effecting: the interrupted attempt left
				// no outcome for a later delivery to adopt.
				if _, err := env.Memory.AttemptGet(ctx, "ex1", unit.UnitKey(), "0.1.0"); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("attempt record of the interrupted attempt: %v, want none", err)
				}
			}
		})
	}
}

// TestAttemptNotWatchedWhenShort: an attempt shorter than InterruptAfter
// never watches its execution (no read beyond the unit's own), and a
// watch that an attempt armed ends with it (none is left running).
func TestAttemptNotWatchedWhenShort(t *testing.T) {
	env := controltest.NewEnv()
	w := newWorker(env, nil, nil)
	w.InterruptAfter = time.Hour
	start(t, env, "ex1", `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: short, path: tests/short}
workflow:
  - step: start
    tool: {kind: python, code: "x()"}
`, nil)
	drain(t, env, w)
	wantOK(t, env)
	w.interrupts.mu.Lock()
	n := len(w.interrupts.m)
	w.interrupts.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d execution watches left after the run", n)
	}
}

// TestOperatorEndsStuckStep: an operator's `noetl step complete|fail`
// (control.ForceStep) ends the running step run through the engine —
// step.forced (who, why) then step.done with the operator's result (the
// next step reads it) or step.failed with kind operator — and the unit
// still running it is interrupted (its step run ended) without applying
// its own boundary. Refusals: an unknown step, a step with no running
// run, an ended execution, an unknown action or no principal.
func TestOperatorEndsStuckStep(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: stuck, path: tests/stuck}
workflow:
  - step: start
    tool: {kind: noop, result: {ok: true}}
    next: {arcs: [{step: stuck}]}
  - step: stuck
    tool: {kind: python, code: "wait_forever()"}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: noop, result: {got: "{{ stuck.value }}"}}
`
	for _, action := range []control.StepAction{control.StepComplete, control.StepFail} {
		t.Run(string(action), func(t *testing.T) {
			ctx := context.Background()
			env := controltest.NewEnv()
			py := newBlockingTool()
			w := newWorker(env, py, nil)
			w.InterruptAfter = 5 * time.Millisecond
			start(t, env, "ex1", src, nil)
			deliver(t, w, take(t, env)) // start
			unit := take(t, env)        // stuck
			// Refusals while it runs.
			for _, bad := range []struct {
				p    control.ForceStepParams
				code errs.Code
			}{
				{control.ForceStepParams{ExecutionID: "ex1", Step: "nope", Action: action, Principal: "op"}, errs.NotFound},
				{control.ForceStepParams{ExecutionID: "ex1", Step: "after", Action: action, Principal: "op"}, errs.FailedPrecondition},
				{control.ForceStepParams{ExecutionID: "ex1", Step: "start", Action: action, Principal: "op"}, errs.FailedPrecondition},
				{control.ForceStepParams{ExecutionID: "nope", Step: "stuck", Action: action, Principal: "op"}, errs.NotFound},
				{control.ForceStepParams{ExecutionID: "ex1", Step: "stuck", Action: "skip", Principal: "op"}, errs.InvalidArgument},
				{control.ForceStepParams{ExecutionID: "ex1", Step: "stuck", Action: action}, errs.InvalidArgument},
			} {
				if _, err := env.Control.ForceStep(ctx, bad.p); errs.CodeOf(err) != bad.code {
					t.Fatalf("ForceStep(%+v): %v, want code %v", bad.p, err, bad.code)
				}
			}
			forced := make(chan error, 1)
			go func() {
				<-py.entered
				_, err := env.Control.ForceStep(ctx, control.ForceStepParams{ExecutionID: "ex1", Step: "stuck", Action: action,
					Result: map[string]any{"value": int64(42)}, Reason: "the upstream fixed by hand", Principal: "ops@example.com"})
				forced <- err
			}()
			deliver(t, w, unit)
			if err := <-forced; err != nil {
				t.Fatalf("ForceStep: %v", err)
			}
			var ie *Interrupted
			// complete: the run ended ok and the execution goes on; fail:
			// the failure ends the execution (stuck has no failure arc).
			want := map[control.StepAction]string{control.StepComplete: "its step run stuck#1 ended (ok)", control.StepFail: "the execution ended (failed)"}[action]
			if cause := <-py.causes; !errors.As(cause, &ie) || ie.Reason != want {
				t.Fatalf("the stuck task's context ended with %v", cause)
			}
			drain(t, env, w)
			st := status(t, env, "ex1")
			audit := eventsOf(env, "ex1", types.EvStepForced)
			if len(audit) != 1 {
				t.Fatalf("%d step.forced events, want 1", len(audit))
			}
			if p, err := history.Decode[history.StepForced](audit[0]); err != nil || p.Principal != "ops@example.com" || p.Reason != "the upstream fixed by hand" || p.Action != string(action) || audit[0].Step != "stuck" || audit[0].StepRun != 1 {
				t.Fatalf("step.forced %+v payload %+v (%v)", audit[0], p, err)
			}
			if len(eventsOf(env, "ex1", types.EvTaskCanceled)) != 1 {
				t.Fatal("the interrupted attempt of stuck left no task.canceled")
			}
			switch action {
			case control.StepComplete:
				if st.Status != engine.ExecOK || !reflect.DeepEqual(st.Results["after"], map[string]any{"got": int64(42)}) {
					t.Fatalf("execution %s, after's result %#v; want ok with got 42", st.Status, st.Results["after"])
				}
				if n := len(eventsOf(env, "ex1", types.EvStepDone)); n != 3 {
					t.Fatalf("%d step.done events, want 3 (start, stuck by hand, after)", n)
				}
			case control.StepFail:
				ss := st.Steps["stuck"]
				em, _ := ss.Error.(map[string]any)
				if st.Status != engine.ExecFailed || em["kind"] != string(types.ErrKindOperator) || em["message"] != "failed by ops@example.com: the upstream fixed by hand" {
					t.Fatalf("execution %s, stuck's error %#v; want failed with kind operator", st.Status, ss.Error)
				}
			}
			if _, err := env.Control.ForceStep(ctx, control.ForceStepParams{ExecutionID: "ex1", Step: "stuck", Action: action, Principal: "op"}); errs.CodeOf(err) != errs.FailedPrecondition {
				t.Fatalf("ForceStep of an ended execution: %v, want FailedPrecondition", err)
			}
			if c := env.Bus.Conflicts(); len(c) > 0 {
				t.Fatalf("events published twice with different contents: %v", c)
			}
		})
	}
}
