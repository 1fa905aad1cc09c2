package e2e

import (
	"os"
	"strings"
	"testing"
)

// One W3C trace follows an execution through api → Pub/Sub → route →
// dispatch → Cloud Tasks → execute → the HTTP calls its tasks make.
func TestTraceContextPropagates(t *testing.T) {
	RequireStack(t)
	// The fixture service's record endpoint keeps each call's traceparent
	// (a server of the test's own would be refused by the egress policy).
	key := "trace-" + randSuffix()
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
	r := Run(t, pb, MustJSON(map[string]any{"url": os.Getenv("NOETL_FIXTURES_URL") + "/record/" + key}))
	ok(t, r)
	var seen []string
	for _, q := range exGet(t, os.Getenv("NOETL_FIXTURES_URL")+"/recorded/"+key).(map[string]any)["requests"].([]any) {
		seen = append(seen, q.(map[string]any)["traceparent"].(string))
	}
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
