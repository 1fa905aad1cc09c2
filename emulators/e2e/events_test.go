package e2e

import (
	"testing"
	"time"
)

// The event log: every event carries the full envelope, seq is 1..n with
// no gap per execution, prev_event_id chains each event to the previous
// one, and the event taxonomy of the NoETL DSL spec "Events" appears.
func TestEventEnvelopeSeqAndChain(t *testing.T) {
	RequireStack(t)
	r := Run(t, conf("v2_loop_test.yaml"), "")
	ok(t, r)
	evs := Events(t, r.ExecutionID)
	// Wait until the projection holds every event (playbook.finished can
	// be projected before events published earlier by other producers).
	prev := -1
	for len(evs) != prev {
		prev = len(evs)
		time.Sleep(500 * time.Millisecond)
		evs = Events(t, r.ExecutionID)
	}
	fields := []string{"event_id", "event_type", "timestamp", "execution_id", "source", "entity_type", "entity_id",
		"parent_id", "seq", "attempt", "iteration", "status", "duration_ms", "payload", "prev_event_id"}
	last := ""
	for i, e := range evs {
		for _, f := range fields {
			if _, ok := e[f]; !ok {
				t.Fatalf("event %d (%v) lacks envelope field %s", i, e["event_type"], f)
			}
		}
		if asInt(e["seq"]) != int64(i+1) {
			t.Fatalf("event %d has seq %v", i, e["seq"])
		}
		if e["prev_event_id"] != last && !(last == "" && e["prev_event_id"] == nil) {
			t.Fatalf("event %d prev_event_id %v, want %q", i, e["prev_event_id"], last)
		}
		last, _ = e["event_id"].(string)
	}
	if evs[0]["event_type"] != "playbook.execution.requested" {
		t.Fatalf("first event %v", evs[0]["event_type"])
	}
	for _, typ := range []string{"playbook.execution.requested", "playbook.started", "workflow.started", "step.scheduled",
		"step.started", "task.started", "task.attempt.started", "task.attempt.done", "policy.task.evaluated", "task.done",
		"step.done", "next.evaluated", "loop.started", "loop.iteration.started", "loop.iteration.done", "loop.done",
		"workflow.finished", "playbook.finished"} {
		if Count(evs, typ, "") == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	if n := Count(evs, "loop.iteration.done", "start"); n != 5 {
		t.Errorf("%d loop.iteration.done for start, want 5", n)
	}
}
