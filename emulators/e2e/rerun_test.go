package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rerunOf posts POST /executions/{id}/rerun and returns the answer.
func rerunOf(t *testing.T, id string, body map[string]any) map[string]any {
	t.Helper()
	code, m := apiDo(t, http.MethodPost, "/executions/"+id+"/rerun", body)
	if code != http.StatusAccepted {
		t.Fatalf("rerun of %s %v: %d %v", id, body, code, m)
	}
	return m
}

// attemptsOf counts the task attempts (task.attempt.started) and loop
// iterations (loop.iteration.started) of step in an execution's events.
func attemptsOf(evs []map[string]any, step string) int {
	return Count(evs, "task.attempt.started", step) + Count(evs, "loop.iteration.started", step)
}

// reusedSteps lists the steps whose step.done carries reused_from naming
// source.
func reusedSteps(t *testing.T, evs []map[string]any, source string) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		p, _ := e["payload"].(map[string]any)
		rf, ok := p["reused_from"].(map[string]any)
		if e["event_type"] != "step.done" || !ok {
			continue
		}
		if rf["execution_id"] != source {
			t.Errorf("step.done of %v reused from %v, want %s", e["step"], rf, source)
		}
		out = append(out, fmt.Sprint(e["step"]))
	}
	slices.Sort(out)
	return out
}

// TestRerunConsoleShotsFailure: the failing execution scripts/console-shots
// makes (emulators/cmd/console-shots/failure.yaml: a parallel loop with
// failing items, then a check that fails because 2 items failed and
// max_failed is 0) is rerun from the failed step with a fixed workload
// ({"max_failed": 2}). The rerun completes without running start and
// crunch again — no task attempt, no iteration of theirs in its events,
// their step.done marked reused_from the source — and links to its
// source in its status and the list.
func TestRerunConsoleShotsFailure(t *testing.T) {
	RequireStack(t)
	src, err := os.ReadFile(filepath.Join(RepoRoot(), "emulators", "cmd", "console-shots", "failure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	source := startInline(t, string(src), nil)
	st := waitStatus(t, source, 3*time.Minute)
	if st["status"] != "failed" {
		t.Fatalf("the console-shots failing playbook ended %v, want failed", st["status"])
	}
	sourceEvs := Events(t, source)
	if attemptsOf(sourceEvs, "crunch") == 0 || attemptsOf(sourceEvs, "start") == 0 {
		t.Fatalf("the source ran no attempts of start or crunch")
	}
	got := rerunOf(t, source, map[string]any{"from": "failed", "workload": map[string]any{"max_failed": 2}})
	id, _ := got["execution_id"].(string)
	if got["rerun_of"] != source || got["step"] != "check" || fmt.Sprint(got["reused"]) != "[crunch#1 start#1]" {
		t.Fatalf("rerun answer %v", got)
	}
	st = waitStatus(t, id, 3*time.Minute)
	if st["status"] != "ok" {
		t.Fatalf("the rerun ended %v: %v", st["status"], st["failures"])
	}
	evs := Events(t, id)
	for _, step := range []string{"start", "crunch"} {
		if n := attemptsOf(evs, step); n != 0 {
			t.Errorf("the rerun ran %d attempts or iterations of %s, want none (reused)", n, step)
		}
	}
	if n := Count(evs, "task.attempt.started", "check"); n == 0 {
		t.Error("the rerun did not run check")
	}
	if r := reusedSteps(t, evs, source); strings.Join(r, ",") != "crunch,start" {
		t.Errorf("reused step.done events of %v, want crunch and start", r)
	}
	if st["rerun_of"] != source || st["rerun_from"] != "failed" {
		t.Errorf("status rerun_of %v rerun_from %v", st["rerun_of"], st["rerun_from"])
	}
	steps, _ := st["steps"].(map[string]any)
	for name, want := range map[string]any{"start": source, "crunch": source, "check": nil} {
		s, _ := steps[name].(map[string]any)
		if s["reused_from"] != want {
			t.Errorf("step %s reused_from %v, want %v", name, s["reused_from"], want)
		}
	}
	if res, _ := st["results"].(map[string]any); fmt.Sprint(res["check"]) != "map[failed_items:2 ok:true]" {
		t.Errorf("check's result %v", res["check"])
	}
	// The reused loop's result is the source's, with its 12 items.
	if res, _ := st["results"].(map[string]any); !strings.Contains(MustJSON(res["crunch"]), `"square":121`) {
		t.Errorf("crunch's reused result %s", MustJSON(res["crunch"]))
	}
	_, list := apiDo(t, http.MethodGet, "/executions?playbook=tests/console_shots_failure&limit=5", nil)
	found := false
	for _, e := range list["executions"].([]any) {
		if m := e.(map[string]any); m["execution_id"] == id && m["rerun_of"] == source {
			found = true
		}
	}
	if !found {
		t.Errorf("the list does not show %s as a rerun of %s", id, source)
	}
	// Refused with a reason: a step that never ran, a running execution.
	if code, m := apiDo(t, http.MethodPost, "/executions/"+source+"/rerun", map[string]any{"from": "never"}); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m["error"]), "step never never ran") {
		t.Errorf("rerun from a step that never ran: %d %v", code, m)
	}
}

// TestRerunSideEffectBarrier: how a rerun meets steps that wrote through
// the side-effect barrier (postgres writes; docs "Rerun"). record writes
// a row and ends; pay writes a row, then its second task fails (the write
// committed: the barrier recorded it for the source's attempt). A rerun
// from the failed step reuses record — its write is not repeated, the
// rerun has no attempt of it — and runs pay again: a step the rerun runs
// runs under the rerun's own barrier keys (execution, unit, task,
// attempt), so pay's write happens again. A rerun from record writes
// record's row again too.
func TestRerunSideEffectBarrier(t *testing.T) {
	RequireStack(t)
	pg := pgConn(t)
	table := "rerun_marks_" + randSuffix()
	if _, err := pg.Exec(context.Background(), "CREATE TABLE "+table+" (step text)"); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun_barrier, path: tests/rerun_barrier}
workload: {fixed: false}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: record}]}
  - step: record
    tool: {kind: postgres, command: "INSERT INTO %[1]s (step) VALUES ('record')"}
    next: {arcs: [{step: pay}]}
  - step: pay
    tool:
      - write: {kind: postgres, command: "INSERT INTO %[1]s (step) VALUES ('pay')"}
      - confirm:
          kind: python
          args: {fixed: "{{ workload.fixed }}"}
          code: |
            if not fixed:
                raise RuntimeError("the payment was not confirmed")
            result = {"confirmed": True}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: postgres, command: "INSERT INTO %[1]s (step) VALUES ('after')"}
`, table)
	rows := func() string {
		t.Helper()
		var out []string
		for _, s := range []string{"record", "pay", "after"} {
			out = append(out, fmt.Sprintf("%s=%d", s, pgCount(t, pg, "SELECT count(*) FROM "+table+" WHERE step = $1", s)))
		}
		return strings.Join(out, " ")
	}
	source := startInline(t, src, map[string]any{"pg_dsn": os.Getenv("NOETL_PG_DSN")})
	if st := waitStatus(t, source, 2*time.Minute); st["status"] != "failed" {
		t.Fatalf("source ended %v", st["status"])
	}
	if got := rows(); got != "record=1 pay=1 after=0" {
		t.Fatalf("after the source: %s", got)
	}
	Events(t, source) // its log complete (a rerun plans from it)
	id := rerunOf(t, source, map[string]any{"from": "failed", "workload": map[string]any{"fixed": true}})["execution_id"].(string)
	if st := waitStatus(t, id, 2*time.Minute); st["status"] != "ok" {
		t.Fatalf("rerun from failed ended %v: %v", st["status"], st["failures"])
	}
	if got := rows(); got != "record=1 pay=2 after=1" {
		t.Errorf("after the rerun from failed: %s, want record's write not repeated (1), pay's again (2), after once", got)
	}
	evs := Events(t, id)
	if n := attemptsOf(evs, "record"); n != 0 {
		t.Errorf("the rerun ran %d attempts of record", n)
	}
	if r := reusedSteps(t, evs, source); strings.Join(r, ",") != "record,start" {
		t.Errorf("reused %v", r)
	}
	id2 := rerunOf(t, source, map[string]any{"from": "record", "workload": map[string]any{"fixed": true}})["execution_id"].(string)
	if st := waitStatus(t, id2, 2*time.Minute); st["status"] != "ok" {
		t.Fatalf("rerun from record ended %v: %v", st["status"], st["failures"])
	}
	if got := rows(); got != "record=2 pay=3 after=2" {
		t.Errorf("after the rerun from record: %s, want every step from record written again", got)
	}
}
