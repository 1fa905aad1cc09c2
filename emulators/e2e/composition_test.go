package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A `kind: playbook` task runs a child execution with its parent recorded
// and returns the child's result; a `kind: workbook` task runs a template.
func TestChildPlaybookAndWorkbook(t *testing.T) {
	RequireStack(t)
	r := Run(t, filepath.Join(RepoRoot(), "examples", "composition.yaml"), "")
	ok(t, r)
	end := step(t, r, "end")
	if asInt(end["sum"]) != 10 || asInt(end["doubled"]) != 20 {
		t.Fatalf("end = %v", end)
	}
	evs := Events(t, r.ExecutionID)
	var child string
	for _, e := range evs {
		if p, _ := e["payload"].(map[string]any); e["event_type"] == "task.started" && p["child_execution_id"] != nil {
			child, _ = p["child_execution_id"].(string)
		}
	}
	if child == "" {
		t.Fatal("no task.started event names the child execution")
	}
	st := getJSON(t, os.Getenv("NOETL_FUNCTIONS_URL")+"/api/executions/"+child)
	if st["parent_id"] != r.ExecutionID || st["status"] != "ok" {
		t.Fatalf("child %s: parent_id %v status %v", child, st["parent_id"], st["status"])
	}
	for _, e := range Events(t, child) {
		if e["parent_id"] != r.ExecutionID {
			t.Fatalf("child event %v lacks parent_id", e["event_type"])
		}
	}
}

// A failing child makes the parent's task fail with kind "playbook".
func TestChildPlaybookFailure(t *testing.T) {
	RequireStack(t)
	pb := t.TempDir() + "/parent.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: failing_parent}
workflow:
  - step: start
    tool:
      kind: playbook
      path: examples/child_sum.yaml
      workload: {numbers: [1], fail: true}
    next:
      arcs:
        - {step: recovered, on: step.failed, args: {error: "{{ event.error.message }}"}}
  - step: recovered
    tool: {kind: noop, result: {error: "{{ args.error }}"}}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	evs := Events(t, r.ExecutionID)
	var failed map[string]any
	for _, e := range evs {
		if e["event_type"] == "task.failed" && e["step"] == "start" {
			failed, _ = e["payload"].(map[string]any)
		}
	}
	errm, _ := failed["error"].(map[string]any)
	if errm == nil || errm["kind"] != "playbook" || !strings.Contains(errm["message"].(string), "ValueError") {
		t.Fatalf("task.failed payload = %v", failed)
	}
	ok(t, r)
	rec, _ := r.Steps["recovered"].(map[string]any)
	if msg, _ := rec["error"].(string); !strings.Contains(msg, "ValueError") {
		t.Fatalf("the step.failed arc did not pass the error on: %v", r.Steps)
	}
}

// The catalog stores versions; an execution starts by path and version.
func TestCatalogVersions(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL") + "/api"
	path := "tests/catalog/" + strings.ReplaceAll(t.Name(), "/", "_") + "_" + randSuffix()
	mk := func(msg string) []byte {
		return []byte(MustJSON(map[string]any{"path": path, "playbook": `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: versioned}
workflow:
  - step: start
    tool: {kind: noop, result: {msg: "` + msg + `"}}
`}))
	}
	var versions []int64
	for _, m := range []string{"one", "two", "two"} {
		code, body := post(t, base+"/playbooks", mk(m))
		if code != http.StatusCreated {
			t.Fatalf("POST /playbooks: %d %s", code, body)
		}
		var resp map[string]any
		if err := jsonUnmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, asInt(resp["version"]))
	}
	if versions[0] != 1 || versions[1] != 2 || versions[2] != 2 {
		t.Fatalf("versions %v, want [1 2 2] (same source → same version)", versions)
	}
	for v, want := range map[int]string{1: "one", 2: "two", 0: "two"} {
		req := map[string]any{"path": path}
		if v != 0 {
			req["version"] = v
		}
		code, body := post(t, base+"/executions", []byte(MustJSON(req)))
		if code != http.StatusAccepted {
			t.Fatalf("start v%d: %d %s", v, code, body)
		}
		var resp map[string]any
		_ = jsonUnmarshal(body, &resp)
		id := resp["execution_id"].(string)
		st := waitDone(t, id)
		res := st["results"].(map[string]any)["start"].(map[string]any)
		if st["status"] != "ok" || res["msg"] != want {
			t.Fatalf("v%d ran %v (%v), want %s", v, res, st["status"], want)
		}
	}
	code, _ := post(t, base+"/executions", []byte(MustJSON(map[string]any{"path": path, "version": 9})))
	if code != http.StatusBadRequest {
		t.Fatalf("unknown version: %d, want 400", code)
	}
	list := getJSON(t, base+"/playbooks")
	found := false
	for _, p := range list["playbooks"].([]any) {
		if m := p.(map[string]any); m["path"] == path && asInt(m["latest"]) == 2 {
			found = true
		}
	}
	if !found {
		t.Fatalf("%s not listed with latest 2", path)
	}
}

// Nested loops: an inner loop (in a child playbook run by each outer
// iteration) sees the outer iteration as iter.parent.
func TestNestedLoopsIterParent(t *testing.T) {
	RequireStack(t)
	r := Run(t, filepath.Join(RepoRoot(), "examples", "nested_loops.yaml"), "")
	ok(t, r)
	outer := step(t, r, "start")["results"].([]any)
	want := [][]string{{"oslo", "bergen"}, {"rome", "naples", "bari"}}
	regions := []string{"north", "south"}
	if len(outer) != 2 {
		t.Fatalf("outer results %v", outer)
	}
	for i, o := range outer {
		inner := o.(map[string]any)["results"].([]any)
		if len(inner) != len(want[i]) {
			t.Fatalf("outer %d: inner results %v", i, inner)
		}
		for j, x := range inner {
			m := x.(map[string]any)
			if m["city"] != want[i][j] || m["region"] != regions[i] || asInt(m["outer_index"]) != int64(i) || asInt(m["inner_index"]) != int64(j) {
				t.Fatalf("outer %d inner %d = %v", i, j, m)
			}
		}
	}
}
