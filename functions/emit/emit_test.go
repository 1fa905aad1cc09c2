package emit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

var now = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// engineTypes are event types the engine produces and acts on (or
// projects): emit refuses every one of them.
var engineTypes = []types.EventType{
	types.EvExecutionRequested, types.EvPlaybookStarted, types.EvWorkflowStarted, types.EvAdmitEvaluated,
	types.EvStepScheduled, types.EvNextEvaluated, types.EvWorkflowFinished, types.EvPlaybookFinished,
	types.EvStepStarted, types.EvTaskStarted, types.EvTaskAttemptStarted, types.EvTaskAttemptDone,
	types.EvTaskAttemptFailed, types.EvPolicyTaskEvaluated, types.EvTaskDone, types.EvTaskFailed,
	types.EvStepDone, types.EvStepFailed, types.EvLoopStarted, types.EvLoopIterationStarted,
	types.EvLoopIterationDone, types.EvLoopIterationFailed, types.EvLoopDone, types.EvResultStored,
	types.EvCancelRequested, types.EvStepCanceled, types.EvExecutionTimedOut, types.EvUnitDeadLettered,
	types.EvUnitReclaimed, types.EvUnitHandedOff, types.EvCompensationStarted,
	"external.", "External.Webhook", "external.web hook", "externalx.y", "step.done.external", "",
}

// Only the engine drives the engine: a forged step.done, loop.done or
// loop.iteration.done (README "Security") is refused with a message naming
// the rule, and nothing of the request is kept.
func TestDecodeRefusesEngineEvents(t *testing.T) {
	for _, typ := range engineTypes {
		body, _ := json.Marshal(map[string]any{"event_type": typ, "execution_id": "e1", "step": "s", "step_run": 1, "payload": map[string]any{"result": 1}})
		evs, problems := Decode(body, now)
		if evs != nil || len(problems) != 1 {
			t.Errorf("%q: accepted (%v, %v)", typ, evs, problems)
			continue
		}
		if typ != "" && !strings.Contains(problems[0], "not an external event type") {
			t.Errorf("%q: problem %q does not name the rule", typ, problems[0])
		}
	}
	// A list with one engine event among external ones is refused whole.
	body := `[{"event_type":"external.ok","execution_id":"e1"},{"event_type":"loop.iteration.done","execution_id":"e1","iteration":3}]`
	if evs, problems := Decode([]byte(body), now); evs != nil || len(problems) != 1 || !strings.HasPrefix(problems[0], "events[1]") {
		t.Errorf("mixed list: %v %v", evs, problems)
	}
}

// External events are accepted; what the engine owns in the envelope is
// set by emit (source, ids, order), so an external event can neither
// impersonate an engine component nor shadow an engine event's id.
func TestDecodeExternal(t *testing.T) {
	body := `[{"event_type":"external.order.created","execution_id":"e1","event_id":"abc","source":"execute","clock":999,"seq":7,"prev_event_id":"x","payload":{"order":1}},
	          {"event_type":"external.webhook","execution_id":"e2"}]`
	evs, problems := Decode([]byte(body), now)
	if len(problems) > 0 || len(evs) != 2 {
		t.Fatalf("refused: %v", problems)
	}
	e := evs[0]
	if e.Source != "emit" || e.Clock != 0 || e.Seq != 0 || e.PrevEventID != "" {
		t.Errorf("caller-set envelope kept: %+v", e)
	}
	if e.EventID == "abc" || e.EventID != types.DeriveID("emit", "e1", "abc") {
		t.Errorf("event id %q is not derived from the caller's id in emit's namespace", e.EventID)
	}
	again, _ := Decode([]byte(body), now.Add(time.Hour))
	if again[0].EventID != e.EventID {
		t.Error("re-posting the same event must give the same id (dedup)")
	}
	if !evs[1].Timestamp.Equal(now.Truncate(time.Millisecond)) || evs[1].EventID == "" {
		t.Errorf("defaults not set: %+v", evs[1])
	}
	bs := Batches(evs)
	if len(bs) != 2 {
		t.Fatalf("batches %d, want one per execution", len(bs))
	}
	for _, b := range bs {
		if b.Route {
			t.Errorf("batch %s is marked for route: external events must never be applied", b.ID)
		}
	}
}

func TestDecodeLimits(t *testing.T) {
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"event_type":"external.x","execution_id":"e"},`, MaxEvents+1), ",") + "]"
	if evs, problems := Decode([]byte(many), now); evs != nil || len(problems) != 1 || !strings.Contains(problems[0], "at most") {
		t.Errorf("%d events: %v", MaxEvents+1, problems)
	}
	for _, bad := range []string{"", "[]", "{", "null", `"x"`, `{"event_type":"external.x"}`} {
		if evs, problems := Decode([]byte(bad), now); evs != nil || len(problems) == 0 {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
}

// A timestamp that is not RFC 3339 is refused with the text named; the
// caller's valid time is kept at millisecond precision in UTC.
func TestDecodeTimestamp(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	_, problems := Decode([]byte(`{"event_type":"external.x","execution_id":"e1","timestamp":"yesterday"}`), now)
	if len(problems) != 1 || !strings.Contains(problems[0], `"yesterday"`) || !strings.Contains(problems[0], "RFC 3339") {
		t.Fatalf("problems: %v", problems)
	}
	evs, problems := Decode([]byte(`{"event_type":"external.x","execution_id":"e1","timestamp":"2026-11-28T11:00:00.123456+01:00"}`), now)
	if len(problems) != 0 || evs[0].Timestamp.String() != "2026-11-28T10:00:00.123Z" {
		t.Fatalf("got %v %v", evs, problems)
	}
}
