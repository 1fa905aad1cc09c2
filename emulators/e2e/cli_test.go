package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cliResult is one scripts/noetl invocation.
type cliResult struct {
	code           int
	stdout, stderr string
}

// noetlCLI runs scripts/noetl with args (the stack's environment comes
// from .stack/env, which scripts/noetl loads).
func noetlCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(RepoRoot(), "scripts", "noetl")}, args...)...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := cliResult{stdout: so.String(), stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("scripts/noetl %v: %v", args, err)
	}
	return r
}

// The operator CLI against the stack's api: run a playbook, find it with
// list, describe it (steps, attempts, loop), read its events (also with
// --follow on a running execution) and its cost; unknown ids exit 3.
func TestOperatorCLI(t *testing.T) {
	RequireStack(t)
	name := "cli_e2e_" + randSuffix()
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: ` + name + `}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs: [{step: fan}]
  - step: fan
    loop: {in: [1, 2, 3], iterator: n}
    tool: {kind: noop}
    next:
      arcs: [{step: end}]
  - step: end
    tool: {kind: noop}
`
	pb := filepath.Join(t.TempDir(), "cli.yaml")
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := noetlCLI(t, "run", pb, "--timeout", "5m")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &out); err != nil || out["status"] != "ok" {
		t.Fatalf("run stdout is not the final JSON line: %q (%v)", r.stdout, err)
	}
	id, _ := out["execution_id"].(string)
	if !strings.Contains(r.stderr, "execution "+id+" started") || !strings.Contains(r.stderr, "fan") {
		t.Errorf("run progress on stderr: %q", r.stderr)
	}
	evs := Events(t, id) // wait until the projection has settled

	// list finds it by playbook and by status, in both formats.
	r = noetlCLI(t, "list", "--playbook", name, "-o", "json")
	var list struct {
		Executions []map[string]any `json:"executions"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Executions) != 1 ||
		list.Executions[0]["execution_id"] != id || list.Executions[0]["status"] != "ok" || list.Executions[0]["playbook"] != name {
		t.Errorf("list --playbook: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = noetlCLI(t, "list", "--status", "ok", "--limit", "1000", "-o", "table")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "EXECUTION") || !strings.Contains(r.stdout, id) {
		t.Errorf("list --status ok lacks %s: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	r = noetlCLI(t, "list", "--status", "failed", "--playbook", name, "-o", "json")
	if r.code != 0 || strings.Contains(r.stdout, id) {
		t.Errorf("list --status failed shows an ok execution: %s", r.stdout)
	}

	// describe: every step ok with its attempts; the loop's progress.
	r = noetlCLI(t, "describe", id, "-o", "json")
	var desc struct {
		Status string                    `json:"status"`
		Steps  map[string]map[string]any `json:"steps"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &desc) != nil || desc.Status != "ok" {
		t.Fatalf("describe json: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	wantAttempts := map[string]float64{"start": 1, "fan": 3, "end": 1}
	for step, n := range wantAttempts {
		s := desc.Steps[step]
		if s == nil || s["status"] != "ok" || s["attempts"] != n || s["failed_attempts"] != float64(0) {
			t.Errorf("describe step %s = %v, want ok with %v attempts", step, s, n)
		}
	}
	if Count(evs, "task.attempt.started", "fan") != 3 {
		t.Errorf("the events hold %d attempts of fan, want 3", Count(evs, "task.attempt.started", "fan"))
	}
	r = noetlCLI(t, "describe", id, "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "status     ok") || !strings.Contains(r.stdout, "3/3") || !strings.Contains(r.stdout, "ATTEMPTS") {
		t.Errorf("describe table:\n%s%s", r.stdout, r.stderr)
	}
	if r2 := noetlCLI(t, "status", id, "-o", "json"); r2.code != 0 || !strings.Contains(r2.stdout, `"attempts"`) {
		t.Errorf("status alias: exit %d", r2.code)
	}

	// events: the api's object (scripts read "count" and "events").
	r = noetlCLI(t, "events", id)
	var el struct {
		Count  int              `json:"count"`
		Events []map[string]any `json:"events"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &el) != nil || el.Count != len(evs) || len(el.Events) != len(evs) {
		t.Errorf("events: exit %d, %d events, want %d", r.code, el.Count, len(evs))
	}
	r = noetlCLI(t, "events", id, "-o", "table")
	if r.code != 0 || strings.Count(r.stdout, "\n") != len(evs) || !strings.Contains(r.stdout, "playbook.finished") {
		t.Errorf("events table: %d lines, want %d\n%s", strings.Count(r.stdout, "\n"), len(evs), r.stdout)
	}

	// cost: steps = 2 step runs + 3 iterations, operations priced.
	r = noetlCLI(t, "cost", id, "--json")
	var cost struct {
		Steps      int                           `json:"steps"`
		Operations map[string]map[string]float64 `json:"operations"`
		USDTotal   float64                       `json:"usd_total"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &cost) != nil || cost.Steps != 5 || len(cost.Operations["firestore"]) == 0 || cost.USDTotal <= 0 {
		t.Errorf("cost --json: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = noetlCLI(t, "cost", id, "-o", "table")
	if r.code != 0 || !strings.Contains(r.stdout, "firestore") || !strings.Contains(r.stdout, "total") {
		t.Errorf("cost table:\n%s%s", r.stdout, r.stderr)
	}

	// Unknown ids exit 3 with a message, at once.
	for _, args := range [][]string{{"describe", "no-such-execution"}, {"events", "no-such-execution"}, {"events", "no-such-execution", "--follow"}, {"cost", "no-such-execution"}} {
		r := noetlCLI(t, args...)
		if r.code != 3 || !strings.Contains(r.stderr, "no-such-execution not found") {
			t.Errorf("%v: exit %d %q, want 3", args, r.code, r.stderr)
		}
	}
	// An api that is not there exits 4.
	if r := noetlCLI(t, "list", "--api-url", "http://127.0.0.1:1/api"); r.code != 4 || !strings.Contains(r.stderr, "api unreachable") {
		t.Errorf("unreachable api: exit %d %q", r.code, r.stderr)
	}

	// events --follow on a running execution prints each event once and
	// ends after the execution.
	body, _ := json.Marshal(map[string]any{"playbook": src})
	resp, err := http.Post(os.Getenv("NOETL_FUNCTIONS_URL")+"/api/executions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var started struct {
		ExecutionID string `json:"execution_id"`
	}
	if err := json.Unmarshal(b, &started); err != nil || started.ExecutionID == "" {
		t.Fatalf("start: %d %s", resp.StatusCode, b)
	}
	r = noetlCLI(t, "events", started.ExecutionID, "--follow", "-o", "json")
	if r.code != 0 {
		t.Fatalf("events --follow: exit %d %s", r.code, r.stderr)
	}
	seen := map[string]bool{}
	finished := false
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("follow line %q: %v", line, err)
		}
		eid, _ := e["event_id"].(string)
		if seen[eid] {
			t.Errorf("event %s printed twice", eid)
		}
		seen[eid] = true
		finished = finished || e["event_type"] == "playbook.finished"
	}
	final := Events(t, started.ExecutionID)
	if !finished || len(seen) != len(final) {
		t.Errorf("follow printed %d events (playbook.finished: %v), the execution has %d", len(seen), finished, len(final))
	}
	for _, e := range final {
		if !seen[e["event_id"].(string)] {
			t.Errorf("follow missed %s %v", e["event_type"], e["event_id"])
		}
	}
}
