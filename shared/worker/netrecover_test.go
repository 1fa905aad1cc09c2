package worker

import (
	"context"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/faults"
)

const chainEffect = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: chaineffect, path: tests/chaineffect}
workflow:
  - step: s1
    tool: {kind: noop}
    next: {arcs: [{step: s2}]}
  - step: s2
    tool:
      - send: {kind: python, code: "result = 1"}
    next: {arcs: [{step: s3}]}
  - step: s3
    tool: {kind: noop}
`

// TestSafetyNetAdoptsTheContinuedRun: a side-effecting unit run inline
// (step continuation) whose run ended after its task's side effect but
// before its step's end (a crash, or an error that expires its lease at
// once) is finished by its safety net's delivery, a first delivery of
// its Cloud Task. The unit may have run before, so that delivery adopts
// the attempt's durable outcome (the side-effect barrier) instead of
// running the task a second time.
func TestSafetyNetAdoptsTheContinuedRun(t *testing.T) {
	for _, action := range []string{"crash", "error"} {
		t.Run(action, func(t *testing.T) {
			py := &fakeTool{}
			env, w := setup(t, py, chainEffect, nil)
			w.ContinueUnits, w.ContinueBudget = 8, time.Minute
			t.Cleanup(faults.SetScript(func(point, _, step string) string {
				if point == faults.ExecuteAfterTool && step == "s2" {
					return action
				}
				return ""
			}))
			cmd := take(t, env)
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(faults.Crashed); !ok {
							panic(r)
						}
					}
				}()
				_ = w.Run(context.Background(), cmd, Delivery{TaskName: cmd.TaskName()})
			}()
			faults.SetScript(nil)
			if n := py.calls("send"); n != 1 {
				t.Fatalf("the continued unit's task ran %d times, want 1 (the fault after it)", n)
			}
			// The net is a first delivery of the unit's task, due when the
			// inline run's lease has expired. After a crash the
			// invocation's own task comes again first: its replay of the
			// outbox creates the net (continue.go).
			w2 := otherInstance(env, w)
			if action == "crash" {
				deliver(t, w2, cmd)
			}
			drain(t, env, w2)
			wantOK(t, env)
			if n := py.calls("send"); n != 1 {
				t.Fatalf("the side-effecting task ran %d times, want once (the safety net's delivery adopts its recorded outcome)", n)
			}
			if !adopted(env) {
				t.Fatal("no attempt adopted the recorded outcome")
			}
		})
	}
}
