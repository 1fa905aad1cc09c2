package engine

import (
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

func TestAccumulate(t *testing.T) {
	ok := func(v any) types.Outcome { return types.Outcome{Status: types.StatusOK, Result: v} }
	bad := types.Outcome{Status: types.StatusError, Error: &types.TaskError{Kind: "server_error", Message: "503"}}
	spec := func(strategy string) *dsl.OutputAccumulate {
		return &dsl.OutputAccumulate{Enabled: true, Strategy: strategy, OnSuccess: true}
	}
	cases := []struct {
		name    string
		spec    *dsl.OutputAccumulate
		acc     any
		out     types.Outcome
		want    any
		changed bool
	}{
		{"disabled", &dsl.OutputAccumulate{Strategy: "append", OnSuccess: true}, nil, ok(1), nil, false},
		{"nil spec", nil, []any{1}, ok(2), []any{1}, false},
		{"append", spec("append"), []any{1}, ok(2), []any{1, 2}, true},
		{"append is the default", spec(""), nil, ok("a"), []any{"a"}, true},
		{"replace", spec("replace"), 1, ok(2), 2, true},
		{"merge", spec("merge"), map[string]any{"a": 1, "b": 1}, ok(map[string]any{"b": 2}), map[string]any{"a": 1, "b": 2}, true},
		{"concat at merge_path", &dsl.OutputAccumulate{Enabled: true, Strategy: "concat", MergePath: "data.items", OnSuccess: true},
			[]any{1}, ok(map[string]any{"data": map[string]any{"items": []any{2, 3}}}), []any{1, 2, 3}, true},
		{"concat of a list result", spec("concat"), nil, ok([]any{1, 2}), []any{1, 2}, true},
		{"max_items", &dsl.OutputAccumulate{Enabled: true, Strategy: "append", OnSuccess: true, MaxItems: 2}, []any{1, 2}, ok(3), []any{1, 2}, true},
		{"errors are skipped by default", spec("append"), []any{1}, bad, []any{1}, false},
		{"on_error keeps error entries", &dsl.OutputAccumulate{Enabled: true, Strategy: "append", OnSuccess: true, OnError: true}, nil, bad,
			[]any{map[string]any{"status": "error", "error": map[string]any{"kind": "server_error", "message": "503"}}}, true},
		{"on_success false skips results", &dsl.OutputAccumulate{Enabled: true, Strategy: "append", OnError: true}, nil, ok(1), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := c.acc
			got, changed := Accumulate(c.spec, c.acc, c.out)
			if changed != c.changed || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v (%v), want %#v (%v)", got, changed, c.want, c.changed)
			}
			if !reflect.DeepEqual(prev, c.acc) {
				t.Fatal("acc was modified")
			}
		})
	}
	task := &dsl.Task{Name: "fetch"}
	if AccumulateName(task) != "fetch_accumulated" {
		t.Fatal(AccumulateName(task))
	}
	task.Output = &dsl.Output{Accumulate: &dsl.OutputAccumulate{ManifestAs: "pages"}}
	if AccumulateName(task) != "pages" {
		t.Fatal(AccumulateName(task))
	}
}
