// Package dispatch is the dispatch Cloud Function: triggered by the
// "dispatch" push subscription of the commands topic, it turns each command
// into one Cloud Task named by the command's idempotency key
// (shared/tasks). Units reach the commands topic when a transition fans out
// to more of them than it creates itself (control.DefaultBulkFanOut), and
// from replays; a step's next unit never goes through here.
package dispatch

import (
	"context"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/functions/internal/push"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.CloudEvent("dispatch", Dispatch) }

// Needs is what dispatch builds besides the base every function has
// (wiring.Needs; wiring.Get): the Cloud Tasks dispatcher (and the results tier it keeps large bodies in). No tools, no control plane, no credential store.
const Needs = wiring.NeedDispatcher

// Dispatch creates the Cloud Task of one command (signed by the engine:
// an unsigned or forged message is acked and dead-lettered, push.Commands).
// A failed creation is redelivered, except the last delivery, which is
// filed in the DLQ.
var Dispatch = push.Commands(push.Function{Name: "dispatch", Needs: Needs}, dispatch)

func dispatch(ctx context.Context, d *wiring.Deps, p push.Delivery[types.Command]) error {
	cmd := p.Body
	if cmd.TraceParent == "" {
		cmd.TraceParent = telemetry.TraceParent(ctx)
	}
	created, err := d.Tasks().TaskCreate(ctx, cmd, time.Now())
	if err != nil {
		return err
	}
	d.Log.DebugContext(ctx, "dispatched", "execution_id", cmd.ExecutionID, "step", cmd.Step, "task", cmd.TaskName(), "created", created)
	return nil
}
