package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// MaxListLimit bounds GET /executions?limit=N (an operator listing, not a
// bulk export): larger values are refused with 400.
const MaxListLimit = 1000

// ListStatuses are the execution statuses GET /executions?status= accepts
// (engine.State.Status: requested → running → ok | failed | canceled).
var ListStatuses = []types.Status{engine.ExecRequested, engine.ExecRunning, engine.ExecOK, engine.ExecFailed, engine.ExecCanceled}

// ListCursor is the before= value that lists the executions after e
// (older, in the list's order): "<created_at>,<execution_id>".
func ListCursor(e store.ExecutionSummary) string {
	return e.CreatedAt.UTC().Format(time.RFC3339Nano) + "," + e.ExecutionID
}

// executionLister is the part of the store GET /executions needs
// (store.Store.ExecutionList).
type executionLister interface {
	ExecutionList(ctx context.Context, p store.ExecutionListParams) ([]store.ExecutionSummary, error)
	ExecutionCount(ctx context.Context, p store.ExecutionListParams) (map[types.Status]int, error)
}

// list serves GET /executions?status=&playbook=&creator=&since=&until=&limit=&before=&counts=
// (README "Security": a caller below the operator role
// lists its own executions only, listScope):
//
//	→ 200 {"executions": [{execution_id, parent_id, playbook, creator, rerun_of, status, created_at, updated_at}]}
//	  newest first (store.ExecutionList); limit defaults to 50; before
//	  pages: "<created_at>,<execution_id>" of the previous page's last
//	  entry (ListCursor), and the list goes on after it; since and until
//	  (RFC 3339) bound the creation time, since inclusive, until
//	  exclusive; counts=true adds "counts": {status: n} of every
//	  execution the filters other than status select (store.ExecutionCount)
//	→ 400 {"error"} for an unknown status, a limit that is not an
//	  integer in 1..MaxListLimit, a time or a cursor that does not parse
//	→ 503 {"error"} when the store cannot be read
func list(w http.ResponseWriter, r *http.Request) {
	d, ok := opened(r.Context(), w, deps)
	if !ok {
		return
	}
	listExecutions(w, r, d.Store)
}

// listScope is the creator filter of a listing: a caller below the
// operator role lists only the executions it started (whatever
// ?creator= says); an operator lists every execution, or one creator's
// with ?creator=.
func listScope(r *http.Request) string {
	if operator(r) {
		return r.URL.Query().Get("creator")
	}
	if n := principal(r); n != "" {
		return n
	}
	return "\x00no caller" // matches no execution
}

// listExecutions is list over any executionLister (unit tests use the
// in-memory store).
func listExecutions(w http.ResponseWriter, r *http.Request, s executionLister) {
	q := r.URL.Query()
	p := store.ExecutionListParams{Status: types.Status(q.Get("status")), Playbook: q.Get("playbook"), Creator: listScope(r), Limit: 50}
	if p.Status != "" && !slices.Contains(ListStatuses, p.Status) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "status " + strconv.Quote(string(p.Status)) + " is not an execution status (requested, running, ok, failed, canceled)"})
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "limit " + strconv.Quote(v) + " is not an integer in 1.." + strconv.Itoa(MaxListLimit)})
			return
		}
		p.Limit = n
	}
	if v := q.Get("before"); v != "" {
		at, id, ok := strings.Cut(v, ",")
		t, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil || id == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "before " + strconv.Quote(v) + " is not a cursor <created_at RFC 3339>,<execution_id>"})
			return
		}
		p.BeforeCreated, p.BeforeID = t, id
	}
	for _, b := range []struct {
		key string
		at  *time.Time
	}{{"since", &p.CreatedFrom}, {"until", &p.CreatedTo}} {
		if v := q.Get(b.key); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": b.key + " " + strconv.Quote(v) + " is not an RFC 3339 time (2026-11-28T10:00:00Z)"})
				return
			}
			*b.at = t
		}
	}
	out, err := s.ExecutionList(r.Context(), p)
	if err != nil {
		unavailable(w, err)
		return
	}
	if out == nil {
		out = []store.ExecutionSummary{}
	}
	body := map[string]any{"executions": out}
	if q.Get("counts") == "true" {
		cp := p
		cp.Status = ""
		counts, err := s.ExecutionCount(r.Context(), cp)
		if err != nil {
			unavailable(w, err)
			return
		}
		body["counts"] = counts
	}
	writeJSON(w, http.StatusOK, body)
}
