package worker

import (
	"context"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// ErrorMaxSetting is the setting of the kept error message's size (the
// truncation note names it).
const ErrorMaxSetting = "NOETL_TASK_ERROR_MAX_BYTES"

// bound keeps a task attempt's outcome within what the engine's stores
// take, before anything records it (the attempt record, events, state,
// logs; docs "Security", output and error sizes): an error message over
// the worker's ErrorMax is cut with a note giving its size, the setting
// and, when the results tier is there, the logical URI of its full text
// (at most types.StoredErrorMax bytes of it) stored under the attempt's
// coordinates at version "error"; the exception type, HTTP headers and
// logs are cut to their fixed bounds (types.Outcome.Bound). Storing the
// full text is best effort: a failure leaves the note without a URI. An
// outcome whose fields fit is returned unchanged.
func (u *unit) bound(ctx context.Context, task *dsl.Task, out types.Outcome) types.Outcome {
	max := u.w.ErrorMax
	if max <= 0 {
		max = types.DefaultErrorMax
	}
	if out.Error == nil || len(out.Error.Message) <= max {
		out.Bound(max, ErrorMaxSetting)
		return out
	}
	note := ErrorMaxSetting
	if f, ok := u.w.Results.(forcedOffloader); ok {
		text := out.Error.Message
		if len(text) > types.StoredErrorMax {
			text, _ = types.Truncate(text, types.StoredErrorMax, "stored text")
		}
		if u.red != nil {
			text = u.red.String(text)
		}
		c := types.ResultCoords{ExecutionID: u.cmd.ExecutionID, Step: u.cmd.Step + "." + task.Name + "." + itoa(u.cur.Jumps),
			Frame: u.cmd.StepRun, Row: iterOr0(u.cmd.Iteration), Attempt: u.cur.Attempt, Version: "error"}
		if ref, err := f.OffloadForced(ctx, c, text); err == nil && results.IsRef(ref) {
			if in, _ := ref.(map[string]any)[results.RefKey].(map[string]any); in != nil {
				if uri, _ := in["uri"].(string); uri != "" {
					note = "the full text is stored as " + uri + "; " + ErrorMaxSetting
				}
			}
		} else if err != nil {
			u.log.Warn("the full text of a long error message could not be stored", "task", task.Name, "bytes", len(out.Error.Message), "error", err.Error())
		}
	}
	out.Bound(max, note)
	return out
}
