package cloudtasks

import (
	"context"
	"log/slog"
	"path"

	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// observeEnqueued records a Cloud Task created on queue (a full queue
// path): noetl_task_queue_inflight{pool=<queue id>} += 1 and a
// task_enqueue line (NoETL observability spec §8.1, §8.2).
func observeEnqueued(ctx context.Context, cmd types.Command, queue string) {
	pool := path.Base(queue)
	telemetry.M.TaskEnqueued(ctx, pool)
	args := []any{telemetry.Event(telemetry.EventTaskEnqueue), telemetry.ExecutionID(cmd.ExecutionID), telemetry.StepID(cmd.Step),
		slog.String(telemetry.LogMessageID, cmd.TaskName()), slog.String("queue", pool), slog.String("command", string(cmd.Kind))}
	if cmd.Iteration != nil {
		args = append(args, telemetry.LoopIndex(cmd.Iteration))
	}
	if !cmd.NotBefore.IsZero() {
		args = append(args, slog.Time("not_before", cmd.NotBefore))
	}
	slog.Default().DebugContext(ctx, "unit enqueued", args...)
}
