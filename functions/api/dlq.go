package api

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/noetl/gcpengine/shared/dlq"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/wiring"
)

// The DLQ API (NoETL observability spec §8.6 "Handling DLQ"):
//
//	GET  /dlq?status=pending|replayed|discarded|done&execution_id=ID&tool_kind=KIND&limit=N
//	                                                       → {"entries": [...]}
//	GET  /dlq/{id}                                         → entry | 404
//	POST /dlq/{id}/replay {"patch": {"key": value}}        → 202 {"id", "status": "replayed"}
//	POST /dlq/{id}/discard {"reason": "text"}              → 200 {"id", "status": "discarded"}
//
// A unit entry is replayed as a new Cloud Task of the same unit (its step
// run was parked: the execution goes on if the unit succeeds); patch keys
// are dotted paths into the unit's inputs (e.g. "args.page", "item.url"),
// values are JSON (a bare word is a string). A message entry is published
// again on its topic. Discarding a unit entry fails its parked step run
// (error kind dead_lettered, with the reason). An entry whose unit
// completed otherwise is done: replaying or discarding it is a 409 with
// "already_done": true. The rules are shared/dlq's.

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
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	status := store.DLQStatus(r.URL.Query().Get("status"))
	if status != "" && !status.Valid() {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "status must be pending, replayed, discarded or done"})
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
	q := r.URL.Query()
	entries, err := d.Store.DLQQuery(r.Context(), store.DLQFilter{Status: status, ExecutionID: q.Get("execution_id"), ToolKind: q.Get("tool_kind"), Limit: limit})
	if err != nil {
		unavailable(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "count": len(entries)})
}

func dlqEntry(w http.ResponseWriter, r *http.Request, id string) (*wiring.Deps, *store.DLQEntry, bool) {
	d, ok := opened(r.Context(), w, deps)
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

// ops returns the DLQ operations on the runtime's clients (shared/dlq
// holds the rules; the handlers map its errors).
func ops(d *wiring.Deps) *dlq.Ops {
	return &dlq.Ops{Store: d.Store, Tasks: d.Dispatcher, Bus: d.Bus, Control: d.Control, Units: d.Worker, Log: d.Log}
}

func dlqReplay(w http.ResponseWriter, r *http.Request, id string) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	var req ReplayRequest
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(b) > 0 && !decodeJSON(w, b, &req) {
		return
	}
	res, err := ops(d).Replay(r.Context(), id, req.Patch)
	if err != nil {
		dlqError(w, id, res, err)
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// DiscardRequest is the body of POST /dlq/{id}/discard.
type DiscardRequest struct {
	Reason string `json:"reason"`
}

func dlqDiscard(w http.ResponseWriter, r *http.Request, id string) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	var req DiscardRequest
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err := jsonx.Unmarshal(b, &req); err != nil || strings.TrimSpace(req.Reason) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": `discard needs a body {"reason": "why"}`})
		return
	}
	res, err := ops(d).Discard(r.Context(), id, req.Reason)
	if err != nil {
		dlqError(w, id, res, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// dlqError maps a DLQ operation's error: 404 unknown entry; 409 for an
// entry that is not pending, or whose unit already ended (status "done":
// a replay is then a no-op); 422 for what cannot be replayed; 400 for a
// bad patch; 503 otherwise (retry: the operation completes what a failed
// one left).
func dlqError(w http.ResponseWriter, id string, res dlq.Result, err error) {
	body := map[string]any{"error": err.Error(), "id": id}
	if res.Status != "" {
		body["status"] = res.Status
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "dlq entry " + id + " not found"})
	case errors.Is(err, dlq.ErrAlreadyDone):
		body["already_done"] = true
		writeJSON(w, http.StatusConflict, body)
	case errors.Is(err, dlq.ErrNotPending):
		writeJSON(w, http.StatusConflict, body)
	case errors.Is(err, dlq.ErrUnreplayable):
		writeJSON(w, http.StatusUnprocessableEntity, body)
	case errors.Is(err, dlq.ErrBadPatch):
		writeJSON(w, http.StatusBadRequest, body)
	default:
		unavailable(w, err)
	}
}
