package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// chainSrc is an n-step chain s1 → … → sn whose step i runs kinds[i-1]
// (a tool's YAML flow map; noop past the list).
func chainSrc(n int, kinds ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: chain, path: tests/chain}\nworkflow:\n")
	for i := 1; i <= n; i++ {
		tool := "{kind: noop}"
		if i <= len(kinds) && kinds[i-1] != "" {
			tool = kinds[i-1]
		}
		fmt.Fprintf(&b, "  - step: s%d\n    tool: %s\n", i, tool)
		if i < n {
			fmt.Fprintf(&b, "    next: {arcs: [{step: s%d}]}\n", i+1)
		}
	}
	return b.String()
}

// deferEnv is a worker over a counting store with continuation and
// deferred ends on (NOETL_CONTINUE_DEFER max).
func deferEnv(t *testing.T, src string, max int, py tools.Tool) (*controltest.Env, *Worker, *callStore) {
	t.Helper()
	env := controltest.NewEnv()
	cs := &callStore{Store: env.Memory}
	env.Control = &control.Control{Store: cs, Bus: env.Bus, Tasks: env.Tasks, Now: env.Clock.Now, Source: "execute", Log: env.Log}
	w := newWorker(env, py, nil)
	w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 64, time.Minute, max
	start(t, env, "ex1", src, nil)
	return env, w, cs
}

// wantEachStepOnce fails the test unless ex1 ended ok with each of its n
// steps' step.done in the log once, in a causal log.
func wantEachStepOnce(t *testing.T, env *controltest.Env, n int) {
	t.Helper()
	wantOK(t, env)
	got := map[string]int{}
	for _, e := range env.Bus.Log("ex1") {
		if e.EventType == types.EvStepDone {
			got[e.Step]++
		}
	}
	for i := 1; i <= n; i++ {
		if s := fmt.Sprintf("s%d", i); got[s] != 1 {
			t.Fatalf("step %s: %d step.done in the log, want 1 (%v)", s, got[s], got)
		}
	}
	checkCausal(t, env, "ex1")
}

// TestDeferredStepEnds: inside a chain, the ends of read-only units whose
// next unit is read-only too are applied in memory and committed together
// (control.Deferral, NOETL_CONTINUE_DEFER): a 20-step noop chain in one
// invocation commits twice with up to 16 ends a commit (once per end
// with 0), and costs a fraction of the Firestore writes; every step's end
// is in the log once.
func TestDeferredStepEnds(t *testing.T) {
	const steps = 20
	for _, tc := range []struct {
		max, commits int
	}{{0, steps}, {16, 2}, {100, 1}} {
		env, w, cs := deferEnv(t, chainSrc(steps), 0, nil)
		w.ContinueDefer = tc.max // NOETL_CONTINUE_DEFER
		m := meter.New()
		ctx := meter.With(context.Background(), m)
		before, launched := len(env.Bus.Batches()), cs.calls("CompleteUnit")+cs.calls("ExecutionCheckpoint")
		cmd := take(t, env)
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			t.Fatal(err)
		}
		if n := len(pending(env, isUnit)); n != 0 {
			t.Fatalf("defer %d: %d units pending after the invocation, want none", tc.max, n)
		}
		commits := cs.calls("CompleteUnit") + cs.calls("ExecutionCheckpoint") - launched
		if commits != tc.commits {
			t.Errorf("defer %d: %d commits for a %d-step chain, want %d", tc.max, commits, steps, tc.commits)
		}
		ops := opsSince(env, m, before)
		t.Logf("defer %d: %d commits, %v Firestore writes for %d steps", tc.max, commits, ops[meter.FirestoreWrite], steps)
		if tc.max > 0 && ops[meter.FirestoreWrite] > 0.5*steps {
			t.Errorf("defer %d: %v Firestore writes for %d steps, want at most %v", tc.max, ops[meter.FirestoreWrite], steps, 0.5*steps)
		}
		wantEachStepOnce(t, env, steps)
	}
}

// TestDeferredEndsCommitBeforeASideEffect: a side-effecting unit never
// runs before the end that released it is committed: the python step of
// noop → noop → python → noop finds s1's and s2's ends in the store when
// it runs (committed with s2's end, under its lease), and the chain ends
// ok.
func TestDeferredEndsCommitBeforeASideEffect(t *testing.T) {
	var env *controltest.Env
	var seen string
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		st := env.State(ctx, "ex1").State
		seen = fmt.Sprint(st.Steps["s1"].Status, " ", st.Steps["s2"].Status)
		return types.Outcome{Status: types.StatusOK, Result: int64(1)}
	}}
	env, w, _ := deferEnv(t, chainSrc(4, "", "", `{kind: python, code: "result = 1"}`), 16, py)
	deliver(t, w, take(t, env))
	drain(t, env, w)
	if seen != "ok ok" {
		t.Fatalf("the python step ran with s1, s2 %q in the store, want both committed ok", seen)
	}
	wantEachStepOnce(t, env, 4)
}

// TestDeferredEndsCrash: a crash anywhere in a chain of deferred ends
// loses at most the ends not committed; the invocation's redelivery (on
// another instance) runs their read-only units again from the last commit
// and the execution ends ok, each step's end in the log once.
func TestDeferredEndsCrash(t *testing.T) {
	const steps = 9 // commits at s4's end, s8's and s9's (3 ends deferred a commit)
	for _, tc := range []struct {
		point string
		at    int
	}{
		{faults.ExecuteBeforeContinue, 1},
		{faults.ExecuteBeforeContinue, 5},
		{faults.ExecuteAfterContinue, 3},
		{"execute.before_commit", 4},
		{"execute.after_commit", 1},
		{"execute.after_commit", 2},
	} {
		t.Run(fmt.Sprintf("%s#%d", tc.point, tc.at), func(t *testing.T) {
			env, w, _ := deferEnv(t, chainSrc(steps), 3, nil)
			calls := 0
			t.Cleanup(faults.SetScript(func(point, _, _ string) string {
				if point == tc.point {
					if calls++; calls == tc.at {
						return "crash"
					}
				}
				return ""
			}))
			cmd := take(t, env)
			mustCrash(t, w, cmd, fmt.Sprintf("%s call %d", tc.point, tc.at))
			faults.SetScript(nil)
			if st := status(t, env, "ex1"); st.Status == engine.ExecOK {
				t.Fatal("the chain ended although a crash stopped it")
			}
			w2 := otherInstance(env, w)
			w2.ContinueUnits, w2.ContinueBudget = 64, time.Minute
			if err := w2.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil { // its redelivery
				t.Fatal(err)
			}
			for range 20 {
				if len(pending(env, isUnit)) == 0 {
					break
				}
				next := pending(env, isUnit)[0]
				env.Clock.Set(next.NotBefore)
				drain(t, env, w2)
			}
			wantEachStepOnce(t, env, steps)
		})
	}
}

// TestDeferredEndsMeetAChange: deferred ends commit against the state
// they were applied to; when the execution changed meanwhile, they are
// applied again to the fresh state. Another branch's commit in between
// keeps the first end, whose unit runs again (both branches end, each
// step's end in the log once); a cancellation in between drops the ends
// and nothing runs after it.
func TestDeferredEndsMeetAChange(t *testing.T) {
	ctx := context.Background()
	const fork = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: fork, path: tests/fork}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: a1}, {step: b1}]}
  - step: a1
    tool: {kind: noop}
    next: {arcs: [{step: a2}]}
  - step: a2
    tool: {kind: http, method: GET, url: "http://example.invalid/"}
    next: {arcs: [{step: a3}]}
  - step: a3
    tool: {kind: noop}
  - step: b1
    tool: {kind: noop}
    next: {arcs: [{step: b2}]}
  - step: b2
    tool: {kind: noop}
`
	t.Run("another branch commits", func(t *testing.T) {
		env := controltest.NewEnv()
		var other *Worker
		var b1 types.Command
		http := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
			// Branch b runs to its end on another instance while a's
			// ends wait in memory.
			if err := other.Run(ctx, b1, Delivery{TaskName: b1.TaskName()}); err != nil {
				t.Errorf("branch b: %v", err)
			}
			return types.Outcome{Status: types.StatusOK, Result: int64(n)}
		}}
		w := newWorker(env, nil, http)
		w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 16, time.Minute, 16
		other = otherInstance(env, w)
		other.ContinueUnits, other.ContinueBudget = 16, time.Minute
		start(t, env, "ex1", fork, nil)
		deliver(t, w, take(t, env)) // start: a fan-out, two tasks
		var ok bool
		if b1, ok = env.Tasks.Take(func(c types.Command) bool { return c.Step == "b1" }); !ok {
			t.Fatal("no task for b1")
		}
		a1, ok := env.Tasks.Take(func(c types.Command) bool { return c.Step == "a1" })
		if !ok {
			t.Fatal("no task for a1")
		}
		deliver(t, w, a1)
		drain(t, env, w)
		// a2's first run, deferred, was dropped at the commit that met
		// branch b's: it ran again, from the fresh state.
		if n := http.calls(""); n != 2 {
			t.Fatalf("a2 ran %d times, want twice", n)
		}
		wantOK(t, env)
		done := map[string]int{}
		for _, e := range env.Bus.Log("ex1") {
			if e.EventType == types.EvStepDone {
				done[e.Step]++
			}
		}
		st := status(t, env, "ex1")
		for _, s := range []string{"start", "a1", "a2", "a3", "b1", "b2"} {
			if st.Steps[s] == nil || st.Steps[s].Status != types.StatusOK || done[s] != 1 {
				t.Fatalf("step %s: %+v, %d step.done in the log; want ok, once", s, st.Steps[s], done[s])
			}
		}
		checkCausal(t, env, "ex1")
	})
	t.Run("the execution is canceled", func(t *testing.T) {
		env := controltest.NewEnv()
		http := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
			if _, err := env.Control.Cancel(ctx, "ex1", "test", "test"); err != nil {
				t.Errorf("cancel: %v", err)
			}
			return types.Outcome{Status: types.StatusOK, Result: int64(n)}
		}}
		w := newWorker(env, nil, http)
		w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 16, time.Minute, 16
		start(t, env, "ex1", chainSrc(5, "", `{kind: http, method: GET, url: "http://example.invalid/"}`), nil)
		deliver(t, w, take(t, env))
		drain(t, env, w)
		st := status(t, env, "ex1")
		if st.Status != engine.ExecCanceled {
			t.Fatalf("execution %s, want canceled", st.Status)
		}
		for _, s := range []string{"s3", "s4", "s5"} {
			if st.Steps[s] != nil && st.Steps[s].Status == types.StatusOK {
				t.Fatalf("step %s ended ok after the cancellation", s)
			}
		}
		if n := len(pending(env, isUnit)); n != 0 {
			t.Fatalf("%d units pending after the cancellation, want none", n)
		}
	})
}

// TestDeferredEndsBeforeAHandOff: a read-only unit continued after
// deferred ends that retries with a delay (a hand-off, a Cloud Task of
// its own) first commits those ends (control.Settle: the retry's delivery
// finds its step run committed), and its safety net is not created (it
// ran, and handed itself off): the chain ends ok with the flaky GET run
// twice and each step's end in the log once.
func TestDeferredEndsBeforeAHandOff(t *testing.T) {
	get := `{kind: http, method: GET, url: "http://example.invalid/", spec: {policy: {rules: [{when: "{{ outcome.status == 'error' }}", then: {do: retry, attempts: 3, delay: 2}}]}}}`
	http := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
		if n == 1 {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "http", Message: "flaky", Retryable: true}}
		}
		return types.Outcome{Status: types.StatusOK, Result: int64(n)}
	}}
	env := controltest.NewEnv()
	w := newWorker(env, nil, http)
	w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 16, time.Minute, 16
	start(t, env, "ex1", chainSrc(5, "", "", get), nil)
	var atRetry string // s2's status in the store when s3's retry task was created
	env.Tasks.FailCreate = func(c types.Command) error {
		if c.Step == "s3" && c.Attempt == 2 {
			if s2 := env.State(context.Background(), "ex1").State.Steps["s2"]; s2 != nil {
				atRetry = string(s2.Status)
			}
		}
		return nil
	}
	deliver(t, w, take(t, env))
	if atRetry != string(types.StatusOK) {
		t.Fatalf("s3's retry task was created with s2 %q in the store, want its end committed first", atRetry)
	}
	st := status(t, env, "ex1")
	if st.Steps["s2"] == nil || st.Steps["s2"].Status != types.StatusOK || st.Steps["s3"] == nil {
		t.Fatalf("after the hand-off: s2 %+v, s3 %+v; want s1 and s2's ends committed and s3 running", st.Steps["s2"], st.Steps["s3"])
	}
	next := pending(env, isUnit)
	if len(next) != 1 || next[0].Step != "s3" || next[0].Attempt != 2 {
		t.Fatalf("pending units %+v, want s3's retry alone (no safety net beside it)", next)
	}
	env.Clock.Set(next[0].NotBefore)
	drain(t, env, w)
	if n := http.calls(""); n != 2 {
		t.Fatalf("the GET ran %d times, want twice", n)
	}
	wantEachStepOnce(t, env, 5)
}

// TestDeferredEndsAge: an end is deferred only while the first end
// waiting is at most control.MaxDeferAge old, so slow read-only steps
// still commit about once a second: six GETs of 400 ms each commit after
// the fourth (1.2 s after the first deferral) and at the end, twice; the
// same six taking no time commit once.
func TestDeferredEndsAge(t *testing.T) {
	get := `{kind: http, method: GET, url: "http://example.invalid/"}`
	for _, tc := range []struct {
		each    time.Duration
		commits int
	}{{0, 1}, {400 * time.Millisecond, 2}} {
		env := controltest.NewEnv()
		cs := &callStore{Store: env.Memory}
		env.Control = &control.Control{Store: cs, Bus: env.Bus, Tasks: env.Tasks, Now: env.Clock.Now, Source: "execute", Log: env.Log}
		http := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
			env.Clock.Set(env.Clock.Now().Add(tc.each))
			return types.Outcome{Status: types.StatusOK, Result: int64(n)}
		}}
		w := newWorker(env, nil, http)
		w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 16, time.Minute, 16
		start(t, env, "ex1", chainSrc(6, get, get, get, get, get, get), nil)
		launched := cs.calls("CompleteUnit") + cs.calls("ExecutionCheckpoint")
		deliver(t, w, take(t, env))
		if got := cs.calls("CompleteUnit") + cs.calls("ExecutionCheckpoint") - launched; got != tc.commits {
			t.Errorf("steps of %s: %d commits for 6 steps, want %d", tc.each, got, tc.commits)
		}
		wantEachStepOnce(t, env, 6)
	}
}

// TestDeferredContinuationGivenUp: a continued unit whose run fails after
// deferred ends is given up: the ends commit and the unit is released due
// at once (never lost between the chain's give-up and its final commit),
// and its delivery finishes the chain.
func TestDeferredContinuationGivenUp(t *testing.T) {
	for round := range 20 { // the give-up and the invocation's final commit race
		env, w, _ := deferEnv(t, chainSrc(4), 16, nil)
		failed := false
		t.Cleanup(faults.SetScript(func(point, _, step string) string {
			if point == "execute.start" && !failed && strings.Contains(step, "s3") {
				failed = true
				return "error"
			}
			return ""
		}))
		deliver(t, w, take(t, env))
		faults.SetScript(nil)
		if !failed {
			t.Fatal("s3's fault was never reached")
		}
		next := pending(env, isUnit)
		if len(next) != 1 || next[0].Step != "s3" || next[0].NotBefore.After(env.Clock.Now()) {
			t.Fatalf("round %d: pending units %+v, want s3's task due at once", round, next)
		}
		drain(t, env, w)
		wantEachStepOnce(t, env, 4)
	}
}

// TestDeferredEndsSettleAfterACancel: a continued unit that hands itself
// off (a retry) after its execution was canceled commits the deferred
// ends first (control.Settle), which no longer apply: the commit replays
// the first end's outbox without settling again (no deadlock), and the
// delivery answers.
func TestDeferredEndsSettleAfterACancel(t *testing.T) {
	ctx := context.Background()
	get := `{kind: http, method: GET, url: "http://example.invalid/", spec: {policy: {rules: [{when: "{{ outcome.status == 'error' }}", then: {do: retry, attempts: 3, delay: 2}}]}}}`
	env := controltest.NewEnv()
	http := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
		if _, err := env.Control.Cancel(ctx, "ex1", "test", "test"); err != nil {
			t.Errorf("cancel: %v", err)
		}
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "http", Message: "flaky", Retryable: true}}
	}}
	w := newWorker(env, nil, http)
	w.ContinueUnits, w.ContinueBudget, w.ContinueDefer = 16, time.Minute, 16
	start(t, env, "ex1", chainSrc(4, "", "", get), nil)
	done := make(chan error, 1)
	cmd := take(t, env)
	go func() { done <- w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery did not answer in 10 s (a settle inside a settle?)")
	}
	drain(t, env, w)
	if st := status(t, env, "ex1"); st.Status != engine.ExecCanceled {
		t.Fatalf("execution %s, want canceled", st.Status)
	}
}
