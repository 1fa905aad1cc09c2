package control

// Operator actions on a stuck step run (NoETL observability spec §8.13
// runbook B, "manually mark step as done (admin API)"; infra/runbooks
// stuck-execution.md): an operator ends the step run that is running now,
// as completed with a result they give, or as failed with their reason.
// The end is a boundary event like any unit's — step.done or step.failed
// — applied through the pure engine (Apply: the step's arcs, ctx and
// result, the execution's end), preceded in the same batch by step.forced,
// the audit record naming who did it and why. A unit still running the
// step run is interrupted (shared/worker interrupt.go) and its late
// boundary is ignored as stale.

import (
	"context"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/types"
)

// StepAction is what an operator does to a step run (ForceStep).
type StepAction string

// Step actions.
const (
	// StepComplete ends the run with step.done and the operator's result.
	StepComplete StepAction = "complete"
	// StepFail ends the run with step.failed, error kind
	// types.ErrKindOperator.
	StepFail StepAction = "fail"
)

// ForceStepParams names an operator's end of a step run.
type ForceStepParams struct {
	ExecutionID string
	Step        string
	Action      StepAction
	// Result is the step's result (StepComplete; nil: null).
	Result any
	// Reason is why (recorded in step.forced; the message of a
	// StepFail's error).
	Reason string
	// Principal is who does it (the api's caller).
	Principal string
}

// ForceStep ends the running run of a step as the operator says (see the
// file comment) and returns the run it ended. Errors: InvalidArgument for
// an unknown action or no principal; NotFound for an unknown execution or
// a step the playbook does not have; FailedPrecondition when the
// execution has ended or the step has no run that is scheduled or running
// (also when it ended between the read and the write); store and bus
// errors (retry: a repeated call ends the same run once, with the same
// event ids).
func (c *Control) ForceStep(ctx context.Context, p ForceStepParams) (int, error) {
	if p.Action != StepComplete && p.Action != StepFail {
		return 0, errs.New(errs.InvalidArgument, "control: step action %q: want complete or fail", p.Action)
	}
	if p.Principal == "" {
		return 0, errs.New(errs.InvalidArgument, "control: a step's end by hand needs the principal who makes it")
	}
	rec, err := c.Store.ExecutionGet(ctx, p.ExecutionID)
	if err != nil {
		return 0, err
	}
	st := rec.State
	if st.Terminal() {
		return 0, errs.New(errs.FailedPrecondition, "control: execution %s has ended (%s)", p.ExecutionID, st.Status)
	}
	e, err := c.Engine(rec.Source)
	if err != nil {
		return 0, err
	}
	if e.PB.Step(p.Step) == nil {
		return 0, errs.New(errs.NotFound, "control: execution %s's playbook has no step %q", p.ExecutionID, p.Step)
	}
	ss := st.Steps[p.Step]
	if !stepOpen(ss) {
		status := types.Status("never run")
		if ss != nil {
			status = ss.Status
		}
		return 0, errs.New(errs.FailedPrecondition, "control: step %s of execution %s has no running run (%s)", p.Step, p.ExecutionID, status)
	}
	run := ss.Run
	now := c.now()
	parts := []string{"operator", p.Step, types.DeriveIDPart(run), string(p.Action)}
	audit := types.NewEvent(types.EvStepForced, p.ExecutionID, c.Source, now, parts...)
	audit.Step, audit.StepRun, audit.EntityType, audit.EntityID, audit.ParentID = p.Step, run, "step", p.Step, st.ParentID
	audit.Payload = history.Encode(history.StepForced{Action: string(p.Action), Principal: p.Principal, Reason: p.Reason})
	typ, status := types.EvStepDone, types.StatusOK
	var payload history.Payload = history.StepDone{Result: p.Result}
	if p.Action == StepFail {
		msg := "failed by " + p.Principal
		if p.Reason != "" {
			msg += ": " + p.Reason
		}
		typ, status = types.EvStepFailed, types.StatusFailed
		payload = history.StepFailed{Error: map[string]any{"kind": string(types.ErrKindOperator), "message": msg}}
	}
	boundary := types.NewEvent(typ, p.ExecutionID, c.Source, now, append(parts, "boundary")...)
	boundary.Step, boundary.StepRun, boundary.EntityType, boundary.EntityID, boundary.ParentID = p.Step, run, "step", p.Step, st.ParentID
	boundary.Status = status
	boundary.Payload = history.Encode(payload)
	applied, err := c.Apply(ctx, ApplyParams{ExecutionID: p.ExecutionID, Event: boundary, OutboxID: EndOutboxID(p.ExecutionID, p.Step, run),
		Events: []types.Event{audit, boundary}, Base: rec})
	if err != nil {
		return run, err
	}
	if !applied {
		return run, errs.New(errs.FailedPrecondition, "control: step %s run %d of execution %s ended before the operator's %s applied", p.Step, run, p.ExecutionID, p.Action)
	}
	c.log().Info("step run ended by an operator", "execution_id", p.ExecutionID, "step", p.Step, "step_run", run,
		"action", string(p.Action), "principal", p.Principal, "reason", p.Reason)
	return run, nil
}

// stepOpen reports whether a step state is a run that has not ended.
func stepOpen(ss *engine.StepState) bool {
	return ss != nil && (ss.Status == types.StatusRunning || ss.Status == types.StatusScheduled)
}
