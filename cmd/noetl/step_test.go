package main

import (
	"reflect"
	"strings"
	"testing"
)

// noetl step complete|fail: the route, the body (the result as JSON, the
// reason), the output, and the exit codes of the api's refusals.
func TestStepEnd(t *testing.T) {
	f := newFake(t)
	f.reply("POST /executions/e1/steps/load/complete", 200, map[string]any{"execution_id": "e1", "step": "load", "step_run": 2, "action": "complete", "status": "ok"})
	f.reply("POST /executions/e1/steps/load/fail", 200, map[string]any{"execution_id": "e1", "step": "load", "step_run": 2, "action": "fail", "status": "failed"})
	f.reply("POST /executions/e1/steps/gone/complete", 404, map[string]any{"error": "control: execution e1's playbook has no step \"gone\""})
	f.reply("POST /executions/e2/steps/load/fail", 409, map[string]any{"error": "control: execution e2 has ended (ok)"})

	r := f.cli("step", "complete", "e1", "load", "--result", `{"rows": 3, "ok": true}`, "--reason", "loaded by hand", "-o", "table")
	if r.code != 0 || r.stdout != "execution e1: step load run 2 completed by hand (ok)\n" {
		t.Errorf("complete: %+v", r)
	}
	if body := f.requests()[0].Body; !reflect.DeepEqual(body, map[string]any{"result": map[string]any{"rows": float64(3), "ok": true}, "reason": "loaded by hand"}) {
		t.Errorf("complete body %#v", body)
	}
	r = f.cli("step", "fail", "e1", "load", "--reason", "upstream is down", "-o", "table")
	if r.code != 0 || r.stdout != "execution e1: step load run 2 failed by hand (failed)\n" {
		t.Errorf("fail: %+v", r)
	}
	if body := f.requests()[1].Body; !reflect.DeepEqual(body, map[string]any{"reason": "upstream is down"}) {
		t.Errorf("fail body %#v", body)
	}
	if r := f.cli("step", "complete", "e1", "gone"); r.code != ExitNotFound || !strings.Contains(r.stderr, `no step "gone"`) {
		t.Errorf("unknown step: %+v", r)
	}
	if r := f.cli("step", "fail", "e2", "load"); r.code != ExitInvalid || !strings.Contains(r.stderr, "has ended") {
		t.Errorf("ended execution: %+v", r)
	}
	n := len(f.requests())
	if r := f.cli("step", "complete", "e1", "load", "--result", "{not json"); r.code != ExitInvalid || !strings.Contains(r.stderr, "--result is not JSON") || len(f.requests()) != n {
		t.Errorf("bad --result: %+v (requests %d → %d)", r, n, len(f.requests()))
	}
	if r := f.cli("step", "fail", "e1", "load", "--result", "1"); r.code != ExitInvalid {
		t.Errorf("fail takes no --result: %+v", r)
	}
}

// noetl gc is a dry run unless --apply is given (NoETL result storage RFC
// §5: dry-run first); --dry-run says the default out loud and contradicts
// --apply.
func TestGCDryRunByDefault(t *testing.T) {
	f := newFake(t)
	f.reply("POST /gc", 200, map[string]any{"dry_run": true, "objects": 3, "deleted": 2, "executions": map[string]any{"expired": 1}})
	for _, c := range []struct {
		args  []string
		query string
	}{
		{[]string{"gc"}, ""},
		{[]string{"gc", "--dry-run"}, ""},
		{[]string{"gc", "--apply"}, "apply=true"},
		{[]string{"gc", "--execution", "e1", "--force", "--apply"}, "apply=true&execution_id=e1&force=true"},
	} {
		n := len(f.requests())
		if r := f.cli(append(c.args, "-o", "table")...); r.code != 0 {
			t.Fatalf("%v: %+v", c.args, r)
		}
		if q := f.requests()[n].Query; q != c.query {
			t.Errorf("%v: query %q, want %q", c.args, q, c.query)
		}
	}
	if r := f.cli("gc", "-o", "table"); !strings.Contains(r.stdout, "would delete 2") {
		t.Errorf("dry run output: %q", r.stdout)
	}
	if r := f.cli("gc", "--dry-run", "--apply"); r.code != ExitInvalid {
		t.Errorf("--dry-run --apply: %+v", r)
	}
}
