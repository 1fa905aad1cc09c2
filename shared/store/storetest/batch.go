package storetest

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

var batchCases = []testCase{
	{"PutOnceFirstCopyWins", testBatchPutOnce},
	{"ConcurrentPutOnce", testBatchConcurrentPut},
	{"ListCausalOrderChained", testBatchListOrder},
	{"ListEmpty", testBatchListEmpty},
	{"OpsTotal", testBatchOpsTotal},
	{"BeforeExecution", testBatchBeforeExecution},
}

var dlqCases = []testCase{
	{"PutIdempotent", testDLQPutIdempotent},
	{"QueryFilters", testDLQQuery},
	{"PoisonBytes", testDLQPoisonBytes},
}

// batchEvent returns event name of execution id at Lamport time clock,
// with a payload holding ints, floats and nested lists, and a timestamp
// that decreases as the clock grows (the order must not come from it). Seq
// and PrevEventID hold garbage the store must replace.
func batchEvent(id, name string, clock int64) types.Event {
	ev := types.Event{
		EventID:     name + "-" + id,
		EventType:   types.EvTaskDone,
		Timestamp:   types.EventTimeOf(time.Date(2026, 1, 2, 3, 4, 5, int(900-clock)*int(time.Millisecond), time.UTC)),
		ExecutionID: id,
		Source:      "execute",
		EntityType:  "task",
		EntityID:    "fetch/get",
		ParentID:    "parent-" + id,
		PrevEventID: "bogus",
		Seq:         99,
		Clock:       clock,
		Step:        "fetch",
		StepRun:     2,
		Task:        "get",
		Attempt:     1,
		Status:      types.StatusOK,
		DurationMS:  10 * clock,
		Payload: map[string]any{
			"name": name,
			"rows": []any{[]any{clock, "a"}, []any{}},
			"f":    float64(clock) + 0.25,
			"obj":  map[string]any{"none": nil, "ok": true},
		},
	}
	if clock%2 == 0 {
		ev.Iteration = types.IntPtr(int(clock))
	}
	return ev
}

// batch returns a batch of execution id holding the named events, the
// first at Lamport time clock and the next ones after it.
func batch(id, batchID string, clock int64, names ...string) types.Batch {
	b := types.Batch{ID: batchID, ExecutionID: id, Source: "execute"}
	for i, n := range names {
		b.Events = append(b.Events, batchEvent(id, n, clock+int64(i)))
	}
	return b
}

func putBatch(ctx context.Context, t *testing.T, s store.Store, b types.Batch, wantCreated bool) {
	t.Helper()
	created, err := s.BatchPut(ctx, b)
	if err != nil || created != wantCreated {
		t.Fatalf("BatchPut(%s) = %v, %v; want created=%v", b.ID, created, err, wantCreated)
	}
}

func events(ctx context.Context, t *testing.T, s store.Store, id string) []types.Event {
	t.Helper()
	evs, err := s.EventList(ctx, id)
	if err != nil {
		t.Fatalf("EventList(%s): %v", id, err)
	}
	return evs
}

// chained returns evs with Seq 1..n and the PrevEventID chain filled in
// their order: what EventList must return for events in that order.
func chained(evs ...types.Event) []types.Event {
	prev := ""
	for i := range evs {
		evs[i].Seq, evs[i].PrevEventID = int64(i+1), prev
		prev = evs[i].EventID
	}
	return evs
}

// testBatchPutOnce: a batch id is projected once; a second copy (a
// redelivery, even with other content) is reported and ignored.
func testBatchPutOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	first := batch(id, "b1", 1, "a", "b")
	putBatch(ctx, t, s, first, true)
	second := batch(id, "b1", 1, "c")
	maps.Copy(second.Events[0].Payload, map[string]any{"copy": int64(2)}) // the store keeps payloads opaque
	putBatch(ctx, t, s, second, false)
	putBatch(ctx, t, s, first, false)
	mustEqual(t, "EventList", chained(batchEvent(id, "a", 1), batchEvent(id, "b", 2)), events(ctx, t, s, id))
}

// testBatchConcurrentPut: of concurrent puts of one batch exactly one
// creates it.
func testBatchConcurrentPut(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	created := make([]bool, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() { created[i], errs[i] = s.BatchPut(ctx, batch(id, "b1", 1, "a")) })
	}
	wg.Wait()
	n := 0
	for i := range concurrency {
		if errs[i] != nil {
			t.Errorf("BatchPut #%d: %v", i, errs[i])
		}
		if created[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d of %d concurrent BatchPut calls created the batch, want exactly 1", n, concurrency)
	}
	mustEqual(t, "EventList", chained(batchEvent(id, "a", 1)), events(ctx, t, s, id))
}

// testBatchListOrder: whatever order the batches were projected in,
// EventList returns one causal order (Clock, then batch id, then position)
// with Seq 1..n and a complete PrevEventID chain; an event id present in
// two batches (a re-run unit) is kept once, in its first place in that
// order; other executions' batches are not listed.
func testBatchListOrder(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	create(ctx, t, s, sampleState(id))
	start := batch(id, "t1", 1, "s1", "s2", "s3")  // the transition that starts two units
	unitA := batch(id, "u-a", 4, "a1", "a2", "a3") // unit a, clocks 4..6
	unitB := batch(id, "u-b", 4, "b1", "b2")       // unit b, concurrent, clocks 4..5
	rerun := batch(id, "u-a-rerun", 4, "a1", "a2", "a3")
	for i := range rerun.Events {
		maps.Copy(rerun.Events[i].Payload, map[string]any{"rerun": true}) // must not be the copy kept
	}
	afterA := batch(id, "t2", 7, "x1", "x2")
	afterB := batch(id, "t3", 9, "y1")
	for _, b := range []types.Batch{afterB, unitB, rerun, start, unitA, afterA} {
		putBatch(ctx, t, s, b, true)
	}
	putBatch(ctx, t, s, batch(other, "t1", 1, "s1"), true)
	e := func(name string, clock int64) types.Event { return batchEvent(id, name, clock) }
	want := chained(e("s1", 1), e("s2", 2), e("s3", 3), e("a1", 4), e("b1", 4), e("a2", 5), e("b2", 5), e("a3", 6), e("x1", 7), e("x2", 8), e("y1", 9))
	mustEqual(t, "EventList", want, events(ctx, t, s, id))
	mustEqual(t, "EventList of the other execution", chained(batchEvent(other, "s1", 1)), events(ctx, t, s, other))
}

func testBatchListEmpty(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	if evs := events(ctx, t, s, id); len(evs) != 0 {
		t.Fatalf("EventList(unknown execution) = %v, want none", evs)
	}
	create(ctx, t, s, sampleState(id))
	if evs := events(ctx, t, s, id); len(evs) != 0 {
		t.Fatalf("EventList(execution without batches) = %v, want none", evs)
	}
	ops, err := s.OpsTotal(ctx, id)
	if err != nil || len(ops) != 0 {
		t.Fatalf("OpsTotal(execution without batches) = %v, %v; want none", ops, err)
	}
}

// testBatchOpsTotal: OpsTotal sums the metered operations of an
// execution's distinct batches (a redelivered batch counts once).
func testBatchOpsTotal(ctx context.Context, t *testing.T, s store.Store) {
	id, other := uniqueID(t), uniqueID(t)
	b1 := batch(id, "b1", 1, "a")
	b1.Ops = map[string]float64{"firestore.read": 2, "firestore.write": 1, "functions.execute.ms": 12.5}
	b2 := batch(id, "b2", 2, "b")
	b2.Ops = map[string]float64{"firestore.write": 3, "pubsub.publish": 1}
	b3 := batch(id, "b3", 3) // no events, only counts (the meter's flusher)
	b3.Ops = map[string]float64{"firestore.write": 1, "functions.execute.ms": 0.25}
	b4 := batch(id, "b4", 4, "c") // no counts
	for _, b := range []types.Batch{b1, b2, b3, b4} {
		putBatch(ctx, t, s, b, true)
	}
	dup := b1
	dup.Ops = map[string]float64{"firestore.read": 100}
	putBatch(ctx, t, s, dup, false)
	o := batch(other, "b1", 1, "a")
	o.Ops = map[string]float64{"firestore.read": 7}
	putBatch(ctx, t, s, o, true)
	got, err := s.OpsTotal(ctx, id)
	if err != nil {
		t.Fatalf("OpsTotal: %v", err)
	}
	want := map[string]float64{"firestore.read": 2, "firestore.write": 5, "functions.execute.ms": 12.75, "pubsub.publish": 1}
	mustEqual(t, "OpsTotal", want, got)
	// EventLog: the same events and counts from one read.
	evs, ops, err := s.EventLog(ctx, id)
	if err != nil {
		t.Fatalf("EventLog: %v", err)
	}
	mustEqual(t, "EventLog events", events(ctx, t, s, id), evs)
	mustEqual(t, "EventLog ops", want, ops)
	if evs, ops, err := s.EventLog(ctx, uniqueID(t)); err != nil || len(evs) != 0 || len(ops) != 0 {
		t.Fatalf("EventLog(unknown execution) = %v, %v, %v; want nothing", evs, ops, err)
	}
}

// testBatchBeforeExecution: the projection does not need the execution
// document (events may arrive before it is visible), and a batch does not
// make the execution exist.
func testBatchBeforeExecution(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	putBatch(ctx, t, s, batch(id, "b1", 1, "a"), true)
	expectNoExecution(ctx, t, s, id)
	create(ctx, t, s, sampleState(id))
	mustEqual(t, "State", sampleState(id), get(ctx, t, s, id).State)
	putBatch(ctx, t, s, batch(id, "b2", 2, "b"), true)
	mustEqual(t, "EventList", chained(batchEvent(id, "a", 1), batchEvent(id, "b", 2)), events(ctx, t, s, id))
}

// expectNoExecution fails unless execution id is absent.
func expectNoExecution(ctx context.Context, t *testing.T, s store.Store, id string) {
	t.Helper()
	if rec, err := s.ExecutionGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionGet(%s) = %s, %v; want ErrNotFound", id, dump(rec), err)
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
		FirstSeen:      rfc3339("2026-01-02T03:04:05.000Z"),
		LastSeen:       rfc3339("2026-01-02T03:09:05.000Z"),
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

// testDLQQuery: GET /dlq's filters — execution, tool kind, status — each
// narrow the list, newest first, and the seed's sink_id and last_stack
// come back as filed.
func testDLQQuery(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	put := func(n, exec, kind string, seen string) {
		t.Helper()
		e := store.DLQEntry{MessageID: "q" + n + "-" + id, ExecutionID: exec, StepID: "s", ToolKind: kind, Attempts: 1, LastError: "x",
			FirstSeen: rfc3339(seen), LastSeen: rfc3339(seen), Status: store.DLQPending, SinkID: kind + ":s", LastStack: "stack " + n}
		if err := s.DLQPut(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	put("1", id+"-a", "http", "2026-01-02T03:04:01.000Z")
	put("2", id+"-a", "postgres", "2026-01-02T03:04:02.000Z")
	put("3", id+"-b", "http", "2026-01-02T03:04:03.000Z")
	// Ordered as times, not as texts: a whole second's text ("05Z") sorts
	// after a later fractional one ("05.5Z").
	put("4", id+"-c", "http", "2026-01-02T03:04:05Z")
	put("5", id+"-c", "http", "2026-01-02T03:04:05.5Z")
	ids := func(f store.DLQFilter) []string {
		t.Helper()
		es, err := s.DLQQuery(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			if strings.HasSuffix(e.MessageID, id) {
				out = append(out, strings.TrimSuffix(e.MessageID, "-"+id))
				if e.SinkID != e.ToolKind+":s" || !strings.HasPrefix(e.LastStack, "stack ") {
					t.Errorf("entry %s: sink_id %q last_stack %q", e.MessageID, e.SinkID, e.LastStack)
				}
			}
		}
		return out
	}
	for _, c := range []struct {
		f    store.DLQFilter
		want string
	}{
		{store.DLQFilter{ExecutionID: id + "-a"}, "q2 q1"},
		{store.DLQFilter{ExecutionID: id + "-a", ToolKind: "http"}, "q1"},
		{store.DLQFilter{ExecutionID: id + "-b", Status: store.DLQPending}, "q3"},
		{store.DLQFilter{ExecutionID: id + "-b", Status: store.DLQDone}, ""},
		{store.DLQFilter{ExecutionID: id + "-a", Limit: 1}, "q2"},
		{store.DLQFilter{ExecutionID: id + "-c"}, "q5 q4"},
	} {
		if got := strings.Join(ids(c.f), " "); got != c.want {
			t.Errorf("DLQQuery(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// testDLQPoisonBytes: a poison message's id and bytes are its sender's
// (a "/" in the id, bytes that are not UTF-8): the entry is still filed,
// found again by the id it arrived with, and replays the exact bytes.
func testDLQPoisonBytes(ctx context.Context, t *testing.T, s store.Store) {
	id := "route-a/b/" + uniqueID(t) + "\xff"
	raw := []byte{0xff, 0xfe, 'x', 0x00, 0xc3}
	e := store.DLQEntry{MessageID: id, Attempts: 1, LastError: "bad \xff body", Payload: string(raw[:3]),
		ContextExcerpt: "route: \xc3", Source: "route", Kind: "message", Topic: "events",
		Attributes: map[string]string{"k\xff": "v\xfe"}}
	e.SetUnit(raw)
	for i := range 2 {
		if err := s.DLQPut(ctx, e); err != nil {
			t.Fatalf("DLQPut #%d of a poison entry: %v", i+1, err)
		}
	}
	got, err := s.DLQGet(ctx, id)
	if err != nil {
		t.Fatalf("DLQGet by the arriving id: %v", err)
	}
	if got.MessageID != store.DLQID(id) || !strings.HasPrefix(got.MessageID, "dlq-") {
		t.Errorf("MessageID = %q, want DLQID %q", got.MessageID, store.DLQID(id))
	}
	b, err := got.UnitBytes()
	if err != nil || string(b) != string(raw) {
		t.Errorf("UnitBytes = %q, %v; want %q", b, err, raw)
	}
	if !utf8.ValidString(got.LastError) || !utf8.ValidString(got.Payload) || !utf8.ValidString(got.ContextExcerpt) {
		t.Errorf("text fields not valid UTF-8: %q %q %q", got.LastError, got.Payload, got.ContextExcerpt)
	}
	if _, err := s.DLQSetStatus(ctx, got.MessageID, store.DLQPending, store.DLQDiscarded, "poison"); err != nil {
		t.Fatalf("DLQSetStatus by the stored id: %v", err)
	}
	ok := store.DLQEntry{MessageID: "plain-" + uniqueID(t), Kind: "message"}
	ok.SetUnit([]byte(`{"a":1}`))
	if ok.UnitEncoding != "" || ok.Unit != `{"a":1}` {
		t.Errorf("SetUnit of UTF-8 = %q (%s), want the text itself", ok.Unit, ok.UnitEncoding)
	}
}
