package engine

import "github.com/noetl/gcpengine/shared/dsl"

// Batched fan-out. A loop's lanes (loop.go) stay as they are; each lane's
// iterations are grouped arithmetically into batches of Batch consecutive
// lane positions: iteration i sits at position i / L of lane i % L (L =
// Lanes), and its batch is position / Batch. Only the first iteration of a
// batch becomes a Cloud Task; the delivery that runs it runs each
// following iteration of its lane in its batch in the same invocation
// (shared/worker batch.go), and an iteration's end leaves its
// lane-successor un-enqueued when it is in the same batch (shared/control
// batch.go). The plan holds Batch, so a redelivery computes the same
// batches.

// Automatic batch sizes (BatchSize): a loop whose items run only noop or
// read-only kinds is cheap (large batches), one whose items have effects
// outside the engine (python, a writing http or postgres task, a child
// playbook, ...) runs one item per Cloud Task, and anything in between
// (an http GET, a read-only query) small batches. MaxBatch bounds an
// explicit loop.spec.chunk_size too: the invocation's wall-time budget
// bounds what one delivery runs in any case.
const (
	BatchCheap = 50
	BatchRead  = 8
	MaxBatch   = 1000
)

// cheapKinds run in the engine itself, without a round trip.
var cheapKinds = map[string]bool{"noop": true}

// BatchSize is the batch size of a loop over total items with lanes
// lanes: loop.spec.chunk_size (alias batch) when given, else automatic
// from the step's tool kinds; bounded by MaxBatch and by the lane's
// length (a batch never holds more than a lane runs). A cursor loop is not
// batched (1).
func BatchSize(pb *dsl.Playbook, step *dsl.Step, total, lanes int) int {
	if step == nil || step.Loop == nil || step.Loop.Cursor != nil {
		return 1
	}
	b := step.Loop.ChunkSize
	if b <= 0 {
		b = autoBatch(pb, step)
	}
	b = min(b, MaxBatch)
	if lanes < 1 {
		lanes = 1
	}
	if per := (total + lanes - 1) / lanes; b > per {
		b = per
	}
	return max(b, 1)
}

// autoBatch is the automatic batch size of step's items (BatchSize).
func autoBatch(pb *dsl.Playbook, step *dsl.Step) int {
	b := BatchCheap
	for _, t := range step.Tasks {
		switch {
		case SideEffecting(pb, t):
			return 1
		case !cheapKinds[t.Kind]:
			b = BatchRead
		}
	}
	return b
}

// BatchOf returns the batch size of the plan: 1 (every iteration its own
// Cloud Task) for plans written without one and for cursor loops.
func (p LoopPlan) BatchOf() int {
	if p.Cursor != nil || p.Batch < 1 {
		return 1
	}
	return p.Batch
}

// LanePosition returns iteration idx's position in its lane (0 for the
// lane's first iteration).
func (p LoopPlan) LanePosition(idx int) int { return idx / p.Lanes() }

// BatchIndex returns the batch of iteration idx within its lane.
func (p LoopPlan) BatchIndex(idx int) int { return p.LanePosition(idx) / p.BatchOf() }

// BatchStart reports whether iteration idx is the first of its batch (its
// command is a Cloud Task of its own).
func (p LoopPlan) BatchStart(idx int) bool { return p.LanePosition(idx)%p.BatchOf() == 0 }

// NextInBatch reports whether iteration idx's lane successor (idx+L)
// exists and is in idx's batch: the delivery that ran idx may run it
// inline instead of enqueueing it.
func (p LoopPlan) NextInBatch(idx int) bool {
	if p.Cursor != nil || p.BatchOf() <= 1 {
		return false
	}
	n := idx + p.Lanes()
	return n < p.Total && p.BatchIndex(n) == p.BatchIndex(idx)
}
