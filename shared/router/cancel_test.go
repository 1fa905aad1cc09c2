package router_test

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/router"
	"github.com/noetl/gcpengine/shared/types"
)

// TestCancelFinishedByRouteAfterACrash replays defect 2 of README "The soak"
// (scripts/soak --executions 200 --seed 7: a canceled execution whose log
// had its request and no finish): the api's cancellation committed, and
// its instance died before publishing the transition's events
// (step.canceled, playbook.finished) — nothing redelivers an api call, so
// the log never ended. The cancellation is now published to route before
// it is applied: route repeats the stop, which replays the outbox; and a
// cancel retried by the client repairs it too.
func TestCancelFinishedByRouteAfterACrash(t *testing.T) {
	for _, via := range []string{"route", "retried cancel"} {
		t.Run(via, func(t *testing.T) {
			ctx := context.Background()
			env := controltest.NewEnv()
			b := requested(t, env, "ex1")
			r := &router.Router{Control: env.Control, Log: env.Log}
			if err := r.Handle(ctx, b); err != nil {
				t.Fatal(err)
			}
			api := &control.Control{Store: env.Memory, Bus: env.Bus, Tasks: env.Tasks, Now: env.Clock.Now, Source: "api", Log: env.Log}
			restore := faults.SetScript(func(point, _, _ string) string {
				if point == faults.APIAfterCommit {
					return "crash"
				}
				return ""
			})
			crashed := func() (crashed bool) {
				defer func() {
					if rec := recover(); rec != nil {
						if _, ok := rec.(faults.Crashed); !ok {
							panic(rec)
						}
						crashed = true
					}
				}()
				_, _ = api.Cancel(ctx, "ex1", "enough", "api")
				return false
			}()
			restore()
			if !crashed {
				t.Fatal("the cancellation did not crash after its commit")
			}
			if st := env.State(ctx, "ex1").State.Status; st != engine.ExecCanceled {
				t.Fatalf("execution %s after the crash, want canceled (committed)", st)
			}
			if n := len(env.Bus.EventsOf("ex1", types.EvPlaybookFinished)); n != 0 {
				t.Fatalf("%d playbook.finished before the repair; the crash should have lost it", n)
			}
			switch via {
			case "route":
				var trigger *types.Batch
				for _, b := range env.Bus.Batches() {
					if b.Route && b.ExecutionID == "ex1" && b.Events[0].EventType == types.EvCancelRequested {
						trigger = &b
					}
				}
				if trigger == nil {
					t.Fatal("the cancellation was not published to route before it was applied")
				}
				if err := r.Handle(ctx, *trigger); err != nil {
					t.Fatal(err)
				}
			case "retried cancel":
				if ended, err := api.Cancel(ctx, "ex1", "enough", "api"); err != nil || ended != engine.ExecCanceled {
					t.Fatalf("retried cancel: %q %v; want it reported ended canceled", ended, err)
				}
			}
			if n := len(env.Bus.EventsOf("ex1", types.EvPlaybookFinished)); n != 1 {
				t.Fatalf("%d playbook.finished events after the repair, want 1", n)
			}
			if n := len(env.Bus.EventsOf("ex1", types.EvStepCanceled)); n != 1 {
				t.Fatalf("%d step.canceled events, want 1 (the running step)", n)
			}
			log := env.Bus.Log("ex1")
			if log[0].EventType != types.EvExecutionRequested || log[len(log)-1].EventType != types.EvPlaybookFinished {
				t.Fatalf("log runs from %s to %s", log[0].EventType, log[len(log)-1].EventType)
			}
			if c := env.Bus.Conflicts(); len(c) > 0 {
				t.Fatalf("events published twice with different contents: %v", c)
			}
		})
	}
}
