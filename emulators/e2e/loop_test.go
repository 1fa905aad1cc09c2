package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// A parallel loop runs at most max_in_flight iterations at once (each
// iteration is its own Cloud Task), and really runs them in parallel.
func TestParallelLoopHonoursMaxInFlight(t *testing.T) {
	RequireStack(t)
	var mu sync.Mutex
	inFlight, peak, total := 0, 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		total++
		if inFlight > peak {
			peak = inFlight
		}
		mu.Unlock()
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	defer srv.Close()
	pb := t.TempDir() + "/mif.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: max_in_flight}
workload: {url: "http://unset", items: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}
workflow:
  - step: start
    loop:
      in: "{{ items }}"
      iterator: i
      spec: {mode: parallel, max_in_flight: 3}
    tool:
      - call: {kind: http, url: "{{ url }}/{{ i }}"}
      - shape: {kind: noop, result: {i: "{{ i }}", index: "{{ loop_index }}"}}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, MustJSON(map[string]any{"url": srv.URL}))
	ok(t, r)
	mu.Lock()
	defer mu.Unlock()
	if total != 12 {
		t.Fatalf("%d calls, want 12", total)
	}
	if peak > 3 || peak < 2 {
		t.Fatalf("peak concurrency %d, want ≤ 3 (and > 1: the loop is parallel)", peak)
	}
	res := step(t, r, "start")["results"].([]any)
	for i, x := range res {
		m := x.(map[string]any)
		if asInt(m["i"]) != int64(i) || asInt(m["index"]) != int64(i) {
			t.Fatalf("results not in iteration order at %d: %v", i, m)
		}
	}
}
