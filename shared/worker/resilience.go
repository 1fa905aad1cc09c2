package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/types"
)

// Resilience of units of work (NoETL observability spec §8.4-§8.6, README "Architecture"
// "Invariants"): leases with a watchdog, the last delivery attempt, the
// DLQ, and hand-off before the dispatch deadline.

// WatchdogGrace is how long after a lease's expiry its watchdog looks at
// it (heartbeats renew the lease every third of its TTL, so a live holder
// always renews before that).
const WatchdogGrace = 5 * time.Second

// MaxReclaims bounds the re-dispatches of a unit whose holder keeps dying
// (its lease expires without completion): after that it is dead-lettered.
const MaxReclaims = 3

// Last reports whether this delivery is the Cloud Task's last attempt
// (X-CloudTasks-TaskRetryCount + 1 reaches the queue's max attempts).
func (d Delivery) Last() bool {
	return d.MaxAttempts > 0 && d.RetryCount+1 >= d.MaxAttempts
}

// recovering reports whether a unit may have run before (a retried
// delivery, a reclaim, a replay, a continuation's safety net: the inline
// run it backs may have run the unit's tasks before it failed or its
// instance died): its side-effecting tasks then look for a durable result
// before running (the side-effect barrier).
func (d Delivery) recovering(cmd types.Command) bool {
	return d.RetryCount > 0 || cmd.Reclaim > 0 || cmd.Replay > 0 || cmd.SafetyNet
}

// armWatchdog creates the delayed Cloud Task that checks the unit's lease
// after it would expire (no polling loop: one task per lease period).
func (u *unit) armWatchdog(ctx context.Context, seq int, at time.Time) error {
	unitCmd := u.dispatched
	chk := types.Command{Kind: types.CmdLeaseCheck, ExecutionID: unitCmd.ExecutionID, Step: unitCmd.Step, StepRun: unitCmd.StepRun,
		Iteration: unitCmd.Iteration, StateVersion: unitCmd.StateVersion, Unit: &unitCmd, Holder: u.holder, Seq: seq,
		NotBefore: at, Clock: unitCmd.Clock}
	chk.ID = chk.TaskName()
	err := u.w.Control.Enqueue(ctx, chk, u.w.now())
	return err
}

// GuardPrefix starts the holder of a guard (a lease_check armed by a
// failed delivery, guard): GuardPrefix + the Cloud Task name it guards.
const GuardPrefix = "guard:"

// guard arms the guard of cmd's task, due at: a lease_check that finishes
// what the task's deliveries could not (README "The soak"), armed by its last
// attempt before it runs (nothing retries it if it dies) and by any
// failed delivery (guardAfterFailure). One guard per task: a second arm
// finds it (the same name).
func (w *Worker) guard(ctx context.Context, cmd types.Command, at time.Time) error {
	g := types.Command{Kind: types.CmdLeaseCheck, ExecutionID: cmd.ExecutionID, Step: cmd.Step, StepRun: cmd.StepRun,
		Iteration: cmd.Iteration, StateVersion: cmd.StateVersion, Unit: &cmd, Holder: GuardPrefix + cmd.TaskName(),
		NotBefore: at, Clock: cmd.Clock}
	g.ID = g.TaskName()
	err := w.Control.Enqueue(ctx, g, w.now())
	return err
}

// guardAfterFailure arms the guard of a failed delivery, due once every
// later attempt of its task has had time to come (the remaining attempts
// times the queue's largest backoff, plus the grace). A unit's last
// attempt files it in the DLQ when it fails — but only if it reaches
// execute: when every attempt left meets an instance that is down (the
// soak kills the host), the task ends with nobody filing the unit, and
// its execution would wait forever.
func (w *Worker) guardAfterFailure(ctx context.Context, cmd types.Command, d Delivery) error {
	if d.MaxAttempts <= 0 || d.MaxBackoff <= 0 {
		return nil
	}
	left := d.MaxAttempts - 1 - d.RetryCount
	return w.guard(ctx, cmd, w.now().Add(time.Duration(left)*d.MaxBackoff+WatchdogGrace))
}

// guardCheck handles a guard (see guard): a unit parked in the DLQ needs
// nothing; one a delivery still holds is looked at again when that lease
// would expire, and one whose holder died after its holder's watchdog had
// its turn (a few times at most); a loop iteration that ended has what
// follows its end carried out again (idempotent: its last delivery may
// have died before it; a step unit's is its step run's outbox, which run
// replays before this); any other was never filed by a last attempt (none
// reached execute, or it died first) and is filed now.
func (w *Worker) guardCheck(ctx context.Context, cmd, unitCmd types.Command, attempts int, log *slog.Logger) error {
	var holder string
	var expires time.Time
	var err error
	if unitCmd.Iteration != nil {
		var status types.Status
		key := engine.LoopKey(unitCmd.Step, unitCmd.StepRun)
		status, holder, expires, err = w.Store.IterationGet(ctx, unitCmd.ExecutionID, key, *unitCmd.Iteration)
		if err == nil && status != types.StatusRunning {
			return w.iterationFollowUp(ctx, unitCmd)
		}
		if _, parked := store.ParkedBy(holder); err == nil && parked {
			return nil
		}
	} else {
		holder, expires, err = w.Store.LeaseGet(ctx, unitCmd.ExecutionID, unitCmd.UnitKey())
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	switch {
	case err == nil && holder != "" && expires.After(w.now()):
		// A delivery holds it: look again when its lease would expire.
		next := cmd
		next.Seq++
		next.NotBefore = expires.Add(WatchdogGrace)
		next.ID = next.TaskName()
		err := w.Control.Enqueue(ctx, next, w.now())
		return err
	case err == nil && holder != "" && cmd.Seq < MaxReclaims+2:
		// Its holder stopped renewing: the holder's watchdog (armed before
		// the lease) reclaims it, or files it after MaxReclaims; look
		// again after that watchdog's turn.
		next := cmd
		next.Seq++
		next.NotBefore = w.now().Add(w.ttl() + WatchdogGrace)
		next.ID = next.TaskName()
		err := w.Control.Enqueue(ctx, next, w.now())
		return err
	}
	log.Warn("no attempt of a failing unit's task reached execute after its last failure; filing it in the DLQ")
	return w.deadLetter(ctx, unitCmd, holder, attempts, fmt.Errorf("its task's attempts ran out without the last one reaching execute"))
}

// iterationFollowUp carries out again what follows the end of unitCmd's
// loop iteration, which has ended (control.IterationEnded: the lane's next
// iteration, the lane done, the loop's completion — each idempotent): the
// delivery that recorded the end may have died before it (README "The soak": the
// soak wedged an execution that way, seed 1). Nothing follows a canceled
// iteration.
func (w *Worker) iterationFollowUp(ctx context.Context, unitCmd types.Command) error {
	key := engine.LoopKey(unitCmd.Step, unitCmd.StepRun)
	rec, err := w.Store.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: unitCmd.ExecutionID, LoopKey: key, Index: *unitCmd.Iteration, Now: w.now()})
	if err != nil || rec == nil || rec.Status == types.StatusCanceled {
		return err
	}
	return w.Control.IterationEnded(ctx, unitCmd, *rec)
}

// leaseCheck handles a watchdog: a unit whose holder still renews its
// lease gets the next watchdog; one whose lease expired without the unit
// ending is reclaimed (re-dispatched, the side-effect barrier making the
// re-run safe) or, after MaxReclaims, dead-lettered; a loop iteration that
// ended has what follows its end carried out again (iterationFollowUp). A
// guard (GuardPrefix) is guardCheck's.
func (w *Worker) leaseCheck(ctx context.Context, cmd types.Command, d Delivery, log *slog.Logger) error {
	if cmd.Unit == nil {
		return errs.New(errs.InvalidArgument, "worker: lease_check without its unit")
	}
	unitCmd := *cmd.Unit
	if strings.HasPrefix(cmd.Holder, GuardPrefix) {
		return w.guardCheck(ctx, cmd, unitCmd, max(d.MaxAttempts, 1), log)
	}
	var holder string
	var expires time.Time
	var err error
	if unitCmd.Iteration != nil {
		var status types.Status
		status, holder, expires, err = w.Store.IterationGet(ctx, unitCmd.ExecutionID, engine.LoopKey(unitCmd.Step, unitCmd.StepRun), *unitCmd.Iteration)
		if err == nil && status != types.StatusRunning {
			// The iteration ended, but its step run still runs (run
			// drops the watchdogs of ended step runs): the delivery that
			// ended it may have died before what follows the end, and no
			// attempt of its task may be left to do it (they were spent
			// while it ran, or met the host down) — carried out again.
			return w.iterationFollowUp(ctx, unitCmd)
		}
	} else {
		holder, expires, err = w.Store.LeaseGet(ctx, unitCmd.ExecutionID, unitCmd.UnitKey())
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil // released: the unit ended or handed off
	}
	if err != nil {
		return err
	}
	now := w.now()
	switch {
	case holder != cmd.Holder:
		return nil // another delivery took the unit over and watches it
	case expires.After(now):
		next := cmd
		next.Seq++
		next.NotBefore = expires.Add(WatchdogGrace)
		next.ID = next.TaskName()
		err := w.Control.Enqueue(ctx, next, now)
		return err
	}
	// The holder stopped renewing: it died.
	if unitCmd.Reclaim >= MaxReclaims {
		log.Error("unit's holder died too often; dead-lettering it", "reclaims", unitCmd.Reclaim)
		return w.deadLetter(ctx, unitCmd, cmd.Holder, unitCmd.Reclaim+1, fmt.Errorf("lease expired %d times without the unit ending (its holder stopped)", unitCmd.Reclaim+1))
	}
	next := unitCmd
	next.Reclaim++
	next.NotBefore = time.Time{}
	next.ID = next.TaskName()
	log.Warn("lease expired without the unit ending: reclaiming it", "reclaim", next.Reclaim)
	if err := w.Control.Enqueue(ctx, next, now); err != nil {
		return err
	}
	w.observeReclaim(ctx, unitCmd, next.Reclaim, log) // telemetry: lease_reclaimed
	ev := w.unitEvent(unitCmd, types.EvUnitReclaimed, history.UnitReclaimed{Reclaim: next.Reclaim, Holder: cmd.Holder}, "reclaim", itoa(next.Reclaim))
	return w.publishOne(ctx, ev)
}

// unitEvent builds an event about a unit (outside the unit's own run).
func (w *Worker) unitEvent(c types.Command, typ types.EventType, payload history.Payload, idParts ...string) types.Event {
	ev := types.NewEvent(typ, c.ExecutionID, Source, w.now(), append([]string{c.UnitKey(), itoa(c.TaskIndex), itoa(c.Attempt), itoa(c.Jumps)}, idParts...)...)
	ev.Step, ev.StepRun, ev.Iteration = c.Step, c.StepRun, c.Iteration
	ev.EntityType, ev.EntityID = "step", c.Step
	if c.Iteration != nil {
		ev.EntityType, ev.EntityID = "iteration", c.Step+"#"+itoa(*c.Iteration)
	}
	ev.Payload = history.Encode(payload)
	ev.Clock = types.HLC(c.Clock, w.now()) + 1
	return ev
}

func (w *Worker) publishOne(ctx context.Context, ev types.Event) error {
	return w.Bus.PublishBatch(ctx, types.Batch{ID: types.DeriveID(ev.ExecutionID, "event", ev.EventID), ExecutionID: ev.ExecutionID, Source: Source, Events: []types.Event{ev}})
}

// DLQMessageID is the DLQ entry id of a unit.
func DLQMessageID(c types.Command) string { return "unit-" + c.TaskName() }

// rearm creates the successor of a watchdog (Seq+1, due after the grace)
// that could not do its work.
func (w *Worker) rearm(ctx context.Context, cmd types.Command) error {
	next := cmd
	next.Seq++
	next.NotBefore = w.now().Add(WatchdogGrace)
	next.ID = next.TaskName()
	err := w.Control.Enqueue(ctx, next, w.now())
	return err
}

// deadLetter files a unit in the DLQ (NoETL observability spec §8.6: max attempts
// exceeded, non-retryable error, poison) and records it in the event log.
// The unit's step run stays running — parked — until the entry is
// replayed (the unit runs again and the execution goes on) or discarded
// (the step fails). Nothing is filed when the unit has ended, or when a
// delivery other than holder's holds its lease (control.FileUnit): that
// delivery, or its watchdog, finishes it.
func (w *Worker) deadLetter(ctx context.Context, cmd types.Command, holder string, attempts int, cause error) error {
	now := w.now().UTC()
	red := w.execRedactor(ctx, cmd)
	raw := red.SecretsBytes(mustJSON(cmd)) // replayable, without secret values
	payload, _ := json.Marshal(red.Value(jsonAny(raw)))
	kind := ""
	if rec, err := w.Store.ExecutionGet(ctx, cmd.ExecutionID); err == nil {
		if pb, err := w.playbook(rec.Source); err == nil {
			if st := pb.Step(cmd.Step); st != nil && cmd.TaskIndex < len(st.Tasks) {
				kind = st.Tasks[cmd.TaskIndex].Kind
			}
		}
	}
	msg := red.String(cause.Error())
	e := store.DLQEntry{
		MessageID: DLQMessageID(cmd), ExecutionID: cmd.ExecutionID, StepID: cmd.Step, LoopIndex: cmd.Iteration,
		ToolKind: kind, Attempts: attempts, LastError: msg, FirstSeen: now, LastSeen: now,
		Payload: string(payload), ContextExcerpt: excerpt(fmt.Sprintf("unit %s (step %s run %d, task %d attempt %d, jumps %d): %s", cmd.UnitKey(), cmd.Step, cmd.StepRun, cmd.TaskIndex, cmd.Attempt, cmd.Jumps, msg)),
		Source: Source, Kind: store.DLQUnit, Unit: string(raw),
	}
	if cmd.Iteration != nil {
		e.LoopKey = engine.LoopKey(cmd.Step, cmd.StepRun)
	}
	out, err := w.Control.FileUnit(ctx, control.FileParams{Unit: cmd, Holder: holder, Entry: e})
	if err != nil {
		return err
	}
	if !out.Filed && out.Ended {
		return w.followUp(ctx, cmd, e, out.Reason)
	}
	if !out.Filed {
		w.Log.Info("not dead-lettering a unit: "+out.Reason, "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", msg)
		return nil
	}
	if err := faults.Inject(faults.ExecuteAfterDeadLetter, cmd.ExecutionID); err != nil {
		return err
	}
	if cmd.Iteration == nil && holder != "" {
		// The park keeps the unit; the filer's lease goes, so that its
		// watchdog stops (it would find the unit parked anyway).
		w.releaseLease(context.WithoutCancel(ctx), cmd, holder)
	}
	w.observeDLQ(ctx, cmd, kind, e.MessageID, attempts, cause, msg) // telemetry: noetl_dlq_total, task_dlq
	ev := w.unitEvent(cmd, types.EvUnitDeadLettered, history.UnitDeadLettered{DLQID: e.MessageID, Attempts: attempts, Error: msg}, "dlq")
	ev.Status = types.StatusError
	return w.publishOne(ctx, ev)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func jsonAny(b []byte) any {
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// excerpt keeps the last 2 KB of a context text (NoETL observability spec §8.6).
func excerpt(s string) string {
	if len(s) > 2048 {
		return s[len(s)-2048:]
	}
	return s
}

// followUp hands the follow-up of a unit that ended — the loop's next
// step, the transition's outbox, which its last attempt failed to carry
// out — to a successor delivery (Reclaim+1: a new task of the same unit,
// which finds it ended and carries the follow-up out), up to MaxReclaims
// times; after that the unit is filed in the DLQ without a park, for an
// operator to replay (which does the same).
func (w *Worker) followUp(ctx context.Context, cmd types.Command, e store.DLQEntry, why string) error {
	if cmd.Reclaim < MaxReclaims {
		next := cmd
		next.Reclaim++
		next.NotBefore = w.now().Add(WatchdogGrace)
		next.ID = next.TaskName()
		w.Log.Warn("a unit that ended failed its follow-up on its last attempt; a new delivery carries it out", "execution_id", cmd.ExecutionID, "step", cmd.Step, "why", why, "reclaim", next.Reclaim)
		err := w.Control.Enqueue(ctx, next, w.now())
		return err
	}
	w.Log.Error("a unit that ended kept failing its follow-up; filing it in the DLQ", "execution_id", cmd.ExecutionID, "step", cmd.Step, "why", why)
	e.ContextExcerpt = excerpt("the unit ended (" + why + ") but its follow-up kept failing: " + e.LastError)
	return w.Store.DLQPut(ctx, e)
}

// ErrUnitEnded is DiscardUnit's error when the unit had already ended
// (its iteration was recorded, its step run ended): nothing was
// discarded. Its code is FailedPrecondition.
var ErrUnitEnded = &errs.Error{Code: errs.FailedPrecondition, Msg: "worker: the unit had already ended"}

// DiscardUnit ends a dead-lettered unit's parked step run as failed (error
// kind dead_lettered with the reason): through the step's boundary for a
// step unit, through the iteration's record for a loop iteration. The
// entry dlqID is marked discarded in the same commit when it parks the
// unit. It is idempotent: repeated after a failure, it carries out what the
// first call left undone (the transition's outbox, the loop's next
// iteration). ErrUnitEnded when the unit had ended otherwise.
func (w *Worker) DiscardUnit(ctx context.Context, cmd types.Command, dlqID, reason string) error {
	em := map[string]any{"kind": "dead_lettered", "message": "discarded from the DLQ: " + reason, "dlq_id": dlqID, "retryable": false}
	discarded := store.DLQResolution{ID: dlqID, Status: store.DLQDiscarded, Note: reason}
	if cmd.Iteration != nil {
		key := engine.LoopKey(cmd.Step, cmd.StepRun)
		rec := engine.IterationRecord{Index: *cmd.Iteration, Status: types.StatusError, Error: em, Clock: types.HLC(cmd.Clock, w.now()) + 1}
		// A leased iteration's record document holds its (dead) holder:
		// end it as that holder (a parked one is ended whoever asks).
		status, holder, _, err := w.Store.IterationGet(ctx, cmd.ExecutionID, key, *cmd.Iteration)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && status != types.StatusRunning {
			// Ended: by this discard before (finish its work), or
			// otherwise.
			// (Grouped: a record ended in a group document is returned
			// as it is, not leased over.)
			ended, err := w.Store.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: cmd.ExecutionID, LoopKey: key, Index: *cmd.Iteration, Now: w.now(), Grouped: true})
			if err != nil || ended == nil {
				return err
			}
			if m, _ := ended.Error.(map[string]any); m == nil || m["dlq_id"] != dlqID {
				return ErrUnitEnded
			}
			return w.Control.IterationEnded(ctx, cmd, *ended)
		}
		// One store call ends it and carries out what follows
		// (control.CompleteIteration).
		_, err = w.Control.CompleteIteration(ctx, control.IterationEnd{Cmd: cmd, Record: rec, Holder: holder,
			Resolve: func(id string) store.DLQResolution {
				if id == discarded.ID {
					return discarded
				}
				return store.DLQResolution{Status: store.DLQDone, Note: "the iteration was discarded through entry " + dlqID}
			}})
		return err
	}
	rec, err := w.Store.ExecutionGet(ctx, cmd.ExecutionID)
	if err != nil {
		return err
	}
	if ss := rec.State.Steps[cmd.Step]; rec.State.Terminal() || ss == nil || ss.Run != cmd.StepRun || (ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled) {
		// Ended: by this discard before (its outbox is replayed), or
		// otherwise.
		if m, _ := stepError(ss, cmd.StepRun)["dlq_id"].(string); m != dlqID {
			return ErrUnitEnded
		}
		return w.Control.Replay(ctx, cmd.ExecutionID, control.EndOutboxID(cmd.ExecutionID, cmd.Step, cmd.StepRun))
	}
	ev := w.unitEvent(cmd, types.EvStepFailed, history.StepFailed{Error: em}, "discard")
	ev.Status = types.StatusFailed
	_, err = w.Control.Apply(ctx, control.ApplyParams{ExecutionID: cmd.ExecutionID, Event: ev,
		OutboxID: control.EndOutboxID(cmd.ExecutionID, cmd.Step, cmd.StepRun), Events: []types.Event{ev}, Discard: &discarded})
	return err
}

// stepError is the error map of step run run (nil when ss is another run
// or has none).
func stepError(ss *engine.StepState, run int) map[string]any {
	if ss == nil || ss.Run != run {
		return nil
	}
	m, _ := ss.Error.(map[string]any)
	return m
}

// cutShort closes the chain of a loop iteration dropped because its step
// run or execution ended without it (README "The soak"), when nobody else
// will: a delivery of the iteration (or its watchdog, which a stop keeps)
// finding its record running and unheld (released, expired, parked)
// cancels it and publishes its loop.iteration.canceled; a record canceled
// earlier has its event published again (a crash between the two). A
// record its holder still renews is left to that holder, which cancels it
// at its next task boundary — and its watchdog re-arms, in case it dies
// first. Other units need nothing: a step run's end is its step.canceled
// (engine).
func (w *Worker) cutShort(ctx context.Context, cmd, unitCmd types.Command, st *engine.State, reason string) error {
	if unitCmd.Iteration == nil || (cmd.Kind != types.CmdRunStep && cmd.Kind != "" && cmd.Kind != types.CmdLeaseCheck) {
		return nil
	}
	status, holder, expires, err := w.Store.IterationGet(ctx, unitCmd.ExecutionID, engine.LoopKey(unitCmd.Step, unitCmd.StepRun), *unitCmd.Iteration)
	if errors.Is(err, store.ErrNotFound) {
		return nil // never started under a lease, nor registered: nothing to close
	}
	if err != nil {
		return err
	}
	if status == types.StatusRunning {
		if _, parked := store.ParkedBy(holder); !parked && holder != "" && expires.After(w.now()) {
			if cmd.Kind == types.CmdLeaseCheck && holder == cmd.Holder {
				next := cmd
				next.Seq++
				next.NotBefore = expires.Add(WatchdogGrace)
				next.ID = next.TaskName()
				err := w.Control.Enqueue(ctx, next, w.now())
				return err
			}
			return nil // a live unit: it closes it at its next task boundary
		}
	} else if status != types.StatusCanceled {
		return nil // completed
	}
	ev, err := w.Control.CancelIteration(ctx, unitCmd, "", reason, types.HLC(st.Clock, w.now())+1)
	if err != nil || ev == nil {
		return err
	}
	return w.publishOne(ctx, *ev)
}
