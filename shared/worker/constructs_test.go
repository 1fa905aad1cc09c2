package worker

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// Iteration ctx patches reach the execution's ctx when the loop ends, as
// NoETL merges each task sequence's ctx into the execution's variables
// (noetl/core/dsl/engine/executor/events.py); the merge order is the
// iteration index (engine.LoopCtxPatch).

const ctxLoopSequential = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: ctxloop}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: item
    tool:
      - add:
          kind: python
          code: "result = item"
          input: {item: "{{ item }}"}
          set:
            ctx.sum: "{{ (ctx.sum | default(0)) + item }}"
            ctx.last: "{{ item }}"
    next:
      arcs: [{step: after}]
  - step: after
    tool: {kind: python, code: "result = 1", input: {seen: "{{ ctx.sum }}"}}
`

// TestIterationCtxPatchSequential: each iteration of a sequential loop
// sees the ctx patches of the ones before it, and the execution's ctx holds
// them all when the loop ends.
func TestIterationCtxPatchSequential(t *testing.T) {
	var mu sync.Mutex
	var seen []any
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		mu.Lock()
		defer mu.Unlock()
		c, _ := req.Context["ctx"].(map[string]any)
		seen = append(seen, c["sum"])
		return types.Outcome{Status: types.StatusOK, Result: req.Args["item"]}
	}}
	env, w := setup(t, py, ctxLoopSequential, map[string]any{"items": []any{int64(1), int64(2), int64(3)}})
	drain(t, env, w)
	wantOK(t, env)
	st := status(t, env, "ex1")
	if st.Ctx["sum"] != int64(6) || st.Ctx["last"] != int64(3) {
		t.Fatalf("ctx = %v, want sum 6, last 3", st.Ctx)
	}
	// Iterations 0, 1, 2 saw sum nil, 1, 3; the step after the loop 6.
	if want := []any{nil, int64(1), int64(3), int64(6)}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("ctx.sum seen by the tasks = %v, want %v", seen, want)
	}
}

// TestIterationCtxPatchParallelMergedByIndex: a parallel loop that opts in
// with allow_set_ctx merges its iterations' patches by iteration index
// (a later index wins), whatever order the iterations end in.
func TestIterationCtxPatchParallelMergedByIndex(t *testing.T) {
	src := `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: ctxloop}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, max_in_flight: 3, allow_set_ctx: true}
    tool:
      - add:
          kind: python
          code: "result = item"
          input: {item: "{{ item }}"}
          set:
            ctx.last: "{{ item }}"
`
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: req.Args["item"]}
	}}
	env, w := setup(t, py, src, map[string]any{"items": []any{"a", "b", "c"}})
	for _, idx := range []int{2, 0, 1} { // the last iteration ends first
		cmd, ok := env.Tasks.Take(func(c types.Command) bool { return isUnit(c) && c.Iteration != nil && *c.Iteration == idx })
		if !ok {
			t.Fatalf("iteration %d not pending", idx)
		}
		deliver(t, w, cmd)
	}
	drain(t, env, w)
	wantOK(t, env)
	st := status(t, env, "ex1")
	if st.Ctx["last"] != "c" {
		t.Fatalf("ctx.last = %v, want c (iteration 2, the highest index)", st.Ctx["last"])
	}
	res, _ := st.Results["start"].(map[string]any)
	if !reflect.DeepEqual(res["stats"], engine.LoopStats(3, 0)) {
		t.Fatalf("loop stats = %v", res["stats"])
	}
}

// TestTaskSetReadsResultFields: in a tool item's own set, output is the
// task's data (NoETL's task sequence): output.<field> reads the result's
// fields (output.count, output.status of a result that has one, a
// result's own data field: generated.data.record_id), the envelope fills
// the rest (engine.SetExtra).
func TestTaskSetReadsResultFields(t *testing.T) {
	src := `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: setout}
workflow:
  - step: start
    tool:
      - count:
          kind: python
          code: "result = {'count': 3, 'status': 'mine'}"
          set:
            ctx.n: "{{ output.count }}"
            ctx.st: "{{ output.status }}"
            ctx.same: "{{ output.data.count == output.count }}"
      - nested:
          kind: python
          code: "result = {'status': 'success', 'data': {'record_id': 100}}"
          set:
            generated: "{{ output }}"
      - after: {kind: noop, result: {id: "{{ generated.data.record_id }}"}}
`
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if strings.Contains(fmt.Sprint(req.Config["code"]), "record_id") {
			return types.Outcome{Status: types.StatusOK, Result: map[string]any{"status": "success", "data": map[string]any{"record_id": int64(100)}}}
		}
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"count": int64(3), "status": "mine"}}
	}}
	env, w := setup(t, py, src, nil)
	drain(t, env, w)
	wantOK(t, env)
	st := status(t, env, "ex1")
	if st.Ctx["n"] != int64(3) || st.Ctx["st"] != "mine" || st.Ctx["same"] != true {
		t.Fatalf("ctx = %v, want n 3, st mine (the result's own status), same true", st.Ctx)
	}
	if got := st.Results["start"].(map[string]any)["id"]; got != int64(100) {
		t.Fatalf("generated.data.record_id after set generated: {{ output }} = %v, want 100", got)
	}
	// The step's result: the last task's, with every task's result by
	// label beside it (engine.PipelineResult).
	res, _ := st.Results["start"].(map[string]any)
	byLabel, _ := res["results"].(map[string]any)
	if _, ok := byLabel["count"]; !ok {
		t.Fatalf("step result = %#v (%T), want results.count", st.Results["start"], st.Results["start"])
	}
}

// TestPythonCodeRenderedAsNoETL: python code and an inline script's code
// are rendered as NoETL renders tool keys (a string with {{ and }} is a
// template; one that does not render runs as written), and the code's
// context global holds the finished steps' results by name (NoETL's
// render context) — a playbook reads context.get('load', {}).get('command_0').
func TestPythonCodeRenderedAsNoETL(t *testing.T) {
	src := `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: code}
workload:
  who: world
  snippet: "result = 'from workload'"
workflow:
  - step: load
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: use}]}
  - step: use
    tool:
      - greet: {kind: python, code: "print('hello {{ workload.who }}')\nresult = f'{{ missing }}'"}
      - literal: {kind: python, code: "d = {{'a': 1}}\nresult = d"}
      - inline:
          kind: python
          script: {uri: inline, source: {type: inline, code: "{{ workload.snippet }}"}}
`
	var mu sync.Mutex
	codes := map[string]any{}
	var ctxSeen map[string]any
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		mu.Lock()
		defer mu.Unlock()
		if req.Task == "load_task" {
			return types.Outcome{Status: types.StatusOK, Result: map[string]any{"command_0": map[string]any{"rows": []any{"r"}}}}
		}
		codes[req.Task] = req.Config["code"]
		if sc, ok := req.Config["script"].(map[string]any); ok {
			codes[req.Task] = sc["source"].(map[string]any)["code"]
		}
		if req.Task == "greet" {
			ctxSeen = req.Context
		}
		return types.Outcome{Status: types.StatusOK, Result: 1}
	}}
	env, w := setup(t, py, src, nil)
	drain(t, env, w)
	wantOK(t, env)
	want := map[string]any{
		"greet":   "print('hello world')\nresult = f''", // an undefined name renders empty, as in Jinja2
		"literal": "d = {{'a': 1}}\nresult = d",         // not a valid template: run as written
		"inline":  "result = 'from workload'",
	}
	if !reflect.DeepEqual(codes, want) {
		t.Fatalf("code run = %#v\nwant       %#v", codes, want)
	}
	load, _ := ctxSeen["load"].(map[string]any)
	if !reflect.DeepEqual(load["command_0"], map[string]any{"rows": []any{"r"}}) || ctxSeen["step"] != "use" {
		t.Fatalf("context = %v, want load's result and step use", ctxSeen)
	}
	if job, _ := ctxSeen["job"].(map[string]any); job["execution_id"] != "ex1" {
		t.Fatalf("context job = %v", ctxSeen["job"])
	}
}

// TestParallelIterationsOverlapInTheLog: iterations of a parallel loop
// released together appear together in the execution's event log. One
// 4-second iteration and four instant ones run concurrently; the max
// overlap is read from the log's causal order (seq, as `noetl events`
// shows it: an iteration runs from its loop.iteration.started to its
// loop.iteration.done), not from wall time. Clocks stamped when a unit
// sealed its batch, at its end, put the slow iteration's start after the
// others' ends: max overlap 1.
func TestParallelIterationsOverlapInTheLog(t *testing.T) {
	src := `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: slowloop}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: s
      spec: {mode: parallel, max_in_flight: 5}
    tool: {kind: python, code: "result = s", input: {s: "{{ s }}"}}
`
	var fast sync.WaitGroup
	fast.Add(4)
	var env *controltest.Env
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if num(req.Args["s"]) == 4 {
			fast.Wait()                        // the instant iterations end while this one runs
			env.Clock.Advance(4 * time.Second) // ... for 4 seconds
		} else {
			defer fast.Done()
		}
		return types.Outcome{Status: types.StatusOK, Result: req.Args["s"]}
	}}
	env, w := setup(t, py, src, map[string]any{"items": []any{int64(4), int64(0), int64(0), int64(0), int64(0)}})
	var units []types.Command
	for {
		cmd, ok := env.Tasks.Take(isUnit)
		if !ok {
			break
		}
		units = append(units, cmd)
	}
	if len(units) != 5 {
		t.Fatalf("%d units released, want 5", len(units))
	}
	var all sync.WaitGroup
	errc := make(chan error, len(units))
	for _, cmd := range units {
		all.Add(1)
		go func(cmd types.Command) {
			defer all.Done()
			errc <- w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()})
		}(cmd)
	}
	all.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	drain(t, env, w)
	wantOK(t, env)
	cur, peak := 0, 0
	var order []string
	for _, e := range env.Bus.Log("ex1") {
		switch e.EventType {
		case types.EvLoopIterationStarted:
			cur++
			peak = max(peak, cur)
			order = append(order, fmt.Sprintf("s%d", *e.Iteration))
		case types.EvLoopIterationDone, types.EvLoopIterationFailed:
			cur--
			order = append(order, fmt.Sprintf("e%d", *e.Iteration))
		}
	}
	if peak != 5 {
		t.Fatalf("max overlap in the log = %d, want 5 (order %v)", peak, order)
	}
	// The slow iteration (0) starts before any iteration ends.
	for _, o := range order {
		if o == "s0" {
			break
		}
		if o[0] == 'e' {
			t.Fatalf("iteration 0 starts after %s in the log: %v", o, order)
		}
	}
	checkCausal(t, env, "ex1")
}

// TestIterationResultWithoutTaskResults: a loop iteration's result is its
// pipeline's last task's result alone (engine.PipelineResult applies to
// steps), so a loop's results stay the size of its tasks' last results.
func TestIterationResultWithoutTaskResults(t *testing.T) {
	src := `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop2}
workflow:
  - step: start
    loop: {in: "{{ workload.items }}", iterator: i}
    tool:
      - a: {kind: python, code: "result = 1"}
      - b: {kind: python, code: "result = 2"}
`
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"task": req.Task}}
	}}
	env, w := setup(t, py, src, map[string]any{"items": []any{1, 2}})
	drain(t, env, w)
	wantOK(t, env)
	res, _ := status(t, env, "ex1").Results["start"].(map[string]any)
	want := []any{map[string]any{"task": "b"}, map[string]any{"task": "b"}}
	if !reflect.DeepEqual(res["results"], want) {
		t.Fatalf("loop results = %v, want %v", res["results"], want)
	}
}
