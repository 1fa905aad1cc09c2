package engine

import (
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
)

const viewsPB = `
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: views}
workbook:
  - name: q
    tool: {kind: duckdb, query: "SELECT 1"}
workflow:
  - step: start
    tool: {kind: http, url: "http://x/"}
    next: {arcs: [{step: py}]}
  - step: py
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: lp}]}
  - step: lp
    loop: {in: [1, 2], iterator: x}
    tool: {kind: noop}
    next: {arcs: [{step: duck}]}
  - step: duck
    tool: {kind: duckdb, query: "SELECT 1"}
    next: {arcs: [{step: wb}]}
  - step: wb
    tool: {kind: workbook, name: q}
    next: {arcs: [{step: aliased}]}
  - step: aliased
    tool: {kind: noop}
    output: {as: other_name}
`

func TestResultViews(t *testing.T) {
	pb, err := dsl.Load([]byte(viewsPB), "views.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"events": []any{1}}
	ref := map[string]any{"$ref": map[string]any{"uri": "noetl://r", "key": "k", "format": "json"},
		"extracted": map[string]any{"n": 2}, SelectedKey: map[string]any{"count": 2}}
	rows := []any{map[string]any{"a": 1}}
	cases := []struct {
		name     string
		step     string
		v        any
		full     any
		loaded   bool
		want     any
		notInRaw bool
	}{
		{"http reads body (and data)", "start", map[string]any{"data": body, "status_code": 200},
			nil, false, map[string]any{"data": body, "body": body, "status_code": 200}, false},
		{"http with its own body is kept", "start", map[string]any{"data": 1, "body": 2, "status_code": 200},
			nil, false, map[string]any{"data": 1, "body": 2, "status_code": 200}, false},
		{"python mapping reads as data", "py", map[string]any{"a": 1},
			nil, false, map[string]any{"a": 1, "data": map[string]any{"a": 1}}, false},
		{"a mapping with data is kept", "py", map[string]any{"data": 3}, nil, false, map[string]any{"data": 3}, false},
		{"a scalar is kept", "py", 7, nil, false, 7, false},
		{"loop results read as data", "lp", map[string]any{"results": []any{1, 2}},
			nil, false, map[string]any{"results": []any{1, 2}, "data": []any{1, 2}}, false},
		{"duckdb reads as its rows", "duck", map[string]any{"rows": rows, "row_count": 1}, nil, false, rows, false},
		{"workbook duckdb entry reads as its rows", "wb", map[string]any{"rows": rows}, nil, false, rows, false},
		{"unknown step: data alias", "gone", map[string]any{"x": 1}, nil, false, map[string]any{"x": 1, "data": map[string]any{"x": 1}}, true},
		{"loaded reference: full value with _ref", "py", ref, map[string]any{"count": 2, "items": []any{1, 2}}, true,
			map[string]any{"count": 2, "items": []any{1, 2}, "data": map[string]any{"count": 2, "items": []any{1, 2}}, RefView: ref, StoreView: "kv"}, false},
		{"unloaded reference: selected fields with _ref", "py", ref, nil, false,
			func() map[string]any {
				m := map[string]any{"$ref": ref["$ref"], "extracted": ref["extracted"], SelectedKey: ref[SelectedKey], "count": 2, RefView: ref, StoreView: "kv"}
				d := map[string]any{"$ref": ref["$ref"], "extracted": ref["extracted"], SelectedKey: ref[SelectedKey], "count": 2}
				m["data"] = d
				return m
			}(), false},
		{"loaded tabular reference stays a list", "py", ref, []any{map[string]any{"a": 1}}, true, []any{map[string]any{"a": 1}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := map[string]any{c.step: c.v}
			resolved := map[string]any{}
			if c.loaded {
				resolved[c.step] = c.full
			}
			got := ResultViews(pb, raw, resolved)[c.step]
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("view = %#v\nwant   %#v", got, c.want)
			}
			if !reflect.DeepEqual(raw[c.step], c.v) {
				t.Fatalf("the raw result was modified: %#v", raw[c.step])
			}
		})
	}
}

func TestOutputDataAndRefTarget(t *testing.T) {
	// http: the body's keys, and NoETL's response envelope (status_code,
	// headers, url, elapsed, data: body) for the keys the body lacks.
	httpRes := map[string]any{"data": map[string]any{"page": 1}, "status_code": 200}
	if got := OutputData(true, httpRes); !reflect.DeepEqual(got, map[string]any{"page": 1, "status_code": 200, "data": map[string]any{"page": 1}}) {
		t.Fatalf("http output.data = %v", got)
	}
	full := map[string]any{"data": map[string]any{"data": []any{1}, "url": "body's"}, "status_code": 201, "headers": map[string]any{"A": "b"}, "url": "http://x/y", "elapsed_ms": int64(1500)}
	want := map[string]any{"data": []any{1}, "url": "body's", "status_code": 201, "headers": map[string]any{"A": "b"}, "elapsed": 1.5}
	if got := OutputData(true, full); !reflect.DeepEqual(got, want) {
		t.Fatalf("http output.data with the body's own data/url = %v, want %v", got, want)
	}
	if got := OutputData(true, map[string]any{"data": []any{1, 2}, "status_code": 200}); !reflect.DeepEqual(got, []any{1, 2}) {
		t.Fatalf("http list body = %v", got)
	}
	if got := OutputData(false, httpRes); !reflect.DeepEqual(got, httpRes) {
		t.Fatalf("non-http output.data = %v", got)
	}
	if got := OutputData(true, "text"); got != "text" {
		t.Fatalf("http text = %v", got)
	}
	ref := map[string]any{"$ref": map[string]any{"key": "k"}}
	view := map[string]any{"a": 1, RefView: ref}
	if got := RefTarget("big_ref", view); !reflect.DeepEqual(got, ref) {
		t.Fatalf("_ref target got %v", got)
	}
	if got := RefTarget("big", view); !reflect.DeepEqual(got, view) {
		t.Fatalf("plain target got %v", got)
	}
	if got := RefTarget("x_ref", map[string]any{"a": 1}); !reflect.DeepEqual(got, map[string]any{"a": 1}) {
		t.Fatalf("_ref target without a reference got %v", got)
	}
}

func TestResultViewsOutputAs(t *testing.T) {
	pb, err := dsl.Load([]byte(viewsPB), "views.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if pb.Step("aliased").Output == nil || pb.Step("aliased").Output.As != "other_name" {
		t.Fatalf("output.as not loaded: %+v", pb.Step("aliased").Output)
	}
	v := ResultViews(pb, map[string]any{"aliased": map[string]any{"data": 1}}, nil)
	if !reflect.DeepEqual(v["other_name"], map[string]any{"data": 1}) || !reflect.DeepEqual(v["aliased"], v["other_name"]) {
		t.Fatalf("views %v", v)
	}
	v = ResultViews(pb, map[string]any{"aliased": 1, "other_name": 2}, nil)
	if v["other_name"] != 2 {
		t.Fatalf("output.as shadowed a step result: %v", v)
	}
}

// A set target ending in _ref receives the reference of a stored result,
// not its data (NoETL DSL spec "DSL v2 names").
func TestApplySetRefTarget(t *testing.T) {
	ref := map[string]any{"$ref": map[string]any{"key": "k", "format": "json"}, SelectedKey: map[string]any{"n": 2}}
	views := ResultViews(nil, map[string]any{"big": ref}, map[string]any{"big": map[string]any{"n": 2, "rows": []any{1, 2}}})
	sc := template.NewScope(template.ScopeParams{Results: views})
	ctx := map[string]any{}
	err := ApplySet([]dsl.Assignment{
		{Scope: dsl.ScopeCtx, Key: "big_ref", Value: "{{ big }}"},
		{Scope: dsl.ScopeCtx, Key: "big_data", Value: "{{ big.rows }}"},
	}, sc, SetTargets{Ctx: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ctx["big_ref"], ref) || !reflect.DeepEqual(ctx["big_data"], []any{1, 2}) {
		t.Fatalf("ctx %v", ctx)
	}
}

// TestStoreName: a stored result's _store is NoETL's tier name
// (noetl/worker/result_handler.py): the output.store kind asked for
// (object is NoETL's former disk), else kv below 1 MiB and disk above.
func TestStoreName(t *testing.T) {
	ref := func(bytes int64) map[string]any {
		return map[string]any{"$ref": map[string]any{"key": "k", "bytes": bytes}}
	}
	step := func(kind string, onTask bool) *dsl.Step {
		o := &dsl.Output{Store: &dsl.OutputStore{Kind: kind}}
		if onTask {
			return &dsl.Step{Tasks: []*dsl.Task{{Name: "a"}, {Name: "b", Output: o}}}
		}
		return &dsl.Step{Output: o, Tasks: []*dsl.Task{{Name: "a"}}}
	}
	cases := []struct {
		step *dsl.Step
		ref  map[string]any
		want string
	}{
		{nil, ref(100 << 10), "kv"},
		{nil, ref(2 << 20), "disk"},
		{step("auto", false), ref(1<<20 - 1), "kv"},
		{step("kv", false), ref(5 << 20), "kv"},
		{step("object", false), ref(10), "disk"},
		{step("gcs", true), ref(10), "gcs"},
		{step("disk", true), ref(10), "disk"},
	}
	for i, c := range cases {
		if got := StoreName(nil, c.step, c.ref); got != c.want {
			t.Errorf("case %d: StoreName = %q, want %q", i, got, c.want)
		}
	}
}
