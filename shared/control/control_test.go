package control_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

const chain = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: chain, path: tests/chain}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs:
        - step: use
  - step: use
    tool: {kind: noop}
    next:
      arcs:
        - step: last
  - step: last
    tool: {kind: noop}
`

const single = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: single, path: tests/single}
workflow:
  - step: start
    tool: {kind: noop}
`

var errDown = errs.New(errs.Unavailable, "controltest: injected outage")

// unitEnd returns the events a unit of cmd would publish when it ends:
// step.started and the boundary (step.done, or step.failed when !ok),
// stamped after the command's clock like the worker stamps them.
func unitEnd(cmd types.Command, ok bool, result any) []types.Event {
	st := types.NewEvent(types.EvStepStarted, cmd.ExecutionID, "execute", controltest.T0, cmd.UnitKey(), "")
	st.Step, st.StepRun = cmd.Step, cmd.StepRun
	typ, status := types.EvStepDone, types.StatusOK
	payload := map[string]any{"result": result}
	if !ok {
		typ, status = types.EvStepFailed, types.StatusFailed
		payload = map[string]any{"error": map[string]any{"kind": "python", "message": "boom"}}
	}
	b := types.NewEvent(typ, cmd.ExecutionID, "execute", controltest.T0, cmd.UnitKey(), "")
	b.Step, b.StepRun, b.Status, b.Payload = cmd.Step, cmd.StepRun, status, payload
	evs := []types.Event{st, b}
	types.StampClocks(evs, cmd.Clock)
	return evs
}

// endParams is the ApplyParams of the end of the unit cmd (what execute
// passes to Apply).
func endParams(cmd types.Command, evs []types.Event) control.ApplyParams {
	return control.ApplyParams{ExecutionID: cmd.ExecutionID, Event: evs[len(evs)-1],
		OutboxID: control.EndOutboxID(cmd.ExecutionID, cmd.Step, cmd.StepRun), Events: evs}
}

func commandsOf(cmds []types.Command, step string) []types.Command {
	var out []types.Command
	for _, c := range cmds {
		if c.Step == step && c.Kind == types.CmdRunStep {
			out = append(out, c)
		}
	}
	return out
}

func launch(t *testing.T, env *controltest.Env, id, parent, src string, wl map[string]any) {
	t.Helper()
	if err := env.Launch(context.Background(), id, parent, src, wl); err != nil {
		t.Fatalf("launch %s: %v", id, err)
	}
}

func state(t *testing.T, env *controltest.Env, id string) *engine.State {
	t.Helper()
	rec := env.State(context.Background(), id)
	if rec == nil {
		t.Fatalf("execution %s not readable", id)
	}
	return rec.State
}

// batchesWith returns the distinct ids of the batches that carried eventID.
func batchesWith(p *controltest.Publisher, eventID string) []string {
	var ids []string
	for _, b := range p.Batches() {
		for _, e := range b.Events {
			if e.EventID == eventID && !slices.Contains(ids, b.ID) {
				ids = append(ids, b.ID)
			}
		}
	}
	return ids
}

func TestApplyStart(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	launch(t, env, "ex1", "", chain, nil)
	st := state(t, env, "ex1")
	if st.Status != engine.ExecRunning || st.Steps["start"] == nil || st.Steps["start"].Status != types.StatusRunning {
		t.Fatalf("after start: status %s steps %v; want running with start running", st.Status, st.Steps)
	}
	if got := commandsOf(env.Tasks.Created(), "start"); len(got) != 1 || got[0].StepRun != 1 || got[0].StateVersion != st.Version {
		t.Fatalf("start units %+v; want one unit of run 1 at version %d", got, st.Version)
	}
	for _, typ := range []types.EventType{types.EvPlaybookStarted, types.EvWorkflowStarted, types.EvStepScheduled} {
		if n := len(env.Bus.EventsOf("ex1", typ)); n != 1 {
			t.Fatalf("%s published %d times, want once", typ, n)
		}
	}
	// A redelivered request does not start the execution again.
	req := env.Bus.EventsOf("ex1", types.EvExecutionRequested)[0]
	applied, err := env.Control.Apply(ctx, control.ApplyParams{ExecutionID: "ex1", Event: req, OutboxID: req.EventID})
	if err != nil || applied {
		t.Fatalf("second start: applied %v err %v; want not applied, no error", applied, err)
	}
	if st2 := state(t, env, "ex1"); st2.Version != st.Version {
		t.Fatalf("second start moved the state from version %d to %d", st.Version, st2.Version)
	}
	if n := len(env.Tasks.Created()); n != 1 {
		t.Fatalf("%d tasks after the repeated start, want 1", n)
	}
	if c := env.Bus.Conflicts(); len(c) > 0 {
		t.Fatalf("replayed events differ: %v", c)
	}
	// An unknown execution is NotFound.
	if _, err := env.Control.Apply(ctx, control.ApplyParams{ExecutionID: "nope", Event: req, OutboxID: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("apply to an unknown execution: %v, want NotFound", err)
	}
}

// TestApplyReplaysOutboxAfterCrash: a crash between the commit and the
// flush (the task creation fails once) leaves the outbox; the redelivered
// unit does not apply its boundary again but replays the outbox, so the
// next unit is created and the transition's events published, each once
// by id.
func TestApplyReplaysOutboxAfterCrash(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	launch(t, env, "ex1", "", chain, nil)
	startCmd := commandsOf(env.Tasks.Created(), "start")[0]
	before := state(t, env, "ex1").Version
	evs := unitEnd(startCmd, true, map[string]any{"x": int64(1)})
	p := endParams(startCmd, evs)

	env.Tasks.FailCreate = controltest.FailTimes[types.Command](1, errDown, nil)
	applied, err := env.Control.Apply(ctx, p)
	if !applied || !errors.Is(err, errDown) {
		t.Fatalf("first apply: applied %v err %v; want applied with the task outage", applied, err)
	}
	st := state(t, env, "ex1")
	if st.Version != before+1 || st.Steps["start"].Status != types.StatusOK || st.Steps["use"] == nil {
		t.Fatalf("commit not durable: version %d (was %d), steps %v", st.Version, before, st.Steps)
	}
	if got := commandsOf(env.Tasks.Created(), "use"); len(got) != 0 {
		t.Fatalf("next unit created despite the outage: %+v", got)
	}
	if got := env.Bus.EventsOf("ex1", types.EvStepDone); len(got) != 0 {
		t.Fatalf("transition published before its flush: %+v", got)
	}

	for round := 1; round <= 2; round++ {
		applied, err = env.Control.Apply(ctx, p)
		if applied || err != nil {
			t.Fatalf("redelivery %d: applied %v err %v; want not applied, no error", round, applied, err)
		}
		if v := state(t, env, "ex1").Version; v != before+1 {
			t.Fatalf("redelivery %d applied the boundary again: version %d", round, v)
		}
		use := commandsOf(env.Tasks.Created(), "use")
		if len(use) != 1 || use[0].StepRun != 1 {
			t.Fatalf("redelivery %d: units of use %+v; want exactly one", round, use)
		}
		sched := env.Bus.EventsOf("ex1", types.EvStepScheduled)
		var useSched []types.Event
		for _, e := range sched {
			if e.Step == "use" {
				useSched = append(useSched, e)
			}
		}
		if len(useSched) != 1 {
			t.Fatalf("redelivery %d: step.scheduled of use %d times by id, want 1", round, len(useSched))
		}
		// A replay republishes the same batch (same id): the projection
		// keeps it once.
		if ids := batchesWith(env.Bus, useSched[0].EventID); len(ids) != 1 {
			t.Fatalf("redelivery %d: transition events in batches %v; want one batch id", round, ids)
		}
		if got := env.Bus.EventsOf("ex1", types.EvStepDone); len(got) != 1 || got[0].EventID != evs[1].EventID {
			t.Fatalf("redelivery %d: step.done by id %+v; want the unit's one", round, got)
		}
	}
	if c := env.Bus.Conflicts(); len(c) > 0 {
		t.Fatalf("replayed events differ from the first copies: %v", c)
	}
}

// TestApplyStaleAndFutureRuns: boundaries of a run that is not the step's
// current one do not apply and change nothing.
func TestApplyStaleAndFutureRuns(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	launch(t, env, "ex1", "", chain, nil)
	startCmd := commandsOf(env.Tasks.Created(), "start")[0]
	if _, err := env.Control.Apply(ctx, endParams(startCmd, unitEnd(startCmd, true, nil))); err != nil {
		t.Fatal(err)
	}
	v := state(t, env, "ex1").Version
	cases := []struct {
		name string
		step string
		run  int
	}{
		{"a later run of an ended step", "start", 2},
		{"a run of a step never scheduled", "last", 1},
		{"a run of a step not started yet", "use", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := types.Command{ExecutionID: "ex1", Step: c.step, StepRun: c.run, Clock: 1}
			evs := unitEnd(cmd, true, nil)
			applied, err := env.Control.Apply(ctx, endParams(cmd, evs))
			if applied || err != nil {
				t.Fatalf("applied %v err %v; want not applied", applied, err)
			}
			if got := state(t, env, "ex1").Version; got != v {
				t.Fatalf("version %d, want %d", got, v)
			}
		})
	}
}

func TestStop(t *testing.T) {
	cases := []struct {
		name       string
		event      func(id string) types.Event
		wantStatus types.Status
	}{
		{"cancel", func(id string) types.Event {
			return control.CancelEvent(id, "operator", "api", controltest.T0)
		}, engine.ExecCanceled},
		{"deadline", func(id string) types.Event {
			ev := types.NewEvent(types.EvExecutionTimedOut, id, "execute", controltest.T0)
			ev.Payload = map[string]any{"message": "ran past its deadline"}
			return ev
		}, engine.ExecFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			env := controltest.NewEnv()
			launch(t, env, "parent", "", single, nil)
			launch(t, env, "child", "parent", single, nil)
			launch(t, env, "other", "", single, nil)
			clockBefore := state(t, env, "parent").Clock
			applied, err := env.Control.Stop(ctx, "parent", c.event("parent"))
			if !applied || err != nil {
				t.Fatalf("stop: applied %v err %v", applied, err)
			}
			st := state(t, env, "parent")
			if st.Status != c.wantStatus || st.Active != 0 || st.Steps["start"].Status != types.StatusCanceled {
				t.Fatalf("parent status %s active %d start %s; want %s, 0, canceled", st.Status, st.Active, st.Steps["start"].Status, c.wantStatus)
			}
			canceled := env.Bus.EventsOf("parent", types.EvStepCanceled)
			if len(canceled) != 1 || canceled[0].Step != "start" || canceled[0].Status != types.StatusCanceled {
				t.Fatalf("step.canceled events %+v; want one for start", canceled)
			}
			stopEv := env.Bus.Events("parent")
			var trigger types.Event
			for _, e := range stopEv {
				if e.EventType == types.EvCancelRequested || e.EventType == types.EvExecutionTimedOut {
					trigger = e
				}
			}
			if trigger.Clock <= clockBefore || canceled[0].Clock <= trigger.Clock {
				t.Fatalf("clocks: state %d, stop event %d, step.canceled %d; want increasing", clockBefore, trigger.Clock, canceled[0].Clock)
			}
			if ch := state(t, env, "child"); ch.Status != engine.ExecCanceled {
				t.Fatalf("child status %s, want canceled", ch.Status)
			}
			if o := state(t, env, "other"); o.Status != engine.ExecRunning {
				t.Fatalf("unrelated execution %s, want running", o.Status)
			}
			if d := env.Tasks.DeletedExecutions(); !slices.Contains(d, "parent") || !slices.Contains(d, "child") || slices.Contains(d, "other") {
				t.Fatalf("TaskDeleteExecution calls %v; want parent and child only", d)
			}
			for _, cmd := range env.Tasks.Pending() {
				if cmd.ExecutionID != "other" {
					t.Fatalf("pending task of a stopped execution: %+v", cmd)
				}
			}
			// Stopping again applies nothing and still cleans up.
			calls := len(env.Tasks.DeletedExecutions())
			applied, err = env.Control.Stop(ctx, "parent", c.event("parent"))
			if applied || err != nil {
				t.Fatalf("second stop: applied %v err %v; want not applied", applied, err)
			}
			if len(env.Tasks.DeletedExecutions()) <= calls {
				t.Fatal("second stop did not delete pending tasks again")
			}
			// The log read back keeps the stop event where it applied:
			// after the execution started, before its step was canceled.
			pos := map[types.EventType]int{}
			for i, e := range env.Bus.Log("parent") {
				if _, ok := pos[e.EventType]; !ok {
					pos[e.EventType] = i
				}
				if e.EventID == trigger.EventID && e.Clock != trigger.Clock {
					t.Fatalf("the log keeps the stop event at clock %d, it applied at %d", e.Clock, trigger.Clock)
				}
			}
			if !(pos[types.EvPlaybookStarted] < pos[trigger.EventType] && pos[trigger.EventType] < pos[types.EvStepCanceled]) {
				t.Fatalf("log order: started %d, stop %d, step.canceled %d", pos[types.EvPlaybookStarted], pos[trigger.EventType], pos[types.EvStepCanceled])
			}
		})
	}
}

func TestDispatchFanOut(t *testing.T) {
	mk := func(n int) []types.Command {
		out := make([]types.Command, n)
		for i := range out {
			out[i] = types.Command{Kind: types.CmdRunStep, ExecutionID: "ex1", Step: "s", StepRun: 1, Iteration: types.IntPtr(i), Attempt: 1}
		}
		return out
	}
	cases := []struct {
		name              string
		bulk, n           int
		direct, published int
	}{
		{"none", 0, 0, 0, 0},
		{"one", 0, 1, 1, 0},
		{"default bulk, at the limit", 0, control.DefaultBulkFanOut, control.DefaultBulkFanOut, 0},
		{"default bulk, over the limit", 0, control.DefaultBulkFanOut + 1, 0, control.DefaultBulkFanOut + 1},
		{"bulk 3, three", 3, 3, 3, 0},
		{"bulk 3, four", 3, 4, 0, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := controltest.NewEnv()
			env.Control.BulkFanOut = c.bulk
			if err := env.Control.Dispatch(context.Background(), mk(c.n)...); err != nil {
				t.Fatal(err)
			}
			if got := len(env.Tasks.Created()); got != c.direct {
				t.Fatalf("%d tasks created directly, want %d", got, c.direct)
			}
			if got := len(env.Bus.Commands()); got != c.published {
				t.Fatalf("%d commands published, want %d", got, c.published)
			}
		})
	}
	t.Run("a failed create fails the dispatch; a retry creates the rest once", func(t *testing.T) {
		env := controltest.NewEnv()
		env.Tasks.FailCreate = controltest.FailTimes(1, errDown, func(c types.Command) bool { return *c.Iteration == 2 })
		cmds := mk(4)
		if err := env.Control.Dispatch(context.Background(), cmds...); !errors.Is(err, errDown) {
			t.Fatalf("dispatch: %v, want the outage", err)
		}
		if err := env.Control.Dispatch(context.Background(), cmds...); err != nil {
			t.Fatal(err)
		}
		if got := len(env.Tasks.Created()); got != 4 {
			t.Fatalf("%d tasks, want 4", got)
		}
	})
}

// TestLoopFanOutOverBulkGoesThroughCommands: a loop whose first
// transition creates more units than BulkFanOut publishes them on the
// commands topic.
func TestLoopFanOutOverBulkGoesThroughCommands(t *testing.T) {
	env := controltest.NewEnv()
	items := make([]any, 12)
	for i := range items {
		items[i] = int64(i)
	}
	launch(t, env, "ex1", "", loopPlaybook("parallel", 10, ""), map[string]any{"items": items})
	if n := len(commandsOf(env.Tasks.Created(), "start")); n != 0 {
		t.Fatalf("%d iteration tasks created directly, want 0", n)
	}
	cmds := env.Bus.Commands()
	if len(cmds) != 10 {
		t.Fatalf("%d commands published, want 10 (one per lane)", len(cmds))
	}
	for i, c := range cmds {
		if c.Iteration == nil || *c.Iteration != i {
			t.Fatalf("command %d is iteration %v", i, c.Iteration)
		}
	}
}

// TestLamportClocks runs the chain through its boundaries and checks that
// every published event's causes have smaller clocks: within a batch,
// events are in causal order; a transition's events follow the boundary it
// applies; the units a transition creates carry its last clock; the
// execution's clock is its last event's.
func TestLamportClocks(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	launch(t, env, "ex1", "", chain, nil)
	for _, step := range []string{"start", "use", "last"} {
		cmd := commandsOf(env.Tasks.Created(), step)[0]
		if _, err := env.Control.Apply(ctx, endParams(cmd, unitEnd(cmd, true, step))); err != nil {
			t.Fatal(err)
		}
	}
	if st := state(t, env, "ex1"); st.Status != engine.ExecOK {
		t.Fatalf("status %s, want ok", st.Status)
	}
	var maxClock int64
	for _, b := range env.Bus.Batches() {
		for i := 1; i < len(b.Events); i++ {
			if b.Events[i].Clock <= b.Events[i-1].Clock {
				t.Fatalf("batch %s: %s clock %d after %s clock %d", b.ID, b.Events[i].EventType, b.Events[i].Clock, b.Events[i-1].EventType, b.Events[i-1].Clock)
			}
		}
		for _, e := range b.Events {
			maxClock = max(maxClock, e.Clock)
		}
	}
	events := env.Bus.Events("ex1")
	sched := map[string]types.Event{}
	for _, e := range events {
		if e.EventType == types.EvStepScheduled {
			sched[e.Step] = e
		}
	}
	for _, cmd := range env.Tasks.Created() {
		s, ok := sched[cmd.Step]
		if !ok || cmd.Clock < s.Clock {
			t.Fatalf("unit of %s has clock %d, its step.scheduled %d", cmd.Step, cmd.Clock, s.Clock)
		}
	}
	for _, e := range events {
		if e.EventType == types.EvStepStarted {
			if s := sched[e.Step]; e.Clock <= s.Clock {
				t.Fatalf("step.started of %s at %d, not after its step.scheduled at %d", e.Step, e.Clock, s.Clock)
			}
		}
	}
	fin := env.Bus.EventsOf("ex1", types.EvPlaybookFinished)
	if len(fin) != 1 || fin[0].Clock != maxClock {
		t.Fatalf("playbook.finished %+v; want one with the largest clock %d", fin, maxClock)
	}
	if st := state(t, env, "ex1"); st.Clock != maxClock {
		t.Fatalf("state clock %d, last event %d", st.Clock, maxClock)
	}
	ordered := make([]types.Projected, len(events))
	for i, e := range events {
		ordered[i] = types.Projected{Event: e, BatchID: fmt.Sprint(i)}
	}
	if o := types.EventsInOrder(ordered); o[0].EventType != types.EvExecutionRequested || o[len(o)-1].EventType != types.EvPlaybookFinished {
		t.Fatalf("causal order starts with %s and ends with %s", o[0].EventType, o[len(o)-1].EventType)
	}
}
