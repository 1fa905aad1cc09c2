package gc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/operations/gc"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tasks"
	"github.com/noetl/gcpengine/shared/types"
)

// records is the fake of gc.Records: executions by id and the pending
// DLQ entries.
type records struct {
	execs map[string]*engine.State
	dlq   []store.DLQEntry
}

func (r *records) ExecutionGet(_ context.Context, id string) (*store.Execution, error) {
	st, ok := r.execs[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &store.Execution{State: st}, nil
}

func (r *records) DLQList(_ context.Context, status store.DLQStatus, _ int) ([]store.DLQEntry, error) {
	if status != store.DLQPending {
		return nil, fmt.Errorf("status %q", status)
	}
	return r.dlq, nil
}

var now = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// fixture: one execution per verdict, each with a stored result and an
// offloaded unit body.
func fixture(t *testing.T) (*gc.Collector, *results.Store, map[string]string) {
	t.Helper()
	ctx := context.Background()
	rs := &results.Store{Backend: results.NewMemory()}
	ended := func(days int) *engine.State {
		return &engine.State{Status: engine.ExecOK, FinishedAt: now.AddDate(0, 0, -days)}
	}
	ids := map[string]string{"live": "101", "dlq": "102", "kept": "103", "expired": "104", "orphan": "105", "child": "106"}
	rec := &records{execs: map[string]*engine.State{
		ids["live"]:    {Status: engine.ExecRunning},
		ids["dlq"]:     ended(90),
		ids["kept"]:    ended(10),
		ids["expired"]: ended(31),
		ids["child"]:   {Status: engine.ExecOK, FinishedAt: now.AddDate(0, 0, -90), ParentID: ids["live"]},
	}, dlq: []store.DLQEntry{{MessageID: "m", ExecutionID: ids["dlq"], Status: store.DLQPending}}}
	for _, id := range ids {
		if _, err := rs.OffloadForced(ctx, types.ResultCoords{ExecutionID: id, Step: "s", Attempt: 1}, map[string]any{"v": strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
		if err := rs.Backend.Put(ctx, tasks.BodyKey(types.Command{ExecutionID: id, Step: "s", StepRun: 1}), []byte("{}"), "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	return &gc.Collector{Results: rs, Records: rec, Retention: 30 * 24 * time.Hour, Now: func() time.Time { return now }}, rs, ids
}

// count returns the objects of execution id (results and bodies).
func count(t *testing.T, rs *results.Store, id string) int {
	t.Helper()
	n := 0
	err := rs.Backend.List(context.Background(), "", func(o results.ObjectInfo) error {
		if x, ok := results.KeyExecution(o.Key); (ok && x == id) || strings.HasPrefix(o.Key, gc.BodiesPrefix+id+"/") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A sweep deletes the results and unit bodies of an execution that ended
// more than the retention ago and of one whose record is gone, and keeps
// those of a running one, of a child whose parent runs, of one a pending
// DLQ entry names and of one within its retention; a dry run deletes
// nothing.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	c, rs, ids := fixture(t)
	rep, err := c.Run(ctx, true)
	if err != nil || rep.Deleted != 4 || count(t, rs, ids["expired"]) != 2 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	rep, err = c.Run(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 4 || rep.Executions[gc.DeleteAged] != 1 || rep.Executions[gc.DeleteGone] != 1 || rep.Executions[gc.KeepLive] != 2 ||
		rep.Executions[gc.KeepDLQ] != 1 || rep.Executions[gc.KeepRecord] != 1 {
		t.Fatalf("report %+v", rep)
	}
	for name, id := range ids {
		want := 2
		if name == "expired" || name == "orphan" {
			want = 0
		}
		if got := count(t, rs, id); got != want {
			t.Errorf("%s: %d objects left, want %d", name, got, want)
		}
	}
}

// One execution: its verdict decides; force deletes an ended one within
// its retention, never a running one or one the DLQ holds.
func TestDeleteExecution(t *testing.T) {
	ctx := context.Background()
	c, rs, ids := fixture(t)
	for name, want := range map[string]string{"live": gc.KeepLive, "dlq": gc.KeepDLQ, "child": gc.KeepLive, "kept": gc.KeepRecord} {
		v, n, err := c.DeleteExecution(ctx, ids[name], true)
		if err != nil {
			t.Fatal(err)
		}
		wantN := 0
		if name == "kept" {
			wantN = 2
		}
		if v != want || n != wantN || count(t, rs, ids[name]) != 2-wantN {
			t.Errorf("%s: verdict %s, deleted %d; want %s, %d", name, v, n, want, wantN)
		}
	}
	if v, n, err := c.DeleteExecution(ctx, ids["expired"], false); err != nil || v != gc.DeleteAged || n != 2 {
		t.Errorf("expired: %s %d %v", v, n, err)
	}
}

func TestBodiesPrefixIsBodyKeys(t *testing.T) {
	if k := tasks.BodyKey(types.Command{ExecutionID: "7", Step: "s"}); !strings.HasPrefix(k, gc.BodiesPrefix+"7/") {
		t.Fatalf("BodyKey %s is not under %s<execution>/", k, gc.BodiesPrefix)
	}
}
