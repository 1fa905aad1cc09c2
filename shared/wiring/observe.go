package wiring

import (
	"context"
	"log/slog"

	"github.com/noetl/gcpengine/shared/telemetry"
)

// observeDLQ records a message or unit body that function fn acked and
// filed in the DLQ: noetl_dlq_total with reason max_attempts when its
// last push delivery failed (exhausted), else poison when it did not even
// decode to an execution (execID ""), fatal otherwise, and a message_dlq
// line (task_dlq for execute's unit bodies) (NoETL observability spec §8.2, §8.6). msgErr
// is the redacted error.
func observeDLQ(ctx context.Context, log *slog.Logger, fn, kind, messageID, execID, step, msgErr string, exhausted bool) {
	reason := telemetry.DLQFatal
	switch {
	case exhausted:
		reason = telemetry.DLQMaxAttempts
	case execID == "":
		reason = telemetry.DLQPoison
	}
	telemetry.M.DeadLettered(ctx, "", reason, fn)
	ev := telemetry.EventMessageDLQ
	if kind == "unit" {
		ev = telemetry.EventTaskDLQ
	}
	log.ErrorContext(ctx, "message dead-lettered", telemetry.Event(ev), slog.String("function", fn),
		slog.String(telemetry.LogMessageID, messageID), telemetry.ExecutionID(execID), telemetry.StepID(step),
		slog.String(telemetry.LogReason, string(reason)), slog.String(telemetry.LogError, msgErr))
}
