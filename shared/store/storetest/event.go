package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

var eventCases = []testCase{
	{"PutIdempotentListSorted", testEventPutList},
	{"ListEmpty", testEventListEmpty},
	{"AppendChainsSeqAndPrev", testEventAppendChain},
}

var dlqCases = []testCase{
	{"PutIdempotent", testDLQPutIdempotent},
}

// sampleEvent returns event n of execution id, with timestamp
// 2026-01-02T03:04:05.(100+n)Z and a payload holding ints and nested lists.
func sampleEvent(id string, n int) types.Event {
	ev := types.Event{
		EventID:     fmt.Sprintf("ev%02d-%s", n, id),
		EventType:   types.EvTaskDone,
		Timestamp:   fmt.Sprintf("2026-01-02T03:04:05.%03dZ", 100+n),
		ExecutionID: id,
		Source:      "execute",
		EntityType:  "task",
		EntityID:    "fetch/get",
		ParentID:    "parent-" + id,
		PrevEventID: fmt.Sprintf("ev%02d-%s", n-1, id),
		Seq:         int64(n),
		Step:        "fetch",
		StepRun:     2,
		Task:        "get",
		Attempt:     1,
		Status:      types.StatusOK,
		DurationMS:  int64(10 * n),
		Payload: map[string]any{
			"n":    int64(n),
			"rows": []any{[]any{int64(n), "a"}, []any{}},
			"f":    float64(n) + 0.25,
			"obj":  map[string]any{"none": nil, "ok": true},
		},
	}
	if n%2 == 0 {
		ev.Iteration = types.IntPtr(n)
	}
	return ev
}

func testEventPutList(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	create(ctx, t, s, sampleState(id))
	create(ctx, t, s, sampleState(other))
	order := []int{4, 0, 7, 2, 9, 1, 8, 3, 6, 5}
	for _, n := range order {
		if err := s.EventPut(ctx, sampleEvent(id, n)); err != nil {
			t.Fatalf("EventPut(%d): %v", n, err)
		}
	}
	// Redelivered events are stored once.
	for _, n := range []int{7, 0, 7} {
		if err := s.EventPut(ctx, sampleEvent(id, n)); err != nil {
			t.Fatalf("EventPut(%d again): %v", n, err)
		}
	}
	if err := s.EventPut(ctx, sampleEvent(other, 3)); err != nil {
		t.Fatalf("EventPut(other execution): %v", err)
	}
	got, err := s.EventList(ctx, id)
	if err != nil {
		t.Fatalf("EventList: %v", err)
	}
	want := make([]types.Event, len(order))
	for n := range want {
		want[n] = sampleEvent(id, n)
	}
	mustEqual(t, "EventList", want, got)
}

func testEventListEmpty(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	evs, err := s.EventList(ctx, id)
	if err != nil {
		t.Fatalf("EventList(unknown execution): %v", err)
	}
	if len(evs) != 0 {
		t.Fatalf("EventList(unknown execution) = %v, want none", evs)
	}
	create(ctx, t, s, sampleState(id))
	if evs, err = s.EventList(ctx, id); err != nil || len(evs) != 0 {
		t.Fatalf("EventList(execution without events) = %v, %v; want none", evs, err)
	}
}

func testDLQPutIdempotent(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	e := store.DLQEntry{
		MessageID:      "msg-" + id,
		ExecutionID:    id,
		StepID:         "fetch",
		LoopIndex:      types.IntPtr(3),
		LoopKey:        "fetch.2",
		ToolKind:       "http",
		Attempts:       5,
		LastError:      "http: 503",
		FirstSeen:      "2026-01-02T03:04:05.000Z",
		LastSeen:       "2026-01-02T03:09:05.000Z",
		Payload:        `{"id":"c1"}`,
		ContextExcerpt: `{"page":1}`,
	}
	for i := range 2 {
		if err := s.DLQPut(ctx, e); err != nil {
			t.Fatalf("DLQPut #%d: %v", i+1, err)
		}
	}
	bare := store.DLQEntry{MessageID: "msg2-" + id, ExecutionID: id, StepID: "start", Attempts: 1, LastError: "x"}
	for i := range 2 {
		if err := s.DLQPut(ctx, bare); err != nil {
			t.Fatalf("DLQPut without loop index #%d: %v", i+1, err)
		}
	}
}

// testEventAppendChain: appended events get seq 1..n and a prev_event_id
// chain in append order, whatever their timestamps; a redelivered event is
// reported as a duplicate and consumes no seq; EventList returns the chain.
func testEventAppendChain(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	order := []int{3, 1, 2, 0, 4}
	for i, n := range order {
		ev := sampleEvent(id, n)
		ev.Seq, ev.PrevEventID = 0, ""
		seq, dup, err := s.EventAppend(ctx, ev)
		if err != nil || dup || seq != int64(i+1) {
			t.Fatalf("append #%d: seq %d dup %v err %v, want seq %d", i, seq, dup, err, i+1)
		}
		if i == 2 {
			again := sampleEvent(id, order[1])
			seq, dup, err := s.EventAppend(ctx, again)
			if err != nil || !dup || seq != 2 {
				t.Fatalf("duplicate append: seq %d dup %v err %v, want seq 2 dup", seq, dup, err)
			}
		}
	}
	got, err := s.EventList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(order) {
		t.Fatalf("%d events, want %d", len(got), len(order))
	}
	prev := ""
	for i, ev := range got {
		if ev.Seq != int64(i+1) || ev.PrevEventID != prev || ev.EventID != sampleEvent(id, order[i]).EventID {
			t.Fatalf("event %d: seq %d prev %q id %s; want seq %d prev %q id %s", i, ev.Seq, ev.PrevEventID, ev.EventID, i+1, prev, sampleEvent(id, order[i]).EventID)
		}
		prev = ev.EventID
	}
}
