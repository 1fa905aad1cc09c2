package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/operations/gc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// tableTool streams a table of 2,000 rows into the sink it is given, as
// the duckdb kind does; shift (when set) changes the rows of every run
// after the first (a producer that is not deterministic).
type tableTool struct {
	runs  atomic.Int32
	shift bool
}

func (tt *tableTool) Run(ctx context.Context, req tools.Request) types.Outcome {
	n := tt.runs.Add(1)
	sink, ok := results.SinkFrom(ctx)
	if !ok {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: "no sink"}}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_ = sink.Begin(schema, results.TableMeta{})
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 0; i < 2000; i++ {
		v := int64(i)
		if tt.shift && n > 1 {
			v += int64(n)
		}
		ib.Append(v)
	}
	a := ib.NewArray()
	rec := array.NewRecordBatch(schema, []arrow.Array{a}, 2000)
	err := sink.Write(rec)
	rec.Release()
	a.Release()
	if err != nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
	}
	v, err := sink.End()
	if err != nil {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "test", Message: err.Error()}}
	}
	return types.Outcome{Status: types.StatusOK, Result: v}
}

// project stores the execution's published batches in the env's store,
// as materialize does (the repair planner reads the log there).
func project(t *testing.T, env *controltest.Env) {
	t.Helper()
	for _, b := range env.Bus.Batches() {
		if _, err := env.Memory.BatchPut(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRepairRederivesLostTable: a lost table that a duckdb task on an
// in-memory database streamed is re-derived (its attempt recorded its
// rendered inputs; the task runs again and gives the same sha256) and
// put back as a repair of the lost generation: reads accept it. A
// producer that gives other bytes is refused after running (nothing is
// written), an intact result and a postgres write are refused before.
func TestRepairRederivesLostTable(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: repair, path: tests/repair}
workflow:
  - step: make
    tool: {kind: duckdb, query: "SELECT i FROM range({{ workload.n }}) t(i) ORDER BY i"}
    next: {arcs: [{step: write}]}
  - step: write
    tool: {kind: postgres, command: "INSERT INTO t SELECT * FROM generate_series(1, 2000) RETURNING *"}
`
	for _, tc := range []struct {
		name  string
		shift bool
	}{{"deterministic", false}, {"not deterministic", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env := controltest.NewEnv()
			rs := &results.Store{Backend: results.NewMemory(), InlineMax: 1024}
			env.Control.Results = rs
			duck := &tableTool{shift: tc.shift}
			pg := &fakeTool{run: func(ctx context.Context, req tools.Request, _ int) types.Outcome {
				rows := make([]any, 2000)
				for i := range rows {
					rows[i] = map[string]any{"generate_series": int64(i + 1)}
				}
				return types.Outcome{Status: types.StatusOK, Result: map[string]any{"rows": rows, "command": "INSERT"}}
			}}
			w := newWorker(env, nil, nil)
			w.Tools["duckdb"], w.Tools["postgres"] = duck, pg
			w.Results = rs
			start(t, env, "ex1", src, map[string]any{"n": int64(2000)})
			drain(t, env, w)
			st := status(t, env, "ex1")
			if st.Status != engine.ExecOK {
				t.Fatalf("execution %s", st.Status)
			}
			project(t, env)
			made := st.Results["make"].(map[string]any)
			inner := made[results.RefKey].(map[string]any)
			urn, key := inner["uri"].(string), inner["key"].(string)
			// The attempt recorded its rendered inputs (the SQL as it ran).
			var recorded *history.TaskInputs
			for _, e := range eventsOf(env, "ex1", types.EvTaskAttemptDone) {
				if a, _ := history.Decode[history.TaskAttempt](e); e.Step == "make" {
					recorded = a.Inputs
				}
			}
			if recorded == nil || recorded.Config["query"] != "SELECT i FROM range(2000) t(i) ORDER BY i" {
				t.Fatalf("recorded inputs of make: %+v", recorded)
			}
			// Intact: refused.
			if _, err := gc.PlanRepair(ctx, rs, env.Memory, urn, "ops@example.com"); !errors.Is(err, gc.ErrIntact) {
				t.Fatalf("repair of an intact result: %v, want ErrIntact", err)
			}
			// The postgres write's stored result: refused, naming why.
			wr := st.Results["write"].(map[string]any)[results.RefKey].(map[string]any)
			if err := rs.Delete(ctx, wr["key"].(string)); err != nil {
				t.Fatal(err)
			}
			if _, err := gc.PlanRepair(ctx, rs, env.Memory, wr["uri"].(string), "ops@example.com"); !errors.Is(err, gc.ErrNotRepairable) ||
				!strings.Contains(err.Error(), "kind postgres") || !strings.Contains(err.Error(), "side-effect barrier") {
				t.Fatalf("repair of a postgres write: %v, want ErrNotRepairable naming the kind and the barrier", err)
			}
			// Lost: deleted.
			if err := rs.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			reader := results.WithReader(ctx, results.Reader{Execution: "ex1"})
			if _, err := rs.Resolve(reader, made); !errors.Is(err, results.ErrLost) {
				t.Fatalf("read of the deleted result: %v", err)
			}
			cmd, err := gc.PlanRepair(ctx, rs, env.Memory, urn, "ops@example.com")
			if err != nil {
				t.Fatalf("PlanRepair: %v", err)
			}
			cmd.Repair.RequestID = "req1"
			cmd.ID = cmd.TaskName()
			if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
				t.Fatalf("the repair unit: %v", err)
			}
			repaired, failed := eventsOf(env, "ex1", types.EvResultRepaired), eventsOf(env, "ex1", types.EvResultRepairFailed)
			if duck.runs.Load() != 2 {
				t.Fatalf("the producer ran %d times, want 2 (its run and the repair)", duck.runs.Load())
			}
			if tc.shift {
				if len(repaired) != 0 || len(failed) != 1 {
					t.Fatalf("%d repaired, %d failed; want the repair refused", len(repaired), len(failed))
				}
				p, _ := history.Decode[history.ResultRepaired](failed[0])
				if !strings.Contains(p.Message, "not deterministic") || p.RequestID != "req1" || p.Principal != "ops@example.com" {
					t.Fatalf("result.repair_failed %+v", p)
				}
				if _, err := rs.Resolve(reader, made); !errors.Is(err, results.ErrLost) {
					t.Fatalf("after a refused repair: %v, want still lost", err)
				}
				if keys := scratchKeys(t, rs, false); len(keys) != 0 {
					t.Fatalf("scratch objects left after a refused repair: %v", keys)
				}
				return
			}
			if len(repaired) != 1 || len(failed) != 0 {
				t.Fatalf("%d repaired, %d failed; want one repaired", len(repaired), len(failed))
			}
			p, _ := history.Decode[history.ResultRepaired](repaired[0])
			if p.URI != urn || p.Lost != inner[results.GenerationKey].(int64) || p.Generation <= p.Lost || p.SHA256 != inner["sha256"] || p.Task == "" {
				t.Fatalf("result.repaired %+v", p)
			}
			v, err := rs.Resolve(reader, made)
			if err != nil || len(v.([]any)) != 2000 {
				t.Fatalf("read of the repaired result: %v", err)
			}
			if ver, err := rs.Verify(ctx, made, ""); err != nil || !ver.Repaired || ver.Check != results.ReadCheckSHA256 {
				t.Fatalf("verify of the repaired result: %+v %v", ver, err)
			}
			if keys := scratchKeys(t, rs, true); len(keys) != 0 {
				t.Fatalf("scratch objects left after the repair: %v", keys)
			}
			// A second repair: intact now.
			if _, err := gc.PlanRepair(ctx, rs, env.Memory, urn, "ops@example.com"); !errors.Is(err, gc.ErrIntact) {
				t.Fatalf("repair of a repaired result: %v, want ErrIntact", err)
			}
		})
	}
}

// scratchKeys lists the tier's repair scratch objects (a version
// repair-<generation> of the result's coordinates). some says the tier
// holds objects (the repaired one): a listing of none fails the test. (A
// refused repair may leave the tier empty: the lost results are gone,
// and a side-effecting step that ends its unit stores no attempt record.)
func scratchKeys(t *testing.T, rs *results.Store, some bool) []string {
	t.Helper()
	var out []string
	all := 0
	if err := rs.List(context.Background(), "", func(o results.ObjectInfo) error {
		all++
		if strings.Contains(o.Key, "repair-") {
			out = append(out, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if some && all == 0 {
		t.Fatal("the tier lists no object at all")
	}
	return out
}
