package worker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/noetl/gcpengine/shared/types"
)

// HandOffInlineMax is the largest JSON encoding, in bytes, of a unit's
// continuation (a delayed retry's Cloud Task) carried inline; a larger
// one has its pipeline state (`_prev`, the finished tasks' results, the
// iteration, step and pipeline variables, the ctx patch and a cursor
// loop's frame) moved to the results tier, and the command carries the
// reference (types.Command.Spill). Cloud Tasks refuses task bodies over
// 100 KiB: a pagination unit retrying after a 100 KiB page would
// otherwise be lost.
const HandOffInlineMax = 64 << 10

// spillCursor moves the pipeline state of a continuation command to the
// results tier when the command is larger than HandOffInlineMax.
func (u *unit) spillCursor(ctx context.Context, cmd *types.Command) error {
	if u.w.Results == nil {
		return nil
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("worker: encode continuation: %w", err)
	}
	if len(b) <= HandOffInlineMax {
		return nil
	}
	state := map[string]any{
		"prev": cmd.Prev, "has_prev": cmd.HasPrev, "task_results": cmd.TaskResults, "iter": cmd.Iter,
		"ctx_patch": cmd.CtxPatch, "step_vars": cmd.StepVars, "vars": cmd.Vars, "cursor_rest": cmd.CursorRest,
	}
	coords := types.ResultCoords{ExecutionID: cmd.ExecutionID,
		Step:  cmd.Step + ".handoff." + cmd.TaskName(), // one object per continuation
		Frame: cmd.StepRun, Row: iterOr0(cmd.Iteration), Attempt: 1}
	var ref any
	if lo, ok := u.w.Results.(limitOffloader); ok {
		ref, err = lo.OffloadLimit(ctx, coords, state, 0)
	} else {
		ref, err = u.w.Results.Offload(ctx, coords, state)
	}
	if err != nil {
		return fmt.Errorf("worker: store continuation state: %w", err)
	}
	if ref == nil {
		return nil
	}
	cmd.Prev, cmd.HasPrev, cmd.TaskResults, cmd.Iter = nil, false, nil, nil
	cmd.CtxPatch, cmd.StepVars, cmd.Vars, cmd.CursorRest = nil, nil, nil, nil
	cmd.Spill = ref
	return nil
}

// restoreSpill loads the pipeline state a continuation left in the
// results tier (see spillCursor) back into the unit's command.
func (u *unit) restoreSpill(ctx context.Context) error {
	c := &u.cmd
	if c.Spill == nil {
		return nil
	}
	if u.w.Results == nil {
		return fmt.Errorf("worker: continuation of %s keeps its state in the results tier but no results store is configured", c.Step)
	}
	v, err := u.w.Results.Resolve(ctx, c.Spill)
	if err != nil {
		return fmt.Errorf("worker: load continuation state: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("worker: continuation state of %s is %T, not a mapping", c.Step, v)
	}
	asMap := func(x any) map[string]any { r, _ := x.(map[string]any); return r }
	c.Prev = m["prev"]
	c.HasPrev, _ = m["has_prev"].(bool)
	c.TaskResults, c.Iter = asMap(m["task_results"]), asMap(m["iter"])
	c.CtxPatch, c.StepVars, c.Vars = asMap(m["ctx_patch"]), asMap(m["step_vars"]), asMap(m["vars"])
	c.CursorRest, _ = m["cursor_rest"].([]any)
	c.Spill = nil
	return nil
}
