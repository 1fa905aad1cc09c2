// Package router is the route function's logic: it applies the events that
// do not come from a finishing unit of work — an execution's start request,
// a cancellation (control.Stop) and any step boundary (step.done, step.failed, loop.done) that reached
// the log without being checkpointed by execute — through the control
// plane (shared/control: the pure engine under one Firestore transaction,
// then the outbox). The route subscription receives only batches marked
// route="1" (types.Batch.Route), so route is not on a step's path.
//
// Idempotency: a start or a boundary applies once (the engine guards each
// by execution status and step run); a redelivery that does not apply
// replays the outbox the first application may have left behind.
package router

import (
	"context"
	"errors"
	"log/slog"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Router handles event batches for the route function.
type Router struct {
	Control *control.Control
	Log     *slog.Logger
}

// Handles reports whether route acts on an event type.
func Handles(t types.EventType) bool {
	return t == types.EvExecutionRequested || t == types.EvCancelRequested || t.IsBoundary()
}

// Handle applies the batch's start and boundary events in order. A nil
// return means the batch may be acked; events of unknown executions are
// dropped with a warning.
func (r *Router) Handle(ctx context.Context, b types.Batch) error {
	for _, ev := range b.Events {
		if !Handles(ev.EventType) || ev.ExecutionID != b.ExecutionID {
			continue
		}
		if ev.EventType == types.EvCancelRequested {
			// The api applies a cancellation itself and publishes it here
			// first: whatever it did not finish (its transition's outbox,
			// the cleanup) is done here, under Pub/Sub redelivery.
			_, err := r.Control.Stop(ctx, ev.ExecutionID, ev)
			if errors.Is(err, store.ErrNotFound) {
				r.Log.Warn("cancellation of an unknown execution dropped", "execution_id", ev.ExecutionID)
				continue
			}
			if err != nil {
				return err
			}
			continue
		}
		p := control.ApplyParams{ExecutionID: ev.ExecutionID, Event: ev}
		if ev.EventType == types.EvExecutionRequested {
			p.OutboxID = ev.EventID
		} else {
			p.OutboxID = control.EndOutboxID(ev.ExecutionID, ev.Step, ev.StepRun)
		}
		_, err := r.Control.Apply(ctx, p)
		if errors.Is(err, store.ErrNotFound) {
			r.Log.Warn("event for unknown execution dropped", "execution_id", ev.ExecutionID, "event_type", string(ev.EventType))
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}
