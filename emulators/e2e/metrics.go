package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of the functions host's /metrics: every sample by
// series key (SeriesKey); a histogram contributes <name>_count and
// <name>_sum.
type Metrics map[string]float64

// SeriesKey is the key of a series in Metrics: name{label="value",...}
// with the labels sorted by name (name alone without labels).
func SeriesKey(name string, labels ...string) string {
	if len(labels)%2 != 0 {
		panic("SeriesKey: labels must be name, value pairs")
	}
	var kv []string
	for i := 0; i < len(labels); i += 2 {
		kv = append(kv, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	sort.Strings(kv)
	if len(kv) == 0 {
		return name
	}
	return name + "{" + strings.Join(kv, ",") + "}"
}

// Scrape reads $NOETL_FUNCTIONS_URL/metrics (Prometheus text format).
func Scrape(t testing.TB) Metrics {
	t.Helper()
	resp, err := http.Get(os.Getenv("NOETL_FUNCTIONS_URL") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	out := Metrics{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[SeriesKey(name, labels...)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[SeriesKey(name, labels...)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[SeriesKey(name+"_count", labels...)] = float64(m.GetHistogram().GetSampleCount())
				out[SeriesKey(name+"_sum", labels...)] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_UNTYPED:
				out[SeriesKey(name, labels...)] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// Delta returns after[key] - m[key] (a missing series counts as 0).
func (m Metrics) Delta(after Metrics, key string) float64 { return after[key] - m[key] }
