package worker

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

const sideEffectingPython = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: loud, path: tests/loud}
workflow:
  - step: start
    tool:
      - boom: {kind: python, code: "raise Exception('x' * (12 << 20))"}
`

// TestOversizeErrorFailsOnceAndIsStored: a task whose error message is
// 12 MiB (a python exception of that size; the attempt record is a
// Firestore document of at most 1 MiB) fails its step at once, in one
// delivery, with the message cut to the worker's ErrorMax and a note
// naming its size, the setting and the URI of its full text, which
// reads back whole from the results tier. Before the bound, the attempt
// record could not be written and Cloud Tasks delivered the unit again
// and again.
func TestOversizeErrorFailsOnceAndIsStored(t *testing.T) {
	ctx := context.Background()
	huge := strings.Repeat("x", 12<<20)
	py := &fakeTool{run: func(context.Context, tools.Request, int) types.Outcome {
		return types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "python", Message: huge},
			Py: &types.PyOutcome{ExceptionType: strings.Repeat("E", 1<<20)}, Logs: strings.Repeat("l", 1<<20)}
	}}
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 1024}
	env := controltest.NewEnv()
	env.Control.Results = rs
	w := newWorker(env, py, nil)
	w.Results = rs
	w.ErrorMax = 4096
	start(t, env, "ex1", sideEffectingPython, nil)
	drain(t, env, w)
	if py.calls("boom") != 1 {
		t.Fatalf("the task ran %d times, want once", py.calls("boom"))
	}
	st := status(t, env, "ex1")
	if st.Status != engine.ExecFailed {
		t.Fatalf("execution %s, want failed", st.Status)
	}
	rec, err := env.Control.Store.AttemptGet(ctx, "ex1", (types.Command{ExecutionID: "ex1", Step: "start", StepRun: 1}).UnitKey(), "0.1.0")
	if err != nil {
		t.Fatalf("attempt record: %v", err)
	}
	msg := rec.Error.Message
	if len(msg) > 4096 || !strings.HasPrefix(msg, "xxxx") || !strings.Contains(msg, "12582912 bytes in all") || !strings.Contains(msg, ErrorMaxSetting) {
		t.Fatalf("recorded message of %d bytes: %.300q…%q", len(msg), msg, msg[max(0, len(msg)-300):])
	}
	if len(rec.Py.ExceptionType) > types.ExceptionTypeMax {
		t.Fatalf("exception type of %d bytes recorded", len(rec.Py.ExceptionType))
	}
	uri := regexp.MustCompile(`noetl://[^ ;\]]+`).FindString(msg)
	if uri == "" {
		t.Fatalf("no URI of the full text in %q", msg[len(msg)-300:])
	}
	ctx = results.WithReader(ctx, results.Reader{Execution: "ex1"})
	ref, err := rs.ResolveURN(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	full, err := rs.Resolve(ctx, ref)
	if err != nil || full != huge {
		t.Fatalf("the stored full text: %v, %d bytes", err, len(full.(string)))
	}
	for _, e := range eventsOf(env, "ex1", types.EvTaskAttemptFailed) {
		ap, err := history.Decode[history.TaskAttempt](e)
		if err != nil {
			t.Fatal(err)
		}
		if ap.Error == nil || len(ap.Error.Message) > 4096 || len(ap.Logs) > 4096+200 {
			t.Fatalf("attempt event: error %d bytes, logs %d bytes", len(ap.Error.Message), len(ap.Logs))
		}
	}
}
