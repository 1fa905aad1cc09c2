package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/telemetry/tracetree"
)

// After scripts/run, `scripts/noetl trace ID` prints the execution's span
// tree from the stack's trace files (the stack samples every execution):
// one trace whose id derives from the execution id, the root
// server.execution, one server.dispatch per unit of work (each step run,
// each loop iteration), one worker.plugin.<kind> per task attempt under its
// unit, one server.route per arc the boundary events considered, each with
// NoETL observability spec §8.3's attributes.
func TestTraceTreeOfRun(t *testing.T) {
	RequireStack(t)
	wf := "e2e/trace-" + randSuffix()
	pb := filepath.Join(t.TempDir(), "trace.yaml")
	if err := os.WriteFile(pb, []byte(fmt.Sprintf(metricsPlaybook, wf)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(t, pb, MustJSON(map[string]any{"api_url": os.Getenv("NOETL_FIXTURES_URL"), "key": "trace-" + randSuffix()}))
	ok(t, r)
	evs := Events(t, r.ExecutionID)

	// Spans are written as they end; the root ends with the execution.
	var tree tracetree.Tree
	var res cliResult
	for deadline := time.Now().Add(15 * time.Second); ; {
		res = noetlCLI(t, "trace", r.ExecutionID, "-o", "json")
		if res.code == 0 {
			tree = tracetree.Tree{}
			if err := json.Unmarshal([]byte(res.stdout), &tree); err != nil {
				t.Fatalf("trace -o json: %v\n%s", err, res.stdout)
			}
			if len(tree.Roots) == 1 && !tree.Roots[0].Missing && tree.Roots[0].Span.Name == telemetry.SpanExecution && count(tree.Roots[0], telemetry.SpanRoute) == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no complete tree after 15s: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if want := telemetry.ExecutionTraceID(r.ExecutionID).String(); len(tree.TraceIDs) != 1 || tree.TraceIDs[0] != want {
		t.Errorf("trace ids %v, want [%s]", tree.TraceIDs, want)
	}
	root := tree.Roots[0]
	if a := root.Span.Attributes; a["execution_id"] != r.ExecutionID || a["workflow_ref"] != wf || a["status"] != "ok" || root.Span.Status != "ok" {
		t.Errorf("root span %+v", root.Span)
	}

	// Units: every step run with tasks, and every loop iteration.
	wantUnits := map[string]int{}
	for _, e := range evs {
		switch e["event_type"] {
		case "step.done", "step.failed":
			if payload(e)["loop"] != true {
				wantUnits[fmt.Sprint(e["step"])]++
			}
		case "loop.iteration.done", "loop.iteration.failed":
			wantUnits[fmt.Sprint(e["step"])]++
		}
	}
	gotUnits := map[string]int{}
	attempts := 0
	for _, c := range root.Children {
		s := c.Span
		switch s.Name {
		case telemetry.SpanDispatch:
			gotUnits[fmt.Sprint(s.Attributes["step_id"])]++
			if s.Attributes["execution_id"] != r.ExecutionID || s.Attributes["tool_kind"] == "" {
				t.Errorf("dispatch span attributes %v", s.Attributes)
			}
			if s.Attributes["step_id"] == "fan" && s.Attributes["loop_index"] == nil {
				t.Errorf("loop iteration's dispatch span without loop_index: %v", s.Attributes)
			}
			for _, p := range c.Children {
				ps := p.Span
				kind, _ := ps.Attributes["tool_kind"].(string)
				if ps.Name != telemetry.SpanPluginPrefix+kind || ps.Attributes["step_id"] != s.Attributes["step_id"] || ps.Attributes["attempt"] == nil ||
					ps.Attributes["spec_signature"] == nil || ps.Attributes["args_signature"] == nil {
					t.Errorf("plugin span %s %v under %v", ps.Name, ps.Attributes, s.Attributes)
				}
				if strings.Contains(fmt.Sprint(ps.Attributes["spec_signature"]), os.Getenv("NOETL_FIXTURES_URL")) {
					t.Errorf("spec_signature carries the rendered URL: %v", ps.Attributes["spec_signature"])
				}
				attempts++
			}
		case telemetry.SpanRoute:
			a := s.Attributes
			if a["execution_id"] != r.ExecutionID || a["from_step"] == nil || a["target_step"] == nil || a["edge_index"] == nil || a["outcome"] == nil {
				t.Errorf("route span attributes %v", a)
			}
			if a["target_step"] == "never" && (a["outcome"] != "skipped" || a["condition"] != "{{ false }}") {
				t.Errorf("arc to never: %v", a)
			}
		default:
			t.Errorf("unexpected span %s under the root", s.Name)
		}
	}
	if fmt.Sprint(gotUnits) != fmt.Sprint(wantUnits) {
		t.Errorf("dispatch spans per step %v, want %v (from the events)", gotUnits, wantUnits)
	}
	// Under delivery chaos a duplicate delivery may run a read-only
	// attempt twice (its events dedup by id, its spans do not).
	if want := Count(evs, "task.attempt.started", ""); attempts != want && (os.Getenv("NOETL_DELIVERY_CHAOS") == "" || attempts < want) {
		t.Errorf("%d plugin spans, want %d task attempts", attempts, want)
	}
	// The table form prints the same tree.
	res = noetlCLI(t, "trace", r.ExecutionID, "-o", "table")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "execution "+r.ExecutionID) || !strings.Contains(res.stdout, "└─ ") ||
		!strings.Contains(res.stdout, "worker.plugin.http") || !strings.Contains(res.stdout, "error_class=server_error") {
		t.Errorf("trace table: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// count counts the spans named name in n's subtree.
func count(n *tracetree.Node, name string) int {
	c := 0
	if n.Span.Name == name {
		c++
	}
	for _, ch := range n.Children {
		c += count(ch, name)
	}
	return c
}
