package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// num reads a JSON number however it was decoded (-1 when it is none).
func num(v any) int64 {
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil {
		return -1
	}
	return int64(f)
}

// TestBatchedLoop: a 600-item noop loop on 3 lanes in batches of 50
// (loop.spec.chunk_size) runs its items inline in one Cloud Task per batch:
// the execution's Cloud Tasks operations are about 2 per batch, not 2 per
// item, and each item still has its own events, once, and its result, in
// order.
func TestBatchedLoop(t *testing.T) {
	RequireStack(t)
	const n, batches = 600, 3 * 4 // 3 lanes of 200 items, 4 batches of 50 each
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: batched_loop, path: tests/batched_loop}
workflow:
  - step: start
    loop:
      in: "{{ range(600) | list }}"
      iterator: i
      spec: {mode: parallel, max_in_flight: 3, chunk_size: 50}
    tool: {kind: noop, result: {i: "{{ i }}"}}
`
	id := startInline(t, src, nil)
	if st := waitStatus(t, id, 5*time.Minute); st["status"] != "ok" {
		t.Fatalf("execution %s: %s", st["status"], MustJSON(st))
	}
	evs := Events(t, id)
	for _, typ := range []string{"loop.iteration.started", "loop.iteration.done"} {
		seen := map[int64]int{}
		for _, e := range evs {
			if e["event_type"] == typ {
				seen[num(e["iteration"])]++
			}
		}
		for i := range int64(n) {
			if seen[i] != 1 {
				t.Fatalf("iteration %d: %d %s events, want 1", i, seen[i], typ)
			}
		}
	}
	if c := Count(evs, "loop.done", "start"); c != 1 {
		t.Fatalf("%d loop.done events, want 1", c)
	}
	// The functions flush their operation counts within about a second
	// of going idle.
	var ops float64
	for range 20 {
		code, m := apiDo(t, http.MethodGet, "/executions/"+id+"/cost", nil)
		if code != http.StatusOK {
			t.Fatalf("cost: %d %v", code, m)
		}
		ops = 0
		if o, ok := m["operations"].(map[string]any); ok {
			if ct, ok := o["cloudtasks"].(map[string]any); ok {
				for _, v := range ct {
					ops += float64(num(v))
				}
			}
		}
		if ops > 0 {
			break
		}
		time.Sleep(time.Second)
	}
	if ops == 0 || ops > 4*batches+10 {
		t.Fatalf("%v Cloud Tasks operations for %d items in %d batches, want about 2 per batch (one per item would be %d)", ops, n, batches, 2*n)
	}
	t.Logf("%v Cloud Tasks operations for %d items in %d batches", ops, n, batches)
}
