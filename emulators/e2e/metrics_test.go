package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// metricsPlaybook exercises every kind of series the engine records:
// a step whose http task is retried twice (the fixture's flaky endpoint
// answers 503 twice), arcs taken and skipped (with when), a parallel loop
// of side-effecting python iterations (leased), and a last step.
const metricsPlaybook = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: metrics, path: %s}
workload: {api_url: "http://unset", key: "unset"}
workflow:
  - step: start
    tool:
      - call:
          kind: http
          method: GET
          url: "{{ api_url }}/flaky/{{ key }}"
          params: {fail: 2, status: 503}
          spec:
            policy:
              rules:
                - when: "{{ outcome.status == 'error' }}"
                  then: {do: retry, attempts: 5, backoff: fixed, delay: 0.1}
                - else:
                    then: {do: continue}
    next:
      spec: {mode: inclusive}
      arcs:
        - step: fan
          when: "{{ start.data.attempts == 3 }}"
        - step: never
          when: "{{ false }}"
  - step: fan
    loop:
      in: [1, 2, 3, 4]
      iterator: n
      spec: {mode: parallel, max_in_flight: 2}
    tool:
      kind: python
      args: {n: "{{ n }}"}
      code: |
        result = {"sq": n * n}
    next:
      arcs:
        - step: last
  - step: never
    tool: {kind: noop}
  - step: last
    tool: {kind: noop, result: {done: true}}
`

// After a run, the functions host's /metrics agree with the execution's
// events: the series labelled with the run's workflow (a path used by no
// other execution) by exact counts, the process-wide worker and lease
// series by at least the run's share.
func TestMetricsMatchEvents(t *testing.T) {
	RequireStack(t)
	wf := "e2e/metrics-" + randSuffix()
	pb := filepath.Join(t.TempDir(), "metrics.yaml")
	if err := os.WriteFile(pb, []byte(fmt.Sprintf(metricsPlaybook, wf)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := Scrape(t)
	r := Run(t, pb, MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "key": "metrics-" + randSuffix()}))
	ok(t, r)
	evs := Events(t, r.ExecutionID)
	done := SeriesKey("noetl_executions_completed_total", "workflow", wf, "status", "ok")
	after := Scrape(t)
	for deadline := time.Now().Add(10 * time.Second); after[done] < 1 && time.Now().Before(deadline); after = Scrape(t) {
		time.Sleep(100 * time.Millisecond)
	}

	exact := func(key string, want int) {
		t.Helper()
		if got := before.Delta(after, key); got != float64(want) {
			t.Errorf("%s grew by %g, want %d (from the events)", key, got, want)
		}
	}
	atLeast := func(key string, want int) {
		t.Helper()
		if want == 0 {
			t.Errorf("%s: the run produced no event to compare with", key)
		}
		if got := before.Delta(after, key); got < float64(want) {
			t.Errorf("%s grew by %g, want at least %d (from the events)", key, got, want)
		}
	}
	// Worker-side counts are per attempt; under delivery chaos a duplicate
	// delivery may run a read-only attempt twice.
	worker := exact
	if os.Getenv("NOETL_DELIVERY_CHAOS") != "" {
		worker = atLeast
	}

	exact(SeriesKey("noetl_executions_started_total", "workflow", wf), 1)
	exact(done, Count(evs, "playbook.finished", ""))
	for _, step := range []string{"start", "fan", "never", "last"} {
		scheduled := 0
		for _, e := range evs {
			if e["event_type"] == "step.scheduled" && e["step"] == step && payload(e)["queued"] != true {
				scheduled++
			}
		}
		exact(SeriesKey("noetl_step_calls_total", "workflow", wf, "step", step), scheduled)
		okRuns, failedRuns := Count(evs, "step.done", step), Count(evs, "step.failed", step)
		exact(SeriesKey("noetl_step_runs_total", "workflow", wf, "step", step, "ok", "true"), okRuns)
		exact(SeriesKey("noetl_step_runs_total", "workflow", wf, "step", step, "ok", "false"), failedRuns)
		exact(SeriesKey("noetl_step_duration_seconds_count", "workflow", wf, "step", step), okRuns+failedRuns)
	}
	if Count(evs, "step.done", "never") != 0 || Count(evs, "step.done", "fan") != 1 {
		t.Fatalf("unexpected run: %d never, %d fan step.done events", Count(evs, "step.done", "never"), Count(evs, "step.done", "fan"))
	}

	planned := 0
	for _, e := range evs {
		if e["event_type"] == "loop.started" && e["step"] == "fan" {
			planned += intOf(payload(e)["total"])
		}
	}
	exact(SeriesKey("noetl_loop_items_total", "workflow", wf, "step", "fan"), planned)
	exact(SeriesKey("noetl_loop_completed_total", "workflow", wf, "step", "fan", "ok", "true"), Count(evs, "loop.iteration.done", "fan"))

	// Arcs of start: fan taken (its when is true), never skipped (false).
	exact(SeriesKey("noetl_edge_eval_total", "workflow", wf, "from", "start", "to", "fan", "outcome", "taken"), 1)
	exact(SeriesKey("noetl_edge_eval_total", "workflow", wf, "from", "start", "to", "never", "outcome", "skipped"), 1)
	exact(SeriesKey("noetl_edge_eval_total", "workflow", wf, "from", "fan", "to", "last", "outcome", "taken"), 1)
	exact(SeriesKey("noetl_when_eval_total", "workflow", wf, "step", "start", "outcome", "true"), 1)
	exact(SeriesKey("noetl_when_eval_total", "workflow", wf, "step", "start", "outcome", "false"), 1)

	retries, httpAttempts, httpFailed, pyAttempts := 0, 0, 0, 0
	for _, e := range evs {
		p := payload(e)
		switch e["event_type"] {
		case "policy.task.evaluated":
			if p["do"] == "retry" && p["exhausted"] != true {
				retries++
			}
		case "task.attempt.started":
			switch p["kind"] {
			case "http":
				httpAttempts++
			case "python":
				pyAttempts++
			}
		case "task.attempt.failed":
			if p["kind"] == "http" {
				httpFailed++
			}
		}
	}
	if retries != 2 || httpAttempts != 3 || pyAttempts != 4 {
		t.Fatalf("unexpected run: %d retries, %d http attempts, %d python attempts (want 2, 3, 4)", retries, httpAttempts, pyAttempts)
	}
	worker(SeriesKey("noetl_task_retries_total", "workflow", wf, "step", "start", "kind", "http"), retries)

	// Process-wide series (other executions may run at the same time).
	atLeast(SeriesKey("noetl_worker_tasks_started_total", "kind", "http", "pool", "work"), httpAttempts)
	atLeast(SeriesKey("noetl_worker_tasks_completed_total", "kind", "http", "pool", "work", "ok", "false"), httpFailed)
	atLeast(SeriesKey("noetl_worker_tasks_completed_total", "kind", "http", "pool", "work", "ok", "true"), httpAttempts-httpFailed)
	atLeast(SeriesKey("noetl_worker_task_duration_seconds_count", "kind", "python"), pyAttempts)
	atLeast(SeriesKey("noetl_plugin_errors_total", "kind", "http", "error_class", "server_error"), httpFailed) // a 503: NoETL's error taxonomy
	// The python iterations are side-effecting: each runs under a lease.
	atLeast(SeriesKey("noetl_lease_acquired_total", "lease", "iteration"), Count(evs, "loop.iteration.done", "fan"))
}

func payload(e map[string]any) map[string]any {
	p, _ := e["payload"].(map[string]any)
	return p
}

func intOf(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}

// A unit body that never decodes is acked, filed in the DLQ and counted as
// a poison dead letter of execute (noetl_dlq_total, NoETL observability spec §8.6).
func TestDeadLetterMetric(t *testing.T) {
	RequireStack(t)
	key := SeriesKey("noetl_dlq_total", "kind", "", "reason", "poison", "source", "execute")
	before := Scrape(t)
	if code, body := postWith(t, os.Getenv("NOETL_FUNCTIONS_URL")+"/execute", []byte(`{"execution_id": 7`), ExecuteAuthorization(t)); code != 200 {
		t.Fatalf("poison unit: %d %s, want 200", code, body)
	}
	if d := before.Delta(Scrape(t), key); d != 1 {
		t.Errorf("%s grew by %g, want 1", key, d)
	}
}
