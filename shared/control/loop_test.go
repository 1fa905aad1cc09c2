package control_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// loopPlaybook is a loop step over workload.items followed by step after.
func loopPlaybook(mode string, maxInFlight int, failureMode string) string {
	policy := ""
	if failureMode != "" {
		policy = "\n    spec:\n      policy:\n        failure: {mode: " + failureMode + "}"
	}
	return fmt.Sprintf(`
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop, path: tests/loop}
workflow:
  - step: start%s
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: %s, max_in_flight: %d}
    tool: {kind: noop}
    next:
      arcs:
        - step: after
  - step: after
    tool: {kind: noop}
`, policy, mode, maxInFlight)
}

func intItems(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = int64(i * 10)
	}
	return out
}

// endIteration records the end of an iteration unit the way execute does
// (IterationEnd, then IterationEnded) and returns the record.
func endIteration(ctx context.Context, env *controltest.Env, cmd types.Command, ok bool) (engine.IterationRecord, error) {
	rec := engine.IterationRecord{Index: *cmd.Iteration, Status: types.StatusOK, Result: map[string]any{"i": int64(*cmd.Iteration)}, Clock: cmd.Clock + 3}
	if !ok {
		rec.Status, rec.Result, rec.Error = types.StatusError, nil, map[string]any{"kind": "python", "message": fmt.Sprintf("iteration %d failed", *cmd.Iteration)}
	}
	if _, err := env.Memory.IterationEnd(ctx, store.IterationEndParams{ExecutionID: cmd.ExecutionID, LoopKey: engine.LoopKey(cmd.Step, cmd.StepRun), Record: rec}); err != nil {
		return rec, err
	}
	return rec, env.Control.IterationEnded(ctx, cmd, rec)
}

func iterationTasks(env *controltest.Env) map[int]types.Command {
	out := map[int]types.Command{}
	for _, c := range env.Tasks.Created() {
		if c.Step == "start" && c.Iteration != nil {
			if _, dup := out[*c.Iteration]; dup {
				panic(fmt.Sprintf("iteration %d created twice", *c.Iteration))
			}
			out[*c.Iteration] = c
		}
	}
	return out
}

// TestLoopLanes: each ended iteration dispatches its lane's next one
// (index + lanes); the loop completes once every lane is done, with the
// results in iteration order, and the next step is scheduled.
func TestLoopLanes(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	launch(t, env, "ex1", "", loopPlaybook("parallel", 2, ""), map[string]any{"items": intItems(5)})
	tasks := iterationTasks(env)
	if len(tasks) != 2 || tasks[0].Item != int64(0) || tasks[1].Item != int64(10) {
		t.Fatalf("first iterations %+v; want 0 and 1", tasks)
	}
	steps := []struct {
		end      int
		wantNext []int // iterations that exist after it
	}{
		{0, []int{0, 1, 2}},
		{1, []int{0, 1, 2, 3}},
		{3, []int{0, 1, 2, 3}}, // lane 1 done (3+2 ≥ 5)
		{2, []int{0, 1, 2, 3, 4}},
	}
	for _, s := range steps {
		if _, err := endIteration(ctx, env, iterationTasks(env)[s.end], true); err != nil {
			t.Fatalf("end %d: %v", s.end, err)
		}
		got := iterationTasks(env)
		if len(got) != len(s.wantNext) {
			t.Fatalf("after iteration %d: iterations %v, want %v", s.end, keys(got), s.wantNext)
		}
		if len(env.Bus.EventsOf("ex1", types.EvLoopDone)) != 0 {
			t.Fatalf("loop.done before the last lane ended (after %d)", s.end)
		}
	}
	if it := iterationTasks(env)[4]; it.Item != int64(40) || it.StepRun != 1 || it.LoopTotal != 5 {
		t.Fatalf("iteration 4 command %+v", it)
	}
	if _, err := endIteration(ctx, env, iterationTasks(env)[4], true); err != nil {
		t.Fatal(err)
	}
	done := env.Bus.EventsOf("ex1", types.EvLoopDone)
	if len(done) != 1 {
		t.Fatalf("loop.done published %d times, want once", len(done))
	}
	res, _ := done[0].Payload["result"].(map[string]any)
	want := []any{map[string]any{"i": int64(0)}, map[string]any{"i": int64(1)}, map[string]any{"i": int64(2)}, map[string]any{"i": int64(3)}, map[string]any{"i": int64(4)}}
	if !reflect.DeepEqual(res["results"], want) {
		t.Fatalf("loop result %v, want %v", res["results"], want)
	}
	st := state(t, env, "ex1")
	if st.Steps["start"].Status != types.StatusOK || st.Steps["after"] == nil {
		t.Fatalf("steps after the loop: %v", st.Steps)
	}
	// The iterations' profile (when they ended) travels in loop.done and
	// stays in the loop's status.
	prof := st.Steps["start"].Loop.Profile
	if prof == nil || done[0].Payload["profile"] == nil {
		t.Fatalf("no loop profile: state %+v, loop.done payload %v", st.Steps["start"].Loop, done[0].Payload)
	}
	n := 0
	for _, c := range prof.Ended {
		n += c
	}
	if n != 5 || prof.Failed != nil || prof.FirstUS <= 0 || prof.LastUS < prof.FirstUS {
		t.Fatalf("loop profile %+v: want the 5 iterations, none failed", prof)
	}
	if len(commandsOf(env.Tasks.Created(), "after")) != 1 {
		t.Fatal("the step after the loop was not dispatched")
	}
	// loop.done is stamped after every iteration.
	if done[0].Clock <= tasksMaxClock(env)+3 {
		t.Fatalf("loop.done clock %d not after the iterations' clocks", done[0].Clock)
	}
}

func tasksMaxClock(env *controltest.Env) int64 {
	var m int64
	for _, c := range env.Tasks.Created() {
		if c.Iteration != nil {
			m = max(m, c.Clock)
		}
	}
	return m
}

func keys(m map[int]types.Command) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// countingStore counts the applied checkpoints.
type countingStore struct {
	store.Store
	mu          sync.Mutex
	checkpoints int
}

func (c *countingStore) ExecutionCheckpoint(ctx context.Context, p store.CheckpointParams) (store.Checkpoint, error) {
	cp, err := c.Store.ExecutionCheckpoint(ctx, p)
	if err == nil && cp.Applied {
		c.mu.Lock()
		c.checkpoints++
		c.mu.Unlock()
	}
	return cp, err
}

// CompleteUnit counts the loop ends a unit's completion applied.
func (c *countingStore) CompleteUnit(ctx context.Context, p store.CompleteUnitParams) (store.UnitCompletion, error) {
	res, err := c.Store.CompleteUnit(ctx, p)
	if err == nil && res.Checkpoint.Applied {
		c.mu.Lock()
		c.checkpoints++
		c.mu.Unlock()
	}
	return res, err
}

// TestLoopCompletesOnceWhenLanesFinishTogether: every lane's last
// iteration ends at the same moment; each may see all lanes done, but only
// the owner of the loop_done marker assembles the result and applies
// loop.done (one applied checkpoint); a redelivery of any of them changes nothing.
func TestLoopCompletesOnceWhenLanesFinishTogether(t *testing.T) {
	for round := range 20 {
		ctx := context.Background()
		env := controltest.NewEnv()
		launch(t, env, "ex1", "", loopPlaybook("parallel", 4, ""), map[string]any{"items": intItems(4)})
		cs := &countingStore{Store: env.Memory}
		env.Control.Store = cs
		tasks := iterationTasks(env)
		var wg sync.WaitGroup
		errc := make(chan error, len(tasks))
		for _, cmd := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := endIteration(ctx, env, cmd, true)
				errc <- err
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if n := len(env.Bus.EventsOf("ex1", types.EvLoopDone)); n != 1 {
			t.Fatalf("round %d: loop.done %d times, want once", round, n)
		}
		if cs.checkpoints != 1 {
			t.Fatalf("round %d: %d checkpoints, want 1 (only the loop_done owner applies)", round, cs.checkpoints)
		}
		// Redeliveries of every last iteration: nothing new is applied.
		for _, cmd := range tasks {
			rec := engine.IterationRecord{Index: *cmd.Iteration, Status: types.StatusOK, Result: map[string]any{"i": int64(*cmd.Iteration)}, Clock: cmd.Clock + 3}
			if err := env.Control.IterationEnded(ctx, cmd, rec); err != nil {
				t.Fatalf("round %d: redelivery of %d: %v", round, *cmd.Iteration, err)
			}
		}
		if cs.checkpoints != 1 || len(commandsOf(env.Tasks.Created(), "after")) != 1 {
			t.Fatalf("round %d: redeliveries made %d checkpoints, %d units of after", round, cs.checkpoints, len(commandsOf(env.Tasks.Created(), "after")))
		}
		if c := env.Bus.Conflicts(); len(c) > 0 {
			t.Fatalf("round %d: %v", round, c)
		}
	}
}

// TestLoopFailureModes: under fail_fast a failed iteration fails the step
// run (no further iteration starts, the execution halts); under
// best_effort the lane goes on and the failure becomes an error entry of
// the loop's result.
func TestLoopFailureModes(t *testing.T) {
	t.Run("fail_fast", func(t *testing.T) {
		ctx := context.Background()
		env := controltest.NewEnv()
		launch(t, env, "ex1", "", loopPlaybook("sequential", 1, "fail_fast"), map[string]any{"items": intItems(3)})
		if _, err := endIteration(ctx, env, iterationTasks(env)[0], false); err != nil {
			t.Fatal(err)
		}
		if got := iterationTasks(env); len(got) != 1 {
			t.Fatalf("iterations %v after a fail_fast failure; want only 0", keys(got))
		}
		st := state(t, env, "ex1")
		if st.Steps["start"].Status != types.StatusFailed || st.Status != engine.ExecFailed {
			t.Fatalf("step %s, execution %s; want failed, failed", st.Steps["start"].Status, st.Status)
		}
		failed := env.Bus.EventsOf("ex1", types.EvStepFailed)
		if len(failed) != 1 || failed[0].Iteration == nil || *failed[0].Iteration != 0 {
			t.Fatalf("step.failed %+v; want one naming iteration 0", failed)
		}
	})
	t.Run("best_effort", func(t *testing.T) {
		ctx := context.Background()
		env := controltest.NewEnv()
		launch(t, env, "ex1", "", loopPlaybook("sequential", 1, "best_effort"), map[string]any{"items": intItems(3)})
		for i := range 3 {
			cmd, ok := iterationTasks(env)[i]
			if !ok {
				t.Fatalf("iteration %d not dispatched", i)
			}
			if _, err := endIteration(ctx, env, cmd, i != 1); err != nil {
				t.Fatal(err)
			}
		}
		st := state(t, env, "ex1")
		if st.Steps["start"].Status != types.StatusOK {
			t.Fatalf("step %s, want ok", st.Steps["start"].Status)
		}
		done := env.Bus.EventsOf("ex1", types.EvLoopDone)
		if len(done) != 1 {
			t.Fatalf("loop.done %d times", len(done))
		}
		res := done[0].Payload["result"].(map[string]any)["results"].([]any)
		entry, _ := res[1].(map[string]any)
		if len(res) != 3 || entry["status"] != "error" || !strings.Contains(fmt.Sprint(entry["error"]), "iteration 1 failed") {
			t.Fatalf("results %v; want the failure of iteration 1 as an error entry", res)
		}
	})
}

// TestLargeLoopItemsOffloaded: a loop whose items are over ItemsInlineMax
// keeps a reference in its plan (the items go to the results tier); items
// over ItemInlineMax are left out of the Cloud Task bodies; another
// instance loads the plan through the reference.
func TestLargeLoopItemsOffloaded(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	off := &controltest.Offloader{InlineMax: control.ItemsInlineMax}
	env.Control.Results = off
	big := strings.Repeat("x", control.ItemInlineMax+1)
	items := []any{big + "0", "small", big + "2", big + "3", big + "4"}
	launch(t, env, "ex1", "", loopPlaybook("parallel", 2, ""), map[string]any{"items": items})
	coords := off.Offloaded()
	if len(coords) != 1 || coords[0].Step != "start.items" || coords[0].Frame != 1 {
		t.Fatalf("offloaded %+v; want the items of start run 1", coords)
	}
	plan, err := env.Memory.LoopGet(ctx, "ex1", "start.1")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Items != nil || plan.ItemsRef == nil || plan.Total != 5 {
		t.Fatalf("stored plan items %d, ref %v, total %d; want a reference only", len(plan.Items), plan.ItemsRef, plan.Total)
	}
	tasks := iterationTasks(env)
	if c := tasks[0]; c.Item != nil || !c.ItemRef {
		t.Fatalf("iteration 0 body carries its large item (item_ref %v)", c.ItemRef)
	}
	if c := tasks[1]; c.Item != "small" || c.ItemRef {
		t.Fatalf("iteration 1 body: item %v item_ref %v; want the small item inline", c.Item, c.ItemRef)
	}
	// Another instance (no plan cache) resolves the reference.
	other := &control.Control{Store: env.Memory, Bus: env.Bus, Tasks: env.Tasks, Results: off, Now: env.Clock.Now, Source: "execute"}
	p, err := other.Plan(ctx, "ex1", "start.1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Items, items) {
		t.Fatalf("resolved items differ from the workload's")
	}
	// Without a results store the reference cannot be read: a clear error.
	bare := &control.Control{Store: env.Memory, Bus: env.Bus, Tasks: env.Tasks, Now: env.Clock.Now, Source: "execute"}
	if _, err := bare.Plan(ctx, "ex1", "start.1"); err == nil || !strings.Contains(err.Error(), "results") {
		t.Fatalf("plan without a results store: %v", err)
	}
	// The lane's next iteration (large item) is dispatched without it too.
	if _, err := endIteration(ctx, env, tasks[0], true); err != nil {
		t.Fatal(err)
	}
	if c := iterationTasks(env)[2]; c.Item != nil || !c.ItemRef {
		t.Fatalf("iteration 2 body carries its large item")
	}
}

// TestGroupFirst: an end carrying deferred ends reports whether its call
// recorded them (IterationEnded.GroupFirst), whether they join its own
// record's group document or, when it cannot join (a failed end), are
// committed before it in one of their own; the same ends again report
// false — the worker makes the group's loop item counts on it, once.
func TestGroupFirst(t *testing.T) {
	ctx := context.Background()
	src := strings.Replace(loopPlaybook("parallel", 1, "best_effort"), "max_in_flight: 1}", "max_in_flight: 1, chunk_size: 10}", 1)
	env := controltest.NewEnv()
	launch(t, env, "ex1", "", src, map[string]any{"items": intItems(10)})
	first := iterationTasks(env)[0]
	at := func(i int) types.Command {
		c := first
		c.Iteration, c.Item = &i, int64(i*10)
		return c
	}
	ok := func(i int) engine.IterationRecord {
		return engine.IterationRecord{Index: i, Status: types.StatusOK, Result: int64(i), Clock: first.Clock + int64(i) + 1}
	}
	inline := func() bool { return true }
	d, err := env.Control.CompleteIteration(ctx, control.IterationEnd{Cmd: at(0), Record: ok(0), Inline: inline})
	if err != nil || !d.Deferred || d.Bytes == 0 {
		t.Fatalf("iteration 0's end: %+v, %v; want deferred with its size", d, err)
	}
	group := []engine.IterationRecord{ok(0)}
	failed := engine.IterationRecord{Index: 1, Status: types.StatusError, Error: map[string]any{"message": "x"}, Clock: first.Clock + 2}
	for round, want := range []bool{true, false} {
		d, err := env.Control.CompleteIteration(ctx, control.IterationEnd{Cmd: at(1), Record: failed, Inline: inline, Group: group, GroupBytes: d.Bytes})
		if err != nil || d.Deferred || d.GroupFirst != want || d.First != want {
			t.Fatalf("round %d: a failed end with a group: %+v, %v; want GroupFirst and First %v", round, d, err, want)
		}
	}
	group = []engine.IterationRecord{ok(2), ok(3)}
	for round, want := range []bool{true, false} {
		d, err := env.Control.CompleteIteration(ctx, control.IterationEnd{Cmd: at(4), Record: ok(4), Group: group})
		if err != nil || d.Deferred || d.GroupFirst != want || d.First != want {
			t.Fatalf("round %d: an ok end joining its group: %+v, %v; want GroupFirst and First %v", round, d, err, want)
		}
	}
	recs, err := env.Memory.IterationList(ctx, "ex1", engine.LoopKey("start", 1))
	if err != nil || len(recs) != 5 {
		t.Fatalf("IterationList: %d records, %v; want 0 to 4", len(recs), err)
	}
}
