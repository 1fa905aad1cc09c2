package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := jsonx.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v: %s", url, err, b)
	}
	return m
}

func post(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Duplicate and out-of-order deliveries change nothing: every event of a
// finished execution is delivered again, in reverse order and signed as
// the engine signs (a redelivery), to route and materialize, and a
// finished unit of work is delivered to execute again.
func TestDuplicateDeliveriesChangeNothing(t *testing.T) {
	RequireStack(t)
	base := os.Getenv("NOETL_FUNCTIONS_URL")
	r := Run(t, conf("v2_loop_test.yaml"), "")
	ok(t, r)
	evs := Events(t, r.ExecutionID)
	before := getJSON(t, base+"/api/executions/"+r.ExecutionID)

	var rev []types.Event
	for i := len(evs) - 1; i >= 0; i-- {
		var ev types.Event
		if err := jsonUnmarshal(MustJSON(evs[i]), &ev); err != nil {
			t.Fatal(err)
		}
		rev = append(rev, ev)
	}
	s := Signer(t)
	PublishBatch(t, s, types.Batch{ID: "dup-" + r.ExecutionID, ExecutionID: r.ExecutionID, Source: "execute", Route: true, Events: rev})
	cmd := []byte(MustJSON(map[string]any{"id": "dup", "kind": "run_step", "execution_id": r.ExecutionID, "step": "start", "step_run": 1,
		"iteration": 0, "loop_total": 5, "item": 1, "task_index": 0, "attempt": 1, "state_version": 1}))
	if code, body := PostUnit(t, cmd, s.Sign(sign.Command, cmd)); code != http.StatusOK {
		t.Fatalf("execute duplicate: %d %s", code, body)
	}
	// Give route and materialize time to see the duplicates.
	time.Sleep(4 * time.Second)
	after := getJSON(t, base+"/api/executions/"+r.ExecutionID)
	if after["version"] != before["version"] || after["status"] != "ok" {
		t.Fatalf("state changed: version %v → %v, status %v", before["version"], after["version"], after["status"])
	}
	if MustJSON(after["results"]) != MustJSON(before["results"]) || MustJSON(after["ctx"]) != MustJSON(before["ctx"]) {
		t.Fatal("results or ctx changed by duplicates")
	}
	evs2 := Events(t, r.ExecutionID)
	if len(evs2) != len(evs) {
		t.Fatalf("events %d → %d after duplicate deliveries", len(evs), len(evs2))
	}
	// A re-run unit would re-emit its events with the same ids but new
	// timestamps: every projected event must be the original.
	orig := map[any]any{}
	for _, e := range evs {
		orig[e["event_id"]] = e["timestamp"]
	}
	for _, e := range evs2 {
		if orig[e["event_id"]] != e["timestamp"] {
			t.Fatalf("event %v (%v %v) was emitted again", e["event_id"], e["event_type"], e["step"])
		}
	}
}

// A result over the inline budget (NOETL_RESULT_INLINE_MAX, 64 KiB) is
// written to GCS as a Feather table, the state keeps a reference, and the
// next step reads the whole table back through the reference.
func TestLargeResultGoesToResultsTier(t *testing.T) {
	RequireStack(t)
	dir := t.TempDir()
	pb := dir + "/large.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: large_result}
workflow:
  - step: start
    tool:
      kind: python
      code: |
        result = [{"id": i, "name": "row %d" % i, "score": i * 0.5, "even": i % 2 == 0} for i in range(5000)]
    next:
      arcs: [{step: check}]
  - step: check
    tool:
      kind: python
      args: {rows: "{{ start }}"}
      code: |
        result = {"n": len(rows), "last_id": rows[-1]["id"], "sum": sum(r["id"] for r in rows), "even": rows[10]["even"]}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, "")
	ok(t, r)
	check := step(t, r, "check")
	if asInt(check["n"]) != 5000 || asInt(check["last_id"]) != 4999 || asInt(check["sum"]) != 4999*5000/2 || check["even"] != true {
		t.Fatalf("check = %v", check)
	}
	ref, _ := r.Steps["start"].(map[string]any)
	meta, _ := ref["$ref"].(map[string]any)
	if meta == nil || meta["format"] != "feather" || asInt(meta["rows"]) != 5000 {
		t.Fatalf("start result is not a Feather reference: %v", MustJSON(ref)[:200])
	}
}
