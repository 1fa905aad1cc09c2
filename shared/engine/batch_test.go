package engine

import (
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
)

func TestBatchArithmetic(t *testing.T) {
	// 23 items, 3 lanes, batches of 4 lane positions: lane 0 runs
	// 0,3,6,...,21 (positions 0..7), its batches are {0,3,6,9} {12,15,18,21}.
	p := LoopPlan{Total: 23, MaxInFlight: 3, Batch: 4}
	for _, c := range []struct {
		idx, pos, batch int
		start, next     bool
	}{
		{0, 0, 0, true, true}, {3, 1, 0, false, true}, {9, 3, 0, false, false}, {12, 4, 1, true, true},
		{21, 7, 1, false, false}, {2, 0, 0, true, true}, {20, 6, 1, false, false}, // 23 does not exist
		{22, 7, 1, false, false},
	} {
		if got := p.LanePosition(c.idx); got != c.pos {
			t.Errorf("LanePosition(%d) = %d, want %d", c.idx, got, c.pos)
		}
		if got := p.BatchIndex(c.idx); got != c.batch {
			t.Errorf("BatchIndex(%d) = %d, want %d", c.idx, got, c.batch)
		}
		if got := p.BatchStart(c.idx); got != c.start {
			t.Errorf("BatchStart(%d) = %v, want %v", c.idx, got, c.start)
		}
		if got := p.NextInBatch(c.idx); got != c.next {
			t.Errorf("NextInBatch(%d) = %v, want %v", c.idx, got, c.next)
		}
	}
	// Every iteration is reached exactly once: from a batch start, by
	// following NextInBatch.
	seen := map[int]int{}
	for i := 0; i < p.Total; i++ {
		if !p.BatchStart(i) {
			continue
		}
		for j := i; ; j += p.Lanes() {
			seen[j]++
			if !p.NextInBatch(j) {
				break
			}
		}
	}
	for i := 0; i < p.Total; i++ {
		if seen[i] != 1 {
			t.Fatalf("iteration %d reached %d times", i, seen[i])
		}
	}
	// A plan without a batch (written before batching), a batch of 1 and a
	// cursor loop never run a successor inline.
	for _, q := range []LoopPlan{{Total: 10, MaxInFlight: 2}, {Total: 10, MaxInFlight: 2, Batch: 1}, {MaxInFlight: 2, Batch: 5, Cursor: &CursorPlan{}}} {
		for i := 0; i < 10; i++ {
			if q.NextInBatch(i) || !q.BatchStart(i) && q.Cursor == nil {
				t.Fatalf("plan %+v: iteration %d batched", q, i)
			}
		}
	}
}

func TestBatchSize(t *testing.T) {
	task := func(kind string, cfg map[string]any) *dsl.Task { return &dsl.Task{Name: "t", Kind: kind, Config: cfg} }
	step := func(chunk int, ts ...*dsl.Task) *dsl.Step {
		return &dsl.Step{Name: "s", Loop: &dsl.Loop{ChunkSize: chunk}, Tasks: ts}
	}
	for _, c := range []struct {
		name         string
		step         *dsl.Step
		total, lanes int
		want         int
	}{
		{"noop: large", step(0, task("noop", nil)), 10000, 200, BatchCheap},
		{"no task: large", step(0), 10000, 200, BatchCheap},
		{"http GET: small", step(0, task("noop", nil), task("http", map[string]any{"method": "GET"})), 10000, 200, BatchRead},
		{"python: 1", step(0, task("python", nil)), 10000, 200, 1},
		{"http POST: 1", step(0, task("noop", nil), task("http", map[string]any{"method": "POST"})), 10000, 200, 1},
		{"chunk_size wins", step(7, task("python", nil)), 10000, 200, 7},
		{"bounded by the lane's length", step(0, task("noop", nil)), 1000, 200, 5},
		{"bounded by MaxBatch", step(5000, task("noop", nil)), 100000, 1, MaxBatch},
		{"cursor: 1", &dsl.Step{Loop: &dsl.Loop{Cursor: &dsl.Cursor{}, ChunkSize: 9}}, 0, 4, 1},
		{"no loop: 1", &dsl.Step{}, 10, 1, 1},
	} {
		if got := BatchSize(nil, c.step, c.total, c.lanes); got != c.want {
			t.Errorf("%s: BatchSize = %d, want %d", c.name, got, c.want)
		}
	}
}
