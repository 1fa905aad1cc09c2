package wiring

import (
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/config"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// engineWith returns the engine of src with the options the environment
// env makes (config.Parse → EngineOptions).
func engineWith(t *testing.T, src string, env map[string]string) *engine.Engine {
	t.Helper()
	cfg, err := config.Parse(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := dsl.Load([]byte(src), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(pb, EngineOptions(cfg))
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func started(t *testing.T, e *engine.Engine) (*engine.State, engine.Output) {
	t.Helper()
	st := engine.NewState("ex1", "", e.PB, nil, t0)
	out, err := e.Start(st, t0)
	if err != nil {
		t.Fatal(err)
	}
	return st, out
}

// failStep applies a step.failed of step's current run.
func failStep(t *testing.T, e *engine.Engine, st *engine.State, step string) engine.Output {
	t.Helper()
	ev := types.NewEvent(types.EvStepFailed, "ex1", "execute", t0, step, "1")
	ev.Step, ev.StepRun, ev.Status = step, st.Steps[step].Run, types.StatusFailed
	ev.Payload = history.Encode(history.StepFailed{Error: map[string]any{"kind": "server_error", "message": "HTTP 503"}})
	out, changed, err := e.Apply(st, ev, t0.Add(time.Second))
	if err != nil || !changed {
		t.Fatalf("apply step.failed: changed %v, %v", changed, err)
	}
	return out
}

func doneStep(t *testing.T, e *engine.Engine, st *engine.State, step string) engine.Output {
	t.Helper()
	ev := types.NewEvent(types.EvStepDone, "ex1", "execute", t0, step, "1")
	ev.Step, ev.StepRun, ev.Status = step, st.Steps[step].Run, types.StatusOK
	ev.Payload = history.Encode(history.StepDone{Result: map[string]any{"n": 1}})
	out, changed, err := e.Apply(st, ev, t0.Add(time.Second))
	if err != nil || !changed {
		t.Fatalf("apply step.done: changed %v, %v", changed, err)
	}
	return out
}

func commandOf(out engine.Output, kind types.CommandKind) *types.Command {
	for i := range out.Commands {
		if out.Commands[i].Kind == kind {
			return &out.Commands[i]
		}
	}
	return nil
}

const twoBranches = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t, path: t}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: a}, {step: b}]
  - step: a
    tool: {kind: http, url: "http://x"}
    next: {arcs: [{step: after}]}
  - step: b
    tool: {kind: noop}
  - step: after
    tool: {kind: noop}
  - step: cleanup
    tool: {kind: noop}
`

// TestEngineKnobsTakeEffect changes each engine-facing setting and
// observes what the engine does differently (the engine reads no
// environment: EngineOptions hands it the configuration).
func TestEngineKnobsTakeEffect(t *testing.T) {
	t.Run("NOETL_POLICIES_ON_STEP_FAIL", func(t *testing.T) {
		for policy, check := range map[string]func(st *engine.State, out engine.Output) string{
			"halt": func(st *engine.State, _ engine.Output) string {
				if st.Status != engine.ExecFailed || st.Steps["b"].Status != types.StatusCanceled {
					return "halt did not stop the execution and its other branch"
				}
				return ""
			},
			"continue": func(st *engine.State, _ engine.Output) string {
				if st.Status != engine.ExecRunning || st.Steps["after"] == nil {
					return "continue did not route on along a's success arc"
				}
				return ""
			},
			"route_edge:cleanup": func(st *engine.State, _ engine.Output) string {
				if st.Steps["cleanup"] == nil || st.Steps["after"] != nil {
					return "route_edge did not run cleanup instead"
				}
				return ""
			},
		} {
			e := engineWith(t, twoBranches, map[string]string{"NOETL_POLICIES_ON_STEP_FAIL": policy})
			st, _ := started(t, e)
			doneStep(t, e, st, "start")
			out := failStep(t, e, st, "a")
			if msg := check(st, out); msg != "" {
				t.Errorf("%s: %s (status %s, steps %v)", policy, msg, st.Status, st.Steps)
			}
		}
	})
	t.Run("NOETL_POLICIES_ON_WHEN_ERROR", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t, path: t}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b, when: "{{ 1 / 0 > 0 }}"}, {step: c}]}
  - step: b
    tool: {kind: noop}
  - step: c
    tool: {kind: noop}
`
		e := engineWith(t, src, nil)
		st, _ := started(t, e)
		doneStep(t, e, st, "start")
		if st.Steps["start"].Status != types.StatusOK || st.Steps["c"] == nil {
			t.Errorf("treat_as_false: start %s, c %v", st.Steps["start"].Status, st.Steps["c"])
		}
		e = engineWith(t, src, map[string]string{"NOETL_POLICIES_ON_WHEN_ERROR": "fail_step"})
		st, _ = started(t, e)
		doneStep(t, e, st, "start")
		if st.Steps["start"].Status != types.StatusFailed || st.Steps["c"] != nil {
			t.Errorf("fail_step: start %s, c %v", st.Steps["start"].Status, st.Steps["c"])
		}
	})
	t.Run("NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t, path: t}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b, when: "{% set n = namespace(v=0) %}{% for i in range(90000) %}{% set n.v = n.v + 1 %}{% endfor %}{{ n.v > 0 }}"}]}
  - step: b
    tool: {kind: noop}
`
		e := engineWith(t, src, map[string]string{"NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS": "1"})
		st, _ := started(t, e)
		out := doneStep(t, e, st, "start")
		if st.Steps["b"] != nil || !strings.Contains(eventsText(out), "render took longer than 1ms") {
			t.Errorf("a 1 ms budget: b %v, events %s", st.Steps["b"], eventsText(out))
		}
		e = engineWith(t, src, map[string]string{"NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS": "60000"})
		st, _ = started(t, e)
		doneStep(t, e, st, "start")
		if st.Steps["b"] == nil {
			t.Error("a 60 s budget: the arc did not fire")
		}
	})
	t.Run("NOETL_EXECUTION_DEADLINE_S", func(t *testing.T) {
		_, out := started(t, engineWith(t, twoBranches, nil))
		if commandOf(out, types.CmdExecutionTimeout) != nil {
			t.Error("a deadline without the setting")
		}
		_, out = started(t, engineWith(t, twoBranches, map[string]string{"NOETL_EXECUTION_DEADLINE_S": "90"}))
		if c := commandOf(out, types.CmdExecutionTimeout); c == nil || !c.NotBefore.Equal(t0.Add(90*time.Second)) {
			t.Errorf("deadline command %+v, want one due at start + 90 s", c)
		}
	})
	t.Run("NOETL_TIMEOUTS_LOOP_TOTAL_MS", func(t *testing.T) {
		src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t, path: t}
workflow:
  - step: start
    loop: {in: [1, 2], iterator: i}
    tool: {kind: noop}
`
		_, out := started(t, engineWith(t, src, nil))
		if commandOf(out, types.CmdStepTimeout) != nil {
			t.Error("a loop budget without the setting")
		}
		_, out = started(t, engineWith(t, src, map[string]string{"NOETL_TIMEOUTS_LOOP_TOTAL_MS": "2500"}))
		if c := commandOf(out, types.CmdStepTimeout); c == nil || !c.NotBefore.Equal(t0.Add(2500*time.Millisecond)) {
			t.Errorf("loop budget command %+v, want one due at start + 2.5 s", c)
		}
	})
	t.Run("NOETL_RETRIES_PLUGIN_and_SINK", func(t *testing.T) {
		e := engineWith(t, twoBranches, map[string]string{"NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS": "3", "NOETL_RETRIES_PLUGIN_BASE_MS": "50",
			"NOETL_RETRIES_PLUGIN_MAX_MS": "400", "NOETL_RETRIES_SINK_MAX_ATTEMPTS": "11", "NOETL_RETRIES_SINK_BASE_MS": "70", "NOETL_RETRIES_SINK_MAX_MS": "900"})
		task := &dsl.Task{Name: "t", Kind: "http"}
		out := types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "server_error", Retryable: true}}
		sc := template.NewScope(template.ScopeParams{})
		d, _ := e.Opts.DecideTask(task, false, out, sc)
		if d.Action != types.ActRetry || d.Then.Attempts != 3 || d.Then.Delay != 0.05 || d.Then.MaxDelay != 0.4 {
			t.Errorf("plugin budget: %+v", d)
		}
		d, _ = e.Opts.DecideTask(task, true, out, sc)
		if d.Action != types.ActRetry || d.Then.Attempts != 11 || d.Then.Delay != 0.07 || d.Then.MaxDelay != 0.9 {
			t.Errorf("sink budget: %+v", d)
		}
	})
	t.Run("NOETL_POLICIES_ON_SINK_FAIL", func(t *testing.T) {
		task := &dsl.Task{Name: "t", Kind: "postgres"}
		out := types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "postgres", Retryable: true}}
		sc := template.NewScope(template.ScopeParams{})
		for v, want := range map[string]types.Action{"retry": types.ActRetry, "fail_step": types.ActFail, "async_ignore": types.ActContinue} {
			e := engineWith(t, twoBranches, map[string]string{"NOETL_POLICIES_ON_SINK_FAIL": v})
			if d, _ := e.Opts.DecideTask(task, true, out, sc); d.Action != want {
				t.Errorf("%s: %s, want %s", v, d.Action, want)
			}
		}
	})
}

func eventsText(out engine.Output) string {
	var b strings.Builder
	for _, e := range out.Events {
		b.WriteString(string(e.EventType))
		for k, v := range e.Payload {
			b.WriteString(" " + k + "=")
			b.WriteString(strings.ReplaceAll(strings.TrimSpace(toString(v)), "\n", " "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var s []string
		for _, i := range x {
			s = append(s, toString(i))
		}
		return strings.Join(s, ",")
	case map[string]any:
		var s []string
		for k, i := range x {
			s = append(s, k+":"+toString(i))
		}
		return "{" + strings.Join(s, ",") + "}"
	}
	return ""
}
