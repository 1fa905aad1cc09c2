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
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.CloudEvent("dispatch", Dispatch) }

// Needs is what dispatch builds besides the base every function has
// (wiring.Needs; wiring.Get): the Cloud Tasks dispatcher (and the results tier it keeps large bodies in). No tools, no control plane, no credential store.
const Needs = wiring.NeedDispatcher

// Dispatch creates the Cloud Task of one command (signed by the engine:
// an unsigned or forged message is acked and dead-lettered).
func Dispatch(ctx context.Context, e event.Event) error {
	req := meter.ActivityOf("dispatch").Begin()
	d, err := wiring.Get(ctx, Needs)
	if err != nil {
		return err
	}
	msg, err := wiring.DecodePush(e)
	if err != nil {
		return d.AckPermanent(ctx, "dispatch", msg, "", "", err)
	}
	// A command the engine did not sign would become a signed Cloud Task
	// here: it is refused (acked and dead-lettered) like any forgery.
	cmd, err := wiring.DecodeCommand(msg.Data, msg.Attributes[sign.Attribute], d.Signer)
	if err != nil {
		return d.AckPermanent(ctx, "dispatch", msg, "", "", err)
	}
	m := meter.For(ctx, cmd.ExecutionID)
	defer func() {
		m.Add(meter.Invocations("dispatch"), 1)
		m.Add(meter.Milliseconds("dispatch"), req.End())
	}()
	m.Add(meter.PubSubDelivery, 1)
	m.Add(meter.PubSubDeliveryBytes, meter.Billable(len(msg.Data)))
	ctx = telemetry.Execution{ID: cmd.ExecutionID}.Context(telemetry.Extract(ctx, msg.Attributes))
	if cmd.TraceParent == "" {
		cmd.TraceParent = telemetry.TraceParent(ctx)
	}
	created, err := d.Dispatcher.TaskCreate(ctx, cmd, time.Now())
	if err != nil {
		// Redelivered, except the last delivery, which is filed in the DLQ.
		return d.AckPermanent(ctx, "dispatch", msg, cmd.ExecutionID, cmd.Step, err)
	}
	d.Log.DebugContext(ctx, "dispatched", "execution_id", cmd.ExecutionID, "step", cmd.Step, "task", cmd.TaskName(), "created", created)
	return nil
}
