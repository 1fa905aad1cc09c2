package telemetry

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/config"
)

// Metrics exporters (Config.MetricsExporter, NOETL_METRICS_EXPORTER).
const (
	// MetricsPrometheus keeps metrics in the process and serves them in the
	// Prometheus text format from MetricsHandler (the local stack's
	// /metrics on the functions host; NoETL observability spec §8.1 "Export: /metrics
	// endpoint").
	MetricsPrometheus = "prometheus"
	// MetricsGCP pushes metrics over OTLP/gRPC to Google Cloud's Telemetry
	// API (telemetry.googleapis.com), which stores them in Cloud Monitoring
	// as Google Managed Prometheus series
	// (prometheus.googleapis.com/<name>/<kind>), so the same PromQL works in
	// Cloud Monitoring and in a local Prometheus.
	MetricsGCP = "gcp"
	// MetricsNone records nothing (instruments are no-ops).
	MetricsNone = "none"
)

// Trace exporters (Config.TraceExporters, NOETL_TRACING_EXPORTER).
const (
	// TracesOTLP sends spans over OTLP to Config.TraceEndpoint.
	TracesOTLP = "otlp"
	// TracesGCP sends spans over OTLP/gRPC to Google Cloud's Telemetry API
	// (Cloud Trace) with Application Default Credentials.
	TracesGCP = "gcp"
	// TracesFile appends spans as JSON lines (tracetree.Span) to a file
	// under Config.TraceDir, read back by tracetree (`noetl trace ID`).
	TracesFile = "file"
	// TracesNone exports nothing.
	TracesNone = "none"
)

// GCPTelemetryEndpoint is the host:port of Google Cloud's Telemetry API,
// the OTLP/gRPC endpoint of Cloud Trace and Cloud Monitoring.
const GCPTelemetryEndpoint = "telemetry.googleapis.com:443"

// DefaultSampleRate is the head-sampling ratio of executions when
// NOETL_TRACING_SAMPLE_RATE is unset (NoETL observability spec §8.3 "Default: 5–10%";
// §8.12 tracing.sample_rate: 0.1).
const DefaultSampleRate = 0.1

// DefaultMetricsInterval is the push interval of the gcp metrics exporter
// when NOETL_METRICS_EXPORT_INTERVAL_S is unset.
const DefaultMetricsInterval = 60 * time.Second

// Config is the observability configuration of a process. FromEnv reads
// it from the environment; the zero value exports nothing and logs JSON at
// info level to stderr.
type Config struct {
	// Service is the OpenTelemetry service.name and the logs' "service"
	// field (e.g. "noetl-functions").
	Service string
	// Project is the Google Cloud project id (GOOGLE_CLOUD_PROJECT, default
	// "noetl-local"); it names the trace in log entries
	// ("projects/<Project>/traces/<trace id>") and is the gcp.project_id
	// resource attribute of exported telemetry.
	Project string

	// LogLevel is the minimum level logged (NOETL_LOG_LEVEL: debug, info,
	// warn, error; default info).
	LogLevel slog.Level
	// LogSource adds "logging.googleapis.com/sourceLocation" to every entry
	// (NOETL_LOG_SOURCE=true; default false).
	LogSource bool
	// LogText writes slog's key=value text lines instead of Cloud
	// Logging's JSON (NOETL_LOGGING_FORMAT=text; default json).
	LogText bool

	// MetricsExporter is one of MetricsPrometheus, MetricsGCP, MetricsNone
	// (NOETL_METRICS_EXPORTER; default prometheus, or none when
	// NOETL_METRICS_ENABLED=false).
	MetricsExporter string
	// MetricsInterval is how often the gcp exporter pushes
	// (NOETL_METRICS_EXPORT_INTERVAL_S; default 60s, at least 5s).
	MetricsInterval time.Duration

	// TraceExporters lists where spans go: any of TracesOTLP, TracesGCP,
	// TracesFile (NOETL_TRACING_EXPORTER, comma-separated). When the
	// variable is unset the list is "file" if NOETL_TRACE_DIR is set plus
	// "otlp" if NOETL_TRACING_ENDPOINT is set; NOETL_TRACING_ENABLED=false
	// or "none" empties it.
	TraceExporters []string
	// TraceEndpoint is the OTLP endpoint (NOETL_TRACING_ENDPOINT):
	// http://host:4318 or https://... for OTLP/HTTP (path /v1/traces is
	// added when the URL has none), grpc://host:4317 (plaintext) or
	// grpcs://host:443 (TLS) for OTLP/gRPC.
	TraceEndpoint string
	// TraceDir is the directory of the file exporter (NOETL_TRACE_DIR; the
	// local stack uses .stack/traces).
	TraceDir string
	// SampleRate is the fraction of executions (and of other root spans)
	// sampled at the head, in [0, 1] (NOETL_TRACING_SAMPLE_RATE; default
	// DefaultSampleRate). Executions with workload.trace=true are always
	// sampled (NoETL observability spec §8.3 "Force sampling").
	SampleRate float64
	// LibrarySpans also records the spans of the Google Cloud client
	// libraries (Firestore, Pub/Sub, Cloud Tasks, Cloud Storage calls),
	// which use the global tracer provider (NOETL_TRACING_LIBRARY_SPANS;
	// default false: only the engine's spans, those of Tracer, are
	// recorded, and the global provider is a no-op that keeps propagating
	// the context).
	LibrarySpans bool
	// ForceSampleOnError exports spans that end with an error status even
	// when their trace was not sampled (NOETL_TRACING_FORCE_SAMPLE_ON_ERROR;
	// default true; NoETL observability spec §8.12 tracing.force_sample_on_error). See
	// NewSampler for how this works with head sampling.
	ForceSampleOnError bool
}

// FromConfig returns the observability configuration of service from the
// process configuration (shared/config: NOETL_LOGGING_*, NOETL_METRICS_*,
// NOETL_TRACING_*, NOETL_TRACE_DIR, validated there; README
// "Observability"). The trace exporters: NOETL_TRACING_EXPORTER when set
// ("none" lists none), else "file" if NOETL_TRACE_DIR is set plus "otlp"
// if NOETL_TRACING_ENDPOINT is; NOETL_TRACING_ENABLED=false empties the
// list; NOETL_METRICS_ENABLED=false makes the metrics exporter none. An
// exporter whose settings are missing (file without a directory, otlp
// without an endpoint) is left out and reported in the error, so a
// caller may log it and go on.
func FromConfig(service string, cfg config.Config) (Config, error) {
	c := Config{
		Service:            service,
		Project:            cfg.Project,
		LogLevel:           logLevel(cfg.Logging.Level),
		LogSource:          cfg.Logging.Source,
		LogText:            cfg.Logging.Format == "text",
		MetricsExporter:    cfg.Metrics.Exporter,
		MetricsInterval:    cfg.Metrics.ExportInterval,
		SampleRate:         cfg.Tracing.SampleRate,
		ForceSampleOnError: cfg.Tracing.ForceSampleOnError,
		LibrarySpans:       cfg.Tracing.LibrarySpans,
		TraceEndpoint:      cfg.Tracing.Endpoint,
		TraceDir:           cfg.Tracing.Dir,
	}
	if c.MetricsExporter == "" || !cfg.Metrics.Enabled {
		c.MetricsExporter = MetricsNone
	}
	if c.MetricsInterval <= 0 {
		c.MetricsInterval = DefaultMetricsInterval
	}
	if len(cfg.Tracing.Exporter) > 0 {
		for _, e := range cfg.Tracing.Exporter {
			if e = strings.ToLower(strings.TrimSpace(e)); e != TracesNone && e != "" {
				c.TraceExporters = append(c.TraceExporters, e)
			}
		}
	} else {
		if c.TraceDir != "" {
			c.TraceExporters = append(c.TraceExporters, TracesFile)
		}
		if c.TraceEndpoint != "" {
			c.TraceExporters = append(c.TraceExporters, TracesOTLP)
		}
	}
	if !cfg.Tracing.Enabled {
		c.TraceExporters = nil
	}
	return c, c.validateTraces()
}

// logLevel maps NOETL_LOGGING_LEVEL (debug, info, warn, error) to a slog
// level (info for anything else).
func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// validateTraces drops the trace exporters whose settings are missing or
// invalid and reports them.
func (c *Config) validateTraces() error {
	var errs []error
	var keep []string
	for _, e := range c.TraceExporters {
		switch e {
		case TracesFile:
			if c.TraceDir == "" {
				errs = append(errs, errors.New("trace exporter file: NOETL_TRACE_DIR is not set"))
				continue
			}
		case TracesOTLP:
			if _, _, err := parseEndpoint(c.TraceEndpoint); err != nil {
				errs = append(errs, fmt.Errorf("trace exporter otlp: %w", err))
				continue
			}
		}
		keep = append(keep, e)
	}
	c.TraceExporters = keep
	return errors.Join(errs...)
}

// parseEndpoint splits an OTLP endpoint URL into its protocol ("http" or
// "grpc") and the URL to dial.
func parseEndpoint(s string) (proto string, u *url.URL, err error) {
	if s == "" {
		return "", nil, errors.New("NOETL_TRACING_ENDPOINT is not set")
	}
	u, err = url.Parse(s)
	if err != nil || u.Host == "" {
		return "", nil, fmt.Errorf("NOETL_TRACING_ENDPOINT=%q: want http(s)://host:port[/path] or grpc(s)://host:port", s)
	}
	switch u.Scheme {
	case "http", "https":
		return "http", u, nil
	case "grpc", "grpcs":
		return "grpc", u, nil
	}
	return "", nil, fmt.Errorf("NOETL_TRACING_ENDPOINT=%q: scheme %q is not http, https, grpc or grpcs", s, u.Scheme)
}
