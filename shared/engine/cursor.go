package engine

import (
	"fmt"
	"math"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// Cursor loops (loop.cursor + loop.spec.mode: cursor; NoETL's cursor-loop
// design, dsl.Cursor and dsl.Frame). Instead of a collection known when
// the loop starts, W = max_in_flight cursor workers pull work: each worker
// claims a frame of up to frame.max_rows rows with the cursor's claim
// statement, processes the rows one after another (the step's pipeline
// once per row, the row bound to the iterator), and claims again; it stops
// when a claim comes back empty. The loop is done when every worker has
// stopped (loop.done with {results: [...]}, the rows' results in claim
// order).
//
// This maps onto the lanes of a collection loop (loop.go): worker r is
// lane r, and its k-th unit is iteration index r + k*W. A unit whose
// command carries no item is a claim: the worker (shared/worker) runs the
// claim, binds the first row and carries the frame's other rows in the
// command (types.Command.CursorRest) and, when the unit ends, in its
// iteration record (IterationRecord.Cursor), so the next unit of the lane
// takes the next row, or claims again after the frame's last row. An empty
// claim ends the lane.

// CursorPlan is the cursor part of a cursor loop's plan: the frame policy
// rendered when the loop started.
type CursorPlan struct {
	// MaxRows is the most rows one claim leases (frame.max_rows), given to
	// the claim template as __frame_max_rows.
	MaxRows int `json:"max_rows"`
	// Process is "row" (the only mode that runs: the pipeline once per
	// row).
	Process string `json:"process"`
}

// CursorFrame is what a cursor iteration leaves for its lane (stored in
// its IterationRecord).
type CursorFrame struct {
	// Empty marks a claim that returned no row: the lane is done.
	Empty bool `json:"empty,omitempty"`
	// Rest are the frame's rows after this one, in claim order.
	Rest []any `json:"rest,omitempty"`
}

// FrameMaxRowsName is the template name the claim statement reads the
// frame size by (NoETL: `LIMIT {{ __frame_max_rows }}`).
const FrameMaxRowsName = "__frame_max_rows"

// startCursorLoop plans a cursor loop run: W claim units, one per lane.
func (t *transition) startCursorLoop(step *dsl.Step, ss *StepState, args map[string]any) error {
	st := t.st
	l := step.Loop
	sc := template.NewScope(template.ScopeParams{Workload: st.Workload, Ctx: st.Ctx, Args: args, ExecutionID: st.ExecutionID, Results: t.resultViews(), Keychain: st.Keychain})
	w, err := LoopMaxInFlight(l, sc, t.e.Opts.DefaultMaxInFlight)
	if err != nil {
		return t.failLoop(step, ss, err.Error())
	}
	frame, err := RenderFrame(l.Frame, sc)
	if err != nil {
		return t.failLoop(step, ss, err.Error())
	}
	if frame.Process != "" && frame.Process != "row" {
		return t.failLoop(step, ss, fmt.Sprintf("cursor loop: frame.process %q is not supported by this engine (use process: row)", frame.Process))
	}
	fm := step.FailureMode
	if fm == "" {
		fm = "fail_fast"
	}
	ss.Status = types.StatusRunning
	ss.Loop = &LoopStatus{Total: 0, Mode: "cursor", MaxInFlight: w}
	t.event(types.EvStepStarted, step.Name, ss.Run, history.StepStarted{Loop: true})
	t.event(types.EvLoopStarted, step.Name, ss.Run, history.LoopStarted{Mode: "cursor", MaxInFlight: w, FrameMaxRows: &frame.MaxRows})
	plan := LoopPlan{Step: step.Name, Run: ss.Run, Total: 0, Iterator: l.Iterator, Mode: "cursor", MaxInFlight: w,
		FailureMode: fm, Args: args, StateVersion: st.Version, Cursor: &CursorPlan{MaxRows: frame.MaxRows, Process: "row"}}
	t.out.Loops = append(t.out.Loops, plan)
	for i := 0; i < plan.Lanes(); i++ {
		t.out.Commands = append(t.out.Commands, IterationCommand(st.ExecutionID, plan, i, nil, 0))
	}
	return nil
}

// RenderFrame returns the frame policy of a run: f (nil = NoETL's
// defaults) with its templated numeric fields (dsl.Frame.Templates)
// rendered in sc. A field that does not render to a number in its range
// is an error.
func RenderFrame(f *dsl.Frame, sc template.Scope) (dsl.Frame, error) {
	out := dsl.Frame{MaxRows: 1, MaxSeconds: 30, MaxBytes: 67108864, LeaseSeconds: 120, HeartbeatSeconds: 30,
		RowConcurrency: 1, Process: "row", RetryMode: "whole_frame", MaxAttempts: 3}
	if f != nil {
		out = *f
	}
	for field, tmpl := range out.Templates {
		v, err := template.Render(tmpl, sc)
		if err != nil {
			return out, fmt.Errorf("cursor loop: frame.%s: %w", field, err)
		}
		n, ok := number(v)
		if !ok {
			return out, fmt.Errorf("cursor loop: frame.%s %q rendered %v, want a number", field, tmpl, v)
		}
		whole := n == math.Trunc(n)
		switch field {
		case "max_rows", "max_bytes", "row_concurrency", "max_attempts":
			if !whole || n < 1 {
				return out, fmt.Errorf("cursor loop: frame.%s rendered %v, want an integer ≥ 1", field, v)
			}
		default:
			if n <= 0 {
				return out, fmt.Errorf("cursor loop: frame.%s rendered %v, want a number > 0", field, v)
			}
		}
		switch field {
		case "max_rows":
			out.MaxRows = int(n)
		case "max_bytes":
			out.MaxBytes = int(n)
		case "row_concurrency":
			out.RowConcurrency = int(n)
		case "max_attempts":
			out.MaxAttempts = int(n)
		case "max_seconds":
			out.MaxSeconds = n
		case "lease_seconds":
			out.LeaseSeconds = n
		case "heartbeat_seconds":
			out.HeartbeatSeconds = n
		}
	}
	if out.MaxRows < 1 {
		out.MaxRows = 1
	}
	return out, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case string:
		if n, ok := wholeNumber(x); ok {
			return float64(n), true
		}
		var f float64
		if _, err := fmt.Sscanf(x, "%g", &f); err == nil {
			return f, true
		}
	}
	return 0, false
}

// CursorAfter is what follows the end of a cursor loop's iteration.
type CursorAfter struct {
	AfterIteration
	// NextItem is the next unit's row (nil: the next unit claims a new
	// frame); NextRest the frame's rows after it.
	NextItem any
	NextRest []any
}

// CursorIterationEnded decides what follows the end of a cursor loop's
// iteration rec (cf. IterationEnded): a failed row fails the step under
// fail_fast; an empty claim ends the lane; otherwise the lane goes on at
// rec.Index + W with the frame's next row, or with a claim (NextItem nil)
// after the frame's last row.
func CursorIterationEnded(p LoopPlan, rec IterationRecord) CursorAfter {
	if rec.Status != types.StatusOK && p.FailureMode != "best_effort" {
		return CursorAfter{AfterIteration: AfterIteration{FailStep: true}}
	}
	if rec.Cursor != nil && rec.Cursor.Empty {
		return CursorAfter{AfterIteration: AfterIteration{LaneDone: true}}
	}
	a := CursorAfter{AfterIteration: AfterIteration{Next: rec.Index + p.Lanes(), HasNext: true}}
	if rec.Cursor != nil && len(rec.Cursor.Rest) > 0 {
		a.NextItem, a.NextRest = rec.Cursor.Rest[0], rec.Cursor.Rest[1:]
	}
	return a
}

// CursorIterationCommand is the unit of iteration idx of a cursor loop
// run carrying row item (nil: a claim) and the frame's rows after it.
func CursorIterationCommand(executionID string, p LoopPlan, idx int, item any, rest []any, clock int64) types.Command {
	cmd := IterationCommand(executionID, p, idx, item, clock)
	cmd.CursorRest = rest
	return cmd
}

// CursorLoopResult assembles a cursor loop's result {results: [...],
// stats} from
// its iteration records in index order, skipping empty claims (cf.
// LoopResult), and returns the number of rows and the largest Clock.
func CursorLoopResult(recs []IterationRecord) (map[string]any, int, int64) {
	results := make([]any, 0, len(recs))
	var clock int64
	failed := 0
	for _, r := range recs {
		clock = max(clock, r.Clock)
		if r.Cursor != nil && r.Cursor.Empty {
			continue
		}
		if r.Status == types.StatusOK {
			results = append(results, r.Result)
		} else {
			results = append(results, map[string]any{"status": "error", "error": r.Error})
			failed++
		}
	}
	return map[string]any{"results": results, "stats": LoopStats(len(results), failed)}, len(results), clock
}
