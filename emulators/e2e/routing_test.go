package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// exRunWithin is Run with a short --timeout, for playbooks that may never
// finish: it returns the exit code, the status ("" when the run timed out)
// and the execution id (from the final JSON line, or from the progress
// output when there is none).
func exRunWithin(t *testing.T, playbook, timeout string) (code int, status, id string, stderr string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "run"), playbook, "--timeout", timeout)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, isExit := err.(*exec.ExitError); isExit {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("scripts/run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	var m map[string]any
	if last := lines[len(lines)-1]; strings.HasPrefix(last, "{") && jsonx.Unmarshal([]byte(last), &m) == nil {
		status, _ = m["status"].(string)
		id, _ = m["execution_id"].(string)
	}
	if id == "" {
		if x := regexp.MustCompile(`execution (\S+) (started|still running)`).FindStringSubmatch(se.String()); x != nil {
			id = x[1]
		}
	}
	return code, status, id, se.String()
}

// exNext returns the payloads of step's next.evaluated events.
func exNext(evs []map[string]any, stepName string) []map[string]any {
	var out []map[string]any
	for _, e := range exEvents(evs, "next.evaluated", stepName, "") {
		out = append(out, exPayload(e))
	}
	return out
}

// exNever asserts a step was never scheduled, started or given a result.
func exNever(t *testing.T, r RunResult, evs []map[string]any, stepName string) {
	t.Helper()
	for _, typ := range []string{"step.scheduled", "step.started", "step.done", "step.failed"} {
		if n := Count(evs, typ, stepName); n != 0 {
			t.Fatalf("step %s: %d %s events, want none", stepName, n, typ)
		}
	}
	if _, has := r.Steps[stepName]; has {
		t.Fatalf("step %s has a result: %s", stepName, MustJSON(r.Steps[stepName]))
	}
}

// examples/routing.yaml: one run, every routing feature checked from the
// results and the control plane's events.
func TestRoutingExample(t *testing.T) {
	RequireStack(t)
	r := Run(t, exPath("routing.yaml"), MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL")}))
	// risky fails, but its failure is routed to recover: the execution is ok.
	ok(t, r)
	evs := Events(t, r.ExecutionID)

	t.Run("inclusive fires every matching arc", func(t *testing.T) {
		n := exNext(evs, "start")
		if len(n) != 1 {
			t.Fatalf("start next.evaluated: %s", MustJSON(n))
		}
		if n[0]["mode"] != "inclusive" || MustJSON(n[0]["matched"]) != `["branch_a","branch_b","fan"]` || MustJSON(n[0]["fired"]) != `["branch_a","branch_b","fan"]` {
			t.Fatalf("start next.evaluated = %s", MustJSON(n[0]))
		}
		for _, s := range []string{"branch_a", "branch_b", "fan"} {
			if Count(evs, "step.started", s) != 1 || Count(evs, "step.done", s) != 1 {
				t.Fatalf("branch %s did not run exactly once", s)
			}
		}
		exNever(t, r, evs, "branch_c")
	})

	t.Run("exclusive fires only the first matching arc", func(t *testing.T) {
		n := exNext(evs, "branch_b")
		if len(n) != 1 || n[0]["mode"] != "exclusive" || MustJSON(n[0]["matched"]) != `["pick_big","pick_small"]` || MustJSON(n[0]["fired"]) != `["pick_big"]` {
			t.Fatalf("branch_b next.evaluated = %s", MustJSON(n))
		}
		if p := step(t, r, "pick_big"); p["picked"] != "big" || asInt(p["value"]) != 14 {
			t.Fatalf("pick_big = %s", MustJSON(p))
		}
		exNever(t, r, evs, "pick_small")
	})

	t.Run("arc args arrive as native ints", func(t *testing.T) {
		for _, e := range exEvents(evs, "step.scheduled", "branch_a", "") {
			args, _ := exPayload(e)["args"].(map[string]any)
			if v, isInt := args["value"].(int64); !isInt || v != 7 {
				t.Fatalf("branch_a scheduled with args %s (%T), want value 7 as an int", MustJSON(args), args["value"])
			}
		}
		a := step(t, r, "branch_a")
		if v, isInt := a["value"].(int64); !isInt || v != 7 || asInt(a["plus_one"]) != 8 {
			t.Fatalf("branch_a = %s (%T), want value 7 (int), plus_one 8", MustJSON(a), a["value"])
		}
		if v, isInt := step(t, r, "branch_b")["value"].(int64); !isInt || v != 14 {
			t.Fatalf("branch_b = %s", MustJSON(step(t, r, "branch_b")))
		}
	})

	t.Run("on step.failed routes to recovery", func(t *testing.T) {
		if n := Count(evs, "step.failed", "risky"); n != 1 {
			t.Fatalf("risky: %d step.failed", n)
		}
		n := exNext(evs, "risky")
		if len(n) != 1 || n[0]["event"] != "step.failed" || MustJSON(n[0]["fired"]) != `["recover"]` {
			t.Fatalf("risky next.evaluated = %s", MustJSON(n))
		}
		rec := step(t, r, "recover")
		if rec["recovered"] != true || rec["failed_step"] != "risky" || asInt(rec["status"]) != 400 {
			t.Fatalf("recover = %s", MustJSON(rec))
		}
		ex := exExecution(t, r.ExecutionID)
		if ex["status"] != "ok" || len(exStrings(ex["failures"])) != 0 {
			t.Fatalf("execution status %v failures %v: a handled failure must not fail it", ex["status"], ex["failures"])
		}
	})

	t.Run("loop.done arc", func(t *testing.T) {
		if n := Count(evs, "loop.done", "fan"); n != 1 {
			t.Fatalf("fan: %d loop.done", n)
		}
		n := exNext(evs, "fan")
		if len(n) != 1 || n[0]["event"] != "loop.done" || MustJSON(n[0]["fired"]) != `["after_loop"]` {
			t.Fatalf("fan next.evaluated = %s", MustJSON(n))
		}
		if a := step(t, r, "after_loop"); asInt(a["count"]) != 3 || asInt(a["total"]) != 60 {
			t.Fatalf("after_loop = %s", MustJSON(a))
		}
	})

	t.Run("admission denies audit", func(t *testing.T) {
		adm := exEvents(evs, "policy.admit.evaluated", "audit", "")
		if len(adm) != 1 {
			t.Fatalf("audit: %d policy.admit.evaluated", len(adm))
		}
		if p := exPayload(adm[0]); p["allowed"] != false || asInt(p["rule"]) != 1 {
			t.Fatalf("audit admission = %s, want allowed false by rule 1", MustJSON(p))
		}
		exNever(t, r, evs, "audit")
	})
}

// The same admission policy lets the step run when its rule allows it.
func TestRoutingAdmissionAllowed(t *testing.T) {
	RequireStack(t)
	r := Run(t, exPath("routing.yaml"), MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "audit_enabled": true}))
	ok(t, r)
	evs := Events(t, r.ExecutionID)
	adm := exEvents(evs, "policy.admit.evaluated", "audit", "")
	if len(adm) != 1 || exPayload(adm[0])["allowed"] != true || asInt(exPayload(adm[0])["rule"]) != 0 {
		t.Fatalf("audit admission = %s", MustJSON(adm))
	}
	if a := step(t, r, "audit"); a["audited"] != true {
		t.Fatalf("audit = %s", MustJSON(a))
	}
}

// Admission sees the arc's args (the token), and a loop step whose
// iteration fails is routed by its `on: step.failed` arc.
func TestRoutingAdmitOnArgsAndLoopFailure(t *testing.T) {
	RequireStack(t)
	pb := exWrite(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: routing_admit_args}
workload: {api_url: "http://unset"}
workflow:
  - step: start
    tool: {kind: noop, result: {v: 3}}
    next:
      spec: {mode: inclusive}
      arcs:
        - {step: small, args: {value: "{{ start.v }}"}}
        - {step: big, args: {value: "{{ start.v * 10 }}"}}
        - {step: lp}
  - step: small
    spec:
      policy:
        admit:
          rules:
            - {when: "{{ args.value > 5 }}", then: {allow: true}}
            - else: {then: {allow: false}}
    tool: {kind: noop, result: {ran: "{{ args.value }}"}}
  - step: big
    spec:
      policy:
        admit:
          rules:
            - {when: "{{ args.value > 5 }}", then: {allow: true}}
            - else: {then: {allow: false}}
    tool: {kind: noop, result: {ran: "{{ args.value }}"}}
  - step: lp
    loop: {in: [1, 2, 3], iterator: x}
    tool:
      kind: http
      url: "{{ api_url }}/api/v1/assessments"
      params: {page: "{{ x - 1 }}"}
    next:
      arcs:
        - {step: lp_failed, on: step.failed, args: {status: "{{ event.error.status }}"}}
        - {step: lp_ok}
  - step: lp_failed
    tool: {kind: noop, result: {status: "{{ args.status }}"}}
  - step: lp_ok
    tool: {kind: noop, result: {ok: true}}
`)
	r := Run(t, pb, MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL")}))
	ok(t, r)
	evs := Events(t, r.ExecutionID)
	if a := exEvents(evs, "policy.admit.evaluated", "small", ""); len(a) != 1 || exPayload(a[0])["allowed"] != false {
		t.Fatalf("small admission %s", MustJSON(a))
	}
	exNever(t, r, evs, "small")
	if b := step(t, r, "big"); asInt(b["ran"]) != 30 {
		t.Fatalf("big = %s", MustJSON(b))
	}
	// Iteration 0 asks for page 0 (400): the loop fails (fail_fast) and
	// its step.failed arc runs; the success arc does not.
	if f := step(t, r, "lp_failed"); asInt(f["status"]) != 400 {
		t.Fatalf("lp_failed = %s", MustJSON(f))
	}
	exNever(t, r, evs, "lp_ok")
}

// Two inclusive branches converge on one step: the step is the fan-in join
// of the fan-out (dsl.Step.JoinOf), so it runs once, after both branches,
// with their args merged in JoinOf order (README "Running NoETL v2 playbooks", "Fan-out/reduce"), and
// the execution finishes.
func TestRoutingInclusiveJoinFinishes(t *testing.T) {
	RequireStack(t)
	pb := exWrite(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: routing_join}
workflow:
  - step: start
    tool: {kind: noop, result: {v: 1}}
    next:
      spec: {mode: inclusive}
      arcs:
        - {step: fast}
        - {step: slow}
  - step: fast
    tool: {kind: noop, result: {who: fast}}
    next: {arcs: [{step: join, args: {from: fast}}]}
  - step: slow
    tool:
      kind: python
      code: |
        import time
        time.sleep(1)
        result = {"who": "slow"}
    next: {arcs: [{step: join, args: {from: slow}}]}
  - step: join
    tool:
      kind: python
      args: {src: "{{ args.from }}"}
      code: |
        import time
        time.sleep(4)
        result = {"from": src}
`)
	code, status, id, stderr := exRunWithin(t, pb, "30s")
	if code != 0 || status != "ok" {
		t.Fatalf("join execution %s: exit %d status %q, want it to finish ok\n%s", id, code, status, stderr)
	}
	evs := Events(t, id)
	var from []string
	for _, e := range exEvents(evs, "step.done", "join", "") {
		if res, _ := exPayload(e)["result"].(map[string]any); res != nil {
			from = append(from, res["from"].(string))
		}
	}
	if len(from) != 1 || from[0] != "slow" {
		t.Fatalf("join completed for tokens %v, want one run with the merged args (from: slow, the later of fast and slow)", from)
	}
	if n := len(exEvents(evs, "step.started", "join", "")); n != 1 {
		t.Fatalf("join started %d times, want once", n)
	}
}
