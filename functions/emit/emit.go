// Package emit is the emit Cloud Function: the HTTP ingress of external
// events. It accepts one event or a JSON list of events whose types are
// external (types.IsExternal: "external.<name>", e.g. a webhook's
// "external.order.created"), records them in their executions' event log
// and never lets them drive an execution (README "Security"): engine events
// (step.*, loop.*, task.*, playbook.*, ...) are refused with 400, and the
// batches emit publishes are not marked for route. Callers need the
// runner role (shared/auth, the same authenticator as the api).
package emit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/auth"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
	"github.com/noetl/gcpengine/shared/wiring"
)

func init() { functions.HTTP("emit", Emit) }

// Needs is what emit builds besides the base every function has
// (wiring.Needs; wiring.Get): nothing: the base (the store, the bus it publishes on) is all.
const Needs wiring.Needs = 0

// MaxBody is the largest request body, in bytes; a larger one is refused
// with 413 (an event batch must fit one Pub/Sub message and one Firestore
// batch document).
const MaxBody = 256 << 10

// MaxEvents is the most events one request may carry.
const MaxEvents = 1000

// Emit handles POST /emit: 202 {"published": n} on success; 401/403 for a
// caller without the runner role; 413 for a body over MaxBody; 400 for an
// invalid event (every problem listed, engine events named as such); 404
// for an execution that does not exist or, for a caller below the
// operator role, that it did not start; 503 when Firestore or Pub/Sub
// failed.
func Emit(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "POST only"})
		return
	}
	a, err := wiring.Authenticator(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	caller, err := a.Authorize(r, auth.Runner)
	if err != nil {
		if auth.Status(err) == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="noetl"`)
		}
		writeJSON(w, auth.Status(err), map[string]any{"error": err.Error()})
		return
	}
	body, err := auth.ReadBody(r, MaxBody)
	if err != nil {
		var tl *auth.TooLargeError
		if errors.As(err, &tl) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	evs, problems := Decode(body, time.Now())
	if len(problems) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid events: " + strings.Join(problems, "; "), "problems": problems})
		return
	}
	d, err := wiring.Get(r.Context(), Needs)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	// Each event is placed after its execution's current state in the
	// log's causal order (its Lamport clock).
	clocks := map[string]int64{}
	for i := range evs {
		id := evs[i].ExecutionID
		if _, ok := clocks[id]; !ok {
			rec, err := d.Store.ExecutionGet(r.Context(), id)
			// A caller below the operator role emits into its own
			// executions only; another's is as missing (README "Security").
			if errors.Is(err, store.ErrNotFound) || err == nil && !auth.MayAccess(caller, rec.State.Creator) {
				writeJSON(w, http.StatusNotFound, map[string]any{"error": "execution " + id + " not found"})
				return
			}
			if err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
				return
			}
			clocks[id] = rec.State.Clock
		}
		evs[i].Clock = clocks[id]
	}
	for _, b := range Batches(evs) {
		if err := d.Bus.PublishBatch(r.Context(), b); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"published": len(evs)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Batches groups events by execution into batches, in their order. The
// batches are not marked for route (external events are recorded, never
// applied); a batch's id derives from its events' ids, so re-posting the
// same events dedups.
func Batches(evs []types.Event) []types.Batch {
	var out []types.Batch
	idx := map[string]int{}
	for _, ev := range evs {
		i, ok := idx[ev.ExecutionID]
		if !ok {
			i = len(out)
			idx[ev.ExecutionID] = i
			out = append(out, types.Batch{ExecutionID: ev.ExecutionID, Source: "emit"})
		}
		out[i].Events = append(out[i].Events, ev)
	}
	for i := range out {
		ids := []string{"emit"}
		for _, e := range out[i].Events {
			ids = append(ids, e.EventID)
		}
		out[i].ID = types.DeriveID(ids...)
	}
	return out
}

// Decode parses one event or a list (at most MaxEvents) and checks each:
// event_type must be external (types.IsExternal) — an engine event type is
// refused by name —, execution_id is required. What the engine owns is
// set here, whatever the caller sent: source "emit"; event_id derived from
// the execution and the caller's event_id (or, without one, the event's
// content), so an external event can never take an engine event's id and
// re-posting dedups; seq, prev_event_id and clock cleared (Emit places the
// event after its execution's state). timestamp defaults to now. problems
// lists every error ("events[i]: ..."); evs is nil when there are any.
func Decode(body []byte, now time.Time) (evs []types.Event, problems []string) {
	trimmed := body
	for len(trimmed) > 0 && (trimmed[0] == ' ' || trimmed[0] == '\n' || trimmed[0] == '\t' || trimmed[0] == '\r') {
		trimmed = trimmed[1:]
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := jsonx.Unmarshal(body, &evs); err != nil {
			return nil, []string{"body: " + err.Error()}
		}
	} else {
		var ev types.Event
		if err := jsonx.Unmarshal(body, &ev); err != nil {
			return nil, []string{"body: " + err.Error()}
		}
		evs = []types.Event{ev}
	}
	if len(evs) == 0 {
		return nil, []string{"body: no events"}
	}
	if len(evs) > MaxEvents {
		return nil, []string{fmt.Sprintf("body: %d events, at most %d per request", len(evs), MaxEvents)}
	}
	for i := range evs {
		ev := &evs[i]
		switch {
		case ev.EventType == "":
			problems = append(problems, fmt.Sprintf("events[%d]: event_type is required", i))
		case !ev.EventType.IsExternal():
			problems = append(problems, fmt.Sprintf("events[%d]: event_type %q is not an external event type: emit records only %s<name> events (lower-case letters, digits, . _ -); engine events such as step.done or loop.iteration.done are produced by the engine alone and cannot be emitted", i, truncate(string(ev.EventType), 100), types.ExternalPrefix))
		}
		if ev.ExecutionID == "" {
			problems = append(problems, fmt.Sprintf("events[%d]: execution_id is required", i))
		}
		if ev.Timestamp.IsZero() {
			ev.Timestamp = types.EventTimeOf(now)
		}
		callerID := ev.EventID
		ev.Source, ev.Seq, ev.PrevEventID, ev.Clock = "emit", 0, "", 0
		if callerID == "" {
			ev.EventID = ""
			b, _ := json.Marshal(ev)
			callerID = "content:" + string(b)
		}
		ev.EventID = types.DeriveID("emit", ev.ExecutionID, callerID)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return evs, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
