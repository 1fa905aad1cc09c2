package worker

import (
	"context"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

const chain4 = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: chain4, path: tests/chain4}
workflow:
  - step: s1
    tool: {kind: noop}
    next: {arcs: [{step: s2}]}
  - step: s2
    tool: {kind: noop}
    next: {arcs: [{step: s3}]}
  - step: s3
    tool: {kind: noop}
    next: {arcs: [{step: s4}]}
  - step: s4
    tool: {kind: noop}
`

// runSteps returns the step units created so far, by step name, and how
// many of them are still pending.
func runSteps(env *controltest.Env) (created map[string]types.Command, pendingN int) {
	created = map[string]types.Command{}
	for _, c := range env.Tasks.Created() {
		if c.Kind == types.CmdRunStep {
			created[c.Step] = c
		}
	}
	return created, len(pending(env, isUnit))
}

// TestStepContinuation: a step's end that releases exactly one next unit
// hands it to the same invocation, which runs it at once; a unit run to
// its end there has no Cloud Task at all (the invocation's own task is the
// net of the run). The budget (NOETL_CONTINUE_UNITS, NOETL_CONTINUE_BUDGET_S)
// bounds the units one invocation runs; past it the next unit's task is
// due at once, as without continuation. A crash before the continued run
// is recovered by the invocation's redelivery, whose replay of the outbox
// creates the safety net; the net's delivery finishes the chain.
func TestStepContinuation(t *testing.T) {
	ctx := context.Background()
	t.Run("the chain runs in one invocation", func(t *testing.T) {
		env, w := setup(t, nil, chain4, nil)
		w.ContinueUnits, w.ContinueBudget = 8, time.Minute
		cmd := take(t, env)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		wantOK(t, env)
		created, n := runSteps(env)
		if n != 0 {
			t.Fatalf("%d step units still pending after the invocation, want none (no nets for units run to their end)", n)
		}
		// The invocation's own task is the net of the whole run: a unit
		// run to its end here has no Cloud Task at all.
		for _, s := range []string{"s2", "s3", "s4"} {
			if c, ok := created[s]; ok {
				t.Fatalf("%s has a task %+v, want none (it ran to its end in the invocation)", s, c)
			}
		}
		checkCausal(t, env, "ex1")
	})
	t.Run("the unit budget ends the invocation", func(t *testing.T) {
		env, w := setup(t, nil, chain4, nil)
		w.ContinueUnits, w.ContinueBudget = 1, time.Minute
		cmd := take(t, env)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		if st := status(t, env, "ex1"); st.Steps["s2"].Status != types.StatusOK || st.Steps["s3"] == nil || st.Steps["s3"].Status == types.StatusOK {
			t.Fatalf("after one continued unit: s2 %v, s3 %v; want s2 ok, s3 not run", st.Steps["s2"], st.Steps["s3"])
		}
		next := pending(env, isUnit)
		if len(next) != 1 || next[0].Step != "s3" || !next[0].NotBefore.IsZero() && next[0].NotBefore.After(controltest.T0) {
			t.Fatalf("pending units %+v, want s3's due at once", next)
		}
		drain(t, env, w)
		wantOK(t, env)
	})
	t.Run("the wall-time budget ends the invocation", func(t *testing.T) {
		env, w := setup(t, nil, chain4, nil)
		w.ContinueUnits, w.ContinueBudget = 8, time.Second
		now := controltest.T0
		w.Now = func() time.Time { now = now.Add(400 * time.Millisecond); return now }
		cmd := take(t, env)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		if st := status(t, env, "ex1"); st.Status == engine.ExecOK {
			t.Fatal("the whole chain ran in one invocation past its wall-time budget")
		}
		if next := pending(env, isUnit); len(next) != 1 || next[0].NotBefore.After(controltest.T0) {
			t.Fatalf("pending units %+v, want the next one due at once", next)
		}
	})
	t.Run("off: no unit runs inline", func(t *testing.T) {
		env, w := setup(t, nil, chain4, nil)
		cmd := take(t, env)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		if next := pending(env, isUnit); len(next) != 1 || next[0].Step != "s2" || next[0].NotBefore.After(controltest.T0) {
			t.Fatalf("pending units %+v, want s2's due at once", next)
		}
	})
	t.Run("a crash before the continued run leaves the safety net", func(t *testing.T) {
		env, w := setup(t, nil, chain4, nil)
		w.ContinueUnits, w.ContinueBudget = 8, time.Minute
		w.ContinueDefer = 0 // each end commits (deferred ends: TestDeferredStepEnds)
		t.Cleanup(faults.SetScript(func(point, _, _ string) string {
			if point == faults.ExecuteBeforeContinue {
				return "crash"
			}
			return ""
		}))
		cmd := take(t, env)
		mustCrash(t, w, cmd, "execute.before_continue")
		faults.SetScript(nil)
		w2 := otherInstance(env, w) // the crashed instance is gone
		w2.ContinueUnits, w2.ContinueBudget = 8, time.Minute
		// The crashed invocation did not answer: its delivery comes again
		// and replays the outbox, which holds the net (the crashed
		// instance's flush, off the critical path, may not have run).
		if err := w2.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		next := pending(env, isUnit)
		if len(next) != 1 || next[0].Step != "s2" || !next[0].NotBefore.Equal(controltest.T0.Add(w.ttl())) {
			t.Fatalf("pending units %+v, want s2's safety net due at T0+ttl", next)
		}
		drain(t, env, w2)
		wantOK(t, env)
	})
}

// TestContinuationReplayCreatesOneTask: the outbox of a transition whose
// unit was continued holds the unit's safety net, not an immediate task:
// when the chain gives the unit up and creating its net fails, the
// invocation fails, and its redelivery (not dropped as a duplicate on the
// same instance) replays the outbox, which creates the net only (one
// task: a unit due at once beside its net would be delivered twice).
func TestContinuationReplayCreatesOneTask(t *testing.T) {
	ctx := context.Background()
	env, w := setup(t, nil, chain4, nil)
	w.ContinueUnits, w.ContinueBudget = 8, time.Minute
	w.ContinueDefer = 0 // each end commits (deferred ends: TestDeferredStepEnds)
	t.Cleanup(faults.SetScript(func(point, _, _ string) string {
		if point == faults.ExecuteBeforeContinue {
			return "error"
		}
		return ""
	}))
	failed := false
	env.Tasks.FailCreate = func(c types.Command) error {
		if c.Step == "s2" && !failed {
			failed = true
			return errs.New(errs.Unavailable, "tasks: injected")
		}
		return nil
	}
	cmd := take(t, env)
	if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err == nil {
		t.Fatal("the invocation answered although the net of the unit it gave up was not created")
	}
	if !failed {
		t.Fatal("s2's net was never attempted")
	}
	faults.SetScript(nil)
	// Cloud Tasks redelivers the unit: its step run ended, the outbox is
	// replayed.
	if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
		t.Fatal(err)
	}
	var s2 []types.Command
	for _, c := range env.Tasks.Created() {
		if c.Kind == types.CmdRunStep && c.Step == "s2" {
			s2 = append(s2, c)
		}
	}
	if len(s2) != 1 || !s2[0].NotBefore.Equal(controltest.T0.Add(w.ttl())) {
		t.Fatalf("s2's tasks %+v, want one: its safety net due at T0+ttl; all %+v", s2, env.Tasks.Created())
	}
	drain(t, env, w)
	wantOK(t, env)
}

// TestContinuationGivenUp: a unit the chain does not run to its end gets
// its safety net before the invocation answers — a fault before its run,
// an error after the previous one (the unit it handed back is given up)
// — and the net's delivery finishes the chain. A crash in the middle of a
// chain (no net created for anything) is recovered by the invocation's
// own task: its redelivery replays its outbox, which creates the next
// unit's net; that net's delivery finds its unit ended and replays its
// outbox in turn, up to the unit the crash stopped.
func TestContinuationGivenUp(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, point, action string
		at                  int // the call of point that faults (1: the first)
	}{
		{"an error before the second continued unit", faults.ExecuteBeforeContinue, "error", 2},
		{"an error after the first continued unit", faults.ExecuteAfterContinue, "error", 1},
		{"a crash before the second continued unit", faults.ExecuteBeforeContinue, "crash", 2},
		{"a crash after the second continued unit", faults.ExecuteAfterContinue, "crash", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, w := setup(t, nil, chain4, nil)
			w.ContinueUnits, w.ContinueBudget = 8, time.Minute
			w.ContinueDefer = 0 // each end commits (deferred ends: TestDeferredStepEnds)
			calls := 0
			t.Cleanup(faults.SetScript(func(point, _, _ string) string {
				if point == tc.point {
					if calls++; calls == tc.at {
						return tc.action
					}
				}
				return ""
			}))
			cmd := take(t, env)
			crashed := false
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(faults.Crashed); !ok {
							panic(r)
						}
						crashed = true
					}
				}()
				if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
					t.Fatal(err)
				}
			}()
			if calls < tc.at {
				t.Fatalf("%s reached %d times, want the fault at call %d", tc.point, calls, tc.at)
			}
			if crashed != (tc.action == "crash") {
				t.Fatalf("crashed %v, want %v", crashed, tc.action == "crash")
			}
			faults.SetScript(nil)
			if st := status(t, env, "ex1"); st.Status == engine.ExecOK {
				t.Fatal("the chain ended although a fault stopped it")
			}
			w2 := w
			if crashed {
				if n := len(pending(env, isUnit)); n != 0 {
					t.Fatalf("%d units pending after the crash, want none (nothing but the invocation's own task covers the run)", n)
				}
				w2 = otherInstance(env, w)
				w2.ContinueUnits, w2.ContinueBudget = 8, time.Minute
				if err := w2.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil { // its redelivery
					t.Fatal(err)
				}
			}
			next := pending(env, isUnit)
			if len(next) != 1 || next[0].NotBefore.Before(controltest.T0.Add(w.ttl())) {
				t.Fatalf("pending units %+v, want one safety net due after the lease time", next)
			}
			drain(t, env, w2)
			wantOK(t, env)
			checkCausal(t, env, "ex1")
		})
	}
}

const pychain3 = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: pychain3, path: tests/pychain3}
workflow:
  - step: s1
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: s2}]}
  - step: s2
    tool: {kind: python, code: "result = 2"}
    next: {arcs: [{step: s3}]}
  - step: s3
    tool: {kind: python, code: "result = 3"}
`

// leaseCounter counts the worker's own LeaseAcquire calls.
type leaseCounter struct {
	store.Store
	n int
}

func (l *leaseCounter) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) error {
	l.n++
	return l.Store.LeaseAcquire(ctx, p)
}

// TestContinuationLeaseInCommit: a continued unit that runs leased (a
// side-effecting step) has its lease taken in the commit that released
// it, so the run takes none of its own (one commit per step on a chain's
// critical path, not two); a crash between that commit and the continued
// run leaves a lease whose holder is gone, which the safety net's
// delivery takes over once it has expired.
func TestContinuationLeaseInCommit(t *testing.T) {
	ctx := context.Background()
	t.Run("one LeaseAcquire for the chain", func(t *testing.T) {
		env, w := setup(t, nil, pychain3, nil)
		w.ContinueUnits, w.ContinueBudget = 8, time.Minute
		lc := &leaseCounter{Store: w.Store}
		w.Store = lc
		cmd := take(t, env)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		wantOK(t, env)
		if lc.n != 1 {
			t.Fatalf("%d LeaseAcquire calls for a 3-step leased chain run in one invocation, want 1 (the first unit's)", lc.n)
		}
		for _, s := range []string{"s1", "s2", "s3"} {
			wantReleased(t, env, types.Command{ExecutionID: "ex1", Kind: types.CmdRunStep, Step: s, StepRun: 1}, "after the chain")
		}
		if _, n := runSteps(env); n != 0 {
			t.Fatalf("%d step units still pending, want none", n)
		}
	})
	t.Run("a crash after the commit that took the lease", func(t *testing.T) {
		env, w := setup(t, nil, pychain3, nil)
		w.ContinueUnits, w.ContinueBudget = 8, time.Minute
		t.Cleanup(faults.SetScript(func(point, _, _ string) string {
			if point == faults.ExecuteBeforeContinue {
				return "crash"
			}
			return ""
		}))
		cmd := take(t, env)
		mustCrash(t, w, cmd, "execute.before_continue")
		faults.SetScript(nil)
		s2 := pendingOrCreated(env, "s2")
		if h, _, err := env.Memory.LeaseGet(ctx, "ex1", s2.UnitKey()); err != nil || h == "" {
			t.Fatalf("s2's lease after the crash: %q, %v; want held by the crashed continuation", h, err)
		}
		w2 := otherInstance(env, w)
		w2.ContinueUnits, w2.ContinueBudget = 8, time.Minute
		if err := w2.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		drain(t, env, w2) // the net, due when the dead holder's lease expires
		wantOK(t, env)
	})
}

// pendingOrCreated is the run_step command of step s created so far.
func pendingOrCreated(env *controltest.Env, s string) types.Command {
	created, _ := runSteps(env)
	if c, ok := created[s]; ok {
		return c
	}
	return types.Command{ExecutionID: "ex1", Kind: types.CmdRunStep, Step: s, StepRun: 1}
}

// TestContinuedUnitStartsFromTheCommit: a continued unit starts from the
// state its predecessor's commit wrote (control.Continuation.Base) and
// checkpoints on it: a 4-step chain run in one invocation reads the
// execution document once, for its first unit.
func TestContinuedUnitStartsFromTheCommit(t *testing.T) {
	env, w := setup(t, nil, chain4, nil)
	w.ContinueUnits, w.ContinueBudget = 8, time.Minute
	m := meter.New()
	ctx := meter.With(context.Background(), m)
	cmd := take(t, env)
	before := len(env.Bus.Batches()) // the start's
	if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
		t.Fatal(err)
	}
	wantOK(t, env)
	ops := opsSince(env, m, before)
	if r := ops[meter.FirestoreRead]; r != 1 {
		t.Fatalf("%v Firestore reads for a 4-step chain in one invocation, want 1 (the first unit's)", r)
	}
	checkCausal(t, env, "ex1")
}

// TestChainPublishesTogether: the transitions of the units a chain
// continued publish their events together (ChainEventsLinger,
// control.PublishTogether): a 4-step chain in one invocation is two
// messages when each end commits (the three continued transitions', then
// the last step's), and one when its read-only ends are deferred and
// commit together (control.Deferral), each event once.
func TestChainPublishesTogether(t *testing.T) {
	for _, tc := range []struct {
		deferred, batches int
	}{{0, 2}, {16, 1}} {
		env, w := setup(t, nil, chain4, nil)
		w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 8, time.Minute, tc.deferred
		cmd := take(t, env)
		before := len(env.Bus.Batches())
		if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		wantOK(t, env)
		bs := env.Bus.Batches()[before:]
		if len(bs) != tc.batches {
			t.Fatalf("deferring %d ends: %d batches published by the invocation, want %d", tc.deferred, len(bs), tc.batches)
		}
		seen := map[string]int{}
		for _, b := range bs {
			for _, e := range b.Events {
				seen[e.EventID]++
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("event %s published %d times", id, n)
			}
		}
		if n := len(eventsOf(env, "ex1", types.EvStepDone)); n != 4 {
			t.Fatalf("%d step.done events, want 4", n)
		}
		checkCausal(t, env, "ex1")
	}
}
