package telemetry

import (
	"context"
	"errors"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TelemetryAPIMaxPoints is the most data points the Telemetry API
// accepts in one metrics request ("Configure a maximum export batch size
// of 200 metric data points so that requests don't exceed the Telemetry
// API limit of 200 data points per request": Cloud Monitoring, Use SDKs
// to send metrics from applications). One collection of the engine's
// instruments holds a point per label combination (workflow × step ...),
// easily more.
const TelemetryAPIMaxPoints = 200

// batchingExporter splits each export of the wrapped exporter into
// requests of at most limit data points (whole data points; a metric's
// points may span requests, each request repeating its name,
// description and unit).
type batchingExporter struct {
	sdkmetric.Exporter
	limit int
}

// newBatchingExporter wraps exp so that no request carries more than limit
// data points.
func newBatchingExporter(exp sdkmetric.Exporter, limit int) sdkmetric.Exporter {
	return &batchingExporter{Exporter: exp, limit: limit}
}

// Export sends rm in requests of at most e.limit data points, all of them
// even when one fails; the errors are joined.
func (e *batchingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	var errs []error
	for _, part := range splitPoints(rm, e.limit) {
		if err := e.Exporter.Export(ctx, part); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// splitPoints cuts rm into resource metrics of at most limit data points
// each, in order. A collection with no points is returned as is (one
// export, as the SDK does).
func splitPoints(rm *metricdata.ResourceMetrics, limit int) []*metricdata.ResourceMetrics {
	if limit <= 0 || countPoints(rm) <= limit {
		return []*metricdata.ResourceMetrics{rm}
	}
	var out []*metricdata.ResourceMetrics
	cur := &metricdata.ResourceMetrics{Resource: rm.Resource}
	n := 0
	flush := func() {
		if n > 0 {
			out = append(out, cur)
		}
		cur, n = &metricdata.ResourceMetrics{Resource: rm.Resource}, 0
	}
	add := func(scope metricdata.ScopeMetrics, m metricdata.Metrics) {
		k := len(cur.ScopeMetrics)
		if k == 0 || cur.ScopeMetrics[k-1].Scope != scope.Scope {
			cur.ScopeMetrics = append(cur.ScopeMetrics, metricdata.ScopeMetrics{Scope: scope.Scope})
			k++
		}
		cur.ScopeMetrics[k-1].Metrics = append(cur.ScopeMetrics[k-1].Metrics, m)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			total := pointsOf(m.Data)
			for from := 0; from < total || (total == 0 && from == 0); {
				room := limit - n
				if room == 0 {
					flush()
					room = limit
				}
				to := min(total, from+room)
				part := m
				part.Data = slicePoints(m.Data, from, to)
				add(sm, part)
				n += to - from
				if total == 0 {
					break
				}
				from = to
			}
		}
	}
	flush()
	return out
}

func countPoints(rm *metricdata.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			n += pointsOf(m.Data)
		}
	}
	return n
}

// pointsOf is the number of data points of an aggregation (one for a
// kind the engine does not produce: it is never split).
func pointsOf(a metricdata.Aggregation) int {
	switch d := a.(type) {
	case metricdata.Sum[int64]:
		return len(d.DataPoints)
	case metricdata.Sum[float64]:
		return len(d.DataPoints)
	case metricdata.Gauge[int64]:
		return len(d.DataPoints)
	case metricdata.Gauge[float64]:
		return len(d.DataPoints)
	case metricdata.Histogram[int64]:
		return len(d.DataPoints)
	case metricdata.Histogram[float64]:
		return len(d.DataPoints)
	case nil:
		return 0
	}
	return 1
}

// slicePoints returns a with its data points [from, to).
func slicePoints(a metricdata.Aggregation, from, to int) metricdata.Aggregation {
	switch d := a.(type) {
	case metricdata.Sum[int64]:
		d.DataPoints = d.DataPoints[from:to]
		return d
	case metricdata.Sum[float64]:
		d.DataPoints = d.DataPoints[from:to]
		return d
	case metricdata.Gauge[int64]:
		d.DataPoints = d.DataPoints[from:to]
		return d
	case metricdata.Gauge[float64]:
		d.DataPoints = d.DataPoints[from:to]
		return d
	case metricdata.Histogram[int64]:
		d.DataPoints = d.DataPoints[from:to]
		return d
	case metricdata.Histogram[float64]:
		d.DataPoints = d.DataPoints[from:to]
		return d
	}
	return a
}
