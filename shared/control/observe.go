package control

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/history"
	"github.com/noetl/gcpengine/shared/redact"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"
)

// Observability of the control plane (NoETL observability spec §8.1-§8.3). The engine is
// pure, so what a transition decided is read back from its output events
// once the transition is committed: observe runs once per applied
// transition (a replayed outbox is not observed again), in the process
// that applied it (execute or route).
//
//	event                      metrics                                     spans            log event
//	step.scheduled             noetl_step_calls_total                      -                step_called
//	step.scheduled (queued)    -                                           -                step_parked
//	run_step command (first)   -                                           -                step_dispatch
//	loop.started               noetl_loop_items_total (+= total)           -                step_dispatch (loop_plan)
//	step.done/failed/canceled  noetl_step_runs_total, _duration_seconds    -                step_done (step.done also
//	                                                                                         result_integrate)
//	next.evaluated             noetl_edge_eval_total, noetl_when_eval_total server.route    route_edge_selected,
//	                                                                        (one per arc),   when_eval_error
//	                                                                        server.when_eval
//	                                                                        (one per when)
//	playbook.finished          noetl_executions_completed_total            server.execution execution_done

// observe records the telemetry of the committed transition whose engine
// is e, state (as written) st and output out. Nil arguments record
// nothing.
func (c *Control) observe(ctx context.Context, e *engine.Engine, st *engine.State, out *engine.Output) {
	if e == nil || st == nil || out == nil {
		return
	}
	wf := st.Playbook
	log := c.log()
	base := []any{telemetry.ExecutionID(st.ExecutionID), telemetry.WorkflowRef(wf)}
	for i := range out.Events {
		ev := &out.Events[i]
		switch ev.EventType {
		case types.EvStepScheduled:
			p, _ := history.Decode[history.StepScheduled](*ev) // telemetry: a malformed key reads as absent
			from := p.From
			if p.Queued {
				log.DebugContext(ctx, "step parked until its current run ends", append(base, telemetry.Event(telemetry.EventStepParked),
					telemetry.StepID(ev.Step), slog.String(telemetry.LogReason, "busy:"+from))...)
				continue
			}
			telemetry.M.StepCalled(ctx, wf, ev.Step)
			log.InfoContext(ctx, "step called", append(base, telemetry.Event(telemetry.EventStepCalled),
				telemetry.StepID(ev.Step), slog.Int("step_run", ev.StepRun), slog.String(telemetry.LogReason, reasonOf(from)))...)
		case types.EvLoopStarted:
			p, _ := history.Decode[history.LoopStarted](*ev) // telemetry: a malformed key reads as absent
			total := 0
			if p.Total != nil {
				total = *p.Total
			}
			telemetry.M.LoopPlanned(ctx, wf, ev.Step, total)
			log.InfoContext(ctx, "loop step dispatched", append(base, telemetry.Event(telemetry.EventStepDispatch),
				telemetry.StepID(ev.Step), slog.Int("step_run", ev.StepRun),
				slog.Group("loop_plan", "total", total, "mode", p.Mode, "max_in_flight", p.MaxInFlight))...)
		case types.EvStepDone, types.EvStepFailed, types.EvStepCanceled:
			ok := ev.EventType == types.EvStepDone
			if ok {
				// The step's result is now the execution's: results[step]
				// (and the templates' bare step name).
				log.DebugContext(ctx, "step result integrated", append(base, telemetry.Event(telemetry.EventResultIntegrate),
					telemetry.StepID(ev.Step), slog.Int("step_run", ev.StepRun), slog.String("as", ev.Step))...)
			}
			d := stepDuration(st, ev)
			telemetry.M.StepRunEnded(ctx, wf, ev.Step, ok, d)
			lvl := slog.LevelInfo
			if !ok {
				lvl = slog.LevelWarn
			}
			log.Log(ctx, lvl, "step run ended", append(base, telemetry.Event(telemetry.EventStepDone),
				telemetry.StepID(ev.Step), slog.Int("step_run", ev.StepRun), telemetry.OK(ok),
				telemetry.DurationMS(d.Milliseconds()), slog.String("event_type", string(ev.EventType)))...)
		case types.EvNextEvaluated:
			c.observeArcs(ctx, e, st, ev)
		case types.EvPlaybookFinished:
			observeFinished(ctx, log, st, ev)
		}
	}
	for _, cmd := range out.Commands {
		if cmd.Kind == types.CmdRunStep && cmd.Iteration == nil && cmd.TaskIndex == 0 && cmd.Attempt <= 1 && cmd.Jumps == 0 {
			log.InfoContext(ctx, "step dispatched", append(base, telemetry.Event(telemetry.EventStepDispatch),
				telemetry.StepID(cmd.Step), slog.Int("step_run", cmd.StepRun), slog.String(telemetry.LogMessageID, cmd.TaskName()))...)
		}
	}
}

// reasonOf is the reason of a step_called line (NoETL observability spec §8.2
// "predecessor:<step>").
func reasonOf(from string) string {
	if from == "" {
		return "start"
	}
	return "predecessor:" + from
}

// stepDuration is a step run's wall-clock duration from its scheduling to
// its end: the engine's DurationMS of the step (kept until the step ends
// again), else the boundary event's time minus the run's start.
func stepDuration(st *engine.State, ev *types.Event) time.Duration {
	ss := st.Steps[ev.Step]
	if ss == nil {
		return 0
	}
	if ss.DurationMS > 0 {
		return time.Duration(ss.DurationMS) * time.Millisecond
	}
	start := ss.StartedAt
	end := ev.Timestamp.Time
	if start.IsZero() || end.IsZero() || end.Before(start) {
		return 0
	}
	return end.Sub(start)
}

// observeArcs records one next.evaluated event: per arc the step's
// boundary event considered (engine.ArcListens), its outcome — taken
// (fired), error (its when failed to render) or skipped — as
// noetl_edge_eval_total and a server.route span with the arc's index and
// when template, and per arc with a when its truth as
// noetl_when_eval_total. A decision the engine took without arcs (the
// on_step_fail route_edge policy, an arc that could not be rendered)
// records one decision with edge_index -1.
func (c *Control) observeArcs(ctx context.Context, e *engine.Engine, st *engine.State, ev *types.Event) {
	wf, from := st.Playbook, ev.Step
	p, _ := history.Decode[history.NextEvaluated](*ev) // telemetry: a malformed key reads as absent
	fired := countNames(p.Fired)
	matched := countNames(p.Matched)
	if p.Error != "" {
		err := errors.New(p.Error)
		if strings.Contains(p.Error, ": when: ") {
			// on_when_error: fail_step — the arc's when failed the step.
			c.log().WarnContext(ctx, "arc when failed to evaluate", telemetry.Event(telemetry.EventWhenEvalError), telemetry.ExecutionID(st.ExecutionID),
				telemetry.WorkflowRef(wf), telemetry.StepID(from), slog.String(telemetry.LogError, redact.New(st.Keychain).String(p.Error)), slog.String("action", "fail"))
		}
		_, sp := telemetry.StartRoute(ctx, telemetry.Route{ExecutionID: st.ExecutionID, FromStep: from, EdgeIndex: -1})
		telemetry.EndRoute(sp, telemetry.EdgeError, err)
		telemetry.M.EdgeEvaluated(ctx, wf, from, "", telemetry.EdgeError)
		return
	}
	if pol := p.Policy; pol != "" {
		for target := range fired {
			_, sp := telemetry.StartRoute(ctx, telemetry.Route{ExecutionID: st.ExecutionID, FromStep: from, EdgeIndex: -1, TargetStep: target, Condition: "on_step_fail: " + pol})
			telemetry.EndRoute(sp, telemetry.EdgeTaken, nil)
			telemetry.M.EdgeEvaluated(ctx, wf, from, target, telemetry.EdgeTaken)
			c.log().InfoContext(ctx, "routing edge selected", telemetry.Event(telemetry.EventRouteEdgeSelected), telemetry.ExecutionID(st.ExecutionID),
				telemetry.WorkflowRef(wf), slog.String("from_step", from), slog.Int("edge_index", -1), slog.String("target_step", target), slog.String("policy", pol))
		}
		return
	}
	step := e.PB.Step(from)
	if step == nil || step.Next == nil {
		return
	}
	whenErrs := map[string][]string{}
	for _, w := range p.WhenErrors {
		whenErrs[w.Arc] = append(whenErrs[w.Arc], w.Error)
	}
	evName := p.Event
	ok := evName != types.EvStepFailed
	for i, a := range step.Next.Arcs {
		if !engine.ArcListens(a, evName, ok) {
			continue
		}
		outcome, when := telemetry.EdgeSkipped, telemetry.WhenFalse
		var err error
		switch {
		case a.When != "" && len(whenErrs[a.Step]) > 0:
			outcome, when = telemetry.EdgeError, telemetry.WhenError
			err = errors.New(whenErrs[a.Step][0])
			whenErrs[a.Step] = whenErrs[a.Step][1:]
		case matched[a.Step] > 0:
			matched[a.Step]--
			when = telemetry.WhenTrue
			if fired[a.Step] > 0 {
				fired[a.Step]--
				outcome = telemetry.EdgeTaken
			}
		}
		telemetry.M.EdgeEvaluated(ctx, wf, from, a.Step, outcome)
		rctx, sp := telemetry.StartRoute(ctx, telemetry.Route{ExecutionID: st.ExecutionID, FromStep: from, EdgeIndex: i, TargetStep: a.Step, Condition: a.When})
		if a.When != "" {
			telemetry.M.WhenEvaluated(ctx, wf, from, when)
			// The pure engine evaluated the when inside its transition;
			// its server.when_eval span, under the arc's server.route,
			// carries the outcome (its duration is not the evaluation's).
			_, ws := telemetry.StartWhenEval(rctx, telemetry.WhenEval{ExecutionID: st.ExecutionID, StepID: from, WhenExpr: a.When})
			telemetry.EndWhenEval(ws, when, err)
			if err != nil {
				action := "park"
				if e.PolicyOf().OnWhenError == engine.OnWhenErrorFail {
					action = "fail"
				}
				c.log().WarnContext(ctx, "arc when failed to evaluate", telemetry.Event(telemetry.EventWhenEvalError), telemetry.ExecutionID(st.ExecutionID),
					telemetry.WorkflowRef(wf), telemetry.StepID(from), slog.String("target_step", a.Step), slog.String("when_expr", redact.Keys(a.When).(string)),
					slog.String(telemetry.LogError, redact.New(st.Keychain).String(err.Error())), slog.String("action", action))
			}
		}
		telemetry.EndRoute(sp, outcome, err)
		if outcome == telemetry.EdgeTaken {
			c.log().InfoContext(ctx, "routing edge selected", telemetry.Event(telemetry.EventRouteEdgeSelected), telemetry.ExecutionID(st.ExecutionID),
				telemetry.WorkflowRef(wf), slog.String("from_step", from), slog.Int("edge_index", i), slog.String("target_step", a.Step),
				slog.String("condition", redact.Keys(a.When).(string)))
		}
	}
}

// countNames counts the step names of a matched or fired list.
func countNames(l []string) map[string]int {
	out := map[string]int{}
	for _, s := range l {
		out[s]++
	}
	return out
}

// observeFinished records an execution's end: the execution counter, the
// root span server.execution (from the execution's creation to its end)
// and an execution_done line.
func observeFinished(ctx context.Context, log *slog.Logger, st *engine.State, ev *types.Event) {
	status := telemetry.ExecOK
	switch ev.Status {
	case types.StatusFailed, types.StatusError:
		status = telemetry.ExecFail
	case types.StatusCanceled:
		status = telemetry.ExecCanceled
	}
	telemetry.M.ExecutionCompleted(ctx, st.Playbook, status)
	end := time.Now()
	if !st.FinishedAt.IsZero() {
		end = st.FinishedAt
	}
	start := end
	for _, t := range []time.Time{st.CreatedAt, st.StartedAt} {
		if !t.IsZero() {
			start = t
			break
		}
	}
	var err error
	if status == telemetry.ExecFail && len(st.Failures) > 0 {
		err = errors.New(redact.New(st.Keychain).String(st.Failures[0]))
	}
	telemetry.Execution{ID: st.ExecutionID, WorkflowRef: st.Playbook, WorkloadSize: len(st.Workload),
		Force: telemetry.WorkloadForcesTrace(st.Workload), ParentExecutionID: st.ParentID}.End(ctx, start, end, status, err)
	lvl := slog.LevelInfo
	if status == telemetry.ExecFail {
		lvl = slog.LevelWarn
	}
	log.Log(ctx, lvl, "execution ended", telemetry.Event(telemetry.EventExecutionDone), telemetry.ExecutionID(st.ExecutionID),
		telemetry.WorkflowRef(st.Playbook), slog.String("status", string(status)), telemetry.OK(status == telemetry.ExecOK),
		telemetry.DurationMS(end.Sub(start).Milliseconds()), telemetry.Err(err))
}
