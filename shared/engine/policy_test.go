package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// okOut and errOut are task outcomes for the policy and pipeline tests.
func okOut(result any) types.Outcome {
	return types.Outcome{Status: types.StatusOK, Result: result, Meta: types.OutcomeMeta{Attempt: 1}}
}

func errOut(kind string, status int, retryable bool) types.Outcome {
	o := types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: types.ErrorKind(kind), Message: kind + " failed", Retryable: retryable, Status: status}}
	if status != 0 {
		o.HTTP = &types.HTTPOutcome{Status: status, Headers: map[string]string{}}
	}
	return o
}

// rule builds a policy rule ("else" for the catch-all).
func rule(when string, then dsl.Then) *dsl.Rule {
	if when == "else" {
		return &dsl.Rule{Else: true, Then: then}
	}
	return &dsl.Rule{When: when, Then: then}
}

func policyTask(rules ...*dsl.Rule) *dsl.Task {
	t := &dsl.Task{Name: "fetch", Kind: "http"}
	if rules != nil {
		t.Policy = &dsl.Policy{Rules: rules}
	}
	return t
}

// policyScope is the scope a policy sees for out at cursor c.
func policyScope(out types.Outcome, c Cursor, legacy bool) template.Scope {
	return template.NewScope(template.ScopeParams{
		Workload: map[string]any{"limit": 2},
		Ctx:      map[string]any{"page": 3},
		Extra:    PolicyExtra(out, c, legacy),
	})
}

func TestDecideTask(t *testing.T) {
	retry := dsl.Then{Do: "retry", Attempts: 5, Delay: 1, Backoff: "exponential"}
	jump := dsl.Then{Do: "jump", To: "first", Set: []dsl.Assignment{{Scope: dsl.ScopeIter, Key: "n", Value: "{{ iter.n + 1 }}"}}}
	fail := dsl.Then{Do: "fail"}
	cur := Cursor{Attempt: 2, Prev: map[string]any{"more": true}, HasPrev: true, TaskResults: map[string]any{"first": []any{1}}}
	cases := []struct {
		name     string
		task     *dsl.Task
		out      types.Outcome
		want     types.Action
		wantRule int
		wantThen dsl.Then
	}{
		{"no policy, ok: continue", policyTask(), okOut(1), types.ActContinue, -1, dsl.Then{}},
		{"no policy, error: fail", policyTask(), errOut("http", 503, true), types.ActFail, -1, dsl.Then{}},
		{"empty policy, error: fail", &dsl.Task{Name: "fetch", Policy: &dsl.Policy{}}, errOut("http", 503, true), types.ActFail, -1, dsl.Then{}},
		{"first match wins", policyTask(
			rule("{{ outcome.status == 'error' and outcome.error.retryable }}", retry),
			rule("{{ outcome.status == 'error' }}", fail),
		), errOut("http", 503, true), types.ActRetry, 0, retry},
		{"a later rule matches", policyTask(
			rule("{{ outcome.status == 'error' and outcome.error.retryable }}", retry),
			rule("{{ outcome.status == 'error' }}", fail),
		), errOut("http", 400, false), types.ActFail, 1, fail},
		{"else matches what nothing else did", policyTask(
			rule("{{ outcome.http.status == 429 }}", retry),
			rule("else", jump),
		), okOut(1), types.ActJump, 1, jump},
		{"no match and no else: continue, even on error", policyTask(
			rule("{{ outcome.http.status == 429 }}", retry),
		), errOut("http", 500, true), types.ActContinue, -1, dsl.Then{}},
		{"a matched rule without do continues", policyTask(
			rule("true", dsl.Then{Set: []dsl.Assignment{{Scope: dsl.ScopeCtx, Key: "x", Value: 1}}}),
		), okOut(1), types.ActContinue, 0, dsl.Then{Set: []dsl.Assignment{{Scope: dsl.ScopeCtx, Key: "x", Value: 1}}}},
		{"the DSL v2 name output.data is the result", policyTask(
			rule("{{ output.data.more and output.status == 'ok' }}", jump),
		), okOut(map[string]any{"more": true}), types.ActJump, 0, jump},
		{"_prev, _task and _attempt are bound", policyTask(
			rule("{{ _prev.more and _task.first[0] == 1 and _attempt == 2 }}", fail),
		), okOut(nil), types.ActFail, 0, fail},
		{"bare expressions and workload/ctx", policyTask(
			rule("ctx.page > limit", retry),
		), okOut(nil), types.ActRetry, 0, retry},
		{"rules after the match are not evaluated", policyTask(
			rule("true", fail),
			rule("{{ 1 / 0 }}", retry),
		), okOut(nil), types.ActFail, 0, fail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := DecideTask(c.task, c.out, policyScope(c.out, cur, false))
			if err != nil {
				t.Fatalf("DecideTask: %v", err)
			}
			if d.Action != c.want || d.Rule != c.wantRule || !reflect.DeepEqual(d.Then, c.wantThen) {
				t.Fatalf("DecideTask = %+v, want action %s rule %d then %+v", d, c.want, c.wantRule, c.wantThen)
			}
		})
	}
}

// TestDecideTaskTemplateError: a `when` that cannot be evaluated is an
// error naming the task and the rule, never a guess.
func TestDecideTaskTemplateError(t *testing.T) {
	for _, when := range []string{"{{ outcome.status == }}", "{{ 1 / 0 }}", "{{ 'a' + outcome.meta.attempt }}"} {
		task := policyTask(rule("{{ false }}", dsl.Then{Do: "fail"}), rule(when, dsl.Then{Do: "retry"}), rule("else", dsl.Then{Do: "break"}))
		d, err := DecideTask(task, okOut(1), policyScope(okOut(1), Cursor{Attempt: 1}, false))
		if err == nil {
			t.Fatalf("DecideTask(%q) = %+v, want an error", when, d)
		}
		if !strings.Contains(err.Error(), "task fetch policy rule 1") {
			t.Errorf("DecideTask(%q) error %q does not name the task and rule", when, err)
		}
	}
}

func TestPolicyExtra(t *testing.T) {
	out := errOut("http", 503, true)
	out.Result = map[string]any{"data": []any{1}}
	c := Cursor{Attempt: 3, TaskResults: map[string]any{"a": 1}}
	m := PolicyExtra(out, c, false)
	if _, ok := m["_prev"]; ok {
		t.Error("_prev bound without a previous task")
	}
	for _, k := range []string{"success", "status_code", "attempt"} {
		if _, ok := m[k]; ok {
			t.Errorf("legacy name %s bound without legacy rules", k)
		}
	}
	output := m["output"].(map[string]any)
	if !reflect.DeepEqual(output["data"], out.Result) || output["status"] != "error" || m["_attempt"] != 3 ||
		!reflect.DeepEqual(m["_task"], c.TaskResults) || !reflect.DeepEqual(m["outcome"], out.ToMap()) {
		t.Fatalf("PolicyExtra = %v", m)
	}
	if _, ok := m["outcome"].(map[string]any)["data"]; ok {
		t.Error("outcome.data is bound: data is output's name only")
	}
	c.Prev, c.HasPrev = nil, true
	if v, ok := PolicyExtra(out, c, false)["_prev"]; !ok || v != nil {
		t.Errorf("_prev = %v, %v; want bound to nil", v, ok)
	}
	legacy := PolicyExtra(out, c, true)
	want := map[string]any{"success": false, "status_code": 503, "attempt": 3, "error": "http failed",
		"result": out.Result, "data": []any{1}}
	for k, v := range want {
		if !reflect.DeepEqual(legacy[k], v) {
			t.Errorf("legacy %s = %#v, want %#v", k, legacy[k], v)
		}
	}
	ok := PolicyExtra(okOut("r"), c, true)
	if ok["success"] != true || ok["status_code"] != nil || ok["error"] != nil || ok["data"] != nil {
		t.Errorf("legacy names of an ok outcome without http: %v", ok)
	}
}

func TestEvalAdmit(t *testing.T) {
	yes, no := true, false
	allow := func(b *bool) dsl.Then { return dsl.Then{Allow: b} }
	sc := template.NewScope(template.ScopeParams{Workload: map[string]any{"region": "eu"}})
	cases := []struct {
		name      string
		rules     []*dsl.Rule
		want      bool
		wantRule  int
		wantError bool
	}{
		{"no rules admit", nil, true, -1, false},
		{"no match admits", []*dsl.Rule{rule("region == 'us'", allow(&no))}, true, -1, false},
		{"first match denies", []*dsl.Rule{rule("region == 'eu'", allow(&no)), rule("true", allow(&yes))}, false, 0, false},
		{"first match allows", []*dsl.Rule{rule("region == 'eu'", allow(&yes)), rule("true", allow(&no))}, true, 0, false},
		{"else", []*dsl.Rule{rule("region == 'us'", allow(&yes)), rule("else", allow(&no))}, false, 1, false},
		{"a match without allow admits", []*dsl.Rule{rule("true", dsl.Then{})}, true, 0, false},
		{"template error", []*dsl.Rule{rule("false", allow(&no)), rule("{{ 1 / 0 }}", allow(&no))}, false, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, idx, err := EvalAdmit(&dsl.Policy{Rules: c.rules}, sc)
			if (err != nil) != c.wantError || ok != c.want || idx != c.wantRule {
				t.Fatalf("EvalAdmit = %v, %d, %v; want %v, %d, error %v", ok, idx, err, c.want, c.wantRule, c.wantError)
			}
		})
	}
}

func TestBackoffEdges(t *testing.T) {
	cases := []struct {
		then    dsl.Then
		attempt int
		want    time.Duration
	}{
		{dsl.Then{}, 1, 0},
		{dsl.Then{Backoff: "exponential"}, 5, 0},
		{dsl.Then{Delay: -1}, 1, 0},
		{dsl.Then{Delay: 0.25}, 9, 250 * time.Millisecond},
		{dsl.Then{Delay: 2, Backoff: "linear", MaxDelay: 5}, 4, 5 * time.Second},
		{dsl.Then{Delay: 2, Backoff: "linear", MaxDelay: 5}, 2, 4 * time.Second},
		{dsl.Then{Delay: 1, Backoff: "exponential"}, 11, 1024 * time.Second},
		{dsl.Then{Delay: 3, MaxDelay: 1}, 1, time.Second},
	}
	for _, c := range cases {
		if got := Backoff(c.then, c.attempt); got != c.want {
			t.Errorf("Backoff(%+v, %d) = %v, want %v", c.then, c.attempt, got, c.want)
		}
	}
}

// output.ref (DSL v2) is the result-tier reference of a stored result and
// is undefined for an inline one.
func TestPolicyExtraOutputRef(t *testing.T) {
	ref := map[string]any{"uri": "noetl://t/p/results/1/s/0/0/1", "key": "k", "bucket": "b"}
	out := okOut(map[string]any{results.RefKey: ref, results.ExtractedKey: map[string]any{"n": 1}})
	if got := PolicyExtra(out, Cursor{Attempt: 1}, false)["output"].(map[string]any)["ref"]; !reflect.DeepEqual(got, ref) {
		t.Fatalf("output.ref = %v, want %v", got, ref)
	}
	if _, ok := PolicyExtra(okOut(map[string]any{"n": 1}), Cursor{Attempt: 1}, false)["output"].(map[string]any)["ref"]; ok {
		t.Fatal("output.ref bound for an inline result")
	}
}
