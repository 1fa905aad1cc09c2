// Package worker runs one unit of work (a step run, or one loop iteration
// of it) for the execute function: it takes the unit's lease, runs the
// step's task pipeline from the command's pointer, applies task policy
// (continue, retry, jump, break, fail — seed 003) and emits the attempt,
// policy and boundary events. A retry with a delay is handed back as a new
// command with NotBefore (a Cloud Task with schedule_time), never a sleep.
package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/store"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/tools"
	"github.com/noetl/gcpengine/shared/types"
)

// Source is the event source of worker events.
const Source = "execute"

// MaxJumps bounds the jumps one unit may take (runaway pagination guard).
const MaxJumps = 100000

// ErrRetryLater tells the caller to answer with a retryable status so Cloud
// Tasks redelivers the unit later (the lease is held elsewhere, or the
// execution state is older than the command).
var ErrRetryLater = errors.New("worker: retry later")

// Publisher is what the worker needs from the bus.
type Publisher interface {
	PublishEvents(ctx context.Context, evs ...types.Event) error
	PublishCommands(ctx context.Context, cmds ...types.Command) error
}

// ResultResolver loads result references found in state (results tier);
// nil means references are passed to templates unresolved.
type ResultResolver interface {
	Resolve(ctx context.Context, v any) (any, error)
	// Offload stores v in the results tier when it is over the inline
	// budget and returns the reference to carry instead (nil: keep inline).
	Offload(ctx context.Context, coords types.ResultCoords, v any) (any, error)
}

// Worker executes commands.
type Worker struct {
	Store   store.Store
	Bus     Publisher
	Tools   tools.Registry
	Results ResultResolver
	// Catalog resolves `kind: playbook` task paths (nil: such tasks fail).
	Catalog *catalog.Catalog
	// Credentials resolves the playbook's keychain (nil: keychain empty).
	Credentials credentials.Store
	Log         *slog.Logger
	LeaseTTL    time.Duration
	Now         func() time.Time

	pbs sync.Map // sha256(source) → *dsl.Playbook
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
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

// unit is the running state of one unit of work.
type unit struct {
	w        *Worker
	cmd      types.Command
	st       *engine.State
	pb       *dsl.Playbook
	step     *dsl.Step
	log      *slog.Logger
	results  map[string]any
	taskRes  map[string]any
	pending  []types.Event
	lastTask string
	// kc is the resolved keychain (never persisted, never in events).
	kc map[string]any
	// red masks the keychain's secrets in events and logs.
	red *redact.Redactor
}

// Run executes cmd. It returns nil when the unit is finished or handed off
// (including duplicates and units of finished executions, which are
// dropped), ErrRetryLater when it must be redelivered later, or another
// error for infrastructure failures (also redelivered).
func (w *Worker) Run(ctx context.Context, cmd types.Command) error {
	log := w.Log.With("execution_id", cmd.ExecutionID, "step", cmd.Step, "step_run", cmd.StepRun, "attempt", cmd.Attempt, "task_index", cmd.TaskIndex)
	if cmd.Iteration != nil {
		log = log.With("iteration", *cmd.Iteration)
	}
	rec, err := w.Store.ExecutionGet(ctx, cmd.ExecutionID)
	if errors.Is(err, store.ErrNotFound) {
		log.Warn("dropping unit of unknown execution")
		return nil
	}
	if err != nil {
		return err
	}
	st := rec.State
	if st.Terminal() {
		log.Info("dropping unit of finished execution", "status", st.Status)
		return nil
	}
	if st.Version < cmd.StateVersion {
		log.Info("state older than command, retry later", "state_version", st.Version, "command_version", cmd.StateVersion)
		return ErrRetryLater
	}
	if ss := st.Steps[cmd.Step]; ss == nil || ss.Run != cmd.StepRun {
		log.Info("dropping unit of a superseded step run")
		return nil
	} else if cmd.Kind != types.CmdStepTimeout && ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled {
		log.Info("dropping unit of a step run that already ended", "step_status", ss.Status)
		return nil
	}

	pb, err := w.playbook(rec.Source)
	if err != nil {
		return fmt.Errorf("worker: playbook of %s no longer loads: %w", cmd.ExecutionID, err)
	}
	step := pb.Step(cmd.Step)
	if step == nil {
		log.Error("command names unknown step")
		return nil
	}
	if cmd.Kind == types.CmdStepTimeout {
		return w.stepTimeout(ctx, st, step, cmd, log)
	}
	ttl := w.LeaseTTL
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	unitKey := cmd.UnitKey()
	holder := cmd.TaskName()
	ls, err := w.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{ExecutionID: cmd.ExecutionID, Unit: unitKey, Holder: holder, TTL: ttl, Now: w.now()})
	if errors.Is(err, store.ErrLeaseHeld) {
		log.Info("lease held by another attempt, retry later")
		return ErrRetryLater
	}
	if err != nil {
		return err
	}
	if ls == store.LeaseCompleted {
		log.Info("unit already completed, duplicate delivery dropped")
		return nil
	}
	results := st.Results
	if w.Results != nil {
		rv, err := w.Results.Resolve(ctx, st.Results)
		if err != nil {
			return fmt.Errorf("worker: resolve results: %w", err)
		}
		results, _ = rv.(map[string]any)
	}
	u := &unit{w: w, cmd: cmd, st: st, pb: pb, step: step, log: log, results: results, taskRes: map[string]any{}}
	for k, v := range cmd.TaskResults {
		u.taskRes[k] = v
	}
	if len(pb.Keychain) > 0 {
		if w.Credentials == nil {
			return fmt.Errorf("worker: playbook declares a keychain but no credential store is configured")
		}
		kc, err := launch.Keychain(ctx, w.Credentials, pb, st.Workload, cmd.ExecutionID)
		if err != nil {
			return fmt.Errorf("worker: keychain: %w", err)
		}
		u.kc, u.red = kc, launch.Redactor(kc)
	}
	handedOff, err := u.run(ctx)
	if err != nil {
		return err
	}
	if err := w.Store.LeaseRelease(ctx, cmd.ExecutionID, unitKey, holder, !handedOff); err != nil {
		return err
	}
	return nil
}

func (u *unit) event(typ, task string, idParts ...string) *types.Event {
	c := u.cmd
	parts := append([]string{c.UnitKey(), task, itoa(c.Jumps)}, idParts...)
	ev := types.NewEvent(typ, c.ExecutionID, Source, u.w.now(), parts...)
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

func (u *unit) flush(ctx context.Context) error {
	if len(u.pending) == 0 {
		return nil
	}
	if u.red != nil {
		for i := range u.pending {
			if u.pending[i].Payload != nil {
				if m, ok := u.red.Value(u.pending[i].Payload).(map[string]any); ok {
					u.pending[i].Payload = m
				}
			}
		}
	}
	err := u.w.Bus.PublishEvents(ctx, u.pending...)
	u.pending = u.pending[:0]
	return err
}

func itoa(i int) string { return types.DeriveIDPart(i) }

// scope builds the template scope of a task in this unit.
func (u *unit) scope(extra map[string]any) template.Scope {
	c := u.cmd
	ctxv := map[string]any{}
	for k, v := range u.st.Ctx {
		ctxv[k] = v
	}
	for k, v := range c.CtxPatch {
		ctxv[k] = v
	}
	iter := map[string]any{}
	for k, v := range c.Iter {
		iter[k] = v
	}
	if u.st.ParentIter != nil {
		iter["parent"] = u.st.ParentIter
	}
	p := template.ScopeParams{
		Workload: u.st.Workload, Ctx: ctxv, Iter: iter, Args: c.Args, ExecutionID: c.ExecutionID,
		Results: u.results, Keychain: u.kc, Extra: extra,
	}
	if c.Iteration != nil && u.step.Loop != nil {
		p.Iterator = u.step.Loop.Iterator
		p.Item = c.Item
		p.LoopIndex = c.Iteration
	}
	return template.NewScope(p)
}

// run executes the pipeline; handedOff reports a continuation was
// scheduled (the unit is not complete).
func (u *unit) run(ctx context.Context) (handedOff bool, err error) {
	c := &u.cmd
	tasks := u.step.Tasks
	first := c.TaskIndex == 0 && c.Attempt == 1 && c.Jumps == 0
	if first {
		if c.Iteration != nil {
			e := u.event(types.EvLoopIterationStarted, "")
			e.Payload = map[string]any{"index": *c.Iteration, "total": c.LoopTotal}
		} else {
			u.event(types.EvStepStarted, "")
		}
	}
	var final any
	if c.HasPrev {
		final = c.Prev
	}
	for c.TaskIndex < len(tasks) {
		task := tasks[c.TaskIndex]
		u.lastTask = task.Name
		out, then, rule, err := u.attempt(ctx, task)
		if err != nil {
			return false, err
		}
		act := then.Do
		if act == doSuspend {
			// Waiting for a child execution; its end resumes the unit here.
			if err := u.flush(ctx); err != nil {
				return false, err
			}
			return true, nil
		}
		if act == "" {
			act = "continue"
		}
		pe := u.event(types.EvPolicyTaskEvaluated, task.Name, itoa(c.Attempt))
		pe.Attempt = c.Attempt
		pe.Payload = map[string]any{"rule": rule, "do": act, "outcome_status": out.Status}
		// set_iter / set_ctx apply on every decision that names them.
		if err := u.applyPatches(then, out); err != nil {
			u.failTask(task, out, err.Error())
			return false, u.finish(ctx, false, nil, map[string]any{"kind": "template", "message": err.Error(), "task": task.Name})
		}
		switch act {
		case "retry":
			max := then.Attempts
			if max <= 0 {
				max = 3
			}
			if c.Attempt < max {
				delay := backoff(then, c.Attempt)
				pe.Payload["delay_s"] = delay
				pe.Payload["next_attempt"] = c.Attempt + 1
				if delay <= 0 {
					c.Attempt++
					continue
				}
				next := *c
				next.TaskResults = u.taskRes
				next.Attempt++
				next.NotBefore = u.w.now().Add(time.Duration(delay * float64(time.Second)))
				next.ID = next.TaskName()
				if err := u.flush(ctx); err != nil {
					return false, err
				}
				if err := u.w.Bus.PublishCommands(ctx, next); err != nil {
					return false, err
				}
				u.log.Info("retry scheduled", "task", task.Name, "delay_s", delay, "next_attempt", next.Attempt)
				return true, nil
			}
			pe.Payload["exhausted"] = true
			if out.Status == types.StatusError {
				u.failTask(task, out, "")
				return false, u.finish(ctx, false, nil, errMap(out, task.Name))
			}
			u.doneTask(task, out)
			final = out.Result
			u.advance(out.Result, c.TaskIndex+1)
		case "fail":
			u.failTask(task, out, "")
			return false, u.finish(ctx, false, nil, errMap(out, task.Name))
		case "break":
			u.doneTask(task, out)
			return false, u.finish(ctx, true, out.Result, nil)
		case "jump":
			idx := -1
			for i, t := range tasks {
				if t.Name == then.To {
					idx = i
				}
			}
			if idx < 0 {
				u.failTask(task, out, "jump to unknown task "+then.To)
				return false, u.finish(ctx, false, nil, map[string]any{"kind": "policy", "message": "jump to unknown task " + then.To})
			}
			u.doneTask(task, out)
			c.Jumps++
			if c.Jumps > MaxJumps {
				return false, u.finish(ctx, false, nil, map[string]any{"kind": "policy", "message": fmt.Sprintf("more than %d jumps", MaxJumps)})
			}
			final = out.Result
			u.advance(out.Result, idx)
		default: // continue
			if out.Status == types.StatusError {
				u.failTask(task, out, "")
			} else {
				u.doneTask(task, out)
			}
			final = out.Result
			u.advance(out.Result, c.TaskIndex+1)
		}
		if err := u.flush(ctx); err != nil {
			return false, err
		}
	}
	return false, u.finish(ctx, true, final, nil)
}

func (u *unit) advance(prev any, idx int) {
	c := &u.cmd
	c.Prev, c.HasPrev = prev, true
	c.TaskIndex = idx
	c.Attempt = 1
}

func errMap(out types.Outcome, task string) map[string]any {
	m := map[string]any{"task": task}
	if out.Error != nil {
		m["kind"], m["message"], m["retryable"] = out.Error.Kind, out.Error.Message, out.Error.Retryable
		if out.Error.Status != 0 {
			m["status"] = out.Error.Status
		}
	} else {
		m["kind"], m["message"] = "policy", "failed by task policy"
	}
	return m
}

func (u *unit) doneTask(task *dsl.Task, out types.Outcome) {
	u.taskRes[task.Name] = out.Result
	e := u.event(types.EvTaskDone, task.Name, itoa(u.cmd.Attempt))
	e.Attempt, e.Status, e.DurationMS = u.cmd.Attempt, out.Status, out.Meta.DurationMS
}

func (u *unit) failTask(task *dsl.Task, out types.Outcome, msg string) {
	e := u.event(types.EvTaskFailed, task.Name, itoa(u.cmd.Attempt))
	e.Attempt, e.Status, e.DurationMS = u.cmd.Attempt, types.StatusError, out.Meta.DurationMS
	em := errMap(out, task.Name)
	if msg != "" {
		em["message"] = msg
	}
	e.Payload = map[string]any{"error": em}
}

// applyPatches renders then.set_iter / then.set_ctx and merges them.
func (u *unit) applyPatches(then dsl.Then, out types.Outcome) error {
	if len(then.SetIter) == 0 && len(then.SetCtx) == 0 {
		return nil
	}
	sc := u.scope(u.policyExtra(out))
	if len(then.SetIter) > 0 {
		v, err := template.RenderValue(then.SetIter, sc)
		if err != nil {
			return fmt.Errorf("set_iter: %w", err)
		}
		if u.cmd.Iter == nil {
			u.cmd.Iter = map[string]any{}
		}
		for k, x := range v.(map[string]any) {
			u.cmd.Iter[k] = x
		}
	}
	if len(then.SetCtx) > 0 {
		v, err := template.RenderValue(then.SetCtx, sc)
		if err != nil {
			return fmt.Errorf("set_ctx: %w", err)
		}
		if u.cmd.CtxPatch == nil {
			u.cmd.CtxPatch = map[string]any{}
		}
		for k, x := range v.(map[string]any) {
			u.cmd.CtxPatch[k] = x
		}
	}
	return nil
}

func (u *unit) policyExtra(out types.Outcome) map[string]any {
	m := map[string]any{
		"outcome":  out.ToMap(),
		"_task":    u.taskRes,
		"_attempt": u.cmd.Attempt,
	}
	if u.cmd.HasPrev {
		m["_prev"] = u.cmd.Prev
	}
	return m
}

// backoff returns the delay in seconds before attempt+1 (DSL.md "Task
// policy": none = delay, linear = delay*attempt, exponential =
// delay*2^(attempt-1)), capped by max_delay when set.
func backoff(t dsl.Then, attempt int) float64 {
	d := t.Delay
	switch t.Backoff {
	case "linear":
		d = t.Delay * float64(attempt)
	case "exponential":
		d = t.Delay * math.Pow(2, float64(attempt-1))
	}
	if t.MaxDelay > 0 && d > t.MaxDelay {
		d = t.MaxDelay
	}
	return d
}

// finish emits the unit's boundary event and flushes.
func (u *unit) finish(ctx context.Context, ok bool, result any, errv map[string]any) error {
	c := u.cmd
	if ok && u.w.Results != nil {
		r, err := u.w.Results.Offload(ctx, types.ResultCoords{ExecutionID: c.ExecutionID, Step: c.Step, Frame: c.StepRun, Row: iterOr0(c.Iteration), Attempt: 1}, result)
		if err != nil {
			return fmt.Errorf("worker: store result: %w", err)
		}
		if r != nil {
			result = r
			rs := u.event(types.EvResultStored, "")
			rs.Status = types.StatusOK
			rs.Payload = map[string]any{"reference": r}
		}
	}
	var typ string
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
	e.Status = map[bool]string{true: types.StatusOK, false: types.StatusFailed}[ok]
	e.Attempt = c.Attempt
	if ok {
		e.Payload = map[string]any{"result": result}
		if len(c.CtxPatch) > 0 {
			e.Payload["ctx"] = c.CtxPatch
		}
	} else {
		e.Payload = map[string]any{"error": errv}
	}
	if c.Iteration != nil {
		e.Payload["index"] = *c.Iteration
	}
	if ok {
		u.log.Info("unit done", "event", typ)
	} else {
		u.log.Warn("unit failed", "event", typ, "error", errv)
	}
	return u.flush(ctx)
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
	if c.Iteration == nil && u.st.ParentIter == nil && len(c.Iter) == 0 {
		return nil
	}
	m := map[string]any{}
	for k, v := range c.Iter {
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

// stepTimeout handles a step run's lifecycle timer: if the run is still
// going, it fails the step (route applies the step.failed event; the
// run's own late boundary events are then ignored as stale).
func (w *Worker) stepTimeout(ctx context.Context, st *engine.State, step *dsl.Step, cmd types.Command, log *slog.Logger) error {
	ss := st.Steps[cmd.Step]
	if ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled {
		return nil
	}
	log.Warn("step exceeded its lifecycle timeout", "timeout_s", step.TimeoutS)
	return w.Bus.PublishEvents(ctx, engine.TimeoutEvent(cmd.ExecutionID, cmd.Step, cmd.StepRun, step.TimeoutS, w.now()))
}
