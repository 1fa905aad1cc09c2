package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

func TestLoopMaxInFlight(t *testing.T) {
	sc := template.NewScope(template.ScopeParams{Workload: map[string]any{"n": 4, "s": "3", "f": 2.0, "bad": "x", "zero": 0}})
	cases := []struct {
		loop    dsl.Loop
		want    int
		wantErr string
	}{
		{dsl.Loop{MaxInFlight: 7}, 7, ""},
		{dsl.Loop{}, 10, ""},
		{dsl.Loop{MaxInFlightTemplate: "{{ workload.n }}"}, 4, ""},
		{dsl.Loop{MaxInFlightTemplate: "{{ workload.s }}"}, 3, ""},
		{dsl.Loop{MaxInFlightTemplate: "{{ workload.f }}"}, 2, ""},
		{dsl.Loop{MaxInFlightTemplate: "{{ workload.n * 2 }}"}, 8, ""},
		{dsl.Loop{MaxInFlightTemplate: "{{ workload.bad }}"}, 0, "want an integer ≥ 1"},
		{dsl.Loop{MaxInFlightTemplate: "{{ workload.zero }}"}, 0, "want an integer ≥ 1"},
		{dsl.Loop{MaxInFlightTemplate: "{{ 1 / 0 }}"}, 0, "loop max_in_flight"},
	}
	for _, c := range cases {
		got, err := LoopMaxInFlight(&c.loop, sc, 10)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("%+v: error %v, want %q", c.loop, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("%+v: %d, %v; want %d", c.loop, got, err, c.want)
		}
	}
}

const templMIF = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: mif}
workload: {mif: 2, items: [1, 2, 3, 4, 5]}
workflow:
  - step: start
    loop: {in: "{{ workload.items }}", iterator: x, spec: {mode: parallel, max_in_flight: "{{ workload.mif }}"}}
    tool: {kind: noop}
`

func TestTemplatedMaxInFlightStartsThatManyLanes(t *testing.T) {
	e := load(t, templMIF)
	if e.PB.Step("start").Loop.MaxInFlightTemplate == "" {
		t.Fatal("the template was not kept")
	}
	st, out := started(t, e, map[string]any{"mif": 2, "items": []any{1, 2, 3, 4, 5}})
	if len(out.Commands) != 2 || len(out.Loops) != 1 || out.Loops[0].MaxInFlight != 2 || st.Steps["start"].Loop.MaxInFlight != 2 {
		t.Fatalf("commands %d, loops %+v", len(out.Commands), out.Loops)
	}
	st, out = started(t, e, map[string]any{"mif": "none", "items": []any{1}})
	errm, _ := st.Steps["start"].Error.(map[string]any)
	if len(out.Commands) != 0 || st.Status != ExecFailed || errm["kind"] != ErrKindLoop {
		t.Fatalf("bad template: commands %d status %s error %v", len(out.Commands), st.Status, st.Steps["start"].Error)
	}
}

const cursorPB = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cursor}
workload: {workers: 3}
workflow:
  - step: start
    loop:
      cursor: {kind: postgres, auth: pg, claim: "UPDATE q SET s = 'c' WHERE id IN (SELECT id FROM q LIMIT {{ __frame_max_rows }}) RETURNING id"}
      iterator: row
      spec: {mode: cursor, max_in_flight: "{{ workload.workers }}", frame: {max_rows: 4}}
    tool: {kind: noop}
    next: {arcs: [{step: end, when: "{{ event.name == 'loop.done' }}"}]}
  - step: end
    tool: {kind: noop}
`

func TestCursorLoopStartsOneClaimPerWorker(t *testing.T) {
	e := load(t, cursorPB)
	st, out := started(t, e, map[string]any{"workers": 3})
	if len(out.Loops) != 1 {
		t.Fatalf("loops %+v", out.Loops)
	}
	p := out.Loops[0]
	if p.Cursor == nil || p.Cursor.MaxRows != 4 || p.Mode != "cursor" || p.Lanes() != 3 || p.Total != 0 {
		t.Fatalf("plan %+v cursor %+v", p, p.Cursor)
	}
	if len(out.Commands) != 3 {
		t.Fatalf("%d commands", len(out.Commands))
	}
	for i, c := range out.Commands {
		if c.Iteration == nil || *c.Iteration != i || c.Item != nil || c.CursorRest != nil {
			t.Fatalf("claim command %d: %+v", i, c)
		}
	}
	if st.Steps["start"].Loop.Mode != "cursor" || st.Steps["start"].Loop.MaxInFlight != 3 {
		t.Fatalf("loop status %+v", st.Steps["start"].Loop)
	}
}

func TestCursorIterationEnded(t *testing.T) {
	p := LoopPlan{Step: "s", Run: 1, MaxInFlight: 3, FailureMode: "fail_fast", Cursor: &CursorPlan{MaxRows: 4}}
	r1, r2, r3 := map[string]any{"id": 1}, map[string]any{"id": 2}, map[string]any{"id": 3}
	cases := []struct {
		name string
		plan LoopPlan
		rec  IterationRecord
		want CursorAfter
	}{
		{"next row of the frame", p, IterationRecord{Index: 1, Status: types.StatusOK, Cursor: &CursorFrame{Rest: []any{r2, r3}}},
			CursorAfter{AfterIteration: AfterIteration{Next: 4, HasNext: true}, NextItem: r2, NextRest: []any{r3}}},
		{"last row of the frame: claim again", p, IterationRecord{Index: 4, Status: types.StatusOK, Cursor: &CursorFrame{}},
			CursorAfter{AfterIteration: AfterIteration{Next: 7, HasNext: true}}},
		{"empty claim ends the lane", p, IterationRecord{Index: 7, Status: types.StatusOK, Cursor: &CursorFrame{Empty: true}},
			CursorAfter{AfterIteration: AfterIteration{LaneDone: true}}},
		{"a failed row fails the step", p, IterationRecord{Index: 2, Status: types.StatusError, Cursor: &CursorFrame{Rest: []any{r1}}},
			CursorAfter{AfterIteration: AfterIteration{FailStep: true}}},
		{"best_effort goes on after a failed row", func() LoopPlan { q := p; q.FailureMode = "best_effort"; return q }(),
			IterationRecord{Index: 2, Status: types.StatusError, Cursor: &CursorFrame{Rest: []any{r1}}},
			CursorAfter{AfterIteration: AfterIteration{Next: 5, HasNext: true}, NextItem: r1, NextRest: []any{}}},
		{"best_effort: a failed claim ends the lane", func() LoopPlan { q := p; q.FailureMode = "best_effort"; return q }(),
			IterationRecord{Index: 0, Status: types.StatusError, Cursor: &CursorFrame{Empty: true}},
			CursorAfter{AfterIteration: AfterIteration{LaneDone: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CursorIterationEnded(c.plan, c.rec); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
	if p.Lane(7) != 1 || !LoopComplete(p, 3) || LoopComplete(p, 2) {
		t.Fatal("lanes of a cursor plan")
	}
	cmd := CursorIterationCommand("ex", p, 4, r2, []any{r3}, 9)
	if *cmd.Iteration != 4 || !reflect.DeepEqual(cmd.Item, r2) || !reflect.DeepEqual(cmd.CursorRest, []any{r3}) || cmd.Clock != 9 {
		t.Fatalf("command %+v", cmd)
	}
}

func TestCursorLoopResult(t *testing.T) {
	recs := []IterationRecord{
		{Index: 0, Status: types.StatusOK, Result: "a", Clock: 3},
		{Index: 1, Status: types.StatusOK, Cursor: &CursorFrame{Empty: true}, Clock: 9},
		{Index: 2, Status: types.StatusError, Error: "x", Clock: 4},
		{Index: 3, Status: types.StatusOK, Result: "b", Cursor: &CursorFrame{}},
	}
	res, rows, clock := CursorLoopResult(recs)
	want := map[string]any{"results": []any{"a", map[string]any{"status": "error", "error": "x"}, "b"}, "stats": LoopStats(3, 1)}
	if !reflect.DeepEqual(res, want) || rows != 3 || clock != 9 {
		t.Fatalf("%v %d %d", res, rows, clock)
	}
}

func TestRenderFrame(t *testing.T) {
	sc := template.NewScope(template.ScopeParams{Workload: map[string]any{"rows": "25", "lease": 60, "bad": "x"}})
	f, err := RenderFrame(&dsl.Frame{MaxRows: 1, LeaseSeconds: 120, Process: "row",
		Templates: map[string]string{"max_rows": "{{ workload.rows }}", "lease_seconds": "{{ workload.lease }}"}}, sc)
	if err != nil || f.MaxRows != 25 || f.LeaseSeconds != 60 {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := RenderFrame(&dsl.Frame{Templates: map[string]string{"max_rows": "{{ workload.bad }}"}}, sc); err == nil {
		t.Fatal("a non-numeric max_rows rendered")
	}
	if d, err := RenderFrame(nil, sc); err != nil || d.MaxRows != 1 || d.Process != "row" {
		t.Fatalf("defaults %+v %v", d, err)
	}
}
