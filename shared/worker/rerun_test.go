package worker

import (
	"context"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// TestRerunAfterLostAckKeepsItsEvents: a delivery that handed off (a
// delayed retry) published its events, then its ack was lost (the host
// died) and Cloud Tasks redelivered it; the re-run finishes the iteration
// and its events — the iteration's end among them — reach the log even
// though the first run's batch was already projected (found by the soak:
// both runs named their first batch alike, so the re-run's was dropped).
func TestRerunAfterLostAckKeepsItsEvents(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: rerun, path: tests/rerun}
workload:
  items: [a]
workflow:
  - step: start
    loop:
      in: "{{ items }}"
      iterator: item
    tool:
      - store: {kind: python, code: "store()"}
      - fetch:
          kind: http
          method: GET
          url: "http://api.test/{{ item }}"
          spec:
            policy:
              rules:
                - when: "{{ outcome.status == 'error' }}"
                  then: {do: retry, attempts: 5, delay: 2}
`
	ctx := context.Background()
	env := controltest.NewEnv()
	py := &fakeTool{}
	api := &fakeTool{run: func(ctx context.Context, req tools.Request, n int) types.Outcome {
		if n == 1 {
			return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "server_error", Message: "HTTP 503", Retryable: true}}
		}
		return ok(req, n)
	}}
	w := newWorker(env, py, api)
	start(t, env, "ex1", src, nil)
	first := take(t, env)
	if first.Iteration == nil {
		t.Fatalf("first unit %+v is not an iteration", first)
	}
	if err := w.Run(ctx, first, Delivery{TaskName: first.TaskName()}); err != nil {
		t.Fatal(err)
	}
	// The ack was lost: the same delivery again, on another instance.
	other := otherInstance(env, w)
	if err := other.Run(ctx, first, Delivery{TaskName: first.TaskName(), RetryCount: 1}); err != nil {
		t.Fatal(err)
	}
	if n := py.calls("store"); n != 1 {
		t.Fatalf("store ran %d times, want 1 (adopted on the re-run)", n)
	}
	var done bool
	var seen []types.EventType
	for _, e := range env.Bus.Log("ex1") {
		seen = append(seen, e.EventType)
		if e.EventType == types.EvLoopIterationDone {
			done = true
		}
	}
	if !done {
		t.Fatalf("the re-run's loop.iteration.done is not in the log: %v", seen)
	}
}
