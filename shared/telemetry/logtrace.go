package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// TraceLogAttrs returns the Cloud Logging trace fields of ctx's span
// (logging.googleapis.com/trace = projects/<project>/traces/<trace id>,
// logging.googleapis.com/spanId, logging.googleapis.com/trace_sampled),
// as slog.Logger.With arguments, or nil when ctx holds no valid span. The
// project is the installed Config.Project ("noetl-local" before Setup).
//
// NewLogHandler adds these fields itself to lines logged with a context
// (InfoContext, ...); use TraceLogAttrs for a logger whose lines are
// logged without one (logger.With(telemetry.TraceLogAttrs(ctx)...)), so
// that Cloud Logging still links them to the trace. Do not log such a
// logger's lines with the same context as well: the fields would repeat.
func TraceLogAttrs(ctx context.Context) []any {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	project := "noetl-local"
	activeMu.Lock()
	if active != nil && active.Config.Project != "" {
		project = active.Config.Project
	}
	activeMu.Unlock()
	return []any{
		slog.String(LogKeyTrace, "projects/"+project+"/traces/"+sc.TraceID().String()),
		slog.String(LogKeySpanID, sc.SpanID().String()),
		slog.Bool(LogKeyTraceSampled, sc.IsSampled()),
	}
}
