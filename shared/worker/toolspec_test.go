package worker

import (
	"context"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// TestToolConfigDecodes: the configuration a tool receives decodes into
// its kind's typed spec — a workbook call's name (the entry it calls) is
// not passed to the entry's kind, and NoETL's spellings arrive under the
// canonical keys (postgres credential: as auth, sql: as command), so the
// worker's own keychain and pg_dsn handling see them.
func TestToolConfigDecodes(t *testing.T) {
	env := controltest.NewEnv()
	var mu sync.Mutex
	got := map[string]map[string]any{}
	record := func(ctx context.Context, req tools.Request, _ int) types.Outcome {
		mu.Lock()
		got[req.Step] = req.Config
		mu.Unlock()
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{}}
	}
	w := newWorker(env, &fakeTool{run: record}, nil)
	w.Tools["postgres"] = &fakeTool{run: record}
	launchAs(t, env, "e1", "alice@example.com", `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: specs}
workload: {pg_dsn: "host=127.0.0.1 dbname=other"}
workbook:
  - name: scorer
    tool: {kind: python, code: "result = 1"}
workflow:
  - step: start
    tool: {kind: workbook, name: scorer}
    next: [{step: sql}]
  - step: sql
    tool: {kind: postgres, credential: pg_local, sql: "select 1"}
`, credentials.NewMemory())
	drain(t, env, w)
	if st := status(t, env, "e1"); st.Status != engine.ExecOK {
		t.Fatalf("status %s %v", st.Status, st.Failures)
	}
	var py toolspec.Python
	if err := toolspec.Decode(got["start"], &py); err != nil || py.Code != "result = 1" {
		t.Fatalf("workbook python config %v: %v", got["start"], err)
	}
	var pg toolspec.Postgres
	if err := toolspec.Decode(got["sql"], &pg); err != nil {
		t.Fatal(err)
	}
	if pg.Auth != "pg_local" || pg.Command != "select 1" || pg.Connection != nil {
		t.Fatalf("postgres config %v (the workload's pg_dsn must not replace credential:)", got["sql"])
	}
}
