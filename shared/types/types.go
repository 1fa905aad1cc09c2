// Package types is the leaf package of the engine: the wire shapes that every
// other package imports (events, units of work, task outcomes). It holds data
// and tiny helpers only, never I/O, so that it can be imported from anywhere
// without cycles (the role riverqueue/river's rivertype plays).
package types

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// EventType names an event of the log (NoETL DSL spec "Events": the names are
// normative). The set is open for events that come from outside the engine
// (emit), so decoding never fails on an unknown type; the engine acts only
// on the constants below.
type EventType string

// Event types. Names are normative (NoETL DSL spec "Events").
const (
	EvExecutionRequested   EventType = "playbook.execution.requested"
	EvPlaybookStarted      EventType = "playbook.started"
	EvWorkflowStarted      EventType = "workflow.started"
	EvAdmitEvaluated       EventType = "policy.admit.evaluated"
	EvStepScheduled        EventType = "step.scheduled"
	EvNextEvaluated        EventType = "next.evaluated"
	EvWorkflowFinished     EventType = "workflow.finished"
	EvPlaybookFinished     EventType = "playbook.finished"
	EvStepStarted          EventType = "step.started"
	EvTaskStarted          EventType = "task.started"
	EvTaskAttemptStarted   EventType = "task.attempt.started"
	EvTaskAttemptDone      EventType = "task.attempt.done"
	EvTaskAttemptFailed    EventType = "task.attempt.failed"
	EvPolicyTaskEvaluated  EventType = "policy.task.evaluated"
	EvTaskDone             EventType = "task.done"
	EvTaskFailed           EventType = "task.failed"
	EvStepDone             EventType = "step.done"
	EvStepFailed           EventType = "step.failed"
	EvLoopStarted          EventType = "loop.started"
	EvLoopIterationStarted EventType = "loop.iteration.started"
	EvLoopIterationDone    EventType = "loop.iteration.done"
	EvLoopIterationFailed  EventType = "loop.iteration.failed"
	EvLoopDone             EventType = "loop.done"
	EvResultStored         EventType = "result.stored"

	// Engine events beyond the NoETL DSL spec's list (resilience, NoETL observability spec §8.5-§8.7).

	// EvCancelRequested records a cancellation (POST /executions/{id}/cancel);
	// the transition that applies it ends the execution canceled.
	EvCancelRequested EventType = "playbook.cancel.requested"
	// EvStepCanceled records a step run stopped by a cancellation, an
	// execution deadline or a halting failure.
	EvStepCanceled EventType = "step.canceled"
	// EvLoopIterationCanceled records a loop iteration cut short because
	// its step run ended without it (a cancellation, an execution
	// deadline, a halting failure, a step timeout): the terminal event of
	// its loop.iteration.started (README "The soak": every started unit ends in
	// the log).
	EvLoopIterationCanceled EventType = "loop.iteration.canceled"
	// EvTaskCanceled records a task attempt interrupted because its
	// execution or its step run ended while it ran (a cancellation, a
	// deadline, a step timeout, an operator's step complete|fail): the
	// task's terminal event after its task.attempt.failed (status
	// canceled, error kind canceled). No policy runs and nothing retries
	// it.
	EvTaskCanceled EventType = "task.canceled"
	// EvStepForced records an operator finishing a step run by hand
	// (`noetl step complete|fail`, POST
	// /executions/{id}/steps/{step}/complete|fail, admin role): who did
	// it, why, and how; the step.done or step.failed it applied through
	// the engine follows it in the same batch.
	EvStepForced EventType = "step.forced"
	// EvResultLost records a stored result of the execution found lost by
	// the results scrub (`noetl results verify`, shared/operations/gc): its
	// object is gone, was replaced (another generation at its key) or
	// no longer matches its reference's digest. Its readers fail with
	// error kind result_lost; `noetl results repair` may re-derive it.
	EvResultLost EventType = "result.lost"
	// EvResultRepaired records a lost result re-derived by `noetl results
	// repair` (shared/operations/gc): its producing task ran again with its
	// recorded inputs and gave the same bytes (sha256), now at its key as
	// a new generation that stands in for the lost one (results
	// MetaRepairs).
	EvResultRepaired EventType = "result.repaired"
	// EvResultRepairFailed records a repair that could not restore the
	// result (the task failed, or gave other bytes than the reference
	// records: its producer is not deterministic); nothing was written.
	EvResultRepairFailed EventType = "result.repair_failed"
	// EvExecutionTimedOut records an execution that ran past its deadline
	// (executor.spec.timeout_s or NOETL_EXECUTION_DEADLINE_S): it fails.
	EvExecutionTimedOut EventType = "playbook.timed_out"
	// EvUnitDeadLettered records a unit filed in the DLQ after its
	// attempts (its step run is parked until the entry is replayed or
	// discarded).
	EvUnitDeadLettered EventType = "unit.dead_lettered"
	// EvUnitReclaimed records a unit re-dispatched because its lease
	// expired (its holder died).
	EvUnitReclaimed EventType = "unit.reclaimed"
	// EvUnitHandedOff records a long unit continuing in a new unit before
	// the dispatch deadline.
	EvUnitHandedOff EventType = "unit.handed_off"
	// EvCompensationStarted records the start of a SAGA rollback
	// (policy.rollback: on_fail, NoETL observability spec §8.7 pattern B).
	EvCompensationStarted EventType = "compensation.started"
)

// ExternalPrefix starts the type of every event that comes from outside
// the engine through the emit function (README "Security"): such events are
// recorded in the execution's log and never applied to its state.
const ExternalPrefix = "external."

// IsExternal reports whether t is an external event type: ExternalPrefix
// followed by 1-200 characters of lower-case letters, digits, '.', '_' and
// '-' (e.g. "external.webhook", "external.order.created").
func (t EventType) IsExternal() bool {
	s := string(t)
	if !strings.HasPrefix(s, ExternalPrefix) || len(s) == len(ExternalPrefix) || len(s) > len(ExternalPrefix)+200 {
		return false
	}
	for _, r := range s[len(ExternalPrefix):] {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// IsBoundary reports whether an event ends a step run (step.done,
// step.failed, loop.done): the events the engine's transition function
// applies to an execution's state.
func (t EventType) IsBoundary() bool {
	return t == EvStepDone || t == EvStepFailed || t == EvLoopDone
}

// Status is the status of an execution, a step run, a task attempt or an
// iteration, as stored in state and carried in events.
type Status string

// Statuses. Executions end ok|failed|canceled; step runs go
// scheduled → running → ok|failed (or skipped when not admitted); task
// outcomes and iterations are ok|error.
const (
	StatusPending   Status = "pending"
	StatusScheduled Status = "scheduled"
	StatusRunning   Status = "running"
	StatusOK        Status = "ok"
	StatusFailed    Status = "failed"
	StatusError     Status = "error"
	StatusSkipped   Status = "skipped"
	StatusCanceled  Status = "canceled"
)

// Action is a task-policy decision (NoETL canonical v10 retry spec §2, the NoETL DSL spec "Task policy"):
// what the pipeline does after one task attempt.
type Action string

// Policy actions. Suspend is the engine's own: a `kind: playbook` task
// waits for its child execution without holding anything.
const (
	ActContinue Action = "continue"
	ActRetry    Action = "retry"
	ActJump     Action = "jump"
	ActBreak    Action = "break"
	ActFail     Action = "fail"
	ActSuspend  Action = "suspend"
)

// Event is the envelope of every entry of the event log (NoETL DSL spec "Events").
// The envelope fields are always present in JSON (null or zero when they do
// not apply). Events travel in batches (Batch: one Pub/Sub message on the
// "events" topic per unit of work or transition) and are projected per batch
// (materialize). No handler relies on delivery order: Clock is a hybrid
// logical clock assigned by the producer (every event's causes have a
// smaller Clock; events unrelated by causality order by wall time, see
// HLC), and Seq and PrevEventID are derived from it when the log is read
// (EventsInOrder), so each execution's events form one causal chain whatever
// order their messages arrived in. Persistence is idempotent by
// (ExecutionID, EventID); EventID is derived deterministically from the
// event's identity (see DeriveID) so a redelivered or re-emitted event has
// the same id.
type Event struct {
	EventID     string    `json:"event_id" firestore:"event_id"`
	EventType   EventType `json:"event_type" firestore:"event_type"`
	Timestamp   EventTime `json:"timestamp" firestore:"timestamp"` // UTC, millisecond precision; RFC 3339 with three fractional digits on the wire
	ExecutionID string    `json:"execution_id" firestore:"execution_id"`
	Source      string    `json:"source" firestore:"source"`           // "api", "route", "execute", ...
	EntityType  string    `json:"entity_type" firestore:"entity_type"` // "playbook", "workflow", "step", "task", "loop", "iteration"
	EntityID    string    `json:"entity_id" firestore:"entity_id"`     // step name, "step/task", ...
	ParentID    string    `json:"parent_id" firestore:"parent_id"`
	PrevEventID string    `json:"prev_event_id" firestore:"prev_event_id"`
	Seq         int64     `json:"seq" firestore:"seq"`
	// Clock is the event's hybrid logical clock value (microseconds since
	// the epoch, or later than its causes; see Event and HLC).
	Clock int64  `json:"clock" firestore:"clock"`
	Step  string `json:"step,omitempty" firestore:"step,omitempty"`
	// StepRun is the 1-based number of this run of Step within the execution
	// (a step re-entered through an arc runs again with the next number).
	StepRun    int    `json:"step_run,omitempty" firestore:"step_run,omitempty"`
	Task       string `json:"task,omitempty" firestore:"task,omitempty"`
	Attempt    int    `json:"attempt" firestore:"attempt"`
	Iteration  *int   `json:"iteration" firestore:"iteration"`
	Status     Status `json:"status" firestore:"status"`
	DurationMS int64  `json:"duration_ms" firestore:"duration_ms"`
	// Payload is event-specific; results over the inline budget appear as a
	// result reference (see ResultRef) instead of the value.
	Payload map[string]any `json:"payload" firestore:"payload"`
}

// NewEvent returns an event with Timestamp set to now (UTC, RFC 3339 with
// milliseconds) and EventID derived from idParts (see DeriveID).
func NewEvent(eventType EventType, executionID, source string, now time.Time, idParts ...string) Event {
	parts := append([]string{executionID, string(eventType)}, idParts...)
	return Event{
		EventID:     DeriveID(parts...),
		EventType:   eventType,
		Timestamp:   EventTimeOf(now),
		ExecutionID: executionID,
		Source:      source,
	}
}

// DeriveID returns a stable 32-hex-character id for the given identity parts
// (SHA-256 of the parts joined by "\x1f"). It is used for event ids, command
// ids and Cloud Task names so that re-deliveries dedup.
func DeriveID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
	return hex.EncodeToString(h[:16])
}

// IntPtr returns a pointer to i (for Event.Iteration and Command.Iteration).
func IntPtr(i int) *int { return &i }

// CommandKind names what a Command asks execute to do.
type CommandKind string

// Command kinds.
const (
	// CmdRunStep asks execute to run one step's task pipeline for one unit
	// (the whole step, or one loop iteration), starting at TaskIndex.
	CmdRunStep CommandKind = "run_step"
	// CmdStepTimeout is the durable timer of a step run's
	// lifecycle.timeout_s (and of a loop's total budget): when it fires and
	// the run is still going, the step fails with an error of kind
	// "timeout".
	CmdStepTimeout CommandKind = "step_timeout"
	// CmdExecutionTimeout is the durable timer of the execution deadline.
	CmdExecutionTimeout CommandKind = "execution_timeout"
	// CmdLeaseCheck is the watchdog of a leased unit (armed when the lease
	// is taken): when it fires, a unit whose holder stopped renewing its
	// lease is reclaimed (re-dispatched) or dead-lettered.
	CmdLeaseCheck CommandKind = "lease_check"
	// CmdRepairResult asks execute to re-derive a lost stored result
	// (`noetl results repair`, shared/operations/gc repair.go): its producing
	// task runs again with the inputs its attempt recorded (Command.Repair),
	// and the result goes back to its key only if it gives the same bytes.
	CmdRepairResult CommandKind = "repair_result"
)

// RepairOrder is what a CmdRepairResult re-derives (shared/operations/gc
// PlanRepair makes it, after checking that the result may be repaired).
type RepairOrder struct {
	// Ref is the lost result's reference (its inner "$ref" map, as the
	// execution's log records it).
	Ref map[string]any `json:"ref"`
	// Task is the producing task, Kind its tool kind and Attempt the
	// attempt that produced the result.
	Task    string `json:"task"`
	Kind    string `json:"kind"`
	Attempt int    `json:"attempt"`
	// Config and Args are the task's rendered configuration and args as
	// that attempt recorded them (history.TaskInputs).
	Config map[string]any `json:"config,omitempty"`
	Args   map[string]any `json:"args,omitempty"`
	// Principal is who asked for the repair; RequestID names the request
	// (its Cloud Task: a request retried is one task, two requests are
	// two).
	Principal string `json:"principal"`
	RequestID string `json:"request_id"`
}

// Command is one unit of work, delivered to execute as the JSON body of
// exactly one Cloud Task (task name = ID). The transition that produces it
// creates the task directly (or, for bulk fan-out, publishes it on the
// "commands" topic for dispatch). A unit carries everything a
// stateless worker needs to resume it (README "Architecture" "Invariants").
type Command struct {
	ID          string      `json:"id"`
	Kind        CommandKind `json:"kind"`
	ExecutionID string      `json:"execution_id"`
	Step        string      `json:"step"`
	StepRun     int         `json:"step_run"`
	// Iteration is the 0-based loop index for a loop step's iteration unit,
	// nil for a step without loop.
	Iteration *int `json:"iteration,omitempty"`
	// LoopTotal is the number of iterations of the loop (0 when no loop).
	LoopTotal int `json:"loop_total,omitempty"`
	// Item is the loop element bound to the iterator name for this iteration.
	Item any `json:"item,omitempty"`
	// ItemRef says Item was left out of the body (too large for a Cloud
	// Task): execute reads it from the loop plan.
	ItemRef bool `json:"item_ref,omitempty"`
	// Spill is a results-tier reference to the pipeline state (Prev,
	// TaskResults, Iter, CtxPatch, StepVars, Vars, CursorRest) of a
	// continuation too large for a Cloud Task body (worker/handoff.go);
	// those fields are then empty.
	Spill any `json:"spill,omitempty"`
	// CursorRest is, for a cursor loop's iteration unit, the rows of its
	// frame after Item, in claim order (engine/cursor.go).
	CursorRest []any `json:"cursor_rest,omitempty"`
	// Args is the token the step was entered with (an arc's rendered args).
	Args map[string]any `json:"args,omitempty"`
	// TaskIndex is the pipeline position to start at (0 = first task).
	TaskIndex int `json:"task_index"`
	// Attempt is the 1-based attempt number of the task at TaskIndex.
	Attempt int `json:"attempt"`
	// Iter is the iteration-scoped state patched by set_iter (NoETL canonical v10 retry spec).
	Iter map[string]any `json:"iter,omitempty"`
	// Prev is `_prev`: the result of the previous task of the pipeline.
	Prev any `json:"prev,omitempty"`
	// HasPrev tells a nil Prev from an absent one.
	HasPrev bool `json:"has_prev,omitempty"`
	// StepVars is the step run's step scope (step.<key>) so far.
	StepVars map[string]any `json:"step_vars,omitempty"`
	// Vars are the pipeline's bare variables (DSL v2 set targets without a
	// scope in tool items and policy rules), read bare by later tasks.
	Vars map[string]any `json:"vars,omitempty"`
	// CtxPatch accumulates policy then.set_ctx patches of this unit; they
	// reach the execution ctx with the unit's boundary event.
	CtxPatch map[string]any `json:"ctx_patch,omitempty"`
	// TaskResults are the results of the unit's finished tasks by label
	// (`_task`), carried across delayed retries and child-playbook waits.
	TaskResults map[string]any `json:"task_results,omitempty"`
	// Jumps counts pipeline jumps taken so far in this unit (bounded by the
	// engine's jump limit to stop runaway pagination).
	Jumps int `json:"jumps,omitempty"`
	// NotBefore is the earliest time the unit may run (Cloud Task
	// schedule_time); zero means now.
	NotBefore time.Time `json:"not_before,omitempty"`
	// StateVersion is the execution-state version the unit was derived from;
	// execute refuses (retries later) to run against an older state.
	StateVersion int64 `json:"state_version"`
	// Clock is the Lamport time of the transition that produced the unit:
	// the unit's events get Clock+1, Clock+2, ... (see Event).
	Clock int64 `json:"clock,omitempty"`
	// TraceParent carries the W3C trace context of the producer.
	TraceParent string `json:"traceparent,omitempty"`
	// ChildID is set on the command that resumes a unit suspended on a
	// `kind: playbook` task: the child execution it waited for.
	ChildID string `json:"child_id,omitempty"`
	// Reclaim counts the re-dispatches of this unit after its holder's
	// lease expired; Replay counts DLQ replays; HandOff counts hand-offs
	// before the dispatch deadline. Each is part of the task name, so a
	// re-dispatch is a new Cloud Task.
	Reclaim int `json:"reclaim,omitempty"`
	Replay  int `json:"replay,omitempty"`
	HandOff int `json:"hand_off,omitempty"`
	// SafetyNet marks the Cloud Task of a unit its releasing invocation
	// runs inline (step continuation): the task is delivered only if that
	// run did not end its unit, and it may have run the unit's tasks (its
	// side effects are behind the barrier), so its delivery recovers the
	// unit as a retry does. Not part of the task name.
	SafetyNet bool `json:"safety_net,omitempty"`
	// ReplayOf is, on a unit replayed from the DLQ (and on its reclaims
	// and hand-offs), the id of the DLQ entry it replays: the one delivery
	// allowed to run a unit parked under that entry (worker: a parked
	// unit's other deliveries are dropped). Not part of the task name.
	ReplayOf string `json:"replay_of,omitempty"`
	// SpecPatch, on a unit replayed from the DLQ, corrects the rendered
	// configuration of the task at TaskIndex (its keys replace the
	// rendered ones; `noetl dlq replay --patch spec.<key>=…`, checked
	// against the kind's spec by shared/dlq) for the attempts of that task
	// at this position.
	SpecPatch map[string]any `json:"spec_patch,omitempty"`
	// Started is when a loop iteration's first delivery began (its item
	// budget, loop.spec.item_timeout_s, runs from there across hand-offs).
	Started time.Time `json:"started,omitempty"`
	// Unit is, for a lease_check command, the unit it watches (as it was
	// dispatched); Holder is the lease holder it watches.
	Unit   *Command `json:"unit,omitempty"`
	Holder string   `json:"holder,omitempty"`
	// Seq numbers the watchdogs of one holder (each re-arms the next).
	Seq int `json:"seq,omitempty"`
	// Repair is what a CmdRepairResult re-derives.
	Repair *RepairOrder `json:"repair,omitempty"`
	// BodyRef is set on the body of a Cloud Task whose command was too
	// large for one (Cloud Tasks' 100 KB task limit): the full command is
	// in the results tier and execute loads it (shared/tasks LoadBody).
	BodyRef *BodyRef `json:"body_ref,omitempty"`
}

// BodyRef names a command body stored in the results tier.
type BodyRef struct {
	// Key is the object key (shared/tasks BodyKey).
	Key string `json:"key"`
	// SHA256 is the hex SHA-256 of the stored body; Bytes its length.
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// UnitKey names the unit independent of attempt/pointer: one step run, or
// one iteration of it. Used for leases and per-iteration documents.
func (c Command) UnitKey() string {
	if c.Iteration != nil {
		return c.Step + "." + itoa(c.StepRun) + ".i" + itoa(*c.Iteration)
	}
	return c.Step + "." + itoa(c.StepRun)
}

// TaskPrefix returns the prefix of every Cloud Task name of an execution
// (16 hex characters derived from its id), so the tasks of one execution
// can be found and deleted when it is canceled.
func TaskPrefix(executionID string) string { return DeriveID(executionID)[:16] }

// WatchdogMark starts the part after TaskPrefix of a watchdog's task name
// (a lease_check): stopping an execution deletes its pending tasks but its
// watchdogs, which close the chain of a unit whose holder died
// (IsWatchdog).
const WatchdogMark = "w"

// IsWatchdog reports whether a Cloud Task name (its short id, or a full
// name ending with it) is a watchdog's.
func IsWatchdog(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return len(name) > 17 && name[16] == '-' && strings.HasPrefix(name[17:], WatchdogMark)
}

// TaskName returns the Cloud Task name id for this command:
// TaskPrefix(execution) + "-" + a hash unique per (unit, kind, task
// pointer, attempt, jumps, resume, reclaim, replay, hand-off), so
// duplicate dispatches dedup to AlreadyExists.
func (c Command) TaskName() string {
	p := TaskPrefix(c.ExecutionID) + "-"
	extra := []string{}
	if c.Reclaim > 0 || c.Replay > 0 || c.HandOff > 0 {
		extra = append(extra, "r", itoa(c.Reclaim), itoa(c.Replay), itoa(c.HandOff))
	}
	switch {
	case c.Kind == CmdRepairResult && c.Repair != nil:
		return p + DeriveID(c.ExecutionID, c.UnitKey(), string(c.Kind), c.Repair.RequestID)
	case c.Kind == CmdLeaseCheck:
		return p + WatchdogMark + DeriveID(c.ExecutionID, c.UnitKey(), string(c.Kind), c.Holder, itoa(c.Seq))
	case c.Kind != "" && c.Kind != CmdRunStep:
		return p + DeriveID(append([]string{c.ExecutionID, c.UnitKey(), string(c.Kind)}, extra...)...)
	case c.ChildID != "":
		return p + DeriveID(append([]string{c.ExecutionID, c.UnitKey(), itoa(c.TaskIndex), itoa(c.Attempt), itoa(c.Jumps), "resume", c.ChildID}, extra...)...)
	}
	return p + DeriveID(append([]string{c.ExecutionID, c.UnitKey(), itoa(c.TaskIndex), itoa(c.Attempt), itoa(c.Jumps)}, extra...)...)
}

func itoa(i int) string {
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	p := len(b)
	for {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			break
		}
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}

// Outcome is the envelope every task attempt yields (the DSL's outcome
// envelope, README "The DSL"). It is the `outcome` name in policy templates.
type Outcome struct {
	Status Status         `json:"status"` // StatusOK | StatusError
	Result any            `json:"result"`
	Error  *TaskError     `json:"error"`
	Meta   OutcomeMeta    `json:"meta"`
	HTTP   *HTTPOutcome   `json:"http,omitempty"`
	PG     *PGOutcome     `json:"pg,omitempty"`
	Py     *PyOutcome     `json:"py,omitempty"`
	Logs   string         `json:"logs,omitempty"` // captured stdout/stderr (python print)
	Extra  map[string]any `json:"-"`
}

// OutcomeMeta is outcome.meta.
type OutcomeMeta struct {
	Attempt    int   `json:"attempt"`
	DurationMS int64 `json:"duration_ms"`
	// StartedAt is when the attempt started: UTC, RFC 3339 on the wire
	// (and as text in the template map, ToMap); zero when not known.
	StartedAt time.Time `json:"started_at,omitzero"`
}

// HTTPOutcome is outcome.http.
type HTTPOutcome struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
}

// PGOutcome is outcome.pg; Code and SQLState are the same SQLSTATE.
type PGOutcome struct {
	Code     string `json:"code"`
	SQLState string `json:"sqlstate"`
}

// PyOutcome is outcome.py.
type PyOutcome struct {
	ExceptionType string `json:"exception_type"`
}

// TaskError is outcome.error. It survives JSON unchanged (go-workflows style);
// Retryable is the tool's classification (HTTP 408/429/5xx and network
// errors are retryable, as in the DSL contract).
type TaskError struct {
	Kind      ErrorKind `json:"kind"` // one of the ErrKind* constants (errorkind.go)
	Message   string    `json:"message"`
	Retryable bool      `json:"retryable"`
	Status    int       `json:"status,omitempty"` // HTTP status, for kind "http"
}

// Error implements error.
func (e *TaskError) Error() string { return string(e.Kind) + ": " + e.Message }

// UnmarshalJSON decodes outcome.meta, accepting the "" that a runner
// built before StartedAt was a time.Time sends for an unknown start (the
// zero time), so the two planes can be deployed one after the other.
func (m *OutcomeMeta) UnmarshalJSON(b []byte) error {
	var v struct {
		Attempt    int             `json:"attempt"`
		DurationMS int64           `json:"duration_ms"`
		StartedAt  json.RawMessage `json:"started_at"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = OutcomeMeta{Attempt: v.Attempt, DurationMS: v.DurationMS}
	if len(v.StartedAt) == 0 || string(v.StartedAt) == `""` {
		return nil
	}
	return json.Unmarshal(v.StartedAt, &m.StartedAt)
}

// rfc3339 is t as RFC 3339 text (UTC, nanoseconds as needed), "" for the
// zero time: the form templates see.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ToMap returns the outcome as the generic map that templates see
// (`outcome.status`, `outcome.http.status`, `outcome.error.retryable`, ...).
// Absent helpers (http/pg/py) are nil.
func (o Outcome) ToMap() map[string]any {
	m := map[string]any{
		"status": string(o.Status),
		"result": o.Result,
		"meta": map[string]any{
			"attempt":     o.Meta.Attempt,
			"duration_ms": o.Meta.DurationMS,
			"started_at":  rfc3339(o.Meta.StartedAt),
		},
		"error": nil,
		"http":  nil,
		"pg":    nil,
		"py":    nil,
	}
	if o.Error != nil {
		em := map[string]any{"kind": string(o.Error.Kind), "message": o.Error.Message, "retryable": o.Error.Retryable}
		if o.Error.Status != 0 {
			em["status"] = o.Error.Status
		}
		m["error"] = em
	}
	if o.HTTP != nil {
		h := map[string]any{}
		for k, v := range o.HTTP.Headers {
			h[k] = v
		}
		m["http"] = map[string]any{"status": o.HTTP.Status, "headers": h}
	}
	if o.PG != nil {
		m["pg"] = map[string]any{"code": o.PG.Code, "sqlstate": o.PG.SQLState}
	}
	if o.Py != nil {
		m["py"] = map[string]any{"exception_type": o.Py.ExceptionType}
	}
	return m
}

// DeriveIDPart formats an int for use in ids and keys.
func DeriveIDPart(i int) string { return itoa(i) }

// ResultCoords locate one result in the results tier (NoETL result storage RFC §4: the
// logical URI noetl://<tenant>/<project>/results/<execution_id>/<step>/
// <frame>/<row>/<attempt>[@<version>]).
type ResultCoords struct {
	Tenant      string // default: the deployment's tenant (results.Locator), else "default"
	Project     string // default: the deployment's project, else "default"
	ExecutionID string
	Step        string
	Frame       int // the step run
	Row         int // the loop iteration (0 when none)
	Attempt     int
	// Version is the optional @<version> of NoETL result storage RFC's grammar ("" =
	// none: a rewrite of the same coordinates overwrites the object, OQ1's
	// default; a version keeps a separate object per version).
	Version string
}
