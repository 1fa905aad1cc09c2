package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
)

// exFlakyKey returns a key for the flaky endpoint no earlier run used.
func exFlakyKey(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// exWrite writes a playbook to a temporary file and returns its path.
func exWrite(t *testing.T, src string) string {
	t.Helper()
	p := t.TempDir() + "/playbook.yaml"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exDecision is one policy.task.evaluated payload, reduced to what the tests
// compare.
type exDecision struct {
	Attempt int64
	Rule    int64
	Do      string
	DelayS  float64
	Status  string
}

func exDecisions(evs []map[string]any, stepName, task string) []exDecision {
	var out []exDecision
	for _, e := range exEvents(evs, "policy.task.evaluated", stepName, task) {
		p := exPayload(e)
		d := exDecision{Attempt: asInt(e["attempt"]), Rule: asInt(p["rule"]), Do: fmt.Sprint(p["do"]), Status: fmt.Sprint(p["outcome_status"])}
		switch v := p["delay_s"].(type) {
		case float64:
			d.DelayS = v
		case int64:
			d.DelayS = float64(v)
		}
		out = append(out, d)
	}
	return out
}

// exFlakyGaps returns the gaps between the requests the flaky endpoint saw
// for key.
func exFlakyGaps(t *testing.T, api, key string) []time.Duration {
	t.Helper()
	var ts []time.Time
	for _, s := range exStrings(exGet(t, api+"/flaky/"+key+"/log")) {
		x, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	var gaps []time.Duration
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i].Sub(ts[i-1]))
	}
	return gaps
}

// examples/pipeline_policies.yaml: every policy action of one pipeline,
// checked from the result, the decisions recorded and the execution ctx.
func TestPipelinePolicies(t *testing.T) {
	RequireStack(t)
	api := os.Getenv("NOETL_FIXTURES_URL")
	key := exFlakyKey("pipeline")
	r := Run(t, exPath("pipeline_policies.yaml"), MustJSON(map[string]any{"api_url": api, "flaky_key": key}))
	ok(t, r)
	evs := Events(t, r.ExecutionID)

	// retry: two 503s retried by rule 0 with exponential backoff (full
	// jitter under 0.2 s, 0.4 s: engine.Jitter of the unit and the
	// attempt), then the else rule (index 2) continues on the 200.
	got := exDecisions(evs, "start", "call_flaky")
	want := []exDecision{
		{Attempt: 1, Rule: 0, Do: "retry", DelayS: jittered(r.ExecutionID, "start", "call_flaky", 0.2, 1), Status: "error"},
		{Attempt: 2, Rule: 0, Do: "retry", DelayS: jittered(r.ExecutionID, "start", "call_flaky", 0.2, 2), Status: "error"},
		{Attempt: 3, Rule: 2, Do: "continue", Status: "ok"},
	}
	if MustJSON(got) != MustJSON(want) {
		t.Fatalf("call_flaky decisions\n got %+v\nwant %+v", got, want)
	}
	if a, f, d := len(exEvents(evs, "task.attempt.started", "start", "call_flaky")), len(exEvents(evs, "task.attempt.failed", "start", "call_flaky")), len(exEvents(evs, "task.attempt.done", "start", "call_flaky")); a != 3 || f != 2 || d != 1 {
		t.Fatalf("call_flaky attempts: %d started, %d failed, %d done; want 3, 2, 1", a, f, d)
	}
	gaps := exFlakyGaps(t, api, key)
	if len(gaps) != 2 || gaps[0].Seconds() < want[0].DelayS || gaps[1].Seconds() < want[1].DelayS {
		t.Fatalf("flaky endpoint request gaps %v, want at least the decided delays %v s, %v s", gaps, want[0].DelayS, want[1].DelayS)
	}

	// continue on an error: the 404 of `optional` is recorded as a failed
	// task, and the pipeline goes on.
	if got := exDecisions(evs, "start", "optional"); MustJSON(got) != MustJSON([]exDecision{{Attempt: 1, Rule: 0, Do: "continue", Status: "error"}}) {
		t.Fatalf("optional decisions %+v", got)
	}
	if n := len(exEvents(evs, "task.failed", "start", "optional")); n != 1 {
		t.Fatalf("optional: %d task.failed, want 1", n)
	}

	// jump + set_iter: tick runs 3 times (2 jumps, then no rule matches:
	// continue by default, rule -1).
	got = exDecisions(evs, "start", "tick")
	want = []exDecision{
		{Attempt: 1, Rule: 0, Do: "jump", Status: "ok"},
		{Attempt: 1, Rule: 0, Do: "jump", Status: "ok"},
		{Attempt: 1, Rule: -1, Do: "continue", Status: "ok"},
	}
	if MustJSON(got) != MustJSON(want) {
		t.Fatalf("tick decisions\n got %+v\nwant %+v", got, want)
	}

	// fail not taken (force_fail is false): no rule matched → continue.
	if got := exDecisions(evs, "start", "guard"); len(got) != 1 || got[0].Do != "continue" || got[0].Rule != -1 {
		t.Fatalf("guard decisions %+v", got)
	}

	// break: the pipeline ends with check's result; `skipped` never starts.
	if got := exDecisions(evs, "start", "check"); len(got) != 1 || got[0].Do != "break" || got[0].Rule != 0 {
		t.Fatalf("check decisions %+v", got)
	}
	if n := len(exEvents(evs, "task.started", "start", "skipped")); n != 0 {
		t.Fatalf("task after break started %d times", n)
	}
	s := step(t, r, "start")
	if asInt(s["ticks"]) != 3 || asInt(s["flaky_attempts_seen_by_server"]) != 3 {
		t.Fatalf("start = %s (_prev.ticks 3 and _task.call_flaky.data.attempts 3 expected)", MustJSON(s))
	}
	if _, reached := s["reached"]; reached {
		t.Fatalf("start result is the skipped task's: %s", MustJSON(s))
	}

	// set_ctx from the policies (with _attempt) reaches the execution ctx,
	// and the next step reads it.
	ctx, _ := exExecution(t, r.ExecutionID)["ctx"].(map[string]any)
	if asInt(ctx["flaky_attempts"]) != 3 || asInt(ctx["flaky_served"]) != 3 || asInt(ctx["ticks"]) != 3 {
		t.Fatalf("execution ctx = %s", MustJSON(ctx))
	}
	rep := step(t, r, "report")
	if asInt(rep["flaky_attempts"]) != 3 || asInt(rep["ticks"]) != 3 {
		t.Fatalf("report = %s", MustJSON(rep))
	}
}

// `_task` holds the results of every earlier task of the unit, also after
// a delayed retry handed the unit over to a new Cloud Task. In
// pipeline_policies.yaml, check reads _task.prepare.key after call_flaky
// was retried with delays.
//
// Known bug (worker): the hand-off command does not carry the unit's task
// results, so _task.prepare is undefined after the retry (prepared_key is
// null). See the report of this change.
func TestPipelineTaskResultsSurviveDelayedRetry(t *testing.T) {
	RequireStack(t)
	key := exFlakyKey("pipeline-task")
	r := Run(t, exPath("pipeline_policies.yaml"), MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "flaky_key": key}))
	ok(t, r)
	if got := step(t, r, "start")["prepared_key"]; got != key {
		t.Fatalf("_task.prepare.key after a delayed retry of a later task = %#v, want %q", got, key)
	}
}

// `fail` ends the pipeline failed: the step fails, the execution fails
// (exit 1), and nothing after the failing task runs.
func TestPipelinePolicyFail(t *testing.T) {
	RequireStack(t)
	r := Run(t, exPath("pipeline_policies.yaml"), MustJSON(map[string]any{
		"api_url": os.Getenv("NOETL_FIXTURES_URL"), "flaky_key": exFlakyKey("pipeline-fail"), "force_fail": true}))
	if r.Code != 1 || r.Status != "failed" {
		t.Fatalf("exit %d status %q, want 1 failed\n%s\n%s", r.Code, r.Status, r.Stdout, r.Stderr)
	}
	evs := Events(t, r.ExecutionID)
	if got := exDecisions(evs, "start", "guard"); len(got) != 1 || got[0].Do != "fail" || got[0].Rule != 0 {
		t.Fatalf("guard decisions %+v", got)
	}
	failed := exEvents(evs, "step.failed", "start", "")
	if len(failed) != 1 {
		t.Fatalf("%d step.failed events for start, want 1", len(failed))
	}
	if e, _ := exPayload(failed[0])["error"].(map[string]any); e["task"] != "guard" {
		t.Fatalf("step.failed error = %s, want task guard", MustJSON(exPayload(failed[0])))
	}
	if n := len(exEvents(evs, "task.failed", "start", "guard")); n != 1 {
		t.Fatalf("guard: %d task.failed", n)
	}
	for _, task := range []string{"check", "skipped"} {
		if n := len(exEvents(evs, "task.started", "start", task)); n != 0 {
			t.Fatalf("%s started after fail", task)
		}
	}
	if n := Count(evs, "step.scheduled", "report"); n != 0 {
		t.Fatalf("report scheduled after a failed step")
	}
	ex := exExecution(t, r.ExecutionID)
	if ex["status"] != "failed" || len(exStrings(ex["failures"])) == 0 {
		t.Fatalf("execution status %v failures %v", ex["status"], ex["failures"])
	}
}

// _task, _prev and _attempt inside one unit (no hand-off): a task reads an
// earlier task's result by label, a policy bounds a zero-delay retry loop
// with _attempt, and a policy `when` reads _task.
func TestPipelineTaskPrevAttempt(t *testing.T) {
	RequireStack(t)
	pb := exWrite(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: task_prev_attempt}
workflow:
  - step: start
    tool:
      - first: {kind: noop, result: {v: 41, name: first}}
      - second: {kind: noop, result: {v: 100}}
      - poll:
          kind: noop
          result: {seen_attempt: "{{ _attempt }}"}
          spec:
            policy:
              rules:
                - when: "{{ _attempt < 3 }}"
                  then: {do: retry, attempts: 5, delay: 0}
                - else:
                    then: {do: continue, set_ctx: {polls: "{{ _attempt }}"}}
      - use:
          kind: noop
          result:
            from_first: "{{ _task.first.v + 1 }}"
            from_second: "{{ _task.second.v }}"
            prev: "{{ _prev.seen_attempt }}"
          spec:
            policy:
              rules:
                - when: "{{ _task.first.name == 'first' and _prev.seen_attempt == 3 }}"
                  then: {do: break}
                - else:
                    then: {do: fail}
`)
	r := Run(t, pb, "")
	ok(t, r)
	s := step(t, r, "start")
	if asInt(s["from_first"]) != 42 || asInt(s["from_second"]) != 100 || asInt(s["prev"]) != 3 {
		t.Fatalf("start = %s", MustJSON(s))
	}
	evs := Events(t, r.ExecutionID)
	got := exDecisions(evs, "start", "poll")
	want := []exDecision{
		{Attempt: 1, Rule: 0, Do: "retry", Status: "ok"},
		{Attempt: 2, Rule: 0, Do: "retry", Status: "ok"},
		{Attempt: 3, Rule: 1, Do: "continue", Status: "ok"},
	}
	if MustJSON(got) != MustJSON(want) {
		t.Fatalf("poll decisions\n got %+v\nwant %+v", got, want)
	}
	if got := exDecisions(evs, "start", "use"); len(got) != 1 || got[0].Do != "break" {
		t.Fatalf("use decisions %+v", got)
	}
	ctx, _ := exExecution(t, r.ExecutionID)["ctx"].(map[string]any)
	if asInt(ctx["polls"]) != 3 {
		t.Fatalf("ctx = %s", MustJSON(ctx))
	}
}

// A retry that runs out of attempts fails the step with the last error;
// linear backoff spaces the attempts by full-jitter draws under
// delay*attempt.
func TestPipelineRetryExhausted(t *testing.T) {
	RequireStack(t)
	api := os.Getenv("NOETL_FIXTURES_URL")
	key := exFlakyKey("pipeline-exhausted")
	pb := exWrite(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: retry_exhausted}
workload: {url: "http://unset"}
workflow:
  - step: start
    tool:
      - call:
          kind: http
          url: "{{ url }}"
          spec:
            policy:
              rules:
                - when: "{{ outcome.status == 'error' and outcome.error.retryable }}"
                  then: {do: retry, attempts: 3, backoff: linear, delay: 0.2}
      - never: {kind: noop, result: {reached: true}}
`)
	r := Run(t, pb, MustJSON(map[string]any{"url": api + "/flaky/" + key + "?fail=10&status=503"}))
	if r.Code != 1 || r.Status != "failed" {
		t.Fatalf("exit %d status %q, want 1 failed\n%s", r.Code, r.Status, r.Stderr)
	}
	evs := Events(t, r.ExecutionID)
	got := exDecisions(evs, "start", "call")
	want := []exDecision{
		{Attempt: 1, Rule: 0, Do: "retry", DelayS: jitteredAs("linear", r.ExecutionID, "start", "call", 0.2, 1), Status: "error"},
		{Attempt: 2, Rule: 0, Do: "retry", DelayS: jitteredAs("linear", r.ExecutionID, "start", "call", 0.2, 2), Status: "error"},
		{Attempt: 3, Rule: 0, Do: "retry", Status: "error"},
	}
	if MustJSON(got) != MustJSON(want) {
		t.Fatalf("call decisions\n got %+v\nwant %+v", got, want)
	}
	last := exEvents(evs, "policy.task.evaluated", "start", "call")[2]
	if exPayload(last)["exhausted"] != true {
		t.Fatalf("last exDecision %s, want exhausted", MustJSON(exPayload(last)))
	}
	failed := exEvents(evs, "step.failed", "start", "")
	if len(failed) != 1 {
		t.Fatalf("%d step.failed", len(failed))
	}
	if e, _ := exPayload(failed[0])["error"].(map[string]any); asInt(e["status"]) != 503 || e["task"] != "call" {
		t.Fatalf("step.failed payload %s", MustJSON(exPayload(failed[0])))
	}
	if n := len(exEvents(evs, "task.started", "start", "never")); n != 0 {
		t.Fatal("task after an exhausted retry ran")
	}
	if gaps := exFlakyGaps(t, api, key); len(gaps) != 2 || gaps[0].Seconds() < want[0].DelayS || gaps[1].Seconds() < want[1].DelayS {
		t.Fatalf("request gaps %v, want at least the decided delays %v s, %v s (linear, full jitter)", gaps, want[0].DelayS, want[1].DelayS)
	}
}

// jittered is the delay in seconds the engine decides before attempt+1 of
// an exponential retry of task (delay: base seconds) in a step unit of
// execution id: a full-jitter draw (engine.JitteredBackoff) that is a
// function of the unit's idempotency key, the task and the attempt.
func jittered(id, step, task string, base float64, attempt int) float64 {
	return jitteredAs("exponential", id, step, task, base, attempt)
}

// jitteredAs is jittered for a backoff kind (exponential, linear).
func jitteredAs(backoff, id, step, task string, base float64, attempt int) float64 {
	d := engine.JitteredBackoff(dsl.Then{Backoff: backoff, Delay: base}, attempt, engine.JitterKey(id+":"+step, task, 0))
	return d.Seconds()
}
