package dsl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// confDir is the repository's copy of NoETL's conformance playbooks
// (emulators/e2e/testdata/conformance; origin and licence in its SOURCE.md).
const confDir = "../../emulators/e2e/testdata/conformance"

// conf returns the path of a playbook of the older (v10) conformance set.
func conf(name string) string { return filepath.Join(confDir, "noetl", name) }

// confV2 returns the path of a playbook of the DSL v2 conformance set,
// relative to its playbooks/ directory.
func confV2(name string) string { return filepath.Join(confDir, "noetl-v2", "playbooks", name) }

// conformanceFiles lists the playbooks of the older conformance set.
func conformanceFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(conf("*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance playbooks in %s: %v", confDir, err)
	}
	return files
}

func mustLoadFile(t *testing.T, path string) *Playbook {
	t.Helper()
	p, err := LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile(%s): %v", path, err)
	}
	return p
}

func TestConformancePlaybooksLoadCleanly(t *testing.T) {
	for _, f := range conformanceFiles(t) {
		t.Run(f, func(t *testing.T) {
			p := mustLoadFile(t, f)
			if len(p.Warnings) > 0 {
				t.Errorf("unexpected warnings:\n%s", FormatProblems(f, p.Warnings))
			}
			if ps := p.Validate(); len(ps) > 0 {
				t.Errorf("Validate after Load:\n%s", FormatProblems(f, ps))
			}
			src, _ := os.ReadFile(f)
			if p.Source != string(src) {
				t.Error("Source not kept")
			}
			if p.Step("start") == nil {
				t.Error("no start step")
			}
			for _, s := range p.Workflow {
				if s.Line == 0 || s.Path == "" {
					t.Errorf("step %s: missing Line/Path", s.Name)
				}
				for _, task := range s.Tasks {
					if task.Line == 0 || task.Kind == "" || task.Name == "" {
						t.Errorf("step %s: task %+v incomplete", s.Name, task)
					}
				}
			}
			// The model must be JSON-serialisable (engine snapshots it).
			if _, err := json.Marshal(p); err != nil {
				t.Errorf("json: %v", err)
			}
		})
	}
}

func TestHelloWorldNormalisation(t *testing.T) {
	p := mustLoadFile(t, conf("hello_world.yaml"))
	if p.APIVersion != APIVersion || p.Kind != "Playbook" || p.Metadata.Name != "hello_world" || p.Metadata.Path != "tests/fixtures/playbooks/hello_world" {
		t.Errorf("header: %+v %+v", p.APIVersion, p.Metadata)
	}
	if got := p.Workload["message"]; got != "Hello World" {
		t.Errorf("workload.message = %v", got)
	}
	if len(p.Workflow) != 3 {
		t.Fatalf("steps = %d", len(p.Workflow))
	}
	start := p.Step("start")
	if len(start.Tasks) != 1 || start.Tasks[0].Name != "start_task" || start.Tasks[0].Kind != "python" {
		t.Fatalf("start tasks = %+v", start.Tasks[0])
	}
	if code, _ := start.Tasks[0].Config["code"].(string); !strings.Contains(code, `result = {"status": "initialized"}`) {
		t.Errorf("code = %q", code)
	}
	if start.Tasks[0].Line != 18 || start.Tasks[0].Path != "workflow[0].tool" {
		t.Errorf("task line/path = %d %q", start.Tasks[0].Line, start.Tasks[0].Path)
	}
	if start.Line != 15 || start.Desc != "Start hello world test" {
		t.Errorf("start line/desc = %d %q", start.Line, start.Desc)
	}
	if start.Next == nil || start.Next.Mode != "exclusive" || len(start.Next.Arcs) != 1 || start.Next.Arcs[0].Step != "test_step" || start.Next.Arcs[0].Line != 26 {
		t.Errorf("next = %+v", start.Next)
	}
	ts := p.Step("test_step")
	if ts.Tasks[0].Name != "test_step_task" || ts.Tasks[0].Input["message"] != "{{ message }}" {
		t.Errorf("test_step task = %+v", ts.Tasks[0])
	}
	if end := p.Step("end"); end.Next != nil {
		t.Errorf("end has next %+v", end.Next)
	}
	if got := p.LineOf("workflow[1].tool.code"); got != 34 {
		t.Errorf("LineOf code = %d", got)
	}
	if got := p.LineOf("workflow[1].tool.nope.deeper"); got != 30 {
		t.Errorf("LineOf falls back to the tool line, got %d", got)
	}
}

func TestArgsPassingNormalisation(t *testing.T) {
	p := mustLoadFile(t, conf("test_args_passing.yaml"))
	start := p.Step("start")
	if len(start.Tasks) != 1 || start.Tasks[0].Name != "init" || start.Tasks[0].Path != "workflow[0].tool[0]" {
		t.Fatalf("start task = %+v", start.Tasks[0])
	}
	if _, ok := start.Tasks[0].Config["name"]; ok {
		t.Error("a list item's name is its label, not config")
	}
	arc := start.Next.Arcs[0]
	want := map[string]any{"test_var": "{{ initial_value }}", "computed": 200}
	if arc.Step != "use_vars" || !reflect.DeepEqual(arc.Args, want) {
		t.Errorf("arc = %+v", arc)
	}
	if got := p.Step("use_vars").Tasks[0]; got.Name != "compute" || got.Input["computed"] != "{{ args.computed }}" {
		t.Errorf("use_vars task = %+v", got)
	}
	if p.Workload["initial_value"] != 100 {
		t.Errorf("workload int = %#v", p.Workload["initial_value"])
	}
}

func TestLoopNormalisation(t *testing.T) {
	p := mustLoadFile(t, conf("v2_loop_test.yaml"))
	start := p.Step("start")
	if start.Loop == nil {
		t.Fatal("no loop")
	}
	if start.Loop.Iterator != "num" || start.Loop.Mode != "sequential" || start.Loop.In != "{{ numbers }}" || start.Loop.Line != 22 {
		t.Errorf("loop = %+v", start.Loop)
	}
	if start.Input["num"] != "{{ num }}" || start.Input["loop_index"] != "{{ loop_index }}" {
		t.Errorf("step args = %v", start.Input)
	}
	if start.Tasks[0].Input != nil && len(start.Tasks[0].Input) != 0 {
		t.Errorf("task args = %v", start.Tasks[0].Input)
	}
	if ul := p.Step("user_loop"); ul.Loop.Iterator != "user" || ul.Loop.Mode != "sequential" {
		t.Errorf("user_loop = %+v", ul.Loop)
	}
	if w, ok := p.Workload["numbers"].([]any); !ok || len(w) != 5 || w[0] != 1 {
		t.Errorf("numbers = %#v", p.Workload["numbers"])
	}
}

func TestPaginationNormalisation(t *testing.T) {
	p := mustLoadFile(t, conf("test_pagination_basic.yaml"))
	start := p.Step("start")
	if sc := SetOf(start.Set, ScopeCtx); sc["current_page"] != "{{ workload.current_page }}" || len(sc) != 4 || len(start.Set) != 4 {
		t.Errorf("start set_ctx = %+v", start.Set)
	}
	fetch := p.Step("fetch_page").Tasks[0]
	if fetch.Kind != "http" || fetch.Config["url"] != "{{ api_url }}/api/v1/assessments" || fetch.Config["method"] != "GET" {
		t.Errorf("fetch = %+v", fetch)
	}
	if params, _ := fetch.Config["params"].(map[string]any); params["page"] != "{{ ctx.current_page }}" {
		t.Errorf("params = %v", fetch.Config["params"])
	}
	if fetch.Policy == nil || len(fetch.Policy.Rules) != 3 {
		t.Fatalf("policy = %+v", fetch.Policy)
	}
	r0 := fetch.Policy.Rules[0]
	if r0.When != "{{ outcome.status == 'error' and outcome.error.retryable }}" || r0.Then.Do != "retry" || r0.Then.Attempts != 5 || r0.Then.Backoff != "exponential" || r0.Then.Delay != 1.0 || r0.Line != 46 {
		t.Errorf("rule 0 = %+v", r0)
	}
	if r := fetch.Policy.Rules[1]; r.Then.Do != "fail" {
		t.Errorf("rule 1 = %+v", r)
	}
	if r := fetch.Policy.Rules[2]; !r.Else || r.When != "" || r.Then.Do != "continue" {
		t.Errorf("rule 2 = %+v", r)
	}
	cp := p.Step("check_pagination")
	if SetOf(cp.Set, ScopeCtx)["has_more"] != "{{ check_pagination.has_more }}" {
		t.Errorf("set_ctx = %+v", cp.Set)
	}
	arcs := cp.Next.Arcs
	if len(arcs) != 2 || arcs[0].Step != "fetch_page" || arcs[0].When != "{{ ctx.has_more == true }}" || arcs[1].Step != "validate_results" || arcs[1].When != "{{ ctx.has_more != true }}" {
		t.Errorf("arcs = %+v %+v", arcs[0], arcs[1])
	}
	if arcs[0].Line != 97 || arcs[1].Line != 99 || cp.Next.Mode != "exclusive" {
		t.Errorf("arc lines = %d %d", arcs[0].Line, arcs[1].Line)
	}
	if got := p.Workload["collected_items"]; !reflect.DeepEqual(got, []any{}) {
		t.Errorf("collected_items = %#v", got)
	}
}

func TestRetryConformancePolicies(t *testing.T) {
	p := mustLoadFile(t, conf("http_retry_status_code.yaml"))
	r := p.Step("start").Tasks[0].Policy.Rules[0]
	if r.Then.Do != "retry" || r.Then.Attempts != 3 || r.Then.Delay != 0.5 || r.Then.Backoff != "exponential" {
		t.Errorf("rule = %+v", r.Then)
	}
	p = mustLoadFile(t, conf("python_retry_exception.yaml"))
	task := p.Step("start").Tasks[0]
	if libs, _ := task.Config["libs"].(map[string]any); libs["random"] != "random" {
		t.Errorf("libs = %v", task.Config["libs"])
	}
	if r := task.Policy.Rules[0]; r.Then.Attempts != 5 || r.Then.Delay != 0.2 {
		t.Errorf("rule = %+v", r.Then)
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile("testdata/does-not-exist.yaml")
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}
