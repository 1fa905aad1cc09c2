package worker

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// pipeline: a side-effecting task, then a read-only one reading its
// result, then a second step.
const pipeline = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: pipeline, path: tests/pipeline}
workflow:
  - step: start
    tool:
      - count: {kind: python, code: "count()"}
      - echo:
          kind: noop
          result: {n: "{{ _prev.n }}", task: "{{ _prev.task }}"}
    next:
      arcs:
        - step: after
  - step: after
    tool:
      - after: {kind: python, code: "after()"}
`

// single is one side-effecting task.
const single = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: single, path: tests/single}
workflow:
  - step: start
    tool:
      - charge: {kind: python, code: "charge()"}
`

var errDown = errs.New(errs.Unavailable, "injected outage")

func TestUnitRunsPipelineAndAppliesBoundary(t *testing.T) {
	py := &fakeTool{}
	env, w := setup(t, py, pipeline, nil)
	cmd := take(t, env)
	deliver(t, w, cmd)
	st := status(t, env, "ex1")
	if st.Steps["start"].Status != types.StatusOK || st.Steps["after"] == nil {
		t.Fatalf("steps after the unit: %v", st.Steps)
	}
	// The noop echoing _prev, with the pipeline's results by label beside
	// it (engine.PipelineResult).
	last := map[string]any{"n": int64(1), "task": "count"}
	want := map[string]any{"n": int64(1), "task": "count", "results": map[string]any{"count": last, "echo": last}}
	if !reflect.DeepEqual(st.Results["start"], want) {
		t.Fatalf("result of start %#v, want %#v", st.Results["start"], want)
	}
	// The unit's side-effecting attempt is durable and its lease released.
	if _, err := env.Memory.AttemptGet(context.Background(), "ex1", cmd.UnitKey(), "0.1.0"); err != nil {
		t.Fatalf("the barrier record of count: %v", err)
	}
	wantReleased(t, env, cmd, "after the unit")
	// The next unit was created by this delivery (no queue hop).
	if next := env.Tasks.Pending(); len(next) == 0 || !hasUnit(next, "after") {
		t.Fatalf("pending after the unit: %+v", next)
	}
	drain(t, env, w)
	wantOK(t, env)
	if py.calls("count") != 1 || py.calls("after") != 1 {
		t.Fatalf("tool runs: count %d, after %d; want 1 each", py.calls("count"), py.calls("after"))
	}
	for _, typ := range []types.EventType{types.EvStepStarted, types.EvTaskAttemptStarted, types.EvTaskAttemptDone, types.EvPolicyTaskEvaluated, types.EvTaskDone, types.EvStepDone} {
		if len(eventsOf(env, "ex1", typ)) == 0 {
			t.Fatalf("no %s event", typ)
		}
	}
	checkCausal(t, env, "ex1")
}

func hasUnit(cmds []types.Command, step string) bool {
	for _, c := range cmds {
		if c.Step == step && isUnit(c) {
			return true
		}
	}
	return false
}

// TestRetryWithDelayHandsOff: a retry with a delay is not a sleep: the
// unit ends and its continuation is a new Cloud Task scheduled after the
// delay, carrying the next attempt.
func TestRetryWithDelayHandsOff(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: retry, path: tests/retry}
workflow:
  - step: start
    tool:
      - flaky:
          kind: python
          code: "flaky()"
          spec:
            policy:
              rules:
                - when: "{{ outcome.status == 'error' }}"
                  then: {do: retry, attempts: 5, delay: 2}
`
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if n <= 2 {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "python", Message: "flaky", Retryable: true}}
		}
		return ok(req, n)
	}}
	env, w := setup(t, py, src, nil)
	first := take(t, env)
	deliver(t, w, first)
	next := pending(env, isUnit)
	if len(next) != 1 {
		t.Fatalf("continuations %+v; want one", next)
	}
	c := next[0]
	if c.Attempt != 2 || c.TaskIndex != 0 || !c.NotBefore.Equal(controltest.T0.Add(2*time.Second)) || c.TaskName() == first.TaskName() {
		t.Fatalf("continuation attempt %d task %d not_before %s; want attempt 2 of task 0 at T0+2s under a new name", c.Attempt, c.TaskIndex, c.NotBefore)
	}
	pe := eventsOf(env, "ex1", types.EvPolicyTaskEvaluated)
	if len(pe) != 1 || pe[0].Payload["do"] != "retry" || num(pe[0].Payload["delay_s"]) != 2 || num(pe[0].Payload["next_attempt"]) != 2 {
		t.Fatalf("policy events %+v", pe)
	}
	if st := status(t, env, "ex1"); st.Steps["start"].Status != types.StatusRunning {
		t.Fatalf("step %s during the delay, want running", st.Steps["start"].Status)
	}
	wantReleased(t, env, first, "during the delay")
	drain(t, env, w)
	wantOK(t, env)
	if n := py.calls("flaky"); n != 3 {
		t.Fatalf("flaky ran %d times, want 3", n)
	}
	if !env.Clock.Now().Equal(controltest.T0.Add(4 * time.Second)) {
		t.Fatalf("clock %s: the retries were not 2 s apart", env.Clock.Now())
	}
	checkCausal(t, env, "ex1")
}

// TestTwoInstancesRunSideEffectOnce: the same side-effecting unit
// delivered to two instances at the same moment runs its tool once; the
// other delivery is told to retry later (the lease is held).
func TestTwoInstancesRunSideEffectOnce(t *testing.T) {
	ctx := context.Background()
	g := newGate()
	py := gated(g)
	env, w1 := setup(t, py, single, nil)
	w2 := otherInstance(env, w1)
	cmd := take(t, env)
	done := make(chan error, 1)
	go func() { done <- w1.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}) }()
	g.waitEntered(t)
	err := w2.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()})
	if !errors.Is(err, ErrRetryLater) || !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("concurrent delivery on another instance: %v, want ErrRetryLater", err)
	}
	// The running delivery armed its watchdog (before its lease) for when
	// the lease would expire; the other armed one too before finding the
	// lease held — it finds another holder and stops.
	holder, _, err := env.Memory.LeaseGet(ctx, "ex1", cmd.UnitKey())
	if err != nil {
		t.Fatal(err)
	}
	checks := pending(env, isLeaseCheck)
	var mine *types.Command
	for i, c := range checks {
		if c.Unit == nil || c.Unit.TaskName() != cmd.TaskName() || !c.NotBefore.Equal(controltest.T0.Add(w1.ttl()+WatchdogGrace)) {
			t.Fatalf("watchdog %+v; want the unit's at T0+ttl+grace", c)
		}
		if c.Holder == holder {
			mine = &checks[i]
		}
	}
	if len(checks) != 2 || mine == nil {
		t.Fatalf("watchdogs %+v; want one per delivery, one of the holder %s", checks, holder)
	}
	g.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := py.calls("charge"); n != 1 {
		t.Fatalf("charge ran %d times, want 1", n)
	}
	// A later redelivery to the other instance finds the run ended.
	if err := w2.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), RetryCount: 1}); err != nil {
		t.Fatalf("late redelivery: %v", err)
	}
	if n := py.calls("charge"); n != 1 || status(t, env, "ex1").Status != engine.ExecOK {
		t.Fatalf("after the late redelivery: charge ran %d times, execution %s", n, status(t, env, "ex1").Status)
	}
}

// TestSameInstanceDedupsWithoutIO: a duplicate delivery of a unit in
// flight on the same instance, and one of a unit that ended there, are
// answered without touching the store.
func TestSameInstanceDedupsWithoutIO(t *testing.T) {
	ctx := context.Background()
	g := newGate()
	py := gated(g)
	env, w := setup(t, py, single, nil)
	cmd := take(t, env)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}) }()
	g.waitEntered(t)

	m := meter.New()
	mctx := meter.With(ctx, m)
	if err := w.Run(mctx, cmd, Delivery{TaskName: cmd.TaskName()}); !errors.Is(err, ErrRetryLater) {
		t.Fatalf("duplicate in flight: %v, want ErrRetryLater", err)
	}
	if ops := m.Drain("ex1"); len(ops) > 0 {
		t.Fatalf("the duplicate in flight cost %v", ops)
	}
	g.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Run(mctx, cmd, Delivery{TaskName: cmd.TaskName(), RetryCount: 1}); err != nil {
		t.Fatalf("duplicate of an ended unit: %v, want nil", err)
	}
	if ops := m.Drain("ex1"); len(ops) > 0 {
		t.Fatalf("the duplicate of an ended unit cost %v", ops)
	}
	if n := py.calls(""); n != 1 {
		t.Fatalf("tool ran %d times, want 1", n)
	}
}

// TestSideEffectBarrier: the first delivery fails after the tool ran; the
// retried delivery does not run the tool again. When the step's
// transition was not committed, the retry adopts the recorded outcome
// (payload adopted: true); when it was, the retry finds the run ended and
// carries out the transition's outbox.
func TestSideEffectBarrier(t *testing.T) {
	cases := []struct {
		name        string
		breakFirst  func(env *controltest.Env) (restore func())
		wantAdopted bool
	}{
		{"the commit fails", func(env *controltest.Env) func() {
			failCheckpoints(env)
			return func() { env.Control.Store = env.Memory }
		}, true},
		{"the transition's publish fails", func(env *controltest.Env) func() {
			env.Bus.FailBatch = func(b types.Batch) error {
				if _, ok := b.Boundary(); ok {
					return errDown
				}
				return nil
			}
			return func() { env.Bus.FailBatch = nil }
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
				return types.Outcome{Status: types.StatusOK, Result: map[string]any{"charged": int64(100 * n)}}
			}}
			env, w := setup(t, py, single, nil)
			cmd := take(t, env)
			restore := c.breakFirst(env)
			if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); !errors.Is(err, errDown) {
				t.Fatalf("first delivery: %v, want the outage", err)
			}
			restore()
			if py.calls("charge") != 1 {
				t.Fatalf("charge ran %d times on the first delivery", py.calls("charge"))
			}
			// Cloud Tasks retries at once (same instant): the failed
			// delivery must not block its own retry.
			if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), RetryCount: 1}); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if n := py.calls("charge"); n != 1 {
				t.Fatalf("charge ran %d times, want 1", n)
			}
			st := status(t, env, "ex1")
			if st.Status != engine.ExecOK || !reflect.DeepEqual(st.Results["start"], map[string]any{"charged": int64(100)}) {
				t.Fatalf("execution %s result %v; want ok with the first run's outcome", st.Status, st.Results["start"])
			}
			if got := adopted(env); got != c.wantAdopted {
				t.Fatalf("adopted %v, want %v", got, c.wantAdopted)
			}
			if len(eventsOf(env, "ex1", types.EvStepDone)) != 1 || len(eventsOf(env, "ex1", types.EvPlaybookFinished)) != 1 {
				t.Fatal("the end of the step or of the execution is missing from the log")
			}
			checkCausal(t, env, "ex1")
		})
	}
}

// leaseCheckOf builds the watchdog of unit for holder (as armWatchdog
// does).
func leaseCheckOf(unit types.Command, holder string, seq int, at time.Time) types.Command {
	u := unit
	chk := types.Command{Kind: types.CmdLeaseCheck, ExecutionID: u.ExecutionID, Step: u.Step, StepRun: u.StepRun,
		Iteration: u.Iteration, StateVersion: u.StateVersion, Unit: &u, Holder: holder, Seq: seq, NotBefore: at, Clock: u.Clock}
	chk.ID = chk.TaskName()
	return chk
}

// TestLeaseWatchdog: a watchdog re-arms while its holder renews the lease,
// reclaims the unit (Reclaim+1) when the lease expired, dead-letters it
// after MaxReclaims, and stops when the lease is released or held by
// another holder.
func TestLeaseWatchdog(t *testing.T) {
	const ttl = 30 * time.Second
	cases := []struct {
		name    string
		holder  string        // the lease's holder ("" = no lease)
		at      time.Duration // when the watchdog fires, after T0
		reclaim int           // the watched unit's Reclaim
		want    string        // rearm | reclaim | dlq | nothing
	}{
		{"a live lease re-arms", "h1", 10 * time.Second, 0, "rearm"},
		{"an expired lease reclaims", "h1", ttl + WatchdogGrace, 0, "reclaim"},
		{"an expired lease of a reclaimed unit reclaims again", "h1", ttl + WatchdogGrace, MaxReclaims - 1, "reclaim"},
		{"after MaxReclaims it dead-letters", "h1", ttl + WatchdogGrace, MaxReclaims, "dlq"},
		{"a lease taken over by another holder stops the watchdog", "h2", ttl + WatchdogGrace, 0, "nothing"},
		{"a released lease stops the watchdog", "", ttl + WatchdogGrace, 0, "nothing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			py := &fakeTool{}
			env, w := setup(t, py, single, nil)
			unit := take(t, env)
			unit.Reclaim = c.reclaim
			if c.holder != "" {
				holdLease(t, env, unit, c.holder, ttl)
			}
			chk := leaseCheckOf(unit, "h1", 0, controltest.T0.Add(ttl+WatchdogGrace))
			env.Clock.Set(controltest.T0.Add(c.at))
			before := len(env.Tasks.Created())
			deliver(t, w, chk)
			created := env.Tasks.Created()[before:]
			reclaimed := eventsOf(env, "ex1", types.EvUnitReclaimed)
			dead := eventsOf(env, "ex1", types.EvUnitDeadLettered)
			dlq, dlqErr := env.Memory.DLQGet(context.Background(), DLQMessageID(unit))
			switch c.want {
			case "rearm":
				if len(created) != 1 || created[0].Kind != types.CmdLeaseCheck || created[0].Seq != 1 || created[0].Holder != "h1" ||
					!created[0].NotBefore.Equal(controltest.T0.Add(ttl+WatchdogGrace)) {
					t.Fatalf("created %+v; want the next watchdog (seq 1) at expiry+grace", created)
				}
			case "reclaim":
				if len(created) != 1 || created[0].Kind != types.CmdRunStep || created[0].Reclaim != c.reclaim+1 ||
					created[0].TaskIndex != unit.TaskIndex || created[0].Attempt != unit.Attempt || created[0].TaskName() == unit.TaskName() {
					t.Fatalf("created %+v; want the unit again with reclaim %d under a new name", created, c.reclaim+1)
				}
				if len(reclaimed) != 1 || reclaimed[0].Payload["reclaim"] != int64(c.reclaim+1) {
					t.Fatalf("unit.reclaimed events %+v", reclaimed)
				}
			case "dlq":
				if len(created) != 0 || len(reclaimed) != 0 {
					t.Fatalf("dead-lettered unit re-dispatched: %+v", created)
				}
				if dlqErr != nil || dlq.Status != store.DLQPending || dlq.ExecutionID != "ex1" || dlq.StepID != "start" || dlq.Attempts != MaxReclaims+1 || dlq.ToolKind != "python" {
					t.Fatalf("DLQ entry %+v (%v)", dlq, dlqErr)
				}
				if len(dead) != 1 || dead[0].Payload["dlq_id"] != DLQMessageID(unit) {
					t.Fatalf("unit.dead_lettered events %+v", dead)
				}
				if st := status(t, env, "ex1"); st.Steps["start"].Status != types.StatusRunning {
					t.Fatalf("a dead-lettered unit's step run is %s, want running (parked)", st.Steps["start"].Status)
				}
			case "nothing":
				if len(created) != 0 || len(reclaimed) != 0 || len(dead) != 0 {
					t.Fatalf("the watchdog acted: created %+v", created)
				}
			}
			if c.want != "dlq" && dlqErr == nil {
				t.Fatalf("unexpected DLQ entry %+v", dlq)
			}
			if py.calls("") != 0 {
				t.Fatal("a watchdog ran the unit's tool")
			}
		})
	}
}

// TestReclaimAdoptsOutcomeOfDeadHolder: the holder ran the side-effecting
// task (its outcome is durable) and died before the end; the reclaimed
// unit takes the expired lease and adopts the outcome instead of running
// the task again.
func TestReclaimAdoptsOutcomeOfDeadHolder(t *testing.T) {
	py := &fakeTool{}
	env, w := setup(t, py, single, nil)
	unit := take(t, env)
	holdLease(t, env, unit, "dead", w.ttl())
	if err := env.Memory.AttemptPut(context.Background(), "ex1", unit.UnitKey(), "0.1.0", types.Outcome{Status: types.StatusOK, Result: "charged by the dead holder"}); err != nil {
		t.Fatal(err)
	}
	chk := leaseCheckOf(unit, "dead", 0, controltest.T0.Add(w.ttl()+WatchdogGrace))
	env.Clock.Set(chk.NotBefore)
	deliver(t, w, chk)
	drain(t, env, otherInstance(env, w))
	if n := py.calls(""); n != 0 {
		t.Fatalf("the reclaimed unit ran the tool %d times, want 0", n)
	}
	st := status(t, env, "ex1")
	if st.Status != engine.ExecOK || st.Results["start"] != "charged by the dead holder" {
		t.Fatalf("execution %s result %v", st.Status, st.Results["start"])
	}
	if !adopted(env) {
		t.Fatal("no adopted attempt in the log")
	}
	checkCausal(t, env, "ex1")
}

// TestLastAttempt: on the queue's last attempt a unit that fails is filed
// in the DLQ and the delivery succeeds (no more retries); one that finds
// its lease held elsewhere is left to the holder (dropped, no DLQ entry).
func TestLastAttempt(t *testing.T) {
	t.Run("a failure on the last attempt dead-letters", func(t *testing.T) {
		ctx := context.Background()
		py := &fakeTool{}
		env, w := setup(t, py, single, nil)
		unit := take(t, env)
		failCheckpoints(env)
		for retry := range 4 {
			if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: retry, MaxAttempts: 5}); !errors.Is(err, errDown) {
				t.Fatalf("attempt %d: %v, want the outage", retry+1, err)
			}
			if _, err := env.Memory.DLQGet(ctx, DLQMessageID(unit)); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("attempt %d filed a DLQ entry (%v)", retry+1, err)
			}
		}
		if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: 4, MaxAttempts: 5}); err != nil {
			t.Fatalf("last attempt: %v, want nil (dead-lettered)", err)
		}
		e, err := env.Memory.DLQGet(ctx, DLQMessageID(unit))
		if err != nil || e.Attempts != 5 || e.Kind != "unit" || !strings.Contains(e.LastError, "injected outage") || e.Unit == "" {
			t.Fatalf("DLQ entry %+v (%v)", e, err)
		}
		if d := eventsOf(env, "ex1", types.EvUnitDeadLettered); len(d) != 1 || d[0].Status != types.StatusError {
			t.Fatalf("unit.dead_lettered events %+v", d)
		}
		if n := py.calls(""); n != 1 {
			t.Fatalf("the tool ran %d times over 5 attempts, want 1 (adopted afterwards)", n)
		}
		// The unit is parked: the watchdogs its attempts armed, and the
		// guard its last attempt armed, do not reclaim it.
		env.Clock.Advance(time.Hour)
		before := len(env.Tasks.Created())
		checks, guards := 0, 0
		for {
			chk, ok := env.Tasks.Take(isLeaseCheck)
			if !ok {
				break
			}
			if strings.HasPrefix(chk.Holder, GuardPrefix) {
				guards++
			} else {
				checks++
			}
			deliver(t, w, chk)
		}
		if checks != 5 || guards != 1 {
			t.Fatalf("%d watchdogs and %d guards armed by 5 attempts, want 5 and 1", checks, guards)
		}
		if created := env.Tasks.Created()[before:]; len(created) != 0 || len(eventsOf(env, "ex1", types.EvUnitReclaimed)) != 0 {
			t.Fatalf("a watchdog reclaimed the dead-lettered unit: %+v", created)
		}
	})
	t.Run("a failed delivery that is not retried is reclaimed by its watchdog", func(t *testing.T) {
		ctx := context.Background()
		py := &fakeTool{}
		env, w := setup(t, py, single, nil)
		unit := take(t, env)
		failCheckpoints(env)
		if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), MaxAttempts: 5}); !errors.Is(err, errDown) {
			t.Fatalf("delivery: %v, want the outage", err)
		}
		env.Control.Store = env.Memory
		// The lease is expired (a retry would take it at once) but still
		// the failed delivery's, for its watchdog.
		holder, expires, err := env.Memory.LeaseGet(ctx, "ex1", unit.UnitKey())
		if err != nil || expires.After(env.Clock.Now()) {
			t.Fatalf("lease after the failed delivery: holder %q expires %s (%v); want expired now", holder, expires, err)
		}
		chk, ok := env.Tasks.Take(isLeaseCheck)
		if !ok || chk.Holder != holder {
			t.Fatalf("watchdog %+v of holder %q", chk, holder)
		}
		env.Clock.Set(chk.NotBefore)
		deliver(t, w, chk)
		if r := eventsOf(env, "ex1", types.EvUnitReclaimed); len(r) != 1 {
			t.Fatalf("unit.reclaimed events %+v; want the unit reclaimed", r)
		}
		drain(t, env, w)
		if st := status(t, env, "ex1"); st.Status != engine.ExecOK || py.calls("") != 1 {
			t.Fatalf("execution %s, tool runs %d; want ok after one run (adopted)", st.Status, py.calls(""))
		}
	})
	t.Run("a lease held elsewhere on the last attempt is left to its holder", func(t *testing.T) {
		ctx := context.Background()
		env, w := setup(t, nil, single, nil)
		unit := take(t, env)
		holdLease(t, env, unit, "other", w.ttl())
		if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: 2, MaxAttempts: 5}); !errors.Is(err, ErrRetryLater) {
			t.Fatalf("not the last attempt: %v, want ErrRetryLater", err)
		}
		if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName(), RetryCount: 4, MaxAttempts: 5}); err != nil {
			t.Fatalf("last attempt: %v, want nil (dropped)", err)
		}
		if _, err := env.Memory.DLQGet(ctx, DLQMessageID(unit)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("DLQ entry for a unit leased elsewhere (%v)", err)
		}
	})
}

// TestHandOffAfterBudget: with executor.spec.handoff_s, a unit that ran
// past its budget hands the rest of its pipeline to a new unit after a
// task ends (HandOff+1, the cursor in the command).
func TestHandOffAfterBudget(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: long, path: tests/long}
executor:
  spec: {handoff_s: 1}
workflow:
  - step: start
    tool:
      - a: {kind: python, code: "a()"}
      - b: {kind: python, code: "b()"}
      - c: {kind: python, code: "c()"}
`
	var env *controltest.Env
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		env.Clock.Advance(1500 * time.Millisecond) // each task takes 1.5 s
		return ok(req, n)
	}}
	env, w := setup(t, py, src, nil)
	first := take(t, env)
	deliver(t, w, first)
	if py.calls("a") != 1 || py.calls("b") != 0 {
		t.Fatalf("first unit ran a %d, b %d times; want a only", py.calls("a"), py.calls("b"))
	}
	next := pending(env, isUnit)
	if len(next) != 1 || next[0].HandOff != 1 || next[0].TaskIndex != 1 || next[0].Attempt != 1 || !next[0].NotBefore.Equal(env.Clock.Now()) {
		t.Fatalf("continuation %+v; want hand-off 1 at task 1, due now", next)
	}
	wantReleased(t, env, first, "after the hand-off")
	ho := eventsOf(env, "ex1", types.EvUnitHandedOff)
	if len(ho) != 1 || ho[0].Payload["task_index"] != int64(1) {
		t.Fatalf("unit.handed_off events %+v", ho)
	}
	drain(t, env, w)
	wantOK(t, env)
	for _, task := range []string{"a", "b", "c"} {
		if n := py.calls(task); n != 1 {
			t.Fatalf("%s ran %d times, want 1", task, n)
		}
	}
	if n := len(eventsOf(env, "ex1", types.EvUnitHandedOff)); n != 2 {
		t.Fatalf("%d hand-offs, want 2 (after a and after b)", n)
	}
	checkCausal(t, env, "ex1")
}

// TestCancelStopsUnitAtTaskBoundary: a unit whose execution is canceled
// while a task runs stops before its next task (once CancelCheckEvery has
// passed), publishes what it did and releases its lease.
func TestCancelStopsUnitAtTaskBoundary(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cancel, path: tests/cancel}
workflow:
  - step: start
    tool:
      - first: {kind: python, code: "first()"}
      - second: {kind: python, code: "second()"}
`
	var env *controltest.Env
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if req.Task == "first" {
			if _, err := env.Control.Stop(ctx, req.ExecutionID, control.CancelEvent(req.ExecutionID, "test", "api", env.Clock.Now())); err != nil {
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
			}
			env.Clock.Advance(CancelCheckEvery + time.Second)
		}
		return ok(req, n)
	}}
	env, w := setup(t, py, src, nil)
	unit := take(t, env)
	deliver(t, w, unit)
	if py.calls("first") != 1 || py.calls("second") != 0 {
		t.Fatalf("first ran %d, second %d times; want 1, 0", py.calls("first"), py.calls("second"))
	}
	if st := status(t, env, "ex1"); st.Status != engine.ExecCanceled {
		t.Fatalf("execution %s, want canceled", st.Status)
	}
	wantReleased(t, env, unit, "after the stop")
	var firstDone bool
	for _, e := range eventsOf(env, "ex1", types.EvTaskAttemptDone) {
		firstDone = firstDone || e.Task == "first"
	}
	if !firstDone {
		t.Fatal("the stopped unit's events were not published")
	}
	if n := len(eventsOf(env, "ex1", types.EvStepDone)); n != 0 {
		t.Fatalf("%d step.done events for a canceled step", n)
	}
}

// TestIdempotencyKeyHeader: http requests that change something (not
// GET/HEAD) carry Idempotency-Key {execution_id}:{step}[:{iteration}],
// unless the task sets the header itself.
func TestIdempotencyKeyHeader(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: http, path: tests/http}
workflow:
  - step: start
    tool:
      - post: {kind: http, method: POST, url: "http://example.invalid/a"}
      - put: {kind: http, method: put, url: "http://example.invalid/a"}
      - get: {kind: http, method: GET, url: "http://example.invalid/a"}
      - head: {kind: http, method: HEAD, url: "http://example.invalid/a"}
      - own: {kind: http, method: POST, url: "http://example.invalid/a", headers: {idempotency-key: mine, x-other: "1"}}
    next:
      arcs:
        - step: each
  - step: each
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, max_in_flight: 2}
    tool:
      - send: {kind: http, method: DELETE, url: "http://example.invalid/{{ item }}"}
`
	env := controltest.NewEnv()
	h := &fakeTool{}
	w := newWorker(env, nil, h)
	start(t, env, "ex1", src, map[string]any{"items": []any{"x", "y", "z"}})
	drain(t, env, w)
	wantOK(t, env)
	got := map[string]any{}
	for _, r := range h.requests() {
		k := r.Task
		if r.Task == "send" {
			k += ":" + strings.TrimPrefix(r.Config["url"].(string), "http://example.invalid/")
		}
		got[k] = r.Config["headers"]
	}
	want := map[string]any{
		"post":   map[string]any{"Idempotency-Key": "ex1:start"},
		"put":    map[string]any{"Idempotency-Key": "ex1:start"},
		"get":    nil,
		"head":   nil,
		"own":    map[string]any{"idempotency-key": "mine", "x-other": "1"},
		"send:x": map[string]any{"Idempotency-Key": "ex1:each:0"},
		"send:y": map[string]any{"Idempotency-Key": "ex1:each:1"},
		"send:z": map[string]any{"Idempotency-Key": "ex1:each:2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("headers\n got %v\nwant %v", got, want)
	}
	checkCausal(t, env, "ex1")
}

func TestAddIdempotencyKey(t *testing.T) {
	cases := []struct {
		name string
		cfg  map[string]any
		want any
	}{
		{"no method is a GET", map[string]any{}, nil},
		{"GET", map[string]any{"method": "GET"}, nil},
		{"head, lower case, padded", map[string]any{"method": " head "}, nil},
		{"POST", map[string]any{"method": "POST"}, map[string]any{"Idempotency-Key": "k"}},
		{"patch keeps other headers", map[string]any{"method": "patch", "headers": map[string]any{"a": "b"}}, map[string]any{"a": "b", "Idempotency-Key": "k"}},
		{"the task's own key wins", map[string]any{"method": "DELETE", "headers": map[string]any{"IDEMPOTENCY-KEY": "x"}}, map[string]any{"IDEMPOTENCY-KEY": "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addIdempotencyKey(c.cfg, "k")
			var got any
			if h, ok := c.cfg["headers"]; ok {
				got = h
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("headers %v, want %v", got, c.want)
			}
		})
	}
}

// sideEffectLoop runs a side-effecting python task (send, input v: the
// item) for each item of workload.items, two at a time.
const sideEffectLoop = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop, path: tests/loop}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, max_in_flight: 2}
    tool:
      - send: {kind: python, code: "send()", input: {v: "{{ item }}"}}
`

// TestLoopThroughWorker runs a parallel loop of side-effecting iterations
// end to end: each iteration runs once under its lease, lanes dispatch
// their successors, and loop.done carries the results in order.
func TestLoopThroughWorker(t *testing.T) {
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: int64(num(req.Args["v"]) * 2)}
	}}
	env, w := setup(t, py, sideEffectLoop, map[string]any{"items": []any{int64(1), int64(2), int64(3), int64(4), int64(5)}})
	drain(t, env, w)
	wantOK(t, env)
	st := status(t, env, "ex1")
	want := map[string]any{"results": []any{int64(2), int64(4), int64(6), int64(8), int64(10)}, "stats": engine.LoopStats(5, 0)}
	if !reflect.DeepEqual(st.Results["start"], want) {
		t.Fatalf("loop result %v, want %v", st.Results["start"], want)
	}
	if n := py.calls("send"); n != 5 {
		t.Fatalf("send ran %d times, want 5", n)
	}
	if n := len(eventsOf(env, "ex1", types.EvLoopDone)); n != 1 {
		t.Fatalf("loop.done %d times", n)
	}
	checkCausal(t, env, "ex1")
}

// num reads a JSON number of any Go type (-1 when v is not one).
func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return -1
}

// TestFailingToolFailsStep: a task whose outcome is a non-retryable error
// and whose policy says nothing fails its step, and (on_step_fail halt)
// the execution.
func TestFailingToolFailsStep(t *testing.T) {
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "python", Message: "ValueError: no"}}
	}}
	env, w := setup(t, py, pipeline, nil)
	drain(t, env, w)
	st := status(t, env, "ex1")
	if st.Status != engine.ExecFailed || st.Steps["start"].Status != types.StatusFailed || st.Steps["after"] != nil {
		t.Fatalf("execution %s, steps %v; want failed at start", st.Status, st.Steps)
	}
	if py.calls("count") != 1 || py.calls("echo") != 0 {
		t.Fatalf("count ran %d times, want 1 (no retry of a non-retryable error)", py.calls("count"))
	}
	tf := eventsOf(env, "ex1", types.EvTaskFailed)
	if len(tf) != 1 || tf[0].Task != "count" || !strings.Contains(strings.ToLower(fmtAny(tf[0].Payload["error"])), "valueerror") {
		t.Fatalf("task.failed events %+v", tf)
	}
	checkCausal(t, env, "ex1")
}

func fmtAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestUnwantedUnits: units that must not run are dropped (or deferred)
// without running their tools.
func TestUnwantedUnits(t *testing.T) {
	ctx := context.Background()
	py := &fakeTool{}
	env, w := setup(t, py, pipeline, nil)
	unit := take(t, env)
	ahead := unit
	ahead.StateVersion++
	ghost := unit
	ghost.ExecutionID = "ghost"
	stale := unit
	stale.StepRun = 7
	cases := []struct {
		name string
		cmd  types.Command
		want error
	}{
		{"a unit of an unknown execution is dropped", ghost, nil},
		{"a unit derived from a newer state is retried later", ahead, ErrRetryLater},
		{"a unit of a step run that is not current is dropped", stale, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := w.Run(ctx, c.cmd, Delivery{TaskName: c.cmd.TaskName()}); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("Run: %v, want %v", err, c.want)
			}
		})
	}
	if py.calls("") != 0 {
		t.Fatalf("an unwanted unit ran a tool %d times", py.calls(""))
	}
	t.Run("a unit of a finished execution is dropped", func(t *testing.T) {
		if _, err := env.Control.Stop(ctx, "ex1", control.CancelEvent("ex1", "test", "api", env.Clock.Now())); err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx, unit, Delivery{TaskName: unit.TaskName()}); err != nil || py.calls("") != 0 {
			t.Fatalf("Run: %v, tool runs %d", err, py.calls(""))
		}
	})
}

// TestIterationLeases: a side-effecting iteration whose delivery fails
// after its tool ran is retried at once (its lease expired with the
// failure) and adopts the recorded outcome; the watchdog of an iteration
// reclaims it when its lease expired and stops once it ended.
func TestIterationLeases(t *testing.T) {
	ctx := context.Background()
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: req.Args["v"]}
	}}
	env, w := setup(t, py, sideEffectLoop, map[string]any{"items": []any{"a", "b", "c"}})
	iteration := func(i int) types.Command {
		t.Helper()
		c, ok := env.Tasks.Take(func(c types.Command) bool { return isUnit(c) && c.Iteration != nil && *c.Iteration == i })
		if !ok {
			t.Fatalf("iteration %d not pending", i)
		}
		return c
	}
	it0 := iteration(0)
	env.Bus.FailBatch = controltest.FailTimes(1, errDown, func(b types.Batch) bool { return true })
	if err := w.Run(ctx, it0, Delivery{TaskName: it0.TaskName()}); !errors.Is(err, errDown) {
		t.Fatalf("first delivery: %v, want the outage", err)
	}
	status0, holder, expires, err := env.Memory.IterationGet(ctx, "ex1", "start.1", 0)
	if err != nil || status0 != types.StatusRunning || expires.After(env.Clock.Now()) {
		t.Fatalf("iteration 0 after the failure: %s held by %q until %s (%v); want running, expired", status0, holder, expires, err)
	}
	if err := otherInstance(env, w).Run(ctx, it0, Delivery{TaskName: it0.TaskName(), RetryCount: 1}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if py.calls("send") != 1 {
		t.Fatalf("send ran %d times for iteration 0, want 1", py.calls("send"))
	}
	// Iteration 1: its holder dies after taking the lease.
	it1 := iteration(1)
	if _, err := env.Memory.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: "ex1", LoopKey: "start.1", Index: 1, Holder: "dead", TTL: w.ttl(), Now: env.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	chk := leaseCheckOf(it1, "dead", 0, env.Clock.Now().Add(w.ttl()+WatchdogGrace))
	env.Clock.Set(chk.NotBefore)
	deliver(t, w, chk)
	if len(pending(env, func(c types.Command) bool { return c.Reclaim == 1 && c.Iteration != nil && *c.Iteration == 1 })) == 0 {
		t.Fatalf("iteration 1 not reclaimed: pending %+v", env.Tasks.Pending())
	}
	drain(t, env, w)
	st := status(t, env, "ex1")
	if st.Status != engine.ExecOK || !reflect.DeepEqual(st.Results["start"], map[string]any{"results": []any{"a", "b", "c"}, "stats": engine.LoopStats(3, 0)}) {
		t.Fatalf("execution %s result %v", st.Status, st.Results["start"])
	}
	// The watchdog of an ended iteration does nothing.
	before := len(env.Tasks.Created())
	late := leaseCheckOf(it1, "dead", 1, env.Clock.Now())
	if err := w.Run(ctx, late, Delivery{TaskName: late.TaskName()}); err != nil || len(env.Tasks.Created()) != before {
		t.Fatalf("watchdog of an ended iteration: %v, %d new tasks", err, len(env.Tasks.Created())-before)
	}
	if n := py.calls("send"); n != 3 {
		t.Fatalf("send ran %d times for 3 items, want 3", n)
	}
	checkCausal(t, env, "ex1")
}

// TestLargeItemsReadFromPlan: iterations whose items were left out of
// their Cloud Task bodies read them from the loop plan (through the
// results tier, on another instance).
func TestLargeItemsReadFromPlan(t *testing.T) {
	env := controltest.NewEnv()
	off := &controltest.Offloader{InlineMax: control.ItemsInlineMax}
	env.Control.Results = off
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		s, _ := req.Args["v"].(string)
		return types.Outcome{Status: types.StatusOK, Result: int64(len(s))}
	}}
	w := newWorker(env, py, nil)
	big := strings.Repeat("y", control.ItemInlineMax+100)
	items := []any{big, "small", big + big, big, big}
	start(t, env, "ex1", sideEffectLoop, map[string]any{"items": items})
	other := otherInstance(env, w)
	other.Control.Results = off
	drain(t, env, other)
	st := status(t, env, "ex1")
	want := []any{int64(len(big)), int64(5), int64(2 * len(big)), int64(len(big)), int64(len(big))}
	if st.Status != engine.ExecOK || !reflect.DeepEqual(st.Results["start"], map[string]any{"results": want, "stats": engine.LoopStats(5, 0)}) {
		t.Fatalf("execution %s result %v", st.Status, st.Results["start"])
	}
}

const readOnlyFetch = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: fetch, path: tests/fetch}
workflow:
  - step: start
    tool:
      - fetch: {kind: http, method: GET, url: "https://example.com/page"}
`

// TestDuplicateReadOnlyUnitsKeepTheCommittedResult: a unit of read-only
// tasks is not leased, so two instances may run the same delivery at
// once; when its large result differs between the runs (a page that
// changed), the run that commits second must not replace the object the
// committed reference names (NoETL result storage RFC "Risks": two
// writers of the same key). The first run commits; the second then
// stores its own value; the execution's result still reads back, digest
// checked, as the first run's.
func TestDuplicateReadOnlyUnitsKeepTheCommittedResult(t *testing.T) {
	ctx := context.Background()
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 1024}
	first, second := make(chan struct{}), make(chan struct{})
	entered := make(chan int, 2)
	page := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		entered <- n
		if n == 1 {
			<-first
		} else {
			<-second
		}
		rows := make([]any, 200)
		for i := range rows {
			rows[i] = map[string]any{"run": int64(n), "i": int64(i)}
		}
		return types.Outcome{Status: types.StatusOK, Result: rows}
	}}
	env := controltest.NewEnv()
	env.Control.Results = rs
	w1 := newWorker(env, nil, page)
	w1.Results = rs
	start(t, env, "ex1", readOnlyFetch, nil)
	w2 := otherInstance(env, w1)
	w2.Results = rs
	w2.Control.Results = rs
	cmd := take(t, env)
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { done1 <- w1.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}) }()
	if n := <-entered; n != 1 {
		t.Fatalf("first run is call %d", n)
	}
	go func() { done2 <- w2.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}) }()
	if n := <-entered; n != 2 {
		t.Fatalf("second run is call %d (the read-only unit should not be leased)", n)
	}
	close(first)
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	close(second)
	<-done2 // its end is refused or ignored: the unit already ended
	st := status(t, env, "ex1")
	if st.Status != engine.ExecOK || !results.IsRef(st.Results["start"]) {
		t.Fatalf("execution %s result %v", st.Status, st.Results["start"])
	}
	v, err := rs.Resolve(results.WithReader(ctx, results.Reader{Execution: "ex1"}), st.Results["start"])
	if err != nil {
		t.Fatalf("the committed result no longer reads back: %v", err)
	}
	rows := v.([]any)
	if len(rows) != 200 || rows[0].(map[string]any)["run"] != int64(1) {
		t.Fatalf("committed result: %d rows of run %v, want run 1's", len(rows), rows[0].(map[string]any)["run"])
	}
}

// TestPipelineResultName: a later task of a pipeline reads the latest
// finished task's result as `result` (NoETL's author-facing name of the
// previous task's output; before, `{{ result }}` rendered None); a
// pipeline variable set as result keeps its own value.
func TestPipelineResultName(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: piperesult, path: tests/piperesult}
workflow:
  - step: start
    tool:
      - count: {kind: python, code: "count()"}
      - echo:
          kind: noop
          result: {prev_n: "{{ result.n }}", prev_task: "{{ result.task }}"}
      - again:
          kind: noop
          result: {twice: "{{ result.prev_task }}"}
          set: {result: {fixed: true}}
      - last:
          kind: noop
          result: {seen: "{{ result }}"}
`
	py := &fakeTool{}
	env, w := setup(t, py, src, nil)
	drain(t, env, w)
	wantOK(t, env)
	st := status(t, env, "ex1")
	res := st.Results["start"].(map[string]any)["results"].(map[string]any)
	if got := res["echo"]; !reflect.DeepEqual(got, map[string]any{"prev_n": int64(1), "prev_task": "count"}) {
		t.Fatalf("echo read result as %#v", got)
	}
	if got := res["again"]; !reflect.DeepEqual(got, map[string]any{"twice": "count"}) {
		t.Fatalf("again read result as %#v", got)
	}
	if got := res["last"]; !reflect.DeepEqual(got, map[string]any{"seen": map[string]any{"fixed": true}}) {
		t.Fatalf("a set result variable: last read %#v", got)
	}
}
