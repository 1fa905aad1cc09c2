package control

import (
	"context"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Continuation is a unit a step run's end released for its caller to run
// in the same invocation (step continuation): Cmd is the unit to run now;
// Net is its safety-net Cloud Task (the same task name, due after the
// lease time), which runs the unit, as a delivery would, if the caller
// gives up on it.
//
// The transition's outbox is not carried out yet when the continuation is
// handed back: the caller publishes the transition's events
// (PublishTogether, with those of the transitions after it) beside the
// continued run, off the chain's critical path, and must see that succeed
// before it answers its delivery. Net is created (CreateNet) only
// when the caller does not run the unit to its end: its run failed, or
// was not started. A unit that ran to its end in the invocation needs no
// net: while the invocation has not answered, its own Cloud Task is not
// acknowledged, and it is the net of the whole run. The commit holds the
// outbox with Net in it in place of the unit, so a crash at any point is
// recovered by that task's redelivery: its unit has ended, its outbox is
// replayed, which creates Net (one task, with Net's name and schedule;
// never also an immediate one); Net's delivery finds its unit ended in
// turn (when it had) and replays that unit's outbox, which creates the
// next unit's net, and so on up to the unit the crash stopped, which it
// runs.
type Continuation struct {
	Cmd types.Command
	Net types.Command
	// Holder is the holder of Cmd's lease, taken in the commit that
	// released it (ApplyParams.ContinueLease); "" when none was taken (the
	// unit runs without a lease, or takes it as a delivery does).
	Holder string
	// LeaseVersion is that lease's version (store.UnitCompletion
	// .NextLeaseVersion), for Cmd's end (Lease.Version); "" when unknown.
	LeaseVersion string
	// Base is the execution as the commit that released Cmd wrote it (its
	// state, the caller's Source and Files, the written update time), for
	// Cmd's run to start from instead of reading the document again; nil
	// when the caller gave no Base. It is the caller's to mutate (a
	// checkpoint's Base is).
	Base *store.Execution
	// Deferred reports that the end that released Cmd is not committed
	// yet (deferral.go): Base is the state in memory, and Net is not a
	// task but the commit of the deferred ends, with Cmd due at once
	// (CreateNet makes it).
	Deferred bool

	flush, net func(context.Context) error
	// events is the transition's event batch (no events: ID empty);
	// publishBatch publishes a batch (PublishTogether).
	events       types.Batch
	publishBatch func(context.Context, types.Batch) error
}

// Flush carries out the transition that released the continuation: Net
// is created and the transition's events are published (Control.Flush).
func (k *Continuation) Flush(ctx context.Context) error {
	if k.flush == nil {
		return nil
	}
	return k.flush(ctx)
}

// PublishTogether publishes the events of continuations ks (in their
// order: the order of their transitions) as one batch
// (bus.MergeBatches): what Flush of each would publish but for Net, in
// one message and so one event-log document. A failure publishes nothing the caller
// can count on: it must fail its delivery, whose redelivery replays the
// transitions' outboxes (their own batches; the log dedups events by id).
func PublishTogether(ctx context.Context, ks []*Continuation) error {
	var bs []types.Batch
	var pub func(context.Context, types.Batch) error
	for _, k := range ks {
		if k == nil || k.events.ID == "" {
			continue
		}
		bs = append(bs, k.events)
		pub = k.publishBatch
	}
	// A chain continues one execution's units; should batches of two
	// executions ever meet here, each execution's go out apart (a merged
	// batch belongs to one execution).
	for len(bs) > 0 {
		n := 1
		for n < len(bs) && bs[n].ExecutionID == bs[0].ExecutionID {
			n++
		}
		if err := pub(ctx, bus.MergeBatches(bs[:n])); err != nil {
			return err
		}
		bs = bs[n:]
	}
	return nil
}

// CreateNet creates Net (the caller gives up on running the unit to its
// end).
func (k *Continuation) CreateNet(ctx context.Context) error {
	if k.net == nil {
		return nil
	}
	return k.net(ctx)
}

// markSafetyNet, inside the commit (with p.SafetyNet set), replaces the
// one unit out releases, when the caller may run it at once (continuable),
// by its safety net, due after p.SafetyNet: the outbox then holds the net,
// and its replay creates that task only. The unit as released is kept
// (t.cont) to hand back.
func (t *transition) markSafetyNet(out *engine.Output) {
	if t.p.SafetyNet <= 0 {
		return
	}
	now := t.now()
	next := continuable(out, now)
	if next == nil {
		return
	}
	t.cont = next
	out.Commands[0].NotBefore = now.Add(t.p.SafetyNet)
	out.Commands[0].SafetyNet = true // its delivery recovers the unit (worker: Delivery.recovering)
}

// flushContinuing hands the committed transition's one unit back to the
// caller (t.next) with the outbox still to carry out (Continuation.Flush):
// out.Commands holds the safety net (markSafetyNet).
func (t *transition) flushContinuing(out *engine.Output, next types.Command) {
	c, p := t.c, t.p
	t.next = &Continuation{Cmd: next, Net: out.Commands[0],
		flush:        func(ctx context.Context) error { return c.Flush(ctx, p.ExecutionID, p.OutboxID, out) },
		net:          func(ctx context.Context) error { return c.Dispatch(ctx, out.Commands...) },
		publishBatch: c.Bus.PublishBatch}
	if len(out.Events) > 0 {
		t.next.events = c.transitionBatch(p.ExecutionID, p.OutboxID, out.Events)
	}
}

// ContinueLease is the lease a continued unit runs under, taken in the
// commit that releases it instead of by a LeaseAcquire of its own after
// it (one commit on a chain's critical path instead of two). Leased says
// whether the caller runs that unit under a lease (a side-effecting step:
// the worker's rule); Holder and TTL are the lease's.
//
// A crash at any point is recovered as without it: the lease is taken
// only with the transition that releases its unit; the unit's safety net
// (created by the outbox's flush or, after a crash, by its replay) is due
// after the lease time, and its delivery takes the lease over once it has
// expired (a holder that died stops renewing it), as it takes over any
// expired lease.
type ContinueLease struct {
	Holder string
	TTL    time.Duration
	Leased func(cmd types.Command) bool
}

// nextLease is the store's Next for the transition's commit: the unit
// markSafetyNet keeps to hand back (t.cont, set by Apply inside the
// commit), when it runs leased.
func (t *transition) nextLease() *store.NextLease {
	l := t.p.ContinueLease
	if l == nil || t.p.SafetyNet <= 0 || l.Holder == "" || l.Leased == nil {
		return nil
	}
	return &store.NextLease{Holder: l.Holder, TTL: l.TTL, Now: t.now(), Unit: func() string {
		if t.cont == nil || !l.Leased(*t.cont) {
			return ""
		}
		return t.cont.UnitKey()
	}}
}

// leased records on the continuation handed back that its lease was taken
// in the commit.
// version is the lease's version (store.UnitCompletion.NextLeaseVersion).
func (t *transition) leased(taken bool, version string) {
	if taken && t.next != nil {
		t.next.Holder, t.next.LeaseVersion = t.p.ContinueLease.Holder, version
	}
}
