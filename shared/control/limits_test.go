package control

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const limitsPB = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: limits}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: noop}
    next: {arcs: [{step: c}]}
  - step: c
    tool: {kind: noop}
`

// fakes of the bus and the task queue (unit test).
type pub struct {
	mu      sync.Mutex
	batches []types.Batch
}

func (p *pub) PublishBatch(_ context.Context, b types.Batch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches = append(p.batches, b)
	return nil
}
func (p *pub) PublishCommands(context.Context, ...types.Command) error { return nil }

type creator struct {
	mu   sync.Mutex
	cmds []types.Command
}

func (c *creator) TaskCreate(_ context.Context, cmd types.Command, _ time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cmds = append(c.cmds, cmd)
	return true, nil
}
func (c *creator) TaskDelete(context.Context, types.Command, time.Time) error { return nil }
func (c *creator) TaskDeleteExecution(context.Context, string) (int, error)   { return 0, nil }

func newControl(t *testing.T, withResults bool) (*Control, *memstore.Memory, *creator) {
	t.Helper()
	st := memstore.NewMemory()
	tc := &creator{}
	c := &Control{Store: st, Bus: &pub{}, Tasks: tc, Now: func() time.Time { return now }, Source: "execute"}
	if withResults {
		c.Results = &results.Store{Backend: results.NewMemory()}
	}
	return c, st, tc
}

func startExecution(t *testing.T, c *Control, st *memstore.Memory, workload map[string]any) string {
	t.Helper()
	pb, err := dsl.Load([]byte(limitsPB), "limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := engine.NewState("ex1", "", pb, workload, now)
	if err := st.ExecutionCreate(context.Background(), &store.Execution{State: s, Source: limitsPB}); err != nil {
		t.Fatal(err)
	}
	ev := types.NewEvent(types.EvExecutionRequested, "ex1", "api", now)
	if _, err := c.Apply(context.Background(), ApplyParams{ExecutionID: "ex1", Event: ev, OutboxID: ev.EventID}); err != nil {
		t.Fatal(err)
	}
	return "ex1"
}

func stepDone(step string, run int, result any, ctxPatch map[string]any) types.Event {
	ev := types.NewEvent(types.EvStepDone, "ex1", "execute", now, step, types.DeriveIDPart(run))
	ev.Step, ev.StepRun = step, run
	ev.Payload = map[string]any{"result": result}
	if ctxPatch != nil {
		ev.Payload["ctx"] = ctxPatch
	}
	return ev
}

func docSize(t *testing.T, st *memstore.Memory) (int, *engine.State) {
	t.Helper()
	rec, err := st.ExecutionGet(context.Background(), "ex1")
	if err != nil {
		t.Fatal(err)
	}
	n, err := stateSize(rec.State, rec.Source)
	if err != nil {
		t.Fatal(err)
	}
	return n, rec.State
}

// Step results that together would push the execution document over
// Firestore's limit move to the results tier, largest first, keeping a
// reference; the values are intact behind the reference and the
// execution goes on.
func TestFitStateMovesLargestResults(t *testing.T) {
	c, st, tc := newControl(t, true)
	startExecution(t, c, st, nil)
	ctx := context.Background()
	big := func(n int) any { return map[string]any{"blob": strings.Repeat("r", n)} }
	if _, err := c.Apply(ctx, ApplyParams{ExecutionID: "ex1", Event: stepDone("start", 1, big(500_000), nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, ApplyParams{ExecutionID: "ex1", Event: stepDone("b", 1, big(300_000), nil)}); err != nil {
		t.Fatalf("the checkpoint must not fail on the size limit: %v", err)
	}
	n, s := docSize(t, st)
	if n > StateMaxBytes {
		t.Fatalf("document %d bytes, over %d", n, StateMaxBytes)
	}
	if !isRef(s.Results["start"]) || isRef(s.Results["b"]) {
		t.Fatalf("the largest result (start) must have moved, and only it: start ref %v, b ref %v", isRef(s.Results["start"]), isRef(s.Results["b"]))
	}
	v, err := c.Results.Resolve(results.WithReader(ctx, results.Reader{Execution: "ex1"}), s.Results["start"])
	if err != nil || v.(map[string]any)["blob"] != strings.Repeat("r", 500_000) {
		t.Fatalf("moved result not intact: %v", err)
	}
	if s.Status != engine.ExecRunning || s.Steps["c"] == nil || s.Steps["c"].Status != types.StatusRunning {
		t.Fatalf("the execution must go on: %s, c %+v", s.Status, s.Steps["c"])
	}
	if len(tc.cmds) == 0 || tc.cmds[len(tc.cmds)-1].Step != "c" {
		t.Fatal("the next unit was not dispatched")
	}
}

// What cannot move (a ctx over the limit) fails the execution with an
// error naming the limit — written, not retried — and drops its units.
func TestFitStateFailsExecutionNamingTheLimit(t *testing.T) {
	for _, withResults := range []bool{true, false} {
		c, st, tc := newControl(t, withResults)
		startExecution(t, c, st, nil)
		before := len(tc.cmds)
		applied, err := c.Apply(context.Background(), ApplyParams{ExecutionID: "ex1",
			Event: stepDone("start", 1, "small", map[string]any{"huge": strings.Repeat("c", 1_200_000)})})
		if err != nil || !applied {
			t.Fatalf("results tier %v: Apply = %v, %v; want applied without error", withResults, applied, err)
		}
		n, s := docSize(t, st)
		if n > StateMaxBytes {
			t.Fatalf("document %d bytes, over %d", n, StateMaxBytes)
		}
		if s.Status != engine.ExecFailed {
			t.Fatalf("execution %s, want failed", s.Status)
		}
		if msg := strings.Join(s.Failures, " "); !strings.Contains(msg, "900000-byte limit") {
			t.Errorf("failure %q does not name the limit", msg)
		}
		if len(tc.cmds) != before {
			t.Errorf("units dispatched for a failed execution: %+v", tc.cmds[before:])
		}
		if withResults {
			v, err := c.Results.Resolve(results.WithReader(context.Background(), results.Reader{Execution: "ex1"}), s.Ctx["$moved"])
			if err != nil || len(v.(map[string]any)["huge"].(string)) != 1_200_000 {
				t.Errorf("moved ctx not intact: %v", err)
			}
		}
	}
}
