package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// seedMetrics is NoETL observability spec §8.1 as written there: name, labels, buckets.
// Instruments must hold each of them (step_runs gains the ok label that
// §8.10 and §8.11 query).
var seedMetrics = []struct {
	name    string
	labels  []string
	buckets []float64
}{
	{"noetl_executions_started_total", []string{"workflow"}, nil},
	{"noetl_executions_completed_total", []string{"workflow", "status"}, nil},
	{"noetl_step_calls_total", []string{"workflow", "step"}, nil},
	{"noetl_step_runs_total", []string{"workflow", "step", "ok"}, nil},
	// The seed's buckets plus 600, 1800, 3600: above the 300 s SLA of
	// ExecutionSLAExceeded (infra TestAlertsFire).
	{"noetl_step_duration_seconds", []string{"workflow", "step"}, []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}},
	{"noetl_loop_items_total", []string{"workflow", "step"}, nil},
	{"noetl_loop_completed_total", []string{"workflow", "step", "ok"}, nil},
	{"noetl_task_queue_inflight", []string{"pool"}, nil},
	{"noetl_sink_dispatch_total", []string{"sink", "workflow", "step"}, nil},
	{"noetl_sink_duration_seconds", []string{"sink", "workflow", "step"}, []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1, 2}},
	{"noetl_when_eval_total", []string{"workflow", "step", "outcome"}, nil},
	{"noetl_edge_eval_total", []string{"workflow", "from", "to", "outcome"}, nil},
	{"noetl_worker_tasks_started_total", []string{"kind", "pool"}, nil},
	{"noetl_worker_tasks_completed_total", []string{"kind", "pool", "ok"}, nil},
	{"noetl_worker_task_duration_seconds", []string{"kind"}, []float64{0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30}},
	{"noetl_sink_tasks_completed_total", []string{"sink", "ok"}, nil},
	{"noetl_plugin_errors_total", []string{"kind", "error_class"}, nil},
	{"noetl_dlq_total", []string{"kind", "reason", "source"}, nil},
}

func TestInstrumentsCoverSeed(t *testing.T) {
	byName := map[string]InstrumentSpec{}
	for _, s := range Instruments {
		if _, dup := byName[s.Name]; dup {
			t.Errorf("instrument %s declared twice", s.Name)
		}
		byName[s.Name] = s
	}
	for _, want := range seedMetrics {
		got, ok := byName[want.name]
		if !ok {
			t.Errorf("seed metric %s is missing", want.name)
			continue
		}
		if !reflect.DeepEqual(sorted(got.Labels), sorted(want.labels)) {
			t.Errorf("%s labels = %v, seed says %v", want.name, got.Labels, want.labels)
		}
		if !reflect.DeepEqual(got.Buckets, want.buckets) {
			t.Errorf("%s buckets = %v, seed says %v", want.name, got.Buckets, want.buckets)
		}
	}
	// Every per-kind bucket list of NoETL observability spec §8.1 is inside the union.
	for kind, bs := range map[string][]float64{
		"http": {0.05, 0.1, 0.2, 0.5, 1, 2, 5}, "db": {0.01, 0.05, 0.1, 0.2, 0.5, 1, 2}, "python": {0.1, 0.5, 1, 2, 5, 10, 30},
	} {
		for _, b := range bs {
			if !slices.Contains(TaskDurationBuckets, b) {
				t.Errorf("task duration bucket %g of kind %s is missing", b, kind)
			}
		}
	}
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// recordAll calls every facade method once or more.
func recordAll(m *Metrics) {
	ctx := context.Background()
	m.ExecutionStarted(ctx, "wf")
	m.ExecutionStarted(ctx, "wf")
	m.ExecutionCompleted(ctx, "wf", ExecOK)
	m.ExecutionCompleted(ctx, "wf", ExecFail)
	m.StepCalled(ctx, "wf", "fetch")
	m.StepRunEnded(ctx, "wf", "fetch", true, 1500*time.Millisecond)
	m.StepRunEnded(ctx, "wf", "fetch", false, 400*time.Second)
	m.LoopPlanned(ctx, "wf", "each", 5)
	m.LoopItemCompleted(ctx, "wf", "each", true)
	m.TaskEnqueued(ctx, "work")
	m.TaskEnqueued(ctx, "work")
	m.TaskAcknowledged(ctx, "work")
	m.SinkDispatched(ctx, "postgres:store", "wf", "save", 30*time.Millisecond)
	m.SinkTaskCompleted(ctx, "postgres:store", false)
	m.WhenEvaluated(ctx, "wf", "fetch", WhenFalse)
	m.EdgeEvaluated(ctx, "wf", "fetch", "end", EdgeTaken)
	m.TaskStarted(ctx, "http", "work")
	m.TaskCompleted(ctx, "http", "work", true, 120*time.Millisecond)
	m.PluginError(ctx, "http", "timeout")
	m.DeadLettered(ctx, "http", DLQMaxAttempts, "execute")
	m.TaskRetried(ctx, "wf", "fetch", "http")
	m.LeaseAcquired(ctx, LeaseUnit)
	m.LeaseRenewed(ctx, LeaseUnit)
	m.LeaseReclaimed(ctx, LeaseIteration)
	m.LeaseLost(ctx, LeaseUnit)
	m.ResultOffloaded(ctx, "feather", 300_000)
	m.ResultResolved(ctx, "feather", ResolveOK)
	m.ResultWriteConflict(ctx, ConflictVersioned)
	m.ResultCacheHit(ctx)
	m.ResultCacheMiss(ctx)
	m.ResultCacheEvicted(ctx, 2)
	m.ResultCacheBytes(ctx, 4096)
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestMetricsExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	mp, err := PrometheusMeterProvider(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	recordAll(NewMetrics(mp))
	fams := gather(t, reg)

	wantType := map[InstrumentKind]dto.MetricType{KindCounter: dto.MetricType_COUNTER, KindUpDownCounter: dto.MetricType_GAUGE, KindHistogram: dto.MetricType_HISTOGRAM}
	for _, spec := range Instruments {
		f, ok := fams[spec.Name]
		if !ok {
			t.Errorf("%s not exported (no facade method records it?)", spec.Name)
			continue
		}
		if f.GetType() != wantType[spec.Kind] {
			t.Errorf("%s type = %v, want %v", spec.Name, f.GetType(), wantType[spec.Kind])
		}
		for _, m := range f.GetMetric() {
			var names []string
			for k := range labelsOf(m) {
				names = append(names, k)
			}
			if !reflect.DeepEqual(sorted(names), sorted(spec.Labels)) {
				t.Errorf("%s labels = %v, want exactly %v", spec.Name, names, spec.Labels)
			}
			if spec.Kind == KindHistogram {
				var bounds []float64
				for _, b := range m.GetHistogram().GetBucket() {
					bounds = append(bounds, b.GetUpperBound())
				}
				if !reflect.DeepEqual(bounds, spec.Buckets) {
					t.Errorf("%s buckets = %v, want %v", spec.Name, bounds, spec.Buckets)
				}
			}
		}
	}

	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		for _, m := range fams[name].GetMetric() {
			if reflect.DeepEqual(labelsOf(m), labels) {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		t.Errorf("%s%v not found", name, labels)
		return -1
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{MetricExecutionsStarted, map[string]string{"workflow": "wf"}, 2},
		{MetricExecutionsCompleted, map[string]string{"workflow": "wf", "status": "fail"}, 1},
		{MetricStepRuns, map[string]string{"workflow": "wf", "step": "fetch", "ok": "false"}, 1},
		{MetricStepDuration, map[string]string{"workflow": "wf", "step": "fetch"}, 2},
		{MetricLoopItems, map[string]string{"workflow": "wf", "step": "each"}, 5},
		{MetricTaskQueueInflight, map[string]string{"pool": "work"}, 1},
		{MetricEdgeEval, map[string]string{"workflow": "wf", "from": "fetch", "to": "end", "outcome": "taken"}, 1},
		{MetricDLQ, map[string]string{"kind": "http", "reason": "max_attempts", "source": "execute"}, 1},
		{MetricLeaseReclaimed, map[string]string{"lease": "iteration"}, 1},
	}
	for _, c := range checks {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// 400 s lies above the last step bucket (300): only +Inf counts it.
	for _, m := range fams[MetricStepDuration].GetMetric() {
		for _, b := range m.GetHistogram().GetBucket() {
			if b.GetUpperBound() == 300 && b.GetCumulativeCount() != 1 {
				t.Errorf("step duration le=300 count = %d, want 1", b.GetCumulativeCount())
			}
		}
	}
}

func TestMetricsHandlerServesText(t *testing.T) {
	tel, err := SetupConfig(context.Background(), Config{Service: "test", MetricsExporter: MetricsPrometheus, SampleRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Shutdown(context.Background()) })
	if tel.Metrics == nil {
		t.Fatal("no /metrics handler with the prometheus exporter")
	}
	M.StepRunEnded(context.Background(), "examples/hello", "start", true, 250*time.Millisecond)
	M.TaskCompleted(context.Background(), "python", "work", false, 3*time.Second)
	rec := httptest.NewRecorder()
	MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, line := range []string{
		"# TYPE noetl_step_runs_total counter",
		`noetl_step_runs_total{ok="true",step="start",workflow="examples/hello"} 1`,
		`noetl_step_duration_seconds_bucket{step="start",workflow="examples/hello",le="0.1"} 0`,
		`noetl_step_duration_seconds_bucket{step="start",workflow="examples/hello",le="0.5"} 1`,
		`noetl_worker_tasks_completed_total{kind="python",ok="false",pool="work"} 1`,
		`noetl_worker_task_duration_seconds_bucket{kind="python",le="2"} 0`,
		`noetl_worker_task_duration_seconds_bucket{kind="python",le="5"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(text, "otel_scope_name") {
		t.Error("/metrics carries otel_scope_* labels; the seed's label sets are exact")
	}

	// With another exporter the handler says why it has nothing.
	if _, err := SetupConfig(context.Background(), Config{Service: "test", MetricsExporter: MetricsNone}); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "NOETL_METRICS_EXPORTER") {
		t.Errorf("handler without prometheus: %d %q", rec.Code, rec.Body.String())
	}
}

func TestMetricsZeroAndNilRecordNothing(t *testing.T) {
	var nilM *Metrics
	recordAll(nilM)
	recordAll(&Metrics{})
}
