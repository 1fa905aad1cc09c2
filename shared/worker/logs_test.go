package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines parses the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// withEvent returns the lines whose event field is e.
func withEvent(lines []map[string]any, e telemetry.EventName) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["event"] == string(e) {
			out = append(out, l)
		}
	}
	return out
}

// TestLogLinesOfARun reads the JSON log lines of a run (NoETL
// observability spec §8.2): the declared fields call_id (each attempt's,
// on plugin_start, plugin_done and the sink's lines), loop_key and
// loop_index (an iteration's lines), max_attempts and backoff_ms (a
// retry), sink_id (a sink), and the events sink_dispatch,
// result_integrate and when_eval_error.
func TestLogLinesOfARun(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: logs, path: tests/logs}
workflow:
  - step: start
    loop: {in: [1], iterator: i}
    tool:
      - fetch: {kind: http, method: GET, url: "http://api.test/{{ i }}"}
      - store: {kind: postgres, command: "INSERT INTO t VALUES (1)"}
    next: {arcs: [{step: end, when: "{{ (1 / 0) > 1 }}"}, {step: end}]}
  - step: end
    tool: {kind: noop}
`
	var buf syncBuffer
	log := slog.New(telemetry.NewLogHandler(&buf, telemetry.LogOptions{Level: slog.LevelDebug}))
	env := controltest.NewEnv()
	env.Log, env.Control.Log = log, log
	api := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if n == 1 {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "server_error", Message: "HTTP 503", Retryable: true, Status: 503}}
		}
		return ok(req, n)
	}}
	w := newWorker(env, nil, api)
	w.Log = log
	w.Tools["postgres"] = &fakeTool{}
	start(t, env, "ex1", src, nil)
	drain(t, env, w)
	if st := status(t, env, "ex1"); st.Status != "ok" {
		t.Fatalf("execution %s", st.Status)
	}
	lines := buf.lines(t)
	starts := withEvent(lines, telemetry.EventPluginStart)
	if len(starts) < 3 {
		t.Fatalf("plugin_start lines %v", starts)
	}
	calls := map[any]bool{}
	for _, l := range starts {
		calls[l["call_id"]] = true
		if l["step_id"] != "start" {
			continue
		}
		if l["call_id"] == nil || l["call_id"] == "" || l["loop_key"] != "start.1" || l["loop_index"] != float64(0) {
			t.Errorf("plugin_start without call_id, loop_key or loop_index: %v", l)
		}
	}
	if len(calls) != len(starts) {
		t.Errorf("call_id repeats across attempts: %v", starts)
	}
	for _, l := range withEvent(lines, telemetry.EventPluginDone) {
		if !calls[l["call_id"]] {
			t.Errorf("plugin_done's call_id names no started call: %v", l)
		}
	}
	retries := withEvent(lines, telemetry.EventTaskRetry)
	if len(retries) != 1 || retries[0]["max_attempts"] != float64(6) || retries[0]["backoff_ms"] == nil || retries[0]["policy"] != "default" {
		t.Errorf("task_retry lines %v, want one with max_attempts 6 and backoff_ms", retries)
	}
	sinks := withEvent(lines, telemetry.EventSinkDispatch)
	if len(sinks) != 1 || sinks[0]["sink_id"] != "postgres:store" || sinks[0]["sink_type"] != "postgres" || !calls[sinks[0]["call_id"]] {
		t.Errorf("sink_dispatch lines %v", sinks)
	}
	if ri := withEvent(lines, telemetry.EventResultIntegrate); len(ri) < 2 {
		t.Errorf("result_integrate lines %v, want one per finished step", ri)
	}
	we := withEvent(lines, telemetry.EventWhenEvalError)
	if len(we) != 1 || we[0]["step_id"] != "start" || we[0]["action"] != "park" || !strings.Contains(we[0]["when_expr"].(string), "1 / 0") {
		t.Errorf("when_eval_error lines %v", we)
	}
}

// TestSinkSpan: a sink's write is its own span, worker.sink.<sink_id>,
// under its attempt's worker.plugin.<kind> (NoETL observability spec §8.3).
func TestSinkSpan(t *testing.T) {
	dir := t.TempDir()
	if _, err := telemetry.SetupConfig(context.Background(), telemetry.Config{Service: "test", MetricsExporter: telemetry.MetricsNone,
		TraceExporters: []string{telemetry.TracesFile}, TraceDir: dir, SampleRate: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = telemetry.Shutdown(context.Background()) })
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: sinkspan, path: tests/sinkspan}
workflow:
  - step: start
    tool:
      - store: {kind: postgres, command: "INSERT INTO t VALUES (1)"}
`
	env := controltest.NewEnv()
	w := newWorker(env, nil, nil)
	w.Tools["postgres"] = &fakeTool{}
	start(t, env, "ex-sink", src, nil)
	drain(t, env, w)
	if err := telemetry.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, _, err := tracetree.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]tracetree.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var sink *tracetree.Span
	for _, s := range spans {
		if s.Name == telemetry.SpanSinkPrefix+"postgres:store" {
			sink = &s
		}
	}
	if sink == nil {
		t.Fatalf("no worker.sink.postgres:store span among %d spans", len(spans))
	}
	if p := byID[sink.ParentSpanID]; p.Name != telemetry.SpanPluginPrefix+"postgres" || sink.Attributes["sink_type"] != "postgres" || sink.Status == "error" {
		t.Errorf("sink span %+v under %+v", sink, p)
	}
}
