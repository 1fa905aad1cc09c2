// Package emit is the emit Cloud Function: the HTTP ingress of the event
// log. It accepts one event or a JSON list of events, checks the envelope
// and publishes them on the events topic (ordering key = execution id).
package emit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/runtime"
	"github.com/noetl/gcpengine/shared/types"
)

func init() { functions.HTTP("emit", Emit) }

// Emit handles POST /emit. 202 with {"published": n} on success, 400 for
// an invalid envelope (every problem listed), 503 when Pub/Sub failed.
func Emit(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	d, err := runtime.Get(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	evs, problems := Decode(body, time.Now())
	if len(problems) > 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid events", "problems": problems})
		return
	}
	for _, b := range Batches(evs) {
		if err := d.Bus.PublishBatch(r.Context(), b); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]any{"published": len(evs)})
}

// Batches groups events by execution into batches marked for route (which
// applies the boundary events among them), in their order; a batch's id
// derives from its events' ids, so re-posting the same events dedups.
func Batches(evs []types.Event) []types.Batch {
	var out []types.Batch
	idx := map[string]int{}
	for _, ev := range evs {
		i, ok := idx[ev.ExecutionID]
		if !ok {
			i = len(out)
			idx[ev.ExecutionID] = i
			out = append(out, types.Batch{ExecutionID: ev.ExecutionID, Source: "emit", Route: true})
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

// Decode parses one event or a list and checks the envelope: event_type
// and execution_id are required; event_id defaults to a derived id and
// timestamp to now.
func Decode(body []byte, now time.Time) ([]types.Event, []string) {
	var evs []types.Event
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
	var problems []string
	for i := range evs {
		ev := &evs[i]
		if ev.EventType == "" {
			problems = append(problems, fmt.Sprintf("events[%d]: event_type is required", i))
		}
		if ev.ExecutionID == "" {
			problems = append(problems, fmt.Sprintf("events[%d]: execution_id is required", i))
		}
		if ev.Timestamp == "" {
			ev.Timestamp = now.UTC().Format(time.RFC3339Nano)
		}
		if ev.EventID == "" {
			b, _ := json.Marshal(ev)
			ev.EventID = types.DeriveID(string(b))
		}
		if ev.Source == "" {
			ev.Source = "emit"
		}
	}
	return evs, problems
}
