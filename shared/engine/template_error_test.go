package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// Hostile templates that validate (they parse) but cannot be rendered:
// two that hit the render limits (template.ErrLimit: a single expression
// building 300 MB, a nested value of 10^10 elements) and a plain render
// error.
var hostile = []struct {
	name, tmpl string
	limit      bool
}{
	{"center", `{{ 'x'|center(300000000) }}`, true},
	{"nested", `{{ [[0] * 100000] * 100000 }}`, true},
	{"error", `{{ workload.n / 0 }}`, false},
}

// A template error while the control plane applies a transition fails the
// step it belongs to, with a clear step.failed event, and never escapes as
// a Go error (which would make route or execute retry the same
// transition forever: README "Security").
func TestTemplateErrorsFailTheStep(t *testing.T) {
	type tc struct {
		name string
		// pb is the playbook with %s where the hostile template goes.
		pb string
		// events are the boundaries applied after the start, in order.
		events []types.Event
		// step is the step that must fail; other are steps that must not
		// have run (their arcs never fired).
		step  string
		other []string
	}
	cases := []tc{
		{"arc args", `
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b, args: {v: "%s"}}]}
  - step: b
    tool: {kind: noop}`, []types.Event{done("start", 1, 1)}, "start", []string{"b"}},
		{"arc set", `
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b, set: {ctx.v: "%s"}}]}
  - step: b
    tool: {kind: noop}`, []types.Event{done("start", 1, 1)}, "start", []string{"b"}},
		{"arc when under fail_step", `
executor: {spec: {policy: {on_when_error: fail_step}}}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b, when: "%s"}]}
  - step: b
    tool: {kind: noop}`, []types.Event{done("start", 1, 1)}, "start", []string{"b"}},
		{"step set", `
workflow:
  - step: start
    tool: {kind: noop}
    set: {ctx.v: "%s"}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: noop}`, []types.Event{done("start", 1, 1)}, "start", []string{"b"}},
		{"loop.in of a later step", `
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: each}]}
  - step: each
    loop: {in: "%s", iterator: x}
    tool: {kind: noop}`, []types.Event{done("start", 1, 1)}, "each", nil},
		{"loop.in of the entry step", `
workflow:
  - step: start
    loop: {in: "%s", iterator: x}
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: noop}`, nil, "start", []string{"b"}},
		{"admit of a later step", `
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
  - step: b
    spec: {policy: {admit: {rules: [{when: "%s", then: {allow: true}}]}}}
    tool: {kind: noop}`, []types.Event{done("start", 1, 1)}, "b", nil},
		{"routing-only entry step with bad args", `
workflow:
  - step: start
    next: {arcs: [{step: b, args: {v: "%s"}}]}
  - step: b
    tool: {kind: noop}`, nil, "start", []string{"b"}},
		{"on_step_fail continue routing", `
executor: {spec: {policy: {on_step_fail: continue}}}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b, args: {v: "%s"}}]}
  - step: b
    tool: {kind: noop}`, []types.Event{toolFailed("start", 1)}, "start", []string{"b"}},
	}
	for _, c := range cases {
		for _, h := range hostile {
			t.Run(c.name+"/"+h.name, func(t *testing.T) {
				src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: hostile}\nworkload: {n: 1}" +
					fmt.Sprintf(c.pb, strings.ReplaceAll(h.tmpl, `"`, `\"`))
				e := load(t, src)
				st := NewState("ex1", "", e.PB, map[string]any{"n": int64(1)}, t0)
				out, err := e.Start(st, t0)
				if err != nil {
					t.Fatalf("Start returned an error (a retry loop): %v", err)
				}
				all := out.Events
				for _, ev := range c.events {
					o, _, err := e.Apply(st, ev, t0)
					if err != nil {
						t.Fatalf("Apply(%s) returned an error (a retry loop): %v", ev.EventType, err)
					}
					all = append(all, o.Events...)
				}
				if st.Status != ExecFailed {
					t.Fatalf("execution %s, want failed (steps %+v, failures %v)", st.Status, st.Steps, st.Failures)
				}
				ss := st.Steps[c.step]
				if ss == nil || ss.Status != types.StatusFailed {
					t.Fatalf("step %s: %+v, want failed", c.step, ss)
				}
				em, _ := ss.Error.(map[string]any)
				msg, _ := em["message"].(string)
				if em["kind"] != string(types.ErrKindTemplate) || msg == "" {
					t.Fatalf("step %s error %v, want kind template with a message", c.step, ss.Error)
				}
				if h.limit && !strings.Contains(msg, "limit") && !strings.Contains(msg, "longer than") && !strings.Contains(msg, "larger than") && !strings.Contains(msg, "more than") {
					t.Errorf("the error does not name the limit: %s", msg)
				}
				var sf *types.Event
				for i := range all {
					if all[i].EventType == types.EvStepFailed && all[i].Step == c.step {
						sf = &all[i]
					}
				}
				if sf == nil {
					t.Fatalf("no step.failed event for %s among %v", c.step, eventTypes(Output{Events: all}))
				}
				if fe, _ := sf.Payload["error"].(map[string]any); fe["message"] == nil {
					t.Errorf("step.failed carries no error message: %v", sf.Payload)
				}
				for _, o := range c.other {
					if os := st.Steps[o]; os != nil && os.Status != "" && os.Status != types.StatusCanceled {
						t.Errorf("step %s ran (%s) after a failed transition", o, os.Status)
					}
				}
				if len(st.Failures) == 0 {
					t.Error("the failure is not recorded in the execution's failures")
				}
			})
		}
	}
}

// The limits are what fails these templates (not an unrelated error):
// the hostile templates really wrap template.ErrLimit when rendered.
func TestHostileTemplatesHitTheLimits(t *testing.T) {
	for _, h := range hostile {
		_, err := template.RenderValue(h.tmpl, template.NewScope(template.ScopeParams{Workload: map[string]any{"n": int64(1)}}))
		if err == nil {
			t.Fatalf("%s rendered", h.name)
		}
		if errors.Is(err, template.ErrLimit) != h.limit {
			t.Errorf("%s: errors.Is(ErrLimit) = %v, want %v (%v)", h.name, !h.limit, h.limit, err)
		}
	}
}

// With inclusive routing, an arc that fails after another arc fired
// stops the branch already scheduled (on_step_fail: halt) and the
// execution ends failed; a token queued for the failing step still runs
// under on_step_fail: continue, so the execution never hangs.
func TestTemplateErrorAfterPartialRouting(t *testing.T) {
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: partial}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs:
        - {step: a}
        - {step: b, args: {v: "{{ 'x'|center(300000000) }}"}}
  - step: a
    tool: {kind: noop}
  - step: b
    tool: {kind: noop}
`
	e := load(t, src)
	st, _ := started(t, e, nil)
	out, _, err := e.Apply(st, done("start", 1, nil), t0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != ExecFailed || st.Steps["a"].Status != types.StatusCanceled {
		t.Fatalf("execution %s, a %s: want failed and the scheduled branch canceled", st.Status, st.Steps["a"].Status)
	}
	if !strings.Contains(strings.Join(st.Failures, " "), "halted") && st.Failures == nil {
		t.Errorf("failures %v", st.Failures)
	}
	if n := len(eventTypes(out)); n == 0 {
		t.Fatal("no events")
	}

	// A queued token (the step was entered again while it ran) still
	// starts its run after the failed routing (on_step_fail: continue),
	// and the execution then ends: it never hangs on the queue.
	src2 := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: queued}
executor: {spec: {policy: {on_step_fail: continue}}}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: join}]}
  - step: join
    tool: {kind: noop}
    next: {arcs: [{step: end, args: {v: "{{ [[0] * 100000] * 100000 }}"}}]}
  - step: end
    tool: {kind: noop}
`
	e2 := load(t, src2)
	st2, _ := started(t, e2, nil)
	apply := func(ev types.Event) {
		t.Helper()
		if _, _, err := e2.Apply(st2, ev, t0); err != nil {
			t.Fatal(err)
		}
	}
	apply(done("start", 1, nil))
	// What schedule does when an arc reaches a running step.
	st2.Steps["join"].Pending = append(st2.Steps["join"].Pending, Token{From: "start", FromRun: 1})
	st2.Active++
	apply(done("join", 1, nil)) // routing fails; the queued token starts run 2
	if st2.Steps["join"].Run != 2 || st2.Steps["join"].Status != types.StatusRunning {
		t.Fatalf("join run %d %s: the queued token must start", st2.Steps["join"].Run, st2.Steps["join"].Status)
	}
	apply(done("join", 2, nil))
	if st2.Status != ExecFailed || st2.Active != 0 {
		t.Fatalf("execution %s active %d: want failed and finished", st2.Status, st2.Active)
	}
}

func toolFailed(step string, run int) types.Event {
	ev := types.NewEvent(types.EvStepFailed, "ex1", "execute", t0, step, itoa(run))
	ev.Step, ev.StepRun = step, run
	ev.Payload = map[string]any{"error": map[string]any{"kind": "python", "message": "boom"}}
	return ev
}
