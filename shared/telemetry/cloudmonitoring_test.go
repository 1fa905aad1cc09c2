package telemetry

import (
	"context"
	"net"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
)

// collector is an OTLP/gRPC metrics endpoint that keeps what it receives.
type collector struct {
	colmetricpb.UnimplementedMetricsServiceServer
	mu  sync.Mutex
	got []*metricpb.Metric
	// points is the number of data points of each request.
	points []int
}

func (c *collector) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			c.got = append(c.got, sm.GetMetrics()...)
			for _, m := range sm.GetMetrics() {
				n += len(m.GetSum().GetDataPoints()) + len(m.GetHistogram().GetDataPoints()) + len(m.GetGauge().GetDataPoints())
			}
		}
	}
	c.points = append(c.points, n)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// startCollector starts a local OTLP collector and returns it with a
// meter provider exporting to it the way the gcp exporter does
// (otlpMetricExporter, pushMeterProvider; flushed by ForceFlush).
func startCollector(t *testing.T) (*collector, *sdkmetric.MeterProvider, context.Context) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &collector{}
	colmetricpb.RegisterMetricsServiceServer(srv, col)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	exp, err := otlpMetricExporter(ctx, l.Addr().String(), otlpmetricgrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	return col, pushMeterProvider(nil, exp, time.Hour), ctx
}

// An export with more data points than the Telemetry API accepts in one
// request goes out in requests of at most TelemetryAPIMaxPoints, every
// point exactly once.
func TestOTLPExportRespectsTheTelemetryAPILimit(t *testing.T) {
	col, mp, ctx := startCollector(t)
	m := NewMetrics(mp)
	const steps = 450
	for i := range steps {
		m.StepCalled(ctx, "examples/big", "step"+strconv.Itoa(i))
	}
	m.StepRunEnded(ctx, "examples/big", "step0", true, time.Second) // a counter point and a histogram point
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	total := 0
	for _, n := range col.points {
		if n > TelemetryAPIMaxPoints {
			t.Errorf("a request carried %d data points, over the Telemetry API's %d", n, TelemetryAPIMaxPoints)
		}
		total += n
	}
	if want := steps + 2; total != want || len(col.points) != (want+TelemetryAPIMaxPoints-1)/TelemetryAPIMaxPoints {
		t.Errorf("requests of %v points (total %d), want %d points in %d requests", col.points, total, want, (want+TelemetryAPIMaxPoints-1)/TelemetryAPIMaxPoints)
	}
	steps0 := map[string]int{}
	for _, mt := range col.got {
		for _, dp := range mt.GetSum().GetDataPoints() {
			for _, kv := range dp.GetAttributes() {
				if kv.GetKey() == LabelStep {
					steps0[mt.GetName()+"/"+kv.GetValue().GetStringValue()]++
				}
			}
		}
	}
	for k, c := range steps0 {
		if c != 1 {
			t.Errorf("%s exported %d times", k, c)
		}
	}
	if len(steps0) != steps+1 {
		t.Errorf("%d distinct counter points, want %d", len(steps0), steps+1)
	}
}

// cloudMonitoringType applies the Telemetry API's Prometheus mapping
// (cloudmonitoring.go) to an OTLP metric as it arrived on the wire.
func cloudMonitoringType(m *metricpb.Metric) string {
	kind := ""
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Sum:
		kind = "gauge"
		if d.Sum.GetIsMonotonic() {
			kind = "counter"
		}
	case *metricpb.Metric_Gauge:
		kind = "gauge"
	case *metricpb.Metric_Histogram, *metricpb.Metric_ExponentialHistogram:
		kind = "histogram"
	}
	return CloudMonitoringPrefix + m.GetName() + "/" + kind
}

// What the gcp metrics exporter sends over OTLP (the same exporter and
// periodic reader as production, pointed at a local collector) lands in
// Cloud Monitoring under exactly InstrumentSpec.CloudMonitoringType: one
// metric per instrument, its name unchanged, counters as monotonic
// cumulative sums, up-down counters as non-monotonic sums, histograms
// with the instrument's buckets. Dashboards and alerts are checked
// against these types (infra/infra_test.go), so a change of name or
// instrument kind fails there.
func TestOTLPExportMatchesCloudMonitoringTypes(t *testing.T) {
	col, mp, ctx := startCollector(t)
	m := NewMetrics(mp)
	for _, s := range Instruments {
		if s.Kind == KindHistogram {
			m.record(ctx, s.Name, 1)
		} else {
			m.add(ctx, s.Name, 1)
		}
	}
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	got := map[string]*metricpb.Metric{}
	for _, mt := range col.got {
		got[mt.GetName()] = mt
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(got) != len(Instruments) {
		t.Errorf("collector got %d metrics %v, want one per instrument (%d)", len(got), names, len(Instruments))
	}
	for _, s := range Instruments {
		mt, ok := got[s.Name]
		if !ok {
			t.Errorf("%s was not exported under its name (got %v)", s.Name, names)
			continue
		}
		if ct := cloudMonitoringType(mt); ct != s.CloudMonitoringType() {
			t.Errorf("%s lands as %s in Cloud Monitoring, InstrumentSpec.CloudMonitoringType says %s", s.Name, ct, s.CloudMonitoringType())
		}
		switch d := mt.GetData().(type) {
		case *metricpb.Metric_Sum:
			if d.Sum.GetAggregationTemporality() != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
				t.Errorf("%s: temporality %v, want cumulative (Managed Prometheus counters)", s.Name, d.Sum.GetAggregationTemporality())
			}
		case *metricpb.Metric_Histogram:
			bounds := d.Histogram.GetDataPoints()[0].GetExplicitBounds()
			if len(bounds) != len(s.Buckets) {
				t.Errorf("%s: %d buckets exported, %d declared", s.Name, len(bounds), len(s.Buckets))
			}
		}
	}
}

func TestCloudMonitoringNames(t *testing.T) {
	for name, want := range map[string]string{
		MetricDLQ:               "prometheus.googleapis.com/noetl_dlq_total/counter",
		MetricTaskQueueInflight: "prometheus.googleapis.com/noetl_task_queue_inflight/gauge",
		MetricStepDuration:      "prometheus.googleapis.com/noetl_step_duration_seconds/histogram",
	} {
		s, ok := InstrumentByName(name)
		if !ok || s.CloudMonitoringType() != want {
			t.Errorf("%s: Cloud Monitoring type %q, want %q", name, s.CloudMonitoringType(), want)
		}
		if got, ok := InstrumentByCloudMonitoringType(want); !ok || got.Name != name {
			t.Errorf("InstrumentByCloudMonitoringType(%s) = %s, %v", want, got.Name, ok)
		}
	}
	for series, want := range map[string]string{
		"noetl_step_duration_seconds_bucket": MetricStepDuration, "noetl_step_duration_seconds_count": MetricStepDuration,
		"noetl_dlq_total": MetricDLQ, "noetl_task_queue_inflight": MetricTaskQueueInflight,
	} {
		if s, ok := InstrumentBySeries(series); !ok || s.Name != want {
			t.Errorf("InstrumentBySeries(%s) = %s, %v; want %s", series, s.Name, ok, want)
		}
	}
	for _, bad := range []string{"noetl_step_duration_seconds", "noetl_dlq_total_total", "workload.googleapis.com/noetl_dlq_total"} {
		if _, ok := InstrumentBySeries(bad); ok {
			t.Errorf("InstrumentBySeries(%s) found an instrument", bad)
		}
		if _, ok := InstrumentByCloudMonitoringType(bad); ok {
			t.Errorf("InstrumentByCloudMonitoringType(%s) found an instrument", bad)
		}
	}
}
