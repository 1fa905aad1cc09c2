package deploy

// MetricType is the Prometheus type of a metric.
type MetricType string

const (
	// Counter is a monotonic total; its Prometheus name ends in _total.
	Counter MetricType = "counter"
	// Histogram exposes <name>_bucket, <name>_sum and <name>_count in
	// Prometheus and one DISTRIBUTION metric in Cloud Monitoring.
	Histogram MetricType = "histogram"
	// Gauge is a point-in-time value.
	Gauge MetricType = "gauge"
)

// Metric is one metric the engine exports: its Prometheus name (the name
// of seed 000 §8.1, also the OpenTelemetry instrument name), type, labels,
// histogram buckets and the rule it comes from. In Cloud Monitoring the
// metric type is CloudMonitoringPrefix + Name.
type Metric struct {
	Name    string
	Type    MetricType
	Labels  []string
	Buckets []float64
	Help    string
	Source  string
}

// CloudMonitoringPrefix is the prefix of OpenTelemetry metrics exported to
// Cloud Monitoring (the Google Cloud exporter's workload metrics).
const CloudMonitoringPrefix = "workload.googleapis.com/"

// CloudMonitoringType returns the Cloud Monitoring metric type of m.
func (m Metric) CloudMonitoringType() string { return CloudMonitoringPrefix + m.Name }

// Metrics is the one list of metric names that dashboards, alert rules and
// the metrics implementation share (infra/infra_test.go checks every name
// the dashboards and alert rules use against it). The first seventeen are
// seed 000 §8.1 exactly; the rest are the DLQ, retry, lease and
// result-tier counters the dashboards and alerts of §8.10/§8.11 need.
var Metrics = []Metric{
	// Server metrics (seed 000 §8.1).
	{Name: "noetl_executions_started_total", Type: Counter, Labels: []string{"workflow"}, Help: "Total executions started", Source: "seed 000 §8.1"},
	{Name: "noetl_executions_completed_total", Type: Counter, Labels: []string{"workflow", "status"}, Help: "Total executions completed by status (ok|fail|canceled)", Source: "seed 000 §8.1"},
	{Name: "noetl_step_calls_total", Type: Counter, Labels: []string{"workflow", "step"}, Help: "Times a step was called (may be parked)", Source: "seed 000 §8.1"},
	// §8.1 lists {workflow, step}; §8.10 ("Top Failing Steps") and §8.11
	// (StepFailureRateHigh) query it by ok, so ok is a label too.
	{Name: "noetl_step_runs_total", Type: Counter, Labels: []string{"workflow", "step", "ok"}, Help: "Times a step actually executed, by outcome", Source: "seed 000 §8.1, §8.10, §8.11"},
	{Name: "noetl_step_duration_seconds", Type: Histogram, Labels: []string{"workflow", "step"}, Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}, Help: "Step duration (dispatch to done)", Source: "seed 000 §8.1"},
	{Name: "noetl_loop_items_total", Type: Counter, Labels: []string{"workflow", "step"}, Help: "Total planned loop items", Source: "seed 000 §8.1"},
	{Name: "noetl_loop_completed_total", Type: Counter, Labels: []string{"workflow", "step", "ok"}, Help: "Completed loop items by outcome", Source: "seed 000 §8.1"},
	{Name: "noetl_task_queue_inflight", Type: Gauge, Labels: []string{"pool"}, Help: "Enqueued minus acknowledged tasks", Source: "seed 000 §8.1"},
	{Name: "noetl_sink_dispatch_total", Type: Counter, Labels: []string{"sink", "workflow", "step"}, Help: "Sink dispatches", Source: "seed 000 §8.1"},
	{Name: "noetl_sink_duration_seconds", Type: Histogram, Labels: []string{"sink", "workflow", "step"}, Buckets: []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1, 2}, Help: "Sink duration", Source: "seed 000 §8.1"},
	{Name: "noetl_when_eval_total", Type: Counter, Labels: []string{"workflow", "step", "outcome"}, Help: "When condition evaluations (true|false|error)", Source: "seed 000 §8.1"},
	{Name: "noetl_edge_eval_total", Type: Counter, Labels: []string{"workflow", "from", "to", "outcome"}, Help: "Edge evaluations (taken|skipped|error)", Source: "seed 000 §8.1"},
	// Worker metrics (seed 000 §8.1).
	{Name: "noetl_worker_tasks_started_total", Type: Counter, Labels: []string{"kind", "pool"}, Help: "Tasks started", Source: "seed 000 §8.1"},
	{Name: "noetl_worker_tasks_completed_total", Type: Counter, Labels: []string{"kind", "pool", "ok"}, Help: "Tasks completed", Source: "seed 000 §8.1"},
	{Name: "noetl_worker_task_duration_seconds", Type: Histogram, Labels: []string{"kind"}, Buckets: []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30}, Help: "Task duration", Source: "seed 000 §8.1"},
	{Name: "noetl_sink_tasks_completed_total", Type: Counter, Labels: []string{"sink", "ok"}, Help: "Sink task completions", Source: "seed 000 §8.1"},
	{Name: "noetl_plugin_errors_total", Type: Counter, Labels: []string{"kind", "error_class"}, Help: "Plugin errors by class", Source: "seed 000 §8.1"},
	// DLQ, retry, lease and result-tier counters (seed 000 §8.10/§8.11
	// name noetl_dlq_total and noetl_sink_retry_total).
	{Name: "noetl_dlq_total", Type: Counter, Labels: []string{"workflow", "step", "kind", "error_class"}, Help: "Entries written to the DLQ (kind: tool kind, or message for poison messages)", Source: "seed 000 §8.10, §8.11"},
	{Name: "noetl_sink_retry_total", Type: Counter, Labels: []string{"sink"}, Help: "Sink retries", Source: "seed 000 §8.10"},
	{Name: "noetl_task_retries_total", Type: Counter, Labels: []string{"kind", "error_class"}, Help: "Task attempts retried after a retryable error", Source: "seed 000 §8.4"},
	{Name: "noetl_lease_heartbeats_total", Type: Counter, Labels: []string{"pool"}, Help: "Unit lease renewals", Source: "seed 000 §8.5"},
	{Name: "noetl_lease_reclaims_total", Type: Counter, Labels: []string{"pool"}, Help: "Expired unit leases reclaimed (the holder stopped heartbeating)", Source: "seed 000 §8.5, §8.11 WorkerStalled"},
	{Name: "noetl_results_stored_total", Type: Counter, Labels: []string{"tier"}, Help: "Results stored, by tier (inline|gcs)", Source: "seed 004"},
}

// MetricByName returns the metric named name.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
