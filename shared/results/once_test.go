package results

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

func refInner(t *testing.T, ref any) map[string]any {
	t.Helper()
	m, _ := ref.(map[string]any)[RefKey].(map[string]any)
	if m == nil {
		t.Fatalf("not a reference: %v", ref)
	}
	return m
}

// Two writers of the same coordinates with different values (two
// deliveries of one unit whose result is not deterministic, NoETL result
// storage RFC "Risks"): each reference reads back its own value, its
// digest checked; the second goes to a fresh @version. The same value
// written again names the first object.
func TestSecondWriterOfAKey(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	a, err := s.Offload(ctx, coords, map[string]any{"v": strings.Repeat("a", 200)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Offload(ctx, coords, map[string]any{"v": strings.Repeat("b", 200)})
	if err != nil {
		t.Fatal(err)
	}
	ia, ib := refInner(t, a), refInner(t, b)
	if ia["key"] == ib["key"] {
		t.Fatalf("the second value replaced the first at %v", ia["key"])
	}
	if !strings.Contains(ib["uri"].(string), "@w") || !strings.Contains(ib["key"].(string), "@w") {
		t.Fatalf("second writer: uri %v key %v, want a minted @version", ib["uri"], ib["key"])
	}
	for ref, want := range map[*any]string{&a: "a", &b: "b"} {
		v, err := s.Resolve(ctx, *ref)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		if got := v.(map[string]any)["v"]; got != strings.Repeat(want, 200) {
			t.Fatalf("resolve: %.10v…, want %s…", got, want)
		}
	}
	// The version is part of the logical URI: the URN alone finds it.
	byURN, err := s.ResolveURN(ctx, ib["uri"].(string))
	if err != nil || refInner(t, byURN)["key"] != ib["key"] {
		t.Fatalf("ResolveURN(%v) = %v, %v", ib["uri"], byURN, err)
	}
	// Identical bytes again: the first object, no new version.
	again, err := s.Offload(ctx, coords, map[string]any{"v": strings.Repeat("a", 200)})
	if err != nil {
		t.Fatal(err)
	}
	if ig := refInner(t, again); !reflect.DeepEqual(ig, ia) {
		t.Fatalf("same value again: %v, want the first reference %v", ig, ia)
	}
}

// Many concurrent writers of one key, each with its own value: every
// reference reads back its writer's value (before objects were written
// once, the last writer's object replaced the others and their reads
// failed with a sha256 mismatch).
func TestConcurrentWritersKeepTheirOwnValues(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	const n = 8
	refs := make([]any, n)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rows := make([]any, 300)
			for r := range rows {
				rows[r] = map[string]any{"writer": int64(i), "row": int64(r)}
			}
			ref, err := s.Offload(ctx, coords, rows)
			if err != nil {
				errc <- err
				return
			}
			refs[i] = ref
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i, ref := range refs {
		keys[refInner(t, ref)["key"].(string)] = true
		v, err := s.Resolve(ctx, ref)
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		rows := v.([]any)
		if len(rows) != 300 || rows[299].(map[string]any)["writer"] != int64(i) {
			t.Fatalf("writer %d reads %d rows of writer %v", i, len(rows), rows[0].(map[string]any)["writer"])
		}
	}
	if len(keys) != n {
		t.Fatalf("%d distinct objects for %d different values", len(keys), n)
	}
}

// A streamed table whose key another delivery already holds cannot be
// written again elsewhere: the second sink's result is the object there
// (its rows, extracted block and digest), and a sink of identical rows
// names it as its own.
func TestSinkAdoptsTheObjectThere(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(1024)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "who", Type: arrow.BinaryTypes.String}}, nil)
	meta := TableMeta{At: "rows", Envelope: map[string]any{"command": "SELECT"}, RowsAt: "row_count"}
	stream := func(who string, n int) any {
		t.Helper()
		k := s.NewSink(ctx, coords, OffloadOptions{Limit: -1})
		if err := k.Begin(schema, meta); err != nil {
			t.Fatal(err)
		}
		for lo := 0; lo < n; lo += 250 {
			ib, sb := array.NewInt64Builder(arrowMem), array.NewStringBuilder(arrowMem)
			for i := lo; i < min(lo+250, n); i++ {
				ib.Append(int64(i))
				sb.Append(who)
			}
			rec := array.NewRecordBatch(schema, []arrow.Array{ib.NewArray(), sb.NewArray()}, int64(min(250, n-lo)))
			if err := k.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		ref, err := k.End()
		if err != nil {
			t.Fatalf("%s: End: %v", who, err)
		}
		return ref
	}
	first := stream("first", 2000)
	second := stream("second", 1500)
	i1, i2 := refInner(t, first), refInner(t, second)
	if i2["key"] != i1["key"] || i2[DigestKey] != i1[DigestKey] || i2["rows"] != int64(2000) || i2["bytes"] != i1["bytes"] {
		t.Fatalf("second sink: %v, want the first's object %v", i2, i1)
	}
	if ex := second.(map[string]any)[ExtractedKey].(map[string]any); ex["row_count"] != int64(2000) || ex["rows_count"] != int64(2000) || ex["command"] != "SELECT" {
		t.Fatalf("adopted extracted block %v", ex)
	}
	got, err := s.Resolve(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	rows := got.(map[string]any)["rows"].([]any)
	if len(rows) != 2000 || rows[1999].(map[string]any)["who"] != "first" {
		t.Fatalf("adopted table: %d rows", len(rows))
	}
	same := stream("first", 2000)
	if !reflect.DeepEqual(same, first) {
		t.Fatalf("identical stream: %v, want %v", same, first)
	}
}

// Every object the tier writes is created only where none is, on every
// backend the Store uses (the memory driver here; the GCS and signed-URL
// drivers prove IfAbsent in resultstest's suite).
func TestTierWritesOnce(t *testing.T) {
	b := &attrsSpy{Backend: NewMemory()}
	s := newTestStore(16)
	s.Backend = b
	ctx := WithReader(context.Background(), anyReader)
	if _, err := s.Offload(ctx, coords, sized(200)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Offload(ctx, coords, []any{map[string]any{"a": strings.Repeat("x", 100)}}); err != nil {
		t.Fatal(err)
	}
	if len(b.writes) == 0 {
		t.Fatal("no writes seen")
	}
	for _, a := range b.writes {
		if !a.IfAbsent {
			t.Fatalf("a tier write without IfAbsent: %+v", a)
		}
	}
}

type attrsSpy struct {
	Backend
	mu     sync.Mutex
	writes []ObjectAttrs
}

func (a *attrsSpy) NewWriter(ctx context.Context, key string, attrs ObjectAttrs) ObjectWriter {
	a.mu.Lock()
	a.writes = append(a.writes, attrs)
	a.mu.Unlock()
	return a.Backend.NewWriter(ctx, key, attrs)
}

func ExampleStore_Offload_secondWriter() {
	ctx := WithReader(context.Background(), Reader{Execution: "exec-1"})
	s := &Store{Backend: NewMemory(), InlineMax: 16}
	c := coords
	a, _ := s.Offload(ctx, c, map[string]any{"v": strings.Repeat("a", 64)})
	b, _ := s.Offload(ctx, c, map[string]any{"v": strings.Repeat("b", 64)})
	ua := a.(map[string]any)[RefKey].(map[string]any)["uri"].(string)
	ub := b.(map[string]any)[RefKey].(map[string]any)["uri"].(string)
	fmt.Println(ua)
	fmt.Println(strings.HasPrefix(ub, ua+"@w"))
	// Output:
	// noetl://default/default/results/exec-1/fetch/1/0/1
	// true
}
