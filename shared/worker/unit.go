package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// flushEvents and flushEvery bound how many events, and for how long, a
// long unit (pagination) keeps before publishing them as a batch; a unit
// normally publishes one batch, at its end.
const (
	flushEvents = 256
	flushEvery  = 2 * time.Second
)

// unit is the running state of one unit of work.
type unit struct {
	w       *Worker
	cmd     types.Command
	cur     engine.Cursor
	rec     *store.Execution // as read at the unit's start (the checkpoint's base)
	st      *engine.State
	pb      *dsl.Playbook
	step    *dsl.Step
	log     *slog.Logger
	results map[string]any
	// loaded is the state's step results with the results-tier
	// references the step reads loaded (resolveResults, lazy.go):
	// python's context global (taskio.go).
	loaded map[string]any
	// fetched names the stored results the unit loaded.
	fetched []string
	// itemFailure is set when the iteration's item (a row of a stored
	// table) could not be read: the unit fails with it.
	itemFailure map[string]any
	pending     []types.Event
	// batch numbers the unit's batches (their ids derive from it); clock is
	// the Lamport time of the unit's last event.
	batch     int
	clock     int64
	lastFlush time.Time
	// holder identifies this delivery's lease; leased reports the unit has
	// side effects and runs under a lease.
	holder string
	leased bool
	held   bool // its lease was taken in the commit that released it (Delivery.Leased)
	// leaseVersion is that lease's version while the heartbeat has not
	// renewed it (nil: unknown; control.Lease.Version).
	leaseVersion atomic.Pointer[string]
	// dispatched is the command as delivered (a reclaim re-dispatches it);
	// recovering reports that the unit may have run before (retried
	// delivery, reclaim, replay): side-effecting tasks then adopt their
	// durable results instead of running again.
	dispatched types.Command
	recovering bool
	// started is when the unit began; handOffAfter its budget before it
	// hands the rest of its pipeline to a new unit; progressed reports a
	// task ended since (a hand-off needs a new cursor).
	started      time.Time
	handOffAfter time.Duration
	progressed   bool
	// kc is the resolved keychain (never persisted, never in events).
	kc map[string]any
	// red masks the keychain's secrets in events and logs.
	red *redact.Redactor
	// cursorEnd, when set, is the frame state a failed cursor claim leaves
	// (cursor.go).
	cursorEnd *engine.CursorFrame
	// input is the current attempt's rendered args and config (inputOf),
	// for its task.attempt event ("" before the task is rendered).
	input string
	// callID is the current task attempt's id (its task.attempt.started
	// event id): the log lines' call_id (NoETL observability spec §8.2).
	callID string
	// lastSpec is the rendered configuration of the task last run (a
	// filed failure's spec, taskdlq.go).
	lastSpec map[string]any
	// inputs are the rendered inputs the running attempt records, when
	// its result may be re-derived (runTool; history.TaskAttempt.Inputs).
	inputs *history.TaskInputs
	// record writes a side-effecting attempt's record not written yet;
	// arming is the watchdog's arm under way (pending.go).
	record func() error
	arming chan error
}

func itoa(i int) string { return types.DeriveIDPart(i) }

// event appends an event of the unit (its id derives from the unit, the
// task, the jumps taken and idParts, so a re-run has the same ids) and
// stamps its hybrid logical clock now, when it happens: after the unit's
// previous event and at least its wall time (types.HLC). Stamping when the
// batch is sealed, at the unit's end, gave every event of a long unit its
// end time: the log's causal order then showed a 4-second iteration
// starting after the instant iterations released with it had ended
// (types.Event: events unrelated by causality order by wall time).
func (u *unit) event(typ types.EventType, task string, idParts ...string) *types.Event {
	c := u.cmd
	parts := append([]string{c.UnitKey(), task, itoa(u.cur.Jumps)}, idParts...)
	now := u.w.now()
	ev := types.NewEvent(typ, c.ExecutionID, Source, now, parts...)
	u.clock = types.HLC(u.clock, now) + 1
	ev.Clock = u.clock
	ev.Step, ev.StepRun, ev.Task, ev.Iteration, ev.ParentID = c.Step, c.StepRun, task, c.Iteration, u.st.ParentID
	switch {
	case task != "":
		ev.EntityType, ev.EntityID = "task", c.Step+"/"+task
	case c.Iteration != nil:
		ev.EntityType, ev.EntityID = "iteration", c.Step+"#"+itoa(*c.Iteration)
	default:
		ev.EntityType, ev.EntityID = "step", c.Step
	}
	u.pending = append(u.pending, ev)
	return &u.pending[len(u.pending)-1]
}

// seal masks secrets in the pending events and hands them over (the
// pending list empties); their clocks were stamped by event.
func (u *unit) seal() []types.Event {
	if u.red != nil {
		for i := range u.pending {
			if u.pending[i].Payload != nil {
				if m, ok := u.red.Value(u.pending[i].Payload).(map[string]any); ok {
					u.pending[i].Payload = m
				}
			}
		}
	}
	evs := u.pending
	u.pending = nil
	return evs
}

// flush publishes the pending events as one batch (see seal).
func (u *unit) flush(ctx context.Context) error {
	if len(u.pending) == 0 {
		return nil
	}
	b := u.nextBatch(u.seal())
	if err := u.w.Bus.PublishBatch(ctx, b); err != nil {
		return err
	}
	u.lastFlush = u.w.now()
	return nil
}

// nextBatch is the unit's next batch of events evs. The batch id names
// this run of the unit (its holder): a re-run after a crash publishes its
// own batches — a batch with a former run's id would be dropped as a
// duplicate, losing the re-run's events. Events both runs recorded keep
// one id each and are read once.
func (u *unit) nextBatch(evs []types.Event) types.Batch {
	c := u.cmd
	b := types.Batch{
		ID:          types.DeriveID(c.ExecutionID, c.UnitKey(), itoa(c.TaskIndex), itoa(c.Attempt), itoa(c.Jumps), c.ChildID, u.holder, "batch", itoa(u.batch)),
		ExecutionID: c.ExecutionID, Source: Source, Events: evs, TraceParent: c.TraceParent,
	}
	u.batch++
	return b
}

// maybeFlush publishes the pending events of a long unit.
func (u *unit) maybeFlush(ctx context.Context) error {
	if len(u.pending) >= flushEvents || (len(u.pending) > 0 && u.w.now().Sub(u.lastFlush) >= flushEvery) {
		return u.flush(ctx)
	}
	return nil
}

// scope builds the template scope of a task in this unit.
func (u *unit) scope(extra map[string]any) template.Scope {
	c := u.cmd
	ctxv := make(map[string]any, len(u.st.Ctx)+len(u.cur.CtxPatch))
	for k, v := range u.st.Ctx {
		ctxv[k] = v
	}
	for k, v := range u.cur.CtxPatch {
		ctxv[k] = v
	}
	iter := map[string]any{}
	for k, v := range u.cur.Iter {
		iter[k] = v
	}
	if u.st.ParentIter != nil {
		iter["parent"] = u.st.ParentIter
	}
	// DSL v2 names: input (the step's token), step (the step scope), and
	// the pipeline's bare variables.
	ex := make(map[string]any, len(extra)+len(u.cur.Vars)+2)
	for k, v := range u.cur.Vars {
		ex[k] = v
	}
	for k, v := range extra {
		ex[k] = v
	}
	ex["input"] = c.Args
	ex["idempotency_key"] = u.idempotencyKey()
	if u.cur.StepVars != nil {
		ex["step"] = u.cur.StepVars
	} else {
		ex["step"] = map[string]any{}
	}
	p := template.ScopeParams{
		Workload: u.st.Workload, Ctx: ctxv, Iter: iter, Args: c.Args, ExecutionID: c.ExecutionID,
		Results: u.results, Keychain: u.kc, Extra: ex,
	}
	if c.Iteration != nil && u.step.Loop != nil {
		p.Iterator = u.step.Loop.Iterator
		p.Item = c.Item
		p.LoopIndex = c.Iteration
	}
	return template.NewScope(p)
}

// taskScope is the scope a task's templates render in.
func (u *unit) taskScope() template.Scope {
	extra := taskResultNames(u.cur.TaskResults) // hook (h-conf): finished tasks by label (taskio.go)
	extra["_task"], extra["_attempt"] = u.cur.TaskResults, u.cur.Attempt
	if u.cur.HasPrev {
		extra["_prev"] = u.cur.Prev
		// The pipeline's `result`: the latest finished task's result (NoETL's
		// author-facing name of a task's output.data; in a policy rule it is
		// the task's own, LegacyNames). A pipeline variable, task label or
		// step named result keeps its value (DSL notes "result in a
		// pipeline").
		_, isVar := u.cur.Vars["result"]
		_, isLabel := extra["result"]
		_, isStep := u.results["result"]
		if !isVar && !isLabel && !isStep {
			extra["result"] = u.cur.Prev
		}
	}
	return u.scope(extra)
}

// run executes the unit's pipeline from its cursor and ends the unit.
func (u *unit) run(ctx context.Context) error {
	c := &u.cmd
	// The unit reads only its own execution's results and its parent's
	// and children's (results by ownership), and only the credentials
	// granted to its playbook (credentials by grant), whatever its
	// templates compute.
	ctx = results.WithReader(ctx, u.w.reader(u.st))
	ctx = credentials.WithGrantee(ctx, launch.Grantee(u.st))
	if err := u.restoreSpill(ctx); err != nil { // hook (h-conf): large continuations (handoff.go)
		return err
	}
	u.cur = engine.CursorOf(*c)
	u.lastFlush = u.w.now()
	// A refusal (a credential computed at run time that is not granted, a
	// step result that is a reference of another execution) fails the
	// step at once, with kind forbidden. A stored result the step reads
	// that is gone (kind result_lost), no longer matches its sha256 or
	// does not decode (kind artifact), or is too large to load whole
	// (kind result_too_large) fails it too (resultFailure); none is
	// retried.
	var refused map[string]any
	if err := u.keychain(ctx); err != nil {
		if !errors.Is(err, credentials.ErrNotGranted) {
			return err
		}
		u.setRedactor(nil)
		refused = map[string]any{"kind": string(types.ErrKindForbidden), "message": err.Error()}
	}
	ctx = redact.WithRedactor(ctx, u.red) // units it creates are masked (shared/tasks)
	if refused == nil && u.itemFailure != nil {
		u.log.Warn("the iteration's item is a row of a stored table that cannot be read; failing it", "error_kind", u.itemFailure["kind"], "error", u.itemFailure["message"])
		return u.finish(ctx, false, nil, u.itemFailure)
	}
	if refused == nil {
		if err := u.resolveResults(ctx); err != nil { // hook (README "Architecture"): lazy results (lazy.go)
			em, ok := resultFailure(err)
			if !ok {
				return err
			}
			if em["kind"] == string(types.ErrKindForbidden) {
				refused = em // counted and masked with the other refusals below
			} else {
				u.log.Warn("the step reads a stored result it cannot load; failing it", "error_kind", em["kind"], "error", em["message"])
				return u.finish(ctx, false, nil, em)
			}
		}
	}
	if refused == nil {
		if done, err := u.cursorClaim(ctx); err != nil || done { // hook (h-conf): cursor loops (cursor.go)
			return err
		}
	}
	tasks := u.step.Tasks
	u.observeClaimed() // telemetry: task_claimed
	if c.TaskIndex == 0 && c.Attempt <= 1 && c.Jumps == 0 && c.ChildID == "" {
		if c.Iteration != nil {
			e := u.event(types.EvLoopIterationStarted, "")
			e.Payload = history.Encode(history.IterationStarted{Index: *c.Iteration, Total: c.LoopTotal})
		} else {
			u.event(types.EvStepStarted, "")
		}
	}
	if refused != nil {
		refused["message"] = u.red.String(refused["message"].(string))
		u.log.Warn("unit refused", "error", refused["message"])
		return u.finish(ctx, false, nil, refused)
	}
	if len(tasks) == 0 {
		return u.finish(ctx, true, nil, nil)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop, err := u.checkpoint(ctx); err != nil || stop {
			return err
		}
		task := tasks[u.cur.TaskIndex]
		out, d, suspended, err := u.attempt(ctx, task)
		if ie := (*Interrupted)(nil); errors.As(err, &ie) {
			// A stop interrupted the attempt (interrupt.go): the unit
			// stops as at a task boundary.
			return u.stop(ctx, ie.Reason)
		}
		if err != nil {
			return err
		}
		if suspended {
			// Waiting for a child execution; its end resumes the unit here.
			if err := u.flush(ctx); err != nil {
				return err
			}
			if err := u.register(ctx); err != nil {
				return err
			}
			return u.release(ctx)
		}
		pe := u.event(types.EvPolicyTaskEvaluated, task.Name, itoa(u.cur.Attempt))
		pe.Attempt = u.cur.Attempt
		// The decision's payload is encoded once the move is known
		// (exhausted, a delayed retry's delay, the next attempt).
		pol := history.PolicyTaskEvaluated{Rule: d.Rule, Do: d.Action, OutcomeStatus: out.Status}
		pe.Payload = history.Encode(pol)
		// pe points into the pending events: the decision's payload is
		// completed (exhausted, a delayed retry's delay, the next attempt)
		// before the next event is added.
		// set_iter / set_ctx apply on every decision that names them.
		sc := u.scope(engine.PolicyExtra(out, u.cur, engine.HasLegacyRules(task)))
		if err := engine.ApplyPatches(&u.cur, d.Then.Set, sc); err != nil {
			em := map[string]any{"kind": string(types.ErrKindTemplate), "message": err.Error(), "task": task.Name}
			u.taskEnd(types.EvTaskFailed, task, out, em)
			return u.finish(ctx, false, nil, em)
		}
		attempt := u.cur.Attempt
		mv := engine.Advance(tasks, u.cur, d, out, u.idempotencyKey())
		u.observePolicy(task, d, mv, out, attempt) // telemetry: task_retry
		u.cur = mv.Cursor
		pol.Exhausted = mv.Exhausted
		switch {
		case mv.Kind == engine.MoveHandOff:
			delay, next := mv.Delay.Seconds(), u.cur.Attempt
			pol.DelayS, pol.NextAttempt = &delay, &next
		case mv.Kind != engine.MoveFinish && u.cur.Attempt > attempt && u.cur.TaskIndex == indexOf(tasks, task):
			next := u.cur.Attempt
			pol.NextAttempt = &next
		}
		pe.Payload = history.Encode(pol)
		if mv.TaskEnd != "" {
			u.progressed = true
			var em map[string]any
			if mv.TaskEnd == types.EvTaskFailed {
				em = mv.Error
				if em == nil {
					em = engine.ErrorMap(out, task.Name)
				}
			}
			u.taskEndAt(mv.TaskEnd, task, out, em, attempt)
		}
		why := taskDLQReason(d, mv)
		if mv.Kind != engine.MoveFinish || why != "" {
			// Only the unit's end carries the attempt's outcome without
			// its record (pending.go): a retry, the next task, a hand-off
			// or a filing writes it first.
			if err := u.settle(false); err != nil {
				return err
			}
		}
		if why != "" {
			// An exhausted or fatal task failure goes to the DLQ; held, its
			// unit waits there for an operator (taskdlq.go).
			held, err := u.fileTaskFailure(ctx, task, out, why, attempt)
			if err != nil || held {
				return err // the park took the unit's lease over (control.FileUnit)
			}
		}
		switch mv.Kind {
		case engine.MoveFinish:
			result := mv.Result
			if mv.OK && u.cmd.Iteration == nil {
				// A step's result keeps its tasks' results by label
				// beside the last one (an iteration's does not).
				result = engine.PipelineResult(tasks, result, u.cur.TaskResults)
			}
			return u.finish(ctx, mv.OK, result, mv.Error)
		case engine.MoveHandOff:
			return u.handOff(ctx, mv.Delay, "retry of "+task.Name)
		}
		if err := u.maybeFlush(ctx); err != nil {
			return err
		}
	}
}

func indexOf(tasks []*dsl.Task, t *dsl.Task) int {
	for i, x := range tasks {
		if x == t {
			return i
		}
	}
	return -1
}

// handOff continues the unit in a new Cloud Task after delay (a delayed
// retry, or, with delay 0, a long unit before the dispatch deadline): the
// cursor travels in the command.
func (u *unit) handOff(ctx context.Context, delay time.Duration, why string) error {
	next := u.cmd
	u.cur.Into(&next)
	next.ChildID = ""
	next.Reclaim, next.Replay = 0, 0
	if delay <= 0 {
		next.HandOff++
		e := u.event(types.EvUnitHandedOff, "", "handoff", itoa(next.HandOff))
		e.Payload = history.Encode(history.UnitHandedOff{Reason: why, TaskIndex: next.TaskIndex, Jumps: next.Jumps, RanS: u.w.now().Sub(u.started).Seconds()})
	}
	if err := u.flush(ctx); err != nil {
		return err
	}
	next.NotBefore = u.w.now().Add(delay)
	next.Clock = u.clock
	next.ID = next.TaskName()
	if err := u.register(ctx); err != nil {
		return err
	}
	if err := u.spillCursor(ctx, &next); err != nil { // hook (h-conf): large continuations (handoff.go)
		return err
	}
	if err := u.w.Control.Enqueue(ctx, next, u.w.now()); err != nil {
		return err
	}
	u.log.Info("unit handed off", "reason", why, "delay_s", delay.Seconds(), "task_index", next.TaskIndex, "attempt", next.Attempt, "jumps", next.Jumps)
	return u.release(ctx)
}

// register gives a loop iteration that ran without a lease a running
// record before it continues in another unit (a hand-off, a child wait):
// its events are then in the log before its end, and a stop that finds no
// unit running it must still find it to close its chain (Control.Stop's
// sweep). The record's lease is expired at once: nobody holds it, the next
// unit ends it.
func (u *unit) register(ctx context.Context) error {
	if u.cmd.Iteration == nil || u.leased {
		return nil
	}
	c := u.cmd
	_, err := u.w.Store.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: c.ExecutionID, LoopKey: engine.LoopKey(c.Step, c.StepRun),
		Index: *c.Iteration, Holder: u.holder, Now: u.w.now(), Unpark: c.ReplayOf})
	if errors.Is(err, store.ErrLeaseHeld) || errors.Is(err, store.ErrParked) {
		return nil // held or parked: it has its record
	}
	return err
}

// CancelCheckEvery bounds how old the execution state a running unit
// looks at between tasks may be (a cancellation, a halting failure or a
// timeout stops it at its next task boundary, NoETL observability spec §8.5): the state is
// read through the instance's cache, which units of one execution share
// (IterationStateMaxAge), so a unit costs no read when its pipeline is
// shorter than this and at most one per this interval per instance
// otherwise. (It was 2 s, and a unit then started new tasks — inserts —
// up to 2 s after its execution's cancel; the soak flagged them.)
const CancelCheckEvery = IterationStateMaxAge

// checkpoint runs between tasks: a unit that has run past its budget hands
// the rest of its pipeline to a new unit (so no unit outlives the Cloud
// Tasks dispatch deadline, and a 30-minute pagination finishes), and a
// unit whose execution or step run ended stops.
func (u *unit) checkpoint(ctx context.Context) (stop bool, err error) {
	now := u.w.now()
	if u.progressed && u.handOffAfter > 0 && now.Sub(u.started) >= u.handOffAfter {
		return true, u.handOff(ctx, 0, "unit budget reached")
	}
	if now.Sub(u.started) < CancelCheckEvery {
		return false, nil // the state was read when the unit began
	}
	rec := u.w.states.get(u.cmd.ExecutionID, now, 0)
	if rec == nil {
		r, err := u.w.Store.ExecutionGet(ctx, u.cmd.ExecutionID)
		if err != nil {
			return false, nil // not decisive: go on, the next check retries
		}
		u.w.states.put(u.cmd.ExecutionID, r, now)
		rec = r
	}
	reason := u.stopReason(rec.State)
	if reason == "" {
		return false, nil
	}
	u.log.Info("execution or step run ended while the unit ran: stopping at this task boundary", "execution_status", string(rec.State.Status), "reason", reason)
	return true, u.stop(ctx, reason)
}

// stop ends a unit whose execution or step run ended while it ran
// (reason says which): an iteration is canceled (cancelIteration); a
// step run's unit publishes its events and gives up its lease (the
// run's end is already in the log).
func (u *unit) stop(ctx context.Context, reason string) error {
	if u.cmd.Iteration != nil {
		return u.cancelIteration(ctx, reason)
	}
	if err := u.flush(ctx); err != nil {
		return err
	}
	return u.release(ctx)
}

// cancelIteration ends an iteration cut short at a task boundary (issue
// 14 item 3): its record is canceled (as this unit's holder, or unheld)
// and its loop.iteration.canceled published after the unit's other
// events, in their batch. A record another delivery took over, or that a
// stop's sweep canceled first, is left to it.
func (u *unit) cancelIteration(ctx context.Context, reason string) error {
	evs := u.seal()
	holder := ""
	if u.leased {
		holder = u.holder
	}
	ev, err := u.w.Control.CancelIteration(ctx, u.cmd, holder, reason, u.clock+1)
	if err != nil {
		return err
	}
	if ev != nil {
		ev.Source = Source
		evs = append(evs, *ev)
		u.clock = max(u.clock, ev.Clock)
	}
	if len(evs) > 0 {
		if err := u.w.Bus.PublishBatch(ctx, u.nextBatch(evs)); err != nil {
			return err
		}
	}
	return u.release(ctx)
}

func (u *unit) taskEnd(typ types.EventType, task *dsl.Task, out types.Outcome, em map[string]any) {
	u.taskEndAt(typ, task, out, em, u.cur.Attempt)
}

func (u *unit) taskEndAt(typ types.EventType, task *dsl.Task, out types.Outcome, em map[string]any, attempt int) {
	e := u.event(typ, task.Name, itoa(attempt))
	e.Attempt, e.DurationMS = attempt, out.Meta.DurationMS
	if typ == types.EvTaskFailed {
		e.Status = types.StatusError
		e.Payload = history.Encode(history.TaskFailed{Error: em})
	} else {
		e.Status = out.Status
	}
}

// finish ends the unit: the boundary event (step.done / step.failed, or
// loop.iteration.done / loop.iteration.failed) is published with the
// unit's other events, then the end is carried out — the step's transition
// applied (control.Apply) or the iteration recorded and the loop advanced
// (control.IterationEnded).
func (u *unit) finish(ctx context.Context, ok bool, result any, errv map[string]any) error {
	c := u.cmd
	// What the unit hands on (state, the iteration record, the results
	// tier) holds no secret value (redact.go).
	result, errv = u.maskData(result), u.maskErrMap(errv)
	if ok && u.w.Results != nil {
		// Hook (h-conf): output.store / output.select (output.go).
		r, err := u.offloadResult(ctx, types.ResultCoords{ExecutionID: c.ExecutionID, Step: c.Step, Frame: c.StepRun, Row: iterOr0(c.Iteration), Attempt: 1}, result)
		if err != nil {
			return fmt.Errorf("worker: store result: %w", err)
		}
		if r != nil {
			result = r
			rs := u.event(types.EvResultStored, "")
			rs.Status = types.StatusOK
			rs.Payload = history.Encode(history.ResultStored{Reference: r})
		}
	}
	var typ types.EventType
	switch {
	case c.Iteration != nil && ok:
		typ = types.EvLoopIterationDone
	case c.Iteration != nil:
		typ = types.EvLoopIterationFailed
	case ok:
		typ = types.EvStepDone
	default:
		typ = types.EvStepFailed
	}
	e := u.event(typ, "")
	e.Status = map[bool]types.Status{true: types.StatusOK, false: types.StatusFailed}[ok]
	e.Attempt = u.cur.Attempt
	var p history.Payload
	switch typ {
	case types.EvLoopIterationDone:
		p = history.IterationDone{Result: result, Ctx: u.cur.CtxPatch, Step: u.cur.StepVars, Index: *c.Iteration}
	case types.EvLoopIterationFailed:
		p = history.IterationFailed{Error: errv, Index: *c.Iteration}
	case types.EvStepDone:
		p = history.StepDone{Result: result, Ctx: u.cur.CtxPatch, Step: u.cur.StepVars}
	default:
		p = history.StepFailed{Error: errv}
	}
	e.Payload = history.Encode(p)
	u.observeEnd(typ, ok, errv) // telemetry: task_ack
	if c.Iteration == nil {
		// The unit's last events travel in the transition's outbox and
		// batch: one commit, one message.
		raw := u.pending[len(u.pending)-1]
		evs := u.seal()
		boundary := u.stateBoundary(raw, evs[len(evs)-1])
		// One store call: the lease check and release commit with the
		// transition (control.CompleteStep).
		next, err := u.w.Control.CompleteStep(ctx, control.ApplyParams{ExecutionID: c.ExecutionID, Event: boundary,
			OutboxID: control.EndOutboxID(c.ExecutionID, c.Step, c.StepRun), Events: evs, Base: u.rec, ReplayOf: c.ReplayOf,
			SafetyNet: u.safetyNet(ctx), ContinueLease: u.continueLease(ctx)}, c.UnitKey(), u.endLease())
		// The attempt's record and the watchdog's arm, pending meanwhile:
		// moot once the end committed, carried out before a failed end
		// returns (pending.go). An
		// end without a lease may be deferred (committed with a later one):
		// a record is written then (side-effecting units are leased, so
		// none is expected).
		if err = errors.Join(err, u.settle(err == nil && u.leaseHolder() != "")); err != nil {
			return err
		}
		if ch := chainOf(ctx); ch != nil && next != nil {
			ch.hand(ctx, next, c.TaskName()) // run by this invocation next (continue.go)
		}
		u.observeDone(ctx, ok, true, errv) // telemetry: server.dispatch
		return nil
	}
	rec := engine.IterationRecord{Index: *c.Iteration, Status: types.StatusOK, Result: result, Clock: u.clock,
		Cursor: u.cursorFrame(),              // hook (h-conf): cursor loops (cursor.go)
		Ctx:    u.maskErrMap(u.cur.CtxPatch)} // merged into ctx when the loop ends (engine.LoopCtxPatch)
	if !ok {
		rec.Status, rec.Result, rec.Error, rec.Ctx = types.StatusError, nil, errv, nil
	}
	// One store call ends the iteration (control.CompleteIteration): its
	// events are published first, then its record and lane accounting
	// commit, then its follow-up (the lane's next iteration, the loop's
	// end) is carried out.
	b := u.nextBatch(u.seal())
	done, err := u.w.Control.CompleteIteration(ctx, withGroup(ctx, control.IterationEnd{Cmd: c, Record: rec, Holder: u.leaseHolder(), Batch: &b,
		Resolve: func(id string) store.DLQResolution {
			if id == c.ReplayOf {
				return store.DLQResolution{Status: store.DLQReplayed}
			}
			// Parked while this delivery (which ran before the park)
			// still ran it: the entry has nothing left to replay.
			return store.DLQResolution{Status: store.DLQDone, Note: "the iteration completed through a delivery that ran before it was parked"}
		},
		AfterCommit: func() error {
			return faults.InjectFor(faults.ExecuteAfterIterationEnd, c.ExecutionID, c.Step, u.st.Workload, c.Replay > 0 || c.ReplayOf != "")
		},
		Inline: u.inline(ctx)})) // batched fan-out: the batch's next iteration runs here, with the batch's deferred ends (batch.go)
	err = errors.Join(err, u.settle(err == nil && !done.Deferred)) // as a step's end (above)
	settleGroup(ctx, done, err, rec, func() { telemetry.M.LoopItemCompleted(ctx, u.st.Playbook, c.Step, ok) })
	handNext(ctx, done)
	if done.First || (err == nil && !done.Canceled) {
		u.observeDone(ctx, ok, done.First, errv) // telemetry: server.dispatch, loop items
	}
	return err
}

// endLease is the delivery's lease for its end's commit: its holder
// (leaseHolder) and, when known, its version.
func (u *unit) endLease() control.Lease {
	l := control.Lease{Holder: u.leaseHolder()}
	if v := u.leaseVersion.Load(); v != nil && l.Holder != "" {
		l.Version = *v
	}
	return l
}

// leaseHolder is the delivery's lease holder, "" when the unit runs
// without a lease.
func (u *unit) leaseHolder() string {
	if u.leased {
		return u.holder
	}
	return ""
}

func (u *unit) maskAny(v any) any {
	if u.red == nil {
		return v
	}
	return u.red.Value(v)
}

func iterOr0(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// iterView is the unit's iteration state as a child execution sees it in
// iter.parent: the set_iter keys, the iterator value, index, and its own
// parent (nil outside a loop iteration and without a parent).
func (u *unit) iterView() map[string]any {
	c := u.cmd
	if c.Iteration == nil && u.st.ParentIter == nil && len(u.cur.Iter) == 0 {
		return nil
	}
	m := map[string]any{}
	for k, v := range u.cur.Iter {
		m[k] = v
	}
	if c.Iteration != nil && u.step.Loop != nil {
		m[u.step.Loop.Iterator] = c.Item
		m["index"] = *c.Iteration
	}
	if u.st.ParentIter != nil {
		m["parent"] = u.st.ParentIter
	}
	return m
}
