package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the table of docs/configuration.md from the registry")

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func files(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := m[p]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
	}
}

func mustParse(t *testing.T, env map[string]string, fsys map[string]string) Config {
	t.Helper()
	c, err := Parse(envOf(env), files(fsys))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func problems(t *testing.T, env map[string]string, fsys map[string]string) []Problem {
	t.Helper()
	_, err := Parse(envOf(env), files(fsys))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse error = %v, want *Error", err)
	}
	return ce.Problems
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, nil, nil)
	want := map[string]any{
		"Project": "noetl-local", "Location": "us-central1", "EventsTopic": "events", "CommandsTopic": "commands",
		"WorkQueue": "work", "TimersQueue": "timers", "FunctionsURL": "http://127.0.0.1:8680",
		"ExecuteURL": "http://127.0.0.1:8680/execute", "ExecuteAudience": "http://127.0.0.1:8680/execute",
		"ResultsBucket": "noetl-results", "ResultInlineMax": 65536, "RepoRoot": ".", "LeaseTTL": 30 * time.Second,
		"HeartbeatInterval": 10 * time.Second, "DispatchDeadline": 600 * time.Second, "ExecutionDeadline": time.Duration(0),
		"DefaultMaxInFlight": 10, "PythonBin": "", "PGDSN": "",
	}
	v := reflect.ValueOf(c)
	for f, w := range want {
		if got := v.FieldByName(f).Interface(); !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %v, want %v", f, got, w)
		}
	}
	if c.Retries.Plugin != (Backoff{6, 200 * time.Millisecond, 30 * time.Second}) || c.Retries.Sink != (Backoff{8, 200 * time.Millisecond, time.Minute}) {
		t.Errorf("retries = %+v", c.Retries)
	}
	if c.Timeouts.ToolDefault != 30*time.Second || c.Timeouts.LoopItem != 0 {
		t.Errorf("timeouts = %+v", c.Timeouts)
	}
	if !c.DLQ.Enabled || c.DLQ.RetentionDays != 30 || c.Tracing.SampleRate != 0.1 || !c.Tracing.ForceSampleOnError ||
		c.Metrics.Port != 0 || c.Metrics.Path != "/metrics" || c.Logging.Level != "info" || c.Logging.Format != "json" ||
		c.Policies.OnStepFail != "halt" || c.Policies.OnWhenError != "treat_as_false" || c.Policies.OnSinkFail != "retry" {
		t.Errorf("NoETL observability spec §8.12 defaults wrong: %+v %+v %+v %+v %+v", c.DLQ, c.Tracing, c.Metrics, c.Logging, c.Policies)
	}
	if len(c.Logging.RedactKeys) != 0 || len(c.Tracing.Exporter) != 0 || c.Metrics.ExportInterval != time.Minute {
		t.Errorf("redact keys %v (the built-in list alone), trace exporters %v (derived), export interval %v", c.Logging.RedactKeys, c.Tracing.Exporter, c.Metrics.ExportInterval)
	}
	if c.QueuePath("work") != "projects/noetl-local/locations/us-central1/queues/work" {
		t.Errorf("QueuePath = %s", c.QueuePath("work"))
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	c := mustParse(t, map[string]string{
		"GOOGLE_CLOUD_PROJECT":              "prod-1",
		"NOETL_FUNCTIONS_URL":               "http://localhost:9000/",
		"NOETL_LEASE_TTL_S":                 "45",
		"NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS": "10",
		"NOETL_TIMEOUTS_TOOL_DEFAULT_MS":    "1500",
		"NOETL_TRACING_SAMPLE_RATE":         "1",
		"NOETL_LOGGING_LEVEL":               "DEBUG",
		"NOETL_LOGGING_REDACT_KEYS":         " password , cookie ,,",
		"NOETL_POLICIES_ON_STEP_FAIL":       "route_edge:cleanup",
		"NOETL_HTTP_ALLOW_LINK_LOCAL":       "true",
		"NOETL_TASKS_SERVICE_ACCOUNT":       "noetl-tasks@prod-1.iam.gserviceaccount.com",
		"NOETL_RESULTS_BUCKET":              "", // empty counts as unset
	}, nil)
	if c.Project != "prod-1" || c.LeaseTTL != 45*time.Second || c.Retries.Plugin.MaxAttempts != 10 ||
		c.Timeouts.ToolDefault != 1500*time.Millisecond || c.Tracing.SampleRate != 1 || c.Logging.Level != "debug" ||
		c.Policies.OnStepFail != "route_edge:cleanup" || !c.HTTPAllowLinkLocal || c.ResultsBucket != "noetl-results" {
		t.Errorf("overrides not applied: %+v", c)
	}
	if c.ExecuteURL != "http://localhost:9000/execute" || c.ExecuteAudience != c.ExecuteURL {
		t.Errorf("derived execute URL/audience = %q / %q", c.ExecuteURL, c.ExecuteAudience)
	}
	if !reflect.DeepEqual(c.Logging.RedactKeys, []string{"password", "cookie"}) {
		t.Errorf("redact keys = %q", c.Logging.RedactKeys)
	}
}

func TestAliasIsReadWhenTheVariableIsUnset(t *testing.T) {
	if c := mustParse(t, map[string]string{"NOETL_LOG_LEVEL": "warn"}, nil); c.Logging.Level != "warn" {
		t.Errorf("NOETL_LOG_LEVEL alias: level = %q", c.Logging.Level)
	}
	if c := mustParse(t, map[string]string{"NOETL_LOG_LEVEL": "warn", "NOETL_LOGGING_LEVEL": "error"}, nil); c.Logging.Level != "error" {
		t.Errorf("NOETL_LOGGING_LEVEL must win over its alias: level = %q", c.Logging.Level)
	}
	ps := problems(t, map[string]string{"NOETL_LOG_LEVEL": "loud"}, nil)
	if len(ps) != 1 || !strings.Contains(ps[0].String(), "NOETL_LOG_LEVEL=loud") {
		t.Errorf("alias error must name the alias that was set: %v", ps)
	}
}

func TestBadValuesAreErrorsNamingTheVariable(t *testing.T) {
	cases := map[string]string{
		"NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS": "six",
		"NOETL_TRACING_SAMPLE_RATE":         "1.5",
		"NOETL_DLQ_ENABLED":                 "yes please",
		"NOETL_LOGGING_FORMAT":              "xml",
		"NOETL_POLICIES_ON_STEP_FAIL":       "explode",
		"NOETL_METRICS_PORT":                "70000",
		"NOETL_METRICS_PATH":                "metrics",
		"NOETL_EXECUTE_URL":                 "execute",
		"NOETL_TASKS_SERVICE_ACCOUNT":       "not an email",
		"NOETL_EVENTS_TOPIC":                "x",
		"NOETL_WORK_QUEUE":                  "work queue",
		"NOETL_LEASE_TTL_S":                 "-1",
		"NOETL_TRACING_EXPORTER":            "zipkin",
		"GOOGLE_CLOUD_PROJECT":              " ",
	}
	for env, val := range cases {
		t.Run(env, func(t *testing.T) {
			ps := problems(t, map[string]string{env: val}, nil)
			if len(ps) != 1 || ps[0].Env != env {
				t.Fatalf("problems = %v, want one for %s", ps, env)
			}
			if msg := ps[0].String(); !strings.HasPrefix(msg, env+"=") {
				t.Errorf("message %q does not start with %s=", msg, env)
			}
		})
	}
	// Every bad value is reported at once.
	ps := problems(t, cases, nil)
	if len(ps) < len(cases) {
		t.Errorf("got %d problems for %d bad values: %v", len(ps), len(cases), ps)
	}
	_, err := Parse(envOf(cases), files(nil))
	if !strings.HasPrefix(err.Error(), "config: ") || !strings.Contains(err.Error(), "NOETL_METRICS_PORT=70000") {
		t.Errorf("error text = %q", err)
	}
}

func TestRelationsBetweenKnobs(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"NOETL_HEARTBEAT_INTERVAL_S": "30"}, "NOETL_HEARTBEAT_INTERVAL_S"},
		{map[string]string{"NOETL_LEASE_TTL_S": "900"}, "NOETL_LEASE_TTL_S"},
		{map[string]string{"NOETL_RETRIES_PLUGIN_BASE_MS": "40000"}, "NOETL_RETRIES_PLUGIN_BASE_MS"},
		{map[string]string{"NOETL_RETRIES_SINK_MAX_MS": "100"}, "NOETL_RETRIES_SINK_BASE_MS"},
		{map[string]string{"NOETL_TIMEOUTS_LOOP_TOTAL_MS": "1000", "NOETL_TIMEOUTS_LOOP_ITEM_MS": "2000"}, "NOETL_TIMEOUTS_LOOP_ITEM_MS"},
		{map[string]string{"NOETL_FUNCTIONS_URL": ""}, ""}, // unset: default applies, no problem
	} {
		_, err := Parse(envOf(tc.env), files(nil))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: unexpected %v", tc.env, err)
			}
			continue
		}
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Env != tc.want {
			t.Errorf("%v: error %v, want one problem naming %s", tc.env, err, tc.want)
		}
	}
	// The lease TTL may grow once the dispatch deadline grows with it.
	c := mustParse(t, map[string]string{"NOETL_LEASE_TTL_S": "900", "NOETL_DISPATCH_DEADLINE_S": "1800"}, nil)
	if c.LeaseTTL != 900*time.Second {
		t.Errorf("lease = %s", c.LeaseTTL)
	}
}

const sampleYAML = `# noetl.yaml (NoETL observability spec §8.12 layout)
retries:
  plugin:
    max_attempts: 9
    base_ms: 100
timeouts:
  tool_default_ms: 5000
dlq:
  enabled: false
  retention_days: 7
tracing:
  sample_rate: 0.5
  exporter: GCP
logging:
  level: WARN
  redact_keys:
    - password
    - api_key
policies:
  on_step_fail: continue
pubsub:
  events_topic: ev1
engine:
  lease_ttl_s: 60
`

func TestYAMLFileThenEnvironment(t *testing.T) {
	fsys := map[string]string{"/etc/noetl.yaml": sampleYAML}
	c := mustParse(t, map[string]string{FileEnv: "/etc/noetl.yaml", "NOETL_DLQ_RETENTION_DAYS": "14"}, fsys)
	if c.File != "/etc/noetl.yaml" || c.Retries.Plugin.MaxAttempts != 9 || c.Retries.Plugin.Base != 100*time.Millisecond ||
		c.Retries.Plugin.Max != 30*time.Second || c.Timeouts.ToolDefault != 5*time.Second || c.DLQ.Enabled ||
		c.Tracing.SampleRate != 0.5 || len(c.Tracing.Exporter) != 1 || !strings.EqualFold(c.Tracing.Exporter[0], "gcp") || c.Logging.Level != "warn" ||
		c.Policies.OnStepFail != "continue" || c.EventsTopic != "ev1" || c.LeaseTTL != time.Minute {
		t.Errorf("file values not applied: %+v", c)
	}
	if c.DLQ.RetentionDays != 14 {
		t.Errorf("the environment must win over the file: retention = %d", c.DLQ.RetentionDays)
	}
	if !reflect.DeepEqual(c.Logging.RedactKeys, []string{"password", "api_key"}) {
		t.Errorf("redact keys = %q", c.Logging.RedactKeys)
	}
	if c := mustParse(t, map[string]string{FileEnv: "/empty.yaml"}, map[string]string{"/empty.yaml": "# nothing\n"}); c.EventsTopic != "events" {
		t.Errorf("empty file changed defaults: %+v", c)
	}
}

func TestYAMLFileProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		doc  string
		want []string // substrings of the problems, in order
	}{
		"unknown key":        {"retries:\n  plugin:\n    max_attempt: 3\n", []string{"/c.yaml:3: unknown key retries.plugin.max_attempt"}},
		"unknown section":    {"orchestra: {a: 1}\n", []string{"/c.yaml:1: unknown key orchestra"}},
		"bad value":          {"tracing:\n  sample_rate: lots\n", []string{"/c.yaml:2: tracing.sample_rate (NOETL_TRACING_SAMPLE_RATE): \"lots\" is not a number"}},
		"out of range":       {"dlq:\n  retention_days: 0\n", []string{"/c.yaml:2: dlq.retention_days (NOETL_DLQ_RETENTION_DAYS): 0 is below the minimum 1"}},
		"mapping for scalar": {"metrics:\n  port: {a: 1}\n", []string{"metrics.port (NOETL_METRICS_PORT): expected a int value, found a mapping"}},
		"list for scalar":    {"metrics:\n  path: [a]\n", []string{"expected a string value, found a sequence"}},
		"not a mapping":      {"- a\n- b\n", []string{"/c.yaml:1: the document must be a mapping"}},
		"invalid yaml":       {"a: [\n", []string{"/c.yaml: invalid YAML"}},
		"two problems":       {"dlq:\n  enabled: maybe\nlogging:\n  format: xml\n", []string{"/c.yaml:2: dlq.enabled", "/c.yaml:4: logging.format"}},
	} {
		t.Run(name, func(t *testing.T) {
			ps := problems(t, map[string]string{FileEnv: "/c.yaml"}, map[string]string{"/c.yaml": tc.doc})
			if len(ps) != len(tc.want) {
				t.Fatalf("problems = %v, want %d", ps, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(ps[i].String(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, ps[i].String(), w)
				}
			}
		})
	}
	ps := problems(t, map[string]string{FileEnv: "/missing.yaml"}, nil)
	if len(ps) != 1 || !strings.Contains(ps[0].String(), "NOETL_CONFIG=/missing.yaml") || !strings.Contains(ps[0].String(), "not exist") {
		t.Errorf("missing file: %v", ps)
	}
}

func TestLoadPanicsInsteadOfDefaulting(t *testing.T) {
	t.Setenv("NOETL_METRICS_PORT", "eighty")
	if _, err := LoadE(); err == nil || !strings.Contains(err.Error(), "NOETL_METRICS_PORT=eighty") {
		t.Fatalf("LoadE error = %v", err)
	}
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "NOETL_METRICS_PORT") {
			t.Errorf("Load recovered %v, want the validation error", r)
		}
	}()
	Load()
	t.Error("Load returned with an invalid NOETL_METRICS_PORT")
}

func TestRegistryWellFormed(t *testing.T) {
	envRe := regexp.MustCompile(`^NOETL_[A-Z0-9_]+$`)
	pathRe := regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`)
	seenEnv, seenPath := map[string]bool{}, map[string]bool{}
	for _, k := range Knobs() {
		if !envRe.MatchString(k.Env) && k.Env != "GOOGLE_CLOUD_PROJECT" {
			t.Errorf("%s: environment variable must be NOETL_*", k.Env)
		}
		if !pathRe.MatchString(k.Path) {
			t.Errorf("%s: bad YAML path %q", k.Env, k.Path)
		}
		for _, n := range append([]string{k.Env}, k.Aliases...) {
			if seenEnv[n] {
				t.Errorf("%s declared twice", n)
			}
			seenEnv[n] = true
		}
		if seenPath[k.Path] {
			t.Errorf("%s declared twice", k.Path)
		}
		seenPath[k.Path] = true
		if hasPrefix(k.Path) {
			t.Errorf("%s is both a knob and a section", k.Path)
		}
		if k.Doc == "" || k.Source == "" {
			t.Errorf("%s: doc and source are required", k.Env)
		}
		if k.DefaultDoc != "" && k.Default != "" {
			t.Errorf("%s: Default and DefaultDoc are exclusive", k.Env)
		}
		v, err := k.parse(k.Default)
		if err == nil && k.DefaultDoc == "" {
			err = k.validate(v)
		}
		if err != nil {
			t.Errorf("%s: default %q invalid: %v", k.Env, k.Default, err)
		}
	}
}

// TestEveryConfigFieldIsAKnob checks that each leaf field of Config (but
// File) is set by exactly one knob, so nothing is configured outside the
// registry.
func TestEveryConfigFieldIsAKnob(t *testing.T) {
	var c Config
	owners := map[uintptr]string{}
	for _, k := range Knobs() {
		p := reflect.ValueOf(k.field(&c)).Pointer()
		if o, dup := owners[p]; dup {
			t.Errorf("%s and %s set the same field", o, k.Env)
		}
		owners[p] = k.Env
	}
	var walk func(v reflect.Value, name string)
	walk = func(v reflect.Value, name string) {
		if v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Duration(0)) {
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i), name+"."+v.Type().Field(i).Name)
			}
			return
		}
		if name == ".File" {
			return
		}
		if _, ok := owners[v.Addr().Pointer()]; !ok {
			t.Errorf("Config%s has no knob", name)
		}
	}
	walk(reflect.ValueOf(&c).Elem(), "")
}

const (
	readmeBegin = "<!-- BEGIN config knobs: generated from shared/config (go test ./shared/config -run TestConfigurationDoc -update) -->\n"
	readmeEnd   = "<!-- END config knobs -->\n"
)

// TestConfigurationDoc checks the table of docs/configuration.md against
// the registry (run with -update to rewrite it).
func TestConfigurationDoc(t *testing.T) {
	const path = "../../docs/configuration.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, readmeBegin), strings.Index(s, readmeEnd)
	if i < 0 || j < i || !strings.Contains(s[:i], "# Configuration") {
		t.Fatalf("docs/configuration.md lacks the generated table markers under its Configuration heading")
	}
	want := MarkdownTable()
	got := s[i+len(readmeBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(readmeBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/configuration.md's table is stale; run: go test ./shared/config -run TestConfigurationDoc -update\n--- got\n%s--- want\n%s", got, want)
}

// Every `README "Section"` a knob cites is rendered as a link to a docs
// page that exists and has that anchor (a section that moved, or a new
// citation of a section DocSections does not know, fails here).
func TestSourcesLinkToDocs(t *testing.T) {
	anchor := func(h string) string {
		h = strings.ToLower(strings.TrimSpace(h))
		h = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(h, "")
		return strings.ReplaceAll(h, " ", "-")
	}
	for _, k := range registry {
		if got := sourceDoc(k.Source); strings.Contains(got, "README") {
			t.Errorf("%s: source %q names a README section DocSections does not map", k.Env, got)
		}
	}
	for name, page := range DocSections {
		file, frag, _ := strings.Cut(page, "#")
		b, err := os.ReadFile("../../docs/" + file)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if frag == "" {
			continue
		}
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "#") && anchor(strings.TrimLeft(line, "#")) == frag {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: docs/%s has no heading with anchor #%s", name, file, frag)
		}
	}
	if got := sourceDoc(`README "Security", README "Repair"`); got != "[Security](security.md), [Repair](resilience.md#repair)" {
		t.Errorf("sourceDoc = %q", got)
	}
}
