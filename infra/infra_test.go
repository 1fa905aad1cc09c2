// Package infra holds the checks of the operational artefacts in this
// directory: the dashboards, alert rules and runbooks parse, use only the
// series, labels and Cloud Monitoring metric types of the instruments the
// engine exports (shared/telemetry.Instruments, InstrumentSpec.
// CloudMonitoringType: what the OTLP exporter lands in Cloud Monitoring
// under the Telemetry API's Prometheus mapping), cover the starter
// panels and alert rules of NoETL observability spec §8.10/§8.11 with the payload fields
// §8.11 requires, and the runbooks use the CLI's commands.
package infra

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/telemetry"
)

// Seed 000 §8.11 alert names and the payload fields an alert must carry.
var (
	seedAlerts    = []string{"HighDLQGrowth", "StepFailureRateHigh", "WorkerStalled", "SinkErrorRateHigh", "ExecutionSLAExceeded"}
	payloadFields = []string{"execution_id", "workflow_ref", "step_id", "error_class", "link"}
	// Seed 000 §8.10 panel sections.
	seedSections = []string{"Execution overview", "Worker health", "Sinks", "Guards"}
)

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	fs, err := filepath.Glob(pattern)
	if err != nil || len(fs) == 0 {
		t.Fatalf("no files match %s", pattern)
	}
	return fs
}

// strings collects every string in a decoded JSON/YAML value.
func allStrings(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case []any:
		for _, e := range x {
			allStrings(e, out)
		}
	case map[string]any:
		for _, e := range x {
			allStrings(e, out)
		}
	}
}

var (
	// cmType is a Cloud Monitoring filter's metric type.
	cmType = regexp.MustCompile(`metric\.type\s*=\s*"([^"]*)"`)
	// anyCMType is anything that looks like a Cloud Monitoring metric
	// type of an engine metric, in any string (prometheus.googleapis.com/
	// is the only right domain: telemetry.CloudMonitoringPrefix).
	anyCMType = regexp.MustCompile(`[a-z_]+[.:_]googleapis[._]com[/:]noetl_[A-Za-z0-9_/]*`)
	promName  = regexp.MustCompile(`\bnoetl_[a-z0-9_]+\b`)
	cmLabel   = regexp.MustCompile(`metric\.labels?\.([a-z_]+)`)
	byLabels  = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matchers  = regexp.MustCompile(`\{([^}]*)\}`)
	matcher   = regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)`)
)

// metricOf resolves a PromQL series name to the instrument the exporter
// produces (shared/telemetry.Instruments): a counter or gauge by its
// name, a histogram only as <name>_bucket, _sum or _count.
func metricOf(t *testing.T, where, series string) (telemetry.InstrumentSpec, bool) {
	t.Helper()
	if m, ok := telemetry.InstrumentBySeries(series); ok {
		return m, true
	}
	if m, ok := telemetry.InstrumentByName(series); ok && m.Kind == telemetry.KindHistogram {
		t.Errorf("%s: histogram %s used without _bucket/_sum/_count", where, series)
		return m, false
	}
	t.Errorf("%s: %s is not a series of an instrument the engine exports (shared/telemetry.Instruments)", where, series)
	return telemetry.InstrumentSpec{}, false
}

// checkPromQL checks the metric and label names of a PromQL expression
// (Prometheus names: Cloud Monitoring's PromQL queries the series the
// Telemetry API ingests by the same names) and returns the instruments it
// uses.
func checkPromQL(t *testing.T, where, expr string) []telemetry.InstrumentSpec {
	t.Helper()
	if strings.Contains(expr, "googleapis") {
		t.Errorf("%s: %q names a Cloud Monitoring domain; PromQL uses the Prometheus names", where, expr)
	}
	var used []telemetry.InstrumentSpec
	labels := map[string]bool{}
	for _, n := range promName.FindAllString(expr, -1) {
		if m, ok := metricOf(t, where, n); ok {
			used = append(used, m)
			for _, l := range m.Labels {
				labels[l] = true
			}
			if strings.HasSuffix(n, "_bucket") {
				labels["le"] = true
			}
		}
	}
	if len(used) == 0 {
		t.Errorf("%s: %q uses no engine metric", where, expr)
	}
	var refs []string
	for _, m := range byLabels.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			refs = append(refs, strings.TrimSpace(l))
		}
	}
	for _, m := range matchers.FindAllStringSubmatch(expr, -1) {
		for _, mm := range matcher.FindAllStringSubmatch(m[1], -1) {
			refs = append(refs, mm[1])
		}
	}
	for _, l := range refs {
		if l != "" && !labels[l] {
			t.Errorf("%s: label %q is not a label of the metrics used (%q)", where, l, expr)
		}
	}
	return used
}

// checkFilter checks a Cloud Monitoring filter: the prometheus_target
// resource, exactly one metric type, which is the Cloud Monitoring type of
// an exported instrument (prometheus.googleapis.com/<name>/<kind>), and
// metric.label.X names among its labels.
func checkFilter(t *testing.T, where, filter string, groupBy []string) telemetry.InstrumentSpec {
	t.Helper()
	if !strings.Contains(filter, `resource.type="`+telemetry.CloudMonitoringResource+`"`) {
		t.Errorf("%s: filter %q must select resource.type=%q (the Telemetry API's Prometheus mapping)", where, filter, telemetry.CloudMonitoringResource)
	}
	ms := cmType.FindAllStringSubmatch(filter, -1)
	if len(ms) != 1 {
		t.Errorf("%s: filter %q must name exactly one metric type", where, filter)
		return telemetry.InstrumentSpec{}
	}
	m, ok := telemetry.InstrumentByCloudMonitoringType(ms[0][1])
	if !ok {
		t.Errorf("%s: metric type %s is not the Cloud Monitoring type of an exported instrument (prometheus.googleapis.com/<name>/<counter|gauge|histogram>, shared/telemetry)", where, ms[0][1])
		return m
	}
	for _, l := range append(cmLabel.FindAllStringSubmatch(filter, -1), cmLabel.FindAllStringSubmatch(strings.Join(groupBy, " "), -1)...) {
		if !slices.Contains(m.Labels, l[1]) {
			t.Errorf("%s: %s has no label %q", where, m.Name, l[1])
		}
	}
	return m
}

func asStrings(v any) []string {
	var out []string
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			out = append(out, x.(string))
		}
	}
	return out
}

// grafanaPanels returns the Grafana dashboard's panels by title (rows as
// "section:<title>") with their PromQL expressions, checking each.
func grafanaPanels(t *testing.T) (map[string][]string, []string) {
	t.Helper()
	g := readJSON(t, "grafana/noetl.json")
	panels := map[string][]string{}
	var order []string
	for _, p := range g["panels"].([]any) {
		pm := p.(map[string]any)
		title := pm["title"].(string)
		if pm["type"] == "row" {
			title = "section:" + title
		} else {
			for _, tg := range pm["targets"].([]any) {
				expr := tg.(map[string]any)["expr"].(string)
				checkPromQL(t, "grafana: "+title, expr)
				panels[title] = append(panels[title], expr)
			}
		}
		if _, dup := panels[title]; dup && pm["type"] == "row" {
			t.Errorf("grafana: %s twice", title)
		}
		if pm["type"] == "row" {
			panels[title] = nil
		}
		order = append(order, title)
	}
	return panels, order
}

// The Cloud Monitoring dashboard shows the Grafana panels with the same
// PromQL (Cloud Monitoring runs PromQL over the series the Telemetry API
// ingests, under their Prometheus names), and every query names exported
// series and labels.
func TestCloudMonitoringDashboard(t *testing.T) {
	grafana, order := grafanaPanels(t)
	var titles []string
	for _, f := range glob(t, "monitoring/dashboards/*.json") {
		d := readJSON(t, f)
		if d["displayName"] == nil || d["mosaicLayout"] == nil {
			t.Fatalf("%s: not a Cloud Monitoring dashboard (displayName, mosaicLayout)", f)
		}
		tiles := d["mosaicLayout"].(map[string]any)["tiles"].([]any)
		for _, tl := range tiles {
			w := tl.(map[string]any)["widget"].(map[string]any)
			title, _ := w["title"].(string)
			if _, ok := w["sectionHeader"]; ok {
				titles = append(titles, "section:"+title)
				continue
			}
			titles = append(titles, title)
			chart, ok := w["xyChart"].(map[string]any)
			if !ok {
				t.Errorf("%s: tile %q is not an xyChart", f, title)
				continue
			}
			var exprs []string
			for _, ds := range chart["dataSets"].([]any) {
				q := ds.(map[string]any)["timeSeriesQuery"].(map[string]any)
				switch {
				case q["prometheusQuery"] != nil:
					expr := q["prometheusQuery"].(string)
					checkPromQL(t, f+": "+title, expr)
					exprs = append(exprs, expr)
				case q["timeSeriesFilter"] != nil:
					tf := q["timeSeriesFilter"].(map[string]any)
					agg, _ := tf["aggregation"].(map[string]any)
					checkFilter(t, f+": "+title, tf["filter"].(string), asStrings(agg["groupByFields"]))
				default:
					t.Errorf("%s: tile %q has no query", f, title)
				}
			}
			if want, ok := grafana[title]; !ok {
				t.Errorf("%s: tile %q has no Grafana panel of that title", f, title)
			} else if !slices.Equal(exprs, want) {
				t.Errorf("%s: tile %q queries %q, the Grafana panel %q", f, title, exprs, want)
			}
		}
	}
	if !slices.Equal(titles, order) {
		t.Errorf("Cloud Monitoring tiles %q differ from the Grafana panels %q (same panels, same order)", titles, order)
	}
	for _, s := range seedSections {
		if !slices.Contains(titles, "section:"+s) {
			t.Errorf("Cloud Monitoring dashboard lacks the §8.10 section %q", s)
		}
	}
}

// The fields monitoring.tf maps from the alert JSON: anything else would
// be dropped silently by Terraform.
var alertKeys = map[string][]string{
	"policy":        {"displayName", "combiner", "enabled", "severity", "userLabels", "conditions", "alertStrategy", "documentation"},
	"condition":     {"displayName", "conditionThreshold", "conditionMatchedLog"},
	"threshold":     {"filter", "comparison", "thresholdValue", "duration", "denominatorFilter", "aggregations", "denominatorAggregations", "trigger"},
	"aggregation":   {"alignmentPeriod", "perSeriesAligner", "crossSeriesReducer", "groupByFields"},
	"matchedLog":    {"filter", "labelExtractors"},
	"strategy":      {"autoClose", "notificationRateLimit"},
	"documentation": {"content", "subject", "links"},
}

func onlyKeys(t *testing.T, where, kind string, m map[string]any) {
	t.Helper()
	for k := range m {
		if !slices.Contains(alertKeys[kind], k) {
			t.Errorf("%s: %s field %q is not mapped by terraform/monitoring.tf", where, kind, k)
		}
	}
}

func TestCloudMonitoringAlerts(t *testing.T) {
	names := map[string]bool{}
	for _, f := range glob(t, "monitoring/alerts/*.json") {
		p := readJSON(t, f)
		onlyKeys(t, f, "policy", p)
		name, _ := p["displayName"].(string)
		names[name] = true
		doc, _ := p["documentation"].(map[string]any)
		onlyKeys(t, f, "documentation", doc)
		content, _ := doc["content"].(string)
		for _, field := range append([]string{"alert"}, payloadFields...) {
			if !strings.Contains(content, "- "+field+": ") {
				t.Errorf("%s: documentation lacks the payload field %s", f, field)
			}
		}
		if !strings.Contains(content, "__API_URL__") {
			t.Errorf("%s: the payload link must point at the api (__API_URL__)", f)
		}
		if rb := regexp.MustCompile(`infra/runbooks/([a-z-]+\.md)`).FindStringSubmatch(content); rb == nil {
			t.Errorf("%s: documentation names no runbook", f)
		} else if _, err := os.Stat(filepath.Join("runbooks", rb[1])); err != nil {
			t.Errorf("%s: runbook %s does not exist", f, rb[1])
		}
		strategy, _ := p["alertStrategy"].(map[string]any)
		onlyKeys(t, f, "strategy", strategy)
		conds, _ := p["conditions"].([]any)
		if len(conds) == 0 {
			t.Errorf("%s: no conditions", f)
		}
		for _, c := range conds {
			cm := c.(map[string]any)
			onlyKeys(t, f, "condition", cm)
			switch {
			case cm["conditionThreshold"] != nil:
				th := cm["conditionThreshold"].(map[string]any)
				onlyKeys(t, f, "threshold", th)
				for _, k := range []string{"filter", "comparison", "thresholdValue", "duration"} {
					if th[k] == nil {
						t.Errorf("%s: threshold condition lacks %s", f, k)
					}
				}
				for _, pair := range [][2]string{{"filter", "aggregations"}, {"denominatorFilter", "denominatorAggregations"}} {
					if th[pair[0]] == nil {
						continue
					}
					var groups []string
					aggs, _ := th[pair[1]].([]any)
					for _, a := range aggs {
						onlyKeys(t, f, "aggregation", a.(map[string]any))
						groups = append(groups, asStrings(a.(map[string]any)["groupByFields"])...)
					}
					checkFilter(t, f, th[pair[0]].(string), groups)
				}
			case cm["conditionMatchedLog"] != nil:
				ml := cm["conditionMatchedLog"].(map[string]any)
				onlyKeys(t, f, "matchedLog", ml)
				ex, _ := ml["labelExtractors"].(map[string]any)
				for _, field := range payloadFields[:4] {
					if ex[field] != "EXTRACT(jsonPayload."+field+")" {
						t.Errorf("%s: log condition must extract %s from the structured log", f, field)
					}
				}
				if !strings.Contains(ml["filter"].(string), "jsonPayload.event=") {
					t.Errorf("%s: log condition must match a NoETL observability spec §8.2 event", f)
				}
				if strategy["notificationRateLimit"] == nil {
					t.Errorf("%s: log-based policies need a notification rate limit", f)
				}
			default:
				t.Errorf("%s: condition without conditionThreshold or conditionMatchedLog", f)
			}
		}
	}
	for _, a := range seedAlerts {
		if !names[a] {
			t.Errorf("Cloud Monitoring lacks the NoETL observability spec §8.11 alert %s", a)
		}
	}
}

func TestPrometheusRules(t *testing.T) {
	b, err := os.ReadFile("prometheus/rules/noetl-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			seen[r.Alert] = true
			checkPromQL(t, "rule "+r.Alert, r.Expr)
			if r.For == "" || r.Labels["severity"] == "" {
				t.Errorf("rule %s: needs for and a severity label", r.Alert)
			}
			for _, k := range append([]string{"summary", "description", "runbook"}, payloadFields...) {
				if r.Annotations[k] == "" {
					t.Errorf("rule %s: annotation %s (NoETL observability spec §8.11 payload) missing", r.Alert, k)
				}
			}
			for k, v := range r.Annotations {
				for _, m := range promName.FindAllString(v, -1) {
					metricOf(t, "rule "+r.Alert+" annotation "+k, m)
				}
			}
			if _, err := os.Stat(r.Annotations["runbook"]); err != nil && !strings.HasPrefix(r.Annotations["runbook"], "infra/") {
				t.Errorf("rule %s: runbook %s", r.Alert, r.Annotations["runbook"])
			} else if _, err := os.Stat(strings.TrimPrefix(r.Annotations["runbook"], "infra/")); err != nil {
				t.Errorf("rule %s: runbook %s does not exist", r.Alert, r.Annotations["runbook"])
			}
		}
	}
	for _, a := range seedAlerts {
		if !seen[a] {
			t.Errorf("Prometheus rules lack the NoETL observability spec §8.11 alert %s", a)
		}
	}
	cfg, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil || !strings.Contains(string(cfg), "rules/noetl-alerts.yml") {
		t.Errorf("prometheus.yml must load rules/noetl-alerts.yml: %v", err)
	}
}

// cliCommands are the scripts/noetl commands the runbooks may use (issue
// README "Resilience").
var cliCommands = map[string][]string{
	"list": nil, "describe": nil, "events": nil, "cancel": nil, "trace": nil, "cost": nil,
	"catalog": nil, "credentials": nil, "dlq": {"list", "show", "replay", "discard"},
	"step": {"complete", "fail"},
}

func TestRunbooks(t *testing.T) {
	cmdRe := regexp.MustCompile("scripts/noetl ([a-z]+)(?: ([a-z]+))?")
	used := map[string]bool{}
	for _, name := range []string{"dlq-spike.md", "stuck-execution.md", "runaway-parallelism.md"} {
		b, err := os.ReadFile(filepath.Join("runbooks", name))
		if err != nil {
			t.Errorf("runbook %s: %v", name, err)
			continue
		}
		s := string(b)
		checkCMTypes(t, "runbook "+name, s)
		if !strings.Contains(s, "NoETL observability spec §8.13") && !strings.Contains(s, "Seed 000 §8.13") {
			t.Errorf("runbook %s does not name its source", name)
		}
		ms := cmdRe.FindAllStringSubmatch(s, -1)
		if len(ms) == 0 {
			t.Errorf("runbook %s uses no scripts/noetl command", name)
		}
		for _, m := range ms {
			subs, ok := cliCommands[m[1]]
			if !ok {
				t.Errorf("runbook %s: scripts/noetl %s is not a CLI command", name, m[1])
				continue
			}
			if subs == nil {
				used[m[1]] = true
				continue
			}
			if !slices.Contains(subs, m[2]) {
				t.Errorf("runbook %s: scripts/noetl %s %s is not a CLI command", name, m[1], m[2])
			}
			used[m[1]+" "+m[2]] = true
		}
		// PromQL in the runbooks uses the metric list too.
		for _, block := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(s, -1) {
			for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
				checkPromQL(t, "runbook "+name, line)
			}
		}
	}
	for _, c := range []string{"dlq list", "dlq show", "dlq replay", "dlq discard", "step complete", "step fail", "list", "describe", "events", "cancel", "trace", "cost"} {
		if !used[c] {
			t.Errorf("no runbook uses scripts/noetl %s", c)
		}
	}
}

// checkCMTypes checks every Cloud Monitoring metric type of an engine
// metric named in s: only prometheus.googleapis.com/<name>/<kind> of an
// exported instrument exists (workload.googleapis.com/noetl_x or PromQL's
// workload_googleapis_com:noetl_x never receive data).
func checkCMTypes(t *testing.T, where, s string) {
	t.Helper()
	for _, m := range anyCMType.FindAllString(s, -1) {
		if _, ok := telemetry.InstrumentByCloudMonitoringType(m); !ok {
			t.Errorf("%s: %s is not the Cloud Monitoring type of an exported instrument (%snoetl_<name>/<kind>)", where, m, telemetry.CloudMonitoringPrefix)
		}
	}
}

// TestEveryJSONParses covers every JSON file under infra/.
func TestEveryJSONParses(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		var ss []string
		allStrings(v, &ss)
		for _, s := range ss {
			checkCMTypes(t, p, s)
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Errorf("walked %d JSON files: %v", n, err)
	}
}

// The READMEs and the pages of docs/ name Cloud Monitoring metric types the
// way the exporter produces them, and their PromQL queries exported series.
func TestREADMEMetricTypes(t *testing.T) {
	pages, _ := filepath.Glob("../docs/*.md")
	if len(pages) < 5 {
		t.Fatalf("docs/ has %d pages", len(pages))
	}
	for _, f := range append([]string{"README.md", "../README.md"}, pages...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkCMTypes(t, f, string(b))
		for _, block := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
			for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
				checkPromQL(t, f, strings.TrimSpace(line))
			}
		}
	}
}
