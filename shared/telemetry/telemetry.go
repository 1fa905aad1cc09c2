// Package telemetry is the engine's observability library (NoETL observability spec §8.1
// metrics, §8.2 structured logging, §8.3 tracing):
//
//   - Setup/SetupConfig install the process's OpenTelemetry tracer and
//     meter providers from the configuration (FromConfig) and return a slog
//     logger writing JSON lines that Cloud Logging parses (NewLogHandler).
//   - Metrics: M, a typed facade with one method per metric of Instruments
//     (NoETL observability spec §8.1 names, labels and buckets, plus DLQ, retry, lease
//     and result-tier counters); MetricsHandler serves them in the
//     Prometheus text format, or they are pushed to Cloud Monitoring.
//   - Traces: Execution, Unit, StartPlugin, StartRoute and StartWhenEval
//     build the seed's trace model (server.execution → server.dispatch →
//     worker.plugin.<kind>, server.route), with redacted signatures
//     (Signature, SpecSignature, HTTPSignature), head sampling with
//     forcing (NewSampler) and exporters to OTLP, Cloud Trace or files
//     (FileExporter; read back by package tracetree).
//   - Propagation: W3C trace context travels in Pub/Sub message
//     attributes ("traceparent", "tracestate"), Cloud Task HTTP headers
//     and the http tool's requests (Inject, Extract, TraceParent,
//     WithTraceParent), so one trace follows an execution across the
//     control loop.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/noetl/gcpengine/shared/config"
)

// instrumentationName names the engine's tracer and meter.
const instrumentationName = "github.com/noetl/gcpengine"

// Propagator is the W3C trace-context + baggage propagator used everywhere.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Tracer is the engine's tracer ("github.com/noetl/gcpengine"). Setup
// replaces it with one from the configured provider; set it before any
// span is started.
var Tracer trace.Tracer = otel.Tracer(instrumentationName)

// Telemetry is what SetupConfig installed: the providers, the logger and
// the Prometheus handler (nil unless the metrics exporter is prometheus).
type Telemetry struct {
	// Config is the configuration installed.
	Config Config
	// Logger is the Cloud Logging JSON logger (also slog's default).
	Logger *slog.Logger
	// TracerProvider is the global tracer provider (Tracer comes from it).
	TracerProvider *sdktrace.TracerProvider
	// MeterProvider is the meter provider behind M.
	MeterProvider *sdkmetric.MeterProvider
	// Metrics serves /metrics (Prometheus text format) when
	// Config.MetricsExporter is prometheus; nil otherwise.
	Metrics http.Handler
	// TraceFile is the file exporter's file ("" without one).
	TraceFile string

	lastMetricsFlush time.Time
	mu               sync.Mutex
}

var (
	activeMu sync.Mutex
	active   *Telemetry
)

// Setup installs the process's telemetry from the configuration
// (FromConfig, README "Observability") for service (e.g. "noetl-functions") and
// returns its logger, also made slog's default. It never fails: invalid
// settings and exporters that cannot start are logged (severity ERROR)
// and left out, so a function always comes up; telemetry then exports
// less, never crashes it. Call it once per process, before handling
// requests.
func Setup(service string, c config.Config) *slog.Logger {
	cfg, cfgErr := FromConfig(service, c)
	t, err := SetupConfig(context.Background(), cfg)
	if err = errors.Join(cfgErr, err); err != nil {
		t.Logger.Error("telemetry: some settings were ignored", Err(err))
	}
	return t.Logger
}

// SetupConfig installs telemetry as configured by cfg: Tracer, the
// global tracer provider (the same provider with cfg.LibrarySpans, else a
// no-op one) and propagator, the meter provider behind M, and a
// Cloud Logging JSON logger on stderr made slog's default. The previous
// installation, if any, is shut down. The returned Telemetry is always
// usable; err reports the exporters that could not be created (they are
// left out).
func SetupConfig(ctx context.Context, cfg Config) (*Telemetry, error) {
	log := slog.New(NewLogHandler(os.Stderr, LogOptions{Level: cfg.LogLevel, Project: cfg.Project, AddSource: cfg.LogSource, Text: cfg.LogText}))
	if cfg.Service != "" {
		log = log.With("service", cfg.Service)
	}
	slog.SetDefault(log)
	t := &Telemetry{Config: cfg, Logger: log}

	var errs []error
	res, err := newResource(ctx, cfg)
	if err != nil {
		errs = append(errs, err)
	}
	tp, file, err := newTracerProvider(ctx, cfg, res)
	if err != nil {
		errs = append(errs, err)
	}
	t.TracerProvider, t.TraceFile = tp, file
	mp, h, err := newMeterProvider(ctx, cfg, res)
	if err != nil {
		errs = append(errs, err)
	}
	t.MeterProvider, t.Metrics = mp, h

	if cfg.LibrarySpans {
		otel.SetTracerProvider(tp)
	} else {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
	}
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(Propagator)
	Tracer = tp.Tracer(instrumentationName)
	setSampleRate(cfg.SampleRate)
	M.use(mp)

	activeMu.Lock()
	prev := active
	active = t
	activeMu.Unlock()
	if prev != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = prev.shutdown(sctx)
		cancel()
	}
	return t, errors.Join(errs...)
}

// MetricsHandler returns the handler serving the installed metrics in the
// Prometheus text format (mount it at /metrics). When the metrics
// exporter is not prometheus (or Setup was not called) it answers 404
// with a one-line explanation.
func MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		activeMu.Lock()
		t := active
		activeMu.Unlock()
		if t == nil || t.Metrics == nil {
			http.Error(w, "metrics are not served here: NOETL_METRICS_EXPORTER is not prometheus", http.StatusNotFound)
			return
		}
		t.Metrics.ServeHTTP(w, r)
	})
}

// Flush exports what the installed providers hold: every ended span, and
// the metrics when the last metrics push is older than
// Config.MetricsInterval (a push per request would exceed Cloud
// Monitoring's write rate). Call it before a function returns: Cloud
// Functions may freeze the instance's CPU between requests, so batched
// spans would otherwise wait. Bounded by ctx; returns the first error.
func Flush(ctx context.Context) error {
	activeMu.Lock()
	t := active
	activeMu.Unlock()
	if t == nil {
		return nil
	}
	var errs []error
	if err := t.TracerProvider.ForceFlush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("telemetry: flush spans: %w", err))
	}
	if t.Config.MetricsExporter == MetricsGCP {
		t.mu.Lock()
		due := time.Since(t.lastMetricsFlush) >= t.Config.MetricsInterval
		if due {
			t.lastMetricsFlush = time.Now()
		}
		t.mu.Unlock()
		if due {
			if err := t.MeterProvider.ForceFlush(ctx); err != nil {
				errs = append(errs, fmt.Errorf("telemetry: flush metrics: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Shutdown flushes and stops the installed providers (call it when the
// process exits, e.g. on SIGTERM). Telemetry recorded afterwards is
// dropped.
func Shutdown(ctx context.Context) error {
	activeMu.Lock()
	t := active
	active = nil
	activeMu.Unlock()
	if t == nil {
		return nil
	}
	return t.shutdown(ctx)
}

func (t *Telemetry) shutdown(ctx context.Context) error {
	return errors.Join(t.TracerProvider.Shutdown(ctx), t.MeterProvider.Shutdown(ctx))
}

// Inject writes ctx's trace context into a string map (Pub/Sub attributes).
func Inject(ctx context.Context, m map[string]string) {
	Propagator.Inject(ctx, propagation.MapCarrier(m))
}

// Extract returns ctx carrying the trace context found in m.
func Extract(ctx context.Context, m map[string]string) context.Context {
	return Propagator.Extract(ctx, propagation.MapCarrier(m))
}

// InjectHTTP writes ctx's trace context into HTTP headers (Cloud Task
// requests, the http tool's requests).
func InjectHTTP(ctx context.Context, h http.Header) {
	Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// ExtractHTTP returns ctx carrying the trace context of HTTP headers.
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	return Propagator.Extract(ctx, propagation.HeaderCarrier(h))
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
