// Package dispatch is the dispatch Cloud Function: triggered by the
// "dispatch" subscription of the commands topic, it turns each command into
// one Cloud Task named by the command's idempotency key (shared/tasks).
package dispatch

import (
	"context"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

func init() { functions.CloudEvent("dispatch", Dispatch) }

// Dispatch creates the Cloud Task of one command.
func Dispatch(ctx context.Context, e event.Event) error {
	d, err := runtime.Get(ctx)
	if err != nil {
		return err
	}
	msg, err := runtime.DecodePush(e)
	if err != nil {
		return d.AckPermanent(ctx, "dispatch", msg, "", "", err)
	}
	var cmd types.Command
	if err := jsonx.Unmarshal(msg.Data, &cmd); err != nil || cmd.ExecutionID == "" {
		if err == nil {
			err = errBad
		}
		return d.AckPermanent(ctx, "dispatch", msg, "", "", runtime.Permanent(err))
	}
	ctx = telemetry.Extract(ctx, msg.Attributes)
	ctx, span := telemetry.Tracer.Start(ctx, "dispatch "+cmd.Step)
	defer span.End()
	if cmd.TraceParent == "" {
		cmd.TraceParent = telemetry.TraceParent(ctx)
	}
	created, err := d.Dispatcher.Dispatch(ctx, cmd, time.Now())
	if err != nil {
		return err
	}
	d.Log.DebugContext(ctx, "dispatched", "execution_id", cmd.ExecutionID, "step", cmd.Step, "task", cmd.TaskName(), "created", created)
	return nil
}

type constErr string

func (c constErr) Error() string { return string(c) }

const errBad = constErr("command without execution_id")
