package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What a person sees at the end of `noetl run` on a terminal, from a real
// execution on the stack, started by its catalog path: the headline, one
// row per step with runs, attempts and duration, the last step's result
// and the console's URL. --detach returns the id at once, and wait prints
// the JSON line scripts read.
func TestRunSummaryAndCatalogPath(t *testing.T) {
	RequireStack(t)
	path := "tests/summary_" + randSuffix()
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: summary_e2e, path: ` + path + `}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs: [{step: fan}]
  - step: fan
    loop: {in: [1, 2, 3], iterator: n}
    tool: {kind: noop, result: {n: "{{ n }}"}}
    next:
      arcs: [{step: end}]
  - step: end
    tool: {kind: noop, result: {total: 6, note: done}}
`
	pb := filepath.Join(t.TempDir(), "summary.yaml")
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := noetlCLI(t, "catalog", "register", pb); r.code != 0 {
		t.Fatalf("catalog register: exit %d %s", r.code, r.stderr)
	}
	r := noetlCLI(t, "run", "--path", path, "-o", "table", "--timeout", "5m")
	if r.code != 0 {
		t.Fatalf("run --path: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	head := regexp.MustCompile(`^execution (\d+): ok in \S+ \(` + regexp.QuoteMeta(path) + `\)$`).FindStringSubmatch(lines[0])
	if head == nil {
		t.Fatalf("headline %q\n%s", lines[0], r.stdout)
	}
	id := head[1]
	want := []*regexp.Regexp{
		regexp.MustCompile(`^STEP\s+STATUS\s+RUNS\s+ATTEMPTS\s+DURATION\s+LOOP$`),
		regexp.MustCompile(`^start\s+ok\s+1\s+1\s+\d+ms\s+-$`),
		regexp.MustCompile(`^fan\s+ok\s+1\s+3\s+\S+\s+3/3$`),
		regexp.MustCompile(`^end\s+ok\s+1\s+1\s+\d+ms\s+-$`),
		regexp.MustCompile(`^result of end \(the step that finished last\):$`),
		regexp.MustCompile(`^  note: done$`),
		regexp.MustCompile(`^  total: 6$`),
		regexp.MustCompile(`^console: ` + regexp.QuoteMeta(os.Getenv("NOETL_FUNCTIONS_URL")) + `/api/console/executions/` + id + `$`),
	}
	i := 0
	for _, l := range lines {
		if i < len(want) && want[i].MatchString(l) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("the summary lacks a line matching %s (in order):\n%s", want[i], r.stdout)
	}
	if !strings.Contains(r.stderr, "execution "+id+" started ("+path+")") {
		t.Errorf("run --path progress: %q", r.stderr)
	}

	// --detach: the id, at once; wait: the JSON line of the same run.
	r = noetlCLI(t, "run", "--path", path, "--detach", "-o", "json", "--quiet")
	var started struct {
		ExecutionID string `json:"execution_id"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &started) != nil || started.ExecutionID == "" || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("run --detach: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = noetlCLI(t, "wait", started.ExecutionID, "--quiet", "-o", "json", "--timeout", "5m")
	var out map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out["status"] != "ok" || out["execution_id"] != started.ExecutionID {
		t.Errorf("wait: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if steps, _ := out["steps"].(map[string]any); steps["end"] == nil {
		t.Errorf("wait's JSON line has no result of end: %v", out)
	}
}

// cancel --reason is recorded in the cancellation event, which events
// --type finds.
func TestCancelReasonRecorded(t *testing.T) {
	RequireStack(t)
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: cancel_reason_e2e}
workflow:
  - step: start
    tool:
      kind: python
      code: |
        import time
        time.sleep(60)
        result = {"slept": True}
`
	pb := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := noetlCLI(t, "run", pb, "--detach", "-o", "table", "--quiet")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("run --detach: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	reason := "wrong input file " + randSuffix()
	if r := noetlCLI(t, "cancel", id, "--reason", reason, "-o", "table"); r.code != 0 {
		t.Fatalf("cancel --reason: exit %d %q", r.code, r.stderr)
	}
	Events(t, id) // wait until the log is projected
	r = noetlCLI(t, "events", id, "--type", "playbook.cancel", "-o", "json")
	var got struct {
		Count  int              `json:"count"`
		Events []map[string]any `json:"events"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.Count != 1 {
		t.Fatalf("events --type playbook.cancel: exit %d %s", r.code, r.stdout)
	}
	if p, _ := got.Events[0]["payload"].(map[string]any); got.Events[0]["event_type"] != "playbook.cancel.requested" || p["reason"] != reason {
		t.Errorf("the cancellation event %v does not carry the reason %q", got.Events[0], reason)
	}
}
