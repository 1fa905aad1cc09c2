package e2e

import (
	"os"
	"strings"
	"testing"
)

// spec.policy.lifecycle.timeout_s is a durable timer (a Cloud Task with a
// schedule_time): a step still running when it fires fails with an error
// of kind "timeout", which an `on: step.failed` arc can handle; a step that
// ends in time is not affected.
func TestStepLifecycleTimeout(t *testing.T) {
	RequireStack(t)
	pb := t.TempDir() + "/timeout.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: step_timeout}
workflow:
  - step: start
    spec:
      policy:
        lifecycle: {timeout_s: 5}
    tool: {kind: noop, result: {fast: true}}
    next:
      arcs: [{step: slow}]
  - step: slow
    spec:
      policy:
        lifecycle: {timeout_s: 1}
    tool:
      kind: python
      code: |
        import time
        time.sleep(4)
        result = {"finished": True}
    next:
      arcs:
        - {step: done}
        - {step: timed_out, on: step.failed, args: {error: "{{ event.error }}"}}
  - step: done
    tool: {kind: noop}
  - step: timed_out
    tool: {kind: noop, result: {kind: "{{ args.error.kind }}", message: "{{ args.error.message }}"}}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	ok(t, r)
	to := step(t, r, "timed_out")
	if to["kind"] != "timeout" || !strings.Contains(to["message"].(string), "timeout_s 1") {
		t.Fatalf("timed_out = %v", to)
	}
	if _, ran := r.Steps["done"]; ran {
		t.Fatal("the success arc of the timed-out step ran")
	}
	if step(t, r, "start")["fast"] != true {
		t.Fatal("start's generous timeout affected it")
	}
}
