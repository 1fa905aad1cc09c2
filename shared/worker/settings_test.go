package worker

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// TestDefaultRetryPolicy: a task without a policy retries a retryable
// error (HTTP 503) with the configured budget (NOETL_RETRIES_PLUGIN_*),
// each delay a full-jitter draw that is a function of the unit and the
// attempt, and stops at the budget; a fatal error (HTTP 404) fails at once.
func TestDefaultRetryPolicy(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: def, path: tests/default_retry}
workflow:
  - step: start
    tool: {kind: http, method: GET, url: "http://api.test/x"}
`
	for _, c := range []struct {
		name     string
		status   int
		retry    bool
		okAfter  int
		attempts int
		final    types.Status
	}{
		{"a 503 is retried until it passes", 503, true, 3, 3, engine.ExecOK},
		{"a 503 that never passes stops at the budget", 503, true, 0, 4, engine.ExecFailed},
		{"a 404 fails at once", 404, false, 0, 1, engine.ExecFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := controltest.NewEnv()
			env.Control.Opts.TaskRetry = engine.Budget{MaxAttempts: 4, Base: time.Second, Max: 3 * time.Second}
			api := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
				if c.okAfter > 0 && n >= c.okAfter {
					return ok(req, n)
				}
				return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "http", Message: "HTTP error", Retryable: c.retry, Status: c.status}}
			}}
			w := newWorker(env, nil, api)
			start(t, env, "ex1", src, nil)
			drain(t, env, w)
			if api.calls("") != c.attempts {
				t.Errorf("attempts %d, want %d", api.calls(""), c.attempts)
			}
			if st := status(t, env, "ex1"); st.Status != c.final {
				t.Errorf("execution %s, want %s", st.Status, c.final)
			}
			var delays []float64
			task := ""
			for _, e := range eventsOf(env, "ex1", types.EvPolicyTaskEvaluated) {
				task = e.Task
				p, _ := history.Decode[history.PolicyTaskEvaluated](e)
				if p.Rule != -1 {
					t.Errorf("decision by rule %d, want the default (-1)", p.Rule)
				}
				if p.DelayS != nil {
					delays = append(delays, *p.DelayS)
				}
			}
			if !c.retry {
				if len(delays) != 0 {
					t.Errorf("a fatal error was retried: %v", delays)
				}
				return
			}
			for i, d := range delays {
				attempt := i + 1
				full := math.Min(3, math.Pow(2, float64(attempt-1)))
				want := math.Floor(full*1e9*engine.Jitter(engine.JitterKey("ex1:start", task, 0), attempt)) / 1e9
				if math.Abs(d-want) > 1e-6 || d >= full {
					t.Errorf("delay before attempt %d = %v s, want %v (jitter of %v s)", attempt+1, d, want, full)
				}
			}
		})
	}
}

// TestSinkTimeoutAndDefaultConnection: a sink (a side-effecting postgres
// task) without a timeout gets NOETL_TIMEOUTS_SINK_DEFAULT_MS, other tasks
// NOETL_TIMEOUTS_TOOL_DEFAULT_MS; a postgres task that names no
// connection gets NOETL_PG_DSN when the workload has no pg_dsn.
func TestSinkTimeoutAndDefaultConnection(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: sink, path: tests/sink}
workflow:
  - step: start
    tool:
      - read: {kind: postgres, command: "SELECT 1"}
      - write: {kind: postgres, command: "INSERT INTO t VALUES (1)"}
      - call: {kind: http, method: GET, url: "http://api.test/x"}
`
	env := controltest.NewEnv()
	pg, api := &fakeTool{}, &fakeTool{}
	w := newWorker(env, nil, api)
	w.Tools["postgres"] = pg
	w.ToolTimeout, w.SinkTimeout, w.PGDSN = 7*time.Second, 3*time.Second, "postgresql://deployment/db"
	start(t, env, "ex1", src, nil)
	drain(t, env, w)
	got := map[string]tools.Request{}
	for _, r := range append(pg.requests(), api.requests()...) {
		got[r.Task] = r
	}
	if got["write"].TimeoutS != 3 || got["read"].TimeoutS != 7 || got["call"].TimeoutS != 7 {
		t.Errorf("timeouts: write %v (sink), read %v, call %v", got["write"].TimeoutS, got["read"].TimeoutS, got["call"].TimeoutS)
	}
	if got["write"].Config["connection"] != "postgresql://deployment/db" {
		t.Errorf("connection %v, want NOETL_PG_DSN", got["write"].Config["connection"])
	}
	env2 := controltest.NewEnv()
	pg2 := &fakeTool{}
	w2 := newWorker(env2, nil, &fakeTool{})
	w2.Tools["postgres"], w2.PGDSN = pg2, "postgresql://deployment/db"
	start(t, env2, "ex2", src, map[string]any{"pg_dsn": "postgresql://workload/db"})
	drain(t, env2, w2)
	if c := pg2.requests()[0].Config["connection"]; c != "postgresql://workload/db" {
		t.Errorf("the workload's pg_dsn lost to NOETL_PG_DSN: %v", c)
	}
}
