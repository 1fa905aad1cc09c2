package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/noetl/gcpengine/shared/catalog"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/launch"
	"github.com/noetl/gcpengine/shared/rerun"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/telemetry"
)

// RerunRequest is the body of POST /executions/{id}/rerun (docs
// "Rerun"). Every field is optional: {} runs the execution again from the
// start with its recorded workload.
type RerunRequest struct {
	// From is where the rerun starts: "failed" (the first step run that
	// failed), a step's name (its first run), or "" / the entry step (the
	// start: nothing reused).
	From string `json:"from"`
	// Workload is deep-merged over the execution's recorded workload.
	Workload map[string]any `json:"workload"`
	// Playbook (inline YAML) or Path and Version (a catalog entry) fix
	// the playbook: the rerun runs it instead of the execution's frozen
	// one (its steps are matched by name). Grants follow the playbook
	// run: an inline one has an inline playbook's.
	Playbook string `json:"playbook"`
	Path     string `json:"path"`
	Version  int    `json:"version"`
}

// rerunExecution serves POST /executions/{id}/rerun (role runner; a
// caller below operator reruns its own executions only):
//
//	→ 202 {"execution_id", "status": "requested", "rerun_of", "from",
//	       "step", "run", "reused": ["step#run", ...], "copied_objects",
//	       "copied_bytes", "warnings"}
//	→ 400 {"error"} a request naming something wrong (an unknown step, a
//	  step that never ran, "failed" when nothing failed, a child
//	  execution, a fixed playbook that does not validate: with problems)
//	→ 403 a credential the playbook is not granted; a reused result the
//	  execution may not read
//	→ 404 an execution the caller may not read, or none
//	→ 409 {"error"} an execution that has not ended, or rolled back; a
//	  reused result that is lost (its object gone or changed)
//	→ 413 a plan that does not fit an execution document
func rerunExecution(w http.ResponseWriter, r *http.Request, id string) {
	ctx := telemetry.Extract(r.Context(), map[string]string{"traceparent": r.Header.Get("traceparent"), "tracestate": r.Header.Get("tracestate")})
	d, rec, ok := executionOf(w, r, id)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	var req RerunRequest
	if len(body) > 0 && !decodeJSON(w, body, &req) {
		return
	}
	p := rerun.Params{Source: rec, From: req.From, Workload: req.Workload, Creator: principal(r)}
	switch {
	case req.Playbook != "" && req.Path != "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "give playbook or path, not both"})
		return
	case req.Playbook != "":
		pb, err := dsl.Load([]byte(req.Playbook), "playbook")
		if err != nil {
			if !invalidDocument(w, err, "invalid playbook") {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			}
			return
		}
		p.Playbook, p.PlaybookSource = pb, []byte(req.Playbook)
	case req.Path != "":
		var e *catalog.Entry
		if e, err = d.Catalog.Load(ctx, req.Path, req.Version); err != nil {
			if !invalidDocument(w, err, "invalid playbook "+req.Path) {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			}
			return
		}
		p.Playbook, p.PlaybookSource, p.CatalogPath = e.Playbook, e.Source, e.Path
	}
	if p.Playbook != nil {
		if err := documentFits(p.PlaybookSource, req.Workload, 0); err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": err.Error()})
			return
		}
	}
	s := &rerun.Starter{Store: d.Store, Bus: d.Bus, Results: d.Results, Credentials: d.Credentials}
	got, err := s.Start(ctx, p)
	var (
		re *engine.RerunError
		tl *rerun.TooLargeError
		ke *launch.KeychainError
	)
	switch {
	case err == nil:
	case errors.As(err, &re):
		code := http.StatusBadRequest
		if re.Conflict {
			code = http.StatusConflict
		}
		writeJSON(w, code, map[string]any{"error": err.Error()})
		return
	case errors.As(err, &tl):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": err.Error()})
		return
	case errors.Is(err, results.ErrForbidden), errors.Is(err, credentials.ErrNotGranted):
		writeJSON(w, http.StatusForbidden, map[string]any{"error": err.Error()})
		return
	case errors.Is(err, results.ErrLost):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error() + " (rerun from an earlier step, whose run made it, or from the start)"})
		return
	case errors.As(err, &ke):
		code := http.StatusServiceUnavailable
		if errors.Is(err, credentials.ErrNotFound) || errors.Is(err, credentials.ErrInvalid) {
			code = http.StatusBadRequest
		}
		writeJSON(w, code, map[string]any{"error": err.Error()})
		return
	default:
		if !invalidDocument(w, err, "the execution's playbook no longer validates") {
			unavailable(w, err)
		}
		return
	}
	warnings := []string{}
	if p.Playbook != nil {
		for _, pr := range p.Playbook.Warnings {
			warnings = append(warnings, pr.Message)
		}
	}
	d.Log.InfoContext(ctx, "rerun requested", "execution_id", got.ExecutionID, "rerun_of", id, "from", req.From, "reused", len(got.Reused), "principal", principal(r))
	writeJSON(w, http.StatusAccepted, map[string]any{"execution_id": got.ExecutionID, "status": engine.ExecRequested, "rerun_of": got.RerunOf,
		"from": got.From, "step": got.Step, "run": got.Run, "reused": got.Reused, "copied_objects": got.CopiedObjects, "copied_bytes": got.CopiedBytes, "warnings": warnings})
}
