package telemetry

// Cloud Monitoring names of the engine's metrics.
//
// With NOETL_METRICS_EXPORTER=gcp the instruments of Instruments are
// pushed over OTLP to the Telemetry API (telemetry.googleapis.com), which
// writes every point "as it is for Google Cloud Managed Service for
// Prometheus, by using the Prometheus mapping" (Telemetry API, v1.metrics
// overview): the metric keeps its name (names matching
// [a-zA-Z][a-zA-Z0-9_:./]* are accepted unchanged) and its Cloud
// Monitoring metric type is prometheus.googleapis.com/<name>/<kind>, where
// kind is the Prometheus type of the OTLP data: a monotonic Sum is a
// counter, a non-monotonic Sum and a Gauge are gauges, a Histogram is a
// histogram (the Managed Prometheus naming of
// GoogleCloudPlatform/opentelemetry-operations-go, googlemanagedprometheus
// GetMetricName). The monitored resource is prometheus_target.
//
// In PromQL (Cloud Monitoring's or Prometheus') a counter or gauge is
// queried by its name and a histogram by <name>_bucket, <name>_sum and
// <name>_count. infra/infra_test.go checks every dashboard query, alert
// filter and rule against these names; TestOTLPExportMatchesCloudMonitoringTypes
// checks that the OTLP exporter produces the data types the kinds come from.

import "strings"

// CloudMonitoringPrefix prefixes the Cloud Monitoring metric type of
// every metric the Telemetry API ingests over OTLP.
const CloudMonitoringPrefix = "prometheus.googleapis.com/"

// CloudMonitoringResource is the monitored-resource type of those metrics.
const CloudMonitoringResource = "prometheus_target"

// PrometheusKind is the Prometheus type of the instrument's series:
// "counter" (a Counter: a monotonic sum), "gauge" (an UpDownCounter: a
// non-monotonic sum) or "histogram".
func (s InstrumentSpec) PrometheusKind() string {
	switch s.Kind {
	case KindCounter:
		return "counter"
	case KindUpDownCounter:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return ""
}

// CloudMonitoringType is the instrument's Cloud Monitoring metric type:
// prometheus.googleapis.com/<Name>/<PrometheusKind>, e.g.
// prometheus.googleapis.com/noetl_dlq_total/counter.
func (s InstrumentSpec) CloudMonitoringType() string {
	return CloudMonitoringPrefix + s.Name + "/" + s.PrometheusKind()
}

// SeriesNames are the names PromQL queries the instrument by: the name of
// a counter or gauge, or a histogram's <name>_bucket, <name>_sum and
// <name>_count.
func (s InstrumentSpec) SeriesNames() []string {
	if s.Kind == KindHistogram {
		return []string{s.Name + "_bucket", s.Name + "_sum", s.Name + "_count"}
	}
	return []string{s.Name}
}

// InstrumentByName returns the instrument named name.
func InstrumentByName(name string) (InstrumentSpec, bool) {
	for _, s := range Instruments {
		if s.Name == name {
			return s, true
		}
	}
	return InstrumentSpec{}, false
}

// InstrumentBySeries returns the instrument a PromQL series name belongs
// to (a counter's or gauge's name, a histogram's _bucket, _sum or _count
// series); a histogram's bare name is not a series.
func InstrumentBySeries(series string) (InstrumentSpec, bool) {
	for _, s := range Instruments {
		for _, n := range s.SeriesNames() {
			if n == series {
				return s, true
			}
		}
	}
	return InstrumentSpec{}, false
}

// InstrumentByCloudMonitoringType returns the instrument of a Cloud
// Monitoring metric type (prometheus.googleapis.com/<name>/<kind>).
func InstrumentByCloudMonitoringType(t string) (InstrumentSpec, bool) {
	if !strings.HasPrefix(t, CloudMonitoringPrefix) {
		return InstrumentSpec{}, false
	}
	for _, s := range Instruments {
		if s.CloudMonitoringType() == t {
			return s, true
		}
	}
	return InstrumentSpec{}, false
}
