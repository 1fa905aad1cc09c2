package api

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/noetl/gcpengine/shared/control"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/store"
)

// StepEndRequest is the optional body of POST
// /executions/{id}/steps/{step}/complete and .../fail.
type StepEndRequest struct {
	// Result is the step's result (complete only; absent: null).
	Result any `json:"result"`
	// Reason says why; it is recorded in step.forced (and is the failed
	// step's error message).
	Reason string `json:"reason"`
}

// stepRoute parses ".../executions/{id}/steps/{step}/{action}" (p after
// "/executions/"); ok is false for another shape.
func stepRoute(p string) (id, step string, action control.StepAction, ok bool) {
	id, rest, found := strings.Cut(p, "/steps/")
	if !found || id == "" || strings.Contains(id, "/") {
		return "", "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", "", "", false
	}
	return id, rest[:i], control.StepAction(rest[i+1:]), true
}

// endStep handles POST /executions/{id}/steps/{step}/complete|fail (admin
// role; NoETL observability spec §8.13 runbook B, infra/runbooks
// stuck-execution.md): the step's running run ends as the operator says,
// through the engine (control.ForceStep), audited as a step.forced event
// naming the caller and the reason. 200 {"execution_id", "step",
// "step_run", "action", "status": "ok"|"failed"}; 400 a bad body or
// action; 404 an unknown execution or step; 409 when the execution has
// ended or the step has no running run.
func endStep(w http.ResponseWriter, r *http.Request, id, step string, action control.StepAction) {
	ctx := r.Context()
	d, ok := opened(ctx, w, deps)
	if !ok {
		return
	}
	if action != control.StepComplete && action != control.StepFail {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no route for " + r.Method + " " + r.URL.Path + " (a step's end is complete or fail)"})
		return
	}
	var req StepEndRequest
	if b, _ := io.ReadAll(io.LimitReader(r.Body, MaxBody)); len(b) > 0 && !decodeJSON(w, b, &req) {
		return
	}
	if action == control.StepFail && req.Result != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "a failed step has no result: give a reason"})
		return
	}
	rec, ok := execution(ctx, w, d, id)
	if !ok || !owned(w, r, rec) {
		return
	}
	run, err := d.Control.ForceStep(ctx, control.ForceStepParams{ExecutionID: id, Step: step, Action: action, Result: req.Result,
		Reason: req.Reason, Principal: principal(r)})
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "execution " + id + " not found"})
		return
	case errs.Is(err, errs.FailedPrecondition):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
		return
	case err != nil:
		unavailable(w, err)
		return
	}
	status := "ok"
	if action == control.StepFail {
		status = "failed"
	}
	d.Log.InfoContext(ctx, "api: step run ended by hand", "execution_id", id, "step", step, "step_run", run, "action", string(action),
		"principal", principal(r), "reason", req.Reason)
	writeJSON(w, http.StatusOK, map[string]any{"execution_id": id, "step": step, "step_run": run, "action": string(action), "status": status})
}
