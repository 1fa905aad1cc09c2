package rerun

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/store/memstore"
	"github.com/noetl/gcpengine/shared/types"
)

const chain = `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun_chain, path: tests/rerun_chain}
workload: {fix: false, nested: {a: 1, b: 2}}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: load}]}
  - step: load
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: check}]}
  - step: check
    tool: {kind: python, code: "result = 2"}
`

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// env is a source execution on the in-memory store: start and load ended
// (load's result stored in the results tier), check failed.
type env struct {
	store   *memstore.Memory
	bus     *controltest.Publisher
	tier    *results.Store
	starter *Starter
	source  *store.Execution
	loadRef map[string]any
}

func newEnv(t *testing.T, parent string, loadResult func(tier *results.Store, id string) any) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{store: memstore.NewMemory(), bus: &controltest.Publisher{}, tier: &results.Store{Backend: results.NewMemory(), InlineMax: 64}}
	e.starter = &Starter{Store: e.store, Bus: e.bus, Results: e.tier}
	pb, err := dsl.Load([]byte(chain), "chain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(pb, engine.Options{})
	id := "914000000000000001"
	st := engine.NewState(id, parent, pb, map[string]any{"fix": false, "nested": map[string]any{"a": int64(1), "b": int64(2)}}, t0)
	st.Creator, st.CatalogPath = "alice", "tests/rerun_chain.yaml"
	var log []types.Event
	out, err := eng.Start(st, t0)
	if err != nil {
		t.Fatal(err)
	}
	log = append(log, out.Events...)
	apply := func(ev types.Event) {
		ev.Clock = st.Clock + 1
		log = append(log, ev)
		out, _, err := eng.Apply(st, ev, t0)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, out.Events...)
	}
	boundary := func(typ types.EventType, step string, p history.Payload) types.Event {
		ev := types.NewEvent(typ, id, "execute", t0, step, "1")
		ev.Step, ev.StepRun, ev.Payload = step, 1, history.Encode(p)
		return ev
	}
	apply(boundary(types.EvStepDone, "start", history.StepDone{Result: "started"}))
	loaded := loadResult(e.tier, id)
	e.loadRef, _ = loaded.(map[string]any)
	apply(boundary(types.EvStepDone, "load", history.StepDone{Result: loaded, Ctx: map[string]any{"loaded": true}}))
	apply(boundary(types.EvStepFailed, "check", history.StepFailed{Error: map[string]any{"kind": "python", "message": "2 of 12 items failed"}}))
	if st.Status != engine.ExecFailed {
		t.Fatalf("source %s", st.Status)
	}
	e.source = &store.Execution{State: st, Source: chain}
	if err := e.store.ExecutionCreate(ctx, e.source); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.BatchPut(ctx, types.Batch{ID: "b1", ExecutionID: id, Source: "test", Events: log}); err != nil {
		t.Fatal(err)
	}
	return e
}

// offloaded stores load's result in the tier (over the inline budget).
func offloaded(tier *results.Store, id string) any {
	ref, err := tier.Offload(context.Background(), types.ResultCoords{ExecutionID: id, Step: "load.load_task.0", Frame: 1, Attempt: 1},
		map[string]any{"rows": []any{map[string]any{"n": int64(1), "pad": strings.Repeat("x", 200)}}})
	if err != nil || ref == nil {
		panic(err)
	}
	return ref
}

// Start: the rerun reuses start and load (load's stored result copied to
// the rerun, which owns it), starts from check, links its source in its
// state and its request event, and merges the request's workload over the
// recorded one.
func TestStartReusesAndCopies(t *testing.T) {
	e := newEnv(t, "", offloaded)
	got, err := e.starter.Start(context.Background(), Params{Source: e.source, From: engine.RerunFailed, Workload: map[string]any{"fix": true, "nested": map[string]any{"b": 3}}, Creator: "bob", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if got.RerunOf != e.source.State.ExecutionID || got.Step != "check" || got.Run != 1 || strings.Join(got.Reused, ",") != "load#1,start#1" || got.CopiedObjects != 1 || got.CopiedBytes == 0 {
		t.Fatalf("started %+v", got)
	}
	rec, err := e.store.ExecutionGet(context.Background(), got.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	st := rec.State
	if st.RerunOf != e.source.State.ExecutionID || st.RerunFrom != engine.RerunFailed || st.Creator != "bob" || st.CatalogPath != "tests/rerun_chain.yaml" {
		t.Errorf("state rerun_of %q from %q creator %q catalog %q", st.RerunOf, st.RerunFrom, st.Creator, st.CatalogPath)
	}
	want := map[string]any{"fix": true, "nested": map[string]any{"a": int64(1), "b": int64(3)}}
	if !reflect.DeepEqual(st.Workload, want) {
		t.Errorf("workload %v, want %v", st.Workload, want)
	}
	load := st.Reuse["load.1"]
	if load == nil || st.Reuse["start.1"] == nil || load.Ctx["loaded"] != true {
		t.Fatalf("reuse %v", st.Reuse)
	}
	if owner, err := results.RefExecution(load.Result); err != nil || owner != got.ExecutionID {
		t.Fatalf("the reused result belongs to %q (%v), want the rerun %s", owner, err, got.ExecutionID)
	}
	// The rerun reads its copy as its own.
	v, err := e.tier.Resolve(results.WithReader(context.Background(), results.Reader{Execution: got.ExecutionID}), load.Result)
	if want, _ := e.tier.Resolve(results.WithReader(context.Background(), results.Reader{Execution: e.source.State.ExecutionID}), e.loadRef); err != nil || !reflect.DeepEqual(v, want) {
		t.Errorf("the rerun reads %v (%v), want %v", v, err, want)
	}
	evs := e.bus.Events(got.ExecutionID)
	if len(evs) != 1 || evs[0].EventType != types.EvExecutionRequested {
		t.Fatalf("published %v", evs)
	}
	if p, _ := history.Decode[history.ExecutionRequested](evs[0]); p.RerunOf != e.source.State.ExecutionID || p.RerunFrom != engine.RerunFailed {
		t.Errorf("request event %+v", p)
	}
}

// What is refused is refused before anything is copied or created: a
// source that has not ended, a child execution, a step that never ran.
func TestStartRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		parent, from string
		mutate       func(*engine.State)
		want         string
	}{
		"running":    {from: "failed", mutate: func(st *engine.State) { st.Status = engine.ExecRunning }, want: "only an ended execution"},
		"child":      {parent: "914000000000000000", from: "failed", want: "is a child of execution"},
		"never ran":  {from: "nope", want: `no step "nope"`},
		"no failure": {from: "failed", mutate: func(st *engine.State) { st.Status = engine.ExecOK }},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, c.parent, offloaded)
			if c.mutate != nil {
				c.mutate(e.source.State)
			}
			_, err := e.starter.Start(context.Background(), Params{Source: e.source, From: c.from, Now: t0})
			var re *engine.RerunError
			if c.want == "" {
				// (ok source with a failed step run: "failed" still finds it.)
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &re) || !strings.Contains(re.Reason, c.want) {
				t.Fatalf("%v, want a refusal saying %q", err, c.want)
			}
			if n := len(e.bus.Batches()); n != 0 {
				t.Errorf("%d batches published by a refused rerun", n)
			}
		})
	}
}

// A plan that does not fit an execution document moves its largest
// inline reused results to the results tier (stored for the rerun).
func TestStartFitsLargeInlineResults(t *testing.T) {
	big := map[string]any{"blob": strings.Repeat("y", control.StateMaxBytes)}
	e := newEnv(t, "", func(*results.Store, string) any { return big })
	got, err := e.starter.Start(context.Background(), Params{Source: e.source, From: engine.RerunFailed, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.store.ExecutionGet(context.Background(), got.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	ref := rec.State.Reuse["load.1"].Result
	owner, err := results.RefExecution(ref)
	if err != nil || owner != got.ExecutionID {
		t.Fatalf("load's large result is %T owned by %q (%v), want a reference of the rerun", ref, owner, err)
	}
}

// Reusing runs at once writes their events in one transition: a plan of
// more runs than that transition can carry is refused (rerun from a later
// step), whatever the results tier takes.
func TestFitBoundsTheReusingTransition(t *testing.T) {
	reuse := map[string]*engine.ReusedRun{}
	for i := range 700 {
		reuse[engine.LoopKey("page", i+1)] = &engine.ReusedRun{Step: "page", Run: i + 1, Args: map[string]any{"n": int64(i)}, Result: map[string]any{"ok": true}}
	}
	if n := outboxEstimate(reuse); n < 700*EventOverhead {
		t.Fatalf("estimate %d", n)
	}
	s := &Starter{Results: &results.Store{Backend: results.NewMemory()}}
	err := s.fit(context.Background(), "914000000000000009", []byte(chain), nil, reuse)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "rerun from a later step") {
		t.Fatalf("700 reused runs: %v, want a TooLargeError", err)
	}
	for k := range reuse {
		if len(reuse) <= 300 {
			break
		}
		delete(reuse, k)
	}
	if err := s.fit(context.Background(), "914000000000000009", []byte(chain), nil, reuse); err != nil {
		t.Errorf("300 reused runs: %v", err)
	}
}

// A fixed playbook runs instead of the frozen one: its steps are matched
// by name (start and load still reused), the rerun's document holds the
// fixed source, and an inline playbook has no catalog path (it matches
// inline grants only).
func TestStartWithAFixedPlaybook(t *testing.T) {
	e := newEnv(t, "", offloaded)
	fixed := strings.Replace(chain, `code: "result = 2"`, `code: "result = 3"`, 1)
	pb, err := dsl.Load([]byte(fixed), "fixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.starter.Start(context.Background(), Params{Source: e.source, From: engine.RerunFailed, Playbook: pb, PlaybookSource: []byte(fixed), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.store.ExecutionGet(context.Background(), got.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Source != fixed || rec.State.CatalogPath != "" || strings.Join(got.Reused, ",") != "load#1,start#1" {
		t.Errorf("source fixed %v, catalog path %q, reused %v", rec.Source == fixed, rec.State.CatalogPath, got.Reused)
	}
}
