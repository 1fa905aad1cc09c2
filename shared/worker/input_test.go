package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// An attempt's event carries its rendered input (args and config) for the
// console's step inspector: masked like every event (a secret-named
// workload value never appears), the script's code left out with its
// size, and cut at InputInEvent with a marker.
func TestAttemptEventCarriesItsRenderedInput(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: input, path: tests/input}
workflow:
  - step: start
    tool:
      - small:
          kind: python
          args: {n: "{{ workload.n + 1 }}", token: "{{ workload.api_token }}"}
          code: "result = n"
      - large:
          kind: python
          args: {blob: "{{ workload.blob }}"}
          code: "result = 1"
`
	secret := "s3cr3t-value-for-input-test"
	env, w := setup(t, &fakeTool{}, src, map[string]any{"n": int64(2), "api_token": secret, "blob": strings.Repeat("z", 5000)})
	drain(t, env, w)
	wantOK(t, env)
	inputs := map[string]string{}
	for _, ev := range eventsOf(env, "ex1", types.EvTaskAttemptDone) {
		p, err := history.Decode[history.TaskAttempt](ev)
		if err != nil {
			t.Fatal(err)
		}
		inputs[ev.Task] = p.Input
	}
	small := inputs["small"]
	for _, want := range []string{`"n":3`, `"code":"(10 bytes: see the step's source)"`} {
		if !strings.Contains(small, want) {
			t.Errorf("small's input %s lacks %s", small, want)
		}
	}
	if strings.Contains(small, secret) || !strings.Contains(small, `"token":"`) {
		t.Errorf("small's input %s: the secret-named value is not masked", small)
	}
	large := inputs["large"]
	if !strings.HasSuffix(large, "bytes)") || !strings.Contains(large, "…(cut at ") || len(large) > InputInEvent+64 {
		t.Errorf("large's input (%d bytes) is not cut at %d with a marker: ...%s", len(large), InputInEvent, large[max(0, len(large)-80):])
	}
}

// A log longer than an event carries: the event keeps its tail, and a
// reference to the whole log (masked like the tail) stored in the results
// tier for the attempt.
func TestLongLogIsStoredWhole(t *testing.T) {
	const src = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: logs, path: tests/logs}
workflow:
  - step: start
    tool: {kind: python, code: "print(...)"}
`
	secret := "s3cr3t-in-the-log-77"
	var whole strings.Builder
	for i := range 200 {
		fmt.Fprintf(&whole, "line %03d %s\n", i, strings.Repeat("y", 40))
	}
	whole.WriteString("token " + secret + "\n")
	py := &fakeTool{run: func(_ context.Context, req tools.Request, n int) types.Outcome {
		return types.Outcome{Status: types.StatusOK, Result: 1, Logs: whole.String()}
	}}
	env := controltest.NewEnv()
	w := newWorker(env, py, nil)
	off := &controltest.Offloader{InlineMax: 1 << 20}
	w.Results = off
	start(t, env, "ex1", src, map[string]any{"api_token": secret})
	drain(t, env, w)
	wantOK(t, env)
	evs := eventsOf(env, "ex1", types.EvTaskAttemptDone)
	if len(evs) != 1 {
		t.Fatalf("%d attempts", len(evs))
	}
	p, err := history.Decode[history.TaskAttempt](evs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Logs) != logsInEvent || !strings.HasSuffix(p.Logs, "token ***\n") || strings.Contains(p.Logs, "line 000") {
		t.Errorf("the event's logs (%d bytes) are not the masked tail", len(p.Logs))
	}
	if p.LogsRef == nil {
		t.Fatal("no reference to the whole log")
	}
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "ex1"})
	v, err := off.Resolve(ctx, p.LogsRef)
	full, _ := v.(string)
	if err != nil || !strings.HasPrefix(full, "line 000 ") || !strings.HasSuffix(full, "token ***\n") || strings.Contains(full, secret) {
		t.Errorf("the stored log (%d bytes, %v) is not the whole masked log", len(full), err)
	}
}
