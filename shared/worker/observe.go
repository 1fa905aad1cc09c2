package worker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/telemetry"
	"github.com/noetl/gcpengine/shared/types"

	"go.opentelemetry.io/otel/trace"
)

// Observability of units of work (NoETL observability spec §8.1-§8.3): the worker's
// metrics, the spans server.dispatch (one per unit, recorded when the
// unit ends) and worker.plugin.<kind> (one per task attempt), and the
// worker's log events (task_claimed, plugin_start, plugin_done,
// sink_start, sink_done, task_retry, task_ack, task_dlq, lease_lost,
// lease_reclaimed). The call sites in worker.go, unit.go, attempt.go and
// resilience.go are one line each.

// poolKey is the context key of the Cloud Tasks queue of a delivery.
type poolKey struct{}

// WithPool returns ctx naming the Cloud Tasks queue that delivered the unit
// (execute reads it from X-CloudTasks-QueueName: "work" or "timers"). It
// is the pool label of noetl_worker_tasks_started_total and
// noetl_worker_tasks_completed_total (NoETL observability spec §8.1).
func WithPool(ctx context.Context, queue string) context.Context {
	return context.WithValue(ctx, poolKey{}, queue)
}

// PoolOf returns the queue WithPool put in ctx, "unknown" when none.
func PoolOf(ctx context.Context) string {
	if q, _ := ctx.Value(poolKey{}).(string); q != "" {
		return q
	}
	return "unknown"
}

// unitLogger returns the logger of a unit's delivery: base with NoETL observability spec
// §8.2's common fields (execution_id, step_id, loop_index, attempt) and
// the trace fields of ctx's span (the unit's server.dispatch), so Cloud
// Logging links every line of the unit to its trace.
func unitLogger(ctx context.Context, base *slog.Logger, cmd types.Command) *slog.Logger {
	args := []any{telemetry.ExecutionID(cmd.ExecutionID), telemetry.StepID(cmd.Step), slog.Int("step_run", cmd.StepRun),
		telemetry.Attempt(cmd.Attempt), slog.Int("task_index", cmd.TaskIndex)}
	if cmd.Iteration != nil {
		args = append(args, telemetry.LoopIndex(cmd.Iteration), slog.String(telemetry.LogLoopKey, engine.LoopKey(cmd.Step, cmd.StepRun)))
	}
	return base.With(append(args, telemetry.TraceLogAttrs(ctx)...)...)
}

// toolKind is the kind that runs task: a workbook task's template kind.
func toolKind(pb *dsl.Playbook, task *dsl.Task) string {
	if task.Kind != "workbook" || pb == nil {
		return task.Kind
	}
	name, _ := task.Config["name"].(string)
	if name == "" {
		name = task.Workbook
	}
	if wt := pb.Workbook[name]; wt != nil {
		return wt.Kind
	}
	return task.Kind
}

// specConfig is a task's configuration as written (a workbook task's
// template merged under its own), for spec_signature.
func specConfig(pb *dsl.Playbook, task *dsl.Task) map[string]any {
	if task.Kind != "workbook" || pb == nil {
		return task.Config
	}
	name, _ := task.Config["name"].(string)
	if name == "" {
		name = task.Workbook
	}
	wt := pb.Workbook[name]
	if wt == nil {
		return task.Config
	}
	cfg := maps.Clone(wt.Config)
	if cfg == nil {
		cfg = map[string]any{}
	}
	maps.Copy(cfg, task.Config)
	return cfg
}

// unitSpan is the unit's server.dispatch span description.
func (u *unit) unitSpan() telemetry.Unit {
	kind := ""
	if len(u.step.Tasks) > 0 {
		kind = toolKind(u.pb, u.step.Tasks[0])
	}
	return telemetry.Unit{ExecutionID: u.cmd.ExecutionID, Key: u.cmd.UnitKey(), Step: u.cmd.Step, StepRun: u.cmd.StepRun,
		LoopIndex: u.cmd.Iteration, ToolKind: kind, Force: telemetry.WorkloadForcesTrace(u.st.Workload)}
}

// observeClaimed logs task_claimed when a delivery starts running its
// unit (NoETL observability spec §8.2).
func (u *unit) observeClaimed() {
	kind := ""
	if u.cur.TaskIndex < len(u.step.Tasks) {
		kind = toolKind(u.pb, u.step.Tasks[u.cur.TaskIndex])
	}
	u.log.Debug("unit claimed", telemetry.Event(telemetry.EventTaskClaimed), telemetry.WorkflowRef(u.st.Playbook),
		slog.String(telemetry.LogMessageID, u.cmd.TaskName()), telemetry.ToolKind(kind), slog.String("worker_id", u.holder),
		slog.Bool("recovering", u.recovering))
}

// observeAttempt runs one task attempt (run) inside its worker.plugin.<kind>
// span, as a child of the unit's server.dispatch, with the attempt's
// metrics: noetl_worker_tasks_started_total and _completed_total,
// noetl_worker_task_duration_seconds, noetl_plugin_errors_total, and for a
// sink noetl_sink_dispatch_total, noetl_sink_duration_seconds and
// noetl_sink_tasks_completed_total. The tool runs with the span's context,
// so the http tool's requests carry its traceparent. A `kind: playbook`
// attempt that suspends (its child runs) is counted when it resumes.
func (u *unit) observeAttempt(ctx context.Context, task *dsl.Task, run func(context.Context) (types.Outcome, bool, error)) (types.Outcome, bool, error) {
	kind, pool, wf := toolKind(u.pb, task), PoolOf(ctx), u.st.Playbook
	resumed := task.Kind == "playbook" && u.cmd.ChildID != ""
	sink := ""
	if engine.IsSink(u.pb, task, kind) {
		sink = sinkID(kind, task)
	}
	sctx, span := telemetry.StartPlugin(ctx, telemetry.Plugin{ExecutionID: u.cmd.ExecutionID, Step: u.cmd.Step, Task: task.Name, Kind: kind,
		Attempt: u.cur.Attempt, SpecSignature: telemetry.SpecSignature(kind, specConfig(u.pb, task)), ArgsSignature: telemetry.Signature(task.Input)})
	if !resumed {
		telemetry.M.TaskStarted(ctx, kind, pool)
	}
	call := slog.String(telemetry.LogCallID, u.callID)
	u.log.Debug("plugin started", telemetry.Event(telemetry.EventPluginStart), slog.String("task", task.Name), telemetry.ToolKind(kind),
		slog.Int(telemetry.LogAttempt, u.cur.Attempt), call)
	var sinkSpan trace.Span
	if sink != "" {
		u.log.Debug("sink dispatched", telemetry.Event(telemetry.EventSinkDispatch), slog.String(telemetry.LogSinkID, sink), slog.String("sink_type", kind), call)
		u.log.Debug("sink started", telemetry.Event(telemetry.EventSinkStart), slog.String(telemetry.LogSinkID, sink), slog.String("sink_type", kind), call)
		sctx, sinkSpan = telemetry.StartSink(sctx, telemetry.Sink{ID: sink, Type: kind})
	}
	start := time.Now()
	out, suspended, err := run(sctx)
	d := time.Since(start)
	if sinkSpan != nil {
		var serr error
		switch {
		case err != nil:
			serr = u.maskErr(err)
		case !suspended && out.Status != types.StatusOK && out.Error != nil:
			serr = u.maskErr(errors.New(out.Error.Message))
		}
		telemetry.EndSink(sinkSpan, serr)
	}
	if err != nil {
		telemetry.EndPlugin(span, "infrastructure", u.maskErr(err))
		return out, suspended, err
	}
	if suspended {
		span.AddEvent("suspended: waiting for the child execution")
		telemetry.EndPlugin(span, "", nil)
		return out, suspended, err
	}
	ok := out.Status == types.StatusOK
	class := ""
	var oerr error
	if !ok {
		class = "error"
		msg := string(out.Status)
		if out.Error != nil {
			class, msg = string(out.Error.Kind), out.Error.Message
		}
		oerr = u.maskErr(errors.New(msg))
		telemetry.M.PluginError(ctx, kind, class)
	}
	telemetry.EndPlugin(span, class, oerr)
	telemetry.M.TaskCompleted(ctx, kind, pool, ok, d)
	lvl := slog.LevelDebug
	if !ok {
		lvl = slog.LevelInfo
	}
	u.log.Log(context.Background(), lvl, "plugin done", telemetry.Event(telemetry.EventPluginDone), slog.String("task", task.Name), telemetry.ToolKind(kind),
		slog.Int(telemetry.LogAttempt, u.cur.Attempt), telemetry.DurationMS(d.Milliseconds()), telemetry.OK(ok), telemetry.ErrorClass(class), call)
	if sink != "" {
		telemetry.M.SinkDispatched(ctx, sink, wf, u.cmd.Step, d)
		telemetry.M.SinkTaskCompleted(ctx, sink, ok)
		u.log.Log(context.Background(), lvl, "sink done", telemetry.Event(telemetry.EventSinkDone), slog.String(telemetry.LogSinkID, sink),
			telemetry.DurationMS(d.Milliseconds()), telemetry.OK(ok), call)
	}
	return out, suspended, err
}

// sinkID is a sink's id (NoETL observability spec §8.2 sink_id,
// "<kind>:<task>", e.g. "postgres:store").
func sinkID(kind string, task *dsl.Task) string { return kind + ":" + task.Name }

// policyName says which policy decided a retry: "rule <n>" of the task's
// own, or "default" (NOETL_RETRIES_PLUGIN_* / _SINK_*).
func policyName(d engine.Decision) string {
	if d.Rule < 0 {
		return "default"
	}
	return "rule " + itoa(d.Rule)
}

// maskErr masks the keychain's secrets in err's message (nil stays nil).
func (u *unit) maskErr(err error) error {
	if err == nil || u.red == nil {
		return err
	}
	return errors.New(u.red.String(err.Error()))
}

// observePolicy counts a task attempt the policy retries
// (noetl_task_retries_total) and logs task_retry with the delay before
// the next attempt (NoETL observability spec §8.2, §8.4).
func (u *unit) observePolicy(task *dsl.Task, d engine.Decision, mv engine.Move, out types.Outcome, attempt int) {
	if d.Action != types.ActRetry || mv.Exhausted {
		return
	}
	kind := toolKind(u.pb, task)
	telemetry.M.TaskRetried(context.Background(), u.st.Playbook, u.cmd.Step, kind)
	class := ""
	if out.Error != nil {
		class = string(out.Error.Kind)
	}
	max := d.Then.Attempts
	if max <= 0 {
		max = engine.DefaultRetryAttempts
	}
	u.log.Info("task attempt will be retried", telemetry.Event(telemetry.EventTaskRetry), slog.String("task", task.Name),
		telemetry.ToolKind(kind), slog.Int(telemetry.LogAttempt, attempt+1), slog.Int(telemetry.LogMaxAttempts, max),
		slog.Int64(telemetry.LogBackoffMS, mv.Delay.Milliseconds()), slog.Int64(telemetry.LogNextDelayMS, mv.Delay.Milliseconds()),
		telemetry.ErrorClass(class), slog.String("policy", policyName(d)), slog.String(telemetry.LogCallID, u.callID), slog.String(telemetry.LogMessageID, u.cmd.TaskName()))
}

// observeEnd logs the end of a unit, task_ack (NoETL observability spec §8.2), with the
// boundary event it produced (event_type: step.done, step.failed,
// loop.iteration.done, loop.iteration.failed).
func (u *unit) observeEnd(typ types.EventType, ok bool, errv map[string]any) {
	args := []any{telemetry.Event(telemetry.EventTaskAck), slog.String("event_type", string(typ)), telemetry.OK(ok),
		slog.String(telemetry.LogMessageID, u.cmd.TaskName()), telemetry.DurationMS(u.w.now().Sub(u.started).Milliseconds())}
	if ok {
		u.log.Info("unit done", args...)
		return
	}
	u.log.Warn("unit failed", append(args, slog.Any(telemetry.LogError, u.maskAny(errv)))...)
}

// observeDone records a unit whose end was carried out: its
// server.dispatch span (from the step run's scheduling, or for a loop
// iteration from this delivery's start, to now) and, for the delivery
// that recorded an iteration's end (first), noetl_loop_completed_total.
func (u *unit) observeDone(ctx context.Context, ok, first bool, errv map[string]any) {
	start := u.started
	if ss := u.st.Steps[u.cmd.Step]; u.cmd.Iteration == nil && ss != nil && ss.Run == u.cmd.StepRun {
		if t := ss.StartedAt; !t.IsZero() && t.Before(start) {
			start = t
		}
	}
	var err error
	if !ok {
		msg := "failed"
		if m, _ := u.maskAny(errv).(map[string]any); m != nil {
			if s, _ := m["message"].(string); s != "" {
				msg = s
			}
		}
		err = errors.New(msg)
	}
	u.unitSpan().End(ctx, start, u.w.now(), err)
	if u.cmd.Iteration != nil && first {
		telemetry.M.LoopItemCompleted(ctx, u.st.Playbook, u.cmd.Step, ok)
	}
}

// leaseEvent is what happened to a lease.
type leaseEvent int

const (
	leaseAcquired leaseEvent = iota
	leaseRenewed
	leaseLost
)

// observeLease counts a lease event of the unit (noetl_lease_*_total) and
// logs lease_lost.
func (u *unit) observeLease(ctx context.Context, e leaseEvent) {
	scope := telemetry.LeaseUnit
	if u.cmd.Iteration != nil {
		scope = telemetry.LeaseIteration
	}
	switch e {
	case leaseAcquired:
		telemetry.M.LeaseAcquired(ctx, scope)
	case leaseRenewed:
		telemetry.M.LeaseRenewed(ctx, scope)
	case leaseLost:
		telemetry.M.LeaseLost(ctx, scope)
		u.log.Warn("lease lost", telemetry.Event(telemetry.EventLeaseLost), slog.String("lease", string(scope)), slog.String("holder", u.holder))
	}
}

// observeReclaim counts a unit re-dispatched because its holder stopped
// renewing its lease (noetl_lease_reclaimed_total) and logs
// lease_reclaimed.
func (w *Worker) observeReclaim(ctx context.Context, unitCmd types.Command, reclaim int, log *slog.Logger) {
	scope := telemetry.LeaseUnit
	if unitCmd.Iteration != nil {
		scope = telemetry.LeaseIteration
	}
	telemetry.M.LeaseReclaimed(ctx, scope)
	log.Warn("lease expired without the unit ending: reclaimed", telemetry.Event(telemetry.EventLeaseReclaimed),
		slog.String("lease", string(scope)), slog.Int("reclaim", reclaim), slog.String(telemetry.LogMessageID, unitCmd.TaskName()))
}

// observeDLQ counts a dead-lettered unit (noetl_dlq_total, reason fatal
// for a permanent error, else max_attempts) and logs task_dlq (NoETL observability spec
// §8.2, §8.6).
func (w *Worker) observeDLQ(ctx context.Context, cmd types.Command, kind, dlqID string, attempts int, cause error, msg string) {
	reason := telemetry.DLQMaxAttempts
	if errs.Permanent(cause) {
		reason = telemetry.DLQFatal
	}
	telemetry.M.DeadLettered(ctx, kind, reason, Source)
	w.Log.ErrorContext(ctx, "unit dead-lettered; its step run is parked until the entry is replayed or discarded", telemetry.Event(telemetry.EventTaskDLQ),
		telemetry.ExecutionID(cmd.ExecutionID), telemetry.StepID(cmd.Step), telemetry.LoopIndex(cmd.Iteration), telemetry.ToolKind(kind),
		slog.String("dlq_id", dlqID), slog.String(telemetry.LogMessageID, cmd.TaskName()), slog.Int(telemetry.LogAttempt, attempts),
		slog.String(telemetry.LogReason, string(reason)), telemetry.ErrorClass(errs.CodeOf(cause).String()), slog.String(telemetry.LogError, msg))
}
