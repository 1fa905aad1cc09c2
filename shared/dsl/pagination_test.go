package dsl

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/template"
)

// ---- a miniature of the worker's pipeline (shared/worker run/decide) -----

// call is one http request the pipeline made (rendered config).
type call struct {
	URL     any
	Params  map[string]any
	Headers map[string]any
}

// fakeHTTP answers one rendered http config: status "ok" or "error", the
// decoded body, the HTTP status.
type fakeHTTP func(c call, n int) (status string, body any, code int)

// runSim runs step's pipeline the way shared/worker does (render config,
// run, decide by the first matching rule, apply set_iter, then continue /
// retry / jump / break / fail) and returns the unit's result, the calls
// made and the failure message ("" when ok).
func runSim(t *testing.T, p *Playbook, stepName string, iter map[string]any, http fakeHTTP) (any, []call, string) {
	t.Helper()
	s := p.Step(stepName)
	if iter == nil {
		iter = map[string]any{}
	}
	var calls []call
	var prev, final any
	hasPrev := false
	idx, attempt, jumps := 0, 1, 0
	scope := func(extra map[string]any) template.Scope {
		it := map[string]any{}
		for k, v := range iter {
			it[k] = v
		}
		return template.NewScope(template.ScopeParams{Workload: p.Workload, Iter: it, Extra: extra})
	}
	for idx < len(s.Tasks) {
		task := s.Tasks[idx]
		extra := map[string]any{"_attempt": attempt}
		if hasPrev {
			extra["_prev"] = prev
		}
		cfgV, err := template.RenderValue(task.Config, scope(extra))
		if err != nil {
			t.Fatalf("render %s config: %v", task.Name, err)
		}
		cfg, _ := cfgV.(map[string]any)
		out := map[string]any{"status": "ok", "error": nil, "http": nil}
		switch task.Kind {
		case "noop":
			out["result"] = cfg["result"]
		case "http":
			c := call{URL: cfg["url"]}
			c.Params, _ = cfg["params"].(map[string]any)
			c.Headers, _ = cfg["headers"].(map[string]any)
			calls = append(calls, c)
			if len(calls) > 1000 {
				t.Fatal("runaway pipeline")
			}
			status, body, code := http(c, len(calls))
			out["status"] = status
			out["result"] = map[string]any{"data": body, "status_code": code}
			out["http"] = map[string]any{"status": code, "headers": map[string]any{}}
			if status == "error" {
				out["error"] = map[string]any{"kind": "http", "message": fmt.Sprint("HTTP ", code), "retryable": code >= 500, "status": code}
			}
		default:
			t.Fatalf("sim: kind %s", task.Kind)
		}
		// decide
		pe := map[string]any{"outcome": out, "_attempt": attempt}
		if hasPrev {
			pe["_prev"] = prev
		}
		if task.Policy != nil {
			for _, r := range task.Policy.Rules {
				if r.Legacy {
					pe["status_code"] = out["http"].(map[string]any)["status"]
					pe["success"] = out["status"] == "ok"
				}
			}
		}
		then := Then{Do: "continue"}
		if task.Policy == nil {
			if out["status"] != "ok" {
				then = Then{Do: "fail"}
			}
		} else {
			for _, r := range task.Policy.Rules {
				if r.Else {
					then = r.Then
					break
				}
				hit, err := template.Truthy(r.When, scope(pe))
				if err != nil {
					t.Fatalf("rule %q: %v", r.When, err)
				}
				if hit {
					then = r.Then
					break
				}
			}
		}
		if iset := SetOf(then.Set, ScopeIter); len(iset) > 0 {
			v, err := template.RenderValue(iset, scope(pe))
			if err != nil {
				t.Fatalf("set_iter of %s: %v", task.Name, err)
			}
			for k, x := range v.(map[string]any) {
				iter[k] = x
			}
		}
		advance := func(to int) {
			prev, hasPrev, final = out["result"], true, out["result"]
			idx, attempt = to, 1
		}
		switch then.Do {
		case "retry":
			if attempt < then.Attempts {
				attempt++
				continue
			}
			if out["status"] != "ok" {
				return nil, calls, fmt.Sprintf("task %s failed after %d attempts", task.Name, attempt)
			}
			advance(idx + 1)
		case "fail":
			return nil, calls, "task " + task.Name + " failed"
		case "break":
			return out["result"], calls, ""
		case "jump":
			to := -1
			for i, o := range s.Tasks {
				if o.Name == then.To {
					to = i
				}
			}
			if to < 0 {
				t.Fatalf("jump to unknown %s", then.To)
			}
			jumps++
			advance(to)
		default:
			advance(idx + 1)
		}
	}
	return final, calls, ""
}

// pagedAPI serves total items (ids 1..total) by pages of size, as
// {data: [...], paging: {page, hasMore}}; page comes from params.page.
func pagedAPI(t *testing.T, total, size int) fakeHTTP {
	return func(c call, _ int) (string, any, int) {
		page, ok := c.Params["page"].(int)
		if !ok {
			t.Fatalf("page param = %#v (%T)", c.Params["page"], c.Params["page"])
		}
		var items []any
		for id := (page-1)*size + 1; id <= page*size && id <= total; id++ {
			items = append(items, id)
		}
		return "ok", map[string]any{"data": items, "paging": map[string]any{"page": page, "hasMore": page*size < total}}, 200
	}
}

func ids(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// ---- the normalised model -------------------------------------------------

const appendACC = "{{ (iter._collected | default([])) + outcome.result.data['data'] if (outcome.result.data['data'] is sequence and outcome.result.data['data'] is not string and outcome.result.data['data'] is not mapping) else (iter._collected | default([])) + ([outcome.result.data['data']] | reject('none') | list) }}"

func TestSeed002PaginationRewrite(t *testing.T) {
	p := mustLoadFile(t, "testdata/valid/seed002_pagination.yaml")
	if len(p.Warnings) != 1 {
		t.Fatalf("warnings:\n%s", FormatProblems("NoETL distributed loop design", p.Warnings))
	}
	w := p.Warnings[0]
	if w.Line != 27 || w.Path != "workflow[1].retry.on_success" || w.Severity != SeverityWarning ||
		!strings.Contains(w.Message, "legacy retry.on_success is deprecated: normalised to a jump pipeline") ||
		!strings.Contains(w.Message, `the added noop task "fetch_paginated_data_collect"`) {
		t.Errorf("warning = %+v", w)
	}
	s := p.Step("fetch_paginated_data")
	if len(s.Tasks) != 2 {
		t.Fatalf("tasks = %d", len(s.Tasks))
	}
	fetch, collect := s.Tasks[0], s.Tasks[1]
	wantCfg := map[string]any{
		"method": "GET",
		"url":    "{{ api_url }}/data",
		"params": map[string]any{"page": "{{ iter.page | default(1) }}", "pageSize": 100},
	}
	if fetch.Name != "fetch_paginated_data_task" || fetch.Kind != "http" || !reflect.DeepEqual(fetch.Config, wantCfg) {
		t.Errorf("fetch = %s %s %#v", fetch.Name, fetch.Kind, fetch.Config)
	}
	want := []*Rule{
		{When: "{{ outcome.status == 'ok' and (iter._iteration | default(1)) < 100 and (outcome.result.data.paging.hasMore) }}",
			Then: Then{Do: "jump", To: "fetch_paginated_data_task", Set: iterSet(map[string]any{
				"page":       "{{ outcome.result.data.paging.page + 1 }}",
				"_collected": appendACC,
				"_iteration": "{{ (iter._iteration | default(1)) + 1 }}",
			}, 0, "")}},
		{When: "{{ outcome.status == 'ok' }}", Then: Then{Do: "continue", Set: iterSet(map[string]any{"_collected": appendACC}, 0, "")}},
		{Else: true, Then: Then{Do: "fail"}},
	}
	checkRules(t, fetch.Policy, want, 27, "workflow[1].retry.on_success")
	if collect.Name != "fetch_paginated_data_collect" || collect.Kind != "noop" || collect.Line != 27 ||
		!reflect.DeepEqual(collect.Config, map[string]any{"result": "{{ iter._collected }}"}) {
		t.Errorf("collect = %+v", collect)
	}
	checkRules(t, collect.Policy, []*Rule{{Else: true, Then: Then{Do: "continue", Set: iterSet(map[string]any{"_collected": nil, "_iteration": nil, "page": nil}, 0, "")}}}, 27, "workflow[1].retry.on_success")

	// It validates, serialises, and Lint finds no trapped jump cycle.
	if ps := p.Validate(); len(ps) > 0 {
		t.Errorf("Validate:\n%s", FormatProblems("NoETL distributed loop design", ps))
	}
	if _, err := json.Marshal(p); err != nil {
		t.Error(err)
	}
	noFinding(t, Lint(p), LintJumpCycle, LintNoTerminal, LintUnguardedCycle)

	// Run it: 25 items by pages of 10 → 3 calls, pages 1, 2, 3.
	res, calls, failed := runSim(t, p, "fetch_paginated_data", nil, pagedAPI(t, 25, 10))
	if failed != "" {
		t.Fatal(failed)
	}
	if !reflect.DeepEqual(res, ids(25)) {
		t.Errorf("result = %#v", res)
	}
	if len(calls) != 3 {
		t.Fatalf("calls = %d", len(calls))
	}
	for i, c := range calls {
		if c.Params["page"] != i+1 || c.Params["pageSize"] != 100 || c.URL != "http://api.local/data" {
			t.Errorf("call %d = %+v", i, c)
		}
	}
}

func checkRules(t *testing.T, pol *Policy, want []*Rule, line int, path string) {
	t.Helper()
	if pol == nil || len(pol.Rules) != len(want) {
		t.Fatalf("policy = %+v, want %d rules", pol, len(want))
	}
	for i, r := range pol.Rules {
		w := *want[i]
		if w.Line == 0 {
			w.Line = line
		}
		if w.Path == "" {
			w.Path = path
		}
		w.Then.Set = append([]Assignment(nil), w.Then.Set...)
		for k := range w.Then.Set {
			if w.Then.Set[k].Line == 0 {
				w.Then.Set[k].Line, w.Then.Set[k].Path = w.Line, w.Path
			}
		}
		if !reflect.DeepEqual(*r, w) {
			got, _ := json.MarshalIndent(r, "", "  ")
			exp, _ := json.MarshalIndent(w, "", "  ")
			t.Errorf("rule %d:\n got %s (line %d, path %s)\nwant %s (line %d, path %s)", i, got, r.Line, r.Path, exp, w.Line, w.Path)
		}
	}
}

const pagStep = `  - step: start
    tool:
      kind: http
      url: "{{ workload.api }}/items"
      params: {page: 1}
    retry:
      on_success:
`

func loadPag(t *testing.T, onSuccess string, more ...string) *Playbook {
	t.Helper()
	src := "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata:\n  name: t\nworkload:\n  api: http://x\nworkflow:\n" + pagStep + onSuccess + strings.Join(more, "")
	return mustLoad(t, src)
}

func TestPaginationMaxAttempts(t *testing.T) {
	p := loadPag(t, `        while: "{{ response.paging.hasMore }}"
        max_attempts: 2
        next_call: {params: {page: "{{ (response.paging.page | int) + 1 }}"}}
        collect: {strategy: append, path: data}
`)
	res, calls, failed := runSim(t, p, "start", nil, pagedAPI(t, 100, 10))
	if failed != "" || len(calls) != 2 || !reflect.DeepEqual(res, ids(20)) {
		t.Errorf("failed=%q calls=%d result=%v", failed, len(calls), res)
	}
	if w := p.Step("start").Tasks[0].Policy.Rules[0].When; !strings.Contains(w, "< 2 and") {
		t.Errorf("when = %s", w)
	}
}

func TestPaginationStrategies(t *testing.T) {
	cases := []struct {
		name, collect string
		want          any
	}{
		{"replace at path", "        collect: {strategy: replace, path: data}\n", []any{21, 22, 23, 24, 25}},
		{"collect at path", "        collect: {strategy: collect, merge_path: data}\n", []any{ids(10), []any{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, []any{21, 22, 23, 24, 25}}},
		{"collect bodies", "        collect: collect\n", nil},
		{"append bodies (default)", "", nil},
		{"append a mapping", "        merge_path: paging\n", []any{
			map[string]any{"page": 1, "hasMore": true}, map[string]any{"page": 2, "hasMore": true}, map[string]any{"page": 3, "hasMore": false}}},
		{"append a missing path", "        merge_path: nothing.here\n", []any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := loadPag(t, "        while: \"{{ response.paging.hasMore }}\"\n        next_call: {params: {page: \"{{ response.paging.page + 1 }}\"}}\n"+c.collect)
			res, calls, failed := runSim(t, p, "start", nil, pagedAPI(t, 25, 10))
			if failed != "" || len(calls) != 3 {
				t.Fatalf("failed=%q calls=%d", failed, len(calls))
			}
			want := c.want
			if want == nil { // whole bodies, one per call
				var bodies []any
				for page := 1; page <= 3; page++ {
					var items []any
					for id := (page-1)*10 + 1; id <= page*10 && id <= 25; id++ {
						items = append(items, id)
					}
					bodies = append(bodies, map[string]any{"data": items, "paging": map[string]any{"page": page, "hasMore": page < 3}})
				}
				want = bodies
			}
			if !reflect.DeepEqual(res, want) {
				t.Errorf("result = %#v\nwant %#v", res, want)
			}
		})
	}
}

func TestPaginationErrors(t *testing.T) {
	// Without on_error an error fails the task (NoETL raised).
	p := loadPag(t, "        while: \"{{ response.paging.hasMore }}\"\n        next_call: {params: {page: \"{{ response.paging.page + 1 }}\"}}\n")
	flaky := func(failAt int) fakeHTTP {
		api := pagedAPI(t, 25, 10)
		return func(c call, n int) (string, any, int) {
			if n == failAt {
				return "error", map[string]any{"error": "boom"}, 503
			}
			return api(c, n)
		}
	}
	if _, calls, failed := runSim(t, p, "start", nil, flaky(2)); failed == "" || len(calls) != 2 {
		t.Errorf("failed=%q calls=%d", failed, len(calls))
	}

	// on_error retries the failed page, then pagination goes on.
	p = loadPag(t, "        while: \"{{ response.paging.hasMore }}\"\n        next_call: {params: {page: \"{{ response.paging.page + 1 }}\"}}\n        merge_path: data\n",
		"      on_error:\n        max_attempts: 3\n        initial_delay: 0.5\n")
	rules := p.Step("start").Tasks[0].Policy.Rules
	if len(rules) != 3 || rules[2].When != "{{ outcome.status == 'error' }}" || rules[2].Then.Do != "retry" || rules[2].Then.Attempts != 3 || rules[2].Then.Delay != 0.5 || rules[2].Then.Backoff != "exponential" {
		t.Fatalf("error rule = %+v", rules[len(rules)-1])
	}
	res, calls, failed := runSim(t, p, "start", nil, flaky(2))
	if failed != "" || len(calls) != 4 || !reflect.DeepEqual(res, ids(25)) {
		t.Errorf("failed=%q calls=%d result=%v", failed, len(calls), res)
	}
	if calls[1].Params["page"] != 2 || calls[2].Params["page"] != 2 {
		t.Errorf("the retried call must repeat page 2: %+v", calls)
	}

	// Seed 001 keys under on_error keep their legacy rules, minus ok → continue.
	p = loadPag(t, "        while: \"{{ response.paging.hasMore }}\"\n",
		"      on_error:\n        retry_when: \"{{ status_code >= 500 }}\"\n        max_attempts: 2\n")
	rules = p.Step("start").Tasks[0].Policy.Rules
	if len(rules) != 4 || !rules[2].Legacy || rules[2].When != "{{ status_code >= 500 }}" || rules[2].Then.Do != "retry" || !rules[3].Else || rules[3].Then.Do != "fail" {
		for _, r := range rules {
			t.Logf("%+v", r)
		}
		t.Fatal("legacy error rules not kept")
	}
	if !strings.Contains(p.Warnings[0].Message, "retry_when → retry (attempts 2") {
		t.Errorf("warning = %s", p.Warnings[0].Message)
	}
}

func TestPaginationCursorHeadersURL(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    tool:
      - fetch:
          kind: http
          url: "{{ workload.api }}/events?v={{ 1 }}"
          headers: {Accept: application/json, X-Token: "{{ workload.token }}"}
          params: {limit: 2, "page[size]": 2}
          retry:
            on_success:
              while: "{{ response.next_cursor is not none and iteration < 10 }}"
              next_call:
                params:
                  cursor: "{{ response.next_cursor }}"
                  "page[size]": 3
                headers:
                  X-Token: "{{ response.token }}"
                  X-Call: "{{ iteration + 1 }}"
                url: "{{ response.links.next }}"
              collect: {strategy: append, path: events, into: pages}
      - count:
          kind: noop
          result: "{{ _prev | length }}"
`)
	s := p.Step("start")
	var labels []string
	for _, task := range s.Tasks {
		labels = append(labels, task.Name)
	}
	if !reflect.DeepEqual(labels, []string{"fetch", "fetch_collect", "count"}) {
		t.Fatalf("labels = %v", labels)
	}
	fetch := s.Tasks[0]
	wantCfg := map[string]any{
		"url": "{% if iter._url is defined %}{{ iter._url }}{% else %}{{ workload.api }}/events?v={{ 1 }}{% endif %}",
		"headers": map[string]any{
			"Accept":  "application/json",
			"X-Token": "{{ iter._headers['X-Token'] | default((workload.token)) }}",
			"X-Call":  "{{ iter._headers['X-Call'] }}",
		},
		"params": map[string]any{"limit": 2, "page[size]": "{{ iter['page[size]'] | default(2) }}", "cursor": "{{ iter.cursor }}"},
	}
	if !reflect.DeepEqual(fetch.Config, wantCfg) {
		got, _ := json.MarshalIndent(fetch.Config, "", "  ")
		t.Errorf("config = %s", got)
	}
	j := fetch.Policy.Rules[0]
	if j.When != "{{ outcome.status == 'ok' and (iter._iteration | default(1)) < 100 and (outcome.result.data.next_cursor is not none and (iter._iteration | default(1)) < 10) }}" {
		t.Errorf("when = %s", j.When)
	}
	wantIter := map[string]any{
		"cursor": "{{ outcome.result.data.next_cursor }}", "page[size]": 3,
		"_headers":   map[string]any{"X-Token": "{{ outcome.result.data.token }}", "X-Call": "{{ (iter._iteration | default(1)) + 1 }}"},
		"_url":       "{{ outcome.result.data.links.next }}",
		"_collected": "{{ (iter._collected | default([])) + outcome.result.data['events'] if (outcome.result.data['events'] is sequence and outcome.result.data['events'] is not string and outcome.result.data['events'] is not mapping) else (iter._collected | default([])) + ([outcome.result.data['events']] | reject('none') | list) }}",
		"_iteration": "{{ (iter._iteration | default(1)) + 1 }}",
	}
	if !reflect.DeepEqual(SetOf(j.Then.Set, ScopeIter), wantIter) {
		got, _ := json.MarshalIndent(SetOf(j.Then.Set, ScopeIter), "", "  ")
		t.Errorf("set_iter = %s", got)
	}
	if !strings.Contains(strings.Join(messages(p.Warnings), "\n"), "collect.into is not bound") ||
		!strings.Contains(strings.Join(messages(p.Warnings), "\n"), `which become the _prev of task "count"`) {
		t.Errorf("warnings:\n%s", FormatProblems("t", p.Warnings))
	}

	p.Workload = map[string]any{"api": "http://x", "token": "t0"}
	api := func(c call, n int) (string, any, int) {
		body := map[string]any{"events": []any{n*10 + 1, n*10 + 2}, "token": fmt.Sprint("t", n), "links": map[string]any{"next": fmt.Sprint("http://x/events/", n+1)}}
		if n < 3 {
			body["next_cursor"] = fmt.Sprint("c", n)
		}
		return "ok", body, 200
	}
	res, calls, failed := runSim(t, p, "start", nil, api)
	if failed != "" || res != 6 || len(calls) != 3 {
		t.Fatalf("failed=%q result=%v calls=%d", failed, res, len(calls))
	}
	want := []call{
		{URL: "http://x/events?v=1", Params: map[string]any{"limit": 2, "page[size]": 2, "cursor": nil}, Headers: map[string]any{"Accept": "application/json", "X-Token": "t0", "X-Call": nil}},
		{URL: "http://x/events/2", Params: map[string]any{"limit": 2, "page[size]": 3, "cursor": "c1"}, Headers: map[string]any{"Accept": "application/json", "X-Token": "t1", "X-Call": 2}},
		{URL: "http://x/events/3", Params: map[string]any{"limit": 2, "page[size]": 3, "cursor": "c2"}, Headers: map[string]any{"Accept": "application/json", "X-Token": "t2", "X-Call": 3}},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls:\n got %+v\nwant %+v", calls, want)
	}
}

func messages(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Message)
	}
	return out
}

func TestPaginationPolling(t *testing.T) {
	// No next_call: the same call repeats while the job runs; replace
	// keeps the last status.
	p := loadPag(t, "        while: \"{{ response.state == 'running' }}\"\n        collect: replace\n")
	api := func(c call, n int) (string, any, int) {
		st := "running"
		if n == 4 {
			st = "done"
		}
		return "ok", map[string]any{"state": st, "n": n}, 200
	}
	res, calls, failed := runSim(t, p, "start", nil, api)
	if failed != "" || len(calls) != 4 || !reflect.DeepEqual(res, map[string]any{"state": "done", "n": 4}) {
		t.Errorf("failed=%q calls=%d result=%v", failed, len(calls), res)
	}
	if p.Step("start").Tasks[0].Config["params"].(map[string]any)["page"] != 1 {
		t.Error("params changed without next_call")
	}
}

func TestPaginationInLoopStep(t *testing.T) {
	p := mustLoad(t, hdr+`  - step: start
    loop:
      in: "{{ workload.endpoints }}"
      iterator: endpoint
    tool:
      kind: http
      url: "http://x/{{ iter.endpoint }}"
      params: {page: 1}
    retry:
      on_success:
        while: "{{ response.paging.hasMore }}"
        next_call: {params: {page: "{{ response.paging.page + 1 }}"}}
        merge_path: data
`)
	s := p.Step("start")
	if len(s.Tasks) != 2 || s.Tasks[1].Name != "start_collect" {
		t.Fatalf("tasks = %+v", s.Tasks)
	}
	// Each iteration has its own iter: the pagination state does not leak.
	for _, ep := range []string{"a", "b"} {
		res, calls, failed := runSim(t, p, "start", map[string]any{"endpoint": ep}, pagedAPI(t, 15, 10))
		if failed != "" || len(calls) != 2 || !reflect.DeepEqual(res, ids(15)) || calls[0].URL != "http://x/"+ep {
			t.Errorf("%s: failed=%q calls=%+v result=%v", ep, failed, calls, res)
		}
	}
}

func TestPaginationRejected(t *testing.T) {
	const on = "workflow[0].retry.on_success"
	cases := []struct {
		name, src string
		line      int
		path, msg string
	}{
		{"two tasks", `  - step: start
    tool:
      - {name: a, kind: http, url: x}
      - {name: b, kind: noop}
    retry:
      on_success: {while: "{{ response.more }}"}
`, 11, on, "a step-level on_success repeats the step's single task, and this step has 2"},
		{"own policy", `  - step: start
    tool: {kind: http, url: x, spec: {policy: {rules: [{else: {then: {do: continue}}}]}}}
    retry:
      on_success: {while: "{{ response.more }}"}
`, 9, on, `task "start_task" has its own spec.policy`},
		{"mixed while", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ response.more }} and {{ response.ok }}"}
`, 9, on, "is not one {{ expression }}"},
		{"plain while", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "response.more"}
`, 9, on, "is not one {{ expression }}"},
		{"inline if", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ true if response.more else false }}"}
`, 9, on, "inline if/else"},
		{"next_call body", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ response.more }}", next_call: {body: {cursor: x}}}
`, 9, on + ".next_call.body", "only params, headers and url"},
		{"params template", `  - step: start
    tool: {kind: http, url: x, params: "{{ workload.p }}"}
    retry:
      on_success: {while: "{{ response.more }}", next_call: {params: {page: 2}}}
`, 9, on, `task "start_task" params is not a mapping`},
		{"original list", `  - step: start
    tool: {kind: http, url: x, params: {ids: [1, 2]}}
    retry:
      on_success: {while: "{{ response.more }}", next_call: {params: {ids: "{{ response.ids }}"}}}
`, 9, on, "params.ids is a list or mapping"},
		{"reserved key", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ response.more }}", next_call: {params: {_collected: 1}}}
`, 9, on, `next_call param "_collected" clashes`},
		{"iterator key", `  - step: start
    loop: {in: [1], iterator: page}
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ response.more }}", next_call: {params: {page: 2}}}
`, 10, "workflow[0].retry.on_success", `next_call param "page" clashes`},
		{"per_iteration", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ response.more }}", per_iteration: {sink: {}}}
`, 9, on + ".per_iteration", "per_iteration side effects"},
		{"no while", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {max_attempts: 3}
`, 9, on + ".while", "needs while"},
		{"max_attempts 0", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_success: {while: "{{ response.more }}", max_attempts: 0}
`, 9, on + ".max_attempts", "must be at least 1"},
		{"two paginated tasks", `  - step: start
    tool:
      - {name: a, kind: http, url: x, retry: {on_success: {while: "{{ response.more }}"}}}
      - {name: b, kind: http, url: y, retry: {on_success: {while: "{{ response.more }}"}}}
`, 9, "workflow[0].tool[1].retry.on_success", "only one task of a step"},
		{"step and task", `  - step: start
    tool: {kind: http, url: x, retry: {on_success: {while: "{{ response.more }}"}}}
    retry:
      on_success: {while: "{{ response.more }}"}
`, 9, on, "both have retry.on_success"},
		{"workbook", `  - step: start
    tool: {kind: workbook, name: page}
workbook:
  page: {kind: http, url: x, retry: {on_success: {while: "{{ response.more }}"}}}
`, 9, "workbook.page.retry.on_success", "in a workbook entry"},
		{"nested in on_error", `  - step: start
    tool: {kind: http, url: x}
    retry:
      on_error: {on_success: {while: "{{ response.more }}"}}
`, 9, "workflow[0].retry.on_error.on_success", "unexpected on_success inside on_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := loadErr(t, hdr+c.src)
			find(t, ve.Problems, c.line, c.path, c.msg)
			if strings.Contains(c.msg, "clashes") || strings.Contains(c.msg, "is not one") || strings.Contains(c.msg, "params") {
				find(t, ve.Problems, c.line, c.path, "rewrite it as task policy in the same step")
			}
		})
	}
}

func TestRewriteNames(t *testing.T) {
	cases := map[string]string{
		"{{ response.paging.page + 1 }}":                   "{{ outcome.result.data.paging.page + 1 }}",
		"{{ (response.paging.page | int) + 1 }}":           "{{ (outcome.result.data.paging.page | int) + 1 }}",
		"{{ page.next }}":                                  "{{ outcome.result.data.next }}",
		"{{ iter.page + response . page }}":                "{{ iter.page + outcome.result.data . page }}",
		"{{ 'response' ~ \"page\" ~ response }}":           "{{ 'response' ~ \"page\" ~ outcome.result.data }}",
		"{{ 'it\\'s response' ~ response }}":               "{{ 'it\\'s response' ~ outcome.result.data }}",
		"{{ x | default(response=1) == response }}":        "{{ x | default(response=1) == outcome.result.data }}",
		"text response {{ response }} {# response #}":      "text response {{ outcome.result.data }} {# response #}",
		"{% if response.more %}{{ iteration }}{% endif %}": "{% if outcome.result.data.more %}{{ (iter._iteration | default(1)) }}{% endif %}",
		"{{ responses + paging + 1e5 }}":                   "{{ responses + paging + 1e5 }}",
		"no markup response":                               "no markup response",
		"{ response }":                                     "{ response }",
	}
	for in, want := range cases {
		if got := rewriteNames(in, successNames); got != want {
			t.Errorf("rewriteNames(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestPaginationTemplatesRender renders every generated template once, so
// a template the engine cannot parse fails here, not at run time.
func TestPaginationTemplatesRender(t *testing.T) {
	p := loadPag(t, `        while: "{{ response.paging.hasMore }}"
        next_call:
          params: {page: "{{ response.paging.page + 1 }}", q: "{{ 'a' }}-b"}
          headers: {H: x}
          url: "{{ response.next }}"
`)
	sc := template.NewScope(template.ScopeParams{Workload: p.Workload, Iter: map[string]any{}, Extra: map[string]any{
		"outcome": map[string]any{"status": "ok", "result": map[string]any{"data": map[string]any{"paging": map[string]any{"page": 1, "hasMore": true}, "next": "u"}}},
	}})
	for _, task := range p.Step("start").Tasks {
		if _, err := template.RenderValue(task.Config, sc); err != nil {
			t.Errorf("%s config: %v", task.Name, err)
		}
		for _, r := range task.Policy.Rules {
			if r.When != "" {
				if _, err := template.Truthy(r.When, sc); err != nil {
					t.Errorf("%s when: %v", task.Name, err)
				}
			}
			if _, err := template.RenderValue(SetOf(r.Then.Set, ScopeIter), sc); err != nil {
				t.Errorf("%s set_iter: %v", task.Name, err)
			}
		}
	}
}
