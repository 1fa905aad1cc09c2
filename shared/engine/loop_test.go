package engine

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

func TestLanes(t *testing.T) {
	cases := []struct {
		name       string
		mif, total int
		want       int
	}{
		{"sequential", 1, 5, 1},
		{"parallel", 3, 10, 3},
		{"fewer items than max_in_flight", 10, 4, 4},
		{"as many items as max_in_flight", 4, 4, 4},
		{"one item", 8, 1, 1},
		{"max_in_flight unset", 0, 5, 1},
		{"max_in_flight negative", -2, 5, 1},
		{"no items", 3, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := LoopPlan{Total: c.total, MaxInFlight: c.mif}
			if got := p.Lanes(); got != c.want {
				t.Fatalf("Lanes(max_in_flight %d, total %d) = %d, want %d", c.mif, c.total, got, c.want)
			}
			for idx := range c.total {
				if got := p.Lane(idx); got != idx%c.want {
					t.Fatalf("Lane(%d) = %d, want %d", idx, got, idx%c.want)
				}
			}
		})
	}
}

// TestSequentialLoopPlansOneLane: the engine plans a sequential loop with
// one lane (one command), whatever its items.
func TestSequentialLoopPlansOneLane(t *testing.T) {
	e := load(t, `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: seq}
workflow:
  - step: start
    loop: {in: "{{ workload.items }}", iterator: item, mode: sequential}
    tool: {kind: noop}
`)
	_, out := started(t, e, map[string]any{"items": []any{"a", "b", "c"}})
	if len(out.Loops) != 1 {
		t.Fatalf("loops %+v", out.Loops)
	}
	p := out.Loops[0]
	if p.Lanes() != 1 || p.Total != 3 || p.FailureMode != "fail_fast" {
		t.Fatalf("plan lanes %d total %d failure_mode %q; want 1 lane of 3, fail_fast", p.Lanes(), p.Total, p.FailureMode)
	}
	if len(out.Commands) != 1 || *out.Commands[0].Iteration != 0 || out.Commands[0].Item != "a" {
		t.Fatalf("commands %+v; want only iteration 0", out.Commands)
	}
}

func TestIterationEnded(t *testing.T) {
	plan := func(total, mif int, mode string) LoopPlan {
		return LoopPlan{Step: "s", Run: 1, Total: total, MaxInFlight: mif, FailureMode: mode}
	}
	cases := []struct {
		name string
		plan LoopPlan
		idx  int
		ok   bool
		want AfterIteration
	}{
		{"ok dispatches the lane's next", plan(10, 3, "fail_fast"), 0, true, AfterIteration{Next: 3, HasNext: true}},
		{"ok in the middle", plan(10, 3, "fail_fast"), 6, true, AfterIteration{Next: 9, HasNext: true}},
		{"ok last of its lane", plan(10, 3, "fail_fast"), 7, true, AfterIteration{LaneDone: true}},
		{"ok last iteration", plan(10, 3, "fail_fast"), 9, true, AfterIteration{LaneDone: true}},
		{"error under fail_fast fails the step", plan(10, 3, "fail_fast"), 2, false, AfterIteration{FailStep: true}},
		{"error in a lane's last iteration under fail_fast", plan(10, 3, "fail_fast"), 9, false, AfterIteration{FailStep: true}},
		{"error with failure_mode unset is fail_fast", plan(10, 3, ""), 2, false, AfterIteration{FailStep: true}},
		{"error under best_effort goes on", plan(10, 3, "best_effort"), 2, false, AfterIteration{Next: 5, HasNext: true}},
		{"error under best_effort ends the lane", plan(10, 3, "best_effort"), 8, false, AfterIteration{LaneDone: true}},
		{"sequential goes one by one", plan(3, 1, "fail_fast"), 0, true, AfterIteration{Next: 1, HasNext: true}},
		{"sequential last", plan(3, 1, "fail_fast"), 2, true, AfterIteration{LaneDone: true}},
		{"fewer items than max_in_flight: every iteration is a lane", plan(4, 10, "fail_fast"), 0, true, AfterIteration{LaneDone: true}},
		{"fewer items than max_in_flight: the last", plan(4, 10, "best_effort"), 3, false, AfterIteration{LaneDone: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IterationEnded(c.plan, c.idx, c.ok); got != c.want {
				t.Fatalf("IterationEnded(total %d, mif %d, %q, idx %d, ok %v) = %+v, want %+v",
					c.plan.Total, c.plan.MaxInFlight, c.plan.FailureMode, c.idx, c.ok, got, c.want)
			}
		})
	}
}

// TestLoopLanesRunEveryIterationOnce simulates loop runs: the first
// Lanes() iterations start, each ended iteration starts what
// IterationEnded names, in a random completion order. Every iteration
// must run exactly once, on its own lane, with at most Lanes() in flight;
// each lane is reported done exactly once, and LoopComplete turns true
// only with the last lane.
func TestLoopLanesRunEveryIterationOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ total, mif int }{{1, 1}, {5, 1}, {10, 3}, {4, 10}, {7, 7}, {100, 8}, {9, 2}} {
		for _, mode := range []string{"fail_fast", "best_effort"} {
			p := LoopPlan{Total: c.total, MaxInFlight: c.mif, FailureMode: mode}
			inflight := []int{}
			for i := range p.Lanes() {
				inflight = append(inflight, i)
			}
			ran := map[int]int{}
			lanes := map[int]bool{}
			for len(inflight) > 0 {
				if len(inflight) > p.Lanes() {
					t.Fatalf("%+v: %d in flight, more than %d lanes", p, len(inflight), p.Lanes())
				}
				k := r.IntN(len(inflight))
				idx := inflight[k]
				inflight = append(inflight[:k], inflight[k+1:]...)
				ran[idx]++
				ok := mode == "fail_fast" || idx%3 != 0 // best_effort: some fail
				a := IterationEnded(p, idx, ok)
				switch {
				case a.FailStep:
					t.Fatalf("%+v: iteration %d (ok %v) failed the step", p, idx, ok)
				case a.HasNext:
					if p.Lane(a.Next) != p.Lane(idx) || a.Next <= idx || a.LaneDone {
						t.Fatalf("%+v: after %d: %+v, want the next of lane %d", p, idx, a, p.Lane(idx))
					}
					inflight = append(inflight, a.Next)
				case a.LaneDone:
					if lanes[p.Lane(idx)] {
						t.Fatalf("%+v: lane %d done twice", p, p.Lane(idx))
					}
					lanes[p.Lane(idx)] = true
					if complete := LoopComplete(p, len(lanes)); complete != (len(lanes) == p.Lanes()) {
						t.Fatalf("%+v: LoopComplete with %d of %d lanes = %v", p, len(lanes), p.Lanes(), complete)
					}
				default:
					t.Fatalf("%+v: after %d: nothing follows", p, idx)
				}
			}
			for i := range c.total {
				if ran[i] != 1 {
					t.Fatalf("%+v: iteration %d ran %d times", p, i, ran[i])
				}
			}
			if len(ran) != c.total || len(lanes) != p.Lanes() || !LoopComplete(p, len(lanes)) {
				t.Fatalf("%+v: ran %d iterations, %d lanes done; want %d and %d", p, len(ran), len(lanes), c.total, p.Lanes())
			}
		}
	}
}

func TestLoopComplete(t *testing.T) {
	cases := []struct {
		total, mif, done int
		want             bool
	}{
		{10, 3, 0, false}, {10, 3, 2, false}, {10, 3, 3, true}, {10, 3, 4, true},
		{4, 10, 3, false}, {4, 10, 4, true},
		{5, 1, 0, false}, {5, 1, 1, true},
	}
	for _, c := range cases {
		p := LoopPlan{Total: c.total, MaxInFlight: c.mif}
		if got := LoopComplete(p, c.done); got != c.want {
			t.Errorf("LoopComplete(total %d, mif %d, %d lanes done) = %v, want %v", c.total, c.mif, c.done, got, c.want)
		}
	}
}

func TestLoopResult(t *testing.T) {
	errv := map[string]any{"kind": "http", "status": 503}
	cases := []struct {
		name      string
		recs      []IterationRecord
		want      string // JSON of the result
		wantClock int64
	}{
		// stats: NoETL's loop aggregation {total, success, failed}.
		{"no iterations", nil, `{"results":[],"stats":{"failed":0,"success":0,"total":0}}`, 0},
		{"all ok, in order", []IterationRecord{
			{Index: 0, Status: types.StatusOK, Result: 1, Clock: 7},
			{Index: 1, Status: types.StatusOK, Result: map[string]any{"a": []any{1, 2}}, Clock: 9},
			{Index: 2, Status: types.StatusOK, Result: nil, Clock: 8},
		}, `{"results":[1,{"a":[1,2]},null],"stats":{"failed":0,"success":3,"total":3}}`, 9},
		{"best_effort keeps failures as error entries", []IterationRecord{
			{Index: 0, Status: types.StatusOK, Result: "a", Clock: 3},
			{Index: 1, Status: types.StatusError, Error: errv, Result: "ignored", Clock: 12},
			{Index: 2, Status: types.StatusOK, Result: "c", Clock: 5},
		}, `{"results":["a",{"error":{"kind":"http","status":503},"status":"error"},"c"],"stats":{"failed":1,"success":2,"total":3}}`, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, clock := LoopResult(c.recs)
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want || clock != c.wantClock {
				t.Fatalf("LoopResult = %s, clock %d; want %s, clock %d", b, clock, c.want, c.wantClock)
			}
		})
	}
}

func TestLoopDoneEvent(t *testing.T) {
	p := LoopPlan{Step: "fetch", Run: 2, Total: 3}
	res := map[string]any{"results": []any{1, 2, 3}}
	ev := LoopDoneEvent("ex1", p, res, 41, t0)
	if ev.EventType != types.EvLoopDone || ev.ExecutionID != "ex1" || ev.Step != "fetch" || ev.StepRun != 2 ||
		ev.EntityType != "loop" || ev.EntityID != "fetch" || ev.Status != types.StatusOK || ev.Clock != t0.UnixMicro()+1 ||
		ev.Timestamp.String() != "2026-11-21T10:00:00.000Z" {
		t.Fatalf("loop.done = %+v", ev)
	}
	if !reflect.DeepEqual(ev.Payload, map[string]any{"result": res, "total": 3}) {
		t.Fatalf("payload %v", ev.Payload)
	}
	// The clock follows its causes (the iterations' clocks) when they are
	// later than the producer's wall clock (hybrid logical clock).
	if late := LoopDoneEvent("ex1", p, res, t0.UnixMicro()+500, t0); late.Clock != t0.UnixMicro()+501 {
		t.Fatalf("loop.done clock %d, want %d", late.Clock, t0.UnixMicro()+501)
	}
	// The id names the loop run only: any producer, any time, any result.
	if again := LoopDoneEvent("ex1", p, nil, 99, t0.Add(time.Hour)); again.EventID != ev.EventID {
		t.Fatal("loop.done id depends on more than the loop run")
	}
	for _, other := range []types.Event{
		LoopDoneEvent("ex2", p, res, 41, t0),
		LoopDoneEvent("ex1", LoopPlan{Step: "fetch", Run: 3, Total: 3}, res, 41, t0),
		LoopDoneEvent("ex1", LoopPlan{Step: "other", Run: 2, Total: 3}, res, 41, t0),
	} {
		if other.EventID == ev.EventID {
			t.Fatalf("loop.done of %s %s.%d has the id of ex1 fetch.2", other.ExecutionID, other.Step, other.StepRun)
		}
	}
}

// TestLoopFailedEvent: the step.failed of a fail_fast loop run has one id
// whichever iteration failed, so concurrent failures fail the step once.
func TestLoopFailedEvent(t *testing.T) {
	p := LoopPlan{Step: "fetch", Run: 2, Total: 3}
	errv := map[string]any{"kind": "http"}
	ev := LoopFailedEvent("ex1", p, 1, errv, 10, t0)
	if ev.EventType != types.EvStepFailed || ev.Step != "fetch" || ev.StepRun != 2 || ev.EntityType != "step" ||
		ev.Status != types.StatusFailed || ev.Iteration == nil || *ev.Iteration != 1 || ev.Clock != t0.UnixMicro()+1 {
		t.Fatalf("step.failed = %+v", ev)
	}
	if !reflect.DeepEqual(ev.Payload, map[string]any{"error": errv, "iteration": 1}) {
		t.Fatalf("payload %v", ev.Payload)
	}
	if other := LoopFailedEvent("ex1", p, 2, "other", 20, t0.Add(time.Minute)); other.EventID != ev.EventID {
		t.Fatal("step.failed ids differ by failed iteration")
	}
	if ev.EventID == LoopDoneEvent("ex1", p, nil, 10, t0).EventID {
		t.Fatal("step.failed and loop.done of one run share an id")
	}
}

func TestIterationCommand(t *testing.T) {
	p := LoopPlan{Step: "fetch", Run: 2, Total: 5, Args: map[string]any{"page": 1}, StateVersion: 7}
	c := IterationCommand("ex1", p, 3, "d", 12)
	want := types.Command{Kind: types.CmdRunStep, ExecutionID: "ex1", Step: "fetch", StepRun: 2, Iteration: types.IntPtr(3),
		LoopTotal: 5, Item: "d", Args: map[string]any{"page": 1}, TaskIndex: 0, Attempt: 1, StateVersion: 7, Clock: 12}
	want.ID = want.TaskName()
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("IterationCommand = %+v\nwant %+v", c, want)
	}
	if c.UnitKey() != "fetch.2.i3" {
		t.Fatalf("unit key %q", c.UnitKey())
	}
	ids := map[string]bool{}
	for i := range p.Total {
		ids[IterationCommand("ex1", p, i, nil, 0).ID] = true
	}
	if len(ids) != p.Total {
		t.Fatalf("%d distinct ids for %d iterations", len(ids), p.Total)
	}
	if IterationCommand("ex1", p, 3, "other item", 99).ID != c.ID {
		t.Fatal("an iteration's command id depends on its item or clock (a redispatch would not dedup)")
	}
}

// TestLoopCtxPatch: iteration ctx patches merge in index order (a later
// index wins), whatever order the records come in; failed iterations and
// empty patches contribute nothing; no patch at all is nil.
func TestLoopCtxPatch(t *testing.T) {
	recs := []IterationRecord{
		{Index: 2, Status: types.StatusOK, Ctx: map[string]any{"last": 2, "two": true}},
		{Index: 0, Status: types.StatusOK, Ctx: map[string]any{"last": 0, "zero": true}},
		{Index: 1, Status: types.StatusError, Ctx: map[string]any{"last": 1, "failed": true}},
		{Index: 3, Status: types.StatusOK},
	}
	want := map[string]any{"last": int64(2), "two": true, "zero": true} // numbers by the jsonx rule
	if got := LoopCtxPatch(recs); !reflect.DeepEqual(got, want) {
		t.Fatalf("LoopCtxPatch = %v, want %v", got, want)
	}
	if got := LoopCtxPatch([]IterationRecord{{Index: 0, Status: types.StatusOK}}); got != nil {
		t.Fatalf("no patches = %v, want nil", got)
	}
}
