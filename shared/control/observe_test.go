package control

import (
	"context"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
	"github.com/noetl/gcpengine/shared/types"
)

const observePB = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: obs, path: test/observe}
workload: {n: 7}
workflow:
  - step: start
    tool: {kind: noop, result: {n: "{{ n }}"}}
    next:
      spec: {mode: inclusive}
      arcs:
        - step: big
          when: "{{ start.n > 5 }}"
        - step: broken
          when: "{{ 1 / (start.n - 7) > 0 }}"
        - step: small
          when: "{{ start.n < 5 }}"
        - step: always
        - step: on_failure
          on: step.failed
  - step: big
    tool: {kind: noop}
  - step: broken
    tool: {kind: noop}
  - step: small
    tool: {kind: noop}
  - step: always
    loop: {in: [1, 2, 3], iterator: i}
    tool: {kind: noop}
  - step: on_failure
    tool: {kind: noop}
`

// observe reads a committed transition's output events: step calls, loop
// plans and step ends become metrics labelled with the playbook path, and
// each arc the boundary event considered becomes an edge metric and a
// server.route span (taken, skipped, or error when its when failed),
// with when metrics for the arcs that have a when; the execution's end
// becomes the completion metric and the server.execution root span.
func TestObserveTransition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := telemetry.SetupConfig(ctx, telemetry.Config{Service: "test", MetricsExporter: telemetry.MetricsPrometheus,
		TraceExporters: []string{telemetry.TracesFile}, TraceDir: dir, SampleRate: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = telemetry.Shutdown(context.Background()) })
	pb, err := dsl.Load([]byte(observePB), "observe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(pb, engine.Options{DefaultMaxInFlight: 2})
	now := time.Now()
	st := engine.NewState("exec-obs", "", pb, map[string]any{"n": int64(7)}, now)
	c := &Control{}
	out, err := e.Start(st, now)
	if err != nil {
		t.Fatal(err)
	}
	c.observe(ctx, e, st, &out)

	done := types.NewEvent(types.EvStepDone, "exec-obs", "execute", now.Add(time.Second), "start", "1")
	done.Step, done.StepRun, done.Status = "start", 1, types.StatusOK
	done.Payload = map[string]any{"result": map[string]any{"n": int64(7)}}
	out, changed, err := e.Apply(st, done, now.Add(time.Second))
	if err != nil || !changed {
		t.Fatalf("apply: %v %v", changed, err)
	}
	out.Events = append([]types.Event{done}, out.Events...) // as Apply does with the unit's events
	c.observe(ctx, e, st, &out)

	m := scrape(t)
	for series, want := range map[string]string{
		`noetl_executions_completed_total{status="ok",workflow="test/observe"}`:                         "",
		`noetl_step_calls_total{step="start",workflow="test/observe"}`:                                  "1",
		`noetl_step_calls_total{step="big",workflow="test/observe"}`:                                    "1",
		`noetl_step_calls_total{step="always",workflow="test/observe"}`:                                 "1",
		`noetl_step_calls_total{step="small",workflow="test/observe"}`:                                  "",
		`noetl_step_runs_total{ok="true",step="start",workflow="test/observe"}`:                         "1",
		`noetl_step_duration_seconds_count{step="start",workflow="test/observe"}`:                       "1",
		`noetl_loop_items_total{step="always",workflow="test/observe"}`:                                 "3",
		`noetl_edge_eval_total{from="start",outcome="taken",to="big",workflow="test/observe"}`:          "1",
		`noetl_edge_eval_total{from="start",outcome="error",to="broken",workflow="test/observe"}`:       "1",
		`noetl_edge_eval_total{from="start",outcome="skipped",to="small",workflow="test/observe"}`:      "1",
		`noetl_edge_eval_total{from="start",outcome="taken",to="always",workflow="test/observe"}`:       "1",
		`noetl_edge_eval_total{from="start",outcome="skipped",to="on_failure",workflow="test/observe"}`: "",
		`noetl_when_eval_total{outcome="true",step="start",workflow="test/observe"}`:                    "1",
		`noetl_when_eval_total{outcome="false",step="start",workflow="test/observe"}`:                   "1",
		`noetl_when_eval_total{outcome="error",step="start",workflow="test/observe"}`:                   "1",
	} {
		got, ok := m[series]
		if want == "" && ok {
			t.Errorf("%s = %s, want no series", series, got)
		} else if want != "" && got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}

	spans, _, err := tracetree.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]tracetree.Span{}
	for _, s := range tracetree.ForExecution(spans, "exec-obs") {
		if s.Name == telemetry.SpanRoute {
			routes[s.Attributes["target_step"].(string)] = s
		}
	}
	if len(routes) != 4 {
		t.Fatalf("route spans %v, want one per arc listening to step.done (4)", routes)
	}
	for target, want := range map[string]string{"big": "taken", "broken": "error", "small": "skipped", "always": "taken"} {
		s := routes[target]
		if s.Attributes["outcome"] != want || s.Attributes["from_step"] != "start" || s.TraceID != telemetry.ExecutionTraceID("exec-obs").String() {
			t.Errorf("route to %s: %+v", target, s)
		}
	}
	if s := routes["broken"]; s.Status != "error" || s.Attributes["edge_index"] != float64(1) || s.Attributes["condition"] != "{{ 1 / (start.n - 7) > 0 }}" {
		t.Errorf("route to broken: %+v", s)
	}
	// Each arc with a when has its server.when_eval span (NoETL
	// observability spec §8.3) under the arc's server.route.
	whens := map[string]string{}
	for _, s := range tracetree.ForExecution(spans, "exec-obs") {
		if s.Name != telemetry.SpanWhenEval {
			continue
		}
		for target, r := range routes {
			if r.SpanID == s.ParentSpanID {
				whens[target] = s.Attributes["outcome"].(string)
				if s.Attributes["step_id"] != "start" || s.Attributes["when_expr"] != r.Attributes["condition"] {
					t.Errorf("when span of %s: %+v", target, s)
				}
			}
		}
	}
	if want := map[string]string{"big": "true", "broken": "error", "small": "false"}; !reflect.DeepEqual(whens, want) {
		t.Errorf("server.when_eval spans by arc %v, want %v", whens, want)
	}

	// The execution ends when its last steps end (here: fail it).
	stop := types.NewEvent(types.EvCancelRequested, "exec-obs", "api", now.Add(2*time.Second))
	out, _ = e.Stop(st, stop, engine.StopReason{Status: engine.ExecCanceled, Kind: types.ErrKindCanceled, Message: "canceled: test"}, now.Add(2*time.Second))
	c.observe(ctx, e, st, &out)
	m = scrape(t)
	if m[`noetl_executions_completed_total{status="canceled",workflow="test/observe"}`] != "1" {
		t.Errorf("completed: %v", grep(m, "executions_completed"))
	}
	if m[`noetl_step_runs_total{ok="false",step="big",workflow="test/observe"}`] != "1" {
		t.Errorf("canceled step runs: %v", grep(m, "step_runs"))
	}
	tree, _, err := tracetree.Load(dir, "exec-obs")
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Roots[0]
	if root.Missing || root.Span.Name != telemetry.SpanExecution || root.Span.Attributes["status"] != "canceled" || len(root.Children) != 4 {
		t.Errorf("root %+v with %d children", root.Span, len(root.Children))
	}
}

func scrape(t *testing.T) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	telemetry.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "noetl_") {
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				out[line[:i]] = line[i+1:]
			}
		}
	}
	return out
}

func grep(m map[string]string, s string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.Contains(k, s) {
			out[k] = v
		}
	}
	return out
}
