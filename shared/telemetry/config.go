package telemetry

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
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

// FromEnv reads the configuration of service from the environment (README
// "Observability" lists the variables). Invalid values are reported in the
// returned error (all of them, joined) and replaced by their defaults in
// the returned Config, so a caller may log the error and go on.
func FromEnv(service string) (Config, error) {
	var errs []error
	c := Config{
		Service:            service,
		Project:            envOr("GOOGLE_CLOUD_PROJECT", "noetl-local"),
		LogLevel:           slog.LevelInfo,
		MetricsExporter:    MetricsPrometheus,
		MetricsInterval:    DefaultMetricsInterval,
		SampleRate:         DefaultSampleRate,
		ForceSampleOnError: true,
		TraceEndpoint:      os.Getenv("NOETL_TRACING_ENDPOINT"),
		TraceDir:           os.Getenv("NOETL_TRACE_DIR"),
	}
	if v := os.Getenv("NOETL_LOG_LEVEL"); v != "" {
		switch strings.ToLower(v) {
		case "debug":
			c.LogLevel = slog.LevelDebug
		case "info":
		case "warn", "warning":
			c.LogLevel = slog.LevelWarn
		case "error":
			c.LogLevel = slog.LevelError
		default:
			errs = append(errs, fmt.Errorf("NOETL_LOG_LEVEL=%q: want debug, info, warn or error", v))
		}
	}
	c.LogSource = envBool("NOETL_LOG_SOURCE", false, &errs)

	if v := os.Getenv("NOETL_METRICS_EXPORTER"); v != "" {
		switch strings.ToLower(v) {
		case MetricsPrometheus, MetricsGCP, MetricsNone:
			c.MetricsExporter = strings.ToLower(v)
		default:
			errs = append(errs, fmt.Errorf("NOETL_METRICS_EXPORTER=%q: want prometheus, gcp or none", v))
		}
	}
	if !envBool("NOETL_METRICS_ENABLED", true, &errs) {
		c.MetricsExporter = MetricsNone
	}
	if v := os.Getenv("NOETL_METRICS_EXPORT_INTERVAL_S"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 5 {
			errs = append(errs, fmt.Errorf("NOETL_METRICS_EXPORT_INTERVAL_S=%q: want a number of seconds >= 5", v))
		} else {
			c.MetricsInterval = time.Duration(n * float64(time.Second))
		}
	}

	if v := os.Getenv("NOETL_TRACING_SAMPLE_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || r > 1 {
			errs = append(errs, fmt.Errorf("NOETL_TRACING_SAMPLE_RATE=%q: want a number in [0, 1]", v))
		} else {
			c.SampleRate = r
		}
	}
	c.ForceSampleOnError = envBool("NOETL_TRACING_FORCE_SAMPLE_ON_ERROR", true, &errs)
	c.LibrarySpans = envBool("NOETL_TRACING_LIBRARY_SPANS", false, &errs)

	if v := os.Getenv("NOETL_TRACING_EXPORTER"); v != "" {
		for _, e := range strings.Split(v, ",") {
			switch e = strings.ToLower(strings.TrimSpace(e)); e {
			case TracesOTLP, TracesGCP, TracesFile:
				c.TraceExporters = append(c.TraceExporters, e)
			case TracesNone, "":
			default:
				errs = append(errs, fmt.Errorf("NOETL_TRACING_EXPORTER=%q: %q is not one of otlp, gcp, file, none", v, e))
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
	if !envBool("NOETL_TRACING_ENABLED", true, &errs) {
		c.TraceExporters = nil
	}
	if err := c.validateTraces(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
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

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envBool(k string, def bool, errs *[]error) bool {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s=%q: want true or false", k, v))
		return def
	}
	return b
}
