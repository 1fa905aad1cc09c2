package worker

import (
	"context"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/types"
)

// Step continuation: when a step run's end releases exactly one next unit
// of the same execution, the delivery that ended it runs that unit right
// after its commit, in the same invocation, instead of waiting for Cloud
// Tasks to dispatch it (no queue hop on a chain's critical path). The
// unit's Cloud Task still exists, delayed by the lease time (a safety
// net): it is deleted once the unit has run here, and runs the unit as an
// ordinary delivery if this instance dies first or the inline run fails.
// A per-invocation budget in units (ContinueUnits) and wall time
// (ContinueBudget, below the dispatch deadline) keeps one execution from
// holding an instance.

// chain is the continuation state of one invocation.
type chain struct {
	left     int       // units it may still run inline
	deadline time.Time // no inline run starts after it
	next     *control.Continuation
	// drops are the safety-net deletes in flight.
	drops sync.WaitGroup
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

// continueChain runs the units handed back by the invocation's step ends
// (ch.next) while the budget lasts. Their errors do not fail the
// invocation (its own unit ended): the safety net delivers a unit whose
// inline run failed.
func (w *Worker) continueChain(ctx context.Context, ch *chain) {
	for ch.next != nil {
		k := *ch.next
		ch.next = nil
		ch.left--
		cmd := k.Cmd
		log := w.Log.With("execution_id", cmd.ExecutionID, "step", cmd.Step, "task", cmd.TaskName())
		if err := faults.Inject(faults.ExecuteBeforeContinue, cmd.ExecutionID); err != nil {
			log.Warn("continuation not run; its safety net delivers it", "error", err.Error())
			return
		}
		if err := w.Run(ctx, cmd, Delivery{TaskName: cmd.TaskName()}); err != nil {
			log.Warn("the continued unit failed; its safety net delivers it again", "error", err.Error())
			return
		}
		if err := faults.Inject(faults.ExecuteAfterContinue, cmd.ExecutionID); err != nil {
			log.Warn("continued unit ran; its safety net was not deleted (it finds the run ended)", "error", err.Error())
			return
		}
		// Off the chain's critical path: the invocation waits for the
		// deletes before it answers (runChained).
		ch.drops.Add(1)
		go func() {
			defer ch.drops.Done()
			if err := w.Control.DropSafetyNet(context.WithoutCancel(ctx), k); err != nil {
				log.Warn("deleting a continuation's safety net failed; it finds its run ended and is dropped", "error", err.Error())
			}
		}()
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
	err := w.runOnce(ctx, cmd, d)
	if err == nil {
		w.continueChain(ctx, ch)
	}
	ch.drops.Wait()
	return err
}
