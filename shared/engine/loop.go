package engine

import (
	"sort"
	"time"

	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Loop progression (NoETL DSL spec "Loops"). A loop run of N items with
// max_in_flight M is split into L = min(M, N) lanes: lane r holds the
// iterations r, r+L, r+2L, ... and runs them one after another, because
// iteration i, when it ends, dispatches iteration i+L. So at most L
// iterations are in flight without any shared counter, and a lane is done
// when its last iteration ends. The loop is done when all L lanes are done:
// counting L lane markers replaces counting N iteration documents
// (README "Architecture" "No hot documents"). A sequential loop has one lane.

// Lanes returns the number of lanes of the plan: min(MaxInFlight, Total),
// at least 1.
func (p LoopPlan) Lanes() int {
	if p.Cursor != nil { // a cursor loop has one lane per cursor worker (cursor.go)
		return max(p.MaxInFlight, 1)
	}
	l := p.MaxInFlight
	if l <= 0 {
		l = 1
	}
	if p.Total < l {
		l = p.Total
	}
	if l < 1 {
		l = 1
	}
	return l
}

// Lane returns the lane of iteration idx.
func (p LoopPlan) Lane(idx int) int { return idx % p.Lanes() }

// IterationCommand returns the unit of work for iteration idx of a loop
// run, carrying item (the plan's element idx; the caller may pass nil and
// set ItemRef for items kept in the results tier) and the Lamport time of
// its producer.
func IterationCommand(executionID string, p LoopPlan, idx int, item any, clock int64) types.Command {
	cmd := types.Command{
		Kind: types.CmdRunStep, ExecutionID: executionID, Step: p.Step, StepRun: p.Run,
		Iteration: types.IntPtr(idx), LoopTotal: p.Total, Item: item,
		Args: p.Args, TaskIndex: 0, Attempt: 1, StateVersion: p.StateVersion, Clock: clock,
	}
	cmd.ID = cmd.TaskName()
	return cmd
}

// IterationRecord is one loop iteration's final record
// (executions/{id}/loops/{step.run}/iterations/{index}). Clock is the
// Lamport time of the iteration's last event, so loop.done can be stamped
// after every iteration.
type IterationRecord struct {
	Index  int          `json:"index"`
	Status types.Status `json:"status"` // ok | error
	Result any          `json:"result,omitempty"`
	Error  any          `json:"error,omitempty"`
	Clock  int64        `json:"clock,omitempty"`
	// Cursor is a cursor loop iteration's frame state (cursor.go).
	Cursor *CursorFrame `json:"cursor,omitempty"`
	// Ctx is the iteration's ctx patch (its set ctx.x / set_ctx targets,
	// with, in a sequential loop, the patches of the iterations before it,
	// which it started from): LoopCtxPatch merges the records' patches
	// into the execution's ctx when the loop ends, as NoETL merges each
	// task sequence's ctx into the execution's variables when it ends
	// (noetl/core/dsl/engine/executor/events.py, call.done of a
	// task_sequence).
	Ctx map[string]any `json:"ctx,omitempty"`
}

// LoopCtxPatch merges the ctx patches of a loop run's iteration records
// (IterationRecord.Ctx) in iteration index order, a later index winning on
// the same key, and returns nil when no iteration patched ctx. The order
// is fixed so that a redelivered loop end computes the same ctx: NoETL
// applies each iteration's patch when its task sequence ends, so its
// result depends on the order iterations finish in; here parallel
// iterations (which only patch ctx with loop.spec.allow_set_ctx) are
// merged by index instead, and a sequential loop's last iteration already
// carries the patches of all the iterations before it. Failed iterations
// contribute nothing.
func LoopCtxPatch(recs []IterationRecord) map[string]any {
	sorted := append([]IterationRecord(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	var out map[string]any
	for _, r := range sorted {
		if r.Status != types.StatusOK || len(r.Ctx) == 0 {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		for k, v := range jsonx.NormalizeMap(r.Ctx) { // records read back from JSON hold json.Number
			out[k] = v
		}
	}
	return out
}

// LoopStats is the stats entry of a loop step's result, NoETL's loop
// aggregation counters (noetl/core/dsl/engine/executor/state.py,
// get_loop_aggregation: {total, success, failed}).
// The counts are int64, the form numbers take once read back from JSON.
func LoopStats(total, failed int) map[string]any {
	return map[string]any{"total": int64(total), "success": int64(total - failed), "failed": int64(failed)}
}

// AfterIteration is what follows the end of one iteration.
type AfterIteration struct {
	// FailStep: the iteration failed and the loop is fail_fast (the
	// default): the step run fails now and no further iteration starts.
	FailStep bool
	// Next is the index of the lane's next iteration, when there is one.
	Next    int
	HasNext bool
	// LaneDone: idx was the last iteration of its lane; the lane's marker
	// must be recorded and the lanes counted.
	LaneDone bool
}

// IterationEnded decides what follows the end of iteration idx (ok reports
// its status): under fail_fast a failed iteration fails the step;
// otherwise the lane goes on with idx+Lanes, or is done (best_effort keeps
// failed iterations as error entries of the results).
func IterationEnded(p LoopPlan, idx int, ok bool) AfterIteration {
	if !ok && p.FailureMode != "best_effort" {
		return AfterIteration{FailStep: true}
	}
	n := idx + p.Lanes()
	if n < p.Total {
		return AfterIteration{Next: n, HasNext: true}
	}
	return AfterIteration{LaneDone: true}
}

// LoopComplete reports whether the counted lane markers mean the loop run
// is done.
func LoopComplete(p LoopPlan, lanesDone int) bool { return lanesDone >= p.Lanes() }

// LoopResult assembles a loop step's result {results: [...], stats:
// {total, success, failed}} in iteration order from its records (NoETL DSL spec
// "Loops"; stats: LoopStats): an ok iteration contributes its result, a
// failed one (best_effort) {status: error, error}. It also returns the
// largest Clock of the records.
func LoopResult(recs []IterationRecord) (map[string]any, int64) {
	results := make([]any, 0, len(recs))
	var clock int64
	failed := 0
	for _, r := range recs {
		if r.Status == types.StatusOK {
			results = append(results, r.Result)
		} else {
			results = append(results, map[string]any{"status": "error", "error": r.Error})
			failed++
		}
		clock = max(clock, r.Clock)
	}
	return map[string]any{"results": results, "stats": LoopStats(len(results), failed)}, clock
}

// LoopDoneEvent returns the deterministic loop.done event of a loop run
// with its result (LoopResult, or a results-tier reference to it), stamped
// after clock (the latest iteration event).
func LoopDoneEvent(executionID string, p LoopPlan, result any, clock int64, now time.Time) types.Event {
	ev := types.NewEvent(types.EvLoopDone, executionID, "execute", now, p.Step, itoa(p.Run))
	ev.Step, ev.StepRun = p.Step, p.Run
	ev.EntityType, ev.EntityID = "loop", p.Step
	ev.Status = types.StatusOK
	ev.Payload = history.Encode(history.LoopDone{Result: result, Total: p.Total})
	ev.Clock = types.HLC(clock, now) + 1
	return ev
}

// LoopFailedEvent returns the deterministic step.failed event of a loop run
// whose iteration idx failed under fail_fast, stamped after clock.
func LoopFailedEvent(executionID string, p LoopPlan, idx int, errv any, clock int64, now time.Time) types.Event {
	ev := types.NewEvent(types.EvStepFailed, executionID, "execute", now, p.Step, itoa(p.Run))
	ev.Step, ev.StepRun = p.Step, p.Run
	ev.EntityType, ev.EntityID = "step", p.Step
	ev.Status = types.StatusFailed
	ev.Iteration = types.IntPtr(idx)
	ev.Payload = history.Encode(history.StepFailed{Error: errv, Iteration: &idx})
	ev.Clock = types.HLC(clock, now) + 1
	return ev
}
