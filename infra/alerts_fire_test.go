package infra

import (
	"context"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/telemetry"
)

// Alert firing tests in the shape of promtool's `test rules`: each rule of
// infra/prometheus/rules is fed synthetic series and evaluated every
// minute with Prometheus's own PromQL engine (prometheus/prometheus/
// promql); an alert fires once its expression has returned a sample at
// every evaluation for its `for` (Prometheus's pending → firing). Every
// rule has a case that must fire and one that must not.

// fsample is one float sample (chunks.Sample).
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// series is a synthetic series in promtool's notation start+step×n, step
// per minute: scraped every 15 s (infra/prometheus/prometheus.yml) from
// t=0 for n minutes.
type series struct {
	labels map[string]string
	start  float64
	step   float64
	n      int
}

// seriesSet is a storage.SeriesSet over a slice.
type seriesSet struct {
	s []storage.Series
	i int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i <= len(s.s) }
func (s *seriesSet) At() storage.Series                { return s.s[s.i-1] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// queryable serves the synthetic series.
func queryable(in []series) storage.Queryable {
	var all []storage.Series
	for _, s := range in {
		var smp []chunks.Sample
		for i := 0; i <= s.n*4; i++ {
			smp = append(smp, fsample{t: int64(i) * 15000, f: s.start + float64(i)*s.step/4})
		}
		all = append(all, storage.NewListSeries(labels.FromMap(s.labels), smp))
	}
	sort.Slice(all, func(i, j int) bool { return labels.Compare(all[i].Labels(), all[j].Labels()) < 0 })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var out []storage.Series
	next:
		for _, s := range all {
			for _, m := range ms {
				if !m.Matches(s.Labels().Get(m.Name)) {
					continue next
				}
			}
			out = append(out, s)
		}
		return &seriesSet{s: out}
	}}}
}

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
			For   string `yaml:"for"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// fires evaluates expr every minute over [0, minutes] (the rules'
// evaluation interval is 15 s; a minute is enough for `for` of whole
// minutes) and returns the first minute at which it has been true for
// `forDur` (-1: never).
func fires(t *testing.T, q storage.Queryable, expr string, forDur time.Duration, minutes int) int {
	t.Helper()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	active := -1
	for m := 0; m <= minutes; m++ {
		qry, err := eng.NewInstantQuery(context.Background(), q, nil, expr, time.UnixMilli(int64(m)*60000))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		res := qry.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s at %dm: %v", expr, m, res.Err)
		}
		v, _ := res.Vector()
		qry.Close()
		if len(v) == 0 {
			active = -1
			continue
		}
		if active < 0 {
			active = m
		}
		if time.Duration(m-active)*time.Minute >= forDur {
			return m
		}
	}
	return -1
}

// durationBuckets returns the noetl_step_duration_seconds_bucket series of
// one step that observed perMinute runs a minute, every one taking d
// seconds, in the engine's own buckets (telemetry.StepDurationBuckets).
func durationBuckets(d float64, perMinute float64, minutes int) []series {
	var out []series
	for _, le := range append(append([]float64(nil), telemetry.StepDurationBuckets...), -1) {
		name := "+Inf"
		step := perMinute
		if le >= 0 {
			name = strconv.FormatFloat(le, 'f', -1, 64)
			if d > le {
				step = 0
			}
		}
		out = append(out, series{labels: map[string]string{"__name__": "noetl_step_duration_seconds_bucket", "le": name, "workflow": "w", "step": "s"}, step: step, n: minutes})
	}
	return out
}

func TestAlertsFire(t *testing.T) {
	b, err := os.ReadFile("prometheus/rules/noetl-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	counter := func(name string, perMinute float64, lbl ...string) series {
		l := map[string]string{"__name__": name}
		for i := 0; i+1 < len(lbl); i += 2 {
			l[lbl[i]] = lbl[i+1]
		}
		return series{labels: l, step: perMinute, n: 40}
	}
	// The synthetic series of each rule: one set that must fire within 40
	// minutes, one that must not.
	cases := map[string]struct{ fire, quiet []series }{
		"HighDLQGrowth": {
			fire:  []series{counter("noetl_dlq_total", 60*20, "kind", "http", "reason", "max_attempts", "source", "execute")},
			quiet: []series{counter("noetl_dlq_total", 60*2, "kind", "http", "reason", "max_attempts", "source", "execute")},
		},
		"StepFailureRateHigh": {
			fire: []series{counter("noetl_step_runs_total", 30, "workflow", "w", "step", "s", "ok", "false"),
				counter("noetl_step_runs_total", 70, "workflow", "w", "step", "s", "ok", "true")},
			quiet: []series{counter("noetl_step_runs_total", 3, "workflow", "w", "step", "s", "ok", "false"),
				counter("noetl_step_runs_total", 97, "workflow", "w", "step", "s", "ok", "true")},
		},
		"WorkerStalled": {
			fire:  []series{counter("noetl_lease_reclaimed_total", 2, "lease", "unit")},
			quiet: []series{counter("noetl_lease_reclaimed_total", 0, "lease", "unit")},
		},
		"SinkErrorRateHigh": {
			fire: []series{counter("noetl_sink_tasks_completed_total", 10, "sink", "postgres:store", "ok", "false"),
				counter("noetl_sink_tasks_completed_total", 90, "sink", "postgres:store", "ok", "true")},
			quiet: []series{counter("noetl_sink_tasks_completed_total", 1, "sink", "postgres:store", "ok", "false"),
				counter("noetl_sink_tasks_completed_total", 99, "sink", "postgres:store", "ok", "true")},
		},
		// Steps of 7 minutes (over the 5-minute SLA) against steps of 4.
		"ExecutionSLAExceeded": {fire: durationBuckets(420, 2, 40), quiet: durationBuckets(240, 2, 40)},
	}
	seen := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			c, ok := cases[r.Alert]
			if !ok {
				t.Errorf("alert %s has no firing test: add its synthetic series to TestAlertsFire", r.Alert)
				continue
			}
			seen++
			forDur, err := time.ParseDuration(r.For)
			if err != nil && r.For != "" {
				t.Fatalf("%s: for %q: %v", r.Alert, r.For, err)
			}
			t.Run(r.Alert, func(t *testing.T) {
				if m := fires(t, queryable(c.fire), r.Expr, forDur, 40); m < 0 {
					t.Errorf("did not fire on its firing series within 40 minutes")
				} else {
					t.Logf("fires at minute %d", m)
				}
				if m := fires(t, queryable(c.quiet), r.Expr, forDur, 40); m >= 0 {
					t.Errorf("fired at minute %d on quiet series", m)
				}
			})
		}
	}
	if seen != len(cases) {
		t.Errorf("%d of %d cases match a rule", seen, len(cases))
	}
}
