// Package route is the route Cloud Function: triggered by the "route"
// push subscription of the events topic, which delivers only batches
// marked route="1" (an execution's start request, a boundary nobody
// checkpointed yet), it applies them through the control plane
// (shared/router).
package route

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/functions/internal/push"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.CloudEvent("route", Route) }

// Needs is what route builds besides the base every function has
// (wiring.Needs; wiring.Get): the router (a control plane: tasks, results, granted credentials). No tools.
const Needs = wiring.NeedRouter

// Route handles one Pub/Sub push CloudEvent carrying a types.Batch. It
// returns an error (→ redelivery) only for transient failures; a message
// the engine did not sign (shared/sign), or one that does not decode, is
// acked and dead-lettered before anything is applied (push.Batches). The
// server.route spans of the transitions it applies join the execution's
// trace, flushed before the function returns.
var Route = push.Batches(push.Function{Name: "route", Needs: Needs, Flush: true}, route)

func route(ctx context.Context, d *wiring.Deps, p push.Delivery[types.Batch]) error {
	err := d.Router.Handle(ctx, p.Body)
	if err != nil {
		d.Log.WarnContext(ctx, "route failed, will be redelivered", "execution_id", p.Body.ExecutionID, "batch_id", p.Body.ID, "error", err.Error())
	}
	return err
}
