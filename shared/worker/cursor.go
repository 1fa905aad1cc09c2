package worker

import (
	"context"
	"fmt"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// cursorTask is the task label of a cursor loop's claim in events and
// tool requests.
const cursorTask = "cursor.claim"

// isCursor reports whether the unit is an iteration of a cursor loop
// (engine/cursor.go).
func (u *unit) isCursor() bool {
	return u.cmd.Iteration != nil && u.step.Loop != nil && u.step.Loop.Cursor != nil
}

// cursorClaim runs the claim of a cursor loop's claim unit (an iteration
// command without a row): the cursor's claim statement, rendered in the
// step's scope plus __frame_max_rows, on the cursor's connection. The
// first claimed row becomes the unit's item and the others travel with it
// (Command.CursorRest); an empty claim ends the unit at once (its lane is
// done). done reports that the unit ended here. A retryable claim failure
// is returned as an error (the unit is delivered again); any other fails
// the iteration (error kind "cursor") and ends the lane.
//
// The claim is the unit's first side effect: a crash between the claim and
// the end of the unit leaves the claimed rows to the claim statement's own
// lease recovery (NoETL's claims reclaim stale rows), as in NoETL.
func (u *unit) cursorClaim(ctx context.Context) (done bool, err error) {
	c := u.cmd
	if !u.isCursor() || c.Item != nil || c.TaskIndex != 0 || c.Attempt > 1 || c.Jumps != 0 || c.ChildID != "" {
		return false, nil
	}
	cur := u.step.Loop.Cursor
	plan, err := u.w.Control.Plan(ctx, c.ExecutionID, engine.LoopKey(c.Step, c.StepRun))
	if err != nil {
		return false, err
	}
	maxRows := 1
	if plan.Cursor != nil && plan.Cursor.MaxRows > 0 {
		maxRows = plan.Cursor.MaxRows
	}
	sc := u.scope(map[string]any{engine.FrameMaxRowsName: maxRows})
	fail := func(msg string) (bool, error) {
		em := map[string]any{"kind": "cursor", "message": fmt.Sprintf("step %s cursor claim: %s", u.step.Name, msg), "task": cursorTask}
		u.cursorEnd = &engine.CursorFrame{Empty: true}
		return true, u.finish(ctx, false, nil, em)
	}
	if cur.Kind != "" && cur.Kind != "postgres" {
		return fail(fmt.Sprintf("cursor kind %q is not available in this engine (only postgres)", cur.Kind))
	}
	sql, err := template.Render(cur.Claim, sc)
	if err != nil {
		return fail(err.Error())
	}
	cfg := map[string]any{"command": fmt.Sprint(sql)}
	if cur.Auth != "" {
		auth, err := template.Render(cur.Auth, sc)
		if err != nil {
			return fail("auth: " + err.Error())
		}
		cfg["auth"] = auth
	}
	tool := u.w.Tools["postgres"]
	if tool == nil {
		return fail("the postgres kind is not available")
	}
	if err := u.applyAuth("postgres", cfg); err != nil {
		return fail(err.Error())
	}
	out := tool.Run(ctx, tools.Request{ExecutionID: c.ExecutionID, Step: u.step.Name, Task: cursorTask, Attempt: 1,
		Args: map[string]any{}, Config: cfg})
	if out.Status != types.StatusOK {
		msg := "claim failed"
		if out.Error != nil {
			msg = out.Error.Message
			if out.Error.Retryable {
				return false, fmt.Errorf("worker: cursor claim of %s (retryable): %s", u.step.Name, msg)
			}
		}
		return fail(msg)
	}
	res, _ := out.Result.(map[string]any)
	rows, _ := res["rows"].([]any)
	u.log.Info("cursor claim", "rows", len(rows), "max_rows", maxRows)
	if len(rows) == 0 {
		return true, u.endEmptyClaim(ctx)
	}
	u.cmd.Item, u.cmd.CursorRest = rows[0], rows[1:]
	return false, nil
}

// endEmptyClaim records a claim unit whose claim came back empty and
// carries out the end of its lane (control.IterationEnded).
func (u *unit) endEmptyClaim(ctx context.Context) error {
	c := u.cmd
	rec := engine.IterationRecord{Index: *c.Iteration, Status: types.StatusOK, Clock: u.clock, Cursor: &engine.CursorFrame{Empty: true}}
	b := u.nextBatch(u.seal())
	_, err := u.w.Control.CompleteIteration(ctx, control.IterationEnd{Cmd: c, Record: rec, Holder: u.leaseHolder(), Batch: &b})
	return err
}

// cursorFrame is the frame state a cursor iteration leaves in its record
// (nil outside cursor loops).
func (u *unit) cursorFrame() *engine.CursorFrame {
	if !u.isCursor() {
		return nil
	}
	if u.cursorEnd != nil {
		return u.cursorEnd
	}
	return &engine.CursorFrame{Rest: u.cmd.CursorRest}
}
