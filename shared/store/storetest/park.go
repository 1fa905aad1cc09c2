package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// parkCases check the DLQ parks (README "The soak"): an iteration filed in the DLQ
// and parked on its record in one commit; the end of a parked iteration
// resolving its entry in the same commit; canceled records; the DLQ
// writes of a checkpoint (a parked step unit).
var parkCases = []testCase{
	{"IterationParkFilesAndHolds", testIterationPark},
	{"IterationParkRespectsLiveLease", testIterationParkHeld},
	{"IterationParkOfEndedFilesNothing", testIterationParkEnded},
	{"IterationEndOfParkedResolves", testIterationEndParked},
	{"IterationRunningAndCanceled", testIterationRunning},
	{"IterationEndWithoutHolderTakesReleased", testIterationEndReleased},
	{"CheckpointFilesAndResolves", testCheckpointDLQWrites},
}

func parkEntry(id, msg string) store.DLQEntry {
	return store.DLQEntry{MessageID: msg, ExecutionID: id, StepID: "fetch", LoopIndex: types.IntPtr(1), Kind: "unit",
		Unit: `{"execution_id":"` + id + `"}`, Attempts: 10, LastError: "boom", FirstSeen: rfc3339("2026-01-02T03:04:05Z"), LastSeen: rfc3339("2026-01-02T03:04:05Z")}
}

func (it *iters) park(ctx context.Context, idx int, holder, msg string, at time.Duration) (*engine.IterationRecord, error) {
	return it.s.IterationPark(ctx, store.IterationParkParams{ExecutionID: it.id, LoopKey: it.key, Index: idx, Holder: holder,
		Entry: parkEntry(it.id, msg), Now: it.t0.Add(at)})
}

func dlqStatus(ctx context.Context, t *testing.T, s store.Store, msg string) (store.DLQStatus, string) {
	t.Helper()
	e, err := s.DLQGet(ctx, msg)
	if err != nil {
		t.Fatalf("DLQGet(%s): %v", msg, err)
	}
	return e.Status, e.Note
}

// testIterationPark: parking files the entry pending and holds the
// record without expiry: another delivery is ErrParked (even much later),
// a second park under the same entry writes nothing, one under another
// entry is ErrParked; the entry's replay takes the record (Unpark), which
// marks the entry replayed.
func testIterationPark(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	msg := "unit-" + id
	it.mustBegin(ctx, 1, "A", 0)
	if rec, err := it.park(ctx, 1, "A", msg, time.Second); err != nil || rec != nil {
		t.Fatalf("IterationPark by the holder = %s, %v; want parked", dump(rec), err)
	}
	if st, _ := dlqStatus(ctx, t, s, msg); st != store.DLQPending {
		t.Fatalf("entry %s, want pending", st)
	}
	if _, err := it.begin(ctx, 1, "B", 24*time.Hour); !errors.Is(err, store.ErrParked) {
		t.Fatalf("IterationBegin of a parked iteration = %v; want ErrParked", err)
	}
	if rec, err := it.park(ctx, 1, "C", msg, time.Hour); err != nil || rec != nil {
		t.Fatalf("IterationPark again under the same entry = %s, %v; want no-op", dump(rec), err)
	}
	if _, err := it.park(ctx, 1, "C", msg+"-other", time.Hour); !errors.Is(err, store.ErrParked) {
		t.Fatalf("IterationPark under another entry = %v; want ErrParked", err)
	}
	status, holder, _, err := s.IterationGet(ctx, id, it.key, 1)
	if err != nil || status != types.StatusRunning || holder != store.ParkHolder(msg) {
		t.Fatalf("IterationGet of the parked record = %s %q %v", status, holder, err)
	}
	rec, err := s.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: id, LoopKey: it.key, Index: 1, Holder: "R", TTL: iterLeaseTTL, Now: it.t0.Add(time.Hour), Unpark: msg})
	if err != nil || rec != nil {
		t.Fatalf("IterationBegin by the entry's replay = %s, %v; want the lease", dump(rec), err)
	}
	if st, _ := dlqStatus(ctx, t, s, msg); st != store.DLQReplayed {
		t.Fatalf("entry after its replay took the iteration: %s, want replayed", st)
	}
	it.mustEnd(ctx, iteration(1), "R", true)
}

// testIterationParkHeld: a live lease of another holder is ErrLeaseHeld
// (nothing filed); once expired, or released, the park takes it.
func testIterationParkHeld(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	msg := "unit-" + id
	it.mustBegin(ctx, 2, "A", 0)
	if _, err := it.park(ctx, 2, "B", msg, time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("IterationPark over a live lease = %v; want ErrLeaseHeld", err)
	}
	if _, err := s.DLQGet(ctx, msg); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an entry was filed over a live lease: %v", err)
	}
	if rec, err := it.park(ctx, 2, "B", msg, iterLeaseTTL+time.Second); err != nil || rec != nil {
		t.Fatalf("IterationPark over an expired lease = %s, %v", dump(rec), err)
	}
	it.mustBegin(ctx, 3, "A", 0)
	it.release(ctx, 3, "A")
	if rec, err := it.park(ctx, 3, "B", msg+"-3", time.Second); err != nil || rec != nil {
		t.Fatalf("IterationPark of a released iteration = %s, %v", dump(rec), err)
	}
	if rec, err := it.park(ctx, 4, "", msg+"-4", 0); err != nil || rec != nil {
		t.Fatalf("IterationPark of an iteration without a record = %s, %v", dump(rec), err)
	}
}

// testIterationParkEnded: an ended iteration is returned and nothing is
// filed.
func testIterationParkEnded(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	msg := "unit-" + id
	it.mustEnd(ctx, iteration(0), "", true)
	rec, err := it.park(ctx, 0, "A", msg, 0)
	if err != nil || rec == nil {
		t.Fatalf("IterationPark of an ended iteration = %s, %v; want its record", dump(rec), err)
	}
	mustEqual(t, "record", iteration(0), *rec)
	if _, err := s.DLQGet(ctx, msg); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an ended iteration was filed: %v", err)
	}
}

// testIterationEndParked: a parked iteration is ended by whoever ends it
// (a delivery that ran before the park, a discard), its entry resolved as
// Resolve says (done by default) in the same commit; the iteration counts.
func testIterationEndParked(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	for i, c := range []struct {
		holder  string
		resolve func(string) store.DLQResolution
		want    store.DLQStatus
	}{
		{"A", nil, store.DLQDone},
		{"", func(string) store.DLQResolution {
			return store.DLQResolution{Status: store.DLQDiscarded, Note: "bad"}
		}, store.DLQDiscarded},
	} {
		msg := "unit-" + id + "-" + string(rune('a'+i))
		it.mustBegin(ctx, i, "A", 0)
		if _, err := it.park(ctx, i, "A", msg, iterLeaseTTL+time.Second); err != nil {
			t.Fatal(err)
		}
		first, err := s.IterationEnd(ctx, store.IterationEndParams{ExecutionID: id, LoopKey: it.key, Record: iteration(i), Holder: c.holder,
			Now: it.t0.Add(iterLeaseTTL + 2*time.Second), Resolve: c.resolve})
		if err != nil || !first {
			t.Fatalf("IterationEnd(parked, holder %q) = %v, %v; want first", c.holder, first, err)
		}
		if st, _ := dlqStatus(ctx, t, s, msg); st != c.want {
			t.Fatalf("entry after the end: %s, want %s", st, c.want)
		}
	}
	if n := count(ctx, t, s, id, it.key); n != 2 {
		t.Fatalf("IterationCount = %d, want 2", n)
	}
}

// testIterationRunning: IterationRunning lists the records that did not
// complete — leased, released, parked, canceled (with its clock) — and
// IterationList and IterationCount ignore canceled ones.
func testIterationRunning(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustBegin(ctx, 0, "A", 0)
	it.mustBegin(ctx, 1, "B", 0)
	it.release(ctx, 1, "B")
	if _, err := it.park(ctx, 2, "", "unit-"+id, 0); err != nil {
		t.Fatal(err)
	}
	it.mustEnd(ctx, engine.IterationRecord{Index: 3, Status: types.StatusCanceled, Clock: 77, Error: map[string]any{"kind": "canceled"}}, "", true)
	it.mustEnd(ctx, iteration(4), "", true)
	got, err := s.IterationRunning(ctx, id, it.key)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.IterationLease{
		{Index: 0, Status: types.StatusRunning, Holder: "A"},
		{Index: 1, Status: types.StatusRunning},
		{Index: 2, Status: types.StatusRunning, Holder: store.ParkHolder("unit-" + id)},
		{Index: 3, Status: types.StatusCanceled, Clock: 77},
	}
	for i := range got {
		got[i].Expires = time.Time{}
	}
	mustEqual(t, "IterationRunning", want, got)
	mustEqual(t, "IterationList", []engine.IterationRecord{iteration(4)}, it.list(ctx))
	if n := count(ctx, t, s, id, it.key); n != 1 {
		t.Fatalf("IterationCount = %d, want 1 (canceled records do not count)", n)
	}
	rec, err := it.begin(ctx, 3, "C", 0)
	if err != nil || rec == nil || rec.Status != types.StatusCanceled {
		t.Fatalf("IterationBegin of a canceled iteration = %s, %v; want its record", dump(rec), err)
	}
}

// testIterationEndReleased: an end without a holder takes a released or
// expired record, and leaves a live lease to its holder.
func testIterationEndReleased(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	it := newIters(t, s, id)
	it.mustBegin(ctx, 0, "A", 0)
	end := func(idx int, at time.Duration) (bool, error) {
		return s.IterationEnd(ctx, store.IterationEndParams{ExecutionID: id, LoopKey: it.key, Record: iteration(idx), Now: it.t0.Add(at)})
	}
	if first, err := end(0, time.Second); err != nil || first {
		t.Fatalf("IterationEnd without holder over a live lease = %v, %v; want not first", first, err)
	}
	if first, err := end(0, iterLeaseTTL+time.Second); err != nil || !first {
		t.Fatalf("IterationEnd without holder over an expired lease = %v, %v; want first", first, err)
	}
	it.mustBegin(ctx, 1, "A", 0)
	it.release(ctx, 1, "A")
	if first, err := end(1, time.Second); err != nil || !first {
		t.Fatalf("IterationEnd without holder of a released iteration = %v, %v; want first", first, err)
	}
}

// testCheckpointDLQWrites: a checkpoint commits the entry its function
// files and the resolutions it asks for with the state; an entry to
// resolve that does not exist is written bare (not listed).
func testCheckpointDLQWrites(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	filed := parkEntry(id, "unit-"+id+"-filed")
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, Apply: func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Parked = map[string]engine.Park{"fetch.1": {DLQID: filed.MessageID, Step: "fetch", Run: 1}}
		rec.File, rec.Resolve = &filed, nil
		return &engine.Output{}, nil
	}})
	if st, _ := dlqStatus(ctx, t, s, filed.MessageID); st != store.DLQPending {
		t.Fatalf("filed entry %s, want pending", st)
	}
	rec, err := s.ExecutionGet(ctx, id)
	if err != nil || rec.State.Parked["fetch.1"].DLQID != filed.MessageID {
		t.Fatalf("parks after the checkpoint: %+v (%v)", rec.State.Parked, err)
	}
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "resolve-" + id, Apply: func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Parked = nil
		rec.File = nil
		rec.Resolve = []store.DLQResolution{{ID: filed.MessageID, Status: store.DLQDone, Note: "completed"}, {ID: "unit-" + id + "-gone", Status: store.DLQDone}}
		return &engine.Output{}, nil
	}})
	if st, note := dlqStatus(ctx, t, s, filed.MessageID); st != store.DLQDone || note != "completed" {
		t.Fatalf("resolved entry %s %q, want done", st, note)
	}
	if st, _ := dlqStatus(ctx, t, s, "unit-"+id+"-gone"); st != store.DLQDone {
		t.Fatalf("bare resolution %s, want done", st)
	}
	e, err := s.DLQGet(ctx, filed.MessageID)
	if err != nil || e.Attempts != 10 || e.ExecutionID != id {
		t.Fatalf("resolved entry lost its fields: %+v (%v)", e, err)
	}
}
