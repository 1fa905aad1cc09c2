package dsl

import (
	"reflect"
	"strings"
	"testing"
)

const hdr = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\nworkflow:\n"

// warned requires a warning at line whose message holds msg.
func warned(t *testing.T, p *Playbook, line int, msg string) {
	t.Helper()
	for _, w := range p.Warnings {
		if w.Line == line && strings.Contains(w.Message, msg) {
			return
		}
	}
	t.Errorf("no warning %d %q in:\n%s", line, msg, FormatProblems("test.yaml", p.Warnings))
}

func TestSeed003CanonicalPlaybook(t *testing.T) {
	p := mustLoadFile(t, "testdata/valid/seed003_pagination.yaml")
	if len(p.Warnings) != 0 {
		t.Errorf("warnings:\n%s", FormatProblems("NoETL canonical v10 retry spec", p.Warnings))
	}
	s := p.Step("start")
	if s.Admit == nil || len(s.Admit.Rules) != 2 || *s.Admit.Rules[0].Then.Allow != true || !s.Admit.Rules[1].Else || *s.Admit.Rules[1].Then.Allow {
		t.Errorf("admit = %+v", s.Admit)
	}
	if s.TimeoutS != 600 || s.FailureMode != "best_effort" {
		t.Errorf("lifecycle/failure = %v %q", s.TimeoutS, s.FailureMode)
	}
	if s.Loop.Mode != "parallel" || s.Loop.MaxInFlight != 10 || s.Loop.Iterator != "endpoint" || s.Loop.AllowSetCtx {
		t.Errorf("loop = %+v", s.Loop)
	}
	if s.Loop.Exec != "distributed" || s.Loop.Spec != nil {
		t.Errorf("loop exec/spec = %q %v", s.Loop.Exec, s.Loop.Spec)
	}
	var labels []string
	for _, task := range s.Tasks {
		labels = append(labels, task.Name)
	}
	if !reflect.DeepEqual(labels, []string{"init_iter", "fetch_page", "store", "paginate"}) {
		t.Errorf("labels = %v", labels)
	}
	fetch := s.Tasks[1]
	if fetch.Path != "workflow[0].tool[1].fetch_page" || fetch.Line != 53 {
		t.Errorf("fetch path/line = %q %d", fetch.Path, fetch.Line)
	}
	if !reflect.DeepEqual(fetch.Spec, map[string]any{"timeout": map[string]any{"connect": 5, "read": 15}}) {
		t.Errorf("fetch spec = %v", fetch.Spec)
	}
	if r := fetch.Policy.Rules[0].Then; r.Do != "retry" || r.Attempts != 10 || r.Backoff != "exponential" || r.Delay != 2 {
		t.Errorf("fetch retry = %+v", r)
	}
	store := s.Tasks[2]
	if store.Kind != "workbook" || store.Workbook != "store_page" || store.Config["name"] != "store_page" || store.Input["items"] != "{{ _prev.data }}" {
		t.Errorf("store = %+v", store)
	}
	if wb := p.Workbook["store_page"]; wb == nil || wb.Kind != "postgres" || wb.Name != "store_page" || wb.Config["auth"] != "pg_k8s" {
		t.Errorf("workbook = %+v", p.Workbook)
	}
	if j := s.Tasks[3].Policy.Rules[0].Then; j.Do != "jump" || j.To != "fetch_page" || SetOf(j.Set, ScopeIter)["page"] != "{{ (iter.page | int) + 1 }}" {
		t.Errorf("paginate = %+v", j)
	}
	arcs := s.Next.Arcs
	if arcs[0].When != "{{ event.name == 'loop.done' }}" || arcs[0].On != "" || arcs[1].Step != "cleanup" || arcs[1].On != "step.failed" {
		t.Errorf("arcs = %+v %+v", arcs[0], arcs[1])
	}
	if len(p.Keychain) != 1 || p.Executor["spec"] == nil {
		t.Errorf("keychain/executor = %v %v", p.Keychain, p.Executor)
	}
	if c := p.Step("cleanup").Tasks[0]; c.Name != "cleanup_task" || c.Kind != "playbook" || c.Config["path"] != "tests/cleanup" {
		t.Errorf("cleanup = %+v", c)
	}
}

func TestTaskShapes(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      - kind: noop
      - kind: python
        code: "result = 1"
      - named:
          kind: noop
    next: {arcs: [{step: single}]}
  - step: single
    tool:
      name: custom
      kind: http
      url: http://x
      timeout: 5
    next: {arcs: [{step: labelled}]}
  - step: labelled
    tool:
      first: {kind: noop}
      second: {kind: noop}
`)
	got := func(s string) []string {
		var out []string
		for _, task := range p.Step(s).Tasks {
			out = append(out, task.Name)
		}
		return out
	}
	if g := got("start"); !reflect.DeepEqual(g, []string{"task_0", "task_1", "named"}) {
		t.Errorf("start labels = %v", g)
	}
	if g := got("single"); !reflect.DeepEqual(g, []string{"custom"}) {
		t.Errorf("single labels = %v", g)
	}
	if task := p.Step("single").Tasks[0]; task.TimeoutS != 5 || task.Config["name"] != nil {
		t.Errorf("single task = %+v", task)
	}
	if g := got("labelled"); !reflect.DeepEqual(g, []string{"first", "second"}) {
		t.Errorf("labelled = %v", g)
	}
}

func TestWorkbookShapes(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool: {kind: workbook, name: greet, args: {who: x}}
    next: {arcs: [{step: two}]}
  - step: two
    tool:
      - {name: greet, kind: workbook}
workbook:
  - name: greet
    kind: python
    code: "result = who"
`)
	if task := p.Step("start").Tasks[0]; task.Name != "start_task" || task.Workbook != "greet" || task.Config["name"] != "greet" {
		t.Errorf("single workbook task = %+v", task)
	}
	if task := p.Step("two").Tasks[0]; task.Name != "greet" || task.Workbook != "greet" || task.Config["name"] != "greet" {
		t.Errorf("list workbook task = %+v", task)
	}
	if wb := p.Workbook["greet"]; wb == nil || wb.Kind != "python" || wb.Path != "workbook[0]" {
		t.Errorf("workbook = %+v", wb)
	}
	// A workbook entry may leave a required key to its callers (their keys
	// override the entry's): a call that does not give it is the error.
	ve := loadErr(t, hdr+"  - step: start\n    tool: {kind: workbook, name: c}\n  - step: two\n    tool: {kind: workbook, name: c, url: \"http://x\"}\nworkbook:\n  a: {kind: workbook, name: b}\n  b: {kind: workbook, name: a}\n  c: {kind: http}\n  c2: {kind: python, code: x}\n")
	find(t, ve.Problems, 11, "workbook.a.name", "calls itself")
	find(t, ve.Problems, 7, "workflow[0].tool.url", `url is required for a http task: neither this task nor the workbook entry "c" it calls gives it`)
	for _, p := range ve.Problems {
		if strings.HasPrefix(p.Path, "workflow[1]") || strings.HasPrefix(p.Path, "workbook.c") {
			t.Errorf("unexpected problem %v", p)
		}
	}
}

func TestLegacyNext(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool: {kind: noop}
    next:
      - step: a
        when: "{{ ctx.x }}"
        data: {v: 1}
      - step: b
  - step: a
    next: [c, b]
  - step: b
    next: c
  - step: c
    next:
      - when: "{{ ctx.y }}"
        then:
          - step: a
      - else:
          - step: d
  - step: d
    next: {step: end}
  - step: end
    tool: {kind: noop}
`)
	s := p.Step("start")
	if s.Next.Mode != "exclusive" || len(s.Next.Arcs) != 2 || s.Next.Arcs[0].When != "{{ ctx.x }}" || s.Next.Arcs[0].Args["v"] != 1 || s.Next.Arcs[1].Step != "b" {
		t.Errorf("start next = %+v", s.Next)
	}
	warned(t, p, 8, "next as a list is deprecated: normalised to next: {spec: {mode: exclusive}")
	warned(t, p, 11, "arc data is deprecated")
	if a := p.Step("a").Next; a.Mode != "inclusive" || len(a.Arcs) != 2 || a.Arcs[0].Step != "c" {
		t.Errorf("a next = %+v", a)
	}
	warned(t, p, 14, "mode: inclusive")
	if b := p.Step("b").Next; b.Mode != "exclusive" || b.Arcs[0].Step != "c" || b.Arcs[0].Line != 16 {
		t.Errorf("b next = %+v", b)
	}
	warned(t, p, 16, "next: <step> is deprecated")
	c := p.Step("c").Next
	if c.Mode != "exclusive" || len(c.Arcs) != 2 || c.Arcs[0].Step != "a" || c.Arcs[0].When != "{{ ctx.y }}" || c.Arcs[1].Step != "d" || c.Arcs[1].When != "" {
		t.Errorf("c next = %+v %+v", c.Arcs[0], c.Arcs[1])
	}
	if d := p.Step("d").Next; d.Arcs[0].Step != "end" {
		t.Errorf("d next = %+v", d)
	}
	warned(t, p, 25, "next: {step: ...} is deprecated")
}

func TestLegacyRetry(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool: {kind: http, url: "http://x"}
    retry: true
    next: {arcs: [{step: five}]}
  - step: five
    tool:
      - {name: a, kind: noop}
      - name: b
        kind: noop
        spec: {policy: {rules: [{else: {then: {do: continue}}}]}}
    retry: 5
    next: {arcs: [{step: full}]}
  - step: full
    tool: {kind: http, url: "http://x"}
    retry:
      max_attempts: 4
      initial_delay: 0.5
      backoff_multiplier: 2.0
      max_delay: 30
      jitter: true
      retry_when: "{{ status_code >= 500 or error != None }}"
      stop_when: "{{ status_code == 404 }}"
    next: {arcs: [{step: onerr}]}
  - step: onerr
    tool:
      kind: http
      url: "http://x"
      retry:
        on_error: {max_attempts: 2, backoff_multiplier: 1}
`)
	r := p.Step("start").Tasks[0].Policy.Rules
	if len(r) != 1 || r[0].When != "{{ outcome.status == 'error' }}" || r[0].Legacy ||
		!reflect.DeepEqual(r[0].Then, Then{Do: "retry", Attempts: 3, Backoff: "exponential", Delay: 1, MaxDelay: 60}) || r[0].Path != "workflow[0].retry" || r[0].Line != 8 {
		t.Errorf("retry: true → %+v", r[0])
	}
	warned(t, p, 8, "legacy retry is deprecated: normalised to task policy")
	five := p.Step("five").Tasks
	if five[0].Policy == nil || five[0].Policy.Rules[0].Then.Attempts != 5 {
		t.Errorf("retry: 5 → %+v", five[0].Policy)
	}
	if len(five[1].Policy.Rules) != 1 || !five[1].Policy.Rules[0].Else {
		t.Errorf("task with own policy was overwritten: %+v", five[1].Policy.Rules)
	}
	warned(t, p, 16, `task "b" has its own spec.policy`)
	full := p.Step("full").Tasks[0].Policy.Rules
	if len(full) != 4 {
		t.Fatalf("full rules = %d", len(full))
	}
	if full[0].When != "{{ outcome.status == 'ok' }}" || full[0].Then.Do != "continue" || full[0].Legacy {
		t.Errorf("rule 0 = %+v", full[0])
	}
	if full[1].When != "{{ status_code == 404 }}" || full[1].Then.Do != "fail" || !full[1].Legacy {
		t.Errorf("rule 1 = %+v", full[1])
	}
	if full[2].When != "{{ status_code >= 500 or error != None }}" || !full[2].Legacy ||
		!reflect.DeepEqual(full[2].Then, Then{Do: "retry", Attempts: 4, Backoff: "exponential", Delay: 0.5, MaxDelay: 30, Jitter: true}) {
		t.Errorf("rule 2 = %+v", full[2])
	}
	if !full[3].Else || full[3].Then.Do != "fail" {
		t.Errorf("rule 3 = %+v", full[3])
	}
	warned(t, p, 20, "legacy names (status_code, error, success, result, data, attempt)")
	oe := p.Step("onerr").Tasks[0].Policy.Rules[0].Then
	if oe.Attempts != 2 || oe.Backoff != "none" {
		t.Errorf("on_error → %+v", oe)
	}
}

func TestLegacyLoopAndAPIVersion(t *testing.T) {
	p := mustLoad(t, strings.Replace(hdr, "noetl.io/v2", "noetl.io/v1", 1)+`  - step: start
    loop:
      collection: "{{ workload.items }}"
      element: item
      mode: async
      concurrency: 4
    tool: {kind: noop}
`)
	if p.APIVersion != APIVersion {
		t.Errorf("apiVersion = %q", p.APIVersion)
	}
	warned(t, p, 1, "apiVersion noetl.io/v1 is deprecated")
	lp := p.Step("start").Loop
	if lp.In != "{{ workload.items }}" || lp.Iterator != "item" || lp.Mode != "parallel" || lp.MaxInFlight != 4 {
		t.Errorf("loop = %+v", lp)
	}
	warned(t, p, 8, "loop.collection is deprecated")
	warned(t, p, 9, "loop.element is deprecated")
	warned(t, p, 10, "loop.mode is deprecated")
	warned(t, p, 10, "async is deprecated")
	warned(t, p, 11, "loop.concurrency is deprecated")
}

func TestParallelSetCtxOptIn(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    loop: {in: [1, 2], iterator: x, spec: {mode: parallel, allow_set_ctx: true}}
    tool:
      kind: noop
      spec: {policy: {rules: [{else: {then: {do: continue, set_ctx: {last: "{{ iter.x }}"}}}}]}}
    set_ctx: {done: true}
`)
	if s := p.Step("start"); !s.Loop.AllowSetCtx || SetOf(s.Set, ScopeCtx)["done"] != true {
		t.Errorf("step = %+v", s)
	}
	// Sequential loops may always set ctx.
	mustLoad(t, hdr+"  - step: start\n    loop: {in: [1], iterator: x}\n    tool: {kind: noop}\n    set_ctx: {a: 1}\n")
}

func TestWarnings(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      kind: noop
      spec:
        policy:
          rules:
            - when: "{{ outcome.status == 'error' }}"
              then: {do: retry}
            - else: {then: {do: continue}}
            - when: true
              then: {do: fail}
    next:
      arcs: [{step: ctx, when: "ctx.ready"}]
  - step: orphan
    tool: {kind: noop}
  - step: ctx
`)
	warned(t, p, 13, "retry without attempts: defaulting to attempts: 3")
	warned(t, p, 15, "unreachable: it follows an else rule")
	warned(t, p, 18, `arc when "ctx.ready" has no {{ }}`)
	warned(t, p, 19, `step "orphan" is not reachable from the entry step "start"`)
	warned(t, p, 21, `shadows the template name ctx`)
	warned(t, p, 21, "neither tool nor next")
	rules := p.Step("start").Tasks[0].Policy.Rules
	if rules[0].Then.Attempts != 3 || rules[0].Then.Backoff != "none" || rules[2].When != "{{ true }}" {
		t.Errorf("rules = %+v %+v", rules[0].Then, rules[2])
	}
	if p.Warnings[0].Line > p.Warnings[len(p.Warnings)-1].Line {
		t.Error("warnings not sorted")
	}
}

func TestAnchorsAndMerge(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      - name: a
        kind: http
        url: http://x
        headers: &h {Accept: application/json}
        spec: &pol
          policy:
            rules:
              - when: "{{ outcome.status == 'error' }}"
                then: {do: retry, attempts: 2}
      - <<: {kind: http, url: http://y}
        name: b
        headers: *h
        spec: *pol
`)
	ts := p.Step("start").Tasks
	if ts[1].Name != "b" || ts[1].Config["url"] != "http://y" || ts[1].Policy.Rules[0].Then.Attempts != 2 {
		t.Errorf("merged task = %+v", ts[1])
	}
	if h, _ := ts[1].Config["headers"].(map[string]any); h["Accept"] != "application/json" {
		t.Errorf("aliased headers = %v", ts[1].Config["headers"])
	}
}

func TestValidateGoBuiltPlaybook(t *testing.T) {
	allow := true
	p := &Playbook{
		APIVersion: APIVersion, Kind: "Playbook", Metadata: Metadata{Name: "go"},
		Workflow: []*Step{{
			Name:  "start",
			Admit: &Policy{Rules: []*Rule{{Else: true, Then: Then{Allow: &allow}}}},
			Tasks: []*Task{
				{Name: "a", Kind: "http", Config: map[string]any{"url": "http://x"},
					Policy: &Policy{Rules: []*Rule{{When: "{{ true }}", Then: Then{Do: "jump", To: "b"}}}}},
				{Name: "b", Kind: "noop"},
			},
			Next: &Next{Mode: "exclusive", Arcs: []*Arc{{Step: "end"}}},
		}, {Name: "end"}},
	}
	if ps := p.Validate(); len(ps) != 0 {
		t.Fatalf("valid model: %v", ps)
	}
	p.Workflow[0].Tasks[0].Policy.Rules[0].Then.To = "zzz"
	p.Workflow[0].Tasks[1].Kind = "ftp"
	p.Workflow[0].Next.Arcs[0].Step = "nowhere"
	p.Workflow[1].Name = "start"
	ps := p.Validate()
	want := []string{
		`workflow[1].step: duplicate step name "start"`,
		`workflow[0].tool[0].spec.policy.rules[0].then.to: jump target "zzz"`,
		`workflow[0].tool[1].kind: unknown task kind "ftp"`,
		`workflow[0].next.arcs[0].step: arc to unknown step "nowhere"`,
	}
	if len(ps) != len(want) {
		t.Errorf("got %v", ps)
	}
	for _, w := range want {
		ok := false
		for _, q := range ps {
			ok = ok || strings.HasPrefix(q.String(), w)
		}
		if !ok {
			t.Errorf("missing %q in %v", w, ps)
		}
	}
	if p.LineOf("workflow[0]") != 0 {
		t.Error("LineOf on a Go-built playbook must be 0")
	}
}
