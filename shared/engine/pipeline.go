package engine

import (
	"fmt"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// MaxJumps bounds the jumps one unit may take (a guard against runaway
// pagination whose stop condition is never met).
const MaxJumps = 100000

// Cursor is a unit's position in its step's task pipeline (NoETL canonical v10 retry spec): the
// task to run, its 1-based attempt, the jumps taken so far, `_prev` (the
// previous task's result), the results of the unit's finished tasks by
// label (`_task`), and the iteration-scoped (set_iter) and execution ctx
// (set_ctx) patches accumulated by policy decisions. It travels in the
// unit's Command, so a unit handed off to a new Cloud Task (a delayed
// retry, a child wait) resumes exactly where it stopped.
type Cursor struct {
	TaskIndex   int
	Attempt     int
	Jumps       int
	Prev        any
	HasPrev     bool
	TaskResults map[string]any
	Iter        map[string]any
	CtxPatch    map[string]any
	// StepVars is the step scope (step.<key>); Vars the pipeline's bare
	// variables (DSL v2 set targets without a scope).
	StepVars map[string]any
	Vars     map[string]any
}

// CursorOf returns the cursor a command resumes at.
func CursorOf(c types.Command) Cursor {
	cur := Cursor{TaskIndex: c.TaskIndex, Attempt: c.Attempt, Jumps: c.Jumps, Prev: c.Prev, HasPrev: c.HasPrev,
		TaskResults: map[string]any{}, Iter: c.Iter, CtxPatch: c.CtxPatch, StepVars: c.StepVars, Vars: c.Vars}
	if cur.Attempt < 1 {
		cur.Attempt = 1
	}
	for k, v := range c.TaskResults {
		cur.TaskResults[k] = v
	}
	return cur
}

// Into copies the cursor into a command (for a hand-off).
func (c Cursor) Into(cmd *types.Command) {
	cmd.TaskIndex, cmd.Attempt, cmd.Jumps = c.TaskIndex, c.Attempt, c.Jumps
	cmd.Prev, cmd.HasPrev = c.Prev, c.HasPrev
	cmd.TaskResults, cmd.Iter, cmd.CtxPatch = c.TaskResults, c.Iter, c.CtxPatch
	cmd.StepVars, cmd.Vars = c.StepVars, c.Vars
}

// MoveKind says how a pipeline goes on after one task attempt.
type MoveKind int

const (
	// MoveRun: run the task at Move.Cursor now, in the same unit.
	MoveRun MoveKind = iota
	// MoveHandOff: continue in a new unit that starts at Move.Cursor after
	// Move.Delay (a delayed retry: a Cloud Task with a schedule_time,
	// never a sleep).
	MoveHandOff
	// MoveFinish: the pipeline ended, ok with Move.Result or failed with
	// Move.Error (the unit's boundary event follows).
	MoveFinish
)

// Move is the pipeline's next move after one decision.
type Move struct {
	Kind   MoveKind
	Cursor Cursor
	Delay  time.Duration
	// OK, Result and Error describe a finished pipeline (MoveFinish).
	OK     bool
	Result any
	Error  map[string]any
	// TaskEnd is the event that closes the decided task (task.done or
	// task.failed), or "" while the task is being retried.
	TaskEnd types.EventType
	// Exhausted marks a retry decision whose attempts ran out.
	Exhausted bool
}

// ErrorMap is the error entry of a failed task or step (the payload of
// task.failed / step.failed): kind, message, retryable, HTTP status and the
// task label. A failure without an outcome error is a policy failure.
func ErrorMap(out types.Outcome, task string) map[string]any {
	m := map[string]any{"task": task}
	if out.Error != nil {
		m["kind"], m["message"], m["retryable"] = string(out.Error.Kind), out.Error.Message, out.Error.Retryable
		if out.Error.Status != 0 {
			m["status"] = out.Error.Status
		}
	} else {
		m["kind"], m["message"] = string(types.ErrKindPolicy), "failed by task policy"
	}
	return m
}

// Advance applies decision d, taken on outcome out of the task at
// c.TaskIndex, and returns the pipeline's next move (NoETL DSL spec "Task
// policy"): continue (next task, `_prev` := result; an error outcome is
// recorded as task.failed and the pipeline goes on), retry (this task again
// until `attempts` total attempts, after the backoff delay; exhausted: an
// error fails the step, an ok result continues), jump (to the task labelled
// `to`), break (the pipeline ends ok with this result) and fail (it ends
// failed). The decision's set_iter/set_ctx patches must already be in c
// (ApplyPatches). Running off the end of the pipeline finishes ok with the
// last result. key seeds the jitter of a retry's backoff: the unit's
// idempotency key (JitterKey), so the delay is a function of recorded
// inputs and a replay decides the same.
func Advance(tasks []*dsl.Task, c Cursor, d Decision, out types.Outcome, key string) Move {
	return advance(tasks, c, d, out, key)
}

// JitterKey is the seed of a task attempt's jittered backoff: the unit's
// idempotency key ({execution}:{step}[:{iteration}], NoETL observability
// spec §8.4), the task's label and the jumps the unit took (a page of a
// pagination), joined by "/". Jitter adds the attempt.
func JitterKey(unitKey, task string, jumps int) string {
	return unitKey + "/" + task + "/" + itoa(jumps)
}

// PipelineResultsKey is the key of the task results map in a pipeline
// step's result (PipelineResult).
const PipelineResultsKey = "results"

// PipelineResult is the result of a step (not of a loop iteration: see
// below) whose pipeline finished ok with last, its last (or breaking)
// task's result (Move.Result): for a pipeline of more than one
// task whose last result is a mapping without a "results" key, that
// mapping plus "results": the results of the tasks that finished ok, by
// label (taskResults) — NoETL promotes the last tool's result to the top
// of a task sequence's step result and keeps the sequence's results map
// beside it (noetl/core/dsl/engine/executor/events.py, call.done of a
// task_sequence: {**last_result, **response}). Anything else is last
// unchanged: a single task's result keeps its own shape, and a result
// that already has "results" (a loop's, a child playbook's) is not
// shadowed. NoETL promotes a sequence's result so for a step only; a loop
// iteration's result there is the results map alone, here the last
// task's result (README "Running NoETL v2 playbooks"): the worker calls
// PipelineResult for steps, not iterations, which keeps a loop's
// {results: [...]} the size of its tasks' last results.
func PipelineResult(tasks []*dsl.Task, last any, taskResults map[string]any) any {
	m, ok := last.(map[string]any)
	if !ok || len(tasks) < 2 || len(taskResults) == 0 {
		return last
	}
	if _, has := m[PipelineResultsKey]; has {
		return last
	}
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	byLabel := make(map[string]any, len(taskResults))
	for k, v := range taskResults {
		byLabel[k] = v
	}
	out[PipelineResultsKey] = byLabel
	return out
}

func advance(tasks []*dsl.Task, c Cursor, d Decision, out types.Outcome, key string) Move {
	task := tasks[c.TaskIndex]
	done := func(m Move) Move {
		if out.Status == types.StatusOK {
			c.TaskResults[task.Name] = out.Result
		}
		return m
	}
	next := func(idx int) Move {
		c.Prev, c.HasPrev = out.Result, true
		c.TaskIndex, c.Attempt = idx, 1
		if idx >= len(tasks) {
			return Move{Kind: MoveFinish, Cursor: c, OK: true, Result: c.Prev}
		}
		return Move{Kind: MoveRun, Cursor: c}
	}
	failed := func(em map[string]any) Move {
		return Move{Kind: MoveFinish, Cursor: c, Error: em, TaskEnd: types.EvTaskFailed}
	}
	switch d.Action {
	case types.ActRetry:
		max := d.Then.Attempts
		if max <= 0 {
			max = DefaultRetryAttempts
		}
		if c.Attempt < max {
			delay := JitteredBackoff(d.Then, c.Attempt, JitterKey(key, task.Name, c.Jumps))
			c.Attempt++
			if delay <= 0 {
				return Move{Kind: MoveRun, Cursor: c}
			}
			return Move{Kind: MoveHandOff, Cursor: c, Delay: delay}
		}
		if out.Status != types.StatusOK {
			m := failed(ErrorMap(out, task.Name))
			m.Exhausted = true
			return m
		}
		m := done(next(c.TaskIndex + 1))
		m.TaskEnd, m.Exhausted = types.EvTaskDone, true
		return m
	case types.ActFail:
		return failed(ErrorMap(out, task.Name))
	case types.ActBreak:
		m := done(Move{Kind: MoveFinish, Cursor: c, OK: true, Result: out.Result})
		m.TaskEnd = types.EvTaskDone
		return m
	case types.ActJump:
		idx := -1
		for i, t := range tasks {
			if t.Name == d.Then.To {
				idx = i
			}
		}
		if idx < 0 {
			return failed(map[string]any{"kind": string(types.ErrKindPolicy), "task": task.Name, "message": "jump to unknown task " + d.Then.To})
		}
		c.Jumps++
		if c.Jumps > MaxJumps {
			return failed(map[string]any{"kind": string(types.ErrKindPolicy), "task": task.Name, "message": fmt.Sprintf("more than %d jumps", MaxJumps)})
		}
		m := done(next(idx))
		m.TaskEnd = types.EvTaskDone
		return m
	default: // continue
		m := done(next(c.TaskIndex + 1))
		m.TaskEnd = types.EvTaskDone
		if out.Status != types.StatusOK {
			m.TaskEnd = types.EvTaskFailed
		}
		return m
	}
}

// ApplyPatches applies a decision's (or a tool item's) set block to the
// cursor (NoETL canonical v10 retry spec §2: the patches apply on every decision that names
// them): iter.x → the iteration state, ctx.x → the unit's ctx patch (it
// reaches the execution ctx with the boundary event), step.x → the step
// scope, a bare x → a pipeline variable.
func ApplyPatches(c *Cursor, set []dsl.Assignment, sc template.Scope) error {
	if len(set) == 0 {
		return nil
	}
	if c.Iter == nil {
		c.Iter = map[string]any{}
	}
	if c.CtxPatch == nil {
		c.CtxPatch = map[string]any{}
	}
	if c.StepVars == nil {
		c.StepVars = map[string]any{}
	}
	if c.Vars == nil {
		c.Vars = map[string]any{}
	}
	return ApplySet(set, sc, SetTargets{Ctx: c.CtxPatch, Iter: c.Iter, Step: c.StepVars, Var: c.Vars})
}
