package telemetry

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metric names. The NoETL observability spec §8.1 names are normative; the DLQ, retry,
// lease and result-tier names follow the same style (noetl_ prefix,
// _total for counters, base units in the name).
const (
	// Server metrics (NoETL observability spec §8.1 "Server Metrics").
	MetricExecutionsStarted   = "noetl_executions_started_total"
	MetricExecutionsCompleted = "noetl_executions_completed_total"
	MetricStepCalls           = "noetl_step_calls_total"
	MetricStepRuns            = "noetl_step_runs_total"
	MetricStepDuration        = "noetl_step_duration_seconds"
	MetricLoopItems           = "noetl_loop_items_total"
	MetricLoopCompleted       = "noetl_loop_completed_total"
	MetricTaskQueueInflight   = "noetl_task_queue_inflight"
	MetricSinkDispatch        = "noetl_sink_dispatch_total"
	MetricSinkDuration        = "noetl_sink_duration_seconds"
	MetricWhenEval            = "noetl_when_eval_total"
	MetricEdgeEval            = "noetl_edge_eval_total"

	// Worker metrics (NoETL observability spec §8.1 "Worker Metrics").
	MetricWorkerTasksStarted   = "noetl_worker_tasks_started_total"
	MetricWorkerTasksCompleted = "noetl_worker_tasks_completed_total"
	MetricWorkerTaskDuration   = "noetl_worker_task_duration_seconds"
	MetricSinkTasksCompleted   = "noetl_sink_tasks_completed_total"
	MetricPluginErrors         = "noetl_plugin_errors_total"

	// Dead letters (NoETL observability spec §8.6 "Metrics": noetl_dlq_total{kind}).
	MetricDLQ = "noetl_dlq_total"
	// Retries of a task attempt (NoETL observability spec §8.4; §8.10 "Retries per Sink").
	MetricTaskRetries = "noetl_task_retries_total"
	// Unit and iteration leases (README "Architecture": executions/{id}/units/{unit}).
	MetricLeaseAcquired  = "noetl_lease_acquired_total"
	MetricLeaseRenewed   = "noetl_lease_renewed_total"
	MetricLeaseReclaimed = "noetl_lease_reclaimed_total"
	MetricLeaseLost      = "noetl_lease_lost_total"
	// Result tier (NoETL result storage RFC §5).
	MetricResultOffloaded      = "noetl_result_offloaded_total"
	MetricResultOffloadedBytes = "noetl_result_offloaded_bytes"
	MetricResultResolved       = "noetl_result_resolved_total"
	// Results whose key another writer had taken (NoETL result storage RFC
	// "Risks": two writers of the same key), by what the second writer did.
	MetricResultWriteConflicts = "noetl_result_write_conflicts_total"
	// Per-instance cache of loaded results (README "Architecture": bounded in bytes,
	// least recently used evicted first).
	MetricResultCacheHits      = "noetl_result_cache_hits_total"
	MetricResultCacheMisses    = "noetl_result_cache_misses_total"
	MetricResultCacheEvictions = "noetl_result_cache_evictions_total"
	MetricResultCacheBytes     = "noetl_result_cache_bytes"
)

// Label (attribute) names of the metrics, as NoETL observability spec §8.1 spells them.
const (
	LabelWorkflow   = "workflow"
	LabelStep       = "step"
	LabelStatus     = "status"
	LabelOK         = "ok"
	LabelPool       = "pool"
	LabelSink       = "sink"
	LabelOutcome    = "outcome"
	LabelFrom       = "from"
	LabelTo         = "to"
	LabelKind       = "kind"
	LabelErrorClass = "error_class"
	LabelReason     = "reason"
	LabelSource     = "source"
	LabelLease      = "lease"
	LabelFormat     = "format"
)

// Histogram bucket boundaries (upper bounds, in the metric's unit).
var (
	// StepDurationBuckets: NoETL observability spec §8.1
	// noetl_step_duration_seconds, plus 600, 1800 and 3600: with the
	// seed's last finite bucket at 300, histogram_quantile never exceeds
	// 300, so §8.11's ExecutionSLAExceeded (p95 > 300) could never fire.
	StepDurationBuckets = []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	// SinkDurationBuckets: NoETL observability spec §8.1 noetl_sink_duration_seconds.
	SinkDurationBuckets = []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1, 2}
	// TaskDurationBuckets: NoETL observability spec §8.1 noetl_worker_task_duration_seconds
	// lists buckets by kind (HTTP 0.05…5, DB 0.01…2, Python 0.1…30); one
	// OpenTelemetry instrument has one set of boundaries, so this is their
	// union, which is also the seed's implementation target. Every
	// per-kind boundary is present, so per-kind quantiles lose nothing.
	TaskDurationBuckets = []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30}
	// OffloadedBytesBuckets: result objects from the inline budget (64 KiB
	// default) up to 1 GiB, by powers of 4.
	OffloadedBytesBuckets = []float64{1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30}
)

// InstrumentKind is the OpenTelemetry instrument behind a metric.
type InstrumentKind string

// Instrument kinds used by the engine.
const (
	KindCounter       InstrumentKind = "counter"         // Prometheus counter
	KindUpDownCounter InstrumentKind = "up_down_counter" // Prometheus gauge
	KindHistogram     InstrumentKind = "histogram"       // Prometheus histogram
)

// InstrumentSpec describes one metric: its exported name, help text, unit
// (UCUM: "s", "By", "1"), instrument kind, label names (the exact set
// recorded) and, for histograms, bucket boundaries.
type InstrumentSpec struct {
	// Name is the metric's name as exported (Prometheus and Cloud
	// Monitoring's prometheus.googleapis.com/<Name>/<kind>).
	Name string
	// Description is the help text.
	Description string
	// Unit is the UCUM unit ("1", "s", "By").
	Unit string
	// Kind is the OpenTelemetry instrument.
	Kind InstrumentKind
	// Labels are the attribute keys every data point has, no more.
	Labels []string
	// Buckets are a histogram's explicit upper bounds (nil otherwise).
	Buckets []float64
}

// Instruments is the catalogue of every metric the engine records, in
// the order of NoETL observability spec §8.1, then DLQ, retries, leases and the result
// tier. Dashboards, alerts and tests read their names from here.
var Instruments = []InstrumentSpec{
	{MetricExecutionsStarted, "Executions started (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow}, nil},
	{MetricExecutionsCompleted, "Executions that reached a terminal status: ok, fail or canceled (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow, LabelStatus}, nil},
	{MetricStepCalls, "Times a step was called: an arc or the start entered it (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow, LabelStep}, nil},
	{MetricStepRuns, "Step runs that ended, by ok (NoETL observability spec §8.1; the ok label is the one §8.10 and §8.11 query).", "1", KindCounter, []string{LabelWorkflow, LabelStep, LabelOK}, nil},
	{MetricStepDuration, "Step run wall-clock duration, dispatch to done (NoETL observability spec §8.1).", "s", KindHistogram, []string{LabelWorkflow, LabelStep}, StepDurationBuckets},
	{MetricLoopItems, "Loop items planned (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow, LabelStep}, nil},
	{MetricLoopCompleted, "Loop items completed, by ok (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow, LabelStep, LabelOK}, nil},
	{MetricTaskQueueInflight, "Units enqueued minus units acknowledged, by Cloud Tasks queue (NoETL observability spec §8.1).", "1", KindUpDownCounter, []string{LabelPool}, nil},
	{MetricSinkDispatch, "Sink (storage task) dispatches (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelSink, LabelWorkflow, LabelStep}, nil},
	{MetricSinkDuration, "Sink (storage task) duration (NoETL observability spec §8.1).", "s", KindHistogram, []string{LabelSink, LabelWorkflow, LabelStep}, SinkDurationBuckets},
	{MetricWhenEval, "When-condition evaluations: true, false or error (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow, LabelStep, LabelOutcome}, nil},
	{MetricEdgeEval, "Arc (edge) evaluations: taken, skipped or error (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelWorkflow, LabelFrom, LabelTo, LabelOutcome}, nil},

	{MetricWorkerTasksStarted, "Task attempts started, by tool kind and queue (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelKind, LabelPool}, nil},
	{MetricWorkerTasksCompleted, "Task attempts completed, by ok (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelKind, LabelPool, LabelOK}, nil},
	{MetricWorkerTaskDuration, "Task attempt duration, by tool kind (NoETL observability spec §8.1).", "s", KindHistogram, []string{LabelKind}, TaskDurationBuckets},
	{MetricSinkTasksCompleted, "Sink (storage task) completions, by ok (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelSink, LabelOK}, nil},
	{MetricPluginErrors, "Tool errors, by kind and error class (NoETL observability spec §8.1).", "1", KindCounter, []string{LabelKind, LabelErrorClass}, nil},

	{MetricDLQ, "Dead-lettered units and messages, by tool kind, reason and source function (NoETL observability spec §8.6).", "1", KindCounter, []string{LabelKind, LabelReason, LabelSource}, nil},
	{MetricTaskRetries, "Task attempts scheduled for a retry (NoETL observability spec §8.4).", "1", KindCounter, []string{LabelWorkflow, LabelStep, LabelKind}, nil},
	{MetricLeaseAcquired, "Leases taken on a free unit or iteration.", "1", KindCounter, []string{LabelLease}, nil},
	{MetricLeaseRenewed, "Leases extended by their holder.", "1", KindCounter, []string{LabelLease}, nil},
	{MetricLeaseReclaimed, "Expired leases taken over from another holder.", "1", KindCounter, []string{LabelLease}, nil},
	{MetricLeaseLost, "Leases their holder found taken over or gone.", "1", KindCounter, []string{LabelLease}, nil},
	{MetricResultOffloaded, "Results written to the result tier, by format (NoETL result storage RFC §5).", "1", KindCounter, []string{LabelFormat}, nil},
	{MetricResultOffloadedBytes, "Size of results written to the result tier, by format (NoETL result storage RFC §5).", "By", KindHistogram, []string{LabelFormat}, OffloadedBytesBuckets},
	{MetricResultResolved, "Result references read back from the result tier, by format and outcome.", "1", KindCounter, []string{LabelFormat, LabelOutcome}, nil},
	{MetricResultWriteConflicts, "Result writes that found another writer's object at their key, by outcome (same: identical bytes, named; versioned: stored at a fresh @version; adopted: a streamed table took the object there).", "1", KindCounter, []string{LabelOutcome}, nil},
	{MetricResultCacheHits, "Loaded results (and table batches) served from the instance's cache.", "1", KindCounter, nil, nil},
	{MetricResultCacheMisses, "Loaded results (and table batches) not in the instance's cache.", "1", KindCounter, nil, nil},
	{MetricResultCacheEvictions, "Entries evicted from the instance's result cache to stay within its bound.", "1", KindCounter, nil, nil},
	{MetricResultCacheBytes, "Estimated bytes held by the instance's result cache.", "By", KindUpDownCounter, nil, nil},
}

// ExecStatus is the status label of noetl_executions_completed_total.
type ExecStatus string

// Execution statuses (NoETL observability spec §8.1 "status: ok|fail|canceled").
const (
	ExecOK       ExecStatus = "ok"
	ExecFail     ExecStatus = "fail"
	ExecCanceled ExecStatus = "canceled"
)

// WhenOutcome is the outcome label of noetl_when_eval_total.
type WhenOutcome string

// When outcomes (NoETL observability spec §8.1 "outcome: true|false|error").
const (
	WhenTrue  WhenOutcome = "true"
	WhenFalse WhenOutcome = "false"
	WhenError WhenOutcome = "error"
)

// EdgeOutcome is the outcome label of noetl_edge_eval_total and the
// outcome attribute of server.route spans.
type EdgeOutcome string

// Edge outcomes (NoETL observability spec §8.1 "outcome: taken|skipped|error").
const (
	EdgeTaken   EdgeOutcome = "taken"
	EdgeSkipped EdgeOutcome = "skipped"
	EdgeError   EdgeOutcome = "error"
)

// DLQReason is the reason label of noetl_dlq_total.
type DLQReason string

// Reasons to dead-letter (NoETL observability spec §8.6 "When to DLQ").
const (
	DLQMaxAttempts DLQReason = "max_attempts" // retries exhausted
	DLQFatal       DLQReason = "fatal"        // non-retryable error class
	DLQPoison      DLQReason = "poison"       // the message never decodes
)

// LeaseScope is the lease label of the noetl_lease_* counters.
type LeaseScope string

// Leased things (README "Architecture" "Firestore collections").
const (
	LeaseUnit      LeaseScope = "unit"      // executions/{id}/units/{unit}
	LeaseIteration LeaseScope = "iteration" // .../loops/{run}/iterations/{i}
)

// ResolveOutcome is the outcome label of noetl_result_resolved_total.
type ResolveOutcome string

// Result-tier read outcomes.
const (
	ResolveOK       ResolveOutcome = "ok"
	ResolveNotFound ResolveOutcome = "not_found"
	ResolveError    ResolveOutcome = "error"
)

// WriteConflict is the outcome label of
// noetl_result_write_conflicts_total: what a result write did on finding
// another writer's object at its key (shared/results once.go).
type WriteConflict string

// Write-conflict outcomes.
const (
	// ConflictSame: the object there holds the same bytes; the reference names it.
	ConflictSame WriteConflict = "same"
	// ConflictVersioned: the value was stored at a fresh @version instead.
	ConflictVersioned WriteConflict = "versioned"
	// ConflictAdopted: a streamed table took the object there as its result.
	ConflictAdopted WriteConflict = "adopted"
)

// instruments holds one created instrument per InstrumentSpec.
type instruments struct {
	counters   map[string]metric.Int64Counter
	updowns    map[string]metric.Int64UpDownCounter
	histograms map[string]metric.Float64Histogram
}

// Metrics is the typed facade over the engine's instruments: one method
// per metric whose parameters are exactly the metric's labels, so a call
// site is one line and a label cannot be misspelled or forgotten. A nil
// *Metrics and the zero Metrics record nothing. Methods are safe for
// concurrent use and never fail (an instrument error is reported to the
// OpenTelemetry error handler when the instrument is created).
type Metrics struct {
	p atomic.Pointer[instruments]
}

// M is the process-wide facade. It records nothing until Setup (or
// SetupConfig) installs a meter provider.
var M = &Metrics{}

// NewMetrics returns a facade recording through mp (tests, or a provider
// built by the caller). Every instrument of Instruments is created with
// its unit, description and explicit bucket boundaries.
func NewMetrics(mp metric.MeterProvider) *Metrics {
	m := &Metrics{}
	m.use(mp)
	return m
}

// use (re)creates the instruments from mp; calls in flight keep using the
// previous set.
func (m *Metrics) use(mp metric.MeterProvider) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	meter := mp.Meter(instrumentationName)
	in := &instruments{
		counters:   map[string]metric.Int64Counter{},
		updowns:    map[string]metric.Int64UpDownCounter{},
		histograms: map[string]metric.Float64Histogram{},
	}
	noopMeter := noop.NewMeterProvider().Meter(instrumentationName)
	for _, s := range Instruments {
		switch s.Kind {
		case KindCounter:
			c, err := meter.Int64Counter(s.Name, metric.WithDescription(s.Description), metric.WithUnit(s.Unit))
			if err != nil {
				c, _ = noopMeter.Int64Counter(s.Name)
			}
			in.counters[s.Name] = c
		case KindUpDownCounter:
			c, err := meter.Int64UpDownCounter(s.Name, metric.WithDescription(s.Description), metric.WithUnit(s.Unit))
			if err != nil {
				c, _ = noopMeter.Int64UpDownCounter(s.Name)
			}
			in.updowns[s.Name] = c
		case KindHistogram:
			h, err := meter.Float64Histogram(s.Name, metric.WithDescription(s.Description), metric.WithUnit(s.Unit),
				metric.WithExplicitBucketBoundaries(s.Buckets...))
			if err != nil {
				h, _ = noopMeter.Float64Histogram(s.Name)
			}
			in.histograms[s.Name] = h
		}
	}
	m.p.Store(in)
}

func (m *Metrics) add(ctx context.Context, name string, n int64, kv ...attribute.KeyValue) {
	if m == nil {
		return
	}
	if in := m.p.Load(); in != nil {
		if c := in.counters[name]; c != nil {
			c.Add(ctx, n, metric.WithAttributes(kv...))
		} else if u := in.updowns[name]; u != nil {
			u.Add(ctx, n, metric.WithAttributes(kv...))
		}
	}
}

func (m *Metrics) record(ctx context.Context, name string, v float64, kv ...attribute.KeyValue) {
	if m == nil {
		return
	}
	if in := m.p.Load(); in != nil {
		if h := in.histograms[name]; h != nil {
			h.Record(ctx, v, metric.WithAttributes(kv...))
		}
	}
}

func okLabel(ok bool) attribute.KeyValue { return attribute.String(LabelOK, strconv.FormatBool(ok)) }

func str(k, v string) attribute.KeyValue { return attribute.String(k, v) }

// ExecutionStarted counts an execution started of playbook workflow (the
// playbook path, e.g. "examples/weather"): noetl_executions_started_total.
func (m *Metrics) ExecutionStarted(ctx context.Context, workflow string) {
	m.add(ctx, MetricExecutionsStarted, 1, str(LabelWorkflow, workflow))
}

// ExecutionCompleted counts an execution that reached a terminal status:
// noetl_executions_completed_total{workflow,status}.
func (m *Metrics) ExecutionCompleted(ctx context.Context, workflow string, status ExecStatus) {
	m.add(ctx, MetricExecutionsCompleted, 1, str(LabelWorkflow, workflow), str(LabelStatus, string(status)))
}

// StepCalled counts a step entered by an arc or by the start:
// noetl_step_calls_total{workflow,step}.
func (m *Metrics) StepCalled(ctx context.Context, workflow, step string) {
	m.add(ctx, MetricStepCalls, 1, str(LabelWorkflow, workflow), str(LabelStep, step))
}

// StepRunEnded counts a step run that ended (step.done: ok=true,
// step.failed: ok=false) and records its wall-clock duration from
// dispatch to done: noetl_step_runs_total{workflow,step,ok} and
// noetl_step_duration_seconds{workflow,step}.
func (m *Metrics) StepRunEnded(ctx context.Context, workflow, step string, ok bool, d time.Duration) {
	m.add(ctx, MetricStepRuns, 1, str(LabelWorkflow, workflow), str(LabelStep, step), okLabel(ok))
	m.record(ctx, MetricStepDuration, d.Seconds(), str(LabelWorkflow, workflow), str(LabelStep, step))
}

// LoopPlanned counts the n items of a loop step run when its plan is made:
// noetl_loop_items_total{workflow,step} += n.
func (m *Metrics) LoopPlanned(ctx context.Context, workflow, step string, n int) {
	m.add(ctx, MetricLoopItems, int64(n), str(LabelWorkflow, workflow), str(LabelStep, step))
}

// LoopItemCompleted counts one loop iteration that ended:
// noetl_loop_completed_total{workflow,step,ok}.
func (m *Metrics) LoopItemCompleted(ctx context.Context, workflow, step string, ok bool) {
	m.add(ctx, MetricLoopCompleted, 1, str(LabelWorkflow, workflow), str(LabelStep, step), okLabel(ok))
}

// TaskEnqueued adds one to noetl_task_queue_inflight{pool} when a unit's
// Cloud Task is created on queue pool ("work" or "timers").
func (m *Metrics) TaskEnqueued(ctx context.Context, pool string) {
	m.add(ctx, MetricTaskQueueInflight, 1, str(LabelPool, pool))
}

// TaskAcknowledged subtracts one from noetl_task_queue_inflight{pool} when
// execute answers a unit's delivery for the last time (2xx, or the unit
// is dead-lettered). The gauge is per process: sum it over instances.
func (m *Metrics) TaskAcknowledged(ctx context.Context, pool string) {
	m.add(ctx, MetricTaskQueueInflight, -1, str(LabelPool, pool))
}

// SinkDispatched counts a sink dispatch and records its duration:
// noetl_sink_dispatch_total{sink,workflow,step} and
// noetl_sink_duration_seconds{sink,workflow,step}. The DSL has no special
// sink (a storage task follows the producing one), so sink names a storage
// task: "<kind>:<task name>", e.g. "postgres:store".
func (m *Metrics) SinkDispatched(ctx context.Context, sink, workflow, step string, d time.Duration) {
	m.add(ctx, MetricSinkDispatch, 1, str(LabelSink, sink), str(LabelWorkflow, workflow), str(LabelStep, step))
	m.record(ctx, MetricSinkDuration, d.Seconds(), str(LabelSink, sink), str(LabelWorkflow, workflow), str(LabelStep, step))
}

// SinkTaskCompleted counts a sink (storage task) completion:
// noetl_sink_tasks_completed_total{sink,ok}.
func (m *Metrics) SinkTaskCompleted(ctx context.Context, sink string, ok bool) {
	m.add(ctx, MetricSinkTasksCompleted, 1, str(LabelSink, sink), okLabel(ok))
}

// WhenEvaluated counts a when-condition evaluation:
// noetl_when_eval_total{workflow,step,outcome}.
func (m *Metrics) WhenEvaluated(ctx context.Context, workflow, step string, outcome WhenOutcome) {
	m.add(ctx, MetricWhenEval, 1, str(LabelWorkflow, workflow), str(LabelStep, step), str(LabelOutcome, string(outcome)))
}

// EdgeEvaluated counts an arc evaluation from step from to step to:
// noetl_edge_eval_total{workflow,from,to,outcome}.
func (m *Metrics) EdgeEvaluated(ctx context.Context, workflow, from, to string, outcome EdgeOutcome) {
	m.add(ctx, MetricEdgeEval, 1, str(LabelWorkflow, workflow), str(LabelFrom, from), str(LabelTo, to), str(LabelOutcome, string(outcome)))
}

// TaskStarted counts a task attempt of tool kind ("http", "postgres",
// "python", ...) started by a unit delivered from queue pool:
// noetl_worker_tasks_started_total{kind,pool}.
func (m *Metrics) TaskStarted(ctx context.Context, kind, pool string) {
	m.add(ctx, MetricWorkerTasksStarted, 1, str(LabelKind, kind), str(LabelPool, pool))
}

// TaskCompleted counts a finished task attempt and records its duration:
// noetl_worker_tasks_completed_total{kind,pool,ok} and
// noetl_worker_task_duration_seconds{kind}.
func (m *Metrics) TaskCompleted(ctx context.Context, kind, pool string, ok bool, d time.Duration) {
	m.add(ctx, MetricWorkerTasksCompleted, 1, str(LabelKind, kind), str(LabelPool, pool), okLabel(ok))
	m.record(ctx, MetricWorkerTaskDuration, d.Seconds(), str(LabelKind, kind))
}

// PluginError counts a tool error of class errorClass (the outcome's
// error kind, e.g. "timeout", "http", "config"; NoETL observability spec §8.8 classes
// where known): noetl_plugin_errors_total{kind,error_class}.
func (m *Metrics) PluginError(ctx context.Context, kind, errorClass string) {
	m.add(ctx, MetricPluginErrors, 1, str(LabelKind, kind), str(LabelErrorClass, errorClass))
}

// DeadLettered counts a dead-lettered unit or message:
// noetl_dlq_total{kind,reason,source}. kind is the tool kind of the failed
// task ("" when unknown, e.g. an undecodable message), source the function
// that dead-lettered it ("execute", "route", "dispatch", "materialize").
func (m *Metrics) DeadLettered(ctx context.Context, kind string, reason DLQReason, source string) {
	m.add(ctx, MetricDLQ, 1, str(LabelKind, kind), str(LabelReason, string(reason)), str(LabelSource, source))
}

// TaskRetried counts a task attempt that the policy retries:
// noetl_task_retries_total{workflow,step,kind}.
func (m *Metrics) TaskRetried(ctx context.Context, workflow, step, kind string) {
	m.add(ctx, MetricTaskRetries, 1, str(LabelWorkflow, workflow), str(LabelStep, step), str(LabelKind, kind))
}

// LeaseAcquired counts a lease taken on a free unit or iteration:
// noetl_lease_acquired_total{lease}.
func (m *Metrics) LeaseAcquired(ctx context.Context, scope LeaseScope) {
	m.add(ctx, MetricLeaseAcquired, 1, str(LabelLease, string(scope)))
}

// LeaseRenewed counts a lease extended by its holder:
// noetl_lease_renewed_total{lease}.
func (m *Metrics) LeaseRenewed(ctx context.Context, scope LeaseScope) {
	m.add(ctx, MetricLeaseRenewed, 1, str(LabelLease, string(scope)))
}

// LeaseReclaimed counts an expired lease taken over (its holder crashed
// or stalled): noetl_lease_reclaimed_total{lease}.
func (m *Metrics) LeaseReclaimed(ctx context.Context, scope LeaseScope) {
	m.add(ctx, MetricLeaseReclaimed, 1, str(LabelLease, string(scope)))
}

// LeaseLost counts a holder finding its lease taken over or gone:
// noetl_lease_lost_total{lease}.
func (m *Metrics) LeaseLost(ctx context.Context, scope LeaseScope) {
	m.add(ctx, MetricLeaseLost, 1, str(LabelLease, string(scope)))
}

// ResultOffloaded counts a result written to the result tier in format
// ("feather" or "json") and records its object size in bytes:
// noetl_result_offloaded_total{format} and
// noetl_result_offloaded_bytes{format} (a histogram; its _sum is the
// total bytes written).
func (m *Metrics) ResultOffloaded(ctx context.Context, format string, bytes int64) {
	m.add(ctx, MetricResultOffloaded, 1, str(LabelFormat, format))
	m.record(ctx, MetricResultOffloadedBytes, float64(bytes), str(LabelFormat, format))
}

// ResultCacheHit counts a cache hit (noetl_result_cache_hits_total).
func (m *Metrics) ResultCacheHit(ctx context.Context) { m.add(ctx, MetricResultCacheHits, 1) }

// ResultCacheMiss counts a cache miss (noetl_result_cache_misses_total).
func (m *Metrics) ResultCacheMiss(ctx context.Context) { m.add(ctx, MetricResultCacheMisses, 1) }

// ResultCacheEvicted counts n evicted entries
// (noetl_result_cache_evictions_total).
func (m *Metrics) ResultCacheEvicted(ctx context.Context, n int64) {
	m.add(ctx, MetricResultCacheEvictions, n)
}

// ResultCacheBytes adds delta to the bytes the cache holds
// (noetl_result_cache_bytes).
func (m *Metrics) ResultCacheBytes(ctx context.Context, delta int64) {
	m.add(ctx, MetricResultCacheBytes, delta)
}

// ResultWriteConflict counts a result write that found another writer's
// object at its key: noetl_result_write_conflicts_total{outcome}.
func (m *Metrics) ResultWriteConflict(ctx context.Context, outcome WriteConflict) {
	m.add(ctx, MetricResultWriteConflicts, 1, str(LabelOutcome, string(outcome)))
}

// ResultResolved counts a result reference read back from the tier:
// noetl_result_resolved_total{format,outcome}.
func (m *Metrics) ResultResolved(ctx context.Context, format string, outcome ResolveOutcome) {
	m.add(ctx, MetricResultResolved, 1, str(LabelFormat, format), str(LabelOutcome, string(outcome)))
}
