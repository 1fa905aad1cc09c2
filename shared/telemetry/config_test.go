package telemetry

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/config"
)

// fromConfig returns FromConfig("svc") of the configuration env makes.
func fromConfig(t *testing.T, env map[string]string) (Config, error) {
	t.Helper()
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return FromConfig("svc", cfg)
}

func TestFromConfigDefaults(t *testing.T) {
	c, err := fromConfig(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Service: "svc", Project: "noetl-local", LogLevel: slog.LevelInfo, MetricsExporter: MetricsPrometheus,
		MetricsInterval: 60 * time.Second, SampleRate: 0.1, ForceSampleOnError: true}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", c, want)
	}
}

// TestFromConfigSettings: each NOETL_LOGGING_*, NOETL_METRICS_* and
// NOETL_TRACING_* setting changes what telemetry installs.
func TestFromConfigSettings(t *testing.T) {
	env := map[string]string{"GOOGLE_CLOUD_PROJECT": "prod-1", "NOETL_LOG_LEVEL": "WARN", "NOETL_METRICS_EXPORTER": "gcp",
		"NOETL_METRICS_EXPORT_INTERVAL_S": "30", "NOETL_TRACING_SAMPLE_RATE": "0.05", "NOETL_TRACING_FORCE_SAMPLE_ON_ERROR": "false",
		"NOETL_TRACE_DIR": "/tmp/traces", "NOETL_TRACING_ENDPOINT": "grpc://collector:4317", "NOETL_TRACING_LIBRARY_SPANS": "true",
		"NOETL_LOGGING_FORMAT": "text", "NOETL_LOG_SOURCE": "true"}
	c, err := fromConfig(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if !c.LibrarySpans || c.Project != "prod-1" || c.LogLevel != slog.LevelWarn || c.MetricsExporter != MetricsGCP || c.MetricsInterval != 30*time.Second ||
		c.SampleRate != 0.05 || c.ForceSampleOnError || !reflect.DeepEqual(c.TraceExporters, []string{TracesFile, TracesOTLP}) || !c.LogText || !c.LogSource {
		t.Errorf("config %+v", c)
	}
	env["NOETL_TRACING_EXPORTER"] = "gcp, otlp"
	env["NOETL_METRICS_ENABLED"] = "false"
	c, err = fromConfig(t, env)
	if err != nil || !reflect.DeepEqual(c.TraceExporters, []string{TracesGCP, TracesOTLP}) || c.MetricsExporter != MetricsNone {
		t.Errorf("explicit exporters: %+v %v", c, err)
	}
	env["NOETL_TRACING_ENABLED"] = "false"
	if c, _ = fromConfig(t, env); len(c.TraceExporters) != 0 {
		t.Errorf("tracing disabled: exporters %v", c.TraceExporters)
	}
	env["NOETL_TRACING_ENABLED"] = "true"
	env["NOETL_TRACING_EXPORTER"] = "none"
	if c, _ = fromConfig(t, env); len(c.TraceExporters) != 0 {
		t.Errorf("exporter none: exporters %v", c.TraceExporters)
	}
}

// TestFromConfigMissingSettings: an exporter whose settings are missing
// is left out and reported (invalid values are config.Parse's errors).
func TestFromConfigMissingSettings(t *testing.T) {
	c, err := fromConfig(t, map[string]string{"NOETL_TRACING_EXPORTER": "file,otlp"})
	if err == nil || !strings.Contains(err.Error(), "NOETL_TRACE_DIR is not set") || !strings.Contains(err.Error(), "NOETL_TRACING_ENDPOINT is not set") {
		t.Errorf("error %v", err)
	}
	if len(c.TraceExporters) != 0 {
		t.Errorf("exporters %v", c.TraceExporters)
	}
	if _, err := config.Parse(func(k string) (string, bool) {
		v, ok := map[string]string{"NOETL_TRACING_EXPORTER": "zipkin", "NOETL_TRACING_ENDPOINT": "ftp://x", "NOETL_METRICS_EXPORT_INTERVAL_S": "1"}[k]
		return v, ok
	}, nil); err == nil || !strings.Contains(err.Error(), "zipkin") || !strings.Contains(err.Error(), "ftp://x") || !strings.Contains(err.Error(), "NOETL_METRICS_EXPORT_INTERVAL_S") {
		t.Errorf("config errors: %v", err)
	}
}

// TestTextLogFormat: NOETL_LOGGING_FORMAT=text writes key=value lines
// with the same keys.
func TestTextLogFormat(t *testing.T) {
	var buf bytes.Buffer
	slog.New(NewLogHandler(&buf, LogOptions{Text: true})).Info("hello", "event", "x")
	if s := buf.String(); !strings.Contains(s, "severity=INFO") || !strings.Contains(s, "message=hello") || !strings.Contains(s, "event=x") || strings.HasPrefix(s, "{") {
		t.Errorf("text line %q", s)
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
