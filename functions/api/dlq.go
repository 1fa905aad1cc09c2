package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// The DLQ API (seed 000 §8.6 "Handling DLQ"):
//
//	GET  /dlq?status=pending|replayed|discarded&limit=N → {"entries": [...]}
//	GET  /dlq/{id}                                    → entry | 404
//	POST /dlq/{id}/replay {"patch": {"key": value}}   → 202 {"id", "status": "replayed"}
//	POST /dlq/{id}/discard {"reason": "text"}         → 200 {"id", "status": "discarded"}
//
// A unit entry is replayed as a new Cloud Task of the same unit (its step
// run was parked: the execution goes on if the unit succeeds); patch keys
// are dotted paths into the unit's command (e.g. "args.page", "item.url"),
// values are JSON (a bare word is a string). A message entry is published
// again on its topic. Discarding a unit entry fails its parked step run
// (error kind dead_lettered, with the reason).

// dlqRoute routes /dlq requests (rest: after "/dlq").
func dlqRoute(w http.ResponseWriter, r *http.Request, rest string) {
	rest = strings.TrimPrefix(rest, "/")
	switch {
	case rest == "" && r.Method == http.MethodGet:
		dlqList(w, r)
	case strings.HasSuffix(rest, "/replay") && r.Method == http.MethodPost:
		dlqReplay(w, r, strings.TrimSuffix(rest, "/replay"))
	case strings.HasSuffix(rest, "/discard") && r.Method == http.MethodPost:
		dlqDiscard(w, r, strings.TrimSuffix(rest, "/discard"))
	case rest != "" && !strings.Contains(rest, "/") && r.Method == http.MethodGet:
		dlqShow(w, r, rest)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path})
	}
}

func dlqList(w http.ResponseWriter, r *http.Request) {
	d, ok := opened(r.Context(), w, runtime.Get)
	if !ok {
		return
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", store.DLQPending, store.DLQReplayed, store.DLQDiscarded:
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "status must be pending, replayed or discarded"})
		return
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "limit must be an integer from 1 to 1000"})
			return
		}
		limit = n
	}
	entries, err := d.Store.DLQList(r.Context(), status, limit)
	if err != nil {
		unavailable(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "count": len(entries)})
}

func dlqEntry(w http.ResponseWriter, r *http.Request, id string) (*runtime.Deps, *store.DLQEntry, bool) {
	d, ok := opened(r.Context(), w, runtime.Get)
	if !ok {
		return nil, nil, false
	}
	e, err := d.Store.DLQGet(r.Context(), id)
	if !found(w, err, store.ErrNotFound, "dlq entry "+id+" not found", unavailable) {
		return nil, nil, false
	}
	return d, e, true
}

func dlqShow(w http.ResponseWriter, r *http.Request, id string) {
	if _, e, ok := dlqEntry(w, r, id); ok {
		writeJSON(w, http.StatusOK, e)
	}
}

// ReplayRequest is the body of POST /dlq/{id}/replay.
type ReplayRequest struct {
	Patch map[string]any `json:"patch"`
}

func dlqReplay(w http.ResponseWriter, r *http.Request, id string) {
	d, e, ok := dlqEntry(w, r, id)
	if !ok {
		return
	}
	var req ReplayRequest
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(b) > 0 && !decodeJSON(w, b, &req) {
		return
	}
	if e.Status != store.DLQPending {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "dlq entry " + id + " is " + e.Status + ", only pending entries can be replayed"})
		return
	}
	ctx := r.Context()
	note := ""
	if len(req.Patch) > 0 {
		b, _ := json.Marshal(req.Patch)
		note = "patch " + string(b)
	}
	unit, uerr := e.UnitBytes()
	if uerr != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": uerr.Error()})
		return
	}
	switch e.Kind {
	case "unit":
		var cmd types.Command
		if err := jsonx.Unmarshal(unit, &cmd); err != nil || cmd.ExecutionID == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "the entry does not hold a replayable unit (it never decoded)"})
			return
		}
		patched, err := patchCommand(cmd, req.Patch)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		patched.Replay = cmd.Replay + 1
		patched.Reclaim = 0
		patched.NotBefore = time.Time{}
		patched.ID = patched.TaskName()
		if _, err := d.Store.DLQSetStatus(ctx, id, store.DLQPending, store.DLQReplayed, note); err != nil {
			dlqStatusError(w, err)
			return
		}
		if _, err := d.Dispatcher.TaskCreate(ctx, patched, time.Now()); err != nil {
			unavailable(w, err)
			return
		}
	case "message":
		if e.Topic == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "the entry names no topic to publish on"})
			return
		}
		if len(req.Patch) > 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "a message entry is replayed as it arrived: patch is for unit entries"})
			return
		}
		if _, err := d.Store.DLQSetStatus(ctx, id, store.DLQPending, store.DLQReplayed, note); err != nil {
			dlqStatusError(w, err)
			return
		}
		if err := d.Bus.Republish(ctx, e.Topic, unit, e.Attributes); err != nil {
			unavailable(w, err)
			return
		}
	default:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "the entry cannot be replayed (kind " + e.Kind + ")"})
		return
	}
	d.Log.InfoContext(ctx, "dlq entry replayed", "dlq_id", id, "execution_id", e.ExecutionID, "patch", note)
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "status": store.DLQReplayed})
}

// DiscardRequest is the body of POST /dlq/{id}/discard.
type DiscardRequest struct {
	Reason string `json:"reason"`
}

func dlqDiscard(w http.ResponseWriter, r *http.Request, id string) {
	d, e, ok := dlqEntry(w, r, id)
	if !ok {
		return
	}
	var req DiscardRequest
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err := jsonx.Unmarshal(b, &req); err != nil || strings.TrimSpace(req.Reason) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": `discard needs a body {"reason": "why"}`})
		return
	}
	ctx := r.Context()
	if _, err := d.Store.DLQSetStatus(ctx, id, store.DLQPending, store.DLQDiscarded, req.Reason); err != nil {
		dlqStatusError(w, err)
		return
	}
	if e.Kind == "unit" {
		var cmd types.Command
		if unit, err := e.UnitBytes(); err == nil && jsonx.Unmarshal(unit, &cmd) == nil && cmd.ExecutionID != "" {
			store.NormCommand(&cmd)
			if err := d.Worker.DiscardUnit(ctx, cmd, id, req.Reason); err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "entry discarded, but failing its step run failed (retry the call): " + err.Error()})
				return
			}
		}
	}
	d.Log.InfoContext(ctx, "dlq entry discarded", "dlq_id", id, "execution_id", e.ExecutionID, "reason", req.Reason)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": store.DLQDiscarded})
}

func dlqStatusError(w http.ResponseWriter, err error) {
	if errs.Is(err, errs.FailedPrecondition) {
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
		return
	}
	unavailable(w, err)
}

// patchCommand applies dotted-path patches to a command (through its JSON
// form).
func patchCommand(cmd types.Command, patch map[string]any) (types.Command, error) {
	if len(patch) == 0 {
		return cmd, nil
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return cmd, err
	}
	var m map[string]any
	if err := jsonx.Unmarshal(b, &m); err != nil {
		return cmd, err
	}
	for path, v := range patch {
		if s, ok := v.(string); ok {
			var parsed any
			if jsonx.Unmarshal([]byte(s), &parsed) == nil {
				v = parsed
			}
		}
		parts := strings.Split(path, ".")
		cur := m
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				if cur[p] != nil {
					return cmd, fmt.Errorf("patch %s: %s is not a mapping", path, p)
				}
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = v
	}
	b, _ = json.Marshal(m)
	var out types.Command
	if err := jsonx.Unmarshal(b, &out); err != nil {
		return cmd, fmt.Errorf("patch makes an invalid unit: %w", err)
	}
	store.NormCommand(&out)
	return out, nil
}
