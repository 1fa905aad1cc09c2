package control

import (
	"context"
	"errors"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Enqueue makes cmd a Cloud Task (named by its idempotency key, so a
// repeat creates nothing): a unit's hand-off, a watchdog, a guard. It is
// the worker's one way to schedule work.
// now is the caller's clock (a delayed command's NotBefore is measured
// from it).
func (c *Control) Enqueue(ctx context.Context, cmd types.Command, now time.Time) error {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return err
	}
	_, err := c.Tasks.TaskCreate(ctx, cmd, now)
	return err
}

// CompleteStep ends a step run's unit with one store call
// (store.CompleteUnit): the unit's lease (holder; "" when it ran without
// one) is checked and released in the commit of the boundary transition p,
// which is then carried out as Apply does. A holder that lost the lease
// commits nothing: its events are still published (their ids dedup
// against the run that holds it) and the error is store.ErrLeaseLost
// (FailedPrecondition: the delivery is retried, and dropped once the step
// run has ended).
//
// With p.SafetyNet set, the one unit the transition releases may come back
// as a Continuation for the caller to run next (nil otherwise). Under a
// Deferral (ctx, WithDeferral) the end of a unit without a lease may be
// deferred: the continuation then runs from the state in memory and the
// end commits with a later one (deferral.go); an end that is not deferred
// commits the ends deferred before it with its own.
//
// lease is the unit's lease: its holder ("" when it ran without one) and,
// when known, its version (Continuation.LeaseVersion), which spares the
// store the lease's read.
func (c *Control) CompleteStep(ctx context.Context, p ApplyParams, unit string, lease Lease) (*Continuation, error) {
	holder := lease.Holder
	if err := faults.Inject(c.Source+".before_commit", p.ExecutionID); err != nil {
		return nil, err
	}
	d := deferralOf(ctx)
	if k, ok := c.deferEnd(ctx, d, p, unit, holder); ok {
		return k, nil // committed with a later end (deferral.go)
	}
	t := c.prepare(ctx, p)
	if d != nil {
		if d.holdsOther(p.ExecutionID) {
			// Another execution's ends (a chain continues one): they
			// commit first, as a give-up commits them.
			if err := c.giveUp(ctx, d); err != nil {
				return nil, err
			}
		}
		if ends, base := d.take(); len(ends) > 0 {
			t = c.group(ctx, d, ends, base, &p, false)
		}
	}
	res, err := c.Store.CompleteUnit(ctx, store.CompleteUnitParams{ExecutionID: p.ExecutionID, Unit: unit, Holder: holder, LeaseVersion: lease.Version,
		Checkpoint: &t.params, Next: t.nextLease()}) // the continued unit's lease (continue.go)
	if errors.Is(err, store.ErrLeaseLost) && len(t.p.Events) > 0 {
		b := types.Batch{ID: types.DeriveID(p.ExecutionID, "lease-lost", t.p.OutboxID, holder, t.p.Events[0].EventID), ExecutionID: p.ExecutionID, Source: c.Source, Events: t.p.Events}
		if perr := c.Bus.PublishBatch(ctx, b); perr != nil {
			return nil, perr
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := t.done(ctx, res.Checkpoint); err != nil {
		return nil, err
	}
	t.leased(res.NextLeased, res.NextLeaseVersion)
	if t.next != nil && p.Base != nil && res.Checkpoint.State != nil {
		t.next.Base = &store.Execution{State: res.Checkpoint.State, Source: p.Base.Source, Files: p.Base.Files, UpdateTime: res.Checkpoint.UpdateTime}
	}
	return t.next, nil
}

// Lease is a unit's lease as its holder knows it (CompleteStep).
type Lease struct {
	// Holder is the lease's holder ("" : the unit ran without one).
	Holder string
	// Version is the lease's version when the commit that took it
	// returned it and the holder has not renewed it since
	// (Continuation.LeaseVersion, store.CompleteUnitParams.LeaseVersion);
	// "" when unknown.
	Version string
}

// IterationEnd is the end of one loop iteration (CompleteIteration).
type IterationEnd struct {
	// Cmd is the iteration's command.
	Cmd types.Command
	// Record is its final record (ok or error).
	Record engine.IterationRecord
	// Holder is the delivery's lease holder ("" without a lease).
	Holder string
	// Resolve is the change of the DLQ entry of a parked record
	// (store.IterationEndParams.Resolve).
	Resolve func(dlqID string) store.DLQResolution
	// Batch, when it has events, is the iteration's events, published
	// before the end is recorded (the log holds an iteration's events
	// before its end).
	Batch *types.Batch
	// AfterCommit runs after the end is recorded and before what follows
	// it (the soak's fault point between the two); an error stops there
	// (a redelivery carries out the rest).
	AfterCommit func() error
	// Inline, when set, is asked whether the caller runs the lane's next
	// iteration itself when it is in this iteration's batch (batched
	// fan-out, batch.go): true leaves it un-enqueued and hands it back
	// (IterationEnded.Next).
	Inline func() bool
	// Group is the ended records of earlier iterations of this batch that
	// were deferred (IterationEnded.Deferred): committed with this end,
	// in one group record document (store.IterationCompletion.Group).
	Group []engine.IterationRecord
	// GroupBytes is the JSON size in bytes of Group's records, the sum of
	// their IterationEnded.Bytes (0: measured here).
	GroupBytes int
}

// IterationEnded is what CompleteIteration did.
type IterationEnded struct {
	// First reports that this call recorded the iteration's end.
	First bool
	// Canceled reports an iteration canceled before (nothing follows).
	Canceled bool
	// Next is the lane's next iteration, in the same batch, handed back
	// for the caller to run (IterationEnd.Inline); nil otherwise.
	Next *types.Command
	// Deferred reports that the end was not committed (batch.go): the
	// caller runs Next and passes this record in the next end's Group, or
	// commits it with CommitGroup. First is then false; the group's
	// commit tells (the First of the end that carries it).
	Deferred bool
	// Bytes is a deferred record's JSON size in bytes, for the caller's
	// IterationEnd.GroupBytes.
	Bytes int
	// GroupFirst reports that this call recorded IterationEnd.Group (with
	// the end, or in a group commit of its own before it): false when the
	// same group had been committed before, or there was none.
	GroupFirst bool
}

// CompleteIteration ends a loop iteration with one store call
// (store.CompleteUnit: the record and, for its lane's last iteration, the
// lane's marker in one commit; the loop's claim and loop.done by the
// claim's owner) and carries out what follows (engine.IterationEnded):
// under fail_fast a failed iteration fails the step; otherwise the lane's
// next iteration becomes a Cloud Task, or the loop's end, committed by the
// store call, is flushed. Every effect is idempotent, so a redelivered
// iteration may call it again. Errors: store.ErrLeaseLost when the holder
// lost the iteration; store, bus and tasks errors (retry).
func (c *Control) CompleteIteration(ctx context.Context, e IterationEnd) (IterationEnded, error) {
	if err := c.Settle(ctx); err != nil { // deferred ends first (deferral.go)
		return IterationEnded{}, err
	}
	cmd := e.Cmd
	if e.Batch != nil && len(e.Batch.Events) > 0 {
		if err := c.Bus.PublishBatch(ctx, *e.Batch); err != nil {
			return IterationEnded{}, err
		}
	}
	key := engine.LoopKey(cmd.Step, cmd.StepRun)
	plan, err := c.Plan(ctx, cmd.ExecutionID, key)
	if err != nil {
		return IterationEnded{}, err
	}
	rec := e.Record
	var laneDone, failStep bool
	var next func() (types.Command, bool)
	if plan.Cursor != nil { // hook (h-conf): cursor loops (cursor.go)
		after := engine.CursorIterationEnded(*plan, rec)
		failStep, laneDone = after.FailStep, !after.FailStep && !after.HasNext
		next = func() (types.Command, bool) {
			n := engine.CursorIterationCommand(cmd.ExecutionID, *plan, after.Next, after.NextItem, after.NextRest, rec.Clock)
			n.TraceParent = cmd.TraceParent
			return n, after.HasNext
		}
	} else {
		after := engine.IterationEnded(*plan, rec.Index, rec.Status == types.StatusOK)
		failStep, laneDone = after.FailStep, after.LaneDone
		next = func() (types.Command, bool) {
			if !after.HasNext {
				return types.Command{}, false
			}
			var item any
			if plan.Items != nil {
				item = plan.Items[after.Next]
			}
			n := engine.IterationCommand(cmd.ExecutionID, *plan, after.Next, item, rec.Clock)
			n.ItemRef = plan.Items == nil // a stored table's row: execute reads it (Item)
			n.TraceParent = cmd.TraceParent
			if plan.Mode != "parallel" {
				// A sequential loop's next iteration starts from the ctx
				// patches of the ones before it (engine.LoopCtxPatch).
				n.CtxPatch = rec.Ctx
			}
			stripItem(&n)
			return n, true
		}
	}
	ok, size := deferrable(e, plan, failStep, laneDone)
	if ok {
		if n, ok := next(); ok {
			var out IterationEnded
			if inlineNext(e, plan, rec.Index, &out, n) {
				out.Deferred, out.Bytes = true, size
				return out, nil
			}
		}
	}
	group, groupFirst := e.Group, false
	if len(group) > 0 && (e.Holder != "" || !store.Completed(rec.Status) || !fitsGroup(e, size)) {
		// This end cannot join the group's document (leased, not ended,
		// or the group would pass MaxGroup or MaxGroupBytes with it): the
		// group commits first.
		first, err := c.CommitGroup(ctx, cmd, group)
		if err != nil {
			return IterationEnded{}, err
		}
		group, groupFirst = nil, first
	}
	var loopEnd *transition
	res, err := c.Store.CompleteUnit(ctx, store.CompleteUnitParams{ExecutionID: cmd.ExecutionID, Unit: cmd.UnitKey(),
		Iteration: &store.IterationCompletion{Group: group,
			End:      store.IterationEndParams{LoopKey: key, Record: rec, Holder: e.Holder, Now: c.now(), Resolve: e.Resolve},
			LaneDone: laneDone, Lane: plan.Lane(rec.Index), Lanes: plan.Lanes(),
			LoopEnd: func(recs []engine.IterationRecord) (*store.CheckpointParams, error) {
				ev, err := c.loopEndEvent(ctx, cmd.ExecutionID, plan, recs)
				if err != nil {
					return nil, err
				}
				loopEnd = c.prepare(ctx, ApplyParams{ExecutionID: cmd.ExecutionID, Event: ev, OutboxID: EndOutboxID(cmd.ExecutionID, plan.Step, plan.Run), Events: []types.Event{ev}})
				return &loopEnd.params, nil
			}}})
	out := IterationEnded{First: res.First, Canceled: res.Canceled, GroupFirst: groupFirst || (len(group) > 0 && res.First)}
	if err != nil || res.Canceled || res.Held {
		return out, err
	}
	if e.AfterCommit != nil {
		if err := e.AfterCommit(); err != nil {
			return out, err
		}
	}
	switch {
	case failStep:
		return out, c.applyLoopEnd(ctx, cmd.ExecutionID, plan, engine.LoopFailedEvent(cmd.ExecutionID, *plan, rec.Index, rec.Error, rec.Clock, c.now()))
	case loopEnd != nil:
		_, err := loopEnd.done(ctx, res.Checkpoint)
		return out, err
	}
	if n, ok := next(); ok {
		if inlineNext(e, plan, rec.Index, &out, n) { // batched fan-out (batch.go)
			return out, nil
		}
		return out, c.Enqueue(ctx, n, c.now())
	}
	return out, nil
}

// loopEndEvent is the loop.done event of a loop run from its ended
// records: for a cursor loop its rows processed; otherwise every
// iteration must have its record (Unavailable until they are visible).
func (c *Control) loopEndEvent(ctx context.Context, executionID string, plan *engine.LoopPlan, recs []engine.IterationRecord) (types.Event, error) {
	if plan.Cursor != nil {
		result, rows, clock := engine.CursorLoopResult(recs)
		return c.loopDoneEvent(ctx, executionID, plan, recs, result, clock, rows)
	}
	if len(recs) < plan.Total {
		return types.Event{}, errs.New(errs.Unavailable, "control: loop %s: %d of %d iteration records visible", plan.Key(), len(recs), plan.Total)
	}
	result, clock := engine.LoopResult(recs)
	return c.loopDoneEvent(ctx, executionID, plan, recs, result, clock, plan.Total)
}

// continuable returns the one unit out releases when it may run at once
// in the caller's invocation: a step run's unit (no loop iteration, no
// child wait) due now. Several units (fan-out) or none give nil.
func continuable(out *engine.Output, now time.Time) *types.Command {
	if out == nil || len(out.Commands) != 1 {
		return nil
	}
	c := out.Commands[0]
	if c.Kind != types.CmdRunStep || c.Iteration != nil || c.ChildID != "" || c.NotBefore.After(now) {
		return nil
	}
	return &c
}
