package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/meter"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

var unitCases = []testCase{
	{"StepCommitsAndReleasesLease", testUnitStepCommits},
	{"StepLeaseLost", testUnitStepLeaseLost},
	{"StepNotAppliedStillReleases", testUnitStepNotApplied},
	{"StepConcurrentExactlyOnce", testUnitStepConcurrent},
	{"StepTakesNextLease", testUnitStepNextLease},
	{"StepNextLeaseHeldOrNotApplied", testUnitStepNextLeaseSkipped},
	{"StepLeaseVersion", testUnitStepLeaseVersion},
	{"IterationEndsAndCountsLane", testUnitIterationLane},
	{"IterationLeaseLost", testUnitIterationLeaseLost},
	{"IterationConcurrentExactlyOnce", testUnitIterationConcurrent},
	{"IterationCanceledOrHeld", testUnitIterationCanceledHeld},
	{"LoopDoneExactlyOnceConcurrent", testUnitLoopDoneConcurrent},
	{"IterationGroupOneDocument", testUnitIterationGroup},
	{"IterationGroupSeenByBeginAndGet", testUnitIterationGroupSeen},
	{"InvalidArgument", testUnitInvalid},
}

// stepEnd is a step unit's completion applying event once (applyOnce).
func stepEnd(id, unit, holder, event string) store.CompleteUnitParams {
	return store.CompleteUnitParams{ExecutionID: id, Unit: unit, Holder: holder,
		Checkpoint: &store.CheckpointParams{OutboxID: "end-" + event, Apply: applyOnce(event, nil)}}
}

// expectLease fails unless the unit's lease is held by holder ("" : none).
func expectLease(ctx context.Context, t *testing.T, s store.Store, id, unit, holder string) {
	t.Helper()
	got, _, err := s.LeaseGet(ctx, id, unit)
	if holder == "" {
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("LeaseGet(%s) = %q, %v; want ErrNotFound (released)", unit, got, err)
		}
		return
	}
	if err != nil || got != holder {
		t.Fatalf("LeaseGet(%s) = %q, %v; want %q", unit, got, err, holder)
	}
}

func counter(ctx context.Context, t *testing.T, s store.Store, id string) int64 {
	t.Helper()
	n, _ := get(ctx, t, s, id).State.Ctx["n"].(int64)
	return n
}

func testUnitStepCommits(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	now := time.Now()
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u1", Holder: "a", TTL: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.CompleteUnit(ctx, stepEnd(id, "u1", "a", "step.done"))
	if err != nil {
		t.Fatalf("CompleteUnit: %v", err)
	}
	if !res.Checkpoint.Applied || res.Checkpoint.Output == nil {
		t.Fatalf("CompleteUnit = %+v, want the checkpoint applied", res)
	}
	if n := counter(ctx, t, s, id); n != 1 {
		t.Fatalf("ctx.n = %d after one completion, want 1", n)
	}
	mustEqual(t, "outbox", incOutput(id, 1), outbox(ctx, t, s, id, "end-step.done"))
	expectLease(ctx, t, s, id, "u1", "")
	// A redelivery after the commit (no lease any more) changes nothing.
	res, err = s.CompleteUnit(ctx, stepEnd(id, "u1", "", "step.done"))
	if err != nil || res.Checkpoint.Applied {
		t.Fatalf("second CompleteUnit = %+v, %v; want not applied", res, err)
	}
	if n := counter(ctx, t, s, id); n != 1 {
		t.Fatalf("ctx.n = %d after a duplicate completion, want 1", n)
	}
}

func testUnitStepLeaseLost(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	now := time.Now()
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u1", Holder: "b", TTL: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	_, err := s.CompleteUnit(ctx, stepEnd(id, "u1", "a", "step.done"))
	if !errors.Is(err, store.ErrLeaseLost) || !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("CompleteUnit by a holder that lost the lease: %v, want ErrLeaseLost", err)
	}
	if n := counter(ctx, t, s, id); n != 0 {
		t.Fatalf("ctx.n = %d: a completion without the lease committed", n)
	}
	expectNoOutbox(ctx, t, s, id, "end-step.done")
	expectLease(ctx, t, s, id, "u1", "b")
	// No lease document at all (released by its holder): lost too.
	_, err = s.CompleteUnit(ctx, stepEnd(id, "u2", "a", "step.done"))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("CompleteUnit of a unit without a lease document: %v, want ErrLeaseLost", err)
	}
}

func testUnitStepNotApplied(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	if _, err := s.CompleteUnit(ctx, stepEnd(id, "u0", "", "step.done")); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u1", Holder: "a", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	res, err := s.CompleteUnit(ctx, stepEnd(id, "u1", "a", "step.done"))
	if err != nil || res.Checkpoint.Applied {
		t.Fatalf("CompleteUnit of a duplicate end = %+v, %v; want not applied", res, err)
	}
	expectLease(ctx, t, s, id, "u1", "")
}

func testUnitStepConcurrent(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	const n = 8
	var wg sync.WaitGroup
	applied := make(chan bool, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.CompleteUnit(ctx, stepEnd(id, "u1", "", "step.done"))
			if err != nil {
				t.Errorf("CompleteUnit: %v", err)
			}
			applied <- res.Checkpoint.Applied
		}()
	}
	wg.Wait()
	close(applied)
	got := 0
	for a := range applied {
		if a {
			got++
		}
	}
	if got != 1 {
		t.Fatalf("%d of %d concurrent completions of one unit applied, want exactly 1", got, n)
	}
	if c := counter(ctx, t, s, id); c != 1 {
		t.Fatalf("ctx.n = %d, want 1", c)
	}
}

// iterEnd is the completion of iteration idx of loop key on lane idx%lanes
// (the lane's last when last), whose loop end applies "loop.done" once.
func iterEnd(id, key string, idx, lanes int, last bool, holder string, ends *int32Counter) store.CompleteUnitParams {
	rec := engine.IterationRecord{Index: idx, Status: types.StatusOK, Result: int64(idx * 10), Clock: int64(idx + 1)}
	return store.CompleteUnitParams{ExecutionID: id, Unit: "iter-" + types.DeriveIDPart(idx), Iteration: &store.IterationCompletion{
		End:      store.IterationEndParams{LoopKey: key, Record: rec, Holder: holder, Now: time.Now()},
		LaneDone: last, Lane: idx % lanes, Lanes: lanes,
		LoopEnd: func(recs []engine.IterationRecord) (*store.CheckpointParams, error) {
			ends.add(len(recs))
			return &store.CheckpointParams{OutboxID: "end-" + key, Apply: applyOnce("loop.done", nil)}, nil
		}}}
}

// int32Counter counts LoopEnd calls and remembers the records they saw.
type int32Counter struct {
	mu    sync.Mutex
	calls int
	recs  []int
}

func (c *int32Counter) add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.recs = append(c.recs, n)
}

func complete(ctx context.Context, t *testing.T, s store.Store, p store.CompleteUnitParams) store.UnitCompletion {
	t.Helper()
	res, err := s.CompleteUnit(ctx, p)
	if err != nil {
		t.Fatalf("CompleteUnit(%s): %v", p.Unit, err)
	}
	return res
}

func testUnitIterationLane(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	key := "fetch.1"
	var ends int32Counter
	// Two lanes of two iterations: 0 → 2 on lane 0, 1 → 3 on lane 1.
	if r := complete(ctx, t, s, iterEnd(id, key, 0, 2, false, "", &ends)); !r.First || r.LoopOwner {
		t.Fatalf("iteration 0 = %+v, want first, no loop end", r)
	}
	if r := complete(ctx, t, s, iterEnd(id, key, 2, 2, true, "", &ends)); !r.First || r.LoopOwner {
		t.Fatalf("iteration 2 (lane 0's last) = %+v, want first, loop not done", r)
	}
	if n, err := s.LaneCount(ctx, id, key); err != nil || n != 1 {
		t.Fatalf("LaneCount = %d, %v after lane 0 ended, want 1", n, err)
	}
	// A duplicate of lane 0's last changes nothing.
	if r := complete(ctx, t, s, iterEnd(id, key, 2, 2, true, "", &ends)); r.First || r.LoopOwner {
		t.Fatalf("duplicate of iteration 2 = %+v, want not first", r)
	}
	if n, _ := s.LaneCount(ctx, id, key); n != 1 {
		t.Fatalf("LaneCount = %d after a duplicate, want 1", n)
	}
	complete(ctx, t, s, iterEnd(id, key, 1, 2, false, "", &ends))
	r := complete(ctx, t, s, iterEnd(id, key, 3, 2, true, "", &ends))
	if !r.First || !r.LoopOwner || !r.Checkpoint.Applied || r.LoopRecords != 4 {
		t.Fatalf("iteration 3 (the loop's last) = %+v, want first, loop owner, loop end applied over 4 records", r)
	}
	if ends.calls != 1 || counter(ctx, t, s, id) != 1 {
		t.Fatalf("LoopEnd called %d times, ctx.n = %d; want 1 and 1", ends.calls, counter(ctx, t, s, id))
	}
	recs, err := s.IterationList(ctx, id, key)
	if err != nil || len(recs) != 4 || recs[3].Result != int64(30) {
		t.Fatalf("IterationList = %+v, %v", recs, err)
	}
	// The owner's redelivery finishes the job again without applying twice.
	r = complete(ctx, t, s, iterEnd(id, key, 3, 2, true, "", &ends))
	if r.First || !r.LoopOwner || r.Checkpoint.Applied {
		t.Fatalf("redelivery of iteration 3 = %+v, want the owner again, not applied", r)
	}
	if c := counter(ctx, t, s, id); c != 1 {
		t.Fatalf("ctx.n = %d after the owner's redelivery, want 1", c)
	}
}

func testUnitIterationLeaseLost(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	key := "fetch.1"
	now := time.Now()
	if _, err := s.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: id, LoopKey: key, Index: 0, Holder: "b", TTL: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	var ends int32Counter
	_, err := s.CompleteUnit(ctx, iterEnd(id, key, 0, 1, true, "a", &ends))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("CompleteUnit by a holder that lost the iteration: %v, want ErrLeaseLost", err)
	}
	status, holder, _, err := s.IterationGet(ctx, id, key, 0)
	if err != nil || status != types.StatusRunning || holder != "b" {
		t.Fatalf("record = %s held by %q, %v; want running, held by b", status, holder, err)
	}
	if n, _ := s.LaneCount(ctx, id, key); n != 0 {
		t.Fatalf("LaneCount = %d: a refused completion marked its lane", n)
	}
	// The holder's own completion goes through.
	if r := complete(ctx, t, s, iterEnd(id, key, 0, 1, false, "b", &ends)); !r.First {
		t.Fatalf("holder's completion = %+v, want first", r)
	}
}

func testUnitIterationConcurrent(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	key := "fetch.1"
	const n = 8
	var ends int32Counter
	var wg sync.WaitGroup
	firsts := make(chan bool, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.CompleteUnit(ctx, iterEnd(id, key, 5, 4, false, "", &ends))
			if err != nil {
				t.Errorf("CompleteUnit: %v", err)
			}
			firsts <- res.First
		}()
	}
	wg.Wait()
	close(firsts)
	got := 0
	for f := range firsts {
		if f {
			got++
		}
	}
	if got != 1 {
		t.Fatalf("%d of %d concurrent completions of one iteration recorded it, want exactly 1", got, n)
	}
}

func testUnitIterationCanceledHeld(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	key := "fetch.1"
	now := time.Now()
	if _, err := s.IterationEnd(ctx, store.IterationEndParams{ExecutionID: id, LoopKey: key, Now: now,
		Record: engine.IterationRecord{Index: 0, Status: types.StatusCanceled}}); err != nil {
		t.Fatal(err)
	}
	var ends int32Counter
	if r := complete(ctx, t, s, iterEnd(id, key, 0, 1, true, "", &ends)); r.First || !r.Canceled || r.LoopOwner {
		t.Fatalf("completion of a canceled iteration = %+v, want canceled, nothing else", r)
	}
	if n, _ := s.LaneCount(ctx, id, key); n != 0 {
		t.Fatalf("LaneCount = %d: a canceled iteration marked its lane", n)
	}
	if _, err := s.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: id, LoopKey: key, Index: 1, Holder: "b", TTL: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	if r := complete(ctx, t, s, iterEnd(id, key, 1, 2, true, "", &ends)); r.First || !r.Held {
		t.Fatalf("lease-less completion of an iteration another delivery holds = %+v, want held", r)
	}
	if status, _, _, _ := s.IterationGet(ctx, id, key, 1); status != types.StatusRunning {
		t.Fatalf("held record is %s, want running", status)
	}
	if ends.calls != 0 {
		t.Fatalf("LoopEnd called %d times", ends.calls)
	}
}

func testUnitLoopDoneConcurrent(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	key := "fetch.1"
	const lanes = 6
	var ends int32Counter
	var wg sync.WaitGroup
	applied := make(chan bool, 2*lanes)
	// Each lane's only iteration ends twice at once (a redelivery racing
	// the first delivery), all lanes together.
	for i := range 2 * lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.CompleteUnit(ctx, iterEnd(id, key, i%lanes, lanes, true, "", &ends))
			if err != nil {
				t.Errorf("CompleteUnit(%d): %v", i%lanes, err)
			}
			applied <- res.Checkpoint.Applied
		}()
	}
	wg.Wait()
	close(applied)
	got := 0
	for a := range applied {
		if a {
			got++
		}
	}
	if got != 1 {
		t.Fatalf("the loop's end applied %d times, want exactly once", got)
	}
	if c := counter(ctx, t, s, id); c != 1 {
		t.Fatalf("ctx.n = %d, want 1", c)
	}
	for _, n := range ends.recs {
		if n != lanes {
			t.Fatalf("LoopEnd saw %d records, want all %d (calls %v)", n, lanes, ends.recs)
		}
	}
}

func testUnitInvalid(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	for name, p := range map[string]store.CompleteUnitParams{
		"neither":   {ExecutionID: id, Unit: "u"},
		"no unit":   {ExecutionID: id, Checkpoint: &store.CheckpointParams{Apply: applyOnce("x", nil)}},
		"no lanes":  {ExecutionID: id, Unit: "u", Iteration: &store.IterationCompletion{End: store.IterationEndParams{LoopKey: "k", Record: engine.IterationRecord{Status: types.StatusOK}}, LaneDone: true}},
		"bad state": {ExecutionID: id, Unit: "u", Iteration: &store.IterationCompletion{End: store.IterationEndParams{LoopKey: "k", Record: engine.IterationRecord{Status: types.StatusRunning}}}},
		"leased group": {ExecutionID: id, Unit: "u", Iteration: &store.IterationCompletion{End: store.IterationEndParams{LoopKey: "k", Holder: "h", Record: engine.IterationRecord{Index: 1, Status: types.StatusOK}},
			Group: []engine.IterationRecord{{Index: 0, Status: types.StatusOK}}}},
		"canceled in a group": {ExecutionID: id, Unit: "u", Iteration: &store.IterationCompletion{End: store.IterationEndParams{LoopKey: "k", Record: engine.IterationRecord{Index: 1, Status: types.StatusOK}},
			Group: []engine.IterationRecord{{Index: 0, Status: types.StatusCanceled}}}},
		"index twice in a group": {ExecutionID: id, Unit: "u", Iteration: &store.IterationCompletion{End: store.IterationEndParams{LoopKey: "k", Record: engine.IterationRecord{Index: 1, Status: types.StatusOK}},
			Group: []engine.IterationRecord{{Index: 1, Status: types.StatusOK}}}},
	} {
		if _, err := s.CompleteUnit(ctx, p); !errs.Is(err, errs.InvalidArgument) {
			t.Errorf("%s: CompleteUnit = %v, want InvalidArgument", name, err)
		}
	}
}

// withNext gives p the continued unit's lease (Next) for holder: the unit
// is the one p's Apply released in the commit (next), "" when it
// released none.
func withNext(p store.CompleteUnitParams, next, holder string) store.CompleteUnitParams {
	released := ""
	cp := *p.Checkpoint
	apply := cp.Apply
	cp.Apply = func(rec *store.Execution) (*engine.Output, error) {
		out, err := apply(rec)
		released = ""
		if out != nil && err == nil {
			released = next
		}
		return out, err
	}
	p.Checkpoint = &cp
	p.Next = &store.NextLease{Unit: func() string { return released }, Holder: holder, TTL: time.Minute, Now: time.Now()}
	return p
}

func testUnitStepNextLease(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u1", Holder: "a", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	res, err := s.CompleteUnit(ctx, withNext(stepEnd(id, "u1", "a", "step.done"), "u2", "b"))
	if err != nil || !res.Checkpoint.Applied || !res.NextLeased {
		t.Fatalf("CompleteUnit with Next = %+v, %v; want applied with the next lease taken", res, err)
	}
	expectLease(ctx, t, s, id, "u1", "")
	expectLease(ctx, t, s, id, "u2", "b")
	// The lease taken is an ordinary one: its holder renews it, another
	// holder cannot take it.
	if err := s.LeaseRenew(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u2", Holder: "b", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatalf("LeaseRenew of the lease Next took: %v", err)
	}
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u2", Holder: "c", TTL: time.Minute, Now: time.Now()}); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("LeaseAcquire by another holder of the lease Next took: %v, want ErrLeaseHeld", err)
	}
	// A unit that ran without a lease (Holder "") takes its next one too.
	res, err = s.CompleteUnit(ctx, withNext(stepEnd(id, "u2x", "", "step.failed"), "u3", "d"))
	if err != nil || !res.Checkpoint.Applied || !res.NextLeased {
		t.Fatalf("CompleteUnit without a lease, with Next = %+v, %v; want the next lease taken", res, err)
	}
	expectLease(ctx, t, s, id, "u3", "d")
}

func testUnitStepNextLeaseSkipped(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	now := time.Now()
	// The next unit is leased already: the end commits, that lease stays.
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u2", Holder: "x", TTL: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u1", Holder: "a", TTL: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.CompleteUnit(ctx, withNext(stepEnd(id, "u1", "a", "step.done"), "u2", "b"))
	if err != nil || !res.Checkpoint.Applied || res.NextLeased {
		t.Fatalf("CompleteUnit with a next unit leased already = %+v, %v; want applied, next lease not taken", res, err)
	}
	if n := counter(ctx, t, s, id); n != 1 {
		t.Fatalf("ctx.n = %d, want 1", n)
	}
	expectLease(ctx, t, s, id, "u1", "")
	expectLease(ctx, t, s, id, "u2", "x")
	// An end that does not apply (a duplicate) takes no lease.
	res, err = s.CompleteUnit(ctx, withNext(stepEnd(id, "u1", "", "step.done"), "u4", "b"))
	if err != nil || res.Checkpoint.Applied || res.NextLeased {
		t.Fatalf("duplicate CompleteUnit with Next = %+v, %v; want neither applied nor leased", res, err)
	}
	expectLease(ctx, t, s, id, "u4", "")
}

// groupEnd is iterEnd of idx with the records of group (earlier
// iterations of its lane whose ends were not committed) in its commit.
func groupEnd(id, key string, idx, lanes int, last bool, ends *int32Counter, group ...int) store.CompleteUnitParams {
	p := iterEnd(id, key, idx, lanes, last, "", ends)
	for _, g := range group {
		p.Iteration.Group = append(p.Iteration.Group, engine.IterationRecord{Index: g, Status: types.StatusOK, Result: int64(g * 10), Clock: int64(g + 1)})
	}
	return p
}

// testUnitIterationGroup: a group of ends commits as one document (one
// write, with its lane's marker), counts for the loop once per index
// (a second grouping of the same iterations, and an index also ended in
// its own document, add nothing), and the same group committed again is
// not first.
func testUnitIterationGroup(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	key := "fetch.1"
	var ends int32Counter
	// Two lanes of four iterations: lane 0 is 0, 2, 4, 6; lane 1 is 1, 3,
	// 5, 7. Lane 0 ends in one group.
	m := meter.New()
	r := complete(meter.With(ctx, m), t, s, groupEnd(id, key, 6, 2, true, &ends, 0, 2, 4))
	if !r.First || r.LoopOwner {
		t.Fatalf("lane 0's group = %+v, want first, loop not done", r)
	}
	if got := m.Drain(id)[meter.FirestoreWrite]; got != 2 {
		t.Errorf("a group of 4 ends with its lane's marker cost %v writes, want 2 (one document and the marker)", got)
	}
	if n, err := s.LaneCount(ctx, id, key); err != nil || n != 1 {
		t.Fatalf("LaneCount = %d, %v after lane 0's group, want 1", n, err)
	}
	// The same group again (a redelivery committing what it committed):
	// nothing changes, the marker stays.
	if r := complete(ctx, t, s, groupEnd(id, key, 6, 2, true, &ends, 0, 2, 4)); r.First || r.LoopOwner {
		t.Fatalf("the same group again = %+v, want not first", r)
	}
	// Lane 1 in two groups, the second over an index the first recorded
	// and one ended in its own document (two deliveries of one batch).
	complete(ctx, t, s, groupEnd(id, key, 3, 2, false, &ends, 1))
	complete(ctx, t, s, iterEnd(id, key, 5, 2, false, "", &ends))
	if n, err := s.IterationCount(ctx, id, key); err != nil || n != 7 {
		t.Fatalf("IterationCount = %d, %v with 7 distinct iterations ended, want 7", n, err)
	}
	r = complete(ctx, t, s, groupEnd(id, key, 7, 2, true, &ends, 3, 5))
	if !r.First || !r.LoopOwner || !r.Checkpoint.Applied || r.LoopRecords != 8 {
		t.Fatalf("lane 1's last group = %+v, want first, loop owner, loop end applied over 8 records", r)
	}
	recs, err := s.IterationList(ctx, id, key)
	if err != nil || len(recs) != 8 {
		t.Fatalf("IterationList = %d records, %v; want 8", len(recs), err)
	}
	for i, rec := range recs {
		if rec.Index != i || rec.Result != int64(i*10) || rec.Status != types.StatusOK {
			t.Fatalf("IterationList[%d] = %+v, want iteration %d ok with result %d", i, rec, i, i*10)
		}
	}
	if n, err := s.IterationCount(ctx, id, key); err != nil || n != 8 {
		t.Fatalf("IterationCount = %d, %v; want 8", n, err)
	}
}

// testUnitIterationGroupSeen: an iteration ended in a group is ended for
// IterationBegin (Grouped: its record returned, no lease taken) and for
// IterationGet; without Grouped, Begin leases it as before.
func testUnitIterationGroupSeen(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	key := "fetch.1"
	var ends int32Counter
	complete(ctx, t, s, groupEnd(id, key, 2, 1, false, &ends, 0, 1))
	now := time.Now()
	rec, err := s.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: id, LoopKey: key, Index: 1, Holder: "h", TTL: time.Minute, Now: now, Grouped: true})
	if err != nil || rec == nil || rec.Index != 1 || rec.Status != types.StatusOK || rec.Result != int64(10) {
		t.Fatalf("IterationBegin(grouped iteration 1) = %+v, %v; want its ended record", rec, err)
	}
	status, holder, _, err := s.IterationGet(ctx, id, key, 1)
	if err != nil || status != types.StatusOK || holder != "" {
		t.Fatalf("IterationGet(grouped iteration 1) = %s %q, %v; want ok, no holder", status, holder, err)
	}
	if _, _, _, err := s.IterationGet(ctx, id, key, 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("IterationGet(iteration 3, never run) = %v, want ErrNotFound", err)
	}
	// Filing an iteration ended in a group finds it ended: nothing is
	// filed, nothing parked (a late delivery's last attempt).
	e := store.DLQEntry{MessageID: "park-grouped-" + id, ExecutionID: id, StepID: "fetch", LoopKey: key, Kind: store.DLQUnit, Source: "execute"}
	rec, err = s.IterationPark(ctx, store.IterationParkParams{ExecutionID: id, LoopKey: key, Index: 0, Entry: e, Now: now, Grouped: true})
	if err != nil || rec == nil || rec.Index != 0 || rec.Status != types.StatusOK {
		t.Fatalf("IterationPark(grouped iteration 0) = %+v, %v; want its ended record", rec, err)
	}
	if _, err := s.DLQGet(ctx, store.DLQID(e.MessageID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DLQGet after filing an iteration ended in a group = %v, want ErrNotFound (nothing filed)", err)
	}
	if status, _, _, err := s.IterationGet(ctx, id, key, 0); err != nil || status != types.StatusOK {
		t.Fatalf("IterationGet(0) after the filing = %s, %v; want ok (not parked)", status, err)
	}
	// Not grouped: an iteration not in a group is leased as before.
	if rec, err := s.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: id, LoopKey: key, Index: 3, Holder: "h", TTL: time.Minute, Now: now, Grouped: true}); err != nil || rec != nil {
		t.Fatalf("IterationBegin(grouped loop, iteration 3 not in a group) = %+v, %v; want the lease", rec, err)
	}
	if status, holder, _, err := s.IterationGet(ctx, id, key, 3); err != nil || status != types.StatusRunning || holder != "h" {
		t.Fatalf("IterationGet(3) = %s %q, %v; want running, held by h", status, holder, err)
	}
}

// testUnitStepLeaseVersion: the version of a lease taken with an end
// (NextLeaseVersion) ends its unit as its holder's lease
// (CompleteUnitParams.LeaseVersion), releasing it; a version no longer
// the lease's (renewed since, or a garbage one) gives the same answer as
// none, and one of a lease taken over is ErrLeaseLost; an end that does
// not apply still checks and releases the lease.
func testUnitStepLeaseVersion(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	// chain ends unit with holder at version, taking next's lease for
	// nextHolder; it returns next's version.
	// reads is the Firestore reads the last end metered: the execution
	// document's (no Base), and the lease's unless its version stood for it.
	reads := 0.0
	chain := func(name, unit, holder, version, next, nextHolder string) string {
		t.Helper()
		p := withNext(stepEnd(id, unit, holder, "done."+unit), next, nextHolder)
		p.LeaseVersion = version
		m := meter.New()
		res, err := s.CompleteUnit(meter.With(ctx, m), p)
		reads = m.Drain(id)[meter.FirestoreRead]
		if err != nil || !res.Checkpoint.Applied || !res.NextLeased || res.NextLeaseVersion == "" {
			t.Fatalf("%s: CompleteUnit = %+v, %v; want applied, the next lease taken with its version", name, res, err)
		}
		expectLease(ctx, t, s, id, unit, "")
		expectLease(ctx, t, s, id, next, nextHolder)
		return res.NextLeaseVersion
	}
	v := chain("the first end", "u0", "", "", "u1", "a")
	v = chain("the lease's own version", "u1", "a", v, "u2", "b")
	if reads != 1 {
		t.Fatalf("the end with its lease's version metered %v reads, want 1 (the execution document; the lease not read)", reads)
	}
	if err := s.LeaseRenew(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u2", Holder: "b", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	v = chain("a version renewed since", "u2", "b", v, "u3", "c")
	v3 := v
	chain("a garbage version", "u3", "c", "not-a-version", "u4", "d")
	if reads != 2 {
		t.Fatalf("the end with a garbage version metered %v reads, want 2 (the execution document and the lease)", reads)
	}
	// u4's lease expires and another holder takes it over: its first
	// holder's version is refused.
	if err := s.LeaseRenew(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u4", Holder: "d", TTL: time.Millisecond, Now: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u4", Holder: "e", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p := stepEnd(id, "u4", "d", "done.u4")
	p.LeaseVersion = v3
	if _, err := s.CompleteUnit(ctx, p); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("CompleteUnit by a holder whose lease was taken over = %v, want ErrLeaseLost", err)
	}
	expectLease(ctx, t, s, id, "u4", "e")
	// A duplicate end with the lease's version: not applied, the lease
	// released; with another holder's lease, ErrLeaseLost.
	if err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: id, Unit: "u5", Holder: "f", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p = stepEnd(id, "u5", "g", "done.u5")
	p.LeaseVersion = v3
	if _, err := s.CompleteUnit(ctx, p); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("duplicate CompleteUnit by a holder without the lease = %v, want ErrLeaseLost", err)
	}
	expectLease(ctx, t, s, id, "u5", "f")
	p = withNext(stepEnd(id, "u9", "", "done.u9"), "u6", "h")
	res, err := s.CompleteUnit(ctx, p)
	if err != nil || !res.NextLeased {
		t.Fatalf("CompleteUnit = %+v, %v", res, err)
	}
	p = stepEnd(id, "u6", "h", "done.u1") // applied before: a duplicate
	p.LeaseVersion = res.NextLeaseVersion
	if res, err := s.CompleteUnit(ctx, p); err != nil || res.Checkpoint.Applied {
		t.Fatalf("duplicate CompleteUnit with the lease's version = %+v, %v; want not applied", res, err)
	}
	expectLease(ctx, t, s, id, "u6", "")
}
