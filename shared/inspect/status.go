// Package inspect computes what an operator reads about an execution: its
// status document (GET /executions/{id}), per-step task-attempt figures
// (`noetl describe`), its cost (GET /executions/{id}/cost, `noetl cost`)
// and the timeline of its step runs, loop iterations and task attempts
// (the console's Gantt chart). The api serves these views, the CLI prints
// them and the console draws them, from one implementation. Nothing here
// does I/O: the callers read the state, the events and the metered
// operations from the store and pass them in.
package inspect

import (
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/types"
)

// Status is an execution's status document, GET /executions/{id}. Values
// that can carry user data (results, ctx, errors, failures) are redacted
// with the execution's redactor.
type Status struct {
	ExecutionID string `json:"execution_id"`
	ParentID    string `json:"parent_id"`
	Playbook    string `json:"playbook"`
	// Creator is the principal that started the execution; CatalogPath
	// where its playbook came from (empty for an inline playbook).
	Creator     string `json:"creator,omitempty"`
	CatalogPath string `json:"catalog_path,omitempty"`
	// RerunOf is, for a rerun, the execution it reruns, and RerunFrom
	// where it was asked to start ("failed", a step, "" for the start).
	RerunOf   string       `json:"rerun_of,omitempty"`
	RerunFrom string       `json:"rerun_from,omitempty"`
	Status    types.Status `json:"status"`
	// CreatedAt, StartedAt and FinishedAt are UTC, millisecond precision,
	// RFC 3339 on the wire; StartedAt and FinishedAt are omitted until the
	// execution has started or finished.
	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// DurationMS runs from CreatedAt to FinishedAt, or to now while the
	// execution runs.
	DurationMS int64 `json:"duration_ms"`
	// Version is the state's version (one per applied boundary event).
	Version int64 `json:"version"`
	// Steps are the steps that were scheduled at least once, by name.
	Steps map[string]Step `json:"steps"`
	// Results are the finished steps' latest results (references for
	// offloaded ones), Ctx the execution context, Result the final result.
	Results any `json:"results"`
	Ctx     any `json:"ctx"`
	// Workload is the execution's workload (the playbook's defaults with
	// the request's deep-merged over them), redacted.
	Workload any `json:"workload"`
	// Failures are the failure messages of the execution, in order.
	Failures []string `json:"failures"`
	Result   any      `json:"result"`
}

// Step is one step of Status.
type Step struct {
	Status types.Status `json:"status"`
	// Run is the number of the step's latest run (1-based); Runs counts
	// the completed ones.
	Run        int   `json:"run"`
	Runs       int   `json:"runs"`
	DurationMS int64 `json:"duration_ms,omitempty"`
	// StartedAt and FinishedAt are the latest run's start and end (UTC,
	// RFC 3339 on the wire; zero and omitted when not there yet).
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Loop is the latest run's loop progress (nil for a step without
	// loop).
	Loop  *Loop `json:"loop,omitempty"`
	Error any   `json:"error,omitempty"`
	// ReusedFrom is set when a rerun reused the latest run instead of
	// running it: the execution whose recorded run it is.
	ReusedFrom string `json:"reused_from,omitempty"`
}

// Loop is a loop step run's progress.
type Loop struct {
	// Total is the number of iterations (0 for a cursor loop, whose rows
	// are not known in advance); Done counts the ended ones.
	Total       int    `json:"total"`
	Done        int    `json:"done"`
	Mode        string `json:"mode"`
	MaxInFlight int    `json:"max_in_flight"`
	// Profile is when the iterations ended (set once the loop has ended:
	// engine.LoopProfile).
	Profile *engine.LoopProfile `json:"profile,omitempty"`
}

// IterationCounter counts the ended iterations of a loop run (key
// engine.LoopKey; store.Store.IterationCount).
type IterationCounter func(loopKey string) (int, error)

// StatusOf builds the status document of st, redacted with red. A running
// loop's Done is counted with count (nil, or an error: the loop's total
// is shown, as for an ended loop); now ends the duration of a running
// execution.
func StatusOf(st *engine.State, red *redact.Redactor, count IterationCounter, now time.Time) Status {
	steps := make(map[string]Step, len(st.Steps))
	for name, ss := range st.Steps {
		v := Step{Status: ss.Status, Run: ss.Run, Runs: ss.Runs, DurationMS: ss.DurationMS, StartedAt: ss.StartedAt, FinishedAt: ss.FinishedAt, Error: red.Value(ss.Error), ReusedFrom: ss.ReusedFrom}
		if ss.Loop != nil {
			done := ss.Loop.Total
			if ss.Status == types.StatusRunning && count != nil {
				if n, err := count(engine.LoopKey(name, ss.Run)); err == nil {
					done = n
				}
			}
			v.Loop = &Loop{Total: ss.Loop.Total, Done: done, Mode: ss.Loop.Mode, MaxInFlight: ss.Loop.MaxInFlight, Profile: ss.Loop.Profile}
		}
		steps[name] = v
	}
	var failures []string
	for _, f := range st.Failures {
		failures = append(failures, red.String(f))
	}
	return Status{
		ExecutionID: st.ExecutionID, ParentID: st.ParentID, Playbook: st.Playbook, Creator: st.Creator, CatalogPath: st.CatalogPath, RerunOf: st.RerunOf, RerunFrom: st.RerunFrom, Status: st.Status,
		CreatedAt: st.CreatedAt, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt, DurationMS: DurationMS(st, now),
		Version: st.Version, Steps: steps, Results: red.Value(st.Results), Ctx: red.Value(st.Ctx), Workload: red.Value(st.Workload),
		Failures: failures, Result: red.Value(st.Result),
	}
}

// DurationMS is how long an execution has run: from its creation to its
// end, or to now while it runs (0 when CreatedAt is zero).
func DurationMS(st *engine.State, now time.Time) int64 {
	if st.CreatedAt.IsZero() {
		return 0
	}
	end := now
	if !st.FinishedAt.IsZero() {
		end = st.FinishedAt
	}
	return end.Sub(st.CreatedAt).Milliseconds()
}
