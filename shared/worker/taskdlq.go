package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Task failures in the DLQ (NoETL observability spec §8.6 "When to DLQ":
// max attempts exceeded, a non-retryable error class). A task whose retry
// policy — its own or the default one — ran out of attempts, or that
// failed with an error no policy handles and that is not retryable
// (engine.DefaultFatal), is filed in the DLQ with the seed's fields (its
// tool kind, its sink_id when it writes, last_error, last_stack, the
// attempts, its rendered configuration) unless NOETL_DLQ_ENABLED=false. A
// failure an author decided (`do: fail`) is not filed: the playbook
// handles it.
//
// What happens to the step then depends on the hold (NOETL_DLQ_HOLD, a
// playbook's executor.spec.dlq_hold): without it (the default) the step
// fails at once, as it always did, and the entry is the record (status
// done); with it the unit is parked under its entry, as a dead-lettered
// delivery is, until an operator replays it — from the failed task, as a
// fresh attempt, with `--patch spec.<key>=…` correcting its rendered
// configuration — or discards it (the step then fails with kind
// dead_lettered).

// taskDLQReason says whether a finished move is a failure to file ("" =
// not one): max_attempts or fatal.
func taskDLQReason(d engine.Decision, mv engine.Move) string {
	if mv.Kind != engine.MoveFinish || mv.OK || mv.TaskEnd != types.EvTaskFailed {
		return ""
	}
	switch {
	case mv.Exhausted:
		return string(telemetry.DLQMaxAttempts)
	case d.Default == engine.DefaultFatal:
		return string(telemetry.DLQFatal)
	}
	return ""
}

// holdTaskFailures reports whether a filed task failure parks its unit:
// the playbook's executor.spec.dlq_hold, else Worker.HoldTaskFailures.
func (w *Worker) holdTaskFailures(pb *dsl.Playbook) bool {
	if spec, ok := pb.Executor["spec"].(map[string]any); ok {
		if v, ok := spec["dlq_hold"].(bool); ok {
			return v
		}
	}
	return w.HoldTaskFailures
}

// fileTaskFailure files the failed task at the unit's cursor (see above).
// held reports the unit parked under the entry: the caller then ends the
// delivery without the unit's boundary event.
func (u *unit) fileTaskFailure(ctx context.Context, task *dsl.Task, out types.Outcome, reason string, attempt int) (held bool, err error) {
	if !u.w.FileTaskFailures {
		return false, nil
	}
	kind := toolKind(u.pb, task)
	// The entry replays the failed task as a fresh attempt of the same
	// position (its number follows the last one, so its events are its own).
	cmd := u.cmd
	u.cur.Into(&cmd)
	cmd.Attempt = attempt + 1
	cmd.ChildID, cmd.SpecPatch = "", nil
	cmd.NotBefore = time.Time{}
	cmd.Clock = u.clock
	cmd.ID = cmd.TaskName()
	now := u.w.now().UTC()
	raw := mustJSON(cmd)
	if u.red != nil {
		raw = u.red.SecretsBytes(raw)
	}
	payload, _ := json.Marshal(u.maskAny(jsonAny(raw)))
	msg := "task failed"
	if out.Error != nil {
		msg = string(out.Error.Kind) + ": " + out.Error.Message
	}
	msg = u.red.String(msg)
	spec, _ := json.Marshal(u.maskAny(u.lastSpec))
	e := store.DLQEntry{
		MessageID: DLQMessageID(cmd), ExecutionID: cmd.ExecutionID, StepID: cmd.Step, LoopIndex: cmd.Iteration, ToolKind: kind,
		Attempts: attempt, LastError: msg, LastStack: u.lastStack(task, kind, out, attempt), FirstSeen: now, LastSeen: now,
		Payload: string(payload), Spec: string(spec), Source: Source, Kind: store.DLQUnit, Unit: string(raw),
		ContextExcerpt: excerpt(fmt.Sprintf("task %s of unit %s (%s after %d attempts): %s", task.Name, cmd.UnitKey(), reason, attempt, msg)),
	}
	if engine.IsSink(u.pb, task, kind) {
		e.SinkID = sinkID(kind, task)
	}
	if cmd.Iteration != nil {
		e.LoopKey = engine.LoopKey(cmd.Step, cmd.StepRun)
	}
	if !u.w.holdTaskFailures(u.pb) {
		// The record: the step fails at once (the caller goes on).
		e.Status, e.Note = store.DLQDone, "not held: the step failed with it (NOETL_DLQ_HOLD or executor.spec.dlq_hold holds a failure for a replay)"
		if err := u.w.Store.DLQPut(ctx, e); err != nil {
			return false, err
		}
		u.observeTaskDLQ(ctx, e, reason, false)
		return false, nil
	}
	if err := u.flush(ctx); err != nil {
		return false, err
	}
	fo, err := u.w.Control.FileUnit(ctx, control.FileParams{Unit: cmd, Holder: u.holder, Entry: e})
	if err != nil {
		return false, err
	}
	if !fo.Filed {
		u.log.Info("not holding a failed task in the DLQ: "+fo.Reason, "task", task.Name)
		return false, nil
	}
	u.observeTaskDLQ(ctx, e, reason, true)
	ev := u.w.unitEvent(cmd, types.EvUnitDeadLettered, history.UnitDeadLettered{DLQID: e.MessageID, Attempts: attempt, Error: msg}, "dlq", "task")
	ev.Status = types.StatusError
	if err := u.w.publishOne(ctx, ev); err != nil {
		return true, err
	}
	if cmd.Iteration == nil && u.holder != "" {
		u.w.releaseLease(context.WithoutCancel(ctx), cmd, u.holder)
	}
	return true, nil
}

// lastStack is a task failure's NoETL observability spec §8.6 last_stack:
// where in the pipeline it failed and how, with the tail of the tool's
// own output (a python traceback, a shell's stderr), redacted.
func (u *unit) lastStack(task *dsl.Task, kind string, out types.Outcome, attempt int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s run %d", u.cmd.Step, u.cmd.StepRun)
	if u.cmd.Iteration != nil {
		fmt.Fprintf(&b, " iteration %d", *u.cmd.Iteration)
	}
	fmt.Fprintf(&b, " > task %s (kind %s, #%d of the pipeline) attempt %d, jumps %d", task.Name, kind, u.cur.TaskIndex, attempt, u.cur.Jumps)
	if out.Error != nil {
		fmt.Fprintf(&b, "\n%s (retryable %t", out.Error.Kind, out.Error.Retryable)
		if out.Error.Status != 0 {
			fmt.Fprintf(&b, ", HTTP %d", out.Error.Status)
		}
		fmt.Fprintf(&b, "): %s", out.Error.Message)
	}
	if out.Logs != "" {
		b.WriteString("\n" + out.Logs)
	}
	return excerpt(u.red.String(b.String()))
}

// observeTaskDLQ counts a filed task failure (noetl_dlq_total{kind,
// reason, source}) and logs task_dlq (NoETL observability spec §8.2, §8.6).
func (u *unit) observeTaskDLQ(ctx context.Context, e store.DLQEntry, reason string, held bool) {
	telemetry.M.DeadLettered(ctx, e.ToolKind, telemetry.DLQReason(reason), Source)
	u.log.ErrorContext(ctx, "task failure filed in the DLQ", telemetry.Event(telemetry.EventTaskDLQ), telemetry.ToolKind(e.ToolKind),
		slog.String("dlq_id", e.MessageID), slog.String(telemetry.LogSinkID, e.SinkID), slog.Int(telemetry.LogAttempt, e.Attempts),
		slog.String(telemetry.LogReason, reason), slog.Bool("held", held), slog.String(telemetry.LogError, e.LastError))
}
