package engine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// pipe is a three-task pipeline a, b, c.
var pipe = []*dsl.Task{{Name: "a", Kind: "http"}, {Name: "b", Kind: "http"}, {Name: "c", Kind: "noop"}}

func decision(a types.Action, then dsl.Then) Decision {
	then.Do = string(a)
	return Decision{Action: a, Rule: 0, Then: then}
}

// at returns a fresh cursor at task idx, attempt, with a previous result
// and one finished task.
func at(idx, attempt, jumps int) Cursor {
	return Cursor{TaskIndex: idx, Attempt: attempt, Jumps: jumps, Prev: "prev", HasPrev: true,
		TaskResults: map[string]any{"earlier": "e"}, Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}}
}

// tr is TaskResults: "earlier" plus the given label/result pairs.
func tr(kv ...any) map[string]any {
	m := map[string]any{"earlier": "e"}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// moved is the cursor after a move to task idx: attempt 1, _prev = prev,
// taskResults as given.
func moved(idx, jumps int, prev any, taskResults map[string]any) Cursor {
	return Cursor{TaskIndex: idx, Attempt: 1, Jumps: jumps, Prev: prev, HasPrev: true, TaskResults: taskResults,
		Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}}
}

func TestAdvance(t *testing.T) {
	unavailable := errOut("http", 503, true)
	unavailable.Result = map[string]any{"body": "busy"}
	failedMap := ErrorMap(unavailable, "b")
	retry := func(attempts int, delay float64, backoff string) Decision {
		return decision(types.ActRetry, dsl.Then{Attempts: attempts, Delay: delay, Backoff: backoff})
	}
	cases := []struct {
		name string
		c    Cursor
		d    Decision
		out  types.Outcome
		want Move
	}{
		{"continue on ok runs the next task", at(0, 1, 0), decision(types.ActContinue, dsl.Then{}), okOut("ra"),
			Move{Kind: MoveRun, Cursor: moved(1, 0, "ra", tr("a", "ra")), TaskEnd: types.EvTaskDone}},
		{"continue on error goes on, the task failed", at(1, 2, 0), decision(types.ActContinue, dsl.Then{}), unavailable,
			Move{Kind: MoveRun, Cursor: moved(2, 0, unavailable.Result, tr()), TaskEnd: types.EvTaskFailed}},
		{"running off the end finishes ok with the last result", at(2, 1, 0), decision(types.ActContinue, dsl.Then{}), okOut("rc"),
			Move{Kind: MoveFinish, Cursor: Cursor{TaskIndex: 3, Attempt: 1, Prev: "rc", HasPrev: true, TaskResults: tr("c", "rc"), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}},
				OK: true, Result: "rc", TaskEnd: types.EvTaskDone}},
		{"continue-on-error off the end finishes ok", at(2, 1, 0), decision(types.ActContinue, dsl.Then{}), unavailable,
			Move{Kind: MoveFinish, Cursor: Cursor{TaskIndex: 3, Attempt: 1, Prev: unavailable.Result, HasPrev: true, TaskResults: tr(), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}},
				OK: true, Result: unavailable.Result, TaskEnd: types.EvTaskFailed}},
		{"retry without delay runs again now", at(1, 1, 0), retry(3, 0, ""), unavailable,
			Move{Kind: MoveRun, Cursor: Cursor{TaskIndex: 1, Attempt: 2, Prev: "prev", HasPrev: true, TaskResults: tr(), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}}}},
		{"retry with delay hands off after the backoff", at(1, 2, 4), retry(5, 2, "exponential"), unavailable,
			Move{Kind: MoveHandOff, Cursor: Cursor{TaskIndex: 1, Attempt: 3, Jumps: 4, Prev: "prev", HasPrev: true, TaskResults: tr(), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}}, Delay: time.Duration(float64(4*time.Second) * Jitter("k/b/4", 2))}},
		{"a constant delay is kept as written", at(1, 2, 4), retry(5, 2, "none"), unavailable,
			Move{Kind: MoveHandOff, Cursor: Cursor{TaskIndex: 1, Attempt: 3, Jumps: 4, Prev: "prev", HasPrev: true, TaskResults: tr(), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}}, Delay: 2 * time.Second}},
		{"retry without attempts allows three in total", at(1, 2, 0), retry(0, 0, ""), unavailable,
			Move{Kind: MoveRun, Cursor: Cursor{TaskIndex: 1, Attempt: 3, Prev: "prev", HasPrev: true, TaskResults: tr(), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}}}},
		{"exhausted retry on error fails the pipeline", at(1, 3, 0), retry(0, 1, ""), unavailable,
			Move{Kind: MoveFinish, Cursor: at(1, 3, 0), Error: failedMap, TaskEnd: types.EvTaskFailed, Exhausted: true}},
		{"exhausted retry on ok continues", at(0, 4, 0), retry(4, 1, "linear"), okOut("polled"),
			Move{Kind: MoveRun, Cursor: moved(1, 0, "polled", tr("a", "polled")), TaskEnd: types.EvTaskDone, Exhausted: true}},
		{"exhausted retry on ok at the last task finishes ok", at(2, 2, 0), retry(2, 0, ""), okOut("last"),
			Move{Kind: MoveFinish, Cursor: Cursor{TaskIndex: 3, Attempt: 1, Prev: "last", HasPrev: true, TaskResults: tr("c", "last"), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}},
				OK: true, Result: "last", TaskEnd: types.EvTaskDone, Exhausted: true}},
		{"jump back to a label", at(2, 2, 7), decision(types.ActJump, dsl.Then{To: "a"}), okOut("page"),
			Move{Kind: MoveRun, Cursor: moved(0, 8, "page", tr("c", "page")), TaskEnd: types.EvTaskDone}},
		{"jump forward", at(0, 1, 0), decision(types.ActJump, dsl.Then{To: "c"}), okOut("skip"),
			Move{Kind: MoveRun, Cursor: moved(2, 1, "skip", tr("a", "skip")), TaskEnd: types.EvTaskDone}},
		{"jump to the last allowed", at(1, 1, MaxJumps-1), decision(types.ActJump, dsl.Then{To: "a"}), okOut(1),
			Move{Kind: MoveRun, Cursor: moved(0, MaxJumps, 1, tr("b", 1)), TaskEnd: types.EvTaskDone}},
		{"jump over MaxJumps fails", at(1, 1, MaxJumps), decision(types.ActJump, dsl.Then{To: "a"}), okOut(1),
			Move{Kind: MoveFinish, Cursor: at(1, 1, MaxJumps+1), TaskEnd: types.EvTaskFailed,
				Error: map[string]any{"kind": string(types.ErrKindPolicy), "task": "b", "message": fmt.Sprintf("more than %d jumps", MaxJumps)}}},
		{"jump to an unknown task fails", at(1, 1, 3), decision(types.ActJump, dsl.Then{To: "nope"}), okOut(1),
			Move{Kind: MoveFinish, Cursor: at(1, 1, 3), TaskEnd: types.EvTaskFailed,
				Error: map[string]any{"kind": string(types.ErrKindPolicy), "task": "b", "message": "jump to unknown task nope"}}},
		{"break ends ok with this result", at(0, 1, 0), decision(types.ActBreak, dsl.Then{}), okOut("enough"),
			Move{Kind: MoveFinish, Cursor: Cursor{TaskIndex: 0, Attempt: 1, Prev: "prev", HasPrev: true, TaskResults: tr("a", "enough"), Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 2}},
				OK: true, Result: "enough", TaskEnd: types.EvTaskDone}},
		{"fail on error carries the error", at(1, 1, 0), decision(types.ActFail, dsl.Then{}), unavailable,
			Move{Kind: MoveFinish, Cursor: at(1, 1, 0), Error: failedMap, TaskEnd: types.EvTaskFailed}},
		{"fail on ok is a policy failure", at(0, 1, 0), decision(types.ActFail, dsl.Then{}), okOut("x"),
			Move{Kind: MoveFinish, Cursor: at(0, 1, 0), TaskEnd: types.EvTaskFailed,
				Error: map[string]any{"kind": string(types.ErrKindPolicy), "message": "failed by task policy", "task": "a"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Advance(pipe, c.c, c.d, c.out, "k")
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Advance =\n  %+v\nwant\n  %+v", got, c.want)
			}
		})
	}
}

func TestErrorMap(t *testing.T) {
	cases := []struct {
		out  types.Outcome
		want map[string]any
	}{
		{errOut("http", 503, true), map[string]any{"task": "t", "kind": "http", "message": "http failed", "retryable": true, "status": 503}},
		{errOut("python", 0, false), map[string]any{"task": "t", "kind": "python", "message": "python failed", "retryable": false}},
		{okOut(1), map[string]any{"task": "t", "kind": string(types.ErrKindPolicy), "message": "failed by task policy"}},
	}
	for _, c := range cases {
		if got := ErrorMap(c.out, "t"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ErrorMap(%+v) = %v, want %v", c.out.Error, got, c.want)
		}
	}
}

func TestCursorOfInto(t *testing.T) {
	cmd := types.Command{TaskIndex: 2, Attempt: 0, Jumps: 5, Prev: "p", HasPrev: true,
		TaskResults: map[string]any{"a": 1}, Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 1}}
	c := CursorOf(cmd)
	if c.Attempt != 1 {
		t.Fatalf("attempt 0 resumes at attempt %d, want 1", c.Attempt)
	}
	c.TaskResults["b"] = 2
	if _, ok := cmd.TaskResults["b"]; ok {
		t.Fatal("the cursor's task results alias the command's")
	}
	var back types.Command
	c.Into(&back)
	want := types.Command{TaskIndex: 2, Attempt: 1, Jumps: 5, Prev: "p", HasPrev: true,
		TaskResults: map[string]any{"a": 1, "b": 2}, Iter: map[string]any{"i": 1}, CtxPatch: map[string]any{"c": 1}}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("Into = %+v, want %+v", back, want)
	}
	if empty := CursorOf(types.Command{}); empty.TaskResults == nil {
		t.Fatal("CursorOf leaves TaskResults nil (Advance writes to it)")
	}
}

func TestApplyPatches(t *testing.T) {
	sc := template.NewScope(template.ScopeParams{
		Ctx:   map[string]any{"page": 2},
		Iter:  map[string]any{"n": 4},
		Extra: PolicyExtra(okOut(map[string]any{"next": "tok", "rows": []any{1, 2}}), Cursor{Attempt: 1}, false),
	})
	as := func(kv ...any) []dsl.Assignment {
		var out []dsl.Assignment
		for i := 0; i < len(kv); i += 3 {
			out = append(out, dsl.Assignment{Scope: kv[i].(string), Key: kv[i+1].(string), Value: kv[i+2]})
		}
		return out
	}
	cases := []struct {
		name                              string
		c                                 Cursor
		set                               []dsl.Assignment
		wantIter, wantCtx, wantStep, want map[string]any
		wantErr                           string
	}{
		{"no patches", Cursor{}, nil, nil, nil, nil, nil, ""},
		{"iter into an empty cursor",
			Cursor{}, as("iter", "n", "{{ iter.n + 1 }}", "iter", "seen", "{{ output.data.rows }}"),
			map[string]any{"n": 5, "seen": []any{1, 2}}, nil, nil, nil, ""},
		{"ctx merges, later decisions win",
			Cursor{CtxPatch: map[string]any{"page": 2, "keep": true}}, as("ctx", "page", "{{ ctx.page + 1 }}", "ctx", "token", "{{ outcome.result.next }}", "ctx", "fixed", 7),
			nil, map[string]any{"page": 3, "keep": true, "token": "tok", "fixed": 7}, nil, nil, ""},
		{"all scopes, values rendered before any is written",
			Cursor{Iter: map[string]any{"x": 1}}, as("iter", "y", "{{ _attempt }}", "ctx", "z", "z{{ ctx.page }}", "step", "a.b", 1, "var", "v", "{{ iter.n }}"),
			map[string]any{"x": 1, "y": 1}, map[string]any{"z": "z2"}, map[string]any{"a": map[string]any{"b": 1}}, map[string]any{"v": 4}, ""},
		{"render error", Cursor{}, as("iter", "n", "{{ 1 / 0 }}"), nil, nil, nil, nil, "set iter.n:"},
		{"undefined name in arithmetic", Cursor{}, as("ctx", "n", "{{ nope + 1 }}"), nil, nil, nil, nil, "set ctx.n:"},
	}
	orNil := func(m map[string]any) map[string]any {
		if len(m) == 0 {
			return nil
		}
		return m
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := c.c
			err := ApplyPatches(&cur, c.set, sc)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("ApplyPatches: err = %v, want one starting %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ApplyPatches: %v", err)
			}
			if !reflect.DeepEqual(orNil(cur.Iter), c.wantIter) || !reflect.DeepEqual(orNil(cur.CtxPatch), c.wantCtx) ||
				!reflect.DeepEqual(orNil(cur.StepVars), c.wantStep) || !reflect.DeepEqual(orNil(cur.Vars), c.want) {
				t.Fatalf("ApplyPatches: iter %v ctx %v step %v vars %v; want %v %v %v %v", cur.Iter, cur.CtxPatch, cur.StepVars, cur.Vars, c.wantIter, c.wantCtx, c.wantStep, c.want)
			}
		})
	}
}

// TestPipelineResult: NoETL keeps a task sequence's results map beside the
// promoted last result; a single task, a result that is not a mapping or
// one that has its own results key keep their shape.
func TestPipelineResult(t *testing.T) {
	two := []*dsl.Task{{Name: "fetch"}, {Name: "store"}}
	byLabel := map[string]any{"fetch": map[string]any{"rows": 2}, "store": map[string]any{"row_count": 2}}
	got := PipelineResult(two, map[string]any{"row_count": 2}, byLabel)
	want := map[string]any{"row_count": 2, "results": byLabel}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PipelineResult = %v, want %v", got, want)
	}
	for _, c := range []struct {
		tasks []*dsl.Task
		last  any
	}{
		{two[:1], map[string]any{"row_count": 2}},
		{two, []any{1, 2}},
		{two, map[string]any{"results": []any{1}}},
	} {
		if got := PipelineResult(c.tasks, c.last, byLabel); !reflect.DeepEqual(got, c.last) {
			t.Errorf("PipelineResult(%d tasks, %v) = %v, want it unchanged", len(c.tasks), c.last, got)
		}
	}
}

// TestSetExtra: a tool item's own set reads the task's data as output
// (NoETL's task sequence): the result's own keys win, the envelope fills
// the others.
func TestSetExtra(t *testing.T) {
	out := types.Outcome{Status: types.StatusOK, Result: map[string]any{"count": 2, "status": "mine", "data": "own"}}
	m := SetExtra(out, Cursor{TaskResults: map[string]any{}}, false)["output"].(map[string]any)
	if m["count"] != 2 || m["status"] != "mine" || m["data"] != "own" || m["meta"] == nil {
		t.Fatalf("output = %v", m)
	}
	// An http task keeps its envelope first: output.data is the body, and
	// the body's own data field is output.data.data (NoETL's pagination
	// playbooks read it so).
	web := types.Outcome{Status: types.StatusOK, HTTP: &types.HTTPOutcome{Status: 200},
		Result: map[string]any{"status_code": int64(200), "data": map[string]any{"data": []any{1, 2}, "paging": map[string]any{"page": 1}}}}
	if m := SetExtra(web, Cursor{TaskResults: map[string]any{}}, false)["output"].(map[string]any); !reflect.DeepEqual(m["data"].(map[string]any)["data"], []any{1, 2}) || m["status"] != "ok" {
		t.Fatalf("http output = %v", m)
	}
	bare := types.Outcome{Status: types.StatusOK, Result: map[string]any{"count": 2}}
	if m := SetExtra(bare, Cursor{TaskResults: map[string]any{}}, false)["output"].(map[string]any); m["status"] != "ok" || !reflect.DeepEqual(m["data"], bare.Result) {
		t.Fatalf("a result without status or data: output = %v", m)
	}
	if p := PolicyExtra(out, Cursor{TaskResults: map[string]any{}}, false)["output"].(map[string]any); p["count"] != nil {
		t.Fatalf("policy output reads result fields: %v", p)
	}
	list := types.Outcome{Status: types.StatusOK, Result: []any{1}}
	if m := SetExtra(list, Cursor{TaskResults: map[string]any{}}, false)["output"].(map[string]any); !reflect.DeepEqual(m["data"], []any{1}) {
		t.Fatalf("list result output = %v", m)
	}
}
