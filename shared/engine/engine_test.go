package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func load(t *testing.T, src string) *Engine {
	t.Helper()
	pb, err := dsl.Load([]byte(src), "test.yaml")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return New(pb, Options{})
}

func started(t *testing.T, e *Engine, wl map[string]any) (*State, Output) {
	t.Helper()
	st := NewState("ex1", "", e.PB, wl, t0)
	out, err := e.Start(st, t0)
	if err != nil {
		t.Fatal(err)
	}
	return st, out
}

func done(step string, run int, result any) types.Event {
	ev := types.NewEvent(types.EvStepDone, "ex1", "execute", t0, step, itoa(run))
	ev.Step, ev.StepRun = step, run
	ev.Payload = map[string]any{"result": result}
	return ev
}

func eventTypes(out Output) []types.EventType {
	var s []types.EventType
	for _, e := range out.Events {
		s = append(s, e.EventType)
	}
	return s
}

const chain = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: chain}
workload: {initial_value: 100}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: exclusive}
      arcs:
        - step: use
          args: {v: "{{ initial_value }}", fixed: 200, from: "{{ start.x }}"}
  - step: use
    tool: {kind: noop}
`

func TestStartSchedulesStart(t *testing.T) {
	e := load(t, chain)
	st, out := started(t, e, map[string]any{"initial_value": int64(100)})
	if st.Status != ExecRunning || st.Active != 1 {
		t.Fatalf("status %s active %d", st.Status, st.Active)
	}
	if len(out.Commands) != 1 || out.Commands[0].Step != "start" || out.Commands[0].StepRun != 1 || out.Commands[0].Attempt != 1 {
		t.Fatalf("commands %+v", out.Commands)
	}
	if out.Commands[0].StateVersion != st.Version {
		t.Fatalf("command version %d, state %d", out.Commands[0].StateVersion, st.Version)
	}
	want := []types.EventType{types.EvPlaybookStarted, types.EvWorkflowStarted, types.EvStepScheduled}
	if got := eventTypes(out); len(got) != 3 || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("events %v", got)
	}
	if _, err := e.Start(st, t0); err == nil {
		t.Fatal("second Start must fail")
	}
}

func TestArcArgsAreNativeAndDuplicatesIgnored(t *testing.T) {
	e := load(t, chain)
	st, _ := started(t, e, map[string]any{"initial_value": int64(100)})
	out, changed, err := e.Apply(st, done("start", 1, map[string]any{"x": "hello"}), t0)
	if err != nil || !changed {
		t.Fatalf("apply: %v %v", changed, err)
	}
	if len(out.Commands) != 1 || out.Commands[0].Step != "use" {
		t.Fatalf("commands %+v", out.Commands)
	}
	args := out.Commands[0].Args
	if num(args["v"]) != 100 || num(args["fixed"]) != 200 || args["from"] != "hello" {
		t.Fatalf("args %#v", args)
	}
	v := st.Version
	if _, changed, _ := e.Apply(st, done("start", 1, nil), t0); changed || st.Version != v {
		t.Fatal("duplicate step.done applied twice")
	}
	out, _, _ = e.Apply(st, done("use", 1, "r"), t0)
	if st.Status != ExecOK || st.Active != 0 {
		t.Fatalf("status %s active %d", st.Status, st.Active)
	}
	got := eventTypes(out)
	if got[len(got)-1] != types.EvPlaybookFinished {
		t.Fatalf("events %v", got)
	}
	if st.Results["use"] != "r" || st.Result != "r" {
		t.Fatalf("results %v", st.Results)
	}
}

const pagination = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: pages}
workflow:
  - step: start
    tool: {kind: noop}
    set_ctx: {page: 1}
    next:
      arcs: [{step: fetch}]
  - step: fetch
    tool: {kind: noop}
    set_ctx:
      page: "{{ fetch.next }}"
      more: "{{ fetch.more }}"
    next:
      spec: {mode: exclusive}
      arcs:
        - step: fetch
          when: "{{ ctx.more == true }}"
        - step: end
          when: "{{ ctx.more != true }}"
  - step: end
    tool: {kind: noop}
`

func TestSetCtxAndLoopingArcs(t *testing.T) {
	e := load(t, pagination)
	st, _ := started(t, e, nil)
	e.Apply(st, done("start", 1, nil), t0)
	for run := 1; run <= 3; run++ {
		out, changed, err := e.Apply(st, done("fetch", run, map[string]any{"next": run + 1, "more": run < 3}), t0)
		if err != nil || !changed {
			t.Fatalf("run %d: %v %v", run, changed, err)
		}
		if len(out.Commands) != 1 {
			t.Fatalf("run %d commands %+v", run, out.Commands)
		}
		wantStep := "fetch"
		if run == 3 {
			wantStep = "end"
		}
		if out.Commands[0].Step != wantStep {
			t.Fatalf("run %d went to %s", run, out.Commands[0].Step)
		}
	}
	if num(st.Ctx["page"]) != 4 {
		t.Fatalf("ctx %v", st.Ctx)
	}
	if st.Steps["fetch"].Runs != 3 {
		t.Fatalf("fetch runs %d", st.Steps["fetch"].Runs)
	}
}

const loop = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop}
workload:
  items: [a, b, c, d, e]
  none: []
workflow:
  - step: start
    loop:
      in: "{{ items }}"
      iterator: it
      spec: {mode: parallel, max_in_flight: 2}
    tool: {kind: noop}
    next:
      arcs: [{step: empty}]
  - step: empty
    loop:
      in: "{{ none }}"
      iterator: it
    tool: {kind: noop}
    next:
      arcs: [{step: end}]
  - step: end
    tool: {kind: noop}
`

func TestLoopFanOutAndEmptyLoop(t *testing.T) {
	e := load(t, loop)
	wl := map[string]any{"items": []any{"a", "b", "c", "d", "e"}, "none": []any{}}
	st, out := started(t, e, wl)
	if len(out.Loops) != 1 || len(out.Loops[0].Items) != 5 || out.Loops[0].MaxInFlight != 2 {
		t.Fatalf("loops %+v", out.Loops)
	}
	if len(out.Commands) != 2 || *out.Commands[0].Iteration != 0 || *out.Commands[1].Iteration != 1 || out.Commands[1].Item != "b" {
		t.Fatalf("commands %+v", out.Commands)
	}
	plan := out.Loops[0]
	if a := IterationEnded(plan, 0, true); !a.HasNext || a.Next != 2 {
		t.Fatalf("after 0: %+v", a)
	}
	if a := IterationEnded(plan, 3, true); a.HasNext || !a.LaneDone {
		t.Fatalf("after 3 (3+2 is past the end): %+v", a)
	}
	ev := LoopDoneEvent("ex1", plan, map[string]any{"results": []any{1, 2, 3, 4, 5}}, 0, t0)
	out, changed, err := e.Apply(st, ev, t0)
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	// The empty loop completes at once and schedules end.
	if st.Steps["empty"].Status != types.StatusOK || len(out.Commands) != 1 || out.Commands[0].Step != "end" {
		t.Fatalf("empty loop: %+v commands %+v", st.Steps["empty"], out.Commands)
	}
	res := st.Results["empty"].(map[string]any)["results"].([]any)
	if len(res) != 0 {
		t.Fatalf("empty results %v", res)
	}
	if got := st.Results["start"].(map[string]any)["results"].([]any); len(got) != 5 {
		t.Fatalf("loop results %v", got)
	}
	if ev2 := LoopDoneEvent("ex1", plan, nil, 9, t0.Add(time.Hour)); ev2.EventID != ev.EventID {
		t.Fatal("loop.done id must be deterministic")
	}
}

func TestUnhandledFailureFailsExecution(t *testing.T) {
	e := load(t, chain)
	st, _ := started(t, e, nil)
	ev := types.NewEvent(types.EvStepFailed, "ex1", "execute", t0, "start", "1")
	ev.Step, ev.StepRun = "start", 1
	ev.Payload = map[string]any{"error": map[string]any{"message": "boom"}}
	out, changed, _ := e.Apply(st, ev, t0)
	if !changed || st.Status != ExecFailed || len(out.Commands) != 0 {
		t.Fatalf("status %s commands %v", st.Status, out.Commands)
	}
	if len(st.Failures) != 1 {
		t.Fatalf("failures %v", st.Failures)
	}
}

const inclusive = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: fan}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs:
        - {step: a, when: "{{ true }}"}
        - {step: b}
        - {step: c, when: "{{ false }}"}
  - step: a
    tool: {kind: noop}
  - step: b
    tool: {kind: noop}
  - step: c
    tool: {kind: noop}
`

func TestInclusiveAndExclusiveRouting(t *testing.T) {
	e := load(t, inclusive)
	st, _ := started(t, e, nil)
	out, _, _ := e.Apply(st, done("start", 1, nil), t0)
	if len(out.Commands) != 2 || st.Active != 2 {
		t.Fatalf("inclusive fired %d (active %d)", len(out.Commands), st.Active)
	}
	var next *types.Event
	for i := range out.Events {
		if out.Events[i].EventType == types.EvNextEvaluated {
			next = &out.Events[i]
		}
	}
	if next == nil || len(next.Payload["fired"].([]any)) != 2 || len(next.Payload["matched"].([]any)) != 2 {
		t.Fatalf("next.evaluated %+v", next)
	}
	e.PB.Step("start").Next.Mode = "exclusive"
	st2, _ := started(t, e, nil)
	out, _, _ = e.Apply(st2, done("start", 1, nil), t0)
	if len(out.Commands) != 1 || out.Commands[0].Step != "a" {
		t.Fatalf("exclusive fired %+v", out.Commands)
	}
}

// num returns an integer value of any Go integer type, or -1.
func num(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	}
	return -1
}

const join = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: join}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: fast}, {step: slow}]
  - step: fast
    tool: {kind: noop}
    next:
      arcs: [{step: join, args: {from: fast}}]
  - step: slow
    tool: {kind: noop}
    next:
      arcs: [{step: join, args: {from: slow}}]
  - step: join
    tool: {kind: noop}
`

// The fan-in of an inclusive fan-out is a join (dsl.Step.JoinOf): the
// first arriving token is parked, the join runs once when both branches
// have arrived, with their args merged in JoinOf order (joins.go).
func TestJoinRunsOnceAfterAllBranches(t *testing.T) {
	e := load(t, join)
	if got := e.PB.Step("join").JoinOf; len(got) != 2 {
		t.Fatalf("JoinOf %v", got)
	}
	st, _ := started(t, e, nil)
	e.Apply(st, done("start", 1, nil), t0)
	out, _, _ := e.Apply(st, done("fast", 1, nil), t0)
	if len(out.Commands) != 0 || st.Joins["join"] == nil || st.Steps["join"] != nil {
		t.Fatalf("fast's token must be parked: commands %+v joins %+v", out.Commands, st.Joins)
	}
	out, _, _ = e.Apply(st, done("slow", 1, nil), t0)
	if len(out.Commands) != 1 || out.Commands[0].Step != "join" || out.Commands[0].StepRun != 1 || out.Commands[0].Args["from"] != "slow" {
		t.Fatalf("join run: %+v", out.Commands)
	}
	if st.Joins != nil || st.Status != ExecRunning {
		t.Fatalf("joins %+v status %s", st.Joins, st.Status)
	}
	e.Apply(st, done("join", 1, "once"), t0)
	if st.Status != ExecOK || st.Active != 0 || st.Steps["join"].Runs != 1 {
		t.Fatalf("status %s active %d runs %d", st.Status, st.Active, st.Steps["join"].Runs)
	}
}

// legacyVars is NoETL's legacy step vars form, as noetl/ops automation
// playbooks write it (examples/http_example.yaml): values computed from the
// step's result when it completes, read later as vars.<name>.
const legacyVars = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: vars}
workflow:
  - step: start
    tool: {kind: noop}
    vars:
      user: "{{ start.user }}"
    next:
      spec: {mode: exclusive}
      arcs:
        - step: admin
          when: "{{ vars.user == 'root' }}"
        - step: end
  - step: admin
    tool: {kind: noop}
  - step: end
    tool: {kind: noop}
`

func TestLegacyStepVarsAreCtx(t *testing.T) {
	e := load(t, legacyVars)
	if w := fmt.Sprint(e.PB.Warnings); !strings.Contains(w, "legacy spelling of set_ctx") {
		t.Fatalf("warnings %v", e.PB.Warnings)
	}
	st, _ := started(t, e, nil)
	out, _, err := e.Apply(st, done("start", 1, map[string]any{"user": "root"}), t0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ctx["user"] != "root" {
		t.Fatalf("ctx %v", st.Ctx)
	}
	if len(out.Commands) != 1 || out.Commands[0].Step != "admin" {
		t.Fatalf("commands %+v: the arc did not read vars.user", out.Commands)
	}
}
