package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/jsonx"
)

func conf(name string) string { return Conformance("noetl", name) }

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return -1
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case int:
		return int64(x)
	}
	return -1
}

func step(t *testing.T, r RunResult, name string) map[string]any {
	t.Helper()
	m, ok := r.Steps[name].(map[string]any)
	if !ok {
		t.Fatalf("step %s result missing or not a map: %#v\nstderr: %s", name, r.Steps[name], r.Stderr)
	}
	return m
}

func ok(t *testing.T, r RunResult) {
	t.Helper()
	if r.Code != 0 || r.Status != "ok" {
		t.Fatalf("exit %d status %q\nstdout: %s\nstderr: %s", r.Code, r.Status, r.Stdout, r.Stderr)
	}
}

func TestConformanceHelloWorld(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("hello_world.yaml"), "")
	ok(t, r)
	got := jsonx.Clone(r.Steps["test_step"])
	want := map[string]any{"status": "ok", "data": map[string]any{"message": "Hello World"}}
	if MustJSON(got) != MustJSON(want) {
		t.Fatalf("test_step = %s, want %s", MustJSON(got), MustJSON(want))
	}
}

func TestConformanceSimpleOK(t *testing.T) {
	RequireStack(t)
	for _, f := range []string{"test_args_passing.yaml", "test_start_with_action.yaml", "test_end_with_action.yaml", "v2_simple_python.yaml"} {
		t.Run(f, func(t *testing.T) {
			r := Run(t, conf(f), "")
			ok(t, r)
		})
	}
}

func TestConformanceArgsPassingNative(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("test_args_passing.yaml"), "")
	ok(t, r)
	if got := asInt(step(t, r, "use_vars")["result"]); got != 300 {
		t.Fatalf("use_vars.result = %v, want 300", got)
	}
}

func TestConformanceLoop(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("v2_loop_test.yaml"), "")
	ok(t, r)
	end := step(t, r, "end")
	if end["status"] != "ok" || end["test_passed"] != true {
		t.Fatalf("end = %v", end)
	}
	loop := step(t, r, "start")["results"].([]any)
	if len(loop) != 5 {
		t.Fatalf("start loop results %v", loop)
	}
	for i, x := range loop {
		m := x.(map[string]any)
		if asInt(m["number"]) != int64(i+1) || asInt(m["doubled"]) != int64(2*(i+1)) || asInt(m["index"]) != int64(i) {
			t.Fatalf("iteration %d out of order or wrong: %v", i, m)
		}
	}
}

func TestConformanceLoopInstanceIsolation(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("test_loop_instance_isolation.yaml"), "")
	ok(t, r)
	v := step(t, r, "verify_results")
	if asInt(v["users_count"]) != 2 || asInt(v["products_count"]) != 2 {
		t.Fatalf("verify_results = %v", v)
	}
}

func TestConformancePythonRetryException(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("python_retry_exception.yaml"), "")
	evs := Events(t, r.ExecutionID)
	started := Count(evs, "task.attempt.started", "start")
	failed := Count(evs, "task.attempt.failed", "start")
	done := Count(evs, "task.attempt.done", "start")
	switch r.Status {
	case "ok":
		if done != 1 || failed != started-1 || started < 1 || started > 5 {
			t.Fatalf("ok after %d attempts: %d failed, %d done", started, failed, done)
		}
	case "failed":
		if r.Code != 1 || started != 5 || failed != 5 {
			t.Fatalf("failed: exit %d, %d attempts started, %d failed (want 5)", r.Code, started, failed)
		}
	default:
		t.Fatalf("status %q: %s", r.Status, r.Stderr)
	}
	t.Logf("python_retry_exception: %s after %d attempts", r.Status, started)
}

func TestConformanceHTTPRetryStatusCode(t *testing.T) {
	RequireStack(t)
	key := fmt.Sprintf("conf-%d", time.Now().UnixNano())
	url := os.Getenv("NOETL_FIXTURES_URL") + "/flaky/" + key + "?fail=2&status=503"
	r := Run(t, conf("http_retry_status_code.yaml"), MustJSON(map[string]any{"test_url": url}))
	ok(t, r)
	resp, err := http.Get(os.Getenv("NOETL_FIXTURES_URL") + "/flaky/" + key + "/log")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var times []string
	if err := jsonx.Unmarshal(b, &times); err != nil {
		t.Fatalf("log: %v %s", err, b)
	}
	if len(times) != 3 {
		t.Fatalf("endpoint saw %d requests, want 3", len(times))
	}
	var ts []time.Time
	for _, s := range times {
		x, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, x)
	}
	d1, d2 := ts[1].Sub(ts[0]), ts[2].Sub(ts[1])
	// Policy: delay 0.5 s exponential → full-jitter draws under 0.5 s
	// then 1 s (engine.JitteredBackoff); each gap is at least its draw.
	evs := Events(t, r.ExecutionID)
	var delays []float64
	for _, e := range evs {
		if e["event_type"] == "policy.task.evaluated" && e["step"] == "start" {
			if p, _ := e["payload"].(map[string]any); p["delay_s"] != nil {
				delays = append(delays, asFloat(p["delay_s"]))
			}
		}
	}
	if len(delays) != 2 || delays[0] >= 0.5 || delays[1] >= 1 || d1.Seconds() < delays[0] || d2.Seconds() < delays[1] {
		t.Fatalf("gaps %v then %v, decided delays %v: want draws under 0.5 s then 1 s, each gap at least its draw", d1, d2, delays)
	}
	if n := Count(evs, "task.attempt.started", "start"); n != 3 {
		t.Fatalf("%d attempts recorded, want 3", n)
	}
}

func TestConformancePagination(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("test_pagination_basic.yaml"), MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL")}))
	ok(t, r)
	v := step(t, r, "validate_results")
	if asInt(v["total_items"]) != 35 || asInt(v["first_id"]) != 1 || asInt(v["last_id"]) != 35 {
		t.Fatalf("validate_results = %v", v)
	}
}
