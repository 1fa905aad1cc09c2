// Package materialize is the materialize Cloud Function: triggered by the
// "materialize" push subscription of the events topic, it projects every
// event batch into the Firestore read model (one document per batch,
// executions/{id}/batches/{batch_id}; the first copy wins). Concurrent
// batches of one execution reach it merged into one message by the
// publisher (bus.Coalescer), so a loop's items cost one document per
// group of items, not one per item. It adds its own
// operations (the delivery, the write, its invocation) to the batch's
// operation counts, so the price of the projection is known too. Order of
// arrival does not matter: the events API orders events by their Lamport
// clocks (types.EventsInOrder).
package materialize

import (
	"context"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/functions/internal/push"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.CloudEvent("materialize", Materialize) }

// Needs is what materialize builds besides the base every function has
// (wiring.Needs; wiring.Get): nothing: the base (the store it projects
// into, the signer that verifies batches) is all. No tasks, results,
// credentials, control plane or tools.
const Needs wiring.Needs = 0

// Materialize projects one batch. A message the engine did not sign
// (shared/sign) or that does not decode is acked and dead-lettered, never
// projected (push.Batches). The projection's own cost travels in the
// document it writes (push.Function.OwnOps: the store's own count goes
// to a throw-away meter, so that nothing is left pending and flushed as
// another batch for this execution). A failed write is redelivered,
// except the last delivery, which is filed in the DLQ.
var Materialize = push.Batches(push.Function{Name: "materialize", Needs: Needs, OwnOps: true}, materialize)

func materialize(ctx context.Context, d *wiring.Deps, p push.Delivery[types.Batch]) error {
	b := p.Body
	if err := faults.Inject(faults.MaterializeBeforeWrite, b.ExecutionID); err != nil {
		return err
	}
	// The write follows; its time (about a millisecond on the emulator)
	// is estimated, since the document must hold the count before it is
	// written.
	// A write that has not returned in 10 s is abandoned and the delivery
	// retried: the Firestore emulator can stall one commit for a minute
	// (seen after large executions) while a fresh one goes through.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := d.Store.BatchPut(wctx, withOwnOps(b, len(p.Msg.Data), p.Request.End()+1))
	if err != nil {
		d.Log.WarnContext(ctx, "materialize: storing the batch failed (the delivery is retried)", "execution_id", b.ExecutionID,
			"batch_id", b.ID, "events", len(b.Events), "bytes", len(p.Msg.Data), "error", err.Error())
	}
	return err
}

// withOwnOps adds materialize's operations for this batch to its counts:
// the push delivery (billable bytes), the invocation, its share of
// instance time (ms) and the one document write that follows.
func withOwnOps(b types.Batch, size int, ms float64) types.Batch {
	ops := map[string]float64{
		meter.PubSubDelivery:              1,
		meter.PubSubDeliveryBytes:         meter.Billable(size),
		meter.Invocations("materialize"):  1,
		meter.Milliseconds("materialize"): ms,
		meter.FirestoreWrite:              1,
	}
	b.Ops = meter.Merge(meter.Merge(map[string]float64{}, b.Ops), ops)
	return b
}
