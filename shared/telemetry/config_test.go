package telemetry

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fromEnv unsets every variable FromEnv reads for the test's duration,
// sets the ones in env and returns FromEnv("svc").
func fromEnv(t *testing.T, env map[string]string) (Config, error) {
	for _, k := range []string{
		"GOOGLE_CLOUD_PROJECT", "NOETL_LOG_LEVEL", "NOETL_LOG_SOURCE", "NOETL_METRICS_EXPORTER", "NOETL_METRICS_ENABLED",
		"NOETL_METRICS_EXPORT_INTERVAL_S", "NOETL_TRACING_SAMPLE_RATE", "NOETL_TRACING_FORCE_SAMPLE_ON_ERROR",
		"NOETL_TRACING_EXPORTER", "NOETL_TRACING_ENABLED", "NOETL_TRACING_LIBRARY_SPANS", "NOETL_TRACING_ENDPOINT", "NOETL_TRACE_DIR",
	} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return FromEnv("svc")
}

func TestFromEnvDefaults(t *testing.T) {
	c, err := fromEnv(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Service: "svc", Project: "noetl-local", LogLevel: slog.LevelInfo, MetricsExporter: MetricsPrometheus,
		MetricsInterval: 60 * time.Second, SampleRate: 0.1, ForceSampleOnError: true}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", c, want)
	}
}

func TestFromEnvSettings(t *testing.T) {
	c, err := fromEnv(t, map[string]string{"GOOGLE_CLOUD_PROJECT": "prod-1", "NOETL_LOG_LEVEL": "WARN", "NOETL_METRICS_EXPORTER": "gcp",
		"NOETL_METRICS_EXPORT_INTERVAL_S": "30", "NOETL_TRACING_SAMPLE_RATE": "0.05", "NOETL_TRACING_FORCE_SAMPLE_ON_ERROR": "false",
		"NOETL_TRACE_DIR": "/tmp/traces", "NOETL_TRACING_ENDPOINT": "grpc://collector:4317", "NOETL_TRACING_LIBRARY_SPANS": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.LibrarySpans || c.Project != "prod-1" || c.LogLevel != slog.LevelWarn || c.MetricsExporter != MetricsGCP || c.MetricsInterval != 30*time.Second ||
		c.SampleRate != 0.05 || c.ForceSampleOnError || !reflect.DeepEqual(c.TraceExporters, []string{TracesFile, TracesOTLP}) {
		t.Errorf("config %+v", c)
	}

	t.Setenv("NOETL_TRACING_EXPORTER", "gcp, otlp")
	t.Setenv("NOETL_METRICS_ENABLED", "false")
	c, err = FromEnv("svc")
	if err != nil || !reflect.DeepEqual(c.TraceExporters, []string{TracesGCP, TracesOTLP}) || c.MetricsExporter != MetricsNone {
		t.Errorf("explicit exporters: %+v %v", c, err)
	}
	t.Setenv("NOETL_TRACING_ENABLED", "false")
	if c, _ = FromEnv("svc"); len(c.TraceExporters) != 0 {
		t.Errorf("tracing disabled: exporters %v", c.TraceExporters)
	}
}

func TestFromEnvInvalid(t *testing.T) {
	c, err := fromEnv(t, map[string]string{"NOETL_LOG_LEVEL": "loud", "NOETL_METRICS_EXPORTER": "statsd", "NOETL_METRICS_EXPORT_INTERVAL_S": "1",
		"NOETL_TRACING_SAMPLE_RATE": "1.5", "NOETL_TRACING_EXPORTER": "file,zipkin,otlp", "NOETL_TRACING_ENDPOINT": "ftp://x", "NOETL_LOG_SOURCE": "maybe"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"NOETL_LOG_LEVEL", "NOETL_METRICS_EXPORTER", "NOETL_METRICS_EXPORT_INTERVAL_S", "NOETL_TRACING_SAMPLE_RATE", `"zipkin"`, "NOETL_TRACE_DIR is not set", `scheme "ftp"`, "NOETL_LOG_SOURCE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// Invalid values fall back to their defaults; broken exporters are left out.
	if c.LogLevel != slog.LevelInfo || c.MetricsExporter != MetricsPrometheus || c.MetricsInterval != DefaultMetricsInterval ||
		c.SampleRate != DefaultSampleRate || len(c.TraceExporters) != 0 {
		t.Errorf("fallbacks: %+v", c)
	}
}

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://jaeger:4318": "http", "https://otel.example.com/v1/traces": "http", "grpc://localhost:4317": "grpc", "grpcs://x:443": "grpc",
	} {
		p, _, err := parseEndpoint(in)
		if err != nil || p != want {
			t.Errorf("parseEndpoint(%q) = %q, %v; want %q", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "localhost:4317", "http://", "::"} {
		if _, _, err := parseEndpoint(bad); err == nil {
			t.Errorf("parseEndpoint(%q) accepted", bad)
		}
	}
}
