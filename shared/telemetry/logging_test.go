package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/noetl/gcpengine/shared/config"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func decodeLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLogHandlerCloudLoggingFields(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(&buf, LogOptions{Level: slog.LevelDebug, Project: "proj-1"})).With("service", "noetl-functions")
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0, 0, 0, 0, 0, 0, 0, 0x2a}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	ctx = WithLogFields(ctx, ExecutionID("e-1"), WorkflowRef("examples/hello"), StepID("old"))
	ctx = WithLogFields(ctx, StepID("fetch"))

	log.InfoContext(ctx, "step dispatched", Event(EventStepDispatch), ToolKind("http"), LoopIndex(nil))
	log.WarnContext(context.Background(), "lease reclaimed", Event(EventLeaseReclaimed))
	log.ErrorContext(ctx, "dead-lettered", Event(EventTaskDLQ), Attempt(6), ErrorClass("FatalError"), Err(errors.New("schema")), StepID("record-wins"))
	log.DebugContext(ctx, "d")
	log.Log(ctx, LevelCritical, "c")

	lines := decodeLines(t, &buf)
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5", len(lines))
	}
	first := lines[0]
	want := map[string]any{
		"severity": "INFO", "message": "step dispatched", "service": "noetl-functions",
		"logging.googleapis.com/trace":         "projects/proj-1/traces/" + sc.TraceID().String(),
		"logging.googleapis.com/spanId":        "000000000000002a",
		"logging.googleapis.com/trace_sampled": true,
		"execution_id":                         "e-1", "workflow_ref": "examples/hello", "step_id": "fetch",
		"event": "step_dispatch", "tool_kind": "http",
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("line 1 %s = %v, want %v", k, first[k], v)
		}
	}
	for _, k := range []string{"level", "msg", "loop_index"} {
		if _, ok := first[k]; ok {
			t.Errorf("line 1 has %q: %v", k, first)
		}
	}
	if _, ok := first["time"].(string); !ok {
		t.Errorf("line 1 has no time: %v", first)
	}
	if lines[1]["severity"] != "WARNING" || lines[1]["logging.googleapis.com/trace"] != nil || lines[1]["execution_id"] != nil {
		t.Errorf("line 2 (no span, no fields): %v", lines[1])
	}
	if lines[2]["severity"] != "ERROR" || lines[2]["step_id"] != "record-wins" || lines[2]["attempt"] != float64(6) || lines[2]["error"] != "schema" {
		t.Errorf("line 3: %v", lines[2])
	}
	if strings.Count(strings.Split(buf.String(), "\n")[2], `"step_id"`) != 1 {
		t.Errorf("line 3 repeats step_id: %s", strings.Split(buf.String(), "\n")[2])
	}
	if lines[3]["severity"] != "DEBUG" || lines[4]["severity"] != "CRITICAL" {
		t.Errorf("severities %v %v", lines[3]["severity"], lines[4]["severity"])
	}
}

func TestLogHandlerGroupsKeepSpecialFieldsTopLevel(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(&buf, LogOptions{Project: "p", AddSource: true}))
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}}))
	ctx = WithLogFields(ctx, ExecutionID("e-9"))
	log.WithGroup("req").With("path", "/execute").WithGroup("body").InfoContext(ctx, "got", "size", 12)
	log.Debug("below the level")

	lines := decodeLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (debug is below info)", len(lines))
	}
	l := lines[0]
	if l["logging.googleapis.com/trace"] != "projects/p/traces/"+(trace.TraceID{1}).String() || l["logging.googleapis.com/trace_sampled"] != false || l["execution_id"] != "e-9" {
		t.Errorf("special fields not at the top level: %v", l)
	}
	req, _ := l["req"].(map[string]any)
	body, _ := req["body"].(map[string]any)
	if req["path"] != "/execute" || body["size"] != float64(12) {
		t.Errorf("groups: %v", l)
	}
	src, _ := l["logging.googleapis.com/sourceLocation"].(map[string]any)
	if !strings.HasSuffix(src["file"].(string), "logging_test.go") || src["line"] == nil {
		t.Errorf("sourceLocation: %v", l)
	}
}

func TestSeverity(t *testing.T) {
	for l, want := range map[slog.Level]string{
		slog.LevelDebug - 4: "DEBUG", slog.LevelDebug: "DEBUG", slog.LevelInfo: "INFO", slog.LevelInfo + 2: "INFO",
		slog.LevelWarn: "WARNING", slog.LevelError: "ERROR", slog.LevelError + 3: "ERROR", LevelCritical: "CRITICAL",
	} {
		if got := Severity(l); got != want {
			t.Errorf("Severity(%v) = %s, want %s", l, got, want)
		}
	}
}

func TestSetupReturnsCloudLoggingLogger(t *testing.T) {
	t.Setenv("NOETL_METRICS_EXPORTER", "none")
	t.Setenv("NOETL_TRACE_DIR", t.TempDir())
	t.Setenv("NOETL_TRACING_SAMPLE_RATE", "1")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "proj-x")
	cfg, err := config.LoadE()
	if err != nil {
		t.Fatal(err)
	}
	log := Setup("svc", cfg)
	t.Cleanup(func() { _ = Shutdown(context.Background()) })
	if log == nil || slog.Default() != log {
		t.Fatal("Setup did not return the default logger")
	}
	// Spans started through Tracer are sampled at rate 1 and carry the
	// project's trace name in logs.
	var buf bytes.Buffer
	l := slog.New(NewLogHandler(&buf, LogOptions{Project: "proj-x"}))
	ctx, span := Tracer.Start(context.Background(), "x")
	l.InfoContext(ctx, "inside")
	span.End()
	line := decodeLines(t, &buf)[0]
	if line["logging.googleapis.com/trace_sampled"] != true || !strings.HasPrefix(line["logging.googleapis.com/trace"].(string), "projects/proj-x/traces/") {
		t.Errorf("log line %v", line)
	}
}
