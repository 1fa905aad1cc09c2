package router_test

import (
	"context"
	"errors"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/router"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

const chain = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: chain, path: tests/chain}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs:
        - step: use
  - step: use
    tool: {kind: noop}
`

// requested creates an execution (as the api does) without starting it
// and returns the batch route receives.
func requested(t *testing.T, env *controltest.Env, id string) types.Batch {
	t.Helper()
	pb, err := dsl.Load([]byte(chain), "chain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := launch.Start(context.Background(), env.Memory, env.Bus, launch.Params{Playbook: pb, Source: []byte(chain), ExecutionID: id, Now: env.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	bs := env.Bus.Batches()
	b := bs[len(bs)-1]
	if !b.Route || b.Events[0].EventType != types.EvExecutionRequested {
		t.Fatalf("launch published %+v", b)
	}
	return b
}

func boundary(cmd types.Command, typ types.EventType) types.Event {
	ev := types.NewEvent(typ, cmd.ExecutionID, "execute", controltest.T0, cmd.UnitKey())
	ev.Step, ev.StepRun, ev.Clock = cmd.Step, cmd.StepRun, cmd.Clock+1
	ev.Payload = map[string]any{"result": "r"}
	return ev
}

func TestHandle(t *testing.T) {
	ctx := context.Background()
	env := controltest.NewEnv()
	r := &router.Router{Control: env.Control, Log: env.Log}
	status := func(id string) types.Status { return env.State(ctx, id).State.Status }

	// The start request applies once; a redelivery changes nothing.
	req := requested(t, env, "ex1")
	if status("ex1") != engine.ExecRequested {
		t.Fatal("launch started the execution by itself")
	}
	for i := range 2 {
		if err := r.Handle(ctx, req); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if status("ex1") != engine.ExecRunning {
		t.Fatalf("status %s after the request, want running", status("ex1"))
	}
	if n := len(env.Tasks.Created()); n != 1 {
		t.Fatalf("%d units after a redelivered request, want 1", n)
	}
	start := env.Tasks.Created()[0]
	v := env.State(ctx, "ex1").State.Version

	cases := []struct {
		name        string
		batch       types.Batch
		wantVersion int64
		wantUnits   int
	}{
		{"events route does not handle are ignored", types.Batch{ID: "b1", ExecutionID: "ex1", Events: []types.Event{
			boundary(start, types.EvTaskDone), boundary(start, types.EvStepStarted),
		}}, v, 1},
		{"a boundary of another execution in the batch is ignored", types.Batch{ID: "b2", ExecutionID: "other", Events: []types.Event{
			boundary(start, types.EvStepDone),
		}}, v, 1},
		{"a boundary applies", types.Batch{ID: "b3", ExecutionID: "ex1", Route: true, Events: []types.Event{
			boundary(start, types.EvStepStarted), boundary(start, types.EvStepDone),
		}}, v + 1, 2},
		{"the same boundary again applies nothing", types.Batch{ID: "b3", ExecutionID: "ex1", Route: true, Events: []types.Event{
			boundary(start, types.EvStepDone),
		}}, v + 1, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := r.Handle(ctx, c.batch); err != nil {
				t.Fatal(err)
			}
			if got := env.State(ctx, "ex1").State.Version; got != c.wantVersion {
				t.Fatalf("version %d, want %d", got, c.wantVersion)
			}
			if got := len(env.Tasks.Created()); got != c.wantUnits {
				t.Fatalf("%d units, want %d", got, c.wantUnits)
			}
		})
	}
	if st := env.State(ctx, "ex1").State; st.Steps["start"].Status != types.StatusOK || st.Steps["use"] == nil {
		t.Fatalf("steps %v after the boundary", st.Steps)
	}

	t.Run("events of unknown executions are dropped", func(t *testing.T) {
		ghost := types.Command{ExecutionID: "ghost", Step: "start", StepRun: 1}
		b := types.Batch{ID: "g", ExecutionID: "ghost", Events: []types.Event{boundary(ghost, types.EvStepDone)}}
		if err := r.Handle(ctx, b); err != nil {
			t.Fatalf("unknown execution: %v, want nil (ack)", err)
		}
	})

	t.Run("a store failure is returned (the message is redelivered)", func(t *testing.T) {
		down := errs.New(errs.Unavailable, "firestore down")
		env.Control.Store = &controltest.FlakyStore{Store: env.Memory, Fail: func(op, id string) error { return down }}
		defer func() { env.Control.Store = env.Memory }()
		use := env.Tasks.Created()[1]
		err := r.Handle(ctx, types.Batch{ID: "u", ExecutionID: "ex1", Events: []types.Event{boundary(use, types.EvStepDone)}})
		if !errors.Is(err, down) || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Handle: %v, want the store's error", err)
		}
	})
}
