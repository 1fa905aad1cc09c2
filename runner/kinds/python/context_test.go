package python

import (
	"context"
	"reflect"
	"testing"

	"github.com/noetl/gcpengine/shared/types"
)

// NoETL python tasks read the execution context as the global `context`
// (vars_test/test_vars_simple.yaml logs list(context.keys())).
func TestContextGlobal(t *testing.T) {
	tl := tool(t)
	tc := map[string]any{"execution_id": "484377543601029219", "workload": map[string]any{"n": 3}, "ctx": map[string]any{"a": 1}}
	o := tl.ExecContext(context.Background(), map[string]any{"x": 2}, map[string]any{"code": `
result = {"keys": sorted(context.keys()), "id": context["execution_id"], "n": context["workload"]["n"] * x}
`}, tc, 0)
	got := mustOK(t, o).(map[string]any)
	want := map[string]any{"keys": []any{"ctx", "execution_id", "workload"}, "id": "484377543601029219", "n": int64(6)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	// Without a context (Exec) the global is an empty mapping.
	o = tl.Exec(context.Background(), nil, map[string]any{"code": "result = len(context)"}, 0)
	if o.Status != types.StatusOK || o.Result != int64(0) {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
	// An arg named context takes precedence (top-level return: it is a
	// parameter of the wrapped body).
	o = tl.ExecContext(context.Background(), map[string]any{"context": "mine"}, map[string]any{"code": "return context"}, tc, 0)
	if o.Status != types.StatusOK || o.Result != "mine" {
		t.Fatalf("%+v %#v", o.Error, o.Result)
	}
}
