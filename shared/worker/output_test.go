package worker

import (
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/engine"
)

func TestPathValue(t *testing.T) {
	v := map[string]any{"status": "ok", "data": map[string]any{"items": []any{map[string]any{"id": 7}, map[string]any{"id": 8}}}}
	cases := []struct {
		path string
		want any
		ok   bool
	}{
		{"status", "ok", true},
		{"$.status", "ok", true},
		{"data.items[1].id", 8, true},
		{"data.items[-1].id", 8, true},
		{"data.items[2].id", nil, false},
		{"data.missing", nil, false},
		{"status.x", nil, false},
		{"data.items[x]", nil, false},
		{"", v, true},
	}
	for _, c := range cases {
		got, ok := PathValue(v, c.path)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("PathValue(%q) = %v, %v; want %v, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func TestWithSelected(t *testing.T) {
	ref := map[string]any{"$ref": map[string]any{"key": "k"}}
	result := map[string]any{"status": "success", "count": 3, "items": []any{1, 2, 3}}
	got := WithSelected(ref, result, []dsl.OutputSelect{{Path: "status", As: "status"}, {Path: "count", As: "n"}, {Path: "nope", As: "nope"}})
	want := map[string]any{"$ref": ref["$ref"], engine.SelectedKey: map[string]any{"status": "success", "n": 3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v", got)
	}
	if _, has := ref[engine.SelectedKey]; has {
		t.Fatal("the reference was modified")
	}
	if WithSelected("x", result, nil) != "x" {
		t.Fatal("non-map reference")
	}
}
