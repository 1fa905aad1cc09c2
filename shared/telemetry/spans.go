package telemetry

import (
	"context"
	"crypto/sha256"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/noetl/gcpengine/shared/redact"
)

// Span names of the trace model (NoETL observability spec §8.3 "Trace Model").
const (
	SpanExecution = "server.execution"
	SpanDispatch  = "server.dispatch"
	SpanRoute     = "server.route"
	SpanWhenEval  = "server.when_eval"
	// SpanPluginPrefix + tool kind names an attempt: "worker.plugin.http".
	SpanPluginPrefix = "worker.plugin."
	// SpanSinkPrefix + sink id names a sink's write inside its attempt:
	// "worker.sink.postgres:store".
	SpanSinkPrefix = "worker.sink."
)

// Span attribute keys (NoETL observability spec §8.3; step_run, task, unit, status and
// error_class are the engine's additions).
const (
	AttrExecutionID   = "execution_id"
	AttrWorkflowRef   = "workflow_ref"
	AttrWorkloadSize  = "workload_size"
	AttrStepID        = "step_id"
	AttrStepRun       = "step_run"
	AttrLoopIndex     = "loop_index"
	AttrUnit          = "unit"
	AttrTask          = "task"
	AttrToolKind      = "tool_kind"
	AttrSpecSignature = "spec_signature"
	AttrArgsSignature = "args_signature"
	AttrAttempt       = "attempt"
	AttrFromStep      = "from_step"
	AttrEdgeIndex     = "edge_index"
	AttrTargetStep    = "target_step"
	AttrCondition     = "condition"
	AttrWhenExpr      = "when_expr"
	AttrOutcome       = "outcome"
	AttrStatus        = "status"
	AttrErrorClass    = "error_class"
	AttrSinkID        = "sink_id"
	AttrSinkType      = "sink_type"
)

// sampleRate is the head-sampling ratio Setup configured, as float64 bits
// (read by the Execution and Unit helpers to take the same decision as the
// sampler when no decision was propagated).
var sampleRate atomic.Uint64

func init() { setSampleRate(DefaultSampleRate) }

func setSampleRate(r float64) { sampleRate.Store(floatBits(r)) }

// ExecutionTraceID returns the trace id of execution id: the first 16
// bytes of SHA-256("noetl/trace" 0x1f id). Every span of an execution
// belongs to this trace, whichever process records it, so the trace can
// be found from the execution id alone (Cloud Trace: the trace id in
// hex; tracetree reads it from the spans' execution_id attribute).
func ExecutionTraceID(id string) trace.TraceID {
	var t trace.TraceID
	copy(t[:], derive("noetl/trace", id))
	return t
}

func derive(parts ...string) []byte {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0x1f})
		}
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

func spanIDOf(parts ...string) trace.SpanID {
	var s trace.SpanID
	copy(s[:], derive(parts...))
	if !s.IsValid() { // astronomically unlikely; keep the id non-zero
		s[7] = 1
	}
	return s
}

// executionSpanContext returns the span context of an execution's root
// span with the given sampled flag.
func executionSpanContext(id string, sampled bool) trace.SpanContext {
	var fl trace.TraceFlags
	if sampled {
		fl = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: ExecutionTraceID(id), SpanID: spanIDOf("noetl/span", id, SpanExecution), TraceFlags: fl, Remote: true,
	})
}

// decision returns the sampled flag of execution id's trace: the flag of
// ctx's span when it is in that trace, else force or the ratio decision.
func decision(ctx context.Context, id string, force bool) (sampled, forced bool) {
	tid := ExecutionTraceID(id)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && sc.TraceID() == tid {
		return sc.IsSampled(), sc.IsSampled() && !Sampled(tid, bitsFloat(sampleRate.Load()))
	}
	if force {
		return true, true
	}
	return Sampled(tid, bitsFloat(sampleRate.Load())), false
}

// Execution describes the root span of one execution ("server.execution",
// NoETL observability spec §8.3). An execution outlives every function invocation, so its
// root span cannot stay open in memory: Context gives the processes of
// the execution a parent with the root's deterministic ids, and End
// records the root span once, when the execution is terminal, with the
// start time given.
type Execution struct {
	// ID is the execution id (attribute execution_id).
	ID string
	// WorkflowRef is the playbook path (attribute workflow_ref).
	WorkflowRef string
	// WorkloadSize is the number of top-level workload keys (attribute
	// workload_size; never the values).
	WorkloadSize int
	// Force puts the execution's trace in the sample (WorkloadForcesTrace:
	// workload.trace=true).
	Force bool
	// ParentExecutionID links a child execution (a `kind: playbook` task)
	// to its parent's root span; "" for none.
	ParentExecutionID string
}

// WorkloadForcesTrace reports whether a workload asks for its execution
// to be traced: workload.trace is true (a bool, or a string that
// strconv.ParseBool reads as true: "true", "1", "t", ...) (NoETL observability spec §8.3
// "Force sampling: executions tagged with workload.trace=true"). Use it
// for Execution.Force.
func WorkloadForcesTrace(workload map[string]any) bool {
	switch v := workload["trace"].(type) {
	case bool:
		return v
	case string:
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return false
}

// Context returns ctx whose parent span is the execution's root (ids
// derived from e.ID). If ctx already holds a span of the execution's
// trace, ctx is returned as is (it carries a finer parent and the
// propagated sampling decision). Otherwise the execution is sampled when
// e.Force is set, when ctx holds a sampled remote span context of another
// trace (the caller's traceparent: a client that traces asks for the
// execution to be traced; a span started locally does not count), or by
// the ratio rule: the decision then travels in the traceparent of every
// message and Cloud Task derived from the returned context. Call it at
// execution start (api, with the request's context) and wherever a unit
// starts without a propagated traceparent.
func (e Execution) Context(ctx context.Context) context.Context {
	tid := ExecutionTraceID(e.ID)
	sc := trace.SpanContextFromContext(ctx)
	if sc.IsValid() && sc.TraceID() == tid {
		return ctx
	}
	sampled := e.Force || (sc.IsValid() && sc.IsRemote() && sc.IsSampled()) || Sampled(tid, bitsFloat(sampleRate.Load()))
	return trace.ContextWithRemoteSpanContext(ctx, executionSpanContext(e.ID, sampled))
}

// End records the execution's root span from start to end with its
// terminal status ("ok", "fail", "canceled"); err (already redacted by the
// caller) sets the span status to Error. ctx is any context of the
// execution (its sampled flag is reused). Recording it twice (a
// redelivered terminal transition) yields the same span id; readers keep
// one.
func (e Execution) End(ctx context.Context, start, end time.Time, status ExecStatus, err error) {
	sampled, forced := decision(ctx, e.ID, e.Force)
	attrs := []attribute.KeyValue{
		attribute.String(AttrExecutionID, e.ID), attribute.String(AttrWorkflowRef, e.WorkflowRef),
		attribute.Int(AttrWorkloadSize, e.WorkloadSize), attribute.String(AttrStatus, string(status)),
	}
	if sampled && (forced || e.Force) {
		attrs = append(attrs, attribute.Bool(AttrForceSample, true))
	}
	root := executionSpanContext(e.ID, sampled)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal)}
	if e.ParentExecutionID != "" {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: executionSpanContext(e.ParentExecutionID, sampled)}))
	}
	ctx = context.WithValue(ctx, forcedIDsKey{}, forcedIDs{trace: root.TraceID(), span: root.SpanID()})
	_, span := Tracer.Start(ctx, SpanExecution, opts...)
	if err != nil || status == ExecFail {
		msg := string(status)
		if err != nil {
			msg = redact.Keys(err.Error()).(string)
		}
		span.SetStatus(codes.Error, msg)
	} else {
		span.SetStatus(codes.Ok, "")
	}
	span.End(trace.WithTimestamp(end))
}

// Unit describes the "server.dispatch" span of one unit of work (one step
// run, or one loop iteration of it; NoETL observability spec §8.3, parent server.execution).
// A unit may take several Cloud Task deliveries (delayed retries), so like
// Execution its span has a deterministic id: Context makes it the parent
// of the unit's attempt spans, End records it once the unit is done.
type Unit struct {
	// ExecutionID is the execution the unit belongs to (attribute
	// execution_id; it derives the trace id).
	ExecutionID string
	// Key is the unit's key (types.Command.UnitKey: "step.run" or
	// "step.run.iN"); it derives the span id (attribute unit).
	Key string
	// Step is the step name (attribute step_id).
	Step string
	// StepRun is the 1-based run number of the step (attribute step_run).
	StepRun int
	// LoopIndex is the 0-based iteration of a loop unit, nil otherwise
	// (attribute loop_index).
	LoopIndex *int
	// ToolKind is the kind of the unit's first task (attribute tool_kind).
	ToolKind string
	// Force: see Execution.Force (used when no decision was propagated).
	Force bool
}

func (u Unit) spanContext(sampled bool) trace.SpanContext {
	var fl trace.TraceFlags
	if sampled {
		fl = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: ExecutionTraceID(u.ExecutionID), SpanID: spanIDOf("noetl/span", u.ExecutionID, SpanDispatch, u.Key), TraceFlags: fl, Remote: true,
	})
}

// Context returns ctx whose parent span is the unit's server.dispatch
// span: StartPlugin and StartWhenEval under it become its children. The
// sampled flag is the one ctx carries for the execution's trace (else
// u.Force or the ratio rule).
func (u Unit) Context(ctx context.Context) context.Context {
	sampled, _ := decision(ctx, u.ExecutionID, u.Force)
	return trace.ContextWithRemoteSpanContext(ctx, u.spanContext(sampled))
}

// End records the unit's server.dispatch span from start (when the unit
// was dispatched, or its first delivery began) to end; err (already
// redacted) marks it Error.
func (u Unit) End(ctx context.Context, start, end time.Time, err error) {
	sampled, _ := decision(ctx, u.ExecutionID, u.Force)
	self := u.spanContext(sampled)
	attrs := []attribute.KeyValue{
		attribute.String(AttrExecutionID, u.ExecutionID), attribute.String(AttrStepID, u.Step),
		attribute.Int(AttrStepRun, u.StepRun), attribute.String(AttrUnit, u.Key), attribute.String(AttrToolKind, u.ToolKind),
	}
	if u.LoopIndex != nil {
		attrs = append(attrs, attribute.Int(AttrLoopIndex, *u.LoopIndex))
	}
	pctx := trace.ContextWithRemoteSpanContext(ctx, executionSpanContext(u.ExecutionID, sampled))
	pctx = context.WithValue(pctx, forcedIDsKey{}, forcedIDs{trace: self.TraceID(), span: self.SpanID()})
	_, span := Tracer.Start(pctx, SpanDispatch, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	EndSpan(span, err)
	span.End(trace.WithTimestamp(end))
}

// Plugin describes the span of one task attempt, "worker.plugin.<kind>"
// (NoETL observability spec §8.3, parent server.dispatch). Signatures are redacted shapes
// (SpecSignature, Signature), never payloads.
type Plugin struct {
	// ExecutionID is the execution (attribute execution_id).
	ExecutionID string
	// Step is the step name (attribute step_id).
	Step string
	// Task is the task's name in the step's pipeline (attribute task).
	Task string
	// Kind is the tool kind, "http", "postgres", ... (span name suffix,
	// attribute tool_kind).
	Kind string
	// Attempt is the 1-based attempt number (attribute attempt).
	Attempt int
	// SpecSignature is SpecSignature(kind, config as written) (attribute
	// spec_signature).
	SpecSignature string
	// ArgsSignature is Signature(args) (attribute args_signature).
	ArgsSignature string
}

// StartPlugin starts the attempt span under ctx's span (Unit.Context);
// end it with EndPlugin.
func StartPlugin(ctx context.Context, p Plugin) (context.Context, trace.Span) {
	return Tracer.Start(ctx, SpanPluginPrefix+p.Kind, trace.WithAttributes(
		attribute.String(AttrExecutionID, p.ExecutionID), attribute.String(AttrStepID, p.Step),
		attribute.String(AttrTask, p.Task), attribute.String(AttrToolKind, p.Kind), attribute.Int(AttrAttempt, p.Attempt),
		attribute.String(AttrSpecSignature, p.SpecSignature), attribute.String(AttrArgsSignature, p.ArgsSignature),
	))
}

// EndPlugin ends an attempt span: errorClass ("" when ok) becomes the
// error_class attribute and err (already redacted) the Error status.
func EndPlugin(span trace.Span, errorClass string, err error) {
	if errorClass != "" {
		span.SetAttributes(attribute.String(AttrErrorClass, errorClass))
	}
	EndSpan(span, err)
	span.End()
}

// Route describes one arc decision, "server.route" (NoETL observability spec §8.3, parent
// server.execution). Condition is the arc's when expression as written in
// the playbook (a template, not rendered values).
type Route struct {
	// ExecutionID is the execution (attribute execution_id).
	ExecutionID string
	// FromStep is the step whose arcs are evaluated (attribute from_step).
	FromStep string
	// EdgeIndex is the 0-based position of the arc in the step's arcs
	// (attribute edge_index).
	EdgeIndex int
	// TargetStep is the arc's target step (attribute target_step).
	TargetStep string
	// Condition is the arc's when template as written, "" for none
	// (attribute condition; secret patterns masked).
	Condition string
}

// StartRoute starts the span of an arc decision as a child of the
// execution's root span, linked to ctx's span (the unit whose boundary
// event is being routed); end it with EndRoute.
func StartRoute(ctx context.Context, r Route) (context.Context, trace.Span) {
	sampled, _ := decision(ctx, r.ExecutionID, false)
	opts := []trace.SpanStartOption{trace.WithAttributes(
		attribute.String(AttrExecutionID, r.ExecutionID), attribute.String(AttrFromStep, r.FromStep),
		attribute.Int(AttrEdgeIndex, r.EdgeIndex), attribute.String(AttrTargetStep, r.TargetStep),
		attribute.String(AttrCondition, redact.Keys(r.Condition).(string)),
	)}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	pctx := trace.ContextWithRemoteSpanContext(ctx, executionSpanContext(r.ExecutionID, sampled))
	return Tracer.Start(pctx, SpanRoute, opts...)
}

// EndRoute ends an arc decision span with its outcome (taken, skipped or
// error; err, already redacted, marks it Error).
func EndRoute(span trace.Span, outcome EdgeOutcome, err error) {
	span.SetAttributes(attribute.String(AttrOutcome, string(outcome)))
	EndSpan(span, err)
	span.End()
}

// Sink describes a sink's write, "worker.sink.<sink_id>" (NoETL
// observability spec §8.3): a side-effecting storage task (postgres,
// duckdb, gcs, transfer), a child of its attempt's worker.plugin.<kind>.
type Sink struct {
	// ID is the sink id, "<kind>:<task>" (attribute sink_id).
	ID string
	// Type is the sink's kind (attribute sink_type).
	Type string
}

// StartSink starts a sink's span under ctx's span (the attempt's); end it
// with EndSink.
func StartSink(ctx context.Context, s Sink) (context.Context, trace.Span) {
	return Tracer.Start(ctx, SpanSinkPrefix+s.ID, trace.WithAttributes(
		attribute.String(AttrSinkID, s.ID), attribute.String(AttrSinkType, s.Type)))
}

// EndSink ends a sink's span: ok, or Error with err (already redacted).
func EndSink(span trace.Span, err error) {
	EndSpan(span, err)
	span.End()
}

// WhenEval describes a when-condition evaluation, "server.when_eval"
// (NoETL observability spec §8.3, parent server.dispatch).
type WhenEval struct {
	// ExecutionID is the execution (attribute execution_id).
	ExecutionID string
	// StepID is the step whose condition is evaluated (attribute step_id).
	StepID string
	// WhenExpr is the when template as written (attribute when_expr;
	// secret patterns masked).
	WhenExpr string
}

// StartWhenEval starts a when-evaluation span under ctx's span; end it
// with EndWhenEval.
func StartWhenEval(ctx context.Context, w WhenEval) (context.Context, trace.Span) {
	return Tracer.Start(ctx, SpanWhenEval, trace.WithAttributes(
		attribute.String(AttrExecutionID, w.ExecutionID), attribute.String(AttrStepID, w.StepID),
		attribute.String(AttrWhenExpr, redact.Keys(w.WhenExpr).(string)),
	))
}

// EndWhenEval ends a when-evaluation span with its outcome.
func EndWhenEval(span trace.Span, outcome WhenOutcome, err error) {
	span.SetAttributes(attribute.String(AttrOutcome, string(outcome)))
	EndSpan(span, err)
	span.End()
}

// EndSpan sets span's status from err without ending it: Error with err's
// message passed through redact.Keys (the caller should pass an error
// already redacted with the execution's keychain), or Ok.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, redact.Keys(err.Error()).(string))
		return
	}
	span.SetStatus(codes.Ok, "")
}

func floatBits(f float64) uint64 { return math.Float64bits(f) }

func bitsFloat(b uint64) float64 { return math.Float64frombits(b) }
