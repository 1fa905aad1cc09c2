package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// countingBackend counts the reads of every key (Get and Open).
type countingBackend struct {
	results.Backend
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingBackend) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads == nil {
		c.reads = map[string]int{}
	}
	c.reads[key]++
}

func (c *countingBackend) Get(ctx context.Context, key string) ([]byte, error) {
	c.count(key)
	return c.Backend.Get(ctx, key)
}

func (c *countingBackend) Open(ctx context.Context, key string, generation int64) (results.Object, error) {
	c.count(key)
	return c.Backend.Open(ctx, key, generation)
}

func (c *countingBackend) readsOf(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[key]
}

// lazyPlaybook: big produces a large table; a and b ignore it or read
// only its reference; whole reads it in a template; code reads it from
// python's context.
const lazyPlaybook = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: lazy, path: tests/lazy}
workflow:
  - step: start
    tool: {kind: python, code: "big()"}
    next: {arcs: [{step: ignores}]}
  - step: ignores
    tool: {kind: python, code: "other()", input: {n: "{{ workload.n }}"}}
    next: {arcs: [{step: reference}]}
  - step: reference
    tool: {kind: python, code: "ref()", input: {ref: "{{ start._ref }}", store: "{{ start._store }}", rows: "{{ start.extracted.rows }}"}}
    next: {arcs: [{step: whole}]}
  - step: whole
    tool: {kind: python, code: "whole()", input: {count: "{{ start | length }}"}}
    next: {arcs: [{step: code}]}
  - step: code
    tool: {kind: python, code: "rows = context['start']"}
`

// lazyEnv runs lazyPlaybook with a results store over a counting memory
// backend; the start step's python returns n rows.
func lazyEnv(t *testing.T, n int) (*controltest.Env, *Worker, *countingBackend, *fakeTool) {
	t.Helper()
	cb := &countingBackend{Backend: results.NewMemory()}
	rs := &results.Store{Backend: cb, InlineMax: 1024, Cache: results.NewCache(64 << 20)}
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, _ int) types.Outcome {
		if req.Step == "start" {
			rows := make([]any, n)
			for i := range rows {
				rows[i] = map[string]any{"i": int64(i), "s": fmt.Sprint("row ", i)}
			}
			return types.Outcome{Status: types.StatusOK, Result: rows}
		}
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"args": req.Args}}
	}}
	env := controltest.NewEnv()
	env.Control.Results = rs
	w := newWorker(env, py, nil)
	w.Results = rs
	start(t, env, "ex1", lazyPlaybook, map[string]any{"n": int64(3)})
	return env, w, cb, py
}

// runStep delivers units until the given step has ended.
func runStep(t *testing.T, env *controltest.Env, w *Worker, step string) {
	t.Helper()
	for range 20 {
		if ss := status(t, env, "ex1").Steps[step]; ss != nil && (ss.Status == types.StatusOK || ss.Status == types.StatusFailed) {
			return
		}
		cmd, ok := env.Tasks.Take(isUnit)
		if !ok {
			t.Fatalf("no unit left before %s ended", step)
		}
		deliver(t, w, cmd)
	}
	t.Fatalf("step %s never ended", step)
}

// Issue 16: steps that ignore a stored result, or read only its
// reference, fetch nothing; a template or python code that reads it
// loads it once (then the instance's cache serves it).
func TestIgnoredResultsFetchNothing(t *testing.T) {
	env, w, cb, py := lazyEnv(t, 500)
	runStep(t, env, w, "start")
	ref := status(t, env, "ex1").Results["start"]
	if !results.IsRef(ref) {
		t.Fatalf("start's result stayed inline: %v", ref)
	}
	key := ref.(map[string]any)[results.RefKey].(map[string]any)["key"].(string)
	runStep(t, env, w, "ignores")
	runStep(t, env, w, "reference")
	if n := cb.readsOf(key); n != 0 {
		t.Fatalf("steps that ignore the result or read its reference fetched it %d times", n)
	}
	reqs := py.requests()
	got := reqs[len(reqs)-1].Args
	if got["store"] != "kv" || got["rows"] != 500 || !results.IsRef(got["ref"]) {
		t.Fatalf("reference fields: %v", got)
	}
	runStep(t, env, w, "whole")
	if n := cb.readsOf(key); n != 1 {
		t.Fatalf("a template reading the result fetched it %d times, want 1", n)
	}
	reqs = py.requests()
	if c := reqs[len(reqs)-1].Args["count"]; c != 500 {
		t.Fatalf("length = %v", c)
	}
	runStep(t, env, w, "code")
	reqs = py.requests()
	if rows, _ := reqs[len(reqs)-1].Context["start"].([]any); len(rows) != 500 {
		t.Fatalf("python's context holds %T, want the 500 rows", reqs[len(reqs)-1].Context["start"])
	}
	if n := cb.readsOf(key); n != 1 {
		t.Fatalf("the cached result was fetched again (%d reads)", n)
	}
	drain(t, env, w)
	if st := status(t, env, "ex1"); st.Status != engine.ExecOK {
		t.Fatalf("execution %s", st.Status)
	}
}

// A stored result whose object is gone fails the step that reads it once,
// with kind result_lost naming its URI; the delivery succeeds (no
// redelivery storm).
func TestLostResultFailsStepOnce(t *testing.T) {
	env, w, cb, _ := lazyEnv(t, 500)
	runStep(t, env, w, "start")
	runStep(t, env, w, "ignores")
	runStep(t, env, w, "reference")
	ref := status(t, env, "ex1").Results["start"].(map[string]any)[results.RefKey].(map[string]any)
	if err := cb.Delete(context.Background(), ref["key"].(string)); err != nil {
		t.Fatal(err)
	}
	cmd, ok := env.Tasks.Take(isUnit)
	if !ok || cmd.Step != "whole" {
		t.Fatalf("next unit %v %v", cmd.Step, ok)
	}
	if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
		t.Fatalf("the delivery failed (it would be redelivered): %v", err)
	}
	st := status(t, env, "ex1")
	ss := st.Steps["whole"]
	em, _ := ss.Error.(map[string]any)
	if ss.Status != types.StatusFailed || em["kind"] != string(types.ErrKindResultLost) || !strings.Contains(fmt.Sprint(em["message"]), ref["uri"].(string)) {
		t.Fatalf("step whole: %s %v", ss.Status, ss.Error)
	}
	drain(t, env, w)
	if st := status(t, env, "ex1"); st.Status != engine.ExecFailed {
		t.Fatalf("execution %s", st.Status)
	}
}

// A stored result whose object was changed after it was written (another
// generation at its key than its reference records) fails the step that reads it
// once, with kind result_lost naming its URI, and the delivery is not
// redelivered (NoETL result storage RFC "repair").
func TestChangedResultFailsStepOnceAsLost(t *testing.T) {
	env, w, cb, _ := lazyEnv(t, 500)
	runStep(t, env, w, "start")
	runStep(t, env, w, "ignores")
	runStep(t, env, w, "reference")
	ref := status(t, env, "ex1").Results["start"].(map[string]any)[results.RefKey].(map[string]any)
	if err := cb.Put(context.Background(), ref["key"].(string), []byte(`[{"forged": 1}]`), results.ContentTypeJSON); err != nil {
		t.Fatal(err)
	}
	cmd, ok := env.Tasks.Take(isUnit)
	if !ok || cmd.Step != "whole" {
		t.Fatalf("next unit %v %v", cmd.Step, ok)
	}
	if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
		t.Fatalf("the delivery failed (it would be redelivered): %v", err)
	}
	ss := status(t, env, "ex1").Steps["whole"]
	em, _ := ss.Error.(map[string]any)
	msg := fmt.Sprint(em["message"])
	if ss.Status != types.StatusFailed || em["kind"] != string(types.ErrKindResultLost) || !strings.Contains(msg, ref["uri"].(string)) || !strings.Contains(msg, "not the generation the reference records") {
		t.Fatalf("step whole: %s %v", ss.Status, ss.Error)
	}
}

// A tool that streams a table through the sink the worker gives it
// produces a reference, written batch by batch into the tier.
func TestStreamedToolResult(t *testing.T) {
	cb := &countingBackend{Backend: results.NewMemory()}
	rs := &results.Store{Backend: cb, InlineMax: 1024}
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, _ int) types.Outcome {
		if req.Step != "start" {
			return types.Outcome{Status: types.StatusOK, Result: req.Args}
		}
		sink, ok := results.SinkFrom(ctx)
		if !ok {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: "no sink"}}
		}
		_ = sink.Begin(schema, results.TableMeta{})
		for b := 0; b < 10; b++ {
			ib := array.NewInt64Builder(memory.DefaultAllocator)
			for i := 0; i < 1000; i++ {
				ib.Append(int64(b*1000 + i))
			}
			a := ib.NewArray()
			rec := array.NewRecordBatch(schema, []arrow.Array{a}, 1000)
			if err := sink.Write(rec); err != nil {
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
			}
			rec.Release()
			a.Release()
		}
		v, err := sink.End()
		if err != nil {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
		}
		return types.Outcome{Status: types.StatusOK, Result: v}
	}}
	env := controltest.NewEnv()
	env.Control.Results = rs
	w := newWorker(env, py, nil)
	w.Results = rs
	start(t, env, "ex1", `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: streamed, path: tests/streamed}
workflow:
  - step: start
    tool: {kind: python, code: "produce()", output: {store: {compression: zstd, ttl: 2h}}}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: python, code: "after()", input: {rows: "{{ start.extracted.rows }}", ref: "{{ start._ref }}"}}
`, nil)
	drain(t, env, w)
	st := status(t, env, "ex1")
	ref, _ := st.Results["start"].(map[string]any)
	inner, _ := ref[results.RefKey].(map[string]any)
	if st.Status != engine.ExecOK || inner["format"] != results.FormatFeather || inner["rows"] != int64(10000) || inner["expires"] == nil {
		t.Fatalf("execution %s result %v", st.Status, st.Results["start"])
	}
	if !strings.HasSuffix(inner["uri"].(string), "/results/ex1/start/1/0/1") {
		t.Fatalf("uri %v", inner["uri"])
	}
	n, err := rs.RowCount(results.WithReader(context.Background(), results.Reader{Execution: "ex1"}), ref)
	if err != nil || n != 10000 {
		t.Fatalf("rows %d %v", n, err)
	}
	if n := cb.readsOf(inner["key"].(string)); n != 0 { // the next step read only its reference
		t.Fatalf("reads %d", n)
	}
}

// loop.in over a stored table iterates it where it is: each iteration
// reads its own row (its record batch, cached per instance), nothing
// loads the whole table.
func TestLoopOverStoredTable(t *testing.T) {
	cb := &countingBackend{Backend: results.NewMemory()}
	rs := &results.Store{Backend: cb, InlineMax: 1024, Cache: results.NewCache(64 << 20)}
	py := &fakeTool{run: func(ctx context.Context, req tools.Request, _ int) types.Outcome {
		if req.Step == "start" {
			rows := make([]any, 300)
			for i := range rows {
				rows[i] = map[string]any{"i": int64(i), "s": fmt.Sprint("row ", i)}
			}
			return types.Outcome{Status: types.StatusOK, Result: rows}
		}
		return types.Outcome{Status: types.StatusOK, Result: req.Args["i"]}
	}}
	env := controltest.NewEnv()
	env.Control.Results = rs
	w := newWorker(env, py, nil)
	w.Results = rs
	start(t, env, "ex1", `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: each, path: tests/each}
workflow:
  - step: start
    tool: {kind: python, code: "rows()"}
    next: {arcs: [{step: each}]}
  - step: each
    loop: {in: "{{ start }}", iterator: row, mode: parallel, spec: {max_in_flight: 4}}
    tool: {kind: python, code: "use(row)", input: {i: "{{ row.i }}", s: "{{ row.s }}"}}
`, nil)
	drain(t, env, w)
	st := status(t, env, "ex1")
	if st.Status != engine.ExecOK {
		t.Fatalf("execution %s %v", st.Status, st.Steps["each"].Error)
	}
	key := st.Results["start"].(map[string]any)[results.RefKey].(map[string]any)["key"].(string)
	got := map[string]string{}
	for _, r := range py.requests() {
		if r.Step == "each" {
			got[fmt.Sprint(r.Args["i"])] = fmt.Sprint(r.Args["s"])
		}
	}
	if len(got) != 300 || got["0"] != "row 0" || got["299"] != "row 299" {
		t.Fatalf("%d items, e.g. %q %q", len(got), got["0"], got["299"])
	}
	// The footer and the one batch: read once each on this instance.
	if n := cb.readsOf(key); n > 2 {
		t.Fatalf("the table was read %d times for 300 iterations", n)
	}
}
