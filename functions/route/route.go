// Package route is the route Cloud Function: triggered by the "route"
// push subscription of the events topic, which delivers only batches
// marked route="1" (an execution's start request, a boundary nobody
// checkpointed yet), it applies them through the control plane
// (shared/router).
package route

import (
	"context"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.CloudEvent("route", Route) }

// Needs is what route builds besides the base every function has
// (wiring.Needs; wiring.Get): the router (a control plane: tasks, results, granted credentials). No tools.
const Needs = wiring.NeedRouter

// Route handles one Pub/Sub push CloudEvent carrying a types.Batch. It
// returns an error (→ redelivery) only for transient failures; a message
// the engine did not sign (shared/sign), or one that does not decode, is
// acked and dead-lettered before anything is applied.
func Route(ctx context.Context, e event.Event) error {
	req := meter.ActivityOf("route").Begin()
	d, err := wiring.Get(ctx, Needs)
	if err != nil {
		return err
	}
	msg, err := wiring.DecodePush(e)
	if err != nil {
		return d.AckPermanent(ctx, "route", msg, "", "", err)
	}
	b, err := wiring.DecodeBatch(msg, d.Signer)
	if err != nil {
		return d.AckPermanent(ctx, "route", msg, "", "", err)
	}
	m := meter.For(ctx, b.ExecutionID)
	defer func() {
		m.Add(meter.Invocations("route"), 1)
		m.Add(meter.Milliseconds("route"), req.End())
	}()
	m.Add(meter.PubSubDelivery, 1)
	m.Add(meter.PubSubDeliveryBytes, meter.Billable(len(msg.Data)))
	// The execution's trace (traceparent attribute, else its root's ids):
	// the server.route spans of the transitions route applies join it.
	ctx = telemetry.Execution{ID: b.ExecutionID}.Context(telemetry.Extract(ctx, msg.Attributes))
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = telemetry.Flush(fctx)
		cancel()
	}()
	err = d.Router.Handle(ctx, b)
	if err != nil {
		d.Log.WarnContext(ctx, "route failed, will be redelivered", "execution_id", b.ExecutionID, "batch_id", b.ID, "error", err.Error())
	}
	return d.AckPermanent(ctx, "route", msg, b.ExecutionID, "", err)
}
