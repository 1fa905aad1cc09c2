package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// concurrency is the number of goroutines of the concurrent subtests.
const concurrency = 8

var executionCases = []testCase{
	{"RoundTrip", testExecutionRoundTrip},
	{"RoundTripMinimal", testExecutionRoundTripMinimal},
	{"FilesSurviveCheckpoints", testExecutionFiles},
	{"CreateExists", testExecutionCreateExists},
	{"CreateConcurrentOnce", testExecutionCreateConcurrentOnce},
	{"CreateInvalid", testExecutionCreateInvalid},
	{"GetNotFound", testExecutionGetNotFound},
	{"UpdateTime", testExecutionUpdateTime},
	{"ListNewestFirstFiltered", testExecutionList},
	{"CountByStatusAndTime", testExecutionCount},
	{"Watch", testExecutionWatch},
	{"WatchNotFound", testExecutionWatchNotFound},
}

// sampleState returns a state that exercises every generic field with ints,
// floats, nulls, nested maps and lists of lists, including those of the
// resume command, the queued tokens and the join waits (step scope vars and
// token vars too: both drivers once returned their numbers as json.Number,
// the decoder normalised only the fields it listed).
func sampleState(id string) *engine.State {
	return &engine.State{
		ExecutionID: id,
		ParentID:    "parent-" + id,
		Playbook:    "tests/storetest/sample",
		Status:      engine.ExecRunning,
		Workload: map[string]any{
			"count": int64(3),
			"big":   int64(1<<53 + 1), // not representable as float64
			"neg":   int64(-7),
			"zero":  int64(0),
			"ratio": 1.5,
			"name":  "storetest",
			"on":    true,
			"none":  nil,
			"matrix": []any{
				[]any{int64(1), int64(2)},
				[]any{int64(3), []any{int64(4), "x", []any{2.25}}},
				[]any{},
			},
			"obj": map[string]any{"k": int64(1), "list": []any{map[string]any{"n": int64(2)}}},
		},
		Ctx: map[string]any{
			"page": int64(1),
			"seen": []any{[]any{"a", int64(1)}, []any{"b", int64(2)}},
		},
		Results: map[string]any{
			"fetch": map[string]any{
				"rows":  []any{[]any{int64(1), "a", 2.5}, []any{int64(2), "b", nil}},
				"count": int64(2),
			},
			"start": int64(42),
		},
		Steps: map[string]*engine.StepState{
			"start": {Status: types.StatusOK, Run: 1, Runs: 1, StartedAt: rfc3339("2026-01-02T03:04:05.000Z"), FinishedAt: rfc3339("2026-01-02T03:04:06.000Z"), DurationMS: 1000},
			"fetch": {
				Status: types.StatusRunning, Run: 2, Runs: 1,
				Args:  map[string]any{"page": int64(2), "ids": []any{[]any{int64(1)}, []any{int64(2), int64(3)}}},
				Vars:  map[string]any{"seen": int64(4), "acc": []any{[]any{int64(5), 0.5}}},
				Loop:  &engine.LoopStatus{Total: 3, Mode: "parallel", MaxInFlight: 2},
				Error: map[string]any{"kind": "http", "status": int64(503), "retryable": true},
				Pending: []engine.Token{
					{Args: map[string]any{"page": int64(3), "grid": []any{[]any{1.5}}}, Vars: map[string]any{"n": int64(6)}, From: "start", FromRun: 1},
					{From: "other", FromRun: 2},
				},
			},
		},
		Active:     1,
		Version:    7,
		Clock:      12,
		CreatedAt:  rfc3339("2026-01-02T03:04:05.123Z"),
		StartedAt:  rfc3339("2026-01-02T03:04:05.200Z"),
		Failures:   []string{"other"},
		Result:     []any{[]any{int64(1), 1.25}},
		LastStep:   "fetch",
		ParentIter: map[string]any{"index": int64(4), "item": []any{int64(1), "a"}},
		RerunOf:    "source-" + id,
		RerunFrom:  engine.RerunFailed,
		Reuse: map[string]*engine.ReusedRun{"load.2": {Step: "load", Run: 2, Args: map[string]any{"page": int64(2)},
			Result: map[string]any{"rows": []any{[]any{int64(1), 0.5}}}, Ctx: map[string]any{"n": int64(3)}, Vars: map[string]any{"k": []any{int64(4)}},
			Loop: &engine.LoopStatus{Total: 3, Mode: "parallel", MaxInFlight: 2}}},
		Joins: map[string]*engine.JoinWait{"merge": {Arrived: []engine.Token{
			{Args: map[string]any{"k": int64(8)}, Vars: map[string]any{"v": []any{int64(9)}}, From: "fetch", FromRun: 2},
		}}},
		Resume: &types.Command{
			ID: "resume-" + id, Kind: types.CmdRunStep, ExecutionID: "parent-" + id, Step: "call", StepRun: 1,
			Iteration: types.IntPtr(4), LoopTotal: 9, Item: []any{int64(1), "a"},
			Args: map[string]any{"n": int64(1)}, TaskIndex: 1, Attempt: 2,
			TaskResults: map[string]any{"first": []any{[]any{int64(7)}}}, StateVersion: 3, Clock: 5,
			Spill: map[string]any{"$ref": map[string]any{"bytes": int64(10)}}, CursorRest: []any{map[string]any{"id": int64(11)}},
			StepVars: map[string]any{"s": int64(12)}, Vars: map[string]any{"v": int64(13)},
			Unit: &types.Command{Kind: types.CmdRunStep, ExecutionID: "parent-" + id, Step: "call", Item: int64(14), Args: map[string]any{"a": int64(15)}},
		},
	}
}

// exec wraps a state in an Execution with a per-execution source.
func exec(st *engine.State) *store.Execution {
	return &store.Execution{State: st, Source: "name: " + st.ExecutionID + "\n"}
}

func create(ctx context.Context, t *testing.T, s store.Store, st *engine.State) {
	t.Helper()
	if err := s.ExecutionCreate(ctx, exec(st)); err != nil {
		t.Fatalf("ExecutionCreate(%s): %v", st.ExecutionID, err)
	}
}

func get(ctx context.Context, t *testing.T, s store.Store, id string) *store.Execution {
	t.Helper()
	rec, err := s.ExecutionGet(ctx, id)
	if err != nil {
		t.Fatalf("ExecutionGet(%s): %v", id, err)
	}
	if rec == nil || rec.State == nil {
		t.Fatalf("ExecutionGet(%s) returned no state: %#v", id, rec)
	}
	return rec
}

func testExecutionRoundTrip(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: sample\n"
	if err := s.ExecutionCreate(ctx, &store.Execution{State: sampleState(id), Source: src}); err != nil {
		t.Fatalf("ExecutionCreate: %v", err)
	}
	rec := get(ctx, t, s, id)
	if rec.Source != src {
		t.Errorf("Source = %q, want %q", rec.Source, src)
	}
	mustEqual(t, "State", sampleState(id), rec.State)
	// A second read must not share mutable state with the first.
	rec.State.Workload["count"] = int64(100)
	rec.State.Steps["fetch"].Pending[0].Args["page"] = int64(100)
	mustEqual(t, "State (second read)", sampleState(id), get(ctx, t, s, id).State)
}

// testExecutionFiles: the files of a playbook submitted from a file
// (Execution.Files) read back as written, from the optimistic and the
// reading checkpoint paths, and survive checkpoints (which write the
// state only).
func testExecutionFiles(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	files := map[string]store.ExecutionFile{"scripts/create.sql": {SHA256: "ab12", Content: "CREATE TABLE t (id int);\n"}}
	if err := s.ExecutionCreate(ctx, &store.Execution{State: sampleState(id), Source: "x", Files: files}); err != nil {
		t.Fatalf("ExecutionCreate: %v", err)
	}
	rec := get(ctx, t, s, id)
	mustEqual(t, "Files", files, rec.Files)
	for _, base := range []*store.Execution{nil, rec} {
		var seen map[string]store.ExecutionFile
		if _, err := s.ExecutionCheckpoint(ctx, store.CheckpointParams{ExecutionID: id, OutboxID: "ob-" + strconv.FormatBool(base != nil), Base: base,
			Apply: func(r *store.Execution) (*engine.Output, error) {
				seen = r.Files
				return &engine.Output{}, nil
			}}); err != nil {
			t.Fatalf("ExecutionCheckpoint: %v", err)
		}
		mustEqual(t, "Files seen by a checkpoint", files, seen)
	}
	mustEqual(t, "Files after checkpoints", files, get(ctx, t, s, id).Files)
	if other := get(ctx, t, s, mustCreate(ctx, t, s)); other.Files != nil {
		t.Fatalf("an execution created without files reads %v", other.Files)
	}
}

// mustCreate creates a sample execution without files and returns its id.
func mustCreate(ctx context.Context, t *testing.T, s store.Store) string {
	id := uniqueID(t) + "-plain"
	create(ctx, t, s, sampleState(id))
	return id
}

// testExecutionRoundTripMinimal: a state without maps reads back with
// usable (non-nil) maps.
func testExecutionRoundTripMinimal(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, &engine.State{ExecutionID: id, Status: engine.ExecRequested, CreatedAt: rfc3339("2026-01-02T03:04:05.000Z")})
	st := get(ctx, t, s, id).State
	if st.ExecutionID != id || st.Status != engine.ExecRequested {
		t.Fatalf("got ExecutionID=%q Status=%q", st.ExecutionID, st.Status)
	}
	if st.Workload == nil || st.Ctx == nil || st.Results == nil || st.Steps == nil {
		t.Fatalf("nil maps after read: Workload=%v Ctx=%v Results=%v Steps=%v", st.Workload == nil, st.Ctx == nil, st.Results == nil, st.Steps == nil)
	}
}

func testExecutionCreateExists(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	other := sampleState(id)
	other.Status = engine.ExecFailed
	other.Version = 99
	err := s.ExecutionCreate(ctx, &store.Execution{State: other, Source: "other"})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("second ExecutionCreate: err = %v, want ErrExists", err)
	}
	rec := get(ctx, t, s, id)
	if rec.State.Status != engine.ExecRunning || rec.State.Version != 7 || rec.Source == "other" {
		t.Fatalf("second create overwrote the document: status=%q version=%d source=%q", rec.State.Status, rec.State.Version, rec.Source)
	}
}

func testExecutionCreateConcurrentOnce(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	for i := range concurrency {
		wg.Go(func() {
			st := sampleState(id)
			st.Version = int64(i)
			errs[i] = s.ExecutionCreate(ctx, &store.Execution{State: st})
		})
	}
	wg.Wait()
	created, winner := 0, -1
	for i, err := range errs {
		switch {
		case err == nil:
			created++
			winner = i
		case errors.Is(err, store.ErrExists):
		default:
			t.Errorf("creator %d: %v", i, err)
		}
	}
	if created != 1 {
		t.Fatalf("%d concurrent creates succeeded, want exactly 1", created)
	}
	if v := get(ctx, t, s, id).State.Version; v != int64(winner) {
		t.Fatalf("stored version %d, want the winner's %d", v, winner)
	}
}

// testExecutionCreateInvalid: a create without a state or an execution id
// is refused with InvalidArgument (never a panic, never a document).
func testExecutionCreateInvalid(ctx context.Context, t *testing.T, s store.Store) {
	for _, c := range []struct {
		name string
		rec  *store.Execution
	}{
		{"nil record", nil},
		{"nil state", &store.Execution{Source: "x"}},
		{"empty id", &store.Execution{State: &engine.State{Status: engine.ExecRequested}}},
	} {
		if err := s.ExecutionCreate(ctx, c.rec); !errs.Is(err, errs.InvalidArgument) {
			t.Errorf("ExecutionCreate(%s): err = %v, want InvalidArgument", c.name, err)
		}
	}
}

func testExecutionGetNotFound(ctx context.Context, t *testing.T, s store.Store) {
	rec, err := s.ExecutionGet(ctx, uniqueID(t))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionGet(unknown): rec=%v err=%v, want ErrNotFound", rec, err)
	}
}

// testExecutionUpdateTime: ExecutionGet sets UpdateTime (the document's
// version): equal across reads without a write, different after one.
func testExecutionUpdateTime(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	a, b := get(ctx, t, s, id), get(ctx, t, s, id)
	if a.UpdateTime.IsZero() {
		t.Fatal("ExecutionGet left UpdateTime zero")
	}
	if !a.UpdateTime.Equal(b.UpdateTime) {
		t.Fatalf("UpdateTime changed without a write: %v then %v", a.UpdateTime, b.UpdateTime)
	}
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: "ob-" + id, Apply: increment("n", nil)})
	c := get(ctx, t, s, id)
	if c.UpdateTime.IsZero() || c.UpdateTime.Equal(a.UpdateTime) {
		t.Fatalf("UpdateTime after a checkpoint = %v, want a new version (was %v)", c.UpdateTime, a.UpdateTime)
	}
}

// testExecutionList: newest first by the state's created_at (whatever the
// creation order; ties by descending id), filtered by status and playbook (the scalar fields
// follow checkpoints), limited, with the summary's fields filled.
func testExecutionList(ctx context.Context, t *testing.T, s store.Store) {
	playbook := "tests/storetest/" + uniqueID(t)
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ids := make([]string, 4)
	// Created out of order: 2, 0, 3, 1 (created_at base+i seconds).
	for _, i := range []int{2, 0, 3, 1} {
		ids[i] = uniqueID(t)
		st := sampleState(ids[i])
		st.Playbook = playbook
		st.CreatedAt = base.Add(time.Duration(i) * time.Second)
		if i == 1 {
			st.Status = engine.ExecOK
		}
		if i == 0 || i == 3 {
			st.Creator = "alice-" + playbook + "@example.com"
		}
		create(ctx, t, s, st)
	}
	// Another playbook's execution is never listed.
	create(ctx, t, s, sampleState(uniqueID(t)))

	list := func(p store.ExecutionListParams) []store.ExecutionSummary {
		t.Helper()
		p.Playbook = playbook
		got, err := s.ExecutionList(ctx, p)
		if err != nil {
			t.Fatalf("ExecutionList(%+v): %v", p, err)
		}
		return got
	}
	idsOf := func(got []store.ExecutionSummary) []string {
		out := []string{}
		for _, g := range got {
			out = append(out, g.ExecutionID)
		}
		return out
	}
	got := list(store.ExecutionListParams{})
	mustEqual(t, "ExecutionList ids", []string{ids[3], ids[2], ids[1], ids[0]}, idsOf(got))
	for i, g := range got {
		n := 3 - i
		if g.ParentID != "parent-"+ids[n] || g.RerunOf != "source-"+ids[n] || g.Playbook != playbook || !g.CreatedAt.Equal(base.Add(time.Duration(n)*time.Second)) || g.UpdatedAt.IsZero() {
			t.Errorf("summary %d = %+v; want parent %q, playbook %q, created_at %v, an updated_at", i, g, "parent-"+ids[n], playbook, base.Add(time.Duration(n)*time.Second))
		}
	}
	mustEqual(t, "ExecutionList(limit 2) ids", []string{ids[3], ids[2]}, idsOf(list(store.ExecutionListParams{Limit: 2})))
	// Pages: each starts after the last summary of the previous one.
	var paged []string
	for p := (store.ExecutionListParams{Limit: 3}); ; {
		page := list(p)
		paged = append(paged, idsOf(page)...)
		if len(page) < p.Limit {
			break
		}
		last := page[len(page)-1]
		p.BeforeCreated, p.BeforeID = last.CreatedAt, last.ExecutionID
	}
	mustEqual(t, "ExecutionList pages of 3", []string{ids[3], ids[2], ids[1], ids[0]}, paged)
	okList := list(store.ExecutionListParams{Status: engine.ExecOK})
	mustEqual(t, "ExecutionList(status ok) ids", []string{ids[1]}, idsOf(okList))
	if okList[0].Status != engine.ExecOK {
		t.Errorf("summary status = %q, want ok", okList[0].Status)
	}
	mustEqual(t, "ExecutionList(status failed) ids", []string{}, idsOf(list(store.ExecutionListParams{Status: engine.ExecFailed})))
	// Filtered by creator (the api's view for callers below operator).
	alice := "alice-" + playbook + "@example.com"
	mine := list(store.ExecutionListParams{Creator: alice})
	mustEqual(t, "ExecutionList(creator) ids", []string{ids[3], ids[0]}, idsOf(mine))
	if mine[0].Creator != alice || got[1].Creator != "" {
		t.Errorf("summary creators = %q, %q; want %q and none", mine[0].Creator, got[1].Creator, alice)
	}
	mustEqual(t, "ExecutionList(creator, status ok) ids", []string{}, idsOf(list(store.ExecutionListParams{Creator: alice, Status: engine.ExecOK})))

	// A checkpoint that ends execution 2 moves it between the status
	// filters, on the transactional path and on the optimistic one.
	before := got[1].UpdatedAt
	fail := func(rec *store.Execution) (*engine.Output, error) {
		rec.State.Status = engine.ExecFailed
		rec.State.Version++
		return &engine.Output{}, nil
	}
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: ids[2], OutboxID: "fail", Apply: fail})
	checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: ids[0], OutboxID: "fail", Apply: fail, Base: get(ctx, t, s, ids[0])})
	failed := list(store.ExecutionListParams{Status: engine.ExecFailed})
	mustEqual(t, "ExecutionList(status failed) ids after checkpoints", []string{ids[2], ids[0]}, idsOf(failed))
	if failed[0].UpdatedAt.Before(before) {
		t.Errorf("updated_at went back after a checkpoint: %v, was %v", failed[0].UpdatedAt, before)
	}
	mustEqual(t, "ExecutionList(status running) ids after checkpoints", []string{ids[3]}, idsOf(list(store.ExecutionListParams{Status: engine.ExecRunning})))

	// Executions created at the same time list by descending id.
	playbook = "tests/storetest/" + uniqueID(t)
	same := []string{uniqueID(t) + "-b", uniqueID(t) + "-c", uniqueID(t) + "-a"}
	for _, id := range same {
		st := sampleState(id)
		st.Playbook = playbook
		create(ctx, t, s, st)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(same)))
	all := list(store.ExecutionListParams{})
	mustEqual(t, "ExecutionList ids (same created_at)", same, idsOf(all))
	// A page after one of them goes on with the next id, at the same time.
	mustEqual(t, "ExecutionList after the first of the same created_at", same[1:],
		idsOf(list(store.ExecutionListParams{BeforeCreated: all[0].CreatedAt, BeforeID: all[0].ExecutionID})))
}

// testExecutionCount: counts by status under the list's filters, and the
// creation-time range of both (from inclusive, to exclusive).
func testExecutionCount(ctx context.Context, t *testing.T, s store.Store) {
	playbook := "tests/storetest/" + uniqueID(t)
	base := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	statuses := []types.Status{engine.ExecOK, engine.ExecFailed, engine.ExecFailed, engine.ExecRunning, engine.ExecOK, engine.ExecOK}
	ids := make([]string, len(statuses))
	for i, status := range statuses {
		ids[i] = uniqueID(t)
		st := sampleState(ids[i])
		st.Playbook, st.Status = playbook, status
		st.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		if i%2 == 1 {
			st.Creator = "bob-" + playbook
		}
		create(ctx, t, s, st)
	}
	count := func(p store.ExecutionListParams) map[types.Status]int {
		t.Helper()
		p.Playbook = playbook
		got, err := s.ExecutionCount(ctx, p)
		if err != nil {
			t.Fatalf("ExecutionCount(%+v): %v", p, err)
		}
		return got
	}
	mustEqual(t, "ExecutionCount", map[types.Status]int{engine.ExecOK: 3, engine.ExecFailed: 2, engine.ExecRunning: 1}, count(store.ExecutionListParams{}))
	mustEqual(t, "ExecutionCount(creator)", map[types.Status]int{engine.ExecFailed: 1, engine.ExecRunning: 1, engine.ExecOK: 1},
		count(store.ExecutionListParams{Creator: "bob-" + playbook}))
	mustEqual(t, "ExecutionCount(status failed)", map[types.Status]int{engine.ExecFailed: 2}, count(store.ExecutionListParams{Status: engine.ExecFailed}))
	// Minutes 1..3 (from inclusive, to exclusive).
	window := store.ExecutionListParams{CreatedFrom: base.Add(time.Minute), CreatedTo: base.Add(4 * time.Minute)}
	mustEqual(t, "ExecutionCount(created in [1m, 4m))", map[types.Status]int{engine.ExecFailed: 2, engine.ExecRunning: 1}, count(window))
	window.Playbook = playbook
	got, err := s.ExecutionList(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, g := range got {
		listed = append(listed, g.ExecutionID)
	}
	mustEqual(t, "ExecutionList(created in [1m, 4m))", []string{ids[3], ids[2], ids[1]}, listed)
}

// testExecutionWatch: a watch sees the document as stored when it starts,
// then every change (the last state of a burst at least), in order; it
// ends with nil when fn returns true and with ctx's error when ctx ends.
func testExecutionWatch(ctx context.Context, t *testing.T, s store.Store) {
	id := uniqueID(t)
	create(ctx, t, s, sampleState(id))
	seen := make(chan int64, 64)
	done := make(chan error, 1)
	go func() {
		done <- s.ExecutionWatch(ctx, id, func(rec *store.Execution) bool {
			n, _ := rec.State.Ctx["n"].(int64)
			if rec.UpdateTime.IsZero() {
				n = -1 // the watch must give the version it read
			}
			seen <- n
			return n >= 3
		})
	}()
	next := func() int64 {
		t.Helper()
		select {
		case n := <-seen:
			return n
		case err := <-done:
			// fn's last value and the watch's end may be ready together:
			// the value comes first (it was sent before fn returned).
			select {
			case n := <-seen:
				done <- err
				return n
			default:
			}
			t.Fatalf("ExecutionWatch ended early: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("ExecutionWatch gave nothing for 30 s")
		}
		return 0
	}
	if n := next(); n != 0 {
		t.Fatalf("the watch's first call saw ctx.n = %d, want 0 (the document as created, with its UpdateTime)", n)
	}
	for want := int64(1); want <= 3; want++ {
		checkpoint(ctx, t, s, store.CheckpointParams{ExecutionID: id, OutboxID: fmt.Sprintf("ob-%s-%d", id, want), Apply: increment("n", nil)})
		for {
			n := next()
			if n < 0 || n > want {
				t.Fatalf("the watch saw ctx.n = %d after the checkpoint that set it to %d", n, want)
			}
			if n == want {
				break
			}
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ExecutionWatch after fn returned true: %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ExecutionWatch did not return after fn returned true")
	}
	// A watch whose fn never returns true ends with its context.
	wctx, cancel := context.WithCancel(ctx)
	calls := make(chan struct{}, 64)
	go func() {
		done <- s.ExecutionWatch(wctx, id, func(*store.Execution) bool { calls <- struct{}{}; return false })
	}()
	select {
	case <-calls:
	case <-time.After(30 * time.Second):
		t.Fatal("ExecutionWatch gave nothing for 30 s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ExecutionWatch after its context ended: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ExecutionWatch did not return after its context ended")
	}
}

// testExecutionWatchNotFound: watching an execution that does not exist
// is ErrNotFound (a worker then stops watching; nothing hangs).
func testExecutionWatchNotFound(ctx context.Context, t *testing.T, s store.Store) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := s.ExecutionWatch(wctx, uniqueID(t), func(*store.Execution) bool { return false })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExecutionWatch of an unknown execution: %v, want ErrNotFound", err)
	}
}

// rfc3339 is the time of an RFC 3339 text (a test's fixed timestamps).
func rfc3339(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
