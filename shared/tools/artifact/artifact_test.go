package artifact

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// bigValue is test_output_select's start result: 1000 items of ~200 bytes,
// far over the 64 KiB inline budget.
func bigValue() map[string]any {
	items := make([]any, 1000)
	for i := range items {
		items[i] = map[string]any{"id": int64(i), "name": fmt.Sprintf("item_%d", i), "status": "active", "data": fmt.Sprintf("%0200d", i)}
	}
	return map[string]any{"status": "success", "count": int64(1000), "items": items}
}

func offload(t *testing.T, rs *results.Store, step string, v any) map[string]any {
	t.Helper()
	ref, err := rs.Offload(context.Background(), types.ResultCoords{ExecutionID: "484377543601029219", Step: step}, v)
	if err != nil || ref == nil {
		t.Fatalf("offload: %v %v", ref, err)
	}
	return ref.(map[string]any)
}

func TestGetSpellings(t *testing.T) {
	rs := &results.Store{Backend: results.NewMemory()}
	big := bigValue()
	ref := offload(t, rs, "start", big)
	inner := ref[results.RefKey].(map[string]any)
	rows := []any{}
	for i := 0; i < 3000; i++ {
		rows = append(rows, map[string]any{"id": int64(i), "v": fmt.Sprintf("row-%05d-%s", i, "xxxxxxxxxxxxxxxxxxxxxxxx")})
	}
	tabRef := offload(t, rs, "rows", rows)
	tabKey := tabRef[results.RefKey].(map[string]any)["key"].(string)

	tl := New(rs)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "484377543601029219"})
	for name, c := range map[string]struct {
		args, cfg map[string]any
		want      any
	}{
		"artifact input (args)":       {map[string]any{"result_ref": ref}, map[string]any{"action": "get"}, big},
		"result_fetch ref":            {nil, map[string]any{"ref": ref}, big},
		"inner $ref map":              {map[string]any{"result_ref": inner}, nil, big},
		"physical key string":         {nil, map[string]any{"ref": inner["key"]}, big},
		"uri spelling":                {nil, map[string]any{"uri": inner["key"]}, big},
		"feather key string":          {nil, map[string]any{"ref": tabKey}, rows},
		"feather reference":           {nil, map[string]any{"ref": tabRef}, rows},
		"bare logical URI":            {nil, map[string]any{"ref": inner["uri"]}, big},
		"inline value passes through": {map[string]any{"result_ref": map[string]any{"status": "small"}}, nil, map[string]any{"status": "small"}},
	} {
		o := tl.Exec(ctx, c.args, c.cfg, 0)
		if o.Status != types.StatusOK {
			t.Errorf("%s: %+v", name, o.Error)
			continue
		}
		if !reflect.DeepEqual(o.Result, c.want) {
			t.Errorf("%s: result differs (%T)", name, o.Result)
		}
	}
}

func TestGetErrors(t *testing.T) {
	rs := &results.Store{Backend: results.NewMemory()}
	tl := New(rs)
	ctx := results.WithReader(context.Background(), results.Reader{Execution: "7"})
	key := func(step string) string {
		return rs.PhysicalKey(types.ResultCoords{ExecutionID: "7", Step: step}, "json")
	}
	missing := map[string]any{results.RefKey: map[string]any{"uri": "noetl://default/default/results/7/none/0/0/0", "key": key("none"), "format": "json"}}
	for _, c := range []struct {
		tool *Tool
		cfg  map[string]any
		kind types.ErrorKind
	}{
		{tl, map[string]any{}, "config"},
		{tl, map[string]any{"action": "put", "ref": missing}, "config"},
		{tl, map[string]any{"action": "list", "ref": missing}, "config"},
		{tl, map[string]any{"ref": ""}, "config"},
		{tl, map[string]any{"ref": "noetl://execution/1/result/start/0"}, "config"},
		{tl, map[string]any{"ref": "noetl://default/default/results/7/never/1/0/1"}, "not_found"},
		{tl, map[string]any{"ref": "noetl://default/default/results/1/never/1/0/1"}, types.ErrKindForbidden}, // another execution's: not even probed
		{tl, map[string]any{"ref": "gs://bucket-only"}, "config"},
		{tl, map[string]any{"ref": "results/x.bin"}, "config"},
		{tl, map[string]any{"ref": map[string]any{results.RefKey: map[string]any{"key": "k", "format": "xml"}}}, "config"},
		{tl, map[string]any{"ref": missing}, types.ErrKindResultLost},
		{New(nil), map[string]any{"ref": missing}, "config"},
	} {
		o := c.tool.Exec(ctx, nil, c.cfg, 0)
		if o.Status != types.StatusError || o.Error.Kind != c.kind {
			t.Errorf("%v: %+v", c.cfg, o.Error)
		}
	}
	// A corrupt object is a lost result.
	if err := rs.Backend.Put(ctx, key("bad"), []byte("{not json"), "application/json"); err != nil {
		t.Fatal(err)
	}
	if o := tl.Exec(ctx, nil, map[string]any{"ref": key("bad")}, 0); o.Status != types.StatusError || o.Error.Kind != types.ErrKindResultLost {
		t.Errorf("corrupt: %+v", o.Error)
	}
}

// With the engine's sink, a stored table is copied batch by batch: a
// large one becomes the task's own stored result, reading back the same.
func TestGetStreamsTables(t *testing.T) {
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 1024}
	rows := []any{}
	for i := 0; i < 5000; i++ {
		rows = append(rows, map[string]any{"id": int64(i), "v": fmt.Sprint("row ", i)})
	}
	src := offload(t, rs, "rows", rows)
	c := types.ResultCoords{ExecutionID: "484377543601029219", Step: "copy", Attempt: 1}
	owner := results.WithReader(context.Background(), results.Reader{Execution: "484377543601029219"})
	ctx := results.WithSinks(owner, func() *results.Sink { return rs.NewSink(context.Background(), c, results.OffloadOptions{Limit: -1}) })
	o := New(rs).Exec(ctx, nil, map[string]any{"ref": src}, 0)
	if o.Status != types.StatusOK || !results.IsRef(o.Result) {
		t.Fatalf("%+v", o)
	}
	if o.Result.(map[string]any)[results.RefKey].(map[string]any)["uri"] == src[results.RefKey].(map[string]any)["uri"] {
		t.Fatal("the copy is the source")
	}
	got, err := rs.Resolve(owner, o.Result)
	if err != nil || !reflect.DeepEqual(got, rows) {
		t.Fatalf("copy differs: %v", err)
	}
}

// Results by ownership (README "Security"): a reference of another
// execution, or an object that is no execution's result, is refused with
// kind forbidden; a tampered object (sha256 mismatch) with kind artifact,
// naming the reference.
func TestGetRefusals(t *testing.T) {
	rs := &results.Store{Backend: results.NewMemory()}
	tl := New(rs)
	victim := offload(t, rs, "secret_step", bigValue()) // execution 484377543601029219
	mine := results.WithReader(context.Background(), results.Reader{Execution: "111", Parent: "222"})
	vkey := victim[results.RefKey].(map[string]any)["key"].(string)
	for name, cfg := range map[string]map[string]any{
		"reference":        {"ref": victim},
		"inner map":        {"ref": victim[results.RefKey]},
		"key string":       {"ref": vkey},
		"gs:// uri":        {"ref": "gs://noetl-results/" + vkey},
		"another object":   {"ref": "bodies/484377543601029219/task.json"},
		"no reader at all": {"ref": victim},
	} {
		ctx := mine
		if name == "no reader at all" {
			ctx = context.Background()
		}
		o := tl.Exec(ctx, nil, cfg, 0)
		if o.Status != types.StatusError || o.Error.Kind != types.ErrKindForbidden || !strings.Contains(o.Error.Message, "results: reference refused") {
			t.Errorf("%s: %+v, want kind forbidden", name, o.Error)
		}
	}
	o := tl.Exec(mine, nil, map[string]any{"ref": victim}, 0)
	if want := "execution 111 may read its own results, its parent's and its children's, not those of execution 484377543601029219"; !strings.Contains(o.Error.Message, want) {
		t.Errorf("message %q lacks %q", o.Error.Message, want)
	}
	// The owner reads it, until the object is changed behind the reference.
	owner := results.WithReader(context.Background(), results.Reader{Execution: "484377543601029219"})
	if o := tl.Exec(owner, nil, map[string]any{"ref": victim}, 0); o.Status != types.StatusOK {
		t.Fatalf("owner: %+v", o.Error)
	}
	if err := rs.Backend.Put(owner, vkey, []byte(`{"status": "forged"}`), "application/json"); err != nil {
		t.Fatal(err)
	}
	o = tl.Exec(owner, nil, map[string]any{"ref": victim}, 0)
	if o.Status != types.StatusError || o.Error.Kind != types.ErrKindResultLost || !strings.Contains(o.Error.Message, "not the generation the reference records") || !strings.Contains(o.Error.Message, "noetl://default/default/results/484377543601029219/secret_step/0/0/0") {
		t.Fatalf("tampered object: %+v", o.Error)
	}
}
