package engine

import (
	"fmt"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// Source is the event source name of events the engine produces.
const Source = "route"

// MaxStepRuns bounds how often one step may run in an execution (a guard
// against arcs that loop forever, e.g. pagination whose stop condition is
// never met).
const MaxStepRuns = 10000

// Options tunes the engine; the zero value is usable.
type Options struct {
	// DefaultMaxInFlight applies to parallel loops without max_in_flight
	// (default 10).
	DefaultMaxInFlight int
	// OnStepFail and OnWhenError are the failure policies when the
	// playbook's executor.spec.policy sets none (NoETL observability spec §8.8; defaults
	// halt and treat_as_false).
	OnStepFail, OnWhenError string
	// ExecutionDeadline bounds an execution when executor.spec.timeout_s
	// is not set (0: none; NOETL_EXECUTION_DEADLINE_S).
	ExecutionDeadline time.Duration
	// LoopTotal bounds a loop step run when its loop sets no
	// loop.spec.timeout_s (0: none; NOETL_TIMEOUTS_LOOP_TOTAL_MS).
	LoopTotal time.Duration
	// WhenTimeout is the wall-clock budget of one `when` the engine
	// evaluates — an arc's, an admission rule's, a task policy rule's —
	// (0: the template Limits' 2 s; NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS).
	// A `when` over budget is an evaluation error (on_when_error decides
	// for an arc).
	WhenTimeout time.Duration
	// TaskRetry and SinkRetry are the retry budgets of a task without a
	// policy whose error is retryable (zero: DefaultTaskRetry,
	// DefaultSinkRetry; NOETL_RETRIES_PLUGIN_*, NOETL_RETRIES_SINK_*); see
	// Options.DecideTask.
	TaskRetry, SinkRetry Budget
	// OnSinkFail is what a sink without a policy does when it fails
	// (OnSinkFailRetry when empty; NOETL_POLICIES_ON_SINK_FAIL).
	OnSinkFail string
}

// Engine is the pure transition function over one playbook. It is safe for
// concurrent use (it holds no mutable state).
type Engine struct {
	PB   *dsl.Playbook
	Opts Options
}

// New returns an engine for pb.
func New(pb *dsl.Playbook, opts Options) *Engine {
	if opts.DefaultMaxInFlight <= 0 {
		opts.DefaultMaxInFlight = 10
	}
	return &Engine{PB: pb, Opts: opts}
}

// NewState returns the initial state of a requested execution.
func NewState(executionID, parentID string, pb *dsl.Playbook, workload map[string]any, now time.Time) *State {
	name := pb.Metadata.Path
	if name == "" {
		name = pb.Metadata.Name
	}
	return &State{
		ExecutionID: executionID,
		ParentID:    parentID,
		Playbook:    name,
		Status:      ExecRequested,
		Workload:    workload,
		Ctx:         map[string]any{},
		Results:     map[string]any{},
		Steps:       map[string]*StepState{},
		CreatedAt:   ts(now),
	}
}

// ts is the time the state records for now: UTC, truncated to the
// millisecond (the precision the state's timestamps have always had on the
// wire, RFC 3339).
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// transition accumulates the output of one Apply.
type transition struct {
	e   *Engine
	st  *State
	now time.Time
	out Output
	// firing names the join being scheduled by checkJoins (joins.go).
	firing string
}

func (t *transition) event(typ types.EventType, step string, run int, payload history.Payload, idParts ...string) *types.Event {
	parts := append([]string{step, itoa(run)}, idParts...)
	ev := types.NewEvent(typ, t.st.ExecutionID, Source, t.now, parts...)
	ev.Step = step
	ev.StepRun = run
	ev.Payload = history.Encode(payload)
	ev.ParentID = t.st.ParentID
	switch {
	case step == "":
		ev.EntityType = "playbook"
		ev.EntityID = t.st.Playbook
	default:
		ev.EntityType = "step"
		ev.EntityID = step
	}
	t.out.Events = append(t.out.Events, ev)
	return &t.out.Events[len(t.out.Events)-1]
}

// Start moves a requested execution to running and schedules the `start`
// step. It fails if the state is not requested.
func (e *Engine) Start(st *State, now time.Time) (Output, error) {
	if st.Status != ExecRequested {
		return Output{}, fmt.Errorf("engine: execution %s is %s, not %s", st.ExecutionID, st.Status, ExecRequested)
	}
	st.Version++
	t := &transition{e: e, st: st, now: now}
	st.Status = ExecRunning
	st.StartedAt = ts(now)
	t.event(types.EvPlaybookStarted, "", 0, history.PlaybookStarted{Playbook: st.Playbook, ParentID: st.ParentID})
	t.event(types.EvWorkflowStarted, "", 0, history.WorkflowStarted{})
	if d := e.ExecutionDeadline(); d > 0 {
		tc := types.Command{Kind: types.CmdExecutionTimeout, ExecutionID: st.ExecutionID, StateVersion: st.Version, NotBefore: now.Add(d)}
		tc.ID = tc.TaskName()
		t.out.Commands = append(t.out.Commands, tc)
	}
	if err := t.schedule(e.PB.EntryStep(), nil, nil, "", 0); err != nil {
		// As in Apply: a failure to start is the execution's, never an
		// error for the caller to retry.
		t.stop(StopReason{Status: ExecFailed, Kind: types.ErrKindTemplate, Message: fmt.Sprintf("start: %v", err)})
	}
	t.maybeFinish()
	t.stamp(0)
	return t.out, nil
}

// stamp assigns Lamport times to the transition's events (after the state's
// clock and the applied event's, whichever is later) and gives every
// command the time of the last event, so the units' events follow the
// transition's in the log's causal order (types.Event "Clock").
func (t *transition) stamp(evClock int64) {
	base := types.HLC(max(t.st.Clock, evClock), t.now)
	last := types.StampClocks(t.out.Events, base)
	for i := range t.out.Commands {
		t.out.Commands[i].Clock = last
	}
	t.st.Clock = last
}

// Apply folds one boundary event (step.done, step.failed, loop.done) into
// st and returns what to do next. changed is false when the event does not
// apply (a duplicate, a stale run, an execution already finished); st is
// then untouched. Other event types are ignored.
func (e *Engine) Apply(st *State, ev types.Event, now time.Time) (out Output, changed bool, err error) {
	if st.Terminal() || st.Status != ExecRunning {
		return Output{}, false, nil
	}
	switch ev.EventType {
	case types.EvStepDone, types.EvStepFailed, types.EvLoopDone:
	default:
		return Output{}, false, nil
	}
	ss := st.Steps[ev.Step]
	if ss == nil || ss.Run != ev.StepRun || (ss.Status != types.StatusRunning && ss.Status != types.StatusScheduled) {
		return Output{}, false, nil
	}
	step := e.PB.Step(ev.Step)
	if step == nil {
		return Output{}, false, fmt.Errorf("engine: event for unknown step %q", ev.Step)
	}
	st.Version++
	t := &transition{e: e, st: st, now: now}
	ok := ev.EventType != types.EvStepFailed
	b := boundaryOf(ev)
	result := b.result
	if ev.EventType == types.EvLoopDone {
		if ss.Loop != nil {
			ss.Loop.Profile = b.profile
		}
		// The loop step's own boundary event, for observers (route ignores
		// it: the step is no longer running).
		sd := t.event(types.EvStepDone, step.Name, ss.Run, history.StepDone{Result: result, Loop: true})
		sd.Status = types.StatusOK
	}
	if err := t.finishStep(step, ss, ok, result, b); err != nil {
		// Nothing the playbook does may turn into a Go error here: the
		// caller would retry the same transition forever (README
		// "Security"). An error that still gets this far fails the execution.
		t.stop(StopReason{Status: ExecFailed, Kind: types.ErrKindTemplate, Message: fmt.Sprintf("step %s: %v", step.Name, err)})
	}
	t.maybeFinish()
	t.stamp(ev.Clock)
	return t.out, true, nil
}

// finishStep records a step run's end, applies its ctx patches and
// evaluates its arcs.
func (t *transition) finishStep(step *dsl.Step, ss *StepState, ok bool, result any, b boundary) error {
	st := t.st
	st.Active--
	ss.FinishedAt = ts(t.now)
	ss.Runs++
	if !ss.StartedAt.IsZero() {
		ss.DurationMS = t.now.Sub(ss.StartedAt).Milliseconds()
	}
	st.LastStep = step.Name
	if ok {
		ss.Status = types.StatusOK
		ss.Error = nil
		st.Results[step.Name] = result
		st.Result = result
		if !st.Compensating && !contains(st.Completed, step.Name) {
			st.Completed = append(st.Completed, step.Name)
		}
		// Worker-side patches (policy set to ctx and step), then the
		// step's own set (NoETL DSL spec "DSL v2 names": the step completes →
		// step-level set → arc conditions → the chosen arc's set).
		for k, v := range b.ctx {
			st.Ctx[k] = v
		}
		if vars := b.vars; vars != nil {
			if ss.Vars == nil {
				ss.Vars = map[string]any{}
			}
			for k, v := range vars {
				ss.Vars[k] = v
			}
		}
		if len(step.Set) > 0 {
			if ss.Vars == nil {
				ss.Vars = map[string]any{}
			}
			sc := t.scope(ss, map[string]any{"output": outputEnvelope(true, OutputData(resultKind(t.e.PB, step) == "http", result), boundary{})}) // h-conf: termination.go
			if err := ApplySet(step.Set, sc, SetTargets{Ctx: st.Ctx, Step: ss.Vars}); err != nil {
				return t.stepError(step, ss, fmt.Errorf("step %s %w", step.Name, err))
			}
		}
	} else {
		ss.Status = types.StatusFailed
		if b.present {
			ss.Error = b.err
		}
	}
	fired, err := t.route(step, ss, b.typ, ok, result, b)
	if err != nil {
		return t.stepError(step, ss, err)
	}
	t.noMatch(step.Name, ss, b.typ, ok, fired) // hook (h-conf): no_next_is_error (termination.go)
	if !ok && fired == 0 {
		if st.Compensating {
			// A compensation that fails is recorded; the rollback goes on.
			st.Failures = append(st.Failures, fmt.Sprintf("compensation %s failed: %v", step.Name, describeError(ss.Error)))
			return nil
		}
		handled, err := t.failedStep(step, ss, result, b)
		if err != nil {
			return t.stepError(step, ss, err)
		}
		if !handled {
			msg := fmt.Sprintf("step %s failed: %v", step.Name, describeError(ss.Error))
			st.Failures = append(st.Failures, msg)
			if t.e.PolicyOf().OnStepFail == OnStepFailHalt && st.Active > 0 {
				// Halt: the other branches stop now (NoETL observability spec §8.8).
				st.Failures = st.Failures[:len(st.Failures)-1]
				t.stop(StopReason{Status: ExecFailed, Kind: types.ErrKindHalted, Message: msg})
				return nil
			}
		}
	}
	return t.startQueued(step.Name)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// startQueued starts the next queued token of a step that just ended.
func (t *transition) startQueued(name string) error {
	ss := t.st.Steps[name]
	if ss == nil || len(ss.Pending) == 0 || ss.Status == types.StatusScheduled || ss.Status == types.StatusRunning {
		return nil
	}
	tok := ss.Pending[0]
	ss.Pending = ss.Pending[1:]
	t.st.Active-- // counted when queued; schedule counts it again
	return t.schedule(name, tok.Args, tok.Vars, tok.From, tok.FromRun)
}

// stepError fails a step run whose transition cannot be computed: a
// template error (a render error, template.ErrLimit, a bad value) in the
// step's set, in an arc's when (under on_when_error: fail_step), args or
// set, or in the on_step_fail routing. The error is the step's (kind
// template), recorded in the execution's failures and in two events —
// next.evaluated with the error and a step.failed carrying it — and never
// returned: a returned error would make the caller retry the same
// transition forever (README "Security"). The execution's on_step_fail halt
// stops the other branches; the step's queued tokens then run as after
// any failure.
func (t *transition) stepError(step *dsl.Step, ss *StepState, err error) error {
	msg := err.Error()
	ss.Status = types.StatusFailed
	ss.Error = map[string]any{"kind": string(types.ErrKindTemplate), "message": msg, "retryable": false}
	t.event(types.EvNextEvaluated, step.Name, ss.Run, history.NextEvaluated{Error: msg})
	sf := t.event(types.EvStepFailed, step.Name, ss.Run, history.StepFailed{Error: ss.Error}, "engine")
	sf.Status = types.StatusFailed
	if t.e.PolicyOf().OnStepFail == OnStepFailHalt && t.st.Active > 0 && !t.st.Compensating {
		t.stop(StopReason{Status: ExecFailed, Kind: types.ErrKindHalted, Message: fmt.Sprintf("step %s failed: %s", step.Name, msg)})
		return nil
	}
	t.st.Failures = append(t.st.Failures, msg)
	return t.startQueued(step.Name)
}

func describeError(e any) string {
	if m, ok := e.(map[string]any); ok {
		if msg, ok := m["message"]; ok {
			return fmt.Sprint(msg)
		}
	}
	if e == nil {
		return "unknown error"
	}
	return fmt.Sprint(e)
}

// scope builds the template scope of the control plane for a step: the
// v10 names, plus input (the run's token) and step (its step-scope
// variables).
func (t *transition) scope(ss *StepState, extra map[string]any) template.Scope {
	var args map[string]any
	if ss != nil {
		args = ss.Args
	}
	if extra == nil {
		extra = map[string]any{}
	}
	extra["input"] = args
	if ss != nil && ss.Vars != nil {
		extra["step"] = ss.Vars
	} else {
		extra["step"] = map[string]any{}
	}
	return template.NewScope(template.ScopeParams{
		Workload:    t.st.Workload,
		Ctx:         t.st.Ctx,
		Args:        args,
		ExecutionID: t.st.ExecutionID,
		Results:     t.resultViews(), // hook (h-conf): step-result views (views.go)
		Keychain:    t.st.Keychain,
		Extra:       extra,
	})
}

// arcListens reports whether an arc fires on the given boundary event.
func arcListens(a *dsl.Arc, evName types.EventType, ok bool) bool {
	return arcOn(a).Listens(ok, evName == types.EvLoopDone)
}

// route evaluates the step's arcs on a boundary event and schedules the
// targets. It returns the number of fired arcs.
func (t *transition) route(step *dsl.Step, ss *StepState, evName types.EventType, ok bool, result any, b boundary) (int, error) {
	if step.Next == nil || len(step.Next.Arcs) == 0 {
		return 0, nil
	}
	eventView := map[string]any{"name": string(evName), "step": step.Name, "status": string(map[bool]types.Status{true: types.StatusOK, false: types.StatusFailed}[ok]), "result": result}
	if b.present {
		eventView["error"] = b.err
	}
	// Hook (h-conf): arcs also read the DSL v2 `output` envelope (termination.go).
	sc := t.scope(ss, map[string]any{"event": eventView, "output": outputEnvelope(ok, OutputData(resultKind(t.e.PB, step) == "http", result), b)})
	var matched []string
	var whenErrors []history.WhenError
	var fire []*dsl.Arc
	for _, a := range step.Next.Arcs {
		if !arcListens(a, evName, ok) {
			continue
		}
		hit := true
		if a.When != "" {
			v, err := template.TruthyWithin(a.When, sc, t.e.Opts.WhenTimeout)
			if err != nil {
				if t.e.PolicyOf().OnWhenError == OnWhenErrorFail {
					return 0, fmt.Errorf("step %s arc to %s: when: %w", step.Name, a.Step, err)
				}
				// on_when_error: treat_as_false (NoETL observability spec §8.8): the arc
				// does not match; the error is recorded.
				whenErrors = append(whenErrors, history.WhenError{Arc: a.Step, Error: err.Error()})
			}
			hit = v
		}
		if !hit {
			continue
		}
		matched = append(matched, a.Step)
		if step.Next.Mode == "inclusive" || len(fire) == 0 {
			fire = append(fire, a)
		}
	}
	var fired []string
	for _, a := range fire {
		fired = append(fired, a.Step)
	}
	t.event(types.EvNextEvaluated, step.Name, ss.Run, history.NextEvaluated{Event: evName, Mode: modeOf(step.Next), Matched: matched, Fired: fired, WhenErrors: whenErrors})
	for _, a := range fire {
		var args map[string]any
		if len(a.Args) > 0 {
			v, err := template.RenderValue(a.Args, sc)
			if err != nil {
				return 0, fmt.Errorf("step %s arc to %s: args: %w", step.Name, a.Step, err)
			}
			args, _ = v.(map[string]any)
		}
		var vars map[string]any
		if len(a.Set) > 0 {
			vars = map[string]any{}
			if err := ApplySet(a.Set, sc, SetTargets{Ctx: t.st.Ctx, Step: vars}); err != nil {
				return 0, fmt.Errorf("step %s arc to %s: %w", step.Name, a.Step, err)
			}
		}
		if err := t.schedule(a.Step, args, vars, step.Name, ss.Run); err != nil {
			return 0, err
		}
	}
	return len(fire), nil
}

func modeOf(n *dsl.Next) string {
	if n.Mode == "" {
		return "exclusive"
	}
	return n.Mode
}

// schedule starts a new run of a step: admission, then loop fan-out or a
// single unit of work.
func (t *transition) schedule(name string, args, vars map[string]any, from string, fromRun int) error {
	st := t.st
	step := t.e.PB.Step(name)
	if step == nil {
		st.Failures = append(st.Failures, fmt.Sprintf("arc to unknown step %q", name))
		return nil
	}
	if t.joinAbsorb(name, args, vars, from, fromRun) { // hook (h-conf): fan-in joins (joins.go)
		return nil
	}
	ss := st.Steps[name]
	if ss == nil {
		ss = &StepState{}
		st.Steps[name] = ss
	}
	if ss.Status == types.StatusScheduled || ss.Status == types.StatusRunning {
		// The step is busy: the token waits for the current run to end.
		ss.Pending = append(ss.Pending, Token{Args: args, Vars: vars, From: from, FromRun: fromRun})
		st.Active++
		t.event(types.EvStepScheduled, name, ss.Run+len(ss.Pending), history.StepScheduled{From: from, Args: args, Queued: true}, "queued", from, itoa(fromRun))
		return nil
	}
	run := ss.Run + 1
	idPart := from + "." + itoa(fromRun)
	if run > MaxStepRuns {
		st.Failures = append(st.Failures, fmt.Sprintf("step %s exceeded %d runs", name, MaxStepRuns))
		return nil
	}
	if step.Admit != nil && len(step.Admit.Rules) > 0 {
		sc := template.NewScope(template.ScopeParams{Workload: st.Workload, Ctx: st.Ctx, Args: args, ExecutionID: st.ExecutionID, Results: t.resultViews(), Keychain: st.Keychain}) // views: views.go
		allowed, rule, err := t.e.Opts.EvalAdmit(step.Admit, sc)
		if err != nil {
			// The run fails before it starts (a template error in an
			// admission rule): recorded on the step and as step.failed.
			msg := fmt.Sprintf("step %s admit: %v", name, err)
			ss.Run, ss.Status, ss.Args = run, types.StatusFailed, args
			ss.StartedAt, ss.FinishedAt = ts(t.now), ts(t.now)
			ss.Error = map[string]any{"kind": string(types.ErrKindTemplate), "message": msg, "retryable": false}
			sf := t.event(types.EvStepFailed, name, run, history.StepFailed{Error: ss.Error}, "admit", idPart)
			sf.Status = types.StatusFailed
			st.Failures = append(st.Failures, msg)
			return nil
		}
		t.event(types.EvAdmitEvaluated, name, run, history.AdmitEvaluated{Allowed: allowed, Rule: rule}, idPart)
		if !allowed {
			ss.Status = types.StatusSkipped
			return nil
		}
	}
	ss.Run = run
	ss.Status = types.StatusScheduled
	ss.Args = args
	ss.Vars = vars
	ss.StartedAt = ts(t.now)
	ss.FinishedAt = time.Time{}
	ss.Error = nil
	ss.Loop = nil
	ss.ReusedFrom = ""
	st.Active++
	t.event(types.EvStepScheduled, name, run, history.StepScheduled{From: from, Args: args})
	if r := t.reusable(name, run, args); r != nil {
		// A rerun's step run that completed in the execution it reruns:
		// its recorded end stands for it (rerun.go).
		return t.reuse(step, ss, r)
	}
	if budget := t.e.StepBudget(step); budget > 0 {
		tc := types.Command{Kind: types.CmdStepTimeout, ExecutionID: st.ExecutionID, Step: name, StepRun: run,
			StateVersion: st.Version, NotBefore: t.now.Add(time.Duration(budget * float64(time.Second)))}
		tc.ID = tc.TaskName()
		t.out.Commands = append(t.out.Commands, tc)
	}

	if step.Loop != nil {
		return t.startLoop(step, ss, args)
	}
	if len(step.Tasks) == 0 {
		// A routing-only step completes at once.
		ss.Status = types.StatusRunning
		t.event(types.EvStepStarted, name, run, history.StepStarted{})
		done := t.event(types.EvStepDone, name, run, history.StepDone{})
		done.Status = types.StatusOK
		return t.finishStep(step, ss, true, nil, boundaryOf(*done))
	}
	ss.Status = types.StatusRunning
	cmd := types.Command{
		Kind: types.CmdRunStep, ExecutionID: st.ExecutionID, Step: name, StepRun: run,
		Args: args, StepVars: vars, TaskIndex: 0, Attempt: 1, StateVersion: st.Version,
	}
	cmd.ID = cmd.TaskName()
	t.out.Commands = append(t.out.Commands, cmd)
	return nil
}

// startLoop renders loop.in and plans the fan-out: the first MaxInFlight
// iterations are dispatched now, each later one when an earlier completes
// (see NextIteration), so no document counts in-flight iterations.
func (t *transition) startLoop(step *dsl.Step, ss *StepState, args map[string]any) error {
	st := t.st
	l := step.Loop
	if l.Cursor != nil { // hook (h-conf): cursor loops (cursor.go)
		return t.startCursorLoop(step, ss, args)
	}
	sc := template.NewScope(template.ScopeParams{Workload: st.Workload, Ctx: st.Ctx, Args: args, ExecutionID: st.ExecutionID, Results: t.resultViews(), Keychain: st.Keychain}) // views: views.go
	v, err := template.RenderValue(l.In, sc)
	if err != nil {
		return t.failNow(step, ss, fmt.Sprintf("loop.in: %v", err))
	}
	// Hook (README "Architecture"): a stored table is iterated where it is: the plan
	// keeps its reference and each iteration reads its own row.
	table, rows, isTable := StoredTable(v)
	items, ok := asList(v)
	if isTable {
		items, ok = nil, true
	} else if !ok {
		if m, isMap := v.(map[string]any); isMap && (types.IsResultRef(v) || types.IsResultRef(m[RefView])) {
			return t.failNow(step, ss, "loop.in renders to a stored result that is not a Feather table (a JSON result cannot be iterated where it is stored; load it with an artifact task first)")
		}
		return t.failNow(step, ss, fmt.Sprintf("loop.in must render to a list, got %T", v))
	}
	total := len(items)
	if isTable {
		total = rows
	}
	mode := l.Mode
	if mode == "" {
		mode = "sequential"
	}
	mif := 1
	if mode == "parallel" {
		// Hook (h-conf): templated max_in_flight (loopspec.go).
		n, err := LoopMaxInFlight(l, sc, t.e.Opts.DefaultMaxInFlight)
		if err != nil {
			return t.failLoop(step, ss, err.Error())
		}
		mif = n
	}
	ss.Status = types.StatusRunning
	ss.Loop = &LoopStatus{Total: total, Mode: mode, MaxInFlight: mif}
	t.event(types.EvStepStarted, step.Name, ss.Run, history.StepStarted{Loop: true})
	t.event(types.EvLoopStarted, step.Name, ss.Run, history.LoopStarted{Total: &total, Mode: mode, MaxInFlight: mif})
	if total == 0 {
		done := types.NewEvent(types.EvLoopDone, st.ExecutionID, Source, t.now, step.Name, itoa(ss.Run))
		done.Step, done.StepRun = step.Name, ss.Run
		res := map[string]any{"results": []any{}, "stats": LoopStats(0, 0)}
		t.event(types.EvLoopDone, step.Name, ss.Run, history.LoopDone{Result: res, Total: 0})
		sd := t.event(types.EvStepDone, step.Name, ss.Run, history.StepDone{Result: res, Loop: true})
		sd.Status = types.StatusOK
		return t.finishStep(step, ss, true, res, boundaryOf(done))
	}
	fm := step.FailureMode
	if fm == "" {
		fm = "fail_fast"
	}
	plan := LoopPlan{Step: step.Name, Run: ss.Run, Total: total, Items: items, Iterator: l.Iterator, Mode: mode,
		MaxInFlight: mif, FailureMode: fm, Args: args, StateVersion: st.Version}
	plan.Batch = BatchSize(t.e.PB, step, total, plan.Lanes()) // batched fan-out (batch.go)
	if isTable {
		plan.ItemsRef = table
	}
	t.out.Loops = append(t.out.Loops, plan)
	// One command per lane: the first L iterations (see loop.go).
	for i := 0; i < plan.Lanes(); i++ {
		if isTable {
			cmd := IterationCommand(st.ExecutionID, plan, i, nil, 0)
			cmd.ItemRef = true // execute reads row i of the stored table
			t.out.Commands = append(t.out.Commands, cmd)
			continue
		}
		t.out.Commands = append(t.out.Commands, IterationCommand(st.ExecutionID, plan, i, items[i], 0))
	}
	return nil
}

// failNow fails a step before any unit ran (e.g. loop.in did not render).
func (t *transition) failNow(step *dsl.Step, ss *StepState, msg string) error {
	ss.Status = types.StatusRunning
	ev := types.NewEvent(types.EvStepFailed, t.st.ExecutionID, Source, t.now, step.Name, itoa(ss.Run))
	ev.Step, ev.StepRun = step.Name, ss.Run
	ev.Payload = history.Encode(history.StepFailed{Error: map[string]any{"kind": "template", "message": msg}})
	t.out.Events = append(t.out.Events, withEntity(ev))
	return t.finishStep(step, ss, false, nil, boundaryOf(ev))
}

func withEntity(ev types.Event) types.Event {
	ev.EntityType = "step"
	ev.EntityID = ev.Step
	ev.Status = types.StatusFailed
	return ev
}

func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case nil:
		return []any{}, true
	case []map[string]any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = x[i]
		}
		return out, true
	case []string:
		out := make([]any, len(x))
		for i := range x {
			out[i] = x[i]
		}
		return out, true
	}
	return nil, false
}

// maybeFinish ends the execution when no step run is active (after its
// compensation, see stop.go).
func (t *transition) maybeFinish() {
	t.beforeFinish() // hook (h-conf): joins and final_step (termination.go)
	st := t.st
	if st.Active > 0 || st.Terminal() {
		return
	}
	if st.Compensating {
		t.nextCompensation()
		return
	}
	status := ExecOK
	if len(st.Failures) > 0 {
		status = ExecFailed
	}
	t.finish(status)
}

// TimeoutEvent returns the deterministic step.failed event of a step run
// that exceeded its time budget: lifecycle.timeout_s (NoETL DSL spec "Step":
// spec.policy.lifecycle.timeout_s) or a loop's total budget
// (loop.spec.timeout_s), whichever is shorter.
func TimeoutEvent(executionID, step string, run int, timeoutS float64, now time.Time) types.Event {
	ev := types.NewEvent(types.EvStepFailed, executionID, "execute", now, step, itoa(run), "timeout")
	ev.Step, ev.StepRun = step, run
	ev.EntityType, ev.EntityID = "step", step
	ev.Status = types.StatusFailed
	ev.Payload = history.Encode(history.StepFailed{Error: map[string]any{"kind": "timeout", "retryable": false,
		"message": fmt.Sprintf("step %s run %d exceeded its time budget: lifecycle.timeout_s or loop.spec.timeout_s %v", step, run, timeoutS)}})
	return ev
}

// StepBudget returns a step run's time budget in seconds (0: none): the
// shorter of spec.policy.lifecycle.timeout_s and, for a loop step, the
// loop's total budget loop.spec.timeout_s (Options.LoopTotal when the loop
// sets none).
func (e *Engine) StepBudget(step *dsl.Step) float64 {
	b := step.TimeoutS
	if step.Loop != nil {
		lt := specSeconds(step.Loop.Spec, "timeout_s")
		if _, set := step.Loop.Spec["timeout_s"]; !set {
			lt = e.Opts.LoopTotal.Seconds()
		}
		if lt > 0 && (b <= 0 || lt < b) {
			b = lt
		}
	}
	return b
}

// ItemBudget returns a loop iteration's time budget (loop.spec.
// item_timeout_s), 0 when not set.
func ItemBudget(step *dsl.Step) time.Duration {
	if step.Loop == nil {
		return 0
	}
	return time.Duration(specSeconds(step.Loop.Spec, "item_timeout_s") * float64(time.Second))
}

func specSeconds(spec map[string]any, key string) float64 {
	switch v := spec[key].(type) {
	case int64:
		return float64(v)
	case int:
		return float64(v)
	case float64:
		return v
	}
	return 0
}
