package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// noetl rerun ID --from STEP --workload JSON|@file posts the request,
// prints the new execution, where it starts and what it reuses; --wait
// follows it to its end; a refusal exits 2 with the api's reason.
func TestRerun(t *testing.T) {
	f := newFake(t)
	f.reply("POST /executions/e1/rerun", 202, map[string]any{"execution_id": "e2", "status": "requested", "rerun_of": "e1", "from": "failed",
		"step": "check", "run": 1, "reused": []any{"crunch#1", "start#1"}, "copied_objects": 2, "copied_bytes": 300})
	f.reply("GET /executions/e2", 200, map[string]any{"execution_id": "e2", "status": "ok", "duration_ms": 1200})
	f.reply("POST /executions/busy/rerun", 409, map[string]any{"error": "rerun: execution busy is running: only an ended execution is rerun"})
	fix := filepath.Join(t.TempDir(), "fix.json")
	if err := os.WriteFile(fix, []byte(`{"max_failed": 2, "nested": {"a": 1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.cli("rerun", "e1", "--from", "failed", "--workload", "@"+fix, "--wait", "-o", "table")
	if r.code != 0 {
		t.Fatalf("rerun: %+v", r)
	}
	for _, want := range []string{"rerun           e2", "rerun of        e1", "starts from     check (run 1)", "reused          crunch#1, start#1", "copied results  2 objects, 300 bytes"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "execution e2 ended ok") {
		t.Errorf("--wait: %q", r.stderr)
	}
	req := f.requests()[0]
	if req.Method != "POST" || req.Path != "/executions/e1/rerun" || req.Body["from"] != "failed" ||
		!reflect.DeepEqual(req.Body["workload"], map[string]any{"max_failed": float64(2), "nested": map[string]any{"a": float64(1)}}) {
		t.Errorf("request %+v", req)
	}
	// No --from: the body asks for the start (no "from").
	r = f.cli("rerun", "e1", "--workload", `{"x": 1}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"execution_id": "e2"`) {
		t.Errorf("json: %+v", r)
	}
	if last := f.requests()[len(f.requests())-1]; last.Body["from"] != nil {
		t.Errorf("no --from sent from %v", last.Body["from"])
	}
	if r := f.cli("rerun", "busy", "--from", "failed"); r.code != ExitInvalid || !strings.Contains(r.stderr, "only an ended execution is rerun") {
		t.Errorf("409: %+v", r)
	}
	if r := f.cli("rerun", "e1", "--workload", "[1]"); r.code != ExitInvalid || !strings.Contains(r.stderr, "--workload is not a JSON object") {
		t.Errorf("bad workload: %+v", r)
	}
	if r := f.cli("rerun", "e1", "--workload", "@/nonexistent/fix.json"); r.code != ExitInvalid || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing @file: %+v", r)
	}
}
