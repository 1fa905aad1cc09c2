package telemetry

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Cloud Logging's special fields of a structured (JSON) log line
// (cloud.google.com/logging/docs/structured-logging).
const (
	LogKeySeverity       = "severity"
	LogKeyMessage        = "message"
	LogKeyTime           = "time"
	LogKeyTrace          = "logging.googleapis.com/trace"
	LogKeySpanID         = "logging.googleapis.com/spanId"
	LogKeyTraceSampled   = "logging.googleapis.com/trace_sampled"
	LogKeySourceLocation = "logging.googleapis.com/sourceLocation"
)

// LevelCritical is a level above slog.LevelError, logged with severity
// CRITICAL.
const LevelCritical = slog.Level(12)

// Common log fields of NoETL observability spec §8.2 ("Common Fields (Server & Worker)").
const (
	LogExecutionID = "execution_id"
	LogWorkflowRef = "workflow_ref"
	LogStepID      = "step_id"
	LogCallID      = "call_id"
	LogLoopIndex   = "loop_index"
	LogLoopKey     = "loop_key"
	LogToolKind    = "tool_kind"
	LogSinkID      = "sink_id"
	LogAttempt     = "attempt"
	LogMaxAttempts = "max_attempts"
	LogBackoffMS   = "backoff_ms"
	LogDurationMS  = "duration_ms"
	LogOK          = "ok"
	LogErrorClass  = "error_class"
	LogError       = "error"
	LogEvent       = "event"
	LogMessageID   = "message_id"
	LogNextDelayMS = "next_delay_ms"
	LogReason      = "reason"
)

// EventName is the value of a log line's "event" field.
type EventName string

// Log event names: NoETL observability spec §8.2 "Server Log Events" and "Worker Log
// Events", §8.8's when_eval_error, and the engine's execution, lease,
// route and result-tier events in the same style.
const (
	EventStepCalled        EventName = "step_called"
	EventStepParked        EventName = "step_parked"
	EventStepDispatch      EventName = "step_dispatch"
	EventTaskEnqueue       EventName = "task_enqueue"
	EventResultIntegrate   EventName = "result_integrate"
	EventSinkDispatch      EventName = "sink_dispatch"
	EventStepDone          EventName = "step_done"
	EventRouteEdgeSelected EventName = "route_edge_selected"
	EventTaskClaimed       EventName = "task_claimed"
	EventPluginStart       EventName = "plugin_start"
	EventPluginDone        EventName = "plugin_done"
	EventSinkStart         EventName = "sink_start"
	EventSinkDone          EventName = "sink_done"
	EventTaskAck           EventName = "task_ack"
	EventTaskRetry         EventName = "task_retry"
	EventTaskDLQ           EventName = "task_dlq"
	EventWhenEvalError     EventName = "when_eval_error"

	EventExecutionStart EventName = "execution_start"
	EventExecutionDone  EventName = "execution_done"
	EventLeaseReclaimed EventName = "lease_reclaimed"
	EventLeaseLost      EventName = "lease_lost"
	EventResultOffload  EventName = "result_offload"
	EventMessageDLQ     EventName = "message_dlq"
	EventCheckpoint     EventName = "checkpoint"
	EventOutboxReplay   EventName = "outbox_replay"
)

// Event returns the attribute event=<e>.
func Event(e EventName) slog.Attr { return slog.String(LogEvent, string(e)) }

// Typed common fields (NoETL observability spec §8.2), for one-line call sites:
// log.InfoContext(ctx, "step dispatched", telemetry.Event(telemetry.EventStepDispatch), telemetry.StepID(step)).

// ExecutionID returns execution_id=<id>.
func ExecutionID(id string) slog.Attr { return slog.String(LogExecutionID, id) }

// WorkflowRef returns workflow_ref=<path>.
func WorkflowRef(ref string) slog.Attr { return slog.String(LogWorkflowRef, ref) }

// StepID returns step_id=<step>.
func StepID(step string) slog.Attr { return slog.String(LogStepID, step) }

// ToolKind returns tool_kind=<kind>.
func ToolKind(kind string) slog.Attr { return slog.String(LogToolKind, kind) }

// Attempt returns attempt=<n>.
func Attempt(n int) slog.Attr { return slog.Int(LogAttempt, n) }

// LoopIndex returns loop_index=<i>, or an empty attribute (dropped by the
// handler) for nil.
func LoopIndex(i *int) slog.Attr {
	if i == nil {
		return slog.Attr{}
	}
	return slog.Int(LogLoopIndex, *i)
}

// DurationMS returns duration_ms=<ms>.
func DurationMS(ms int64) slog.Attr { return slog.Int64(LogDurationMS, ms) }

// OK returns ok=<b>.
func OK(b bool) slog.Attr { return slog.Bool(LogOK, b) }

// ErrorClass returns error_class=<class>.
func ErrorClass(c string) slog.Attr { return slog.String(LogErrorClass, c) }

// Err returns error=<message> (the caller redacts the message).
func Err(err error) slog.Attr {
	if err == nil {
		return slog.Attr{}
	}
	return slog.String(LogError, err.Error())
}

// logFieldsKey is the context key of the fields added to every line
// logged with that context.
type logFieldsKey struct{}

// WithLogFields returns ctx carrying attrs in addition to those ctx
// already carries: every line logged with ctx (the *Context methods of a
// logger built by NewLogHandler) gets them as top-level fields, the
// seed's "auto-inject" of execution/step context (NoETL observability spec §8.2). A later
// value of the same key wins.
func WithLogFields(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(logFieldsKey{}).([]slog.Attr)
	all := make([]slog.Attr, 0, len(prev)+len(attrs))
	all = append(all, prev...)
	all = append(all, attrs...)
	return context.WithValue(ctx, logFieldsKey{}, all)
}

// LogFields returns the fields WithLogFields put in ctx.
func LogFields(ctx context.Context) []slog.Attr {
	a, _ := ctx.Value(logFieldsKey{}).([]slog.Attr)
	return a
}

// LogOptions configures NewLogHandler.
type LogOptions struct {
	// Level is the minimum level logged (default info).
	Level slog.Leveler
	// Project is the Google Cloud project naming traces in the trace field
	// ("projects/<Project>/traces/<trace id>").
	Project string
	// AddSource adds logging.googleapis.com/sourceLocation
	// ({file, line, function}).
	AddSource bool
	// Text writes slog's text format (key=value pairs, the same keys)
	// instead of JSON (NOETL_LOGGING_FORMAT=text: for a terminal; Cloud
	// Logging parses only JSON).
	Text bool
}

// NewLogHandler returns a slog handler writing one JSON object per line
// to w in the shape Cloud Logging parses (structured logging):
//
//   - severity: DEBUG, INFO, WARNING, ERROR or CRITICAL (slog levels
//     below Info are DEBUG; Info..Warn-1 INFO; Warn..Error-1 WARNING;
//     Error..Critical-1 ERROR; LevelCritical and above CRITICAL),
//   - message, and time (RFC 3339 with nanoseconds),
//   - for a record logged with a context holding a valid span:
//     logging.googleapis.com/trace = projects/<Project>/traces/<trace id>,
//     logging.googleapis.com/spanId = <span id hex>,
//     logging.googleapis.com/trace_sampled = <sampled flag>,
//   - the context's WithLogFields attributes, then the logger's and the
//     record's attributes (NoETL observability spec §8.2 common fields and "event").
//
// Groups (WithGroup) nest the attributes logged after them; the special
// fields above always stay at the top level.
func NewLogHandler(w io.Writer, o LogOptions) slog.Handler {
	lvl := o.Level
	if lvl == nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl, AddSource: o.AddSource, ReplaceAttr: replaceTop}
	var inner slog.Handler = slog.NewJSONHandler(w, opts)
	if o.Text {
		inner = slog.NewTextHandler(w, opts)
	}
	return &logHandler{base: inner, project: o.Project}
}

// replaceTop renames slog's built-in keys to Cloud Logging's.
func replaceTop(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		l, _ := a.Value.Any().(slog.Level)
		return slog.String(LogKeySeverity, Severity(l))
	case slog.MessageKey:
		return slog.String(LogKeyMessage, a.Value.String())
	case slog.TimeKey:
		a.Key = LogKeyTime
		return a
	case slog.SourceKey:
		a.Key = LogKeySourceLocation
		return a
	}
	return a
}

// Severity returns the Cloud Logging severity of a slog level (see
// NewLogHandler).
func Severity(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARNING"
	case l < LevelCritical:
		return "ERROR"
	}
	return "CRITICAL"
}

// logHandler adds the trace and context fields at the top level and
// implements groups itself so that they do not capture those fields.
type logHandler struct {
	base    slog.Handler // JSON handler with the top-level WithAttrs applied
	project string
	frames  []frame // open groups, outermost first
}

type frame struct {
	name  string
	attrs []slog.Attr
}

// Enabled implements slog.Handler.
func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		out.AddAttrs(
			slog.String(LogKeyTrace, "projects/"+h.project+"/traces/"+sc.TraceID().String()),
			slog.String(LogKeySpanID, sc.SpanID().String()),
			slog.Bool(LogKeyTraceSampled, sc.IsSampled()),
		)
	}
	var inner []slog.Attr
	r.Attrs(func(a slog.Attr) bool { inner = append(inner, a); return true })
	if ctxAttrs := LogFields(ctx); len(ctxAttrs) > 0 {
		out.AddAttrs(dedup(ctxAttrs, h.frames, inner)...)
	}
	if len(h.frames) == 0 {
		out.AddAttrs(inner...)
		return h.base.Handle(ctx, out)
	}
	for i := len(h.frames) - 1; i >= 0; i-- {
		f := h.frames[i]
		vals := append(append([]slog.Attr(nil), f.attrs...), inner...)
		inner = []slog.Attr{{Key: f.name, Value: slog.GroupValue(vals...)}}
	}
	out.AddAttrs(inner...)
	return h.base.Handle(ctx, out)
}

// dedup returns the context fields without repeated keys (the last one
// wins) and without the keys the record itself sets at the top level.
func dedup(ctxAttrs []slog.Attr, frames []frame, rec []slog.Attr) []slog.Attr {
	shadow := map[string]bool{}
	if len(frames) == 0 {
		for _, a := range rec {
			shadow[a.Key] = true
		}
	}
	out := make([]slog.Attr, 0, len(ctxAttrs))
	for i := len(ctxAttrs) - 1; i >= 0; i-- {
		a := ctxAttrs[i]
		if a.Key == "" || shadow[a.Key] {
			continue
		}
		shadow[a.Key] = true
		out = append(out, a)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// WithAttrs implements slog.Handler.
func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	if len(h.frames) == 0 {
		c.base = h.base.WithAttrs(attrs)
		return &c
	}
	c.frames = append([]frame(nil), h.frames...)
	last := &c.frames[len(c.frames)-1]
	last.attrs = append(append([]slog.Attr(nil), last.attrs...), attrs...)
	return &c
}

// WithGroup implements slog.Handler.
func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.frames = append(append([]frame(nil), h.frames...), frame{name: name})
	return &c
}
