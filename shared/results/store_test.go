package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

var fixedNow = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func newTestStore(inlineMax int) *Store {
	return &Store{
		Backend:   NewMemory(),
		Locator:   Locator{Env: "test", Region: "local", Cell: "c0", ShardCount: 8},
		InlineMax: inlineMax,
		Now:       func() time.Time { return fixedNow },
	}
}

var coords = types.ResultCoords{ExecutionID: "exec-1", Step: "fetch", Frame: 1, Row: 0, Attempt: 1}

// sized returns a map whose JSON encoding is exactly n bytes (n ≥ 8).
func sized(n int) map[string]any {
	return map[string]any{"s": strings.Repeat("x", n-8)} // {"s":"…"} = 8 + len
}

func TestOffloadInlineVsOverBudget(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := newTestStore(100)
	for _, v := range []any{nil, 1, "small", sized(100), []any{map[string]any{"a": 1}}} {
		ref, err := s.Offload(ctx, coords, v)
		if err != nil || ref != nil {
			t.Fatalf("Offload(%v) = %v, %v; want inline (nil, nil)", v, ref, err)
		}
	}
	if b, _ := json.Marshal(sized(100)); len(b) != 100 {
		t.Fatalf("sized(100) is %d bytes", len(b))
	}

	v := sized(101)
	ref, err := s.Offload(ctx, coords, v)
	if err != nil {
		t.Fatal(err)
	}
	if !IsRef(ref) {
		t.Fatalf("Offload over budget = %#v, want a reference", ref)
	}
	r := ref.(map[string]any)[RefKey].(map[string]any)
	wantKey := s.PhysicalKey(coords, "json")
	if r["uri"] != "noetl://default/default/results/exec-1/fetch/1/0/1" || r["key"] != wantKey ||
		r["format"] != "json" || r["bytes"] != int64(101) {
		t.Fatalf("$ref = %#v", r)
	}
	if _, ok := r["rows"]; ok {
		t.Error("json ref has rows")
	}
	if _, ok := r["bucket"]; ok {
		t.Error("memory backend ref has bucket")
	}
	stored, err := s.Get(ctx, wantKey)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(v); !bytes.Equal(stored, want) {
		t.Fatalf("stored %q", stored)
	}
	if ex := ref.(map[string]any)[ExtractedKey]; !reflect.DeepEqual(ex, map[string]any{"s": v["s"]}) {
		t.Fatalf("extracted = %#v", ex)
	}

	// Default budget: 64 KiB.
	d := newTestStore(0)
	if ref, err := d.Offload(ctx, coords, sized(DefaultInlineMax)); err != nil || ref != nil {
		t.Fatalf("64 KiB value: %v, %v; want inline", ref, err)
	}
	if ref, err := d.Offload(ctx, coords, sized(DefaultInlineMax+1)); err != nil || !IsRef(ref) {
		t.Fatalf("64 KiB + 1 value: %v, %v; want a reference", ref, err)
	}
}

func TestOffloadFeatherAndResolve(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := newTestStore(1024)
	rows := benchRows(200)
	v := make([]any, len(rows))
	for i, r := range rows {
		v[i] = r
	}
	ref, err := s.Offload(ctx, coords, v)
	if err != nil {
		t.Fatal(err)
	}
	m := ref.(map[string]any)
	r := m[RefKey].(map[string]any)
	if r["format"] != "feather" || r["rows"] != int64(200) || !strings.HasSuffix(r["key"].(string), "/results/fetch/1/0/1.feather") {
		t.Fatalf("$ref = %#v", r)
	}
	ex := m[ExtractedKey].(map[string]any)
	if ex["rows"] != int64(200) || !reflect.DeepEqual(ex["columns"], []any{"active", "id", "name", "note", "score"}) || ex["first"] == nil {
		t.Fatalf("extracted = %#v", ex)
	}
	data, _ := s.Get(ctx, r["key"].(string))
	if !bytes.HasPrefix(data, []byte("ARROW1")) || int64(len(data)) != r["bytes"] {
		t.Fatalf("stored object: %d bytes, prefix %q", len(data), data[:6])
	}

	got, err := s.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]any, len(rows))
	for i, r := range rows {
		want[i] = withAllColumns(r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve: first rows got %#v want %#v", got.([]any)[:2], want[:2])
	}
}

func withAllColumns(r map[string]any) map[string]any {
	out := map[string]any{"id": nil, "name": nil, "score": nil, "active": nil, "note": nil}
	for k, v := range r {
		out[k] = scalarValue(v)
	}
	return out
}

func TestJSONRoundTripKeepsInts(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := newTestStore(64)
	v := map[string]any{
		"big":    int64(9007199254740993), // 2^53 + 1: lost by float64
		"neg":    int64(-42),
		"float":  1.5,
		"whole":  2.0, // JSON cannot tell 2.0 from 2: comes back int64
		"nested": map[string]any{"list": []any{int64(1), "two", nil, true, map[string]any{"x": int64(3)}}},
		"text":   strings.Repeat("t", 100),
	}
	ref, err := s.Offload(ctx, coords, v)
	if err != nil {
		t.Fatal(err)
	}
	if f := ref.(map[string]any)[RefKey].(map[string]any)["format"]; f != "json" {
		t.Fatalf("format %v", f)
	}
	got, err := s.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"big": int64(9007199254740993), "neg": int64(-42), "float": 1.5, "whole": int64(2),
		"nested": map[string]any{"list": []any{int64(1), "two", nil, true, map[string]any{"x": int64(3)}}},
		"text":   v["text"],
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestResolveNestedRefs(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := newTestStore(32)
	big := func(i int) any { return map[string]any{"i": int64(i), "pad": strings.Repeat("p", 40)} }
	table := []any{map[string]any{"a": int64(1), "pad": strings.Repeat("q", 40)}}
	mk := func(c types.ResultCoords, v any) any {
		ref, err := s.Offload(ctx, c, v)
		if err != nil || ref == nil {
			t.Fatalf("Offload: %v, %v", ref, err)
		}
		return ref
	}
	c1, c2, c3 := coords, coords, coords
	c2.Row, c3.Row = 1, 2
	r1, r2, r3 := mk(c1, big(1)), mk(c2, big(2)), mk(c3, table)

	// State after a JSON round trip (Firestore / Pub/Sub): refs survive.
	var state any
	raw, _ := json.Marshal(map[string]any{
		"a":     r1,
		"list":  []any{int64(1), r2, map[string]any{"deep": r3}},
		"plain": map[string]any{"x": "y"},
		"rows":  []map[string]any{{"k": "v"}},
	})
	if err := jsonx.Unmarshal(raw, &state); err != nil {
		t.Fatal(err)
	}
	before := jsonx.Clone(state)

	got, err := s.Resolve(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a":     map[string]any{"i": int64(1), "pad": strings.Repeat("p", 40)},
		"list":  []any{int64(1), map[string]any{"i": int64(2), "pad": strings.Repeat("p", 40)}, map[string]any{"deep": []any{map[string]any{"a": int64(1), "pad": strings.Repeat("q", 40)}}}},
		"plain": map[string]any{"x": "y"},
		"rows":  []any{map[string]any{"k": "v"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(state, before) {
		t.Fatal("Resolve modified its input")
	}
	// Untouched subtrees are shared, not copied.
	if reflect.ValueOf(got.(map[string]any)["plain"]).Pointer() != reflect.ValueOf(state.(map[string]any)["plain"]).Pointer() {
		t.Error("ref-free subtree was copied")
	}
	// A value without refs comes back as is.
	plain := map[string]any{"a": []any{int64(1), map[string]any{"b": "c"}}}
	same, err := s.Resolve(ctx, plain)
	if err != nil || reflect.ValueOf(same).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Fatalf("ref-free value: %v (copied or err)", err)
	}
	// []map[string]any holding a ref.
	lm, err := s.Resolve(ctx, []map[string]any{{"x": int64(1)}, r1.(map[string]any)})
	if err != nil || !reflect.DeepEqual(lm, []any{map[string]any{"x": int64(1)}, want["a"]}) {
		t.Fatalf("[]map: %#v, %v", lm, err)
	}
	for _, v := range []any{nil, "s", int64(3), []any{}} {
		if got, err := s.Resolve(ctx, v); err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("Resolve(%#v) = %#v, %v", v, got, err)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := newTestStore(16)
	ref, err := s.Offload(ctx, coords, sized(50))
	if err != nil {
		t.Fatal(err)
	}
	r := ref.(map[string]any)[RefKey].(map[string]any)

	missingKey := strings.Replace(r["key"].(string), "/fetch/", "/gone/", 1)
	missing := map[string]any{RefKey: map[string]any{"uri": "u", "key": missingKey, "format": "json"}}
	if _, err := s.Resolve(ctx, []any{missing}); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing object: err = %v, want ErrNotFound", err)
	}
	for name, bad := range map[string]any{
		"not a map":  map[string]any{RefKey: "noetl://x"},
		"no key":     map[string]any{RefKey: map[string]any{"uri": "not-a-urn", "format": "json"}},
		"bad format": map[string]any{RefKey: map[string]any{"key": r["key"], "format": "parquet"}},
	} {
		if _, err := s.Resolve(ctx, bad); !errors.Is(err, ErrBadRef) {
			t.Errorf("%s: err = %v, want ErrBadRef", name, err)
		}
	}
	// A JSON object decoded as feather is ErrFormat.
	wrong := map[string]any{RefKey: map[string]any{"key": r["key"], "format": "feather"}}
	if _, err := s.Resolve(ctx, wrong); !errors.Is(err, ErrFormat) {
		t.Errorf("wrong format: err = %v, want ErrFormat", err)
	}
	// Bucket mismatch is refused by a BucketNamer backend.
	bs := *s
	bs.Backend = bucketMem{Backend: s.Backend, name: "b1"}
	other := map[string]any{RefKey: map[string]any{"key": r["key"], "format": "json", "bucket": "b2"}}
	if _, err := bs.Resolve(ctx, other); !errors.Is(err, ErrBadRef) {
		t.Errorf("other bucket: err = %v, want ErrBadRef", err)
	}
	same := map[string]any{RefKey: map[string]any{"key": r["key"], "format": "json", "bucket": "b1"}}
	if _, err := bs.Resolve(ctx, same); err != nil {
		t.Errorf("same bucket: %v", err)
	}
}

type bucketMem struct {
	Backend
	name string
}

func (n bucketMem) Bucket() string { return n.name }

func TestOffloadErrors(t *testing.T) {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := newTestStore(16)
	if _, err := s.Offload(ctx, types.ResultCoords{Step: "s"}, sized(50)); !errors.Is(err, ErrBadURI) {
		t.Errorf("no execution id: err = %v", err)
	}
	if _, err := s.Offload(ctx, coords, map[string]any{"f": math.NaN()}); err == nil {
		t.Error("NaN: err = nil")
	}
	// Backend errors are wrapped.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Offload(cctx, coords, sized(50)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	// Bucket recorded for a BucketNamer backend.
	bs := *s
	bs.Backend = bucketMem{Backend: s.Backend, name: "bkt"}
	ref, err := bs.Offload(ctx, coords, sized(50))
	if err != nil || ref.(map[string]any)[RefKey].(map[string]any)["bucket"] != "bkt" {
		t.Errorf("bucket: %#v, %v", ref, err)
	}
}

func TestIsRef(t *testing.T) {
	if !IsRef(map[string]any{RefKey: map[string]any{}}) {
		t.Error("ref not recognised")
	}
	for _, v := range []any{nil, "$ref", map[string]any{"ref": 1}, []any{map[string]any{RefKey: 1}}, map[string]string{RefKey: "x"}} {
		if IsRef(v) {
			t.Errorf("IsRef(%#v) = true", v)
		}
	}
}

func TestExtract(t *testing.T) {
	m := map[string]any{
		"status":      "ok",
		"count":       int64(3),
		"ratio":       0.5,
		"done":        true,
		"none":        nil,
		"items":       []any{1, 2, 3},
		"typed":       []string{"a", "b"},
		"nested":      map[string]any{"x": 1},
		"huge":        strings.Repeat("h", 5000),
		"page_count":  int64(9), // own field wins over page's count
		"page":        []any{1},
		"blob":        []byte("bytes"),
		"small_int":   7,
		"json_number": json.Number("12"),
	}
	got := Extract(m)
	want := map[string]any{
		"status": "ok", "count": int64(3), "ratio": 0.5, "done": true, "none": nil,
		"items_count": int64(3), "typed_count": int64(2), "page_count": int64(9),
		"small_int": int64(7), "json_number": int64(12),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Extract(map) =\n %#v\nwant\n %#v", got, want)
	}

	// Many fields: the block stays within 4 KB, small fields first.
	wide := map[string]any{}
	for i := 0; i < 1000; i++ {
		wide[fmt.Sprintf("k%04d", i)] = int64(i)
		wide[fmt.Sprintf("s%04d", i)] = strings.Repeat("s", 50)
	}
	ex := Extract(wide)
	if b, _ := json.Marshal(ex); len(b) > ExtractedMax || len(b) < ExtractedMax-100 {
		t.Fatalf("wide extracted is %d bytes", len(b))
	}
	if _, ok := ex["k0000"]; !ok {
		t.Error("first int field missing")
	}
	if _, ok := ex["s0000"]; ok {
		t.Error("strings crowded out ints")
	}

	if got := Extract([]any{1, "x"}); !reflect.DeepEqual(got, map[string]any{"count": int64(2)}) {
		t.Errorf("list: %#v", got)
	}
	if got := Extract("abc"); !reflect.DeepEqual(got, map[string]any{"length": int64(3)}) {
		t.Errorf("string: %#v", got)
	}
	if got := Extract(12); !reflect.DeepEqual(got, map[string]any{}) {
		t.Errorf("int: %#v", got)
	}

	// Tables.
	tab := Extract([]any{map[string]any{"a": 1, "b": "x"}, map[string]any{"c": nil}})
	wantTab := map[string]any{"rows": int64(2), "columns": []any{"a", "b", "c"}, "first": map[string]any{"a": int64(1), "b": "x"}}
	if !reflect.DeepEqual(tab, wantTab) {
		t.Errorf("table: %#v", tab)
	}
	bigFirst := Extract([]any{map[string]any{"a": strings.Repeat("z", 2000)}})
	if _, ok := bigFirst["first"]; ok {
		t.Error("first row over 1 KB kept")
	}
	wideRow := map[string]any{}
	for i := 0; i < 2000; i++ {
		wideRow[fmt.Sprintf("column_%05d", i)] = int64(i)
	}
	wt := Extract([]any{wideRow})
	if b, _ := json.Marshal(wt); len(b) > ExtractedMax || wt["columns_truncated"] != true {
		t.Errorf("wide table: %d bytes, truncated=%v", len(b), wt["columns_truncated"])
	}
}

func TestJSONOverIsALowerBound(t *testing.T) {
	values := []any{
		nil, true, "", "plain", "esc\"aped\\ <&> \n\t\x01 ünï \xff", int64(-1234567), 0, 3.14159, 1e300, json.Number("12.50"),
		map[string]any{}, []any{}, map[string]any(nil), []any(nil),
		map[string]any{"a": int64(1), "b\"": []any{"x", nil, map[string]any{"c": 2.5}}, "": false},
		[]map[string]any{{"k": "v"}, {}},
		map[string]any{"t": time.Unix(0, 0).UTC(), "typed": []int{1, 2}},
		benchRows(50),
	}
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{len(b), len(b) + 1, len(b) * 2} {
			if over, err := jsonOver(v, limit); err != nil || over {
				t.Errorf("jsonOver(%#v, %d) = %v, %v; JSON is %d bytes", v, limit, over, err, len(b))
			}
		}
	}
	if over, _ := jsonOver(benchRows(1000), 1000); !over {
		t.Error("1000 rows not over 1000 bytes")
	}
	if _, err := jsonOver([]any{math.Inf(1)}, 10); err == nil {
		t.Error("Inf: no error")
	}
}
