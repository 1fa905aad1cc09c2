package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/noetl/gcpengine/shared/store"
)

// CancelRequest is the optional body of POST /executions/{id}/cancel.
type CancelRequest struct {
	// Reason is recorded in the cancellation event.
	Reason string `json:"reason"`
}

// cancel handles POST /executions/{id}/cancel (NoETL observability spec §8.5): the
// execution is canceled at once (status canceled), nothing new is
// dispatched, its pending Cloud Tasks are deleted, running units stop at
// their next task boundary, and its child executions are canceled too.
// 202 {"execution_id", "status": "canceled"}; 404 unknown; 409 when it had
// already ended (with its status). The work is control.Cancel's, which
// publishes the cancellation to route before applying it, so that a crash
// of this handler never leaves a canceled execution's log unfinished.
func cancel(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	var req CancelRequest
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(b) > 0 && !decodeJSON(w, b, &req) {
		return
	}
	if req.Reason == "" {
		req.Reason = "requested through the API"
	}
	rec, ok := execution(ctx, w, d, id)
	if !ok || !owned(w, r, rec) {
		return
	}
	ended, err := d.Control.Cancel(ctx, id, req.Reason, "api")
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "execution " + id + " not found"})
		return
	}
	if err != nil {
		unavailable(w, err)
		return
	}
	if ended != "" {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "execution " + id + " already ended", "status": ended})
		return
	}
	d.Log.InfoContext(ctx, "execution canceled", "execution_id", id, "reason", req.Reason)
	writeJSON(w, http.StatusAccepted, map[string]any{"execution_id": id, "status": "canceled"})
}
