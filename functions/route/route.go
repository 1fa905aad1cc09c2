// Package route is the route Cloud Function: triggered by the "route"
// subscription of the events topic (Eventarc Pub/Sub CloudEvents), it
// folds each boundary event into the execution state and publishes the
// resulting events and commands (shared/router).
package route

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/router"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

func init() { functions.CloudEvent("route", Route) }

// Route handles one Pub/Sub push CloudEvent carrying a types.Event. It
// returns an error (→ redelivery) only for transient failures.
func Route(ctx context.Context, e event.Event) error {
	d, err := runtime.Get(ctx)
	if err != nil {
		return err
	}
	msg, err := runtime.DecodePush(e)
	if err != nil {
		return d.AckPermanent(ctx, "route", msg, "", "", err)
	}
	if !router.Handles(msg.Attributes["event_type"]) && msg.Attributes["event_type"] != "" {
		return nil
	}
	var ev types.Event
	if err := jsonx.Unmarshal(msg.Data, &ev); err != nil {
		return d.AckPermanent(ctx, "route", msg, "", "", runtime.Permanent(err))
	}
	ev.Payload = jsonx.Normalize(ev.Payload).(map[string]any)
	ctx = telemetry.Extract(ctx, msg.Attributes)
	ctx, span := telemetry.Tracer.Start(ctx, "route "+ev.EventType)
	defer span.End()
	err = d.Router.Handle(ctx, ev)
	if err != nil {
		d.Log.WarnContext(ctx, "route failed, will be redelivered", "execution_id", ev.ExecutionID, "event_type", ev.EventType, "step", ev.Step, "error", err.Error())
	}
	return d.AckPermanent(ctx, "route", msg, ev.ExecutionID, ev.Step, err)
}
