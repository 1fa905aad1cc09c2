package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/noop"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// fetchPB fails its http task until its url is the good one; store is a
// sink (a side-effecting postgres task).
const fetchPB = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: fetch, path: tests/fetch}
executor: {spec: {dlq_hold: HOLD}}
workflow:
  - step: start
    tool:
      - fetch: {kind: http, method: GET, url: "http://api.test/old", headers: {Authorization: "Bearer s3cr3t-t0ken"}}
      - store: {kind: postgres, command: "INSERT INTO t VALUES (1)"}
`

// urlTool answers 200 for .../new and 503 for anything else; failing
// makes the postgres sink fail with a retryable error.
type urlTool struct {
	urls    []string
	failing bool
}

func (u *urlTool) Run(ctx context.Context, req tools.Request) types.Outcome {
	if req.Config["command"] != nil {
		if u.failing {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "postgres", Message: "deadlock detected", Retryable: true}}
		}
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"rows": 1}}
	}
	url, _ := req.Config["url"].(string)
	u.urls = append(u.urls, url)
	if strings.HasSuffix(url, "/new") {
		return types.Outcome{Status: types.StatusOK, Result: map[string]any{"ok": true}, HTTP: &types.HTTPOutcome{Status: 200}}
	}
	return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "server_error", Message: "HTTP 503 from " + url, Retryable: true, Status: 503}}
}

type taskFixture struct {
	env *controltest.Env
	w   *worker.Worker
	api *urlTool
	ops *Ops
}

func taskFailure(t *testing.T, hold string, enabled bool, api *urlTool) *taskFixture {
	t.Helper()
	env := controltest.NewEnv()
	env.Control.Opts.TaskRetry = engine.Budget{MaxAttempts: 3, Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	w := &worker.Worker{Control: env.Control, Store: env.Memory, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now,
		Tools: tools.Registry{"http": api, "postgres": api, "noop": tools.Adapt(noop.New())}, FileTaskFailures: enabled}
	if err := env.Launch(context.Background(), "ex1", "", strings.Replace(fetchPB, "HOLD", hold, 1), nil); err != nil {
		t.Fatal(err)
	}
	f := &taskFixture{env: env, w: w, api: api, ops: &Ops{Store: env.Memory, Tasks: env.Tasks, Bus: &republisher{}, Control: env.Control, Units: w, Log: env.Log}}
	f.run(t)
	return f
}

func (f *taskFixture) run(t *testing.T) {
	t.Helper()
	for range 200 {
		cmd, ok := f.env.Tasks.Take(func(c types.Command) bool { return c.Kind == types.CmdRunStep || c.Kind == "" })
		if !ok {
			return
		}
		f.env.Clock.Set(cmd.NotBefore)
		if err := f.w.Run(context.Background(), cmd, worker.Delivery{TaskName: cmd.TaskName()}); err != nil && !errors.Is(err, worker.ErrRetryLater) {
			t.Fatalf("delivery: %v", err)
		}
	}
	t.Fatal("tasks kept coming")
}

func (f *taskFixture) entries(t *testing.T) []store.DLQEntry {
	t.Helper()
	es, err := f.env.Memory.DLQQuery(context.Background(), store.DLQFilter{ExecutionID: "ex1"})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestExhaustedTaskIsFiled (NoETL observability spec §8.6): a task whose
// retries ran out is filed in the DLQ with the seed's fields — tool kind,
// attempts, last_error, last_stack, its rendered spec (redacted) — and,
// not held, its step fails at once (the entry is the record: done);
// NOETL_DLQ_ENABLED=false files nothing.
func TestExhaustedTaskIsFiled(t *testing.T) {
	f := taskFailure(t, "false", true, &urlTool{})
	if st := f.env.State(context.Background(), "ex1").State; st.Status != engine.ExecFailed {
		t.Fatalf("execution %s, want failed at once", st.Status)
	}
	es := f.entries(t)
	if len(es) != 1 {
		t.Fatalf("entries %+v, want 1", es)
	}
	e := es[0]
	if e.Status != store.DLQDone || e.ToolKind != "http" || e.Attempts != 3 || e.StepID != "start" || e.SinkID != "" ||
		!strings.Contains(e.LastError, "HTTP 503") || !strings.Contains(e.LastStack, "task fetch (kind http") || !strings.Contains(e.LastStack, "HTTP 503") {
		t.Errorf("entry %+v", e)
	}
	if !strings.Contains(e.Spec, `"url":"http://api.test/old"`) || strings.Contains(e.Spec, "s3cr3t-t0ken") || strings.Contains(e.Payload, "s3cr3t") {
		t.Errorf("spec %s / payload %s: the url, without the token", e.Spec, e.Payload)
	}
	if off := taskFailure(t, "false", false, &urlTool{}); len(off.entries(t)) != 0 {
		t.Errorf("NOETL_DLQ_ENABLED=false filed %+v", off.entries(t))
	}
}

// TestSinkFailureHasSinkID: a sink's exhausted failure names its sink.
func TestSinkFailureHasSinkID(t *testing.T) {
	api := &urlTool{failing: true}
	env := controltest.NewEnv()
	env.Control.Opts.SinkRetry = engine.Budget{MaxAttempts: 2, Base: time.Millisecond, Max: time.Millisecond}
	w := &worker.Worker{Control: env.Control, Store: env.Memory, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now,
		Tools: tools.Registry{"http": api, "postgres": api}, FileTaskFailures: true}
	src := strings.Replace(strings.Replace(fetchPB, "HOLD", "false", 1), "http://api.test/old", "http://api.test/new", 1)
	if err := env.Launch(context.Background(), "ex1", "", src, nil); err != nil {
		t.Fatal(err)
	}
	f := &taskFixture{env: env, w: w, api: api}
	f.run(t)
	es := f.entries(t)
	if len(es) != 1 || es[0].SinkID != "postgres:store" || es[0].ToolKind != "postgres" || es[0].Attempts != 2 {
		t.Fatalf("entries %+v, want the sink postgres:store after 2 attempts", es)
	}
}

// TestHeldTaskFailureReplayedWithASpecPatch: held (executor.spec.dlq_hold),
// the exhausted task parks its unit; a replay with spec.url corrects its
// rendered url (checked against the http spec: an unknown key or a value
// of the wrong type is refused) and the execution goes on from the failed
// task and ends ok.
func TestHeldTaskFailureReplayedWithASpecPatch(t *testing.T) {
	ctx := context.Background()
	f := taskFailure(t, "true", true, &urlTool{})
	st := f.env.State(ctx, "ex1").State
	if st.Status != engine.ExecRunning {
		t.Fatalf("execution %s, want running (parked)", st.Status)
	}
	es := f.entries(t)
	if len(es) != 1 || es[0].Status != store.DLQPending {
		t.Fatalf("entries %+v, want one pending", es)
	}
	id := es[0].MessageID
	for _, bad := range []map[string]any{{"spec.nope": "x"}, {"spec.method": "FETCH"}, {"spec.": "x"}} {
		if _, err := f.ops.Replay(ctx, id, bad); !errors.Is(err, ErrBadPatch) {
			t.Errorf("patch %v: %v, want ErrBadPatch", bad, err)
		}
	}
	if _, err := f.ops.Replay(ctx, id, map[string]any{"spec.url": "http://api.test/new"}); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	if st := f.env.State(ctx, "ex1").State; st.Status != engine.ExecOK {
		t.Fatalf("execution %s after the replay, want ok", st.Status)
	}
	if last := f.api.urls[len(f.api.urls)-1]; last != "http://api.test/new" {
		t.Errorf("the replay called %s", last)
	}
	if n := len(f.api.urls); n != 4 {
		t.Errorf("http ran %d times, want 3 attempts then the replay", n)
	}
	if e, _ := f.env.Memory.DLQGet(ctx, id); e.Status != store.DLQReplayed {
		t.Errorf("entry %s, want replayed", e.Status)
	}
}
