package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A parallel loop runs at most max_in_flight iterations at once (one per
// lane, batched or not), and really runs them in parallel.
func TestParallelLoopHonoursMaxInFlight(t *testing.T) {
	RequireStack(t)
	// The fixture service's record endpoint counts the calls in flight
	// (a server of the test's own would be refused by the egress policy).
	key := "mif-" + randSuffix()
	pb := t.TempDir() + "/mif.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: max_in_flight}
workload: {url: "http://unset", items: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}
workflow:
  - step: start
    loop:
      in: "{{ items }}"
      iterator: i
      spec: {mode: parallel, max_in_flight: 3}
    tool:
      - call: {kind: http, url: "{{ url }}/{{ i }}?delay_ms=300"}
      - shape: {kind: noop, result: {i: "{{ i }}", index: "{{ loop_index }}"}}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, MustJSON(map[string]any{"url": os.Getenv("NOETL_FIXTURES_URL") + "/record/" + key}))
	ok(t, r)
	rec := exGet(t, os.Getenv("NOETL_FIXTURES_URL")+"/recorded/"+key).(map[string]any)
	total, peak := asInt(rec["count"]), asInt(rec["peak"])
	if total != 12 {
		t.Fatalf("%d calls, want 12", total)
	}
	if peak > 3 || peak < 2 {
		t.Fatalf("peak concurrency %d, want ≤ 3 (and > 1: the loop is parallel)", peak)
	}
	res := step(t, r, "start")["results"].([]any)
	for i, x := range res {
		m := x.(map[string]any)
		if asInt(m["i"]) != int64(i) || asInt(m["index"]) != int64(i) {
			t.Fatalf("results not in iteration order at %d: %v", i, m)
		}
	}
}

// An empty collection completes the loop at once with results [], and the
// loop.done arc fires; set_ctx in a parallel loop is rejected before
// anything runs unless the step opts in.
func TestEmptyLoopAndParallelSetCtx(t *testing.T) {
	RequireStack(t)
	dir := t.TempDir()
	empty := dir + "/empty.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: empty_loop}
workload: {items: []}
workflow:
  - step: start
    loop: {in: "{{ items }}", iterator: it, spec: {mode: parallel, max_in_flight: 4}}
    tool: {kind: noop, result: "{{ it }}"}
    next:
      arcs: [{step: after, on: loop.done, args: {n: "{{ start.results | length }}"}}]
  - step: after
    tool: {kind: noop, result: {n: "{{ args.n }}"}}
`
	if err := os.WriteFile(empty, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, empty, "")
	ok(t, r)
	if res := step(t, r, "start")["results"].([]any); len(res) != 0 {
		t.Fatalf("results %v", res)
	}
	if asInt(step(t, r, "after")["n"]) != 0 {
		t.Fatalf("after = %v", r.Steps["after"])
	}
	setctx := dir + "/setctx.yaml"
	bad := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: parallel_set_ctx}
workload: {items: [1, 2]}
workflow:
  - step: start
    loop: {in: "{{ items }}", iterator: it, spec: {mode: parallel}}
    tool: {kind: noop}
    set_ctx: {last: "{{ it }}"}
`
	if err := os.WriteFile(setctx, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r = Run(t, setctx, "")
	if r.Code != 2 || !strings.Contains(r.Stderr, "setctx.yaml:9") || !strings.Contains(r.Stderr, "allow_set_ctx") {
		t.Fatalf("parallel set_ctx: exit %d\n%s", r.Code, r.Stderr)
	}
	opted := strings.Replace(bad, "mode: parallel}", "mode: parallel, allow_set_ctx: true}", 1)
	if err := os.WriteFile(setctx, []byte(opted), 0o644); err != nil {
		t.Fatal(err)
	}
	r = Run(t, setctx, "")
	ok(t, r)
}

// Fail fast: once an iteration fails, the loop step fails and iterations
// still in flight dispatch no further ones.
func TestLoopFailFastStopsDispatch(t *testing.T) {
	RequireStack(t)
	pb := t.TempDir() + "/failfast.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: fail_fast}
workload: {items: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: items}, {step: slow}]
  - step: slow
    desc: keeps the execution running while the loop fails
    tool: {kind: python, code: "import time; time.sleep(4); result = 1"}
  - step: items
    loop: {in: "{{ items }}", iterator: i, spec: {mode: parallel, max_in_flight: 2}}
    tool:
      kind: python
      args: {i: "{{ i }}"}
      code: |
        import time
        if i == 2:
            raise RuntimeError("boom at 2")
        time.sleep(1)
        result = i
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	if r.Code != 1 || r.Status != "failed" {
		t.Fatalf("exit %d status %s", r.Code, r.Status)
	}
	evs := Events(t, r.ExecutionID)
	time.Sleep(2 * time.Second)
	evs = Events(t, r.ExecutionID)
	// 0 and 1 start; their ends release 2 (fails at once) and 3; 3 ends
	// after the step failed and must release nothing.
	if n := Count(evs, "loop.iteration.started", "items"); n > 4 || n < 3 {
		t.Fatalf("%d iterations started, want 3 or 4", n)
	}
	if Count(evs, "loop.iteration.failed", "items") != 1 || Count(evs, "step.failed", "items") != 1 {
		t.Fatal("want one loop.iteration.failed and one step.failed")
	}
}
