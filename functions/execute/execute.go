// Package execute is the execute Cloud Function: an HTTP function called
// by Cloud Tasks with one command as the body. It runs the unit of work
// (shared/worker) and answers 200 when the unit is done or handed off, 503
// to have Cloud Tasks redeliver it later (lease held, state behind), and
// 500 on infrastructure errors (also redelivered).
package execute

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/worker"
)

func init() { functions.HTTP("execute", Execute) }

// Execute handles one Cloud Tasks delivery.
func Execute(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, err := runtime.Get(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var cmd types.Command
	if err := jsonx.Unmarshal(body, &cmd); err != nil || cmd.ExecutionID == "" {
		// A body that never decodes is acked (200) and dead-lettered.
		_ = d.AckPermanent(ctx, "execute", runtime.PushMessage{Data: body, MessageID: r.Header.Get("X-CloudTasks-TaskName")}, "", "", runtime.Permanent(errors.New("undecodable command")))
		w.WriteHeader(http.StatusOK)
		return
	}
	normalize(&cmd)
	ctx = telemetry.WithTraceParent(ctx, r.Header.Get("traceparent"))
	ctx, span := telemetry.Tracer.Start(ctx, "execute "+cmd.Step)
	defer span.End()
	err = d.Worker.Run(ctx, cmd)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true})
	case errors.Is(err, worker.ErrRetryLater):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	default:
		d.Log.ErrorContext(ctx, "execute failed, Cloud Tasks will retry", "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", err.Error())
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func normalize(c *types.Command) {
	c.Item = jsonx.Normalize(c.Item)
	c.Prev = jsonx.Normalize(c.Prev)
	if c.Args != nil {
		c.Args = jsonx.Normalize(c.Args).(map[string]any)
	}
	if c.Iter != nil {
		c.Iter = jsonx.Normalize(c.Iter).(map[string]any)
	}
	if c.CtxPatch != nil {
		c.CtxPatch = jsonx.Normalize(c.CtxPatch).(map[string]any)
	}
	if c.TaskResults != nil {
		c.TaskResults = jsonx.Normalize(c.TaskResults).(map[string]any)
	}
}
