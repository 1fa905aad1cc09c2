// Package worker runs one unit of work (a step run, or one loop iteration
// of it) for the execute function: it checks the unit is still wanted,
// takes the unit's lease when the unit has side effects, runs the step's
// task pipeline from the command's cursor with the engine's policy
// decisions (engine.DecideTask / engine.Advance), publishes the unit's
// events as one batch, and ends the unit through the control plane
// (shared/control): the step's boundary transition is applied and the next
// unit created right here, with no queue hop in between. A retry with a
// delay is handed off as a new Cloud Task with a schedule_time, never a
// sleep.
package worker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/bus"
	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/faults"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// Source is the event source of worker events.
const Source = "execute"

// ErrRetryLater tells the caller to answer with a retryable status so Cloud
// Tasks redelivers the unit later (the lease is held by another delivery,
// or the execution state is older than the command). Its code is
// FailedPrecondition.
var ErrRetryLater = &errs.Error{Code: errs.FailedPrecondition, Msg: "worker: retry later"}

// Worker executes units of work.
type Worker struct {
	Control *control.Control
	Store   store.Store
	Bus     bus.Publisher
	Tools   tools.Registry
	// Results is the results tier: large results are offloaded, and
	// references found in state are resolved for templates (nil: results
	// stay inline and references are passed unresolved).
	Results results.Offloader
	// Catalog resolves `kind: playbook` task paths (nil: such tasks fail).
	Catalog *catalog.Catalog
	// Credentials resolves the playbook's keychain (nil: keychain empty).
	Credentials credentials.Store
	Log         *slog.Logger
	// LeaseTTL is the lease of a side-effecting unit (default 30s); a
	// heartbeat renews it every HeartbeatInterval (default a third of it)
	// while the unit runs.
	LeaseTTL          time.Duration
	HeartbeatInterval time.Duration
	// HandOffAfter is how long a unit runs before it hands the rest of
	// its pipeline to a new unit (default 80% of the dispatch deadline,
	// 8 minutes); a playbook may lower it with executor.spec.handoff_s.
	HandOffAfter time.Duration
	// ToolTimeout is a task's timeout when it sets none (NoETL observability spec §8.12
	// timeouts.tool_default_ms; 0: the tool's own default).
	ToolTimeout time.Duration
	// LoopItemTimeout is a loop iteration's budget when its loop sets no
	// loop.spec.item_timeout_s (NoETL observability spec §8.12 timeouts.loop_item_ms; 0:
	// none).
	LoopItemTimeout time.Duration
	// SinkTimeout is a sink's timeout (a side-effecting storage task,
	// engine.IsSink) when it sets none (NoETL observability spec §8.12
	// timeouts.sink_default_ms, NOETL_TIMEOUTS_SINK_DEFAULT_MS; 0:
	// ToolTimeout).
	SinkTimeout time.Duration
	// PGDSN is the PostgreSQL connection of postgres tasks that name none
	// and whose workload has no pg_dsn (NOETL_PG_DSN; "" = none).
	PGDSN string
	// FileTaskFailures files exhausted and fatal task failures in the DLQ
	// (NOETL_DLQ_ENABLED; see taskdlq.go).
	FileTaskFailures bool
	// HoldTaskFailures parks the unit of a filed task failure until its
	// entry is replayed or discarded, instead of failing the step at once
	// (NOETL_DLQ_HOLD; a playbook's executor.spec.dlq_hold wins).
	HoldTaskFailures bool
	// BarrierKey derives the MAC key of a side-effect barrier
	// (tools.Request.BarrierMAC; sign.Signer.BarrierKey). Nil: a key
	// random to this Worker (drawn on first use), so a record is adopted
	// only by the Worker that wrote it (tests; the functions always set
	// it).
	BarrierKey func(barrier string) []byte
	// InterruptAfter is how long a task attempt runs before it watches
	// its execution, so that a stop (a cancellation, a deadline, the end
	// of its step run) interrupts it (interrupt.go); 0 means
	// DefaultInterruptAfter, < 0 never (the attempt then runs to its end
	// and the unit stops at its next task boundary).
	InterruptAfter time.Duration
	// ErrorMax is the size in bytes of a task's error message as the
	// engine keeps it (NOETL_TASK_ERROR_MAX_BYTES; ≤ 0:
	// types.DefaultErrorMax): a longer one is cut with a note, its full
	// text stored in the results tier (bound.go).
	ErrorMax int
	// ContinueUnits is how many next units one invocation may run after
	// its own (step continuation, continue.go; NOETL_CONTINUE_UNITS; 0:
	// none), and ContinueBudget the wall time after which it starts no
	// more (NOETL_CONTINUE_BUDGET_S; below the dispatch deadline).
	ContinueUnits  int
	ContinueBudget time.Duration
	// ContinueDefer is how many ends of units run without a lease one
	// commit may carry inside a chain (deferred step ends,
	// control.Deferral; NOETL_CONTINUE_DEFER; 0: each end commits).
	ContinueDefer int
	Now           func() time.Time

	pbs    sync.Map // sha256(source) → *dsl.Playbook
	states stateCache
	seen   deliveries
	// interrupts are the instance's execution watches (interrupt.go).
	interrupts interrupts
	// ownKey is the barrier key source without BarrierKey (ownBarrierKey),
	// guarded by keyMu.
	ownKey *sign.Signer
	keyMu  sync.Mutex
}

// IterationStateMaxAge bounds how old a cached execution document may be
// when a loop iteration starts. Iterations only read the state (workload,
// ctx, results, and whether the step run still runs); they never write
// it, so an instance running hundreds of iterations per second reads the
// execution document a few times per second instead of once per
// iteration. A stop (fail_fast, cancellation, timeout) therefore reaches
// new iterations within this bound; their ends are still checked against
// the current state when the loop ends.
const IterationStateMaxAge = 250 * time.Millisecond

// stateCache holds each execution's last read for iteration units.
type stateCache struct {
	mu sync.Mutex
	m  map[string]cachedState
}

type cachedState struct {
	rec *store.Execution
	at  time.Time
}

func (c *stateCache) get(id string, now time.Time, minVersion int64) *store.Execution {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || now.Sub(e.at) > IterationStateMaxAge || e.rec.State.Version < minVersion {
		return nil
	}
	return e.rec
}

func (c *stateCache) put(id string, rec *store.Execution, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedState{}
	}
	if len(c.m) > 1024 {
		for k, e := range c.m {
			if now.Sub(e.at) > IterationStateMaxAge {
				delete(c.m, k)
			}
		}
	}
	c.m[id] = cachedState{rec: rec, at: now}
}

// Delivery describes one delivery of a unit (the Cloud Tasks headers).
type Delivery struct {
	// TaskName is the Cloud Task's short name.
	TaskName string
	// RetryCount is X-CloudTasks-TaskRetryCount (0 on the first attempt).
	RetryCount int
	// Holder identifies this delivery for leases; empty means a new random
	// one.
	Holder string
	// Leased reports that Holder's lease of the unit was taken already,
	// in the commit that released it (step continuation: continue.go):
	// the unit runs under it without taking it again.
	Leased bool
	// MaxAttempts is the queue's max attempts (0: unknown): the last
	// attempt's failure files the unit in the DLQ instead of failing again.
	MaxAttempts int
	// MaxBackoff is the queue's largest backoff between two attempts (0:
	// unknown, then no guard is armed): a failed delivery arms a guard
	// that files the unit when no later attempt reached execute (guard).
	MaxBackoff time.Duration
	// inline marks an iteration run inline in a batch (batch.go).
	inline bool
	// base is the execution as the commit that released a continued unit
	// wrote it (control.Continuation.Base): the unit starts from it
	// instead of reading the document again, and checkpoints on it.
	base *store.Execution
	// leaseVersion is the version of the lease taken for it in that
	// commit (control.Continuation.LeaseVersion; "" unknown).
	leaseVersion string
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Worker) heartbeat() time.Duration {
	if w.HeartbeatInterval > 0 && w.HeartbeatInterval < w.ttl() {
		return w.HeartbeatInterval
	}
	return w.ttl() / 3
}

// handOffAfter is the unit budget before a hand-off: the playbook's
// executor.spec.handoff_s, else HandOffAfter, else 8 minutes.
func (w *Worker) handOffAfter(pb *dsl.Playbook) time.Duration {
	if spec, ok := pb.Executor["spec"].(map[string]any); ok {
		switch v := spec["handoff_s"].(type) {
		case int64:
			return time.Duration(v) * time.Second
		case int:
			return time.Duration(v) * time.Second
		case float64:
			return time.Duration(v * float64(time.Second))
		}
	}
	if w.HandOffAfter > 0 {
		return w.HandOffAfter
	}
	return 8 * time.Minute
}

func (w *Worker) ttl() time.Duration {
	if w.LeaseTTL > 0 {
		return w.LeaseTTL
	}
	return 30 * time.Second
}

func (w *Worker) playbook(src string) (*dsl.Playbook, error) {
	key := sha256.Sum256([]byte(src))
	if v, ok := w.pbs.Load(key); ok {
		return v.(*dsl.Playbook), nil
	}
	pb, err := dsl.Load([]byte(src), "execution")
	if err != nil {
		return nil, err
	}
	w.pbs.Store(key, pb)
	return pb, nil
}

func newHolder() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run executes cmd. It returns nil when the unit is finished, handed off
// or not wanted any more (duplicates, units of ended step runs or finished
// executions are dropped, after replaying any outbox left by an
// interrupted end of the same step run); ErrRetryLater
// (FailedPrecondition) when it must be redelivered later; another error
// for infrastructure failures (redelivered too).
func (w *Worker) Run(ctx context.Context, cmd types.Command, d Delivery) error {
	return w.runBatched(ctx, cmd, d) // batched fan-out (batch.go), step continuation (continue.go)
}

// runOnce is Run for one unit.
func (w *Worker) runOnce(ctx context.Context, cmd types.Command, d Delivery) error {
	name := cmd.TaskName()
	if ok, dup := w.seen.begin(name, w.now()); !ok {
		if dup == "inflight" {
			w.Log.Info("duplicate delivery of a unit in flight here, retry later", "execution_id", cmd.ExecutionID, "step", cmd.Step, "task", name)
			return ErrRetryLater
		}
		w.Log.Info("duplicate delivery of a unit that ended here, dropped", "execution_id", cmd.ExecutionID, "step", cmd.Step, "task", name)
		return nil
	}
	if d.Holder == "" {
		d.Holder = newHolder()
	}
	if d.Last() && cmd.Kind == types.CmdRunStep {
		// Nothing retries this delivery: if it dies — before it files a
		// failing unit, or after it ended the unit but before what follows
		// (the loop's next step, the transition's outbox) — its guard
		// carries that out (guardCheck).
		if err := w.guard(ctx, cmd, w.now().Add(w.ttl()+WatchdogGrace)); err != nil {
			return err
		}
	}
	err := w.run(ctx, cmd, d)
	switch {
	case err != nil && !d.Last() && cmd.Kind == types.CmdRunStep && !errs.Is(err, errs.FailedPrecondition):
		// Cloud Tasks retries it; if none of its later attempts reaches
		// execute (an instance down on each), the guard files it.
		if gerr := w.guardAfterFailure(ctx, cmd, d); gerr != nil {
			w.Log.Warn("arming the guard of a failed delivery failed; its retries still run", "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", gerr.Error())
		}
	case err == nil || !d.Last():
	case cmd.Kind == types.CmdRunStep && errs.Is(err, errs.FailedPrecondition):
		// Leased by another delivery on our last attempt: that holder
		// (or its watchdog, armed before its lease) finishes the unit.
		w.Log.Info("last attempt found the unit leased elsewhere; leaving it to the holder", "execution_id", cmd.ExecutionID, "step", cmd.Step)
		err = nil
	case cmd.Kind == types.CmdRunStep:
		// The unit is filed only if it is still wanted and nobody else
		// holds it (control.FileUnit: the filing and its park are one
		// commit, which its completion sees whichever comes last).
		if derr := w.deadLetter(ctx, cmd, d.Holder, d.RetryCount+1, err); derr != nil {
			err = derr
		} else {
			err = nil
		}
	case cmd.Kind == types.CmdLeaseCheck:
		// A watchdog is the only thing that finishes a dead holder's unit:
		// its last attempt hands over to the next watchdog instead of
		// ending the chain.
		if aerr := w.rearm(ctx, cmd); aerr != nil {
			w.Log.Error("a watchdog's last attempt failed and its successor could not be armed", "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", aerr.Error())
		} else {
			w.Log.Warn("a watchdog's last attempt failed; the next watchdog takes over", "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", err.Error())
			err = nil
		}
	}
	// A unit whose deferred end a commit dropped runs again
	// (control.Dropped): it has not ended.
	w.seen.end(name, err == nil && !control.Dropped(ctx), w.now())
	return err
}

func (w *Worker) run(ctx context.Context, cmd types.Command, d Delivery) error {
	log := unitLogger(ctx, w.Log, cmd) // NoETL observability spec §8.2 fields and the trace (observe.go)
	var rec *store.Execution
	if cmd.Iteration != nil {
		// Read-only use: the cached record is shared by concurrent units.
		rec = w.states.get(cmd.ExecutionID, w.now(), cmd.StateVersion)
	} else if d.base != nil && d.base.State != nil && d.base.State.Version >= cmd.StateVersion {
		// A continued unit: the state its predecessor's commit just wrote
		// (a later write, say a cancel, is seen at the unit's first task
		// boundary, and its own checkpoint then re-reads).
		rec = d.base
	}
	if rec == nil {
		var err error
		rec, err = w.Store.ExecutionGet(ctx, cmd.ExecutionID)
		if errors.Is(err, store.ErrNotFound) {
			log.Warn("dropping unit of unknown execution")
			return nil
		}
		if err != nil {
			return err
		}
		if cmd.Iteration != nil {
			w.states.put(cmd.ExecutionID, rec, w.now())
		}
	}
	if cmd.Kind == types.CmdRepairResult {
		// A lost result of the execution, ended or not (repair.go).
		return w.repairResult(ctx, cmd, rec, log)
	}
	st := rec.State
	end := control.EndOutboxID(cmd.ExecutionID, cmd.Step, cmd.StepRun)
	unitCmd := cmd // the unit the command runs or watches
	if cmd.Kind == types.CmdLeaseCheck && cmd.Unit != nil {
		unitCmd = *cmd.Unit
	}
	if st.Terminal() {
		log.Info("dropping unit of finished execution", "status", st.Status)
		if err := w.Control.Replay(ctx, cmd.ExecutionID, end); err != nil {
			return err
		}
		return w.cutShort(ctx, cmd, unitCmd, st, fmt.Sprintf("the execution ended (%s)", st.Status))
	}
	if st.Version < cmd.StateVersion {
		log.Info("state older than command, retry later", "state_version", st.Version, "command_version", cmd.StateVersion)
		return ErrRetryLater
	}
	if cmd.Kind == types.CmdExecutionTimeout {
		log.Warn("execution ran past its deadline: stopping it", "started_at", st.StartedAt)
		ev := types.NewEvent(types.EvExecutionTimedOut, cmd.ExecutionID, Source, w.now())
		ev.EntityType, ev.EntityID = "playbook", st.Playbook
		ev.Status = types.StatusFailed
		ev.Payload = history.Encode(history.ExecutionTimedOut{Message: fmt.Sprintf("execution %s ran past its deadline (started %s)", cmd.ExecutionID, st.StartedAt), Kind: string(types.ErrKindTimeout)})
		_, err := w.Control.Stop(ctx, cmd.ExecutionID, ev)
		return err
	}
	ss := st.Steps[cmd.Step]
	if ss == nil || ss.Run != cmd.StepRun || (ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled) {
		log.Info("dropping unit of a step run that already ended")
		if err := w.Control.Replay(ctx, cmd.ExecutionID, end); err != nil {
			return err
		}
		return w.cutShort(ctx, cmd, unitCmd, st, fmt.Sprintf("its step run %s#%d ended", cmd.Step, cmd.StepRun))
	}
	if pk, ok := st.Parked[unitCmd.UnitKey()]; ok && unitCmd.Iteration == nil && unitCmd.ReplayOf != pk.DLQID &&
		(cmd.Kind == types.CmdRunStep || cmd.Kind == types.CmdLeaseCheck) {
		// Filed in the DLQ: only its entry's replay runs it again.
		log.Info("dropping a delivery of a unit parked in the DLQ", "dlq_id", pk.DLQID)
		return nil
	}
	pb, err := w.playbook(rec.Source)
	if err != nil {
		return errs.Wrap(errs.InvalidArgument, err, "worker: the execution's playbook no longer loads")
	}
	step := pb.Step(cmd.Step)
	if step == nil {
		return errs.New(errs.InvalidArgument, "worker: command names unknown step %q", cmd.Step)
	}
	switch cmd.Kind {
	case types.CmdStepTimeout:
		return w.stepTimeout(ctx, step, cmd, log)
	case types.CmdLeaseCheck:
		return w.leaseCheck(ctx, cmd, d, log)
	}
	if err := faults.InjectFor(faults.ExecuteStart, cmd.ExecutionID, cmd.Step, st.Workload, cmd.Replay > 0 || cmd.ReplayOf != ""); err != nil {
		return err
	}
	if cmd.Iteration != nil && cmd.Started.IsZero() {
		cmd.Started = w.now()
	}
	u := &unit{w: w, cmd: cmd, dispatched: cmd, rec: rec, st: st, pb: pb, step: step, log: log, holder: d.Holder, clock: cmd.Clock,
		recovering: d.recovering(cmd), started: w.now(), handOffAfter: w.handOffAfter(pb)}
	if u.holder == "" {
		u.holder = newHolder()
	}
	// A side-effecting unit runs under a lease; so does any unit on a
	// retried delivery, so that a watchdog covers it if it dies again.
	u.leased = engine.StepSideEffecting(pb, step) || u.recovering || d.Leased
	u.held = d.Leased && d.Holder != "" && cmd.Iteration == nil
	if u.held && d.leaseVersion != "" {
		u.leaseVersion.Store(&d.leaseVersion)
	}
	// An iteration run inline in a batch may have been started by a
	// former delivery of its batch (batch.go): its side effects look for
	// durable results first.
	u.recovering = u.recovering || (d.inline && u.leased)
	if cmd.Iteration != nil && cmd.ItemRef {
		// The row is read for this execution (results by ownership).
		item, err := w.Control.Item(results.WithReader(ctx, w.reader(st)), cmd.ExecutionID, engine.LoopKey(cmd.Step, cmd.StepRun), *cmd.Iteration)
		if em, lost := resultFailure(err); lost {
			u.itemFailure = em // the iteration fails once (unit.run)
		} else if err != nil {
			return err
		}
		u.cmd.Item = item
	}
	if u.leased {
		done, err := u.lease(ctx)
		if err != nil || done {
			return errors.Join(err, u.settle(err == nil))
		}
	}
	err = u.runLeased(ctx)
	// Nothing the unit left pending is left undone (pending.go); a failed
	// delivery's record is durable before its lease expires for the retry.
	err = errors.Join(err, u.settle(err == nil))
	if err != nil && u.leased {
		// Cloud Tasks retries a failed delivery: its lease expires now, so
		// the retry (another holder) takes the unit over at once instead
		// of waiting out the TTL; if no retry comes, the watchdog finds
		// the lease expired and reclaims the unit.
		u.expire(context.WithoutCancel(ctx))
	}
	return err
}

// expire ends this delivery's lease at once without giving it up (see
// run); a lease another holder took over is left alone. Best effort: the
// lease otherwise expires after its TTL.
func (u *unit) expire(ctx context.Context) {
	c, w := u.cmd, u.w
	var err error
	if c.Iteration != nil {
		key := engine.LoopKey(c.Step, c.StepRun)
		status, holder, _, gerr := w.Store.IterationGet(ctx, c.ExecutionID, key, *c.Iteration)
		if gerr != nil || status != types.StatusRunning || holder != u.holder {
			return
		}
		_, err = w.Store.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: c.ExecutionID, LoopKey: key, Index: *c.Iteration, Holder: u.holder, Now: w.now()})
	} else {
		err = w.Store.LeaseRenew(ctx, store.LeaseAcquireParams{ExecutionID: c.ExecutionID, Unit: c.UnitKey(), Holder: u.holder, Now: w.now()})
	}
	if err != nil && !errs.Is(err, errs.FailedPrecondition) {
		u.log.Warn("expiring the lease of a failed delivery failed; the retry waits for its TTL", "error", err.Error())
	}
}

// releaseLease drops holder's lease of cmd's unit (a lease another holder
// took over is left alone). Best effort: it is logged when it fails.
func (w *Worker) releaseLease(ctx context.Context, cmd types.Command, holder string) {
	var err error
	if cmd.Iteration != nil {
		err = w.Store.IterationRelease(ctx, cmd.ExecutionID, engine.LoopKey(cmd.Step, cmd.StepRun), *cmd.Iteration, holder)
	} else {
		err = w.Store.LeaseRelease(ctx, cmd.ExecutionID, cmd.UnitKey(), holder)
	}
	if err != nil {
		w.Log.Warn("releasing the lease of a dead-lettered unit failed; its watchdog may reclaim it", "execution_id", cmd.ExecutionID, "step", cmd.Step, "error", err.Error())
	}
}

// lease takes the unit's lease: the iteration record document for a loop
// iteration, units/{unit} otherwise. done reports an iteration that has
// already ended (its end is carried out again, idempotently).
//
// The watchdog is armed before the lease is taken (README "The soak"): a delivery
// that dies between the two leaves a watchdog that finds no lease of its
// holder and stops, never a lease without a watchdog — later deliveries
// would find it held and leave the unit to a holder that is gone, and
// nothing would ever finish it (the soak wedged executions that way).
// A continued unit (held) is the exception: its lease was taken in the
// commit that released it, so its watchdog is armed while it runs
// (pending.go); the invocation's Cloud Task, which replays that commit's
// outbox after a crash, is its safety net meanwhile.
func (u *unit) lease(ctx context.Context) (done bool, err error) {
	c, w := u.cmd, u.w
	now := w.now()
	if u.held {
		// Its lease was taken in the commit that released it: the
		// watchdog is armed while it runs (pending.go).
		actx := context.WithoutCancel(ctx) // it ends on its own; settle waits for it
		u.armBeside(func() error { return u.armWatchdog(actx, 0, now.Add(w.ttl()+WatchdogGrace)) })
	} else if err := u.armWatchdog(ctx, 0, now.Add(w.ttl()+WatchdogGrace)); err != nil {
		return false, err
	}
	if c.Iteration != nil {
		key := engine.LoopKey(c.Step, c.StepRun)
		// A batched loop's ends may be in group record documents
		// (control batch.go): an iteration found there has ended.
		plan, err := w.Control.Plan(ctx, c.ExecutionID, key)
		if err != nil {
			return false, err
		}
		rec, err := w.Store.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: c.ExecutionID,
			LoopKey: key, Index: *c.Iteration, Holder: u.holder, TTL: w.ttl(), Now: now, Unpark: c.ReplayOf, Grouped: plan.BatchOf() > 1})
		switch {
		case errors.Is(err, store.ErrLeaseHeld):
			u.log.Info("iteration leased by another delivery, retry later")
			return false, ErrRetryLater
		case errors.Is(err, store.ErrParked):
			u.log.Info("dropping a delivery of an iteration parked in the DLQ")
			return true, nil
		case err != nil:
			return false, err
		case rec != nil && rec.Status == types.StatusCanceled:
			u.log.Info("iteration canceled, dropped")
			return true, nil
		case rec != nil:
			u.log.Info("iteration already ended, duplicate delivery")
			return true, u.iterationEnded(ctx, *rec) // its batch goes on (batch.go)
		}
		u.observeLease(ctx, leaseAcquired)
		return false, faults.InjectFor(faults.ExecuteAfterLease, c.ExecutionID, c.Step, u.st.Workload, c.Replay > 0 || c.ReplayOf != "")
	}
	if !u.held { // taken in the commit that released it (continue.go)
		err = w.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: c.ExecutionID, Unit: c.UnitKey(), Holder: u.holder, TTL: w.ttl(), Now: now})
	}
	if errors.Is(err, store.ErrLeaseHeld) {
		u.log.Info("unit leased by another delivery, retry later")
		return false, ErrRetryLater
	}
	if err != nil {
		return false, err
	}
	u.observeLease(ctx, leaseAcquired)
	return false, faults.InjectFor(faults.ExecuteAfterLease, c.ExecutionID, c.Step, u.st.Workload, c.Replay > 0 || c.ReplayOf != "")
}

// runLeased runs the unit with its lease renewed by a heartbeat; a lost
// lease cancels the unit's context (it stops at its next task boundary).
func (u *unit) runLeased(ctx context.Context) error {
	if !u.leased {
		return u.run(ctx)
	}
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		u.heartbeat(hctx, stop, cancel)
	}()
	err := u.run(hctx)
	close(stop)
	wg.Wait()
	if cause := context.Cause(hctx); err != nil && errors.Is(cause, store.ErrLeaseLost) {
		return fmt.Errorf("worker: %w", cause)
	}
	return err
}

// heartbeat renews the lease every third of its TTL until stop closes.
func (u *unit) heartbeat(ctx context.Context, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	t := time.NewTicker(u.w.heartbeat())
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c := u.cmd
		var err error
		if c.Iteration != nil {
			_, err = u.w.Store.IterationBegin(ctx, store.IterationBeginParams{ExecutionID: c.ExecutionID,
				LoopKey: engine.LoopKey(c.Step, c.StepRun), Index: *c.Iteration, Holder: u.holder, TTL: u.w.ttl(), Now: u.w.now()})
			if errors.Is(err, store.ErrLeaseHeld) || errors.Is(err, store.ErrParked) {
				// Taken over, or parked in the DLQ: this delivery no
				// longer runs the iteration. (An ended record is this
				// unit's own end, between its record and its heartbeat's
				// stop: its follow-up must go on.)
				err = store.ErrLeaseLost
			}
		} else {
			// A renewal (even one that reports an error) may change the
			// lease's version: the end reads the lease then.
			u.leaseVersion.Store(nil)
			err = u.w.Store.LeaseRenew(ctx, store.LeaseAcquireParams{ExecutionID: c.ExecutionID, Unit: c.UnitKey(), Holder: u.holder, TTL: u.w.ttl(), Now: u.w.now()})
		}
		if errors.Is(err, store.ErrLeaseLost) {
			u.log.Warn("lease lost: another delivery took over the unit; stopping")
			u.observeLease(ctx, leaseLost)
			cancel(store.ErrLeaseLost)
			return
		}
		if err != nil {
			u.log.Warn("lease renewal failed; will retry", "error", err.Error())
		} else {
			u.observeLease(ctx, leaseRenewed)
		}
	}
}

// release gives up the unit's lease (after a hand-off or the end).
func (u *unit) release(ctx context.Context) error {
	if !u.leased {
		return nil
	}
	c := u.cmd
	if c.Iteration != nil {
		return u.w.Store.IterationRelease(ctx, c.ExecutionID, engine.LoopKey(c.Step, c.StepRun), *c.Iteration, u.holder)
	}
	return u.w.Store.LeaseRelease(ctx, c.ExecutionID, c.UnitKey(), u.holder)
}

// stepTimeout handles a step run's lifecycle timer: if the run is still
// going, the step fails with an error of kind timeout (the run's late
// boundary events are then ignored as stale).
func (w *Worker) stepTimeout(ctx context.Context, step *dsl.Step, cmd types.Command, log *slog.Logger) error {
	log.Warn("step exceeded its lifecycle timeout", "timeout_s", step.TimeoutS)
	ev := engine.TimeoutEvent(cmd.ExecutionID, cmd.Step, cmd.StepRun, step.TimeoutS, w.now())
	ev.Clock = types.HLC(cmd.Clock, w.now()) + 1
	_, err := w.Control.Apply(ctx, control.ApplyParams{ExecutionID: cmd.ExecutionID, Event: ev,
		OutboxID: control.EndOutboxID(cmd.ExecutionID, cmd.Step, cmd.StepRun), Events: []types.Event{ev}})
	return err
}

// ownBarrierKey returns the barrier key source of a Worker without
// BarrierKey: a random key drawn on first use and kept by the Worker.
func (w *Worker) ownBarrierKey() *sign.Signer {
	w.keyMu.Lock()
	defer w.keyMu.Unlock()
	if w.ownKey == nil {
		k := make([]byte, sign.MinKeyLen)
		_, _ = rand.Read(k)
		w.ownKey, _ = sign.New(k)
	}
	return w.ownKey
}

// barrierMAC returns the MAC key of barrier ("" → nil).
func (w *Worker) barrierMAC(barrier string) []byte {
	if barrier == "" {
		return nil
	}
	if w.BarrierKey != nil {
		return w.BarrierKey(barrier)
	}
	return w.ownBarrierKey().BarrierKey(barrier)
}

// reader is the results.Reader of an execution's units: its own
// results, its parent's, and its children's (a child's execution
// document names it as its parent).
func (w *Worker) reader(st *engine.State) results.Reader {
	id := st.ExecutionID
	return results.Reader{Execution: id, Parent: st.ParentID, IsChild: func(ctx context.Context, child string) (bool, error) {
		rec, err := w.Store.ExecutionGet(ctx, child)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return rec.State.ParentID == id, nil
	}}
}

// keychain resolves the playbook's keychain for the unit.
func (u *unit) keychain(ctx context.Context) error {
	if len(u.pb.Keychain) == 0 {
		u.setRedactor(nil) // secret-named workload values (redact.go)
		return nil
	}
	if u.w.Credentials == nil {
		return errs.New(errs.InvalidArgument, "worker: playbook declares a keychain but no credential store is configured")
	}
	kc, err := launch.Keychain(ctx, u.w.Credentials, u.pb, u.st)
	if err != nil {
		return fmt.Errorf("worker: keychain: %w", err)
	}
	u.kc = kc
	u.setRedactor(kc)
	return nil
}
