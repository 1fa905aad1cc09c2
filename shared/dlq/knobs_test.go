package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/control/controltest"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/tools/noop"
	"github.com/noetl/gcpengine/shared/worker"
)

// TestHoldSettingParksTaskFailures: a playbook that sets no
// executor.spec.dlq_hold follows the worker's HoldTaskFailures
// (NOETL_DLQ_HOLD): held, the exhausted task's entry is pending and the
// execution waits for a replay or a discard; not held, the entry is the
// record (done) and the step fails at once.
func TestHoldSettingParksTaskFailures(t *testing.T) {
	for _, hold := range []bool{true, false} {
		env := controltest.NewEnv()
		env.Control.Opts.TaskRetry = engine.Budget{MaxAttempts: 2, Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}
		api := &urlTool{}
		w := &worker.Worker{Control: env.Control, Store: env.Memory, Bus: env.Bus, Log: env.Log, Now: env.Clock.Now,
			Tools: tools.Registry{"http": api, "postgres": api, "noop": tools.Adapt(noop.New())}, FileTaskFailures: true, HoldTaskFailures: hold}
		if err := env.Launch(context.Background(), "ex1", "", strings.Replace(fetchPB, "executor: {spec: {dlq_hold: HOLD}}\n", "", 1), nil); err != nil {
			t.Fatal(err)
		}
		f := &taskFixture{env: env, w: w, api: api}
		f.run(t)
		es := f.entries(t)
		st := env.State(context.Background(), "ex1").State
		want, wantStatus := store.DLQDone, engine.ExecFailed
		if hold {
			want, wantStatus = store.DLQPending, engine.ExecRunning
		}
		if len(es) != 1 || es[0].Status != want || st.Status != wantStatus {
			t.Errorf("HoldTaskFailures=%v: entries %+v, execution %s; want one %s entry and the execution %s", hold, es, st.Status, want, wantStatus)
		}
	}
}
