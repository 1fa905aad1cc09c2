package api

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/store"
)

// CancelRequest is the optional body of POST /executions/{id}/cancel.
type CancelRequest struct {
	// Reason is recorded in the cancellation event.
	Reason string `json:"reason"`
}

// cancel handles POST /executions/{id}/cancel (seed 000 §8.5): the
// execution is canceled at once (status canceled), nothing new is
// dispatched, its pending Cloud Tasks are deleted, running units stop at
// their next task boundary, and its child executions are canceled too.
// 202 {"execution_id", "status": "canceled"}; 404 unknown; 409 when it had
// already ended (with its status).
func cancel(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	d, err := runtime.Get(ctx)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	var req CancelRequest
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(b) > 0 {
		if err := jsonx.Unmarshal(b, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid JSON body: " + err.Error()})
			return
		}
	}
	if req.Reason == "" {
		req.Reason = "requested through the API"
	}
	rec, err := d.Store.ExecutionGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "execution " + id + " not found"})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	if rec.State.Terminal() {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "execution " + id + " already ended", "status": rec.State.Status})
		return
	}
	ev := control.CancelEvent(id, req.Reason, "api", time.Now())
	applied, err := d.Control.Stop(ctx, id, ev)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
		return
	}
	if !applied {
		rec, _ = d.Store.ExecutionGet(ctx, id)
		if rec != nil && rec.State.Status != "canceled" {
			writeJSON(w, http.StatusConflict, map[string]any{"error": "execution " + id + " already ended", "status": rec.State.Status})
			return
		}
	}
	d.Log.InfoContext(ctx, "execution canceled", "execution_id", id, "reason", req.Reason)
	writeJSON(w, http.StatusAccepted, map[string]any{"execution_id": id, "status": "canceled"})
}
