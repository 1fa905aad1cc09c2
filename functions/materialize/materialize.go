// Package materialize is the materialize Cloud Function: triggered by the
// "materialize" subscription of the events topic (ordered by execution
// id), it projects every event into the Firestore read model
// (executions/{id}/events/{event_id}, idempotent by event id), assigning
// each its seq and prev_event_id in the execution's chain.
package materialize

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/types"
)

func init() { functions.CloudEvent("materialize", Materialize) }

// Materialize projects one event.
func Materialize(ctx context.Context, e event.Event) error {
	d, err := runtime.Get(ctx)
	if err != nil {
		return err
	}
	msg, err := runtime.DecodePush(e)
	if err != nil {
		return d.AckPermanent(ctx, "materialize", msg, "", "", err)
	}
	var ev types.Event
	if err := jsonx.Unmarshal(msg.Data, &ev); err != nil || ev.EventID == "" || ev.ExecutionID == "" {
		if err == nil {
			err = errMissingID
		}
		return d.AckPermanent(ctx, "materialize", msg, "", "", runtime.Permanent(err))
	}
	_, _, err = d.Store.EventAppend(ctx, ev)
	return err
}

type constErr string

func (c constErr) Error() string { return string(c) }

const errMissingID = constErr("event without event_id or execution_id")
