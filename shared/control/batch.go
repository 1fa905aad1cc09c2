package control

import (
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/types"
)

// Batched fan-out (engine batch.go): only the first iteration of a lane's
// batch is a Cloud Task of its own; the delivery that runs it runs the
// batch's following iterations inline. When an iteration's end finds its
// lane successor in its own batch and the caller still has budget
// (IterationEnd.Inline), the successor is not enqueued but handed back
// (IterationEnded.Next). Unlike a step's Continuation there is no safety
// net: the batch's own Cloud Task, un-acked until the delivery answers, is
// the net — a crash anywhere redelivers it, and that delivery skips the
// iterations already ended (their ends carried out again, idempotently)
// and goes on.

// inlineNext hands the lane's next iteration n back in out when it is in
// iteration idx's batch and the caller runs it (e.Inline).
func inlineNext(e IterationEnd, plan *engine.LoopPlan, idx int, out *IterationEnded, n types.Command) bool {
	if e.Inline == nil || !plan.NextInBatch(idx) || !e.Inline() {
		return false
	}
	out.Next = &n
	return true
}
