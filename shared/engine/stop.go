package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// Stopping an execution (NoETL observability spec §8.5 cancellation, §8.8 halt) and its
// policies. An execution stops when it is canceled, when it runs past its
// deadline, or when a step fails under on_step_fail: halt: every active
// step run is canceled (step.canceled), queued tokens are dropped, and the
// execution ends at once (canceled, or failed). Units still running see the
// terminal state at their next task boundary and stop; pending Cloud Tasks
// are deleted by the caller (shared/control).

// Failure policies (NoETL observability spec §8.8), from executor.spec.policy (or the
// engine Options).
const (
	OnStepFailHalt     = "halt"
	OnStepFailContinue = "continue"
	// OnStepFailRouteEdge is "route_edge:<step>".
	OnStepFailRouteEdge = "route_edge:"

	OnWhenErrorFalse = "treat_as_false"
	OnWhenErrorFail  = "fail_step"
)

// Policy is the execution-level policy block executor.spec.policy (seed
// 000 §8.7, §8.8): on_step_fail, on_when_error and rollback.
type Policy struct {
	OnStepFail  string
	OnWhenError string
	// Rollback "on_fail" runs the compensating steps of the completed steps
	// backwards when the execution fails (SAGA, NoETL observability spec §8.7 pattern B).
	Rollback string
}

// PolicyOf returns the playbook's executor.spec.policy over the defaults.
func (e *Engine) PolicyOf() Policy {
	p := Policy{OnStepFail: e.Opts.OnStepFail, OnWhenError: e.Opts.OnWhenError}
	if p.OnStepFail == "" {
		p.OnStepFail = OnStepFailHalt
	}
	if p.OnWhenError == "" {
		p.OnWhenError = OnWhenErrorFalse
	}
	spec, _ := e.PB.Executor["spec"].(map[string]any)
	pol, _ := spec["policy"].(map[string]any)
	if v, ok := pol["on_step_fail"].(string); ok && v != "" {
		p.OnStepFail = v
	}
	if v, ok := pol["on_when_error"].(string); ok && v != "" {
		p.OnWhenError = v
	}
	if v, ok := pol["rollback"].(string); ok {
		p.Rollback = v
	}
	return p
}

// ExecutionDeadline returns the execution's deadline: executor.spec.
// timeout_s, else Options.ExecutionDeadline (0: none).
func (e *Engine) ExecutionDeadline() time.Duration {
	spec, _ := e.PB.Executor["spec"].(map[string]any)
	switch v := spec["timeout_s"].(type) {
	case int64:
		return time.Duration(v) * time.Second
	case int:
		return time.Duration(v) * time.Second
	case float64:
		return time.Duration(v * float64(time.Second))
	}
	return e.Opts.ExecutionDeadline
}

// StopReason says why an execution stops.
type StopReason struct {
	// Status is the final status: ExecCanceled or ExecFailed.
	Status types.Status
	// Kind is the error kind recorded for the active steps: canceled,
	// timeout, halted.
	Kind types.ErrorKind
	// Message says why.
	Message string
}

// Stop ends a running execution at once (see the package comment above):
// it returns changed=false when the execution already ended.
func (e *Engine) Stop(st *State, ev types.Event, r StopReason, now time.Time) (Output, bool) {
	if st.Terminal() {
		return Output{}, false
	}
	st.Version++
	t := &transition{e: e, st: st, now: now}
	t.stop(r)
	t.stamp(ev.Clock)
	return t.out, true
}

// stop cancels every active step run and finishes the execution.
func (t *transition) stop(r StopReason) {
	st := t.st
	names := make([]string, 0, len(st.Steps))
	for name := range st.Steps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ss := st.Steps[name]
		ss.Pending = nil
		if ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled {
			continue
		}
		ss.Status = types.StatusCanceled
		ss.FinishedAt = ts(t.now)
		ss.Error = map[string]any{"kind": string(r.Kind), "message": r.Message}
		e := t.event(types.EvStepCanceled, name, ss.Run, history.StepCanceled{Reason: string(r.Kind), Message: r.Message})
		e.Status = types.StatusCanceled
	}
	st.Active = 0
	if r.Status == ExecFailed {
		st.Failures = append(st.Failures, r.Message)
	}
	t.finish(r.Status)
}

// failedStep applies the execution's on_step_fail policy to a step run
// that failed and took no failure arc. It reports handled=true when the
// policy dealt with it (continue routed on, route_edge scheduled the
// handler); otherwise the failure is recorded (and, under halt, the
// execution stops).
func (t *transition) failedStep(step *dsl.Step, ss *StepState, result any, b boundary) (bool, error) {
	pol := t.e.PolicyOf()
	switch {
	case pol.OnStepFail == OnStepFailContinue:
		// The step is failed, routing goes on along its success arcs.
		_, err := t.route(step, ss, types.EvStepDone, true, result, b)
		return true, err
	case strings.HasPrefix(pol.OnStepFail, OnStepFailRouteEdge):
		target := strings.TrimPrefix(pol.OnStepFail, OnStepFailRouteEdge)
		if t.e.PB.Step(target) == nil || target == step.Name {
			return false, nil
		}
		args := map[string]any{"failed_step": step.Name, "error": ss.Error}
		t.event(types.EvNextEvaluated, step.Name, ss.Run, history.NextEvaluated{Event: types.EvStepFailed, Policy: pol.OnStepFail, Matched: []string{target}, Fired: []string{target}}, "route_edge")
		return true, t.schedule(target, args, nil, step.Name, ss.Run)
	}
	return false, nil
}

// finish ends the execution with status (no check of active runs): the
// compensation of a failed execution under rollback: on_fail comes first.
func (t *transition) finish(status types.Status) {
	st := t.st
	if status == ExecFailed && t.startCompensation() {
		return
	}
	st.Status = status
	st.FinishedAt = ts(t.now)
	var dur int64
	if !st.StartedAt.IsZero() {
		dur = t.now.Sub(st.StartedAt).Milliseconds()
	}
	wf := t.event(types.EvWorkflowFinished, "", 0, history.WorkflowFinished{Status: status, DurationMS: dur, Failures: st.Failures, Compensated: st.Compensated})
	wf.Status, wf.DurationMS = status, dur
	pf := t.event(types.EvPlaybookFinished, "", 0, history.PlaybookFinished{Status: status, Result: st.Result, DurationMS: dur})
	pf.Status, pf.DurationMS = status, dur
	if st.Resume != nil {
		// Wake the parent's suspended `kind: playbook` task.
		t.out.Commands = append(t.out.Commands, *st.Resume)
	}
}

// Compensation (SAGA, NoETL observability spec §8.7 pattern B): with executor.spec.policy.
// rollback: on_fail, a failing execution first runs, one after the other
// and in reverse order of completion, the `compensate:` step of every step
// that completed, each once; then it ends failed.

// startCompensation begins the rollback if the policy asks for it and
// there is something to compensate. It reports whether it did.
func (t *transition) startCompensation() bool {
	st := t.st
	if st.Compensating || t.e.PolicyOf().Rollback != "on_fail" {
		return false
	}
	var plan []string
	for i := len(st.Completed) - 1; i >= 0; i-- {
		s := t.e.PB.Step(st.Completed[i])
		if s == nil || s.Compensate == "" || t.e.PB.Step(s.Compensate) == nil {
			continue
		}
		plan = append(plan, s.Name+">"+s.Compensate)
	}
	if len(plan) == 0 {
		return false
	}
	st.Compensating = true
	st.Rollback = plan
	t.event(types.EvCompensationStarted, "", 0, history.CompensationStarted{Plan: plan, Failures: st.Failures})
	t.nextCompensation()
	return true
}

// nextCompensation schedules the next compensating step, or ends the
// execution when none is left.
func (t *transition) nextCompensation() {
	st := t.st
	for len(st.Rollback) > 0 {
		entry := st.Rollback[0]
		st.Rollback = st.Rollback[1:]
		of, comp, _ := strings.Cut(entry, ">")
		st.Compensated = append(st.Compensated, of)
		args := map[string]any{"compensating": of, "result": st.Results[of]}
		before := st.Active
		if err := t.schedule(comp, args, nil, of, 0); err != nil || st.Active == before {
			continue // not admitted or failed to start: go on backwards
		}
		return
	}
	st.Status = ExecRunning
	t.finish(ExecFailed)
}

// compensationStepEnded continues the rollback after a compensating step
// run ended (ok or failed: each compensation runs once).
func (t *transition) compensationStepEnded() bool {
	if !t.st.Compensating || t.st.Active > 0 {
		return false
	}
	t.nextCompensation()
	return true
}

// stopMessage formats a stop message.
func stopMessage(format string, a ...any) string { return fmt.Sprintf(format, a...) }
