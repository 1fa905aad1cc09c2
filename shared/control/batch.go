package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
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
//
// Grouped ends. An unleased batch's iterations (no side effects: a
// retried delivery leases every iteration it runs) do not each commit
// their record: an ok end whose lane successor runs inline is deferred
// (IterationEnded.Deferred) and committed with a later end of the batch
// in one group record document (store.IterationCompletion.Group) — one
// Firestore write for up to MaxGroup records or MaxGroupBytes of them,
// instead of one per iteration. The lane's last iteration, a failed one,
// a spent budget and a full group commit at once, with what is deferred.
// A crash loses only deferred records, whose batch's Cloud Task is
// redelivered: the redelivery leases each iteration, finds the
// committed ones ended (store.IterationBeginParams.Grouped) and runs the
// rest again, as it would have had they never run. The iterations'
// events are published before the records either way.

// MaxGroup and MaxGroupBytes bound one group record document: at most
// MaxGroup records of at most MaxGroupBytes of JSON together (well under
// the 256 KiB bound on any document, README "Architecture"). A record
// that alone exceeds MaxGroupBytes is committed on its own.
const (
	MaxGroup      = 100
	MaxGroupBytes = 64 << 10
)

// deferrable reports that e's end may be deferred: an unleased ok end of
// a batched (not cursor) loop that neither fails the step nor ends its
// lane, and whose group stays within MaxGroup and MaxGroupBytes. size is
// the JSON size of e.Record in bytes (IterationEnded.Bytes; 0 when not
// measured: an end not eligible, with no group): the group's is
// e.GroupBytes, the caller's running sum, so that a batch's ends are each
// encoded once here, not once per later end.
func deferrable(e IterationEnd, plan *engine.LoopPlan, failStep, laneDone bool) (ok bool, size int) {
	if e.Holder != "" || e.Record.Status != types.StatusOK {
		return false, 0
	}
	eligible := e.Inline != nil && !failStep && !laneDone && plan.Cursor == nil && plan.BatchOf() > 1 && len(e.Group)+1 < MaxGroup
	if !eligible && len(e.Group) == 0 {
		return false, 0 // no group to fit in
	}
	b, err := json.Marshal(e.Record)
	if err != nil {
		return false, 0
	}
	return eligible && fitsGroup(e, len(b)), len(b)
}

// fitsGroup reports that e's record, of size bytes of JSON (0: not
// measured), may be committed in its group's document: the group with
// it stays within MaxGroup records and MaxGroupBytes.
func fitsGroup(e IterationEnd, size int) bool {
	if len(e.Group)+1 > MaxGroup {
		return false
	}
	if size == 0 {
		b, err := json.Marshal(e.Record)
		if err != nil {
			return false
		}
		size = len(b)
	}
	group := e.GroupBytes
	if group == 0 {
		for _, r := range e.Group {
			if b, err := json.Marshal(r); err == nil {
				group += len(b)
			}
		}
	}
	return group+size <= MaxGroupBytes
}

// CommitGroup commits deferred ended records of cmd's loop run (recs:
// IterationEnded.Deferred ends, in the order they ended) in one group
// record document and nothing else: no lane is done by them (a lane's
// last end is never deferred) and nothing follows them. Errors: the
// store's (the caller fails its delivery: a redelivery runs them again).
// first reports that this call recorded them (false: the same group was
// committed before).
func (c *Control) CommitGroup(ctx context.Context, cmd types.Command, recs []engine.IterationRecord) (first bool, err error) {
	if len(recs) == 0 {
		return false, nil
	}
	key := engine.LoopKey(cmd.Step, cmd.StepRun)
	last := recs[len(recs)-1]
	u := cmd
	u.Iteration = &last.Index
	res, err := c.Store.CompleteUnit(ctx, store.CompleteUnitParams{ExecutionID: cmd.ExecutionID, Unit: u.UnitKey(),
		Iteration: &store.IterationCompletion{Group: recs[:len(recs)-1],
			End: store.IterationEndParams{LoopKey: key, Record: last, Now: c.now()}}})
	if err != nil {
		return false, errs.Wrap(errs.CodeOf(err), err, fmt.Sprintf("control: commit %d grouped iteration ends of %s", len(recs), key))
	}
	return res.First, nil
}

// inlineNext hands the lane's next iteration n back in out when it is in
// iteration idx's batch and the caller runs it (e.Inline).
func inlineNext(e IterationEnd, plan *engine.LoopPlan, idx int, out *IterationEnded, n types.Command) bool {
	if e.Inline == nil || !plan.NextInBatch(idx) || !e.Inline() {
		return false
	}
	out.Next = &n
	return true
}
