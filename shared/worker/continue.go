package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/types"
)

// Step continuation: when a step run's end releases exactly one next unit
// of the same execution, the delivery that ended it runs that unit right
// after its commit, in the same invocation, instead of waiting for Cloud
// Tasks to dispatch it (no queue hop on a chain's critical path). The
// invocation's own Cloud Task, not acknowledged before it answers, is the
// safety net of the whole run: a crash anywhere makes it come again, and
// its replay of the outbox creates the next unit's net (see
// control.Continuation). A unit the invocation does not run to its end
// (its run failed, a fault stopped the chain) gets its own net, a Cloud
// Task delayed by the lease time, before the invocation answers. A
// per-invocation budget in units (ContinueUnits) and wall time
// (ContinueBudget, below the dispatch deadline) keeps one execution from
// holding an instance.

// chain is the continuation state of one invocation.
type chain struct {
	left     int       // units it may still run inline
	deadline time.Time // no inline run starts after it
	next     *control.Continuation
	// jobs are the continuations' event publications and safety-net
	// creations, run one after the other (in the order of the transitions)
	// beside the chain; tail is closed when the last one queued has ended.
	jobs   sync.WaitGroup
	tailMu sync.Mutex
	tail   chan struct{}
	mu     sync.Mutex
	err    error // the first job that failed
	// events are the continuations whose transitions' events wait to be
	// published together (queueEvents); timer publishes them after
	// ChainEventsLinger.
	evMu   sync.Mutex
	events []*control.Continuation
	timer  *time.Timer
	// ended are the deliveries that ended here handing a unit back (the
	// invocation's own, then the continued units'): when a job fails, a
	// later delivery of any of them on this instance is not dropped as
	// ended, for the recovery replays their outboxes one after the other
	// (the invocation's redelivery, then each net it creates).
	ended []string
	// ran are the units the chain continued (the invocation's own
	// excepted): when deferred ends are lost (their commit failed, or
	// met a changed execution: control.Deferral.Dropped) their units run
	// again, so their deliveries must not be dropped as ended either.
	ran []string
}

// ChainEventsLinger and ChainEventsMax bound how long and for how many
// continued units a chain holds its transitions' events before it
// publishes them together, as one message and one event-log document
// (control.PublishTogether): a chain of short steps pays one projection
// per group of steps instead of one per step. The log shows a step's end
// at most this much later than the state does; the invocation answers
// only once everything is published.
const (
	ChainEventsLinger = 50 * time.Millisecond
	ChainEventsMax    = 16
)

// hand takes the continuation a unit's end handed back: it runs next, and
// its transition's events are published meanwhile (off the critical
// path: the commit already holds them), with those of the units
// continued after it (queueEvents); its net is created only if the chain
// gives it up (abandon).
// unit names the delivery whose end released next (chain.ended).
func (ch *chain) hand(ctx context.Context, next *control.Continuation, unit string) {
	ch.next = next
	ch.mu.Lock()
	ch.ended = append(ch.ended, unit)
	ch.mu.Unlock()
	ch.queueEvents(ctx, next)
}

// queueEvents holds k's events for publishing with the next ones: they go
// out after ChainEventsLinger, at ChainEventsMax held, before a net the
// chain creates, or when the chain ends, whichever comes first.
func (ch *chain) queueEvents(ctx context.Context, k *control.Continuation) {
	ch.evMu.Lock()
	defer ch.evMu.Unlock()
	ch.events = append(ch.events, k)
	if len(ch.events) >= ChainEventsMax {
		ch.publishEventsLocked(ctx)
		return
	}
	if ch.timer == nil {
		// A timer that fires after wait took the events finds none.
		ch.timer = time.AfterFunc(ChainEventsLinger, func() {
			ch.evMu.Lock()
			defer ch.evMu.Unlock()
			ch.publishEventsLocked(ctx)
		})
	}
}

// publishEvents queues the publication of the events held (ch.evMu not
// held).
func (ch *chain) publishEvents(ctx context.Context) {
	ch.evMu.Lock()
	defer ch.evMu.Unlock()
	ch.publishEventsLocked(ctx)
}

// publishEventsLocked queues the publication of the events held, in one
// batch (ch.evMu held).
func (ch *chain) publishEventsLocked(ctx context.Context) {
	if ch.timer != nil {
		ch.timer.Stop()
		ch.timer = nil
	}
	ks := ch.events
	ch.events = nil
	if len(ks) == 0 {
		return
	}
	ch.after(func() error { return control.PublishTogether(context.WithoutCancel(ctx), ks) })
}

// after queues job behind the ones queued before it; its error fails the
// invocation (wait).
func (ch *chain) after(job func() error) {
	ch.tailMu.Lock()
	prev, done := ch.tail, make(chan struct{})
	ch.tail = done
	ch.jobs.Add(1)
	ch.tailMu.Unlock()
	go func() {
		defer ch.jobs.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		if err := job(); err != nil {
			ch.mu.Lock()
			if ch.err == nil {
				ch.err = err
			}
			ch.mu.Unlock()
		}
	}()
}

// abandon creates the net of k, a continuation the chain does not run to
// its end. A failure fails the invocation: its redelivery replays the
// outbox, which creates the net.
func (ch *chain) abandon(ctx context.Context, k *control.Continuation) {
	ch.publishEvents(ctx) // the events of the transitions before the net's
	ch.after(func() error { return k.CreateNet(context.WithoutCancel(ctx)) })
}

// wait publishes the events held, waits for the queued jobs and returns
// the first flush error.
func (ch *chain) wait(ctx context.Context) error {
	ch.publishEvents(ctx)
	ch.jobs.Wait()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.err
}

type chainKey struct{}

func chainOf(ctx context.Context) *chain {
	c, _ := ctx.Value(chainKey{}).(*chain)
	return c
}

// safetyNet is the delay of a continuation's safety-net Cloud Task when
// this unit's end may hand its next unit back (0: it may not).
func (u *unit) safetyNet(ctx context.Context) time.Duration {
	ch := chainOf(ctx)
	if ch == nil || ch.left <= 0 || !u.w.now().Before(ch.deadline) {
		return 0
	}
	return u.w.ttl()
}

// continueLease is the lease the unit this unit's end hands back runs
// under, taken in that end's commit (control.ContinueLease), when it may
// hand one back: a unit runs leased when its step is side-effecting (run's
// rule; a continued unit is never a retried delivery).
func (u *unit) continueLease(ctx context.Context) *control.ContinueLease {
	if u.safetyNet(ctx) <= 0 {
		return nil
	}
	pb := u.pb
	return &control.ContinueLease{Holder: newHolder(), TTL: u.w.ttl(), Leased: func(cmd types.Command) bool {
		step := pb.Step(cmd.Step)
		return step != nil && engine.StepSideEffecting(pb, step)
	}}
}

// continueChain runs the units handed back by the invocation's step ends
// (ch.next) while the budget lasts. Their errors do not fail the
// invocation (its own unit ended): a unit whose inline run failed, or
// that a fault kept from running, gets its safety net (abandon), which
// delivers it. A unit that ran needs none (it ended, or what follows it
// is durable as after any delivery answered without an error).
func (w *Worker) continueChain(ctx context.Context, ch *chain) {
	// giveUp creates the net of a unit handed back and not run (not
	// deferred: a crash runs nothing more, and its recovery is the
	// invocation's redelivery).
	giveUp := func() {
		if ch.next != nil {
			ch.abandon(ctx, ch.next)
			ch.next = nil
		}
	}
	for ch.next != nil {
		k := ch.next
		ch.next = nil
		ch.left--
		cmd := k.Cmd
		ch.mu.Lock()
		ch.ran = append(ch.ran, cmd.TaskName())
		ch.mu.Unlock()
		log := w.Log.With("execution_id", cmd.ExecutionID, "step", cmd.Step, "task", cmd.TaskName())
		if err := faults.Inject(faults.ExecuteBeforeContinue, cmd.ExecutionID); err != nil {
			log.Warn("continuation not run; its safety net delivers it", "error", err.Error())
			ch.abandon(ctx, k)
			return
		}
		// Holder's lease, when taken, was taken in the commit that
		// released the unit (continueLease): the run does not take it again.
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName(), Holder: k.Holder, Leased: k.Holder != "", base: k.Base, leaseVersion: k.LeaseVersion}); err != nil {
			log.Warn("the continued unit failed; its safety net delivers it again", "error", err.Error())
			ch.abandon(ctx, k)
			giveUp()
			return
		}
		if err := faults.Inject(faults.ExecuteAfterContinue, cmd.ExecutionID); err != nil {
			log.Warn("continued unit ran; the chain stops here", "error", err.Error())
			giveUp()
			return
		}
	}
}

// runChained is Run's entry: the outermost call of an invocation owns its
// continuation budget and runs what the units it ran hand back.
func (w *Worker) runChained(ctx context.Context, cmd types.Command, d Delivery) error {
	if chainOf(ctx) != nil || w.ContinueUnits <= 0 || w.ContinueBudget <= 0 || cmd.Kind != types.CmdRunStep {
		return w.runOnce(ctx, cmd, d)
	}
	ch := &chain{left: w.ContinueUnits, deadline: w.now().Add(w.ContinueBudget)}
	ctx = context.WithValue(ctx, chainKey{}, ch)
	// Ends of units run without a lease may commit together
	// (control.Deferral): what is still deferred commits before the
	// delivery answers.
	forget := func() {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		for _, name := range append(append([]string{cmd.TaskName()}, ch.ended...), ch.ran...) {
			w.seen.forget(name)
		}
	}
	// A commit that drops deferred ends makes their units run again: their
	// deliveries are not duplicates of runs that ended (runOnce does not
	// record the unit it is running as ended either).
	dd := &control.Deferral{Max: w.ContinueDefer, OnDrop: forget}
	ctx = control.WithDeferral(ctx, dd)
	err := w.runOnce(ctx, cmd, d)
	if err == nil {
		w.continueChain(ctx, ch)
	}
	// A transition's outbox not carried out (its events, an abandoned
	// unit's net) fails the delivery: its redelivery replays the outbox,
	// and the nets' deliveries replay those of the units continued. The
	// jobs end first: a unit given up commits the deferred ends with it
	// released at once (its job); what is deferred after them commits
	// here.
	werr := ch.wait(ctx)
	serr := w.Control.Settle(context.WithoutCancel(ctx))
	if serr != nil {
		w.Log.Warn("the chain's deferred step ends did not commit; the delivery fails and its redelivery runs them again", "execution_id", cmd.ExecutionID, "error", serr.Error())
	}
	if ferr := errors.Join(werr, serr); ferr != nil {
		forget()
		if err == nil {
			return ferr
		}
	}
	return err
}

// forget drops the record that the delivery name ended here: its
// transition's outbox was not carried out, so its next delivery runs (and
// replays it) instead of being dropped as a duplicate.
func (d *deliveries) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.done, name)
}
