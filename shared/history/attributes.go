package history

import (
	"reflect"

	"github.com/noetl/gcpengine/shared/types"
)

// An error entry (the Error fields below typed any or map[string]any) is
// the engine's error object as the step's state, the iteration records and
// the templates (event.error, output.error) hold it: kind, message,
// retryable and, by origin, task, status, dlq_id (engine.ErrorMap and the
// worker's refusals). It travels unchanged.

// registry names the attributes type of every engine event type (the
// types.Ev* constants): the one place an event type meets its payload. An
// event type not listed here (an external event, types.EventType.IsExternal)
// has an opaque payload.
var registry = map[types.EventType]Payload{
	types.EvExecutionRequested:    ExecutionRequested{},
	types.EvPlaybookStarted:       PlaybookStarted{},
	types.EvWorkflowStarted:       WorkflowStarted{},
	types.EvAdmitEvaluated:        AdmitEvaluated{},
	types.EvStepScheduled:         StepScheduled{},
	types.EvNextEvaluated:         NextEvaluated{},
	types.EvWorkflowFinished:      WorkflowFinished{},
	types.EvPlaybookFinished:      PlaybookFinished{},
	types.EvStepStarted:           StepStarted{},
	types.EvTaskStarted:           TaskStarted{},
	types.EvTaskAttemptStarted:    TaskAttemptStarted{},
	types.EvTaskAttemptDone:       TaskAttempt{},
	types.EvTaskAttemptFailed:     TaskAttempt{},
	types.EvPolicyTaskEvaluated:   PolicyTaskEvaluated{},
	types.EvTaskDone:              TaskDone{},
	types.EvTaskFailed:            TaskFailed{},
	types.EvTaskCanceled:          TaskCanceled{},
	types.EvStepDone:              StepDone{},
	types.EvStepFailed:            StepFailed{},
	types.EvLoopStarted:           LoopStarted{},
	types.EvLoopIterationStarted:  IterationStarted{},
	types.EvLoopIterationDone:     IterationDone{},
	types.EvLoopIterationFailed:   IterationFailed{},
	types.EvLoopDone:              LoopDone{},
	types.EvResultStored:          ResultStored{},
	types.EvResultLost:            ResultLost{},
	types.EvResultRepaired:        ResultRepaired{},
	types.EvResultRepairFailed:    ResultRepaired{},
	types.EvCancelRequested:       CancelRequested{},
	types.EvStepCanceled:          StepCanceled{},
	types.EvStepForced:            StepForced{},
	types.EvLoopIterationCanceled: IterationCanceled{},
	types.EvExecutionTimedOut:     ExecutionTimedOut{},
	types.EvUnitDeadLettered:      UnitDeadLettered{},
	types.EvUnitReclaimed:         UnitReclaimed{},
	types.EvUnitHandedOff:         UnitHandedOff{},
	types.EvCompensationStarted:   CompensationStarted{},
}

// ExecutionRequested is the payload of playbook.execution.requested (the
// api's start of an execution).
type ExecutionRequested struct {
	attrs
	// Playbook is the catalog path started; ParentID the parent
	// execution's id ("" for a top-level execution).
	Playbook string `json:"playbook"`
	ParentID string `json:"parent_id"`
	// Trace is the caller's W3C trace context (traceparent, tracestate,
	// baggage); omitted when empty.
	Trace map[string]string `json:"trace,omitempty"`
	// RerunOf is, for a rerun (POST /executions/{id}/rerun), the execution
	// it reruns, and RerunFrom where it starts ("failed", a step name, or
	// "" for the start); both omitted when empty. The step runs it reuses
	// are in its log as step.done events with reused_from (StepDone).
	RerunOf   string `json:"rerun_of,omitempty"`
	RerunFrom string `json:"rerun_from,omitempty"`
}

// PlaybookStarted is the payload of playbook.started.
type PlaybookStarted struct {
	attrs
	Playbook string `json:"playbook"`
	ParentID string `json:"parent_id"`
}

// WorkflowStarted is the (empty: null on the wire) payload of
// workflow.started.
type WorkflowStarted struct{ attrs }

// AdmitEvaluated is the payload of policy.admit.evaluated: the admission
// decision of a step run and the index of the rule that made it (-1: the
// default).
type AdmitEvaluated struct {
	attrs
	Allowed bool `json:"allowed"`
	Rule    int  `json:"rule"`
}

// StepScheduled is the payload of step.scheduled.
type StepScheduled struct {
	attrs
	// From is the step whose arc scheduled the run ("" for the entry
	// step); Args the token's rendered args (null when none).
	From string         `json:"from"`
	Args map[string]any `json:"args"`
	// Queued marks a token parked until the step's current run ends
	// (omitted when false).
	Queued bool `json:"queued,omitempty"`
}

// WhenError is one arc whose when failed to render under on_when_error:
// treat_as_false.
type WhenError struct {
	// Arc is the arc's target step; Error the render error.
	Arc   string `json:"arc"`
	Error string `json:"error"`
}

// NextEvaluated is the payload of next.evaluated: one routing decision on
// a step's boundary. It has three shapes: the arcs evaluated (Event, Mode,
// Matched, Fired, WhenErrors), the on_step_fail route_edge policy (Event,
// Policy, Matched, Fired) and a routing that could not be computed
// (Error, empty Matched and Fired).
type NextEvaluated struct {
	attrs
	// Event is the boundary event the arcs were evaluated on (omitted
	// when empty).
	Event types.EventType `json:"event,omitempty"`
	// Mode is the next's mode, exclusive or inclusive (omitted when
	// empty).
	Mode string `json:"mode,omitempty"`
	// Policy is the on_step_fail policy that routed (omitted when empty).
	Policy string `json:"policy,omitempty"`
	// Matched and Fired are the target steps of the arcs whose when held
	// and of the arcs taken (always present, [] when none).
	Matched []string `json:"matched" wire:"list"`
	Fired   []string `json:"fired" wire:"list"`
	// WhenErrors are the arcs whose when failed to render (omitted when
	// none).
	WhenErrors []WhenError `json:"when_errors,omitempty"`
	// Error is the message of a routing that failed (omitted when empty).
	Error string `json:"error,omitempty"`
}

// WorkflowFinished is the payload of workflow.finished.
type WorkflowFinished struct {
	attrs
	Status     types.Status `json:"status"`
	DurationMS int64        `json:"duration_ms"`
	// Failures are the execution's recorded failures; Compensated the
	// steps its rollback compensated (each omitted when empty).
	Failures    []string `json:"failures,omitempty"`
	Compensated []string `json:"compensated,omitempty"`
}

// PlaybookFinished is the payload of playbook.finished.
type PlaybookFinished struct {
	attrs
	Status types.Status `json:"status"`
	// Result is the execution's result (the last step's).
	Result     any   `json:"result"`
	DurationMS int64 `json:"duration_ms"`
}

// StepStarted is the payload of step.started: {"loop": true} for a loop
// step, {"reused": true} for a step run a rerun reuses (StepDone
// ReusedFrom), null otherwise.
type StepStarted struct {
	attrs
	Loop   bool `json:"loop,omitempty"`
	Reused bool `json:"reused,omitempty"`
}

// TaskStarted is the payload of task.started: null, or for a `kind:
// playbook` task the child execution it started.
type TaskStarted struct {
	attrs
	// ChildExecutionID is the child's id ("" : no child, null payload);
	// Path and Version the catalog entry it runs.
	ChildExecutionID string `json:"child_execution_id" wire:"null-if-zero"`
	Path             string `json:"path"`
	Version          int    `json:"version"`
}

// TaskAttemptStarted is the payload of task.attempt.started.
type TaskAttemptStarted struct {
	attrs
	// Kind is the task's tool kind.
	Kind string `json:"kind"`
}

// AttemptError is the error of a task attempt (types.TaskError on the
// wire: all four keys present).
type AttemptError struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	// Status is the HTTP status (0 when not an HTTP error).
	Status int `json:"status"`
}

// TaskAttempt is the payload of task.attempt.done and
// task.attempt.failed.
type TaskAttempt struct {
	attrs
	// Kind is the task's tool kind.
	Kind string `json:"kind"`
	// Error is the outcome's error (omitted when nil).
	Error *AttemptError `json:"error,omitempty"`
	// HTTPStatus is the HTTP response status (omitted when the tool is
	// not HTTP).
	HTTPStatus *int `json:"http_status,omitempty"`
	// Adopted marks an outcome adopted from an earlier delivery (omitted
	// when false).
	Adopted bool `json:"adopted,omitempty"`
	// Logs is the tail of the attempt's captured output, masked (omitted
	// when empty).
	Logs string `json:"logs,omitempty"`
	// Input is the attempt's rendered args and config as JSON, masked and
	// cut at a bound (worker.InputInEvent) with a marker (omitted when the
	// task was not rendered: an adopted outcome, a child playbook).
	Input string `json:"input,omitempty"`
	// LogsRef is a result reference to the attempt's whole log (masked)
	// in the results tier, when it is longer than Logs can carry (omitted
	// otherwise).
	LogsRef any `json:"logs_ref,omitempty"`
	// Inputs are the rendered configuration and args the attempt ran
	// with, recorded for a task whose result may be re-derived (`noetl
	// results repair`, shared/operations/gc Repairable: a duckdb task on an
	// in-memory database), masked like every payload; omitted otherwise.
	Inputs *TaskInputs `json:"inputs,omitempty"`
}

// TaskInputs are a task attempt's rendered inputs (TaskAttempt.Inputs).
type TaskInputs struct {
	Config map[string]any `json:"config,omitzero"`
	Args   map[string]any `json:"args,omitzero"`
}

// Map returns the error's wire form (nil for a nil error), the error
// object readers such as the timeline show.
func (e *AttemptError) Map() map[string]any {
	if e == nil {
		return nil
	}
	return encodeStruct(reflect.ValueOf(*e))
}

// PolicyTaskEvaluated is the payload of policy.task.evaluated: a task
// policy's decision after one attempt.
type PolicyTaskEvaluated struct {
	attrs
	// Rule is the index of the matched rule (-1: the default decision).
	Rule int `json:"rule"`
	// Do is the action taken; OutcomeStatus the attempt's outcome status.
	Do            types.Action `json:"do"`
	OutcomeStatus types.Status `json:"outcome_status"`
	// Exhausted marks a retry refused because the attempts ran out
	// (omitted when false).
	Exhausted bool `json:"exhausted,omitempty"`
	// DelayS is a delayed retry's delay in seconds (omitted when the
	// retry is not handed off).
	DelayS *float64 `json:"delay_s,omitempty"`
	// NextAttempt is the attempt number of a retry (omitted when none).
	NextAttempt *int `json:"next_attempt,omitempty"`
}

// TaskDone is the (empty: null on the wire) payload of task.done.
type TaskDone struct{ attrs }

// TaskFailed is the payload of task.failed.
type TaskFailed struct {
	attrs
	// Error is the task's error entry.
	Error map[string]any `json:"error"`
}

// TaskCanceled is the payload of task.canceled (a running attempt
// interrupted by a stop: shared/worker interrupt.go).
type TaskCanceled struct {
	attrs
	// Reason says what ended while the attempt ran (its execution, its
	// step run).
	Reason string `json:"reason"`
}

// StepForced is the payload of step.forced (control.ForceStep): an
// operator's hand-made end of a step run, the audit record of
// `noetl step complete|fail`.
type StepForced struct {
	attrs
	// Action is "complete" (a step.done follows) or "fail" (a
	// step.failed follows).
	Action string `json:"action"`
	// Principal is who did it (the api caller's identity).
	Principal string `json:"principal"`
	// Reason is why (the operator's words; omitted when none was
	// given).
	Reason string `json:"reason,omitempty"`
}

// StepDone is the payload of step.done.
type StepDone struct {
	attrs
	// Result is the step's result (a result reference when offloaded;
	// always present, null for none).
	Result any `json:"result"`
	// Ctx and Step are the unit's ctx and step-scope patches (policy
	// set_ctx, set step.*), merged by the transition (each omitted when
	// empty).
	Ctx  map[string]any `json:"ctx,omitempty"`
	Step map[string]any `json:"step,omitempty"`
	// Loop marks the loop step's own step.done, after its loop.done
	// (omitted when false).
	Loop bool `json:"loop,omitempty"`
	// ReusedFrom marks the step run of a rerun that was not run but
	// completed with the recorded end of a step run of the execution it
	// reruns (omitted otherwise). The event is the run's boundary like
	// any other step.done: folding it gives the same state.
	ReusedFrom *ReusedFrom `json:"reused_from,omitempty"`
}

// ReusedFrom is the step run a rerun's reused step run stands for
// (StepDone.ReusedFrom): {"execution_id", "step_run"}.
type ReusedFrom struct {
	ExecutionID string `json:"execution_id"`
	StepRun     int    `json:"step_run"`
}

// StepFailed is the payload of step.failed.
type StepFailed struct {
	attrs
	// Error is the step's error entry.
	Error any `json:"error"`
	// Iteration is, for a loop that failed fast, the index of the
	// iteration that failed it (omitted otherwise).
	Iteration *int `json:"iteration,omitempty"`
}

// StepCanceled is the payload of step.canceled.
type StepCanceled struct {
	attrs
	// Reason is the stop's error kind (canceled, timeout, halted);
	// Message says why.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// LoopStarted is the payload of loop.started.
type LoopStarted struct {
	attrs
	// Total is the number of iterations (omitted for a cursor loop,
	// whose rows are not known up front).
	Total *int `json:"total,omitempty"`
	// Mode is sequential, parallel or cursor; MaxInFlight the iterations
	// run at once.
	Mode        string `json:"mode"`
	MaxInFlight int    `json:"max_in_flight"`
	// FrameMaxRows is a cursor loop's frame size (omitted otherwise).
	FrameMaxRows *int `json:"frame_max_rows,omitempty"`
}

// IterationStarted is the payload of loop.iteration.started.
type IterationStarted struct {
	attrs
	// Index is the 0-based iteration; Total the loop's iterations.
	Index int `json:"index"`
	Total int `json:"total"`
}

// IterationDone is the payload of loop.iteration.done.
type IterationDone struct {
	attrs
	// Result is the iteration's result (always present).
	Result any `json:"result"`
	// Ctx and Step are the unit's patches (each omitted when empty).
	Ctx  map[string]any `json:"ctx,omitempty"`
	Step map[string]any `json:"step,omitempty"`
	// Index is the 0-based iteration.
	Index int `json:"index"`
}

// IterationFailed is the payload of loop.iteration.failed.
type IterationFailed struct {
	attrs
	// Error is the iteration's error entry.
	Error any `json:"error"`
	// Index is the 0-based iteration.
	Index int `json:"index"`
}

// IterationCanceled is the payload of loop.iteration.canceled.
type IterationCanceled struct {
	attrs
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// LoopDone is the payload of loop.done.
type LoopDone struct {
	attrs
	// Result is the loop's assembled result (or its result reference).
	Result any `json:"result"`
	// Total is the number of iterations (for a cursor loop, of rows
	// processed).
	Total int `json:"total"`
	// Profile is the iterations' end profile (omitted when none ended
	// with a clock).
	Profile *LoopProfile `json:"profile,omitempty"`
	// Ctx is the iterations' ctx patches, merged with the loop's end
	// (omitted when nil).
	Ctx map[string]any `json:"ctx,omitzero"`
}

// ProfileBuckets is the number of time buckets of a LoopProfile.
const ProfileBuckets = 60

// LoopProfile is when a loop run's iterations ended, in ProfileBuckets
// equal time buckets: the density an operator sees without reading one
// record per iteration (a 100,000-iteration loop's records are 100,000
// documents). It is computed once, from the iteration records the loop's
// completion reads anyway (engine.ProfileOf), travels in loop.done's
// payload ("profile") and is kept in the step's LoopStatus.
type LoopProfile struct {
	// FirstUS and LastUS are the earliest and latest iteration end, as
	// the records' clocks (hybrid logical clocks: microseconds since the
	// Unix epoch, types.HLC).
	FirstUS int64 `json:"first_us"`
	LastUS  int64 `json:"last_us"`
	// Ended counts the iterations that ended in each bucket; bucket i
	// covers [FirstUS + i·w, FirstUS + (i+1)·w) with w = (LastUS −
	// FirstUS + 1) / len(Ended). Failed counts those that ended in error
	// (nil when none did).
	Ended  []int `json:"ended"`
	Failed []int `json:"failed,omitempty"`
}

// ResultStored is the payload of result.stored.
type ResultStored struct {
	attrs
	// Reference is the result reference of the stored result.
	Reference any `json:"reference"`
}

// ResultLost is the payload of result.lost (the results scrub,
// shared/operations/gc).
type ResultLost struct {
	attrs
	// URI and Key name the result and its object; Generation is the
	// generation its reference records (0: none).
	URI        string `json:"uri"`
	Key        string `json:"key"`
	Generation int64  `json:"generation,omitempty"`
	// Lost says how: gone, replaced, changed, undecodable
	// (results.LostKind).
	Lost string `json:"lost"`
	// Message is the read's error.
	Message string `json:"message"`
}

// ResultRepaired is the payload of result.repaired and
// result.repair_failed (`noetl results repair`, shared/operations/gc).
type ResultRepaired struct {
	attrs
	// URI and Key name the result and its object.
	URI string `json:"uri"`
	Key string `json:"key"`
	// Lost is the generation the reference records (the one repaired);
	// Generation the new object's (result.repaired only).
	Lost       int64 `json:"lost_generation,omitempty"`
	Generation int64 `json:"generation,omitempty"`
	// SHA256 is the digest the re-derived bytes matched (result.repaired)
	// or gave (result.repair_failed, when the task ran).
	SHA256 string `json:"sha256,omitempty"`
	// Task is the producing task that ran again; Principal who asked;
	// RequestID names the request (`noetl results repair` waits for it).
	Task      string `json:"task"`
	Principal string `json:"principal"`
	RequestID string `json:"request_id"`
	// Message says why a repair failed (result.repair_failed only).
	Message string `json:"message,omitempty"`
}

// CancelRequested is the payload of playbook.cancel.requested.
type CancelRequested struct {
	attrs
	Reason string `json:"reason"`
}

// ExecutionTimedOut is the payload of playbook.timed_out.
type ExecutionTimedOut struct {
	attrs
	// Message says which deadline passed; Kind is types.ErrKindTimeout.
	Message string `json:"message"`
	Kind    string `json:"kind"`
}

// UnitDeadLettered is the payload of unit.dead_lettered.
type UnitDeadLettered struct {
	attrs
	// DLQID is the DLQ entry's id; Attempts the deliveries the unit had;
	// Error the last error's message.
	DLQID    string `json:"dlq_id"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
}

// UnitReclaimed is the payload of unit.reclaimed.
type UnitReclaimed struct {
	attrs
	// Reclaim is the unit's re-dispatch count; Holder the lease holder
	// that stopped renewing.
	Reclaim int    `json:"reclaim"`
	Holder  string `json:"holder"`
}

// UnitHandedOff is the payload of unit.handed_off.
type UnitHandedOff struct {
	attrs
	// Reason says why; TaskIndex and Jumps are where the new unit
	// resumes; RanS the seconds the unit ran.
	Reason    string  `json:"reason"`
	TaskIndex int     `json:"task_index"`
	Jumps     int     `json:"jumps"`
	RanS      float64 `json:"ran_s"`
}

// CompensationStarted is the payload of compensation.started.
type CompensationStarted struct {
	attrs
	// Plan is the rollback's "<step>><compensating step>" entries;
	// Failures the failures that started it (null when none).
	Plan     []string `json:"plan"`
	Failures []string `json:"failures"`
}
