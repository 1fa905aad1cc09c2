package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// setup starts execution ex1 of src (workload wl) on a fresh env and
// returns the env and a worker whose python tasks run on py (nil: a plain
// fakeTool).
func setup(t *testing.T, py tools.Tool, src string, wl map[string]any) (*controltest.Env, *Worker) {
	t.Helper()
	env := controltest.NewEnv()
	w := newWorker(env, py, nil)
	start(t, env, "ex1", src, wl)
	return env, w
}

// deliver runs cmd on w as its first delivery and fails the test on an
// error.
func deliver(t *testing.T, w *Worker, cmd types.Command) {
	t.Helper()
	if err := w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
		t.Fatal(err)
	}
}

// wantOK fails the test unless execution ex1 ended ok.
func wantOK(t *testing.T, env *controltest.Env) {
	t.Helper()
	if st := status(t, env, "ex1"); st.Status != engine.ExecOK {
		t.Fatalf("execution %s, want ok", st.Status)
	}
}

// wantReleased fails the test unless the lease of unit (of ex1) is
// released; when names the moment in the message.
func wantReleased(t *testing.T, env *controltest.Env, unit types.Command, when string) {
	t.Helper()
	if _, _, err := env.Memory.LeaseGet(context.Background(), "ex1", unit.UnitKey()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease %s: %v, want released", when, err)
	}
}

// holdLease gives the lease of unit (of ex1) to holder from T0 for ttl.
func holdLease(t *testing.T, env *controltest.Env, unit types.Command, holder string, ttl time.Duration) {
	t.Helper()
	if err := env.Memory.LeaseAcquire(context.Background(), store.LeaseAcquireParams{ExecutionID: "ex1", Unit: unit.UnitKey(), Holder: holder, TTL: ttl, Now: controltest.T0}); err != nil {
		t.Fatal(err)
	}
}

// pending returns the pending Cloud Tasks that match.
func pending(env *controltest.Env, match func(types.Command) bool) []types.Command {
	var out []types.Command
	for _, c := range env.Tasks.Pending() {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

// isLeaseCheck matches the watchdogs.
func isLeaseCheck(c types.Command) bool { return c.Kind == types.CmdLeaseCheck }

// failCheckpoints makes every ExecutionCheckpoint of env's Control fail
// with errDown (env.Control.Store = env.Memory undoes it).
func failCheckpoints(env *controltest.Env) {
	env.Control.Store = &controltest.FlakyStore{Store: env.Memory, Fail: func(op, id string) error {
		if op == "ExecutionCheckpoint" {
			return errDown
		}
		return nil
	}}
}

// adopted reports whether a task.attempt.done of ex1 adopted a recorded
// outcome.
func adopted(env *controltest.Env) bool {
	for _, e := range eventsOf(env, "ex1", types.EvTaskAttemptDone) {
		if e.Payload["adopted"] == true {
			return true
		}
	}
	return false
}

// gated returns a python fake whose tasks wait at g, then end ok.
func gated(g *gate) *fakeTool {
	return &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		g.wait(ctx)
		return ok(req, n)
	}}
}

// mustCrash delivers cmd to w and fails the test unless the delivery
// crashes (an armed fault, runCrashing); where names the fault for the
// failure message.
func mustCrash(t *testing.T, w *Worker, cmd types.Command, where string) {
	t.Helper()
	if crashed, _ := runCrashing(func() error { return w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()}) }); !crashed {
		t.Fatalf("no crash at %s", where)
	}
}

// opsSince returns the operations execution ex1 metered on m, with those
// the bus drained into the batches published after the first before
// ones (the bus moves a unit's counts into its batches).
func opsSince(env *controltest.Env, m *meter.Meter, before int) map[string]float64 {
	ops := m.Drain("ex1")
	for _, b := range env.Bus.Batches()[before:] {
		ops = meter.Merge(ops, b.Ops)
	}
	return ops
}
