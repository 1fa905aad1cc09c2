package control

import (
	"context"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/types"
)

// cursorIterationEnded is IterationEnded for a cursor loop
// (engine/cursor.go): a failed row fails the step under fail_fast; the
// lane's next unit (the frame's next row, or a new claim) becomes a Cloud
// Task; an empty claim marks the lane done and, when every lane is, the
// loop's result is assembled and loop.done applied. Items are never moved
// out of the command (the plan holds no items to read them back from).
func (c *Control) cursorIterationEnded(ctx context.Context, cmd types.Command, plan *engine.LoopPlan, rec engine.IterationRecord) error {
	after := engine.CursorIterationEnded(*plan, rec)
	switch {
	case after.FailStep:
		return c.applyLoopEnd(ctx, cmd.ExecutionID, plan, engine.LoopFailedEvent(cmd.ExecutionID, *plan, rec.Index, rec.Error, rec.Clock, c.now()))
	case after.HasNext:
		next := engine.CursorIterationCommand(cmd.ExecutionID, *plan, after.Next, after.NextItem, after.NextRest, rec.Clock)
		next.TraceParent = cmd.TraceParent
		_, err := c.Tasks.TaskCreate(ctx, next, c.now())
		return err
	}
	if last, err := c.laneDone(ctx, cmd, plan, rec.Index); err != nil || !last {
		return err
	}
	return c.completeCursorLoop(ctx, cmd.ExecutionID, plan)
}

// completeCursorLoop assembles a cursor loop's result from its iteration
// records (offloaded to the results tier when large) and applies
// loop.done, whose total is the number of rows processed.
func (c *Control) completeCursorLoop(ctx context.Context, executionID string, plan *engine.LoopPlan) error {
	recs, err := c.Store.IterationList(ctx, executionID, plan.Key())
	if err != nil {
		return err
	}
	result, rows, clock := engine.CursorLoopResult(recs)
	ev, err := c.loopDoneEvent(ctx, executionID, plan, recs, result, clock, rows)
	if err != nil {
		return err
	}
	return c.applyLoopEnd(ctx, executionID, plan, ev)
}
