package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func intp(i int) *int { return &i }

// baseScope is a scope shaped like a running pagination/loop playbook.
func baseScope() Scope {
	return NewScope(ScopeParams{
		Workload: map[string]any{
			"initial_value": 100,
			"api_url":       "http://paginated-api:5555",
			"message":       "Hello World",
			"users": []any{
				map[string]any{"id": 1, "name": "Alice"},
				map[string]any{"id": 2, "name": "Bob"},
			},
			"numbers":          []any{1, 2, 3, 4, 5},
			"ratio":            0.25,
			"nothing":          nil,
			"cleanup_required": true,
		},
		Ctx: map[string]any{"has_more": true, "current_page": 2, "collected_items": []any{}},
		Results: map[string]any{
			"process_data": map[string]any{"status": "success", "data": map[string]any{"temp_table": "temp_session_12345", "records_processed": 100}},
		},
		ExecutionID: "exec-1",
	})
}

func mustRender(t *testing.T, tmpl string, s Scope) any {
	t.Helper()
	v, err := Render(tmpl, s)
	if err != nil {
		t.Fatalf("Render(%q): %v", tmpl, err)
	}
	return v
}

type renderCase struct {
	tmpl string
	want any
}

func runCases(t *testing.T, s Scope, cases []renderCase) {
	t.Helper()
	for _, c := range cases {
		got, err := Render(c.tmpl, s)
		if err != nil {
			t.Errorf("Render(%q): unexpected error %v", c.tmpl, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Render(%q) = %#v (%T), want %#v (%T)", c.tmpl, got, got, c.want, c.want)
		}
	}
}

func TestPlainStringUnchanged(t *testing.T) {
	s := baseScope()
	for _, in := range []string{"", "plain text", "SELECT * FROM t WHERE a = '{'", "{# not a template #}", "a } b {"} {
		got := mustRender(t, in, s)
		if got != in {
			t.Errorf("Render(%q) = %#v, want unchanged", in, got)
		}
	}
	// The only allocation is boxing the string into the `any` result.
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = Render("http://example.com/path?x=1", s)
	})
	if allocs > 1 {
		t.Errorf("plain string render allocates %v times, want at most 1", allocs)
	}
}

func TestNativeValues(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{{ initial_value }}", 100},
		{"  {{ initial_value }}\n", 100},
		{"{{- initial_value -}}", 100},
		{"{{ users }}", []any{map[string]any{"id": 1, "name": "Alice"}, map[string]any{"id": 2, "name": "Bob"}}},
		{"{{ ctx.has_more == true }}", true},
		{"{{ ctx.has_more != true }}", false},
		{"{{ 1 + 2 }}", 3},
		{"{{ [1, 2] }}", []any{1, 2}},
		{"{{ {'a': 1, 'b': [true, none]} }}", map[string]any{"a": 1, "b": []any{true, nil}}},
		{"{{ ratio }}", 0.25},
		{"{{ 1.5 }}", 1.5},
		{"{{ 2.0 }}", 2.0},
		{"{{ 7 / 2 }}", 3.5},
		{"{{ 4 / 2 }}", 2.0},
		{"{{ 'text' }}", "text"},
		{"{{ message }}", "Hello World"},
		{"{{ undefined_name }}", nil},
		{"{{ nothing }}", nil},
		{"{{ none }}", nil},
		{"{{ True }}", true},
		{"{{ execution_id }}", "exec-1"},
		{"{{ 'a' if ctx.has_more else 'b' }}", "a"},
		{"{{ 'a' if not ctx.has_more else 'b' }}", "b"},
		{"{{ 'a' if not ctx.has_more }}", nil},
		{"{{ numbers | length }}", 5},
		{"{# comment #}{{ initial_value }}", 100},
	})
	w := mustRender(t, "{{ workload }}", s).(map[string]any)
	if w["initial_value"] != 100 || w["api_url"] != "http://paginated-api:5555" {
		t.Errorf("{{ workload }} = %#v", w)
	}
}

func TestNativeResultDoesNotAliasScope(t *testing.T) {
	s := baseScope()
	users := mustRender(t, "{{ users }}", s).([]any)
	users[0].(map[string]any)["name"] = "Mallory"
	users[1] = "gone"
	again := mustRender(t, "{{ users[0].name }}", s)
	if again != "Alice" {
		t.Fatalf("mutating a native result changed the scope: %v", again)
	}
}

func TestTextRendering(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{{ api_url }}/api/v1/assessments", "http://paginated-api:5555/api/v1/assessments"},
		{"page {{ ctx.current_page }} of {{ initial_value }}", "page 2 of 100"},
		{"{% if ctx.has_more %}more{% else %}done{% endif %}", "more"},
		{"{% if undefined_name %}yes{% else %}no{% endif %}", "no"},
		{"{% for u in users %}{{ loop.index }}:{{ u.name }}{% if not loop.last %},{% endif %}{% endfor %}", "1:Alice,2:Bob"},
		{"{% for n in numbers if n is odd %}{{ n }}{% endfor %}", "135"},
		{"{% for k, v in {'b': 2, 'a': 1} | dictsort %}{{ k }}={{ v }};{% endfor %}", "a=1;b=2;"},
		{"{% for x in [] %}x{% else %}empty{% endfor %}", "empty"},
		{"{% set x = 5 %}{{ x * 2 }}", "10"},
		{"{% set greeting %}hi {{ message }}{% endset %}{{ greeting | upper }}", "HI HELLO WORLD"},
		{"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}", "3"},
		{"{% filter upper %}abc{{ message }}{% endfilter %}", "ABCHELLO WORLD"},
		{"{% raw %}{{ not rendered }}{% endraw %}", "{{ not rendered }}"},
		{"x={{ undefined_name }};", "x=;"},
		{"x={{ undefined_name.attr.deeper }};", "x=;"},
		{"{{ true }} {{ false }}", "True False"},
		{"{{ [1, 'a'] }} {{ {'k': 'v'} }}", "[1, 'a'] {'k': 'v'}"},
		{"{{ 7 / 2 }} {{ 2.0 }} {{ 0.25 }} {{ ratio }}", "3.5 2.0 0.25 0.25"},
		{"{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}", "aba"},
		{"{% for i in range(3) %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}", "02"},
		{"{% for i in range(5) %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}", "01"},
		{"{%- if true -%}\n  trimmed\n{%- endif -%}", "trimmed"},
	})
}

func TestFilters(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{{ undefined_name | default('d') }}", "d"},
		{"{{ initial_value | default('d') }}", 100},
		{"{{ '' | default('d') }}", ""},
		{"{{ '' | default('d', true) }}", "d"},
		{"{{ 0 | default(7, true) }}", 7},
		{"{{ [] | default([1], true) }}", []any{1}},
		{"{{ undefined_name | d('short') }}", "short"},
		{"{{ '42' | int }}", 42},
		{"{{ 3.9 | int }}", 3},
		{"{{ 'x' | int }}", 0},
		{"{{ 'x' | int(5) }}", 5},
		{"{{ '2.5' | float }}", 2.5},
		{"{{ 3 | float }}", 3.0},
		{"{{ 42 | string }}", "42"},
		{"{{ 42 | string ~ '!' }}", "42!"},
		{"{{ 'MiXeD' | lower }}", "mixed"},
		{"{{ 'MiXeD' | upper }}", "MIXED"},
		{"{{ users | length }}", 2},
		{"{{ 'abc' | length }}", 3},
		{"{{ undefined_name | length }}", 0},
		{"{{ numbers | join(',') }}", "1,2,3,4,5"},
		{"{{ users | map(attribute='name') | join(', ') }}", "Alice, Bob"},
		{"{{ numbers | first }}", 1},
		{"{{ numbers | last }}", 5},
		{"{{ 'ab' | list }}", []any{"a", "b"}},
		{"{{ range(3) | list }}", []any{0, 1, 2}},
		{"{{ 3.14159 | round(2) }}", 3.14},
		{"{{ 2.5 | round }}", 3.0},
		{"{{ 2.7 | round | int }}", 3},
		{"{{ 2.7 | round(method='floor') }}", 2.0},
		{"{{ numbers | sum }}", 15},
		{"{{ numbers | max }}", 5},
		{"{{ users | selectattr('id', 'gt', 1) | map(attribute='name') | list }}", []any{"Bob"}},
		{"{{ '  x ' | trim }}", "x"},
		{"{{ 'a-b' | replace('-', '_') }}", "a_b"},
		{"{{ 'hello' | b64encode }}", "aGVsbG8="},
		{"{{ 'aGVsbG8=' | b64decode }}", "hello"},
		{`{{ '{"a": [1, 2.5, null], "b": {"c": true}}' | fromjson }}`, map[string]any{"a": []any{1, 2.5, nil}, "b": map[string]any{"c": true}}},
		{`{{ '[1, 2]' | from_json }}`, []any{1, 2}},
		{"{{ '%s-%s' | format(1, 'b') }}", "1-b"},
		{"{{ '%05.2f|%-4s|%3d|%x|%%' | format(3.14159, 'ab', 7, 255) }}", "03.14|ab  |  7|ff|%"},
		{"{{ '%(a)s=%(b)d' | format(a='x', b=2) }}", "x=2"},
		{"{{ {'b': 2, 'a': 1} | dictsort }}", []any{[]any{"a", 1}, []any{"b", 2}}},
		{"{{ users | from_json }}", []any{map[string]any{"id": 1, "name": "Alice"}, map[string]any{"id": 2, "name": "Bob"}}},
	})
}

func TestToJSON(t *testing.T) {
	s := NewScope(ScopeParams{Workload: map[string]any{
		"obj": map[string]any{"b": 1, "a": []any{1, 2.5, "x", nil, true}, "c": map[string]any{"z": "<&'>", "y": "é\n"}},
	}})
	got := mustRender(t, "{{ obj | tojson }}", s).(string)
	want := `{"a": [1, 2.5, "x", null, true], "b": 1, "c": {"y": "\u00e9\n", "z": "\u003c\u0026\u0027\u003e"}}`
	if got != want {
		t.Errorf("tojson = %s\nwant     %s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("tojson output is not valid JSON: %v", err)
	}
	if back["c"].(map[string]any)["z"] != "<&'>" || back["c"].(map[string]any)["y"] != "é\n" {
		t.Errorf("round trip lost data: %#v", back)
	}
	pretty := mustRender(t, "{{ {'b': [1], 'a': {}} | tojson(indent=2) }}", s)
	wantPretty := "{\n  \"a\": {},\n  \"b\": [\n    1\n  ]\n}"
	if pretty != wantPretty {
		t.Errorf("tojson(indent=2) = %q, want %q", pretty, wantPretty)
	}
	runCases(t, s, []renderCase{
		{"{{ none | tojson }}", "null"},
		{"{{ 'a\"b' | tojson }}", `"a\"b"`},
		{"{{ dict(k=1) | to_json }}", `{"k": 1}`},
		{"{{ 1.0 | tojson }}", "1.0"},
	})
}

func TestAttributeAndItemAccess(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{{ process_data.data.temp_table }}", "temp_session_12345"},
		{"{{ process_data['data']['temp_table'] }}", "temp_session_12345"},
		{"{{ process_data.data['temp_' ~ 'table'] }}", "temp_session_12345"},
		{"{{ users[1].name }}", "Bob"},
		{"{{ users[-1]['name'] }}", "Bob"},
		{"{{ users.0.name }}", "Alice"},
		{"{{ users[5] }}", nil},
		{"{{ 'abc'[1] }}", "b"},
		{"{{ numbers[1:3] }}", []any{2, 3}},
		{"{{ users[0].get('name') }}", "Alice"},
		{"{{ users[0].get('missing', 'dflt') }}", "dflt"},
		{"{{ users[0].keys() | sort | list }}", []any{"id", "name"}},
		{"{{ 'abc'.upper() }}", "ABC"},
		{"{{ 'a,b'.split(',') }}", []any{"a", "b"}},
		// attribute of None / undefined is undefined, not an error
		{"{{ nothing.x }}", nil},
		{"{{ nothing['x'].y }}", nil},
		{"{{ fetch_page.data.x }}", nil},
		{"{{ process_data.missing.deeper.still }}", nil},
		{"{{ users[9].name }}", nil},
		{"{{ initial_value.attr }}", nil},
		{"{{ process_data.data.temp_table.nope }}", nil},
	})
}

func TestUndefinedSemantics(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{{ missing }}", nil},
		{"[{{ missing }}]", "[]"},
		{"{{ missing | default('x') }}", "x"},
		{"{{ missing.a.b | default('x') }}", "x"},
		{"{{ missing is defined }}", false},
		{"{{ missing is undefined }}", true},
		{"{{ initial_value is defined }}", true},
		{"{{ missing is none }}", true},
		{"{{ missing == none }}", true},
		{"{{ 1 in missing }}", false},
		// the end-step template of test_end_with_action, args empty
		{"{{ args.input_data.temp_table | default(process_data.data.temp_table) }}", "temp_session_12345"},
		{"{{ args.input_data.cleanup_required | default(cleanup_required) }}", true},
	})
	empty := NewScope(ScopeParams{})
	if v := mustRender(t, "{{ args.input_data.temp_table | default(process_data.data.temp_table) }}", empty); v != nil {
		t.Errorf("both missing: got %#v, want nil", v)
	}
	if v := mustRender(t, "t={{ args.input_data.temp_table | default(process_data.data.temp_table) }}", empty); v != "t=" {
		t.Errorf("both missing in text: got %#v, want \"t=\"", v)
	}
	for _, c := range []string{"{{ missing }}", "{{ missing.x }}", "missing", "missing.x.y"} {
		ok, err := Truthy(c, s)
		if err != nil || ok {
			t.Errorf("Truthy(%q) = %v, %v; want false, nil", c, ok, err)
		}
	}
}

func TestOperators(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{{ 1 + 2 * 3 }}", 7},
		{"{{ (1 + 2) * 3 }}", 9},
		{"{{ 10 - 15 }}", -5},
		{"{{ 7 // 2 }}", 3},
		{"{{ -7 // 2 }}", -4},
		{"{{ 7 % 3 }}", 1},
		{"{{ -7 % 3 }}", 2},
		{"{{ 7.5 // 2 }}", 3.0},
		{"{{ -7.5 % 2 }}", 0.5},
		{"{{ 2 ** 10 }}", 1024},
		{"{{ 2 ** -1 }}", 0.5},
		{"{{ 2 ** 0.5 > 1.41 }}", true},
		{"{{ 1 + 2.5 }}", 3.5},
		{"{{ -initial_value }}", -100},
		{"{{ 'ab' ~ 1 ~ none ~ true }}", "ab1True"},
		{"{{ 'ab' + 'cd' }}", "abcd"},
		{"{{ 'ab' * 3 }}", "ababab"},
		{"{{ 2 * 'ab' }}", "abab"},
		{"{{ [1] + [2, 3] }}", []any{1, 2, 3}},
		{"{{ [0] * 3 }}", []any{0, 0, 0}},
		{"{{ 9223372036854775807 + 1 > 0 }}", true},
		{"{{ 1 < 2 and 2 <= 2 and 3 > 2 and 3 >= 3 }}", true},
		{"{{ 1 == 1.0 }}", true},
		{"{{ 'a' == 'a' and not ('a' != 'a') }}", true},
		{"{{ false or 'fallback' }}", "fallback"},
		{"{{ 'first' or 'fallback' }}", "first"},
		{"{{ '' and 'x' }}", ""},
		{"{{ not none }}", true},
		{"{{ 2 in [1, 2, 3] }}", true},
		{"{{ 4 not in [1, 2, 3] }}", true},
		{"{{ 'ell' in 'hello' }}", true},
		{"{{ 'name' in users[0] }}", true},
		{"{{ 'nope' in users[0] }}", false},
		{"{{ 'Alice' in users | map(attribute='name') | list }}", true},
		{"{{ initial_value in [100, 200] }}", true},
		{"{{ ctx.current_page > 1 }}", true},
		// gonja applies trailing filters to the whole `in` test; the
		// rewriter moves them to the right operand as Jinja2 does.
		{"{{ true and 'Zed' not in users | map(attribute='name') | list }}", true},
		{"{{ 'hi %s' % message }}", "hi Hello World"},
		{"{{ '%s=%d' % ('page', ctx.current_page) }}", "page=2"},
		{"{{ '%(k)s' % {'k': 'v'} }}", "v"},
		{"{{ '%.1f%%' % 12.345 }}", "12.3%"},
	})
	for _, bad := range []string{"{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 1 % 0 }}", "{{ 1.0 / 0 }}", "{{ missing + 1 }}", "{{ 'a' + 1 }}", "{{ 'a' - 'b' }}", "{{ 1 in 5 }}", "{{ 1 in 'abc' }}", "{{ '%s %s' % 'x' }}", "{{ '%d' % 'x' }}"} {
		if _, err := Render(bad, s); err == nil {
			t.Errorf("Render(%q): expected an error", bad)
		}
	}
}

func TestNumericNormalisation(t *testing.T) {
	for _, status := range []any{503, int64(503), int32(503), uint16(503), 503.0, float32(503), json.Number("503"), json.Number("503.0")} {
		s := NewScope(ScopeParams{Extra: map[string]any{
			"outcome": map[string]any{"status": "error", "http": map[string]any{"status": status}},
		}})
		for _, c := range []renderCase{
			{"{{ outcome.http.status in [500, 502, 503] }}", true},
			{"{{ outcome.http.status == 503 }}", true},
			{"{{ outcome.http.status == 503.0 }}", true},
			{"{{ outcome.http.status > 500 }}", true},
			{"{{ outcome.http.status }}", 503},
			{"{{ outcome.http.status + 1 }}", 504},
			{"s={{ outcome.http.status }}", "s=503"},
		} {
			got, err := Render(c.tmpl, s)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("status %T(%v): Render(%q) = %#v, %v; want %#v", status, status, c.tmpl, got, err, c.want)
			}
		}
	}
	s := NewScope(ScopeParams{Workload: map[string]any{"f": 2.5, "big": 1e20, "n": json.Number("2.5"), "list": []any{35.0, int64(36)}}})
	runCases(t, s, []renderCase{
		{"{{ f }}", 2.5},
		{"{{ big }}", 1e20},
		{"{{ n }}", 2.5},
		{"{{ list }}", []any{35, 36}},
		{"{{ 35 in list }}", true},
		{"{{ 36.0 in list }}", true},
	})
}

func TestNormalize(t *testing.T) {
	type inner struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
		c int
	}
	ts := time.Date(2025, 12, 11, 10, 0, 0, 0, time.UTC)
	in := map[string]any{
		"i64":    int64(5),
		"f":      5.0,
		"ff":     5.5,
		"num":    json.Number("7"),
		"raw":    json.RawMessage(`{"x": [1, 2.0]}`),
		"bytes":  []byte("hi"),
		"time":   ts,
		"strs":   []string{"a", "b"},
		"mapany": map[any]any{1: "one", "k": 2},
		"struct": inner{A: 1, c: 2},
		"ptr":    &inner{A: 3, B: "x"},
		"nilptr": (*inner)(nil),
		"fn":     func() {},
	}
	want := map[string]any{
		"i64":    5,
		"f":      5,
		"ff":     5.5,
		"num":    7,
		"raw":    map[string]any{"x": []any{1, 2}},
		"bytes":  "hi",
		"time":   "2025-12-11T10:00:00Z",
		"strs":   []any{"a", "b"},
		"mapany": map[string]any{"1": "one", "k": 2},
		"struct": map[string]any{"a": 1},
		"ptr":    map[string]any{"a": 3, "b": "x"},
		"nilptr": nil,
		"fn":     nil,
	}
	got := Normalize(in)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Normalize =\n%#v\nwant\n%#v", got, want)
	}
	if _, ok := in["i64"].(int64); !ok {
		t.Error("Normalize modified its input")
	}
	same := map[string]any{"a": []any{1, "x", map[string]any{"b": true}}}
	if n := Normalize(same); reflect.ValueOf(n).UnsafePointer() != reflect.ValueOf(same).UnsafePointer() {
		t.Error("Normalize copied a value that needed no conversion")
	}
}

func TestScopePrecedence(t *testing.T) {
	idx := 3
	s := NewScope(ScopeParams{
		Workload:    map[string]any{"x": "workload", "y": "workload", "z": "workload", "w": "workload", "ctx": "bare-ctx", "outcome": "bare-outcome"},
		Results:     map[string]any{"x": "result", "y": "result", "z": "result", "fetch": map[string]any{"data": 1}},
		Args:        map[string]any{"x": "args", "y": "args", "args": "nested"},
		Iterator:    "x",
		Item:        "item",
		LoopIndex:   &idx,
		Ctx:         map[string]any{"k": "v"},
		Iter:        map[string]any{"parent": "p", "index": 99, "x": "iter-own"},
		Extra:       map[string]any{"event": map[string]any{"name": "step.done"}, "_attempt": 2, "custom": "c", "ctx": "ignored"},
		Keychain:    map[string]any{"api": map[string]any{"token": "t"}},
		ExecutionID: "e1",
	})
	runCases(t, s, []renderCase{
		{"{{ x }}", "item"},
		{"{{ y }}", "args"},
		{"{{ z }}", "result"},
		{"{{ w }}", "workload"},
		{"{{ fetch.data }}", 1},
		{"{{ loop_index }}", 3},
		{"{{ iter.x }}", "item"},
		{"{{ iter.index }}", 3},
		{"{{ iter.parent }}", "p"},
		{"{{ ctx.k }}", "v"},
		{"{{ args.x }}", "args"},
		{"{{ args.args }}", "nested"},
		{"{{ workload.x }}", "workload"},
		{"{{ event.name }}", "step.done"},
		{"{{ _attempt }}", 2},
		{"{{ custom }}", "c"},
		{"{{ keychain.api.token }}", "t"},
		{"{{ execution_id }}", "e1"},
		{"{{ outcome }}", nil},
	})
	if _, ok := s["outcome"]; ok {
		t.Error("a workload key took the reserved name outcome")
	}
	empty := NewScope(ScopeParams{})
	runCases(t, empty, []renderCase{
		{"{{ workload }}", map[string]any{}},
		{"{{ ctx }}", map[string]any{}},
		{"{{ args }}", map[string]any{}},
		{"{{ iter }}", map[string]any{}},
		{"{{ keychain }}", map[string]any{}},
		{"{{ loop_index }}", nil},
	})
}

func TestTruthy(t *testing.T) {
	s := NewScope(ScopeParams{
		Ctx:   map[string]any{"has_more": true, "empty": []any{}, "zero": 0, "s": "text", "m": map[string]any{}},
		Extra: map[string]any{"outcome": map[string]any{"status": "error", "error": map[string]any{"retryable": true}, "http": map[string]any{"status": 503}}},
	})
	cases := map[string]bool{
		"{{ ctx.has_more == true }}": true,
		"{{ ctx.has_more != true }}": false,
		"ctx.has_more == true":       true,
		"ctx.has_more":               true,
		"true":                       true,
		"false":                      false,
		"":                           false,
		"   ":                        false,
		"{{ ctx.empty }}":            false,
		"{{ ctx.zero }}":             false,
		"{{ ctx.s }}":                true,
		"{{ ctx.m }}":                false,
		"{{ {} }}":                   false,
		"{{ [0] }}":                  true,
		"{{ ctx.missing }}":          false,
		"{{ outcome.status == 'error' and outcome.error.retryable }}":           true,
		"{{ outcome.status == 'error' and outcome.http.status in [429, 503] }}": true,
		"outcome.http.status in [500, 502]":                                     false,
		"{% if ctx.has_more %}True{% else %}False{% endif %}":                   true,
		"{% if ctx.zero %}True{% else %}False{% endif %}":                       false,
		"{{ ctx.zero }} ":                    false,
		"{{ ctx.s }}{{ ctx.s }}":             true,
		"{{ ctx.missing }}{{ ctx.missing }}": false,
	}
	for tmpl, want := range cases {
		got, err := Truthy(tmpl, s)
		if err != nil {
			t.Errorf("Truthy(%q): %v", tmpl, err)
			continue
		}
		if got != want {
			t.Errorf("Truthy(%q) = %v, want %v", tmpl, got, want)
		}
	}
	_, err := Truthy("ctx.has_more ==", s)
	var te *Error
	if !errors.As(err, &te) || te.Template != "ctx.has_more ==" {
		t.Errorf("Truthy syntax error = %v, want *Error carrying the caller's text", err)
	}
}

func TestTruth(t *testing.T) {
	for v, want := range map[any]bool{nil: false, false: false, true: true, 0: false, 1: true, 0.0: false, 0.5: true, "": false, "x": true, int64(0): false, uint8(3): true} {
		if Truth(v) != want {
			t.Errorf("Truth(%#v) != %v", v, want)
		}
	}
	if Truth([]any{}) || !Truth([]any{0}) || Truth(map[string]any{}) || !Truth(map[string]any{"a": nil}) || Truth([]string{}) {
		t.Error("Truth of containers is wrong")
	}
}

func TestErrors(t *testing.T) {
	s := baseScope()
	for _, tmpl := range []string{
		"{{ ",
		"{{ a | nosuchfilter }}",
		"{{ a is nosuchtest }}",
		"{% if x %}unterminated",
		"{% endfor %}",
		"{{ 1 / 0 }}",
		"text {{ 'a' - 1 }} text",
		"{% for i in range(3) %}{{ i / 0 }}{% endfor %}",
		"{{ users.nosuchmethod() }}",
	} {
		_, err := Render(tmpl, s)
		var te *Error
		if !errors.As(err, &te) {
			t.Errorf("Render(%q): error %v is not *Error", tmpl, err)
			continue
		}
		if te.Template != tmpl || !strings.Contains(err.Error(), fmt.Sprintf("%q", tmpl)) {
			t.Errorf("Render(%q): error %q does not carry the template", tmpl, err)
		}
	}
	_, err := Render("{{ 1 / 0 }}", s)
	if !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("error message %q does not name the cause", err)
	}
	_, err = Render("{{ x | nosuchfilter }}", s)
	if !strings.Contains(err.Error(), "no filter named 'nosuchfilter'") {
		t.Errorf("unknown filter message: %q", err)
	}
}

func TestRenderValue(t *testing.T) {
	s := baseScope()
	in := map[string]any{
		"input_data": map[string]any{
			"temp_table":       "{{ args.input_data.temp_table | default(process_data.data.temp_table) }}",
			"cleanup_required": "{{ cleanup_required }}",
		},
		"page":    "{{ ctx.current_page }}",
		"url":     "{{ api_url }}/x",
		"list":    []any{"{{ initial_value }}", 1, 2.0, nil, true, "plain"},
		"typed":   []string{"{{ message }}"},
		"numeric": int64(7),
	}
	got, err := RenderValue(in, s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"input_data": map[string]any{"temp_table": "temp_session_12345", "cleanup_required": true},
		"page":       2,
		"url":        "http://paginated-api:5555/x",
		"list":       []any{100, 1, 2, nil, true, "plain"},
		"typed":      []any{"Hello World"},
		"numeric":    7,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RenderValue =\n%#v\nwant\n%#v", got, want)
	}
	if in["page"] != "{{ ctx.current_page }}" {
		t.Error("RenderValue modified its input")
	}
	_, err = RenderValue(map[string]any{"b": map[string]any{"c": []any{"ok", "{{ 1 / 0 }}"}}, "z": "{{ 1 // 0 }}"}, s)
	var te *Error
	if !errors.As(err, &te) || te.Path != "b.c[1]" || te.Template != "{{ 1 / 0 }}" {
		t.Errorf("RenderValue error = %v (path %q), want path b.c[1]", err, te.Path)
	}
	if !strings.Contains(err.Error(), "at b.c[1]") {
		t.Errorf("error message %q lacks the path", err)
	}
}

func TestSetAndNamespace(t *testing.T) {
	s := baseScope()
	runCases(t, s, []renderCase{
		{"{% set ns = namespace(total=0) %}{% for n in numbers %}{% set ns.total = ns.total + n %}{% endfor %}{{ ns.total }}", "15"},
		{"{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a + ns.b }}", "3"},
		{"{% set x = 1 if ctx.has_more else 2 %}{{ x }}", "1"},
		{"{% set initial_value = 5 %}{{ initial_value }}", "5"},
	})
	if _, err := Render("{% set workload.initial_value = 1 %}", s); err == nil {
		t.Error("assigning an attribute of workload must fail")
	}
	if v := mustRender(t, "{{ initial_value }}", s); v != 100 {
		t.Errorf("set leaked into the scope: %v", v)
	}
}

func TestScopeIsNeverModified(t *testing.T) {
	raw := map[string]any{
		"users":   []any{map[string]any{"name": "A"}, map[string]any{"name": "B"}},
		"numbers": []any{3, 1, 2},
		"cfg":     map[string]any{"a": 1},
	}
	s := NewScope(ScopeParams{Workload: raw})
	snapshot, _ := json.Marshal(raw)
	for _, tmpl := range []string{
		"{% set users = [] %}{{ users }}",
		"{{ numbers.append(4) }}{{ numbers }}",
		"{% do numbers.append(9) %}",
		"{{ numbers | sort }}",
		"{{ numbers | reverse | list }}",
		"{{ cfg.copy() }}",
		"{% for u in users %}{% set u = 1 %}{% endfor %}",
	} {
		if _, err := Render(tmpl, s); err != nil {
			t.Errorf("Render(%q): %v", tmpl, err)
		}
	}
	for _, tmpl := range []string{"{{ numbers.reverse() }}", "{{ cfg.update({'a': 2}) }}", "{{ cfg.pop('a') }}", "{{ cfg.clear() }}", "{% set cfg.a = 2 %}"} {
		if _, err := Render(tmpl, s); err == nil {
			t.Errorf("Render(%q): mutating method must not be available", tmpl)
		}
	}
	after, _ := json.Marshal(raw)
	if string(after) != string(snapshot) {
		t.Errorf("scope data changed:\n%s\n%s", snapshot, after)
	}
	if _, ok := s["users"].([]any); !ok || len(s["users"].([]any)) != 2 {
		t.Error("scope map changed")
	}
}

// sideEffect is a Go value with methods that must never be reachable.
type sideEffect struct {
	Public string
	calls  *int
}

func (s *sideEffect) Touch() string { *s.calls++; return "touched" }
func (s sideEffect) Name() string   { *s.calls++; return "name" }

func TestSandbox(t *testing.T) {
	calls := 0
	obj := &sideEffect{Public: "p", calls: &calls}
	// Even a hand-built Scope holding a Go object exposes no methods.
	s := Scope{"obj": obj, "val": *obj}
	for _, tmpl := range []string{"{{ obj.Touch() }}", "{{ val.Name() }}", "{{ obj.Touch }}", "{{ obj['Touch'] }}", "{{ obj.Public }}", "{{ val.Public }}"} {
		_, _ = Render(tmpl, s)
	}
	if calls != 0 {
		t.Errorf("a Go method was called %d times from a template", calls)
	}
	if v, _ := Render("{{ obj.Public }}", s); v != nil {
		t.Errorf("struct field reachable: %#v", v)
	}
	// Through NewScope the object becomes plain data.
	ns := NewScope(ScopeParams{Workload: map[string]any{"obj": obj}})
	if v := mustRender(t, "{{ obj.Public }}", ns); v != "p" {
		t.Errorf("normalised struct field = %#v", v)
	}
	for _, tmpl := range []string{
		"{% include '/etc/passwd' %}",
		"{% import 'x.j2' as x %}",
		"{% from 'x.j2' import y %}",
		"{% extends '/etc/passwd' %}",
		"{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
		"{% block b %}{% endblock %}",
	} {
		_, err := Render(tmpl, s)
		if err == nil {
			t.Errorf("Render(%q): expected refusal", tmpl)
		}
	}
	l := &sandboxLoader{src: "x"}
	if _, err := l.Read("/etc/passwd"); !errors.Is(err, ErrSandbox) {
		t.Errorf("loader read a file: %v", err)
	}
	if _, err := l.Inherit("/"); !errors.Is(err, ErrSandbox) {
		t.Errorf("loader inherit: %v", err)
	}
}

func withLimits(t *testing.T, l Limits) {
	t.Helper()
	old := CurrentLimits()
	SetLimits(l)
	t.Cleanup(func() { SetLimits(old) })
}

func TestLimits(t *testing.T) {
	s := baseScope()
	if _, err := Render("{{ range(100001) }}", s); !errors.Is(err, ErrLimit) {
		t.Errorf("range above MaxRange: %v", err)
	}
	for _, tmpl := range []string{"{{ range(100001) | default([]) }}", "x{{ range(100001) | default([]) }}"} {
		if _, err := Render(tmpl, s); !errors.Is(err, ErrLimit) {
			t.Errorf("%s: a limit must not be swallowed by default(): %v", tmpl, err)
		}
	}
	if v := mustRender(t, "{{ range(100000) | length }}", s); v != 100000 {
		t.Errorf("range(100000) | length = %v", v)
	}
	if _, err := Render("{{ 'x' * 100000000 }}", s); !errors.Is(err, ErrLimit) {
		t.Errorf("string repetition: %v", err)
	}
	if _, err := Render("{{ [1] * 100000000 }}", s); !errors.Is(err, ErrLimit) {
		t.Errorf("list repetition: %v", err)
	}
	if _, err := Render("{% set s = 'xxxxxxxxxxxxxxxx' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}", s); err != nil {
		t.Errorf("loop-scoped doubling should stay small: %v", err)
	}
	if _, err := Render("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", s); !errors.Is(err, ErrLimit) {
		t.Errorf("string doubling: %v", err)
	}

	withLimits(t, Limits{Timeout: 100 * time.Millisecond, MaxOutputBytes: 1000})
	start := time.Now()
	// 4e8 iterations: hours without the clock. The clock is read once per
	// iteration; gonja materialises a loop's items (here 20000) between
	// two reads, which bounds the overshoot.
	_, err := Render("{% for i in range(20000) %}{% for j in range(20000) %}{% endfor %}{% endfor %}", s)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("runaway loop: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("runaway loop stopped after %v", d)
	}
	if !strings.Contains(err.Error(), "longer than") {
		t.Errorf("timeout message: %q", err)
	}
	if _, err := Render("{% for i in range(200) %}xxxxxxxxxx{% endfor %}", s); !errors.Is(err, ErrLimit) {
		t.Errorf("output cap: %v", err)
	}
	if _, err := Render("{% for i in range(50) %}xxxxxxxxxx{% endfor %}", s); err != nil {
		t.Errorf("under the output cap: %v", err)
	}
}

func TestCacheReusesParse(t *testing.T) {
	a := compile("{{ cached_template_probe }}")
	b := compile("{{ cached_template_probe }}")
	if a != b {
		t.Error("the same template was parsed twice")
	}
	bad1 := compile("{{ broken")
	bad2 := compile("{{ broken")
	if bad1 != bad2 || bad1.err == nil {
		t.Error("parse errors should be cached too")
	}
}

func TestConcurrentRenders(t *testing.T) {
	s := baseScope()
	templates := []renderCase{
		{"{{ users | map(attribute='name') | join(',') }}", "Alice,Bob"},
		{"{% for u in users %}{{ u.name }}{% endfor %}", "AliceBob"},
		{"{{ initial_value + ctx.current_page }}", 102},
		{"{% set ns = namespace(n=0) %}{% for i in numbers %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "15"},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				c := templates[(i+g)%len(templates)]
				got, err := Render(c.tmpl, s)
				if err != nil || !reflect.DeepEqual(got, c.want) {
					errs <- fmt.Errorf("%q = %#v, %v", c.tmpl, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNilScopeAndErrorFormat(t *testing.T) {
	if v := mustRender(t, "{{ 1 + 1 }}", nil); v != 2 {
		t.Errorf("nil scope: %v", v)
	}
	if v := mustRender(t, "a{{ x }}b", nil); v != "ab" {
		t.Errorf("nil scope text: %v", v)
	}
	long := "{{ " + strings.Repeat("x", 1000) + " + }}"
	_, err := Render(long, nil)
	if err == nil || len(err.Error()) > 700 || !strings.Contains(err.Error(), "…") {
		t.Errorf("long template error not truncated: %d bytes", len(err.Error()))
	}
	e := &Error{Template: "{{ a }}", Path: "args.x", Err: errors.New("boom")}
	if e.Error() != `template "{{ a }}" at args.x: boom` {
		t.Errorf("Error() = %q", e.Error())
	}
}

func TestNoTimeout(t *testing.T) {
	withLimits(t, Limits{Timeout: -1})
	if CurrentLimits().Timeout != -1 {
		t.Fatal("negative timeout not kept")
	}
	if v := mustRender(t, "{% for i in range(10) %}{{ i }}{% endfor %}", nil); v != "0123456789" {
		t.Errorf("render without clock: %v", v)
	}
}

// Uses tells a name read whole from one read only through attributes.
func TestUses(t *testing.T) {
	cases := map[string]map[string][]string{
		"{{ big._ref }}":                               {"big": {"_ref"}},
		"{{ big['_store'] }} {{ big._ref.x }}":         {"big": {"_store", "_ref"}},
		"{{ big }}":                                    {"big": {""}},
		"{% for r in big %}{{ r.a }}{% endfor %}":      {"big": {""}},
		"{{ big._ref | tojson }} {{ other | length }}": {"big": {"_ref"}, "other": {""}},
		"{{ big[k] }}":                                 {"big": {""}, "k": {""}},
		"{% set big = 1 %}{{ big }}":                   {},
		"no markup big":                                nil,
	}
	for tmpl, want := range cases {
		got, err := Uses(tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		if len(got) != len(want) {
			t.Errorf("Uses(%q) = %v, want %v", tmpl, got, want)
			continue
		}
		for k, v := range want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Errorf("Uses(%q)[%s] = %v, want %v", tmpl, k, got[k], v)
			}
		}
	}
}
