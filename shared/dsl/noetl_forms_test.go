package dsl

import (
	"reflect"
	"strings"
	"testing"
)

// Forms found in NoETL's own fixture playbooks that Load accepts and maps
// (README "Running NoETL v2 playbooks"): each test names the fixture shape it follows and the
// upstream rule it mirrors.

// TestRootTracingAndSpecIgnored: NoETL's Playbook model ignores unknown
// root keys (container_postgres_init's tracing, weather_control_flow's
// spec): kept verbatim, ignored, warned.
func TestRootTracingAndSpecIgnored(t *testing.T) {
	p := mustLoad(t, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\ntracing:\n  enabled: true\nspec:\n  state: ready\nworkflow:\n  - step: start\n    tool: {kind: noop}\n")
	warned(t, p, 4, "root tracing is not read by NoETL's playbook model")
	warned(t, p, 6, "root spec is not read by NoETL's playbook model")
	if !reflect.DeepEqual(p.Ignored, map[string]any{"tracing": map[string]any{"enabled": true}, "spec": map[string]any{"state": "ready"}}) {
		t.Fatalf("Ignored = %v", p.Ignored)
	}
	loadErr(t, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nextra: 1\nworkflow:\n  - step: start\n    tool: {kind: noop}\n")
}

// TestStepNamesThatAreNotIdentifiers: NoETL accepts any step name
// (master_regression_test names steps by catalog path); Load turns each
// into an identifier and points the arcs, the entry and compensate at it.
func TestStepNamesThatAreNotIdentifiers(t *testing.T) {
	p := mustLoad(t, `apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: t}
executor: {spec: {entry_step: fixtures/hello}}
workflow:
  - step: fixtures/hello
    tool: {kind: noop}
    next:
      arcs:
        - step: 2nd-step
  - step: 2nd-step
    tool: {kind: noop}
    compensate: fixtures/hello
`)
	if p.Step("fixtures_hello") == nil || p.Step("_2nd_step") == nil {
		t.Fatalf("steps = %v, %v", p.Workflow[0].Name, p.Workflow[1].Name)
	}
	if p.Entry != "fixtures_hello" || p.Workflow[0].Next.Arcs[0].Step != "_2nd_step" || p.Workflow[1].Compensate != "fixtures_hello" {
		t.Fatalf("entry %q, arc %q, compensate %q", p.Entry, p.Workflow[0].Next.Arcs[0].Step, p.Workflow[1].Compensate)
	}
	if p.Workflow[0].Tasks[0].Name != "fixtures_hello_task" {
		t.Fatalf("task label = %q", p.Workflow[0].Tasks[0].Name)
	}
	warned(t, p, 6, `step name "fixtures/hello" is not an identifier (letters, digits, _): loaded as "fixtures_hello"`)
	for in, want := range map[string]string{"a.b": "a_b", "/x//y/": "x_y", "1st": "_1st", "tests/fixtures/playbooks/hello_world": "tests_fixtures_playbooks_hello_world", "é": ""} {
		if got := stepName(in); got != want {
			t.Errorf("stepName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLegacyRetryOnLists: retry_on (error kinds), retry_on_status (HTTP
// statuses), backoff / backoff_seconds (the first delay) of NoETL's
// master_regression_test and amadeus_ai_api become one retry rule.
func TestLegacyRetryOnLists(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      kind: http
      url: http://x
      retry:
        max_attempts: 3
        retry_on_status: [429, 503]
        retry_on: [timeout, connection_error]
        backoff_seconds: 2
`)
	rules := p.Step("start").Tasks[0].Policy.Rules
	if len(rules) != 3 || rules[1].Then.Do != "retry" || rules[1].Then.Attempts != 3 || rules[1].Then.Delay != 2 || !rules[2].Else {
		t.Fatalf("rules = %+v", rules)
	}
	want := `{{ outcome.status == 'error' and (outcome.error.kind in ['timeout', 'connection_error', 'connection'] or outcome.http.status in [429, 503]) }}`
	if rules[1].When != want {
		t.Fatalf("retry when = %s\nwant        %s", rules[1].When, want)
	}
	warned(t, p, 10, "normalised to task policy spec.policy.rules: [{when: \"{{ outcome.status == 'ok' }}\"")
	ve := loadErr(t, hdr+"  - step: start\n    tool:\n      kind: noop\n      retry: {retry_on: [timeout], retry_when: \"{{ true }}\"}\n")
	find(t, ve.Problems, 9, "workflow[0].tool.retry", "both retry_when and retry_on")
	ve = loadErr(t, hdr+"  - step: start\n    tool:\n      kind: noop\n      retry: {retry_on_status: [a]}\n")
	find(t, ve.Problems, 9, "workflow[0].tool.retry.retry_on_status[0]", "must be an integer")
}

// TestOutputSelectMappingIgnored: test_pipeline_heavy_payload writes
// output_select: {strategy, threshold_kb}; NoETL reads a mapping's keys as
// field paths, which select nothing: ignored with a warning naming both
// forms.
func TestOutputSelectMappingIgnored(t *testing.T) {
	p := mustLoad(t, hdr+"  - step: start\n    tool:\n      - name: a\n        kind: noop\n        output_select: {strategy: size_threshold, threshold_kb: 100}\n")
	if o := p.Step("start").Tasks[0].Output; o != nil && len(o.Select) > 0 {
		t.Fatalf("select = %v", o.Select)
	}
	warned(t, p, 10, "output select as a mapping (keys strategy, threshold_kb) selects nothing in NoETL either")
	warned(t, p, 10, "write a list of field paths, e.g. [status, data.count]")
}

// TestLegacyStepResultBlock: older fixtures (test_storage_tiers,
// test_gcs_storage) write the step's output block as result:.
func TestLegacyStepResultBlock(t *testing.T) {
	p := mustLoad(t, hdr+"  - step: start\n    tool: {kind: noop}\n    result:\n      store: {kind: kv}\n      output_select: [status, count]\n")
	o := p.Step("start").Output
	if o == nil || o.Store == nil || o.Store.Kind != "kv" || len(o.Select) != 2 || o.Select[1].As != "count" {
		t.Fatalf("output = %+v", o)
	}
	warned(t, p, 8, "step result: {store, output_select} is NoETL's legacy spelling of the step's output block")
	ve := loadErr(t, hdr+"  - step: start\n    tool: {kind: noop}\n    result: {data: 1}\n")
	find(t, ve.Problems, 8, "workflow[0].result", "step.result is not canonical")
	ve = loadErr(t, hdr+"  - step: start\n    tool: {kind: noop}\n    output: {select: [a]}\n    result: {output_select: [b]}\n")
	find(t, ve.Problems, 9, "workflow[0].result", "keep output")
}

// TestPostgresWith: tradedb's postgres tasks pass with: {db_name: ...};
// NoETL's postgres executor renders with task_with (its with: block).
func TestPostgresWith(t *testing.T) {
	p := mustLoad(t, hdr+"  - step: start\n    tool:\n      kind: postgres\n      command: select 1\n      with: {db_name: app}\n      input: {x: 1}\n")
	if in := p.Step("start").Tasks[0].Input; !reflect.DeepEqual(in, map[string]any{"db_name": "app", "x": 1}) {
		t.Fatalf("input = %v", in)
	}
	warned(t, p, 10, "postgres with: is NoETL's legacy spelling of the task's input")
	ve := loadErr(t, hdr+"  - step: start\n    tool:\n      kind: postgres\n      command: select 1\n      with: {a: 1}\n      input: {a: 2}\n")
	find(t, ve.Problems, 11, "workflow[0].tool.input.a", "given both in with and in input")
	ve = loadErr(t, hdr+"  - step: start\n    tool:\n      kind: http\n      url: http://x\n      with: {a: 1}\n")
	find(t, ve.Problems, 10, "workflow[0].tool.with", "task key with is not read by kind http")
}

// TestArcCondAndElseSibling: deploy_gateway_kind's arc cond: and
// v10_canonical_example's `- else:` with then: beside it.
func TestArcCondAndElseSibling(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      - name: a
        kind: noop
        spec:
          policy:
            rules:
              - else:
                then:
                  do: break
    next:
      arcs:
        - step: end
          cond: exit_code == 100
  - step: end
`)
	r := p.Step("start").Tasks[0].Policy.Rules[0]
	if !r.Else || r.Then.Do != "break" {
		t.Fatalf("rule = %+v", r)
	}
	warned(t, p, 13, "read as {else: {then: {...}}}")
	if a := p.Step("start").Next.Arcs[0]; a.When != "{{ exit_code == 100 }}" {
		t.Fatalf("arc when = %q", a.When)
	}
	warned(t, p, 19, `arc cond is not a NoETL arc key (NoETL ignores it, leaving the arc unguarded): read as its guard, when: "{{ exit_code == 100 }}"`)
}

// TestPythonLibsListIgnored: a list of pip names (test_pagination_pipeline's
// libs: [psycopg2-binary]) is ignored, as NoETL's python executor does.
func TestPythonLibsListIgnored(t *testing.T) {
	p := mustLoad(t, hdr+"  - step: start\n    tool:\n      kind: python\n      libs: [psycopg2-binary]\n      code: result = 1\n")
	if _, ok := p.Step("start").Tasks[0].Config["libs"]; ok {
		t.Fatal("libs kept")
	}
	warned(t, p, 9, "python libs as a list [psycopg2-binary] is ignored (NoETL ignores it too")
	p = mustLoad(t, hdr+"  - step: start\n    tool:\n      kind: python\n      libs: {pd: json}\n      code: result = 1\n")
	if _, ok := p.Step("start").Tasks[0].Config["libs"]; !ok {
		t.Fatal("mapping libs dropped")
	}
}

// TestMisplacedTaskKeysOneHop (item 4): a step or legacy key on a task is
// told the canonical rewrite at once, never "move it to the step" when the
// step would reject it in turn.
func TestMisplacedTaskKeysOneHop(t *testing.T) {
	for key, want := range map[string]string{
		"eval": "task eval is not canonical (legacy eval is rejected): decide on this task's outcome with its policy rules, tool.spec.policy.rules: [{when:",
		"expr": "task expr is not canonical (when is the only conditional keyword): a condition on this task's outcome is a policy rule, tool.spec.policy.rules",
		"when": "guard the arc that leads to it (next.arcs[].when of the routing step) or gate it with the step's spec.policy.admit.rules",
		"sink": "add a storage task after this one in the step's tool list",
		"next": "next is a step key, not a task key: move it to the step, beside tool:",
		"vars": "write the values with the task's set (DSL v2: set: {ctx.x: ..., iter.y: ...})",
	} {
		ve := loadErr(t, hdr+"  - step: start\n    tool:\n      kind: noop\n      "+key+": x\n")
		find(t, ve.Problems, 9, "workflow[0].tool."+key, want)
		for _, p := range ve.Problems {
			if strings.Contains(p.Message, "move it to the step") && key != "next" {
				t.Errorf("%s: two-hop message %q", key, p.Message)
			}
		}
	}
}

// TestDuckDBGCSCredentialNamesWhatItNeeds: internet_postgres_gcs_hmac's
// duckdb gcs_credential needs DuckDB's httpfs extension.
func TestDuckDBGCSCredentialNamesWhatItNeeds(t *testing.T) {
	ve := loadErr(t, hdr+"  - step: start\n    tool:\n      kind: duckdb\n      query: select 1\n      gcs_credential: gcs_hmac\n")
	find(t, ve.Problems, 10, "workflow[0].tool.gcs_credential", "through DuckDB's httpfs extension, which this stack does not download")
}

// TestMappingWhereListExpected (item 4): the message names both forms.
func TestMappingWhereListExpected(t *testing.T) {
	ve := loadErr(t, hdr+"  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            when: \"{{ true }}\"\n            then: {do: continue}\n    next:\n      arcs:\n        step: start\n")
	find(t, ve.Problems, 11, "workflow[0].tool.spec.policy.rules", "got a mapping: a single entry is still a list item, write rules: [{when: ...}] (or \"- when: ...\" on its own line) instead of rules: {when: ...}")
	find(t, ve.Problems, 15, "workflow[0].next.arcs", "write next.arcs: [{step: ...}]")
	ve = loadErr(t, "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\nworkflow:\n  start:\n    tool: {kind: noop}\n")
	find(t, ve.Problems, 4, "workflow", "write each step as a list item, - step: <name>")
}
