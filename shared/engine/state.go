// Package engine is the pure core of the control plane: a state machine
// (state, event) → (state, commands, events) with no I/O (README "Architecture"
// "The engine core"). The route function feeds it boundary events read from
// the event log and persists what it returns; every decision it makes is a
// deterministic function of its inputs, so a redelivered event yields the
// same commands with the same ids (which Cloud Tasks dedups by name).
package engine

import (
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

// Execution statuses held in State.Status: requested → running → ok |
// failed | canceled.
const (
	ExecRequested types.Status = "requested"
	ExecRunning   types.Status = types.StatusRunning
	ExecOK        types.Status = types.StatusOK
	ExecFailed    types.Status = types.StatusFailed
	ExecCanceled  types.Status = types.StatusCanceled
)

// State is the fold of an execution's boundary events: the execution
// document's body (Firestore executions/{id}, field "state" as JSON).
// It is written once per step boundary, never once per loop iteration.
type State struct {
	ExecutionID string `json:"execution_id"`
	ParentID    string `json:"parent_id,omitempty"`
	// Playbook is the playbook's metadata.path (or name) for display.
	Playbook string `json:"playbook"`
	// Creator is the principal that started the execution (the api's
	// caller, shared/auth): a caller below the operator role reads and
	// cancels only its own executions. A child execution inherits its
	// parent's; a subscription's executions are "subscription:<name>".
	// Empty for executions started before creators were recorded.
	Creator string `json:"creator,omitempty"`
	// CatalogPath is where the playbook was loaded from: its catalog path
	// or its file under the playbook root (cleaned, extension kept), ""
	// for an inline playbook (POST /executions {playbook}). Credential
	// grants match it (shared/credentials Grantee); metadata.path, which
	// the author chooses, never counts.
	CatalogPath string       `json:"catalog_path,omitempty"`
	Status      types.Status `json:"status"`
	// Workload is the merged workload (playbook defaults deep-merged with
	// the request payload); immutable after start (NoETL DSL spec "Document").
	Workload map[string]any `json:"workload"`
	// Ctx is the execution context patched by set_ctx.
	Ctx map[string]any `json:"ctx"`
	// Results holds each finished step's latest result by step name (a
	// result reference map for over-budget results, NoETL result storage RFC).
	Results map[string]any        `json:"results"`
	Steps   map[string]*StepState `json:"steps"`
	// Active counts step runs that are scheduled or running.
	Active int `json:"active"`
	// Version increases by one on every applied boundary event; commands
	// carry the version they were derived from.
	Version int64 `json:"version"`
	// Clock is the Lamport time of the last event the engine produced for
	// this execution (types.Event "Clock").
	Clock int64 `json:"clock"`
	// CreatedAt, StartedAt and FinishedAt are the times the execution was
	// created, started and finished: UTC, millisecond precision, RFC 3339
	// on the wire; StartedAt and FinishedAt are zero (and omitted) until
	// then.
	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Failures   []string  `json:"failures,omitempty"`
	// Result is the execution's final result (the last finished step's).
	Result any `json:"result,omitempty"`
	// LastStep is the step whose boundary event was applied last.
	LastStep string `json:"last_step,omitempty"`
	// Resume is, for a child execution (kind: playbook), the parent's unit
	// of work to publish when this execution finishes.
	Resume *types.Command `json:"resume,omitempty"`
	// ParentIter is, for a child execution started inside a loop
	// iteration, the parent's iteration state: templates see it as
	// iter.parent (nested loops, the NoETL DSL spec "Loops").
	ParentIter map[string]any `json:"parent_iter,omitempty"`
	// Joins holds the tokens parked at fan-in joins that have not fired
	// yet, by join step name (joins.go).
	Joins map[string]*JoinWait `json:"joins,omitempty"`
	// Completed lists the steps that completed ok, in the order of their
	// first completion (SAGA rollback walks it backwards).
	Completed []string `json:"completed,omitempty"`
	// Compensating is set while a SAGA rollback runs; Rollback holds its
	// remaining entries "<step>><compensating step>" and Compensated the
	// steps whose compensation started (NoETL observability spec §8.7).
	Compensating bool     `json:"compensating,omitempty"`
	Rollback     []string `json:"rollback,omitempty"`
	Compensated  []string `json:"compensated,omitempty"`
	// Parked holds the step units (not loop iterations: those park on
	// their iteration record) filed in the DLQ, by unit key
	// (types.Command.UnitKey). The control plane writes it
	// (shared/control: filing a unit, and resolving the entry when the
	// unit's step run ends); the engine never reads it. A parked unit's
	// deliveries are dropped but for the DLQ replay of its entry.
	Parked map[string]Park `json:"parked,omitempty"`
	// RerunOf is, for a rerun (POST /executions/{id}/rerun, rerun.go), the
	// execution it reruns; RerunFrom is where it was asked to start
	// (RerunFailed, a step name, or "" for the start). Both empty for
	// every other execution.
	RerunOf   string `json:"rerun_of,omitempty"`
	RerunFrom string `json:"rerun_from,omitempty"`
	// Reuse holds the recorded ends of RerunOf's step runs that this rerun
	// reuses instead of running them, by LoopKey(step, run). An entry is
	// taken out when its run is scheduled (reused, or run when its token
	// differs); nil once none is left.
	Reuse map[string]*ReusedRun `json:"reuse,omitempty"`
	// Keychain is the resolved keychain for control-plane templates (arc
	// when/args, set_ctx, loop.in, admission). The caller sets it before a
	// transition; it is never serialised.
	Keychain map[string]any `json:"-"`
}

// Park is a step unit parked in the DLQ (State.Parked): its entry and
// its step run.
type Park struct {
	// DLQID is the DLQ entry's id (store.DLQEntry.MessageID).
	DLQID string `json:"dlq_id"`
	Step  string `json:"step"`
	Run   int    `json:"run"`
}

// StepState is the control-plane view of one step.
type StepState struct {
	Status types.Status `json:"status"` // scheduled|running|ok|failed|skipped
	// Run is the number of the step's latest run (1-based).
	Run int `json:"run"`
	// Runs counts completed runs.
	Runs int `json:"runs"`
	// Args is the token (rendered arc args) of the latest run: the
	// step's `args` / `input`.
	Args map[string]any `json:"args,omitempty"`
	// Vars is the run's step scope (`step.<key>`, DSL v2 set targets
	// step.x): written by the arc that entered the run, the run's task
	// policies and the step's own set; read by its arcs.
	Vars map[string]any `json:"vars,omitempty"`
	Loop *LoopStatus    `json:"loop,omitempty"`
	// StartedAt and FinishedAt are the latest run's start and end: UTC,
	// millisecond precision, RFC 3339 on the wire; zero (and omitted) when
	// the run has not started or not finished.
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Error      any       `json:"error,omitempty"`
	// ReusedFrom is set when the latest run was not run but reused from
	// the execution a rerun reruns (State.RerunOf): that execution's id.
	ReusedFrom string `json:"reused_from,omitempty"`
	// Pending holds the tokens (arc args) of arcs that fired while the step
	// was still running; each starts one more run, in order, when the
	// current run ends (a re-joined step runs once per incoming branch).
	Pending []Token `json:"pending,omitempty"`
}

// Token is a queued entry into a step.
type Token struct {
	Args    map[string]any `json:"args,omitempty"`
	Vars    map[string]any `json:"vars,omitempty"`
	From    string         `json:"from"`
	FromRun int            `json:"from_run"`
}

// LoopStatus is the static shape of a running loop (its per-iteration
// progress lives in per-iteration documents, never here).
type LoopStatus struct {
	Total       int    `json:"total"`
	Mode        string `json:"mode"`
	MaxInFlight int    `json:"max_in_flight"`
	// Profile is when the iterations ended, set when loop.done carries it
	// (profile.go); nil while the loop runs.
	Profile *LoopProfile `json:"profile,omitempty"`
}

// LoopPlan is everything needed to dispatch any iteration of one loop run.
// The transition that starts the loop stores it once
// (executions/{id}/loops/{step}.{run}, in the same transaction as the
// state); execute reads it (cached: it never changes) when an iteration
// ends and the lane's next iteration must be dispatched. Items may be
// moved to the results tier by the store when the plan is large (only
// ItemsRef is then kept in the document).
type LoopPlan struct {
	Step         string         `json:"step"`
	Run          int            `json:"run"`
	Total        int            `json:"total"`
	Items        []any          `json:"items,omitempty"`
	ItemsRef     any            `json:"items_ref,omitempty"`
	Iterator     string         `json:"iterator"`
	Mode         string         `json:"mode"`
	MaxInFlight  int            `json:"max_in_flight"`
	FailureMode  string         `json:"failure_mode"`
	Args         map[string]any `json:"args,omitempty"`
	StateVersion int64          `json:"state_version"`
	// Cursor is set for a cursor loop (cursor.go): Total is then 0 (the
	// rows are not known in advance) and MaxInFlight is the number of
	// cursor workers (lanes).
	Cursor *CursorPlan `json:"cursor,omitempty"`
	// Batch is the number of consecutive iterations of a lane one Cloud
	// Task runs (batch.go): fixed when the plan is written. 0 (a plan
	// written before batching) means 1.
	Batch int `json:"batch,omitempty"`
}

// Key returns the loop run's document id "<step>.<run>".
func (p LoopPlan) Key() string { return LoopKey(p.Step, p.Run) }

// LoopKey returns "<step>.<run>".
func LoopKey(step string, run int) string {
	return step + "." + itoa(run)
}

// Output is what one engine transition asks the caller to do, in this
// order: store Loops (new loop plans) with the state, publish Events, and
// turn each of Commands into a Cloud Task. The caller keeps it as the
// transition's outbox until all of it is done (shared/control).
type Output struct {
	Events   []types.Event   `json:"events,omitempty"`
	Commands []types.Command `json:"commands,omitempty"`
	Loops    []LoopPlan      `json:"loops,omitempty"`
}

// Empty reports whether the output asks for nothing.
func (o Output) Empty() bool {
	return len(o.Events) == 0 && len(o.Commands) == 0 && len(o.Loops) == 0
}

// Terminal reports whether the execution has finished.
func (s *State) Terminal() bool {
	return s.Status == ExecOK || s.Status == ExecFailed || s.Status == ExecCanceled
}

func itoa(i int) string {
	return types.DeriveIDPart(i)
}
