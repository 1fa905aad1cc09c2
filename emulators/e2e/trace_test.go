package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// One W3C trace follows an execution through api → Pub/Sub → route →
// dispatch → Cloud Tasks → execute → the HTTP calls its tasks make.
func TestTraceContextPropagates(t *testing.T) {
	RequireStack(t)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	defer srv.Close()
	pb := t.TempDir() + "/trace.yaml"
	src := `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: trace}
workload: {url: "http://unset"}
workflow:
  - step: start
    tool: {kind: http, url: "{{ url }}/a"}
    next:
      arcs: [{step: second}]
  - step: second
    loop: {in: [1, 2], iterator: n}
    tool: {kind: http, url: "{{ url }}/b/{{ n }}"}
`
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, MustJSON(map[string]any{"url": srv.URL}))
	ok(t, r)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("%d requests, want 3", len(seen))
	}
	var trace string
	for _, tp := range seen {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || len(parts[1]) != 32 {
			t.Fatalf("bad traceparent %q", tp)
		}
		if trace == "" {
			trace = parts[1]
		}
		if parts[1] != trace {
			t.Fatalf("requests in different traces: %v", seen)
		}
	}
}
