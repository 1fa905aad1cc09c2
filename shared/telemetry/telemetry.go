// Package telemetry sets up JSON logging (log/slog) and OpenTelemetry trace
// propagation (W3C trace context) for the functions. Trace context travels
// in Pub/Sub message attributes ("traceparent", "tracestate") and Cloud Task
// HTTP headers, so one trace follows an execution across the control loop
// (seed 000 §8.3).
package telemetry

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is the W3C trace-context + baggage propagator used everywhere.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Tracer is the engine's tracer ("github.com/noetl/gcpengine").
var Tracer trace.Tracer = otel.Tracer("github.com/noetl/gcpengine")

// Setup installs the global tracer provider (always sampling, no exporter
// unless one is configured by the deployment) and propagator, and returns a
// JSON slog logger at the level named by NOETL_LOG_LEVEL (debug|info|warn|
// error, default info) writing to stderr.
func Setup(service string) *slog.Logger {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	Tracer = tp.Tracer("github.com/noetl/gcpengine")
	lvl := slog.LevelInfo
	switch strings.ToLower(os.Getenv("NOETL_LOG_LEVEL")) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	l := slog.New(&traceHandler{slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})}).With("service", service)
	slog.SetDefault(l)
	return l
}

// traceHandler adds trace_id and span_id of the record's context.
type traceHandler struct{ slog.Handler }

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &traceHandler{h.Handler.WithAttrs(a)}
}

func (h *traceHandler) WithGroup(n string) slog.Handler { return &traceHandler{h.Handler.WithGroup(n)} }

// Inject writes ctx's trace context into a string map (Pub/Sub attributes).
func Inject(ctx context.Context, m map[string]string) {
	Propagator.Inject(ctx, propagation.MapCarrier(m))
}

// Extract returns ctx carrying the trace context found in m.
func Extract(ctx context.Context, m map[string]string) context.Context {
	return Propagator.Extract(ctx, propagation.MapCarrier(m))
}

// TraceParent returns the W3C traceparent of ctx ("" when none).
func TraceParent(ctx context.Context) string {
	m := map[string]string{}
	Inject(ctx, m)
	return m["traceparent"]
}

// WithTraceParent returns ctx carrying the remote span context of a
// traceparent header value.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return Extract(ctx, map[string]string{"traceparent": tp})
}
