package worker

import (
	"context"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/types"
)

// Batched fan-out (engine batch.go, control batch.go): a delivery of loop
// iteration j runs j and then, inline, each following iteration of j's
// lane in j's batch, while the invocation's wall-time budget
// (ContinueBudget, NOETL_CONTINUE_BUDGET_S, below the dispatch deadline)
// lasts. Each iteration keeps its own lease (side-effecting kinds),
// events, retry, policy and CompleteUnit; an iteration's end hands its
// successor back instead of enqueueing it (control.IterationEnd.Inline).
//
// The batch's Cloud Task is not answered until the last inline iteration
// ended: a crash anywhere redelivers it, and the redelivery (a retried
// delivery: every iteration it runs is leased, so an ended one is found
// ended, its end carried out again, idempotently) skips what ended and
// goes on. An inline iteration that fails with an error fails the
// delivery (its redelivery goes on from there) except on the delivery's
// last attempt: the iteration then becomes an ordinary Cloud Task with
// attempts, guard and DLQ of its own. A deferred retry hands the
// iteration to a delayed task (unit.handOff), whose delivery runs the rest
// of the batch; a spent budget leaves the next iteration to an ordinary
// task, which runs to the end of its own batch.

// batchRun is the batched fan-out state of one invocation.
type batchRun struct {
	deadline time.Time // no inline iteration starts after it
	next     *types.Command
	// ran names the deliveries this invocation ran (the batch's own and
	// its inline iterations): if it fails they are forgotten, so that the
	// batch's redelivery on this instance runs them (and what follows
	// them) instead of dropping them as ended.
	ran []string
	// group is the deferred ends (control.IterationEnded.Deferred) the
	// next end commits (control.IterationEnd.Group), or the batch's end
	// (commitGroup), and groupBytes their JSON size; counted holds their
	// loop item counts, made once the group is recorded.
	group      []engine.IterationRecord
	groupBytes int
	counted    []func()
}

type batchKey struct{}

func batchOf(ctx context.Context) *batchRun {
	b, _ := ctx.Value(batchKey{}).(*batchRun)
	return b
}

// inline is the iteration end's control.IterationEnd.Inline: the
// invocation runs the lane's next iteration itself while its budget lasts.
func (u *unit) inline(ctx context.Context) func() bool {
	b := batchOf(ctx)
	if b == nil {
		return nil
	}
	return func() bool { return ctx.Err() == nil && u.w.now().Before(b.deadline) }
}

// handNext keeps the iteration an end handed back (done.Next) for the
// invocation to run next.
func handNext(ctx context.Context, done control.IterationEnded) {
	if b := batchOf(ctx); b != nil && done.Next != nil {
		b.next = done.Next
	}
}

// withGroup sets e's Group and GroupBytes to the deferred ends the
// invocation's next iteration end commits (none outside a batch).
func withGroup(ctx context.Context, e control.IterationEnd) control.IterationEnd {
	if b := batchOf(ctx); b != nil {
		e.Group, e.GroupBytes = b.group, b.groupBytes
	}
	return e
}

// settleGroup takes what an iteration end did with the batch's group: a
// deferred end joins it (count is its loop item count, made once the
// group is recorded); an end committed without error committed the group
// with it (the group's counts are made when that commit recorded it).
func settleGroup(ctx context.Context, done control.IterationEnded, err error, rec engine.IterationRecord, count func()) {
	b := batchOf(ctx)
	switch {
	case b == nil || err != nil:
	case done.Deferred:
		b.group = append(b.group, rec)
		b.groupBytes += done.Bytes
		b.counted = append(b.counted, count)
	default:
		b.settled(done.GroupFirst)
	}
}

// settled drops the group a commit took, making its counts when the
// commit recorded it (first).
func (b *batchRun) settled(first bool) {
	if first {
		for _, c := range b.counted {
			c()
		}
	}
	b.group, b.groupBytes, b.counted = nil, 0, nil
}

// commitGroup commits the deferred ends no later end took (the batch
// stopped after them: its budget, a failed or dropped iteration).
func (w *Worker) commitGroup(ctx context.Context, cmd types.Command, b *batchRun) error {
	if len(b.group) == 0 {
		return nil
	}
	first, err := w.Control.CommitGroup(ctx, cmd, b.group)
	if err != nil {
		return err
	}
	b.settled(first)
	return nil
}

// iterationEnded carries out again the end of an iteration that already
// ended (a redelivery), handing its successor in the batch back.
func (u *unit) iterationEnded(ctx context.Context, rec engine.IterationRecord) error {
	done, err := u.w.Control.CompleteIteration(ctx, withGroup(ctx, control.IterationEnd{Cmd: u.cmd, Record: rec, Inline: u.inline(ctx)}))
	settleGroup(ctx, done, err, rec, func() {})
	if err == nil {
		handNext(ctx, done)
	}
	return err
}

// runBatched is Run's entry for a loop iteration delivered by a Cloud
// Task: it runs the iteration, then the ones its end hands back.
func (w *Worker) runBatched(ctx context.Context, cmd types.Command, d Delivery) error {
	if cmd.Kind != types.CmdRunStep || cmd.Iteration == nil || batchOf(ctx) != nil || w.ContinueBudget <= 0 {
		return w.runChained(ctx, cmd, d)
	}
	b := &batchRun{deadline: w.now().Add(w.ContinueBudget), ran: []string{cmd.TaskName()}}
	ctx = context.WithValue(ctx, batchKey{}, b)
	err := w.runChained(ctx, cmd, d)
	for err == nil && b.next != nil {
		n := *b.next
		b.next = nil
		name := n.TaskName()
		b.ran = append(b.ran, name)
		// A retried delivery's iterations may have run before: they are
		// leased, and an ended one is skipped (Delivery.recovering).
		if ierr := w.runOnce(ctx, n, Delivery{TaskName: name, RetryCount: d.RetryCount, Holder: newHolder(), inline: true}); ierr != nil {
			if !d.Last() {
				err = ierr
				break
			}
			w.Log.Warn("an inline iteration failed on the batch's last attempt; it runs as a task of its own", "execution_id", n.ExecutionID, "step", n.Step, "task", name, "error", ierr.Error())
			err = w.Control.Enqueue(context.WithoutCancel(ctx), n, w.now())
		}
	}
	// Deferred ends no later end took are committed now; without a
	// commit the delivery fails (its redelivery runs them again).
	if gerr := w.commitGroup(context.WithoutCancel(ctx), cmd, b); gerr != nil && err == nil {
		err = gerr
	}
	if err != nil {
		for _, name := range b.ran {
			w.seen.forget(name)
		}
	}
	return err
}
