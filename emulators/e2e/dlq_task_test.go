package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestExhaustedTaskReplayedWithPatchedURL (NoETL observability spec §8.6,
// infra/runbooks/dlq-spike.md step 4) on the stack: an http task without a
// policy whose URL answers 503 is retried by the default policy
// (NOETL_RETRIES_PLUGIN_*), then filed in the DLQ; held there
// (executor.spec.dlq_hold), its execution waits; `noetl dlq list
// --execution --kind http` finds the entry with the seed's fields, and
// `noetl dlq replay ID --patch spec.url=…` runs the task again against the
// corrected URL and the execution ends ok.
func TestExhaustedTaskReplayedWithPatchedURL(t *testing.T) {
	RequireStack(t)
	fx := os.Getenv("NOETL_FIXTURES_URL")
	key := "dlq-task-" + randSuffix()
	bad := fx + "/flaky/" + key + "?fail=1000&status=503"
	good := fx + "/flaky/" + key + "-ok?fail=0"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: dlq_task, path: tests/e2e/dlq_task}
executor: {spec: {dlq_hold: true}}
workflow:
  - step: start
    tool:
      - fetch: {kind: http, method: GET, url: "` + bad + `"}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: noop}
`
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
	id := started.ExecutionID

	var entry map[string]any
	deadline := time.Now().Add(90 * time.Second)
	for entry == nil && time.Now().Before(deadline) {
		r := noetlCLI(t, "dlq", "list", "--execution", id, "--kind", "http", "-o", "json")
		var out struct {
			Entries []map[string]any `json:"entries"`
		}
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &out) == nil && len(out.Entries) > 0 {
			entry = out.Entries[0]
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if entry == nil {
		t.Fatalf("execution %s: no DLQ entry of kind http appeared", id)
	}
	if entry["status"] != "pending" || entry["tool_kind"] != "http" || entry["step_id"] != "start" ||
		!strings.Contains(str(entry["last_error"]), "503") || !strings.Contains(str(entry["last_stack"]), "task fetch (kind http") ||
		!strings.Contains(str(entry["spec"]), key) {
		t.Fatalf("entry %v", entry)
	}
	if a, _ := entry["attempts"].(float64); a != 6 {
		t.Errorf("attempts %v, want NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS (6)", entry["attempts"])
	}
	st := getJSON(t, os.Getenv("NOETL_FUNCTIONS_URL")+"/api/executions/"+id)
	if st["status"] != "running" {
		t.Fatalf("held execution is %v, want running", st["status"])
	}
	eid := str(entry["message_id"])
	if r := noetlCLI(t, "dlq", "replay", eid, "--patch", "spec.nope=1"); r.code == 0 {
		t.Fatalf("a patch of a key http does not read was accepted: %s", r.stdout)
	}
	if r := noetlCLI(t, "dlq", "replay", eid, "--patch", "spec.url="+good); r.code != 0 {
		t.Fatalf("replay: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	done := waitDone(t, id)
	if done["status"] != "ok" {
		t.Fatalf("execution %s after the replay: %v", id, done["status"])
	}
	if c := getJSON(t, fx+"/flaky/"+key+"-ok/count"); fmt.Sprint(c["count"]) != "1" {
		t.Errorf("the corrected URL was called %v times, want 1", c["count"])
	}
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
