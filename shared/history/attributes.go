package history

import "github.com/noetl/gcpengine/shared/types"

// An error entry (the Error fields below typed any or map[string]any) is
// the engine's error object as the step's state, the iteration records and
// the templates (event.error, output.error) hold it: kind, message,
// retryable and, by origin, task, status, dlq_id (engine.ErrorMap and the
// worker's refusals). It travels unchanged.

// ExecutionRequested is the payload of playbook.execution.requested (the
// api's start of an execution).
type ExecutionRequested struct {
	// Playbook is the catalog path started; ParentID the parent
	// execution's id ("" for a top-level execution).
	Playbook string
	ParentID string
	// Trace is the caller's W3C trace context (traceparent, tracestate,
	// baggage); omitted when empty.
	Trace map[string]string
	// RerunOf is, for a rerun (POST /executions/{id}/rerun), the execution
	// it reruns, and RerunFrom where it starts ("failed", a step name, or
	// "" for the start); both omitted when empty. The step runs it reuses
	// are in its log as step.done events with reused_from (StepDone).
	RerunOf   string
	RerunFrom string
}

func (a ExecutionRequested) encode() map[string]any {
	m := map[string]any{"playbook": a.Playbook, "parent_id": a.ParentID}
	if a.RerunOf != "" {
		m["rerun_of"] = a.RerunOf
	}
	if a.RerunFrom != "" {
		m["rerun_from"] = a.RerunFrom
	}
	if len(a.Trace) > 0 {
		tc := map[string]any{}
		for k, v := range a.Trace {
			tc[k] = v
		}
		m["trace"] = tc
	}
	return m
}

func (a *ExecutionRequested) decode(r *reader) {
	a.Playbook, a.ParentID = r.str("playbook"), r.str("parent_id")
	a.RerunOf, a.RerunFrom = r.str("rerun_of"), r.str("rerun_from")
	if tc := r.object("trace"); tc != nil {
		a.Trace = map[string]string{}
		for k, v := range tc {
			s, ok := v.(string)
			if !ok {
				r.bad("trace."+k, "a string", v)
				continue
			}
			a.Trace[k] = s
		}
	}
}

// PlaybookStarted is the payload of playbook.started.
type PlaybookStarted struct {
	Playbook string
	ParentID string
}

func (a PlaybookStarted) encode() map[string]any {
	return map[string]any{"playbook": a.Playbook, "parent_id": a.ParentID}
}

func (a *PlaybookStarted) decode(r *reader) {
	a.Playbook, a.ParentID = r.str("playbook"), r.str("parent_id")
}

// WorkflowStarted is the (empty: null on the wire) payload of
// workflow.started.
type WorkflowStarted struct{}

func (WorkflowStarted) encode() map[string]any { return nil }
func (*WorkflowStarted) decode(*reader)        {}

// AdmitEvaluated is the payload of policy.admit.evaluated: the admission
// decision of a step run and the index of the rule that made it (-1: the
// default).
type AdmitEvaluated struct {
	Allowed bool
	Rule    int
}

func (a AdmitEvaluated) encode() map[string]any {
	return map[string]any{"allowed": a.Allowed, "rule": a.Rule}
}

func (a *AdmitEvaluated) decode(r *reader) {
	a.Allowed, a.Rule = r.boolean("allowed"), int(r.integer("rule"))
}

// StepScheduled is the payload of step.scheduled.
type StepScheduled struct {
	// From is the step whose arc scheduled the run ("" for the entry
	// step); Args the token's rendered args (null when none).
	From string
	Args map[string]any
	// Queued marks a token parked until the step's current run ends
	// (omitted when false).
	Queued bool
}

func (a StepScheduled) encode() map[string]any {
	m := map[string]any{"from": a.From, "args": a.Args}
	if a.Queued {
		m["queued"] = true
	}
	return m
}

func (a *StepScheduled) decode(r *reader) {
	a.From, a.Args, a.Queued = r.str("from"), r.object("args"), r.boolean("queued")
}

// WhenError is one arc whose when failed to render under on_when_error:
// treat_as_false.
type WhenError struct {
	// Arc is the arc's target step; Error the render error.
	Arc   string
	Error string
}

// NextEvaluated is the payload of next.evaluated: one routing decision on
// a step's boundary. It has three shapes: the arcs evaluated (Event, Mode,
// Matched, Fired, WhenErrors), the on_step_fail route_edge policy (Event,
// Policy, Matched, Fired) and a routing that could not be computed
// (Error, empty Matched and Fired).
type NextEvaluated struct {
	// Event is the boundary event the arcs were evaluated on (omitted
	// when empty).
	Event types.EventType
	// Mode is the next's mode, exclusive or inclusive (omitted when
	// empty).
	Mode string
	// Policy is the on_step_fail policy that routed (omitted when empty).
	Policy string
	// Matched and Fired are the target steps of the arcs whose when held
	// and of the arcs taken (always present, [] when none).
	Matched []string
	Fired   []string
	// WhenErrors are the arcs whose when failed to render (omitted when
	// none).
	WhenErrors []WhenError
	// Error is the message of a routing that failed (omitted when empty).
	Error string
}

func (a NextEvaluated) encode() map[string]any {
	m := map[string]any{"matched": strList(a.Matched), "fired": strList(a.Fired)}
	if a.Event != "" {
		m["event"] = string(a.Event)
	}
	if a.Mode != "" {
		m["mode"] = a.Mode
	}
	if a.Policy != "" {
		m["policy"] = a.Policy
	}
	if len(a.WhenErrors) > 0 {
		l := make([]any, 0, len(a.WhenErrors))
		for _, w := range a.WhenErrors {
			l = append(l, map[string]any{"arc": w.Arc, "error": w.Error})
		}
		m["when_errors"] = l
	}
	if a.Error != "" {
		m["error"] = a.Error
	}
	return m
}

func (a *NextEvaluated) decode(r *reader) {
	a.Event, a.Mode, a.Policy = types.EventType(r.str("event")), r.str("mode"), r.str("policy")
	a.Matched, a.Fired, a.Error = r.strings("matched"), r.strings("fired"), r.str("error")
	for _, x := range r.list("when_errors") {
		w, ok := x.(map[string]any)
		if !ok {
			r.bad("when_errors", "a list of objects", x)
			continue
		}
		sub := &reader{t: r.t, m: w}
		a.WhenErrors = append(a.WhenErrors, WhenError{Arc: sub.str("arc"), Error: sub.str("error")})
		sub.unknown()
		if sub.err != nil {
			r.fail("%v (in when_errors)", sub.err)
		}
	}
}

// WorkflowFinished is the payload of workflow.finished.
type WorkflowFinished struct {
	Status     types.Status
	DurationMS int64
	// Failures are the execution's recorded failures; Compensated the
	// steps its rollback compensated (each omitted when empty).
	Failures    []string
	Compensated []string
}

func (a WorkflowFinished) encode() map[string]any {
	m := map[string]any{"status": a.Status, "duration_ms": a.DurationMS}
	if len(a.Failures) > 0 {
		m["failures"] = a.Failures
	}
	if len(a.Compensated) > 0 {
		m["compensated"] = a.Compensated
	}
	return m
}

func (a *WorkflowFinished) decode(r *reader) {
	a.Status, a.DurationMS = types.Status(r.str("status")), r.integer("duration_ms")
	a.Failures, a.Compensated = r.strings("failures"), r.strings("compensated")
}

// PlaybookFinished is the payload of playbook.finished.
type PlaybookFinished struct {
	Status types.Status
	// Result is the execution's result (the last step's).
	Result     any
	DurationMS int64
}

func (a PlaybookFinished) encode() map[string]any {
	return map[string]any{"status": a.Status, "result": a.Result, "duration_ms": a.DurationMS}
}

func (a *PlaybookFinished) decode(r *reader) {
	a.Status, a.Result, a.DurationMS = types.Status(r.str("status")), r.value("result"), r.integer("duration_ms")
}

// StepStarted is the payload of step.started: {"loop": true} for a loop
// step, {"reused": true} for a step run a rerun reuses (StepDone
// ReusedFrom), null otherwise.
type StepStarted struct {
	Loop   bool
	Reused bool
}

func (a StepStarted) encode() map[string]any {
	if !a.Loop && !a.Reused {
		return nil
	}
	m := map[string]any{}
	if a.Loop {
		m["loop"] = true
	}
	if a.Reused {
		m["reused"] = true
	}
	return m
}

func (a *StepStarted) decode(r *reader) { a.Loop, a.Reused = r.boolean("loop"), r.boolean("reused") }

// TaskStarted is the payload of task.started: null, or for a `kind:
// playbook` task the child execution it started.
type TaskStarted struct {
	// ChildExecutionID is the child's id ("" : no child, null payload);
	// Path and Version the catalog entry it runs.
	ChildExecutionID string
	Path             string
	Version          int
}

func (a TaskStarted) encode() map[string]any {
	if a.ChildExecutionID == "" {
		return nil
	}
	return map[string]any{"child_execution_id": a.ChildExecutionID, "path": a.Path, "version": a.Version}
}

func (a *TaskStarted) decode(r *reader) {
	a.ChildExecutionID, a.Path, a.Version = r.str("child_execution_id"), r.str("path"), int(r.integer("version"))
}

// TaskAttemptStarted is the payload of task.attempt.started.
type TaskAttemptStarted struct {
	// Kind is the task's tool kind.
	Kind string
}

func (a TaskAttemptStarted) encode() map[string]any { return map[string]any{"kind": a.Kind} }
func (a *TaskAttemptStarted) decode(r *reader)      { a.Kind = r.str("kind") }

// AttemptError is the error of a task attempt (types.TaskError on the
// wire: all four keys present).
type AttemptError struct {
	Kind      string
	Message   string
	Retryable bool
	// Status is the HTTP status (0 when not an HTTP error).
	Status int
}

// TaskAttempt is the payload of task.attempt.done and
// task.attempt.failed.
type TaskAttempt struct {
	// Kind is the task's tool kind.
	Kind string
	// Error is the outcome's error (omitted when nil).
	Error *AttemptError
	// HTTPStatus is the HTTP response status (omitted when the tool is
	// not HTTP).
	HTTPStatus *int
	// Adopted marks an outcome adopted from an earlier delivery (omitted
	// when false).
	Adopted bool
	// Logs is the tail of the attempt's captured output, masked (omitted
	// when empty).
	Logs string
	// Input is the attempt's rendered args and config as JSON, masked and
	// cut at a bound (worker.InputInEvent) with a marker (omitted when the
	// task was not rendered: an adopted outcome, a child playbook).
	Input string
	// LogsRef is a result reference to the attempt's whole log (masked)
	// in the results tier, when it is longer than Logs can carry (omitted
	// otherwise).
	LogsRef any
	// Inputs are the rendered configuration and args the attempt ran
	// with, recorded for a task whose result may be re-derived (`noetl
	// results repair`, shared/operations/gc Repairable: a duckdb task on an
	// in-memory database), masked like every payload; omitted otherwise.
	Inputs *TaskInputs
}

// TaskInputs are a task attempt's rendered inputs (TaskAttempt.Inputs).
type TaskInputs struct {
	Config map[string]any
	Args   map[string]any
}

// Map returns the error's wire form (nil for a nil error), the error
// object readers such as the timeline show.
func (e *AttemptError) Map() map[string]any {
	if e == nil {
		return nil
	}
	return map[string]any{"kind": e.Kind, "message": e.Message, "retryable": e.Retryable, "status": e.Status}
}

func (a TaskAttempt) encode() map[string]any {
	m := map[string]any{"kind": a.Kind}
	if a.Error != nil {
		m["error"] = a.Error.Map()
	}
	if a.HTTPStatus != nil {
		m["http_status"] = *a.HTTPStatus
	}
	if a.Adopted {
		m["adopted"] = true
	}
	if a.Logs != "" {
		m["logs"] = a.Logs
	}
	if a.Input != "" {
		m["input"] = a.Input
	}
	if a.LogsRef != nil {
		m["logs_ref"] = a.LogsRef
	}
	if a.Inputs != nil {
		in := map[string]any{}
		if a.Inputs.Config != nil {
			in["config"] = a.Inputs.Config
		}
		if a.Inputs.Args != nil {
			in["args"] = a.Inputs.Args
		}
		m["inputs"] = in
	}
	return m
}

func (a *TaskAttempt) decode(r *reader) {
	a.Kind, a.HTTPStatus, a.Adopted, a.Logs, a.Input, a.LogsRef = r.str("kind"), r.intp("http_status"), r.boolean("adopted"), r.str("logs"), r.str("input"), r.value("logs_ref")
	if em := r.object("error"); em != nil {
		sub := &reader{t: r.t, m: em}
		a.Error = &AttemptError{Kind: sub.str("kind"), Message: sub.str("message"), Retryable: sub.boolean("retryable"), Status: int(sub.integer("status"))}
		sub.unknown()
		if sub.err != nil {
			r.fail("%v (in error)", sub.err)
		}
	}
	if in := r.object("inputs"); in != nil {
		sub := &reader{t: r.t, m: in}
		a.Inputs = &TaskInputs{Config: sub.object("config"), Args: sub.object("args")}
		sub.unknown()
		if sub.err != nil {
			r.fail("%v (in inputs)", sub.err)
		}
	}
}

// PolicyTaskEvaluated is the payload of policy.task.evaluated: a task
// policy's decision after one attempt.
type PolicyTaskEvaluated struct {
	// Rule is the index of the matched rule (-1: the default decision).
	Rule int
	// Do is the action taken; OutcomeStatus the attempt's outcome status.
	Do            types.Action
	OutcomeStatus types.Status
	// Exhausted marks a retry refused because the attempts ran out
	// (omitted when false).
	Exhausted bool
	// DelayS is a delayed retry's delay in seconds (omitted when the
	// retry is not handed off).
	DelayS *float64
	// NextAttempt is the attempt number of a retry (omitted when none).
	NextAttempt *int
}

func (a PolicyTaskEvaluated) encode() map[string]any {
	m := map[string]any{"rule": a.Rule, "do": string(a.Do), "outcome_status": string(a.OutcomeStatus)}
	if a.Exhausted {
		m["exhausted"] = true
	}
	if a.DelayS != nil {
		m["delay_s"] = *a.DelayS
	}
	if a.NextAttempt != nil {
		m["next_attempt"] = *a.NextAttempt
	}
	return m
}

func (a *PolicyTaskEvaluated) decode(r *reader) {
	a.Rule, a.Do, a.OutcomeStatus = int(r.integer("rule")), types.Action(r.str("do")), types.Status(r.str("outcome_status"))
	a.Exhausted, a.DelayS, a.NextAttempt = r.boolean("exhausted"), r.numberp("delay_s"), r.intp("next_attempt")
}

// TaskDone is the (empty: null on the wire) payload of task.done.
type TaskDone struct{}

func (TaskDone) encode() map[string]any { return nil }
func (*TaskDone) decode(*reader)        {}

// TaskFailed is the payload of task.failed.
type TaskFailed struct {
	// Error is the task's error entry.
	Error map[string]any
}

func (a TaskFailed) encode() map[string]any { return map[string]any{"error": a.Error} }
func (a *TaskFailed) decode(r *reader)      { a.Error = r.object("error") }

// TaskCanceled is the payload of task.canceled (a running attempt
// interrupted by a stop: shared/worker interrupt.go).
type TaskCanceled struct {
	// Reason says what ended while the attempt ran (its execution, its
	// step run).
	Reason string
}

func (a TaskCanceled) encode() map[string]any { return map[string]any{"reason": a.Reason} }
func (a *TaskCanceled) decode(r *reader)      { a.Reason = r.str("reason") }

// StepForced is the payload of step.forced (control.ForceStep): an
// operator's hand-made end of a step run, the audit record of
// `noetl step complete|fail`.
type StepForced struct {
	// Action is "complete" (a step.done follows) or "fail" (a
	// step.failed follows).
	Action string
	// Principal is who did it (the api caller's identity).
	Principal string
	// Reason is why (the operator's words; omitted when none was
	// given).
	Reason string
}

func (a StepForced) encode() map[string]any {
	m := map[string]any{"action": a.Action, "principal": a.Principal}
	if a.Reason != "" {
		m["reason"] = a.Reason
	}
	return m
}

func (a *StepForced) decode(r *reader) {
	a.Action, a.Principal = r.str("action"), r.str("principal")
	if r.has("reason") {
		a.Reason = r.str("reason")
	}
}

// StepDone is the payload of step.done.
type StepDone struct {
	// Result is the step's result (a result reference when offloaded;
	// always present, null for none).
	Result any
	// Ctx and Step are the unit's ctx and step-scope patches (policy
	// set_ctx, set step.*), merged by the transition (each omitted when
	// empty).
	Ctx  map[string]any
	Step map[string]any
	// Loop marks the loop step's own step.done, after its loop.done
	// (omitted when false).
	Loop bool
	// ReusedFrom marks the step run of a rerun that was not run but
	// completed with the recorded end of a step run of the execution it
	// reruns (omitted otherwise). The event is the run's boundary like
	// any other step.done: folding it gives the same state.
	ReusedFrom *ReusedFrom
}

// ReusedFrom is the step run a rerun's reused step run stands for
// (StepDone.ReusedFrom): {"execution_id", "step_run"}.
type ReusedFrom struct {
	ExecutionID string
	StepRun     int
}

func (a StepDone) encode() map[string]any {
	m := map[string]any{"result": a.Result}
	if len(a.Ctx) > 0 {
		m["ctx"] = a.Ctx
	}
	if len(a.Step) > 0 {
		m["step"] = a.Step
	}
	if a.Loop {
		m["loop"] = true
	}
	if a.ReusedFrom != nil {
		m["reused_from"] = map[string]any{"execution_id": a.ReusedFrom.ExecutionID, "step_run": a.ReusedFrom.StepRun}
	}
	return m
}

func (a *StepDone) decode(r *reader) {
	a.Result, a.Ctx, a.Step, a.Loop = r.value("result"), r.object("ctx"), r.object("step"), r.boolean("loop")
	if rm := r.object("reused_from"); rm != nil {
		sub := &reader{t: r.t, m: rm}
		a.ReusedFrom = &ReusedFrom{ExecutionID: sub.str("execution_id"), StepRun: int(sub.integer("step_run"))}
		sub.unknown()
		if sub.err != nil {
			r.fail("%v (in reused_from)", sub.err)
		}
	}
}

// StepFailed is the payload of step.failed.
type StepFailed struct {
	// Error is the step's error entry.
	Error any
	// Iteration is, for a loop that failed fast, the index of the
	// iteration that failed it (omitted otherwise).
	Iteration *int
}

func (a StepFailed) encode() map[string]any {
	m := map[string]any{"error": a.Error}
	if a.Iteration != nil {
		m["iteration"] = *a.Iteration
	}
	return m
}

func (a *StepFailed) decode(r *reader) { a.Error, a.Iteration = r.value("error"), r.intp("iteration") }

// StepCanceled is the payload of step.canceled.
type StepCanceled struct {
	// Reason is the stop's error kind (canceled, timeout, halted);
	// Message says why.
	Reason  string
	Message string
}

func (a StepCanceled) encode() map[string]any {
	return map[string]any{"reason": a.Reason, "message": a.Message}
}

func (a *StepCanceled) decode(r *reader) { a.Reason, a.Message = r.str("reason"), r.str("message") }

// LoopStarted is the payload of loop.started.
type LoopStarted struct {
	// Total is the number of iterations (omitted for a cursor loop,
	// whose rows are not known up front).
	Total *int
	// Mode is sequential, parallel or cursor; MaxInFlight the iterations
	// run at once.
	Mode        string
	MaxInFlight int
	// FrameMaxRows is a cursor loop's frame size (omitted otherwise).
	FrameMaxRows *int
}

func (a LoopStarted) encode() map[string]any {
	m := map[string]any{"mode": a.Mode, "max_in_flight": a.MaxInFlight}
	if a.Total != nil {
		m["total"] = *a.Total
	}
	if a.FrameMaxRows != nil {
		m["frame_max_rows"] = *a.FrameMaxRows
	}
	return m
}

func (a *LoopStarted) decode(r *reader) {
	a.Total, a.Mode, a.MaxInFlight, a.FrameMaxRows = r.intp("total"), r.str("mode"), int(r.integer("max_in_flight")), r.intp("frame_max_rows")
}

// IterationStarted is the payload of loop.iteration.started.
type IterationStarted struct {
	// Index is the 0-based iteration; Total the loop's iterations.
	Index int
	Total int
}

func (a IterationStarted) encode() map[string]any {
	return map[string]any{"index": a.Index, "total": a.Total}
}

func (a *IterationStarted) decode(r *reader) {
	a.Index, a.Total = int(r.integer("index")), int(r.integer("total"))
}

// IterationDone is the payload of loop.iteration.done.
type IterationDone struct {
	// Result is the iteration's result (always present).
	Result any
	// Ctx and Step are the unit's patches (each omitted when empty).
	Ctx  map[string]any
	Step map[string]any
	// Index is the 0-based iteration.
	Index int
}

func (a IterationDone) encode() map[string]any {
	m := StepDone{Result: a.Result, Ctx: a.Ctx, Step: a.Step}.encode()
	m["index"] = a.Index
	return m
}

func (a *IterationDone) decode(r *reader) {
	a.Result, a.Ctx, a.Step, a.Index = r.value("result"), r.object("ctx"), r.object("step"), int(r.integer("index"))
}

// IterationFailed is the payload of loop.iteration.failed.
type IterationFailed struct {
	// Error is the iteration's error entry.
	Error any
	// Index is the 0-based iteration.
	Index int
}

func (a IterationFailed) encode() map[string]any {
	return map[string]any{"error": a.Error, "index": a.Index}
}

func (a *IterationFailed) decode(r *reader) {
	a.Error, a.Index = r.value("error"), int(r.integer("index"))
}

// IterationCanceled is the payload of loop.iteration.canceled.
type IterationCanceled struct {
	Index  int
	Reason string
}

func (a IterationCanceled) encode() map[string]any {
	return map[string]any{"index": a.Index, "reason": a.Reason}
}

func (a *IterationCanceled) decode(r *reader) {
	a.Index, a.Reason = int(r.integer("index")), r.str("reason")
}

// LoopDone is the payload of loop.done.
type LoopDone struct {
	// Result is the loop's assembled result (or its result reference).
	Result any
	// Total is the number of iterations (for a cursor loop, of rows
	// processed).
	Total int
	// Profile is the iterations' end profile (omitted when none ended
	// with a clock).
	Profile *LoopProfile
	// Ctx is the iterations' ctx patches, merged with the loop's end
	// (omitted when nil).
	Ctx map[string]any
}

func (a LoopDone) encode() map[string]any {
	m := map[string]any{"result": a.Result, "total": a.Total}
	if a.Profile != nil {
		m["profile"] = a.Profile
	}
	if a.Ctx != nil {
		m["ctx"] = a.Ctx
	}
	return m
}

func (a *LoopDone) decode(r *reader) {
	a.Result, a.Total, a.Ctx = r.value("result"), int(r.integer("total")), r.object("ctx")
	var p LoopProfile
	if r.into("profile", &p) {
		a.Profile = &p
	}
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
	// Reference is the result reference of the stored result.
	Reference any
}

func (a ResultStored) encode() map[string]any { return map[string]any{"reference": a.Reference} }
func (a *ResultStored) decode(r *reader)      { a.Reference = r.value("reference") }

// ResultLost is the payload of result.lost (the results scrub,
// shared/operations/gc).
type ResultLost struct {
	// URI and Key name the result and its object; Generation is the
	// generation its reference records (0: none).
	URI        string
	Key        string
	Generation int64
	// Lost says how: gone, replaced, changed, undecodable
	// (results.LostKind).
	Lost string
	// Message is the read's error.
	Message string
}

func (a ResultLost) encode() map[string]any {
	m := map[string]any{"uri": a.URI, "key": a.Key, "lost": a.Lost, "message": a.Message}
	if a.Generation > 0 {
		m["generation"] = a.Generation
	}
	return m
}

func (a *ResultLost) decode(r *reader) {
	a.URI, a.Key, a.Lost, a.Message = r.str("uri"), r.str("key"), r.str("lost"), r.str("message")
	if r.has("generation") {
		a.Generation = r.integer("generation")
	}
}

// ResultRepaired is the payload of result.repaired and
// result.repair_failed (`noetl results repair`, shared/operations/gc).
type ResultRepaired struct {
	// URI and Key name the result and its object.
	URI string
	Key string
	// Lost is the generation the reference records (the one repaired);
	// Generation the new object's (result.repaired only).
	Lost       int64
	Generation int64
	// SHA256 is the digest the re-derived bytes matched (result.repaired)
	// or gave (result.repair_failed, when the task ran).
	SHA256 string
	// Task is the producing task that ran again; Principal who asked;
	// RequestID names the request (`noetl results repair` waits for it).
	Task      string
	Principal string
	RequestID string
	// Message says why a repair failed (result.repair_failed only).
	Message string
}

func (a ResultRepaired) encode() map[string]any {
	m := map[string]any{"uri": a.URI, "key": a.Key, "task": a.Task, "principal": a.Principal, "request_id": a.RequestID}
	for k, v := range map[string]int64{"lost_generation": a.Lost, "generation": a.Generation} {
		if v > 0 {
			m[k] = v
		}
	}
	for k, v := range map[string]string{"sha256": a.SHA256, "message": a.Message} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func (a *ResultRepaired) decode(r *reader) {
	a.URI, a.Key, a.Task, a.Principal, a.RequestID = r.str("uri"), r.str("key"), r.str("task"), r.str("principal"), r.str("request_id")
	if r.has("lost_generation") {
		a.Lost = r.integer("lost_generation")
	}
	if r.has("generation") {
		a.Generation = r.integer("generation")
	}
	if r.has("sha256") {
		a.SHA256 = r.str("sha256")
	}
	if r.has("message") {
		a.Message = r.str("message")
	}
}

// CancelRequested is the payload of playbook.cancel.requested.
type CancelRequested struct {
	Reason string
}

func (a CancelRequested) encode() map[string]any { return map[string]any{"reason": a.Reason} }
func (a *CancelRequested) decode(r *reader)      { a.Reason = r.str("reason") }

// ExecutionTimedOut is the payload of playbook.timed_out.
type ExecutionTimedOut struct {
	// Message says which deadline passed; Kind is types.ErrKindTimeout.
	Message string
	Kind    string
}

func (a ExecutionTimedOut) encode() map[string]any {
	return map[string]any{"message": a.Message, "kind": a.Kind}
}

func (a *ExecutionTimedOut) decode(r *reader) { a.Message, a.Kind = r.str("message"), r.str("kind") }

// UnitDeadLettered is the payload of unit.dead_lettered.
type UnitDeadLettered struct {
	// DLQID is the DLQ entry's id; Attempts the deliveries the unit had;
	// Error the last error's message.
	DLQID    string
	Attempts int
	Error    string
}

func (a UnitDeadLettered) encode() map[string]any {
	return map[string]any{"dlq_id": a.DLQID, "attempts": a.Attempts, "error": a.Error}
}

func (a *UnitDeadLettered) decode(r *reader) {
	a.DLQID, a.Attempts, a.Error = r.str("dlq_id"), int(r.integer("attempts")), r.str("error")
}

// UnitReclaimed is the payload of unit.reclaimed.
type UnitReclaimed struct {
	// Reclaim is the unit's re-dispatch count; Holder the lease holder
	// that stopped renewing.
	Reclaim int
	Holder  string
}

func (a UnitReclaimed) encode() map[string]any {
	return map[string]any{"reclaim": a.Reclaim, "holder": a.Holder}
}

func (a *UnitReclaimed) decode(r *reader) {
	a.Reclaim, a.Holder = int(r.integer("reclaim")), r.str("holder")
}

// UnitHandedOff is the payload of unit.handed_off.
type UnitHandedOff struct {
	// Reason says why; TaskIndex and Jumps are where the new unit
	// resumes; RanS the seconds the unit ran.
	Reason    string
	TaskIndex int
	Jumps     int
	RanS      float64
}

func (a UnitHandedOff) encode() map[string]any {
	return map[string]any{"reason": a.Reason, "task_index": a.TaskIndex, "jumps": a.Jumps, "ran_s": a.RanS}
}

func (a *UnitHandedOff) decode(r *reader) {
	a.Reason, a.TaskIndex, a.Jumps, a.RanS = r.str("reason"), int(r.integer("task_index")), int(r.integer("jumps")), r.number("ran_s")
}

// CompensationStarted is the payload of compensation.started.
type CompensationStarted struct {
	// Plan is the rollback's "<step>><compensating step>" entries;
	// Failures the failures that started it (null when none).
	Plan     []string
	Failures []string
}

func (a CompensationStarted) encode() map[string]any {
	return map[string]any{"plan": a.Plan, "failures": a.Failures}
}

func (a *CompensationStarted) decode(r *reader) {
	a.Plan, a.Failures = r.strings("plan"), r.strings("failures")
}
