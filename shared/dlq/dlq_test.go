package dlq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

// single is one side-effecting step; loop a loop of side-effecting
// iterations.
const (
	single = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: single, path: tests/single}
workflow:
  - step: start
    tool:
      - charge: {kind: python, code: "charge()"}
`
	loop = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loop, path: tests/loop}
workflow:
  - step: start
    loop:
      in: "{{ workload.items }}"
      iterator: item
      spec: {mode: parallel, max_in_flight: 2}
    tool:
      - send: {kind: python, code: "send()", input: {v: "{{ item }}"}}
`
)

var errDown = errs.New(errs.Unavailable, "injected outage")

// counter is a python tool that counts its runs.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Run(ctx context.Context, req tools.Request) types.Outcome {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return types.Outcome{Status: types.StatusOK, Result: map[string]any{"ran": true}}
}

func (c *counter) runs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// republisher records republished messages.
type republisher struct{ topics []string }

func (r *republisher) Republish(ctx context.Context, topic string, data []byte, attrs map[string]string) error {
	r.topics = append(r.topics, topic)
	return nil
}

type fixture struct {
	env  *controltest.Env
	w    *worker.Worker
	py   *counter
	ops  *Ops
	unit types.Command
	id   string
}

// parked starts ex1 of src and files its first unit in the DLQ (its last
// attempt fails at execute.start), as the worker does.
func parked(t *testing.T, src string, wl map[string]any) *fixture {
	t.Helper()
	env := controltest.NewEnv()
	py := &counter{}
	w := &worker.Worker{Control: env.Control, Store: env.Memory, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now, Tools: tools.Registry{"python": py}}
	if err := env.Launch(context.Background(), "ex1", "", src, wl); err != nil {
		t.Fatal(err)
	}
	unit, ok := env.Tasks.Take(func(c types.Command) bool { return c.Kind == types.CmdRunStep })
	if !ok {
		t.Fatal("no unit")
	}
	restore := faults.SetScript(func(point, _, _ string) string {
		if point == faults.ExecuteStart {
			return "error"
		}
		return ""
	})
	err := w.Run(context.Background(), unit, worker.Delivery{TaskName: unit.TaskName(), RetryCount: 9, MaxAttempts: 10})
	restore()
	if err != nil {
		t.Fatalf("last attempt: %v", err)
	}
	id := worker.DLQMessageID(unit)
	if e, err := env.Memory.DLQGet(context.Background(), id); err != nil || e.Status != store.DLQPending {
		t.Fatalf("entry %+v (%v)", e, err)
	}
	ops := &Ops{Store: env.Memory, Tasks: env.Tasks, Bus: &republisher{}, Control: env.Control, Units: w, Log: env.Log}
	return &fixture{env: env, w: w, py: py, ops: ops, unit: unit, id: id}
}

// run delivers the pending units (watchdogs included) until none is left.
func (f *fixture) run(t *testing.T) {
	t.Helper()
	for range 200 {
		cmd, ok := f.env.Tasks.Take(nil)
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

func (f *fixture) entry(t *testing.T) *store.DLQEntry {
	t.Helper()
	e, err := f.env.Memory.DLQGet(context.Background(), f.id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (f *fixture) status(t *testing.T) types.Status {
	t.Helper()
	return f.env.State(context.Background(), "ex1").State.Status
}

func replays(env *controltest.Env) int {
	n := 0
	for _, c := range env.Tasks.Created() {
		if c.Replay > 0 {
			n++
		}
	}
	return n
}

// TestReplaySurvivesAFailureBetweenItsCalls (README "The soak"): a replay
// that fails (an error, or the instance dying) after creating the unit's
// task and before marking the entry is completed by its retry — not
// refused with 409 — and the unit runs once.
func TestReplaySurvivesAFailureBetweenItsCalls(t *testing.T) {
	for _, action := range []string{"error", "crash"} {
		for _, src := range []struct {
			name, src string
			wl        map[string]any
		}{{"step unit", single, nil}, {"iteration", loop, map[string]any{"items": []any{"a"}}}} {
			t.Run(action+" "+src.name, func(t *testing.T) {
				ctx := context.Background()
				f := parked(t, src.src, src.wl)
				t.Cleanup(faults.SetScript(func(point, _, _ string) string {
					if point == faults.DLQReplayAfterDispatch {
						return action
					}
					return ""
				}))
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							if _, ok := r.(faults.Crashed); !ok {
								panic(r)
							}
							err = errDown
						}
					}()
					_, err = f.ops.Replay(ctx, f.id, map[string]any{"args.note": "again"})
				}()
				if err == nil {
					t.Fatal("the first replay did not fail between its calls")
				}
				if e := f.entry(t); e.Status != store.DLQPending || replays(f.env) != 1 {
					t.Fatalf("after the failure: entry %s, %d replayed tasks; want pending and 1", e.Status, replays(f.env))
				}
				faults.SetScript(nil)
				res, err := f.ops.Replay(ctx, f.id, map[string]any{"args.note": "again"})
				if err != nil || res.Status != store.DLQReplayed {
					t.Fatalf("retried replay: %+v %v; want replayed", res, err)
				}
				if n := replays(f.env); n != 1 {
					t.Fatalf("%d replayed tasks, want 1 (the retry's create is a duplicate)", n)
				}
				f.run(t)
				if st := f.status(t); st != engine.ExecOK || f.py.runs() != 1 {
					t.Fatalf("execution %s, tool runs %d; want ok after one run", st, f.py.runs())
				}
				if e := f.entry(t); e.Status != store.DLQReplayed {
					t.Fatalf("entry %s, want replayed", e.Status)
				}
				// Replaying it again is refused.
				if _, err := f.ops.Replay(ctx, f.id, nil); !errors.Is(err, ErrNotPending) {
					t.Fatalf("second replay: %v, want ErrNotPending", err)
				}
			})
		}
	}
}

// TestDiscardSurvivesAFailureBetweenItsCalls (README "The soak"): a discard
// that fails after failing the unit's step run (or iteration) and before
// its answer is completed by its retry: the execution fails once, the
// entry ends discarded.
func TestDiscardSurvivesAFailureBetweenItsCalls(t *testing.T) {
	for _, action := range []string{"error", "crash"} {
		for _, src := range []struct {
			name, src string
			wl        map[string]any
		}{{"step unit", single, nil}, {"iteration", loop, map[string]any{"items": []any{"a"}}}} {
			t.Run(action+" "+src.name, func(t *testing.T) {
				ctx := context.Background()
				f := parked(t, src.src, src.wl)
				t.Cleanup(faults.SetScript(func(point, _, _ string) string {
					if point == faults.DLQDiscardAfterFail {
						return action
					}
					return ""
				}))
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							if _, ok := r.(faults.Crashed); !ok {
								panic(r)
							}
							err = errDown
						}
					}()
					_, err = f.ops.Discard(ctx, f.id, "bad input")
				}()
				if err == nil {
					t.Fatal("the first discard did not fail between its calls")
				}
				faults.SetScript(nil)
				res, err := f.ops.Discard(ctx, f.id, "bad input")
				if err != nil || res.Status != store.DLQDiscarded {
					t.Fatalf("retried discard: %+v %v; want discarded", res, err)
				}
				f.run(t)
				if st := f.status(t); st != engine.ExecFailed || f.py.runs() != 0 {
					t.Fatalf("execution %s, tool runs %d; want failed, never run", st, f.py.runs())
				}
				if e := f.entry(t); e.Status != store.DLQDiscarded || e.Note != "bad input" {
					t.Fatalf("entry %s (%q), want discarded with its reason", e.Status, e.Note)
				}
				if n := len(f.env.Bus.EventsOf("ex1", types.EvPlaybookFinished)); n != 1 {
					t.Fatalf("%d playbook.finished events, want 1", n)
				}
				if _, err := f.ops.Replay(ctx, f.id, nil); !errors.Is(err, ErrNotPending) {
					t.Fatalf("replay of a discarded entry: %v, want ErrNotPending", err)
				}
			})
		}
	}
}

// TestReplayOfACompletedUnitIsANoOp (README "The soak"): an entry whose
// unit completed through another delivery — here filed without a park,
// as an entry written before parks existed, or when the execution
// document could not be written — is resolved done by a replay, which
// refuses with ErrAlreadyDone and creates no task.
func TestReplayOfACompletedUnitIsANoOp(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	py := &counter{}
	w := &worker.Worker{Control: env.Control, Store: env.Memory, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now, Tools: tools.Registry{"python": py}}
	if err := env.Launch(ctx, "ex1", "", single, nil); err != nil {
		t.Fatal(err)
	}
	unit, _ := env.Tasks.Take(nil)
	if err := w.Run(ctx, unit, worker.Delivery{TaskName: unit.TaskName()}); err != nil {
		t.Fatal(err)
	}
	id := worker.DLQMessageID(unit)
	raw := `{"execution_id":"ex1","step":"start","step_run":1,"kind":"run_step","task_index":0,"attempt":1}`
	if err := env.Memory.DLQPut(ctx, store.DLQEntry{MessageID: id, ExecutionID: "ex1", StepID: "start", Kind: "unit", Unit: raw}); err != nil {
		t.Fatal(err)
	}
	ops := &Ops{Store: env.Memory, Tasks: env.Tasks, Bus: &republisher{}, Control: env.Control, Units: w, Log: env.Log}
	before := len(env.Tasks.Created())
	res, err := ops.Replay(ctx, id, nil)
	if !errors.Is(err, ErrAlreadyDone) || res.Status != store.DLQDone {
		t.Fatalf("replay of a completed unit: %+v %v; want ErrAlreadyDone, done", res, err)
	}
	if len(env.Tasks.Created()) != before || py.runs() != 1 {
		t.Fatalf("the replay dispatched %d tasks; the tool ran %d times", len(env.Tasks.Created())-before, py.runs())
	}
	if e, _ := env.Memory.DLQGet(ctx, id); e.Status != store.DLQDone {
		t.Fatalf("entry %s, want done", e.Status)
	}
	if _, err := ops.Replay(ctx, id, nil); !errors.Is(err, ErrAlreadyDone) || !strings.Contains(err.Error(), "--from failed") || !strings.Contains(err.Error(), "NOETL_DLQ_HOLD") {
		t.Fatalf("second replay: %v, want ErrAlreadyDone naming rerun --from failed and NOETL_DLQ_HOLD", err)
	}
	if _, err := ops.Discard(ctx, id, "late"); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("discard of a done entry: %v, want ErrAlreadyDone", err)
	}
}

// TestReplayPatch: a patch changes the unit's inputs; a patch that names
// the unit (its execution, step, iteration) or its bookkeeping is refused
// (ErrBadPatch) and dispatches nothing.
func TestReplayPatch(t *testing.T) {
	ctx := context.Background()
	f := parked(t, single, nil)
	for _, path := range []string{"execution_id", "step", "iteration", "replay_of", "kind", "holder", "body_ref.key"} {
		if _, err := f.ops.Replay(ctx, f.id, map[string]any{path: "x"}); !errors.Is(err, ErrBadPatch) {
			t.Fatalf("patch of %s: %v, want ErrBadPatch", path, err)
		}
	}
	if replays(f.env) != 0 {
		t.Fatal("a refused patch dispatched the unit")
	}
	if _, err := f.ops.Replay(ctx, f.id, map[string]any{"args.page": "3"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.env.Tasks.Created() {
		if c.Replay == 1 && (c.Args["page"] != int64(3) || c.ReplayOf != f.id || c.ExecutionID != "ex1") {
			t.Fatalf("replayed unit %+v", c)
		}
	}
}

// TestReplayMessage: a message entry is published again on its topic,
// then marked; a patch is refused.
func TestReplayMessage(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	rp := &republisher{}
	ops := &Ops{Store: env.Memory, Tasks: env.Tasks, Bus: rp, Control: env.Control, Log: env.Log}
	if err := env.Memory.DLQPut(ctx, store.DLQEntry{MessageID: "m1", Kind: "message", Topic: "events", Unit: "{}"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Replay(ctx, "m1", map[string]any{"args.x": 1}); !errors.Is(err, ErrBadPatch) {
		t.Fatalf("patched message replay: %v", err)
	}
	if res, err := ops.Replay(ctx, "m1", nil); err != nil || res.Status != store.DLQReplayed || len(rp.topics) != 1 || rp.topics[0] != "events" {
		t.Fatalf("message replay: %+v %v, published %v", res, err, rp.topics)
	}
	if _, err := ops.Replay(ctx, "nope", nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown entry: %v", err)
	}
}
