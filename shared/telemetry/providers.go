package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/contrib/detectors/gcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/oauth"
)

// usesGCP reports whether an exporter of cfg talks to Google Cloud.
func (c Config) usesGCP() bool {
	if c.MetricsExporter == MetricsGCP {
		return true
	}
	for _, e := range c.TraceExporters {
		if e == TracesGCP {
			return true
		}
	}
	return false
}

// newResource describes the process: service.name, a fresh
// service.instance.id (each Cloud Functions instance writes its own
// cumulative series), gcp.project_id, OTEL_RESOURCE_ATTRIBUTES, and on
// Google Cloud the platform's attributes (region, instance).
func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
		resource.WithAttributes(
			semconv.ServiceName(cfg.Service),
			semconv.ServiceInstanceID(uuid.NewString()),
			attribute.String("gcp.project_id", cfg.Project),
		),
	}
	if cfg.usesGCP() {
		opts = append(opts, resource.WithDetectors(gcp.NewDetector()))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil {
		err = fmt.Errorf("telemetry: resource: %w", err)
		if res == nil {
			res = resource.Default()
		}
	}
	return res, err
}

// googleCreds returns per-RPC Application Default Credentials for the
// Telemetry API.
func googleCreds(ctx context.Context) (grpc.DialOption, error) {
	creds, err := oauth.NewApplicationDefault(ctx, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return nil, fmt.Errorf("application default credentials: %w", err)
	}
	return grpc.WithPerRPCCredentials(creds), nil
}

// newTracerProvider builds the tracer provider of cfg: the engine's
// sampler and id generator, and one span processor per trace exporter
// behind the export gate. It returns the file exporter's path ("" when
// none) and the errors of the exporters left out.
func newTracerProvider(ctx context.Context, cfg Config, res *resource.Resource) (*sdktrace.TracerProvider, string, error) {
	var procs []sdktrace.SpanProcessor
	var errs []error
	file := ""
	for _, e := range cfg.TraceExporters {
		switch e {
		case TracesFile:
			fe, err := NewFileExporter(cfg.TraceDir, cfg.Service)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			file = fe.Path()
			// Synchronous: `noetl trace` sees a span as soon as it ends.
			procs = append(procs, sdktrace.NewSimpleSpanProcessor(fe))
		case TracesOTLP:
			exp, err := otlpTraceExporter(ctx, cfg.TraceEndpoint)
			if err != nil {
				errs = append(errs, fmt.Errorf("telemetry: otlp trace exporter: %w", err))
				continue
			}
			procs = append(procs, sdktrace.NewBatchSpanProcessor(exp))
		case TracesGCP:
			dial, err := googleCreds(ctx)
			if err == nil {
				var exp sdktrace.SpanExporter
				exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(GCPTelemetryEndpoint), otlptracegrpc.WithDialOption(dial))
				if err == nil {
					procs = append(procs, sdktrace.NewBatchSpanProcessor(exp))
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("telemetry: gcp trace exporter: %w", err))
			}
		}
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(NewSampler(cfg.SampleRate, cfg.ForceSampleOnError && len(procs) > 0)),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithResource(res),
	}
	if len(procs) > 0 {
		opts = append(opts, sdktrace.WithSpanProcessor(newExportGate(cfg.ForceSampleOnError, procs...)))
	}
	return sdktrace.NewTracerProvider(opts...), file, errors.Join(errs...)
}

// otlpTraceExporter returns the OTLP exporter of endpoint (see
// Config.TraceEndpoint).
func otlpTraceExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	proto, u, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(u.Host)}
		if u.Scheme == "grpc" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	path := u.Path
	if path == "" || path == "/" {
		path = "/v1/traces"
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(path)}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, opts...)
}

// newMeterProvider builds the meter provider of cfg and, for the
// prometheus exporter, the /metrics handler.
func newMeterProvider(ctx context.Context, cfg Config, res *resource.Resource) (*sdkmetric.MeterProvider, http.Handler, error) {
	switch cfg.MetricsExporter {
	case MetricsPrometheus:
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mp, err := PrometheusMeterProvider(reg, res)
		if err != nil {
			return sdkmetric.NewMeterProvider(sdkmetric.WithResource(res)), nil, err
		}
		return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
	case MetricsGCP:
		dial, err := googleCreds(ctx)
		if err == nil {
			var exp sdkmetric.Exporter
			exp, err = otlpMetricExporter(ctx, GCPTelemetryEndpoint, otlpmetricgrpc.WithDialOption(dial))
			if err == nil {
				return pushMeterProvider(res, exp, cfg.MetricsInterval), nil, nil
			}
		}
		return sdkmetric.NewMeterProvider(sdkmetric.WithResource(res)), nil, fmt.Errorf("telemetry: gcp metrics exporter: %w", err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithResource(res)), nil, nil
}

// otlpMetricExporter returns the OTLP/gRPC metric exporter of the gcp
// metrics exporter, sending to endpoint (host:port; GCPTelemetryEndpoint
// in production) with opts, in requests of at most TelemetryAPIMaxPoints
// data points.
func otlpMetricExporter(ctx context.Context, endpoint string, opts ...otlpmetricgrpc.Option) (sdkmetric.Exporter, error) {
	exp, err := otlpmetricgrpc.New(ctx, append([]otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(endpoint)}, opts...)...)
	if err != nil {
		return nil, err
	}
	return newBatchingExporter(exp, TelemetryAPIMaxPoints), nil
}

// pushMeterProvider returns a meter provider that pushes its metrics
// through exp every interval (the gcp exporter's periodic reader).
func pushMeterProvider(res *resource.Resource, exp sdkmetric.Exporter, interval time.Duration) *sdkmetric.MeterProvider {
	return sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
}

// PrometheusMeterProvider returns a meter provider whose metrics are
// collected by reg in the Prometheus format, with the names and labels
// of Instruments exactly (no otel_scope_* labels; target_info carries
// the resource). res may be nil.
func PrometheusMeterProvider(reg prometheus.Registerer, res *resource.Resource) (*sdkmetric.MeterProvider, error) {
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(exp)}
	if res != nil {
		opts = append(opts, sdkmetric.WithResource(res))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}
