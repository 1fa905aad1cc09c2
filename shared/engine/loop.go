package engine

import (
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

// Loop progression (DSL.md "Loops"). A loop run of N items with
// max_in_flight M is split into L = min(M, N) lanes: lane r holds the
// iterations r, r+L, r+2L, ... and runs them one after another, because
// iteration i, when it ends, dispatches iteration i+L. So at most L
// iterations are in flight without any shared counter, and a lane is done
// when its last iteration ends. The loop is done when all L lanes are done:
// counting L lane markers replaces counting N iteration documents
// (ARCHITECTURE.md "No hot documents"). A sequential loop has one lane.

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

// LoopResult assembles a loop step's result {results: [...]} in iteration
// order from its records (DSL.md "Loops"): an ok iteration contributes its
// result, a failed one {status: error, error}. It also returns the largest
// Clock of the records.
func LoopResult(recs []IterationRecord) (map[string]any, int64) {
	results := make([]any, 0, len(recs))
	var clock int64
	for _, r := range recs {
		if r.Status == types.StatusOK {
			results = append(results, r.Result)
		} else {
			results = append(results, map[string]any{"status": "error", "error": r.Error})
		}
		clock = max(clock, r.Clock)
	}
	return map[string]any{"results": results}, clock
}

// LoopDoneEvent returns the deterministic loop.done event of a loop run
// with its result (LoopResult, or a results-tier reference to it), stamped
// after clock (the latest iteration event).
func LoopDoneEvent(executionID string, p LoopPlan, result any, clock int64, now time.Time) types.Event {
	ev := types.NewEvent(types.EvLoopDone, executionID, "execute", now, p.Step, itoa(p.Run))
	ev.Step, ev.StepRun = p.Step, p.Run
	ev.EntityType, ev.EntityID = "loop", p.Step
	ev.Status = types.StatusOK
	ev.Payload = map[string]any{"result": result, "total": p.Total}
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
	ev.Payload = map[string]any{"error": errv, "iteration": idx}
	ev.Clock = types.HLC(clock, now) + 1
	return ev
}
