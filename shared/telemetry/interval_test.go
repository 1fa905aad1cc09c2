package telemetry

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// countingExporter counts the pushes of a periodic reader.
type countingExporter struct{ n atomic.Int64 }

func (e *countingExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (e *countingExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (e *countingExporter) Export(context.Context, *metricdata.ResourceMetrics) error {
	e.n.Add(1)
	return nil
}
func (e *countingExporter) ForceFlush(context.Context) error { return nil }
func (e *countingExporter) Shutdown(context.Context) error   { return nil }

// TestPushIntervalTakesEffect: the push meter provider (the gcp
// exporter's) pushes every Config.MetricsInterval
// (NOETL_METRICS_EXPORT_INTERVAL_S): at 50 ms it has pushed several times
// within seconds; at an hour, not once in the same wait.
func TestPushIntervalTakesEffect(t *testing.T) {
	run := func(c Config, wait time.Duration, enough int64) int64 {
		exp := &countingExporter{}
		mp := pushMeterProvider(nil, exp, c.MetricsInterval)
		defer func() { _ = mp.Shutdown(context.Background()) }()
		cnt, _ := mp.Meter("interval-test").Int64Counter("noetl_interval_test_total")
		cnt.Add(context.Background(), 1)
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) && (enough == 0 || exp.n.Load() < enough) {
			time.Sleep(10 * time.Millisecond)
		}
		return exp.n.Load()
	}
	if n := run(Config{MetricsInterval: 50 * time.Millisecond}, 10*time.Second, 3); n < 3 {
		t.Fatalf("a 50 ms interval pushed %d times in 10 s", n)
	}
	if n := run(Config{MetricsInterval: time.Hour}, 300*time.Millisecond, 0); n != 0 {
		t.Fatalf("an hour's interval pushed %d times in 300 ms", n)
	}
}
