package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/types"
)

// snowflake is an execution id created at t.
func snowflake(t time.Time, seq int64) string {
	return fmt.Sprint((t.UnixMilli()-types.IDEpoch)<<22 | seq)
}

// Nested values: maps whose fields agree become Arrow structs, lists of
// one element type Arrow lists; only the column (or nested field) whose
// values disagree is JSON text. Everything decodes back.
func TestFeatherNestedTypes(t *testing.T) {
	rows := []map[string]any{
		{"id": int64(1), "tags": []any{"a", "b"}, "geo": map[string]any{"lat": 1.5, "lon": 2.5}, "mixed": int64(1),
			"items": []any{map[string]any{"sku": "x", "qty": int64(2)}}, "meta": map[string]any{"k": int64(1), "odd": "s"}},
		{"id": int64(2), "tags": []any{}, "geo": nil, "mixed": "two",
			"items": []any{map[string]any{"sku": "y"}}, "meta": map[string]any{"k": int64(2), "odd": []any{int64(1)}}},
	}
	data, err := EncodeFeather(rows)
	if err != nil {
		t.Fatal(err)
	}
	s := featherSchema(t, data)
	want := map[string]string{
		"id":    "int64",
		"tags":  "list<item: utf8>",
		"geo":   "struct<lat: float64, lon: float64>",
		"mixed": "utf8",
		"items": "list<item: struct<qty: int64 nullable, sku: utf8>>",
		"meta":  "struct<k: int64, odd: utf8>",
	}
	for name, typ := range want {
		f := fieldByName(t, s, name)
		if f.Type.String() != typ {
			t.Errorf("%s: %s, want %s", name, f.Type, typ)
		}
	}
	if !isJSONField(fieldByName(t, s, "mixed")) || isJSONField(fieldByName(t, s, "tags")) {
		t.Error("only the mixed column is JSON text")
	}
	odd := fieldByName(t, s, "meta").Type.(*arrow.StructType).Field(1)
	if !isJSONField(odd) {
		t.Error("the nested field whose values disagree is JSON text")
	}
	got, err := DecodeFeather(data)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := []any{
		map[string]any{"id": int64(1), "tags": []any{"a", "b"}, "geo": map[string]any{"lat": 1.5, "lon": 2.5}, "mixed": int64(1),
			"items": []any{map[string]any{"sku": "x", "qty": int64(2)}}, "meta": map[string]any{"k": int64(1), "odd": "s"}},
		map[string]any{"id": int64(2), "tags": []any{}, "geo": nil, "mixed": "two",
			"items": []any{map[string]any{"sku": "y", "qty": nil}}, "meta": map[string]any{"k": int64(2), "odd": []any{int64(1)}}},
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, wantRows)
	}
}

// A query result {rows, columns, row_count, command} is stored as the
// Feather table of its rows in the query's column order, its other
// fields in the file's metadata; it resolves to the same value.
func TestOffloadEnvelopeKeepsColumnOrder(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(256)
	rows := make([]any, 50)
	for i := range rows {
		rows[i] = map[string]any{"zeta": int64(i), "alpha": fmt.Sprint("r", i), "mid": i%2 == 0}
	}
	v := map[string]any{"rows": rows, "columns": []any{"zeta", "alpha", "mid"}, "row_count": int64(50), "command": "SELECT"}
	ref, err := s.Offload(ctx, coords, v)
	if err != nil || !IsRef(ref) {
		t.Fatalf("%v %v", ref, err)
	}
	r := ref.(map[string]any)[RefKey].(map[string]any)
	if r["format"] != FormatFeather || r["rows"] != int64(50) {
		t.Fatalf("$ref = %v", r)
	}
	data, _ := s.Get(ctx, r["key"].(string))
	sc := featherSchema(t, data)
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	if !reflect.DeepEqual(names, []string{"zeta", "alpha", "mid"}) {
		t.Fatalf("column order %v, want the query's", names)
	}
	if at, _ := sc.Metadata().GetValue(MetaAt); at != "rows" {
		t.Fatalf("noetl.at = %q", at)
	}
	got, err := s.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("resolve: %#v", got)
	}
	if ex := ref.(map[string]any)[ExtractedKey].(map[string]any); ex["row_count"] != int64(50) || ex["rows_count"] != int64(50) {
		t.Fatalf("extracted = %v", ex)
	}
}

// output.store.compression: lz4 and zstd files decode and are smaller on
// repetitive data; an unknown codec is refused. ttl is recorded on the
// object and in the reference.
func TestOffloadCompressionAndTTL(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(64)
	rows := make([]any, 2000)
	for i := range rows {
		rows[i] = map[string]any{"n": int64(i % 7), "s": strings.Repeat("abc", 20)}
	}
	sizes := map[string]int64{}
	for _, codec := range []string{"", "lz4", "zstd"} {
		c := coords
		c.Step = "c" + codec
		ref, err := s.OffloadWith(ctx, c, rows, OffloadOptions{Limit: -1, Compression: codec, TTL: time.Hour})
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		r := ref.(map[string]any)[RefKey].(map[string]any)
		sizes[codec] = r["bytes"].(int64)
		if r["expires"] != fixedNow.Add(time.Hour).Format(time.RFC3339) {
			t.Errorf("%s: expires %v", codec, r["expires"])
		}
		o, err := s.Open(ctx, r["key"].(string), 0)
		if err != nil || o.Attrs().Metadata[MetaExpires] != r["expires"] {
			t.Errorf("%s: object metadata %v %v", codec, o.Attrs(), err)
		}
		got, err := s.Resolve(ctx, ref)
		if err != nil || len(got.([]any)) != 2000 || !reflect.DeepEqual(got.([]any)[9], map[string]any{"n": int64(2), "s": strings.Repeat("abc", 20)}) {
			t.Fatalf("%s: resolve %v", codec, err)
		}
	}
	if sizes["lz4"] >= sizes[""]/2 || sizes["zstd"] >= sizes[""]/2 {
		t.Errorf("compressed sizes %v", sizes)
	}
	if _, err := s.OffloadWith(ctx, coords, rows, OffloadOptions{Limit: -1, Compression: "snappy"}); !errors.Is(err, ErrCompression) {
		t.Errorf("unknown codec: %v", err)
	}
}

// The key is a pure function of the URI: a redelivery days later writes
// the same object, and a reader with only the URI finds it.
func TestKeyIndependentOfWriteTime(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	c := coords
	c.ExecutionID = snowflake(time.Date(2026, 2, 3, 23, 59, 0, 0, time.UTC), 1)
	a, err := s.Offload(ctx, c, sized(100))
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return fixedNow.Add(72 * time.Hour) }
	b, err := s.Offload(ctx, c, sized(100))
	if err != nil {
		t.Fatal(err)
	}
	ka, kb := a.(map[string]any)[RefKey].(map[string]any)["key"], b.(map[string]any)[RefKey].(map[string]any)["key"]
	if ka != kb || !strings.Contains(ka.(string), "/date=2026-02-03/") {
		t.Fatalf("keys %v, %v", ka, kb)
	}
	ref, err := s.ResolveURN(ctx, s.LogicalURI(c))
	if err != nil || ref[RefKey].(map[string]any)["key"] != ka {
		t.Fatalf("ResolveURN = %v, %v", ref, err)
	}
	v, err := s.Resolve(ctx, ref)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"s": strings.Repeat("x", 92)}) {
		t.Fatalf("resolve by URN: %v %v", v, err)
	}
	// A reference without its key resolves from its uri and format.
	bare := map[string]any{RefKey: map[string]any{"uri": s.LogicalURI(c), "format": "json"}}
	if _, err := s.Resolve(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveURN(ctx, s.LogicalURI(types.ResultCoords{ExecutionID: c.ExecutionID, Step: "never"})); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing URN: %v", err)
	}
}

// A map that moves shards to a new cell leaves earlier executions'
// results where they were: their references and URNs still resolve; and
// a URN whose object sits in another cell than the map now says is found
// there.
func TestCellsMoveKeepsReferences(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	m1 := SingleCell("c1", "r1", "b1")
	c1, c2 := NewMemoryBucket("b1"), NewMemoryBucket("b2")
	old := &Store{Backend: c1, Locator: Locator{Cells: m1}, CellBackends: map[string]Backend{"c1": c1, "c2": c2}, InlineMax: 16}
	c := coords
	c.ExecutionID = snowflake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 1)
	ref, err := old.Offload(ctx, c, sized(100))
	if err != nil {
		t.Fatal(err)
	}
	// The map moves every shard to c2 from March on.
	m2 := &CellMap{Cells: []Cell{m1.Cells[0], {Name: "c2", Provider: "gcs", Bucket: "b2", Region: "r2"}},
		Placements: []Placement{{Cell: "c1"}, {Since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Cell: "c2"}}}
	if err := m2.Validate(0); err != nil {
		t.Fatal(err)
	}
	moved := &Store{Backend: c1, Locator: Locator{Cells: m2}, CellBackends: map[string]Backend{"c1": c1, "c2": c2}, InlineMax: 16}
	if _, err := moved.Resolve(ctx, ref); err != nil {
		t.Fatalf("reference after the move: %v", err)
	}
	if _, err := moved.ResolveURN(ctx, moved.LogicalURI(c)); err != nil {
		t.Fatalf("URN after the move: %v", err)
	}
	// A new execution lands in c2.
	n := c
	n.ExecutionID = snowflake(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 1)
	nref, err := moved.Offload(ctx, n, sized(100))
	if err != nil || nref.(map[string]any)[RefKey].(map[string]any)["cell"] != "c2" || nref.(map[string]any)[RefKey].(map[string]any)["bucket"] != "b2" {
		t.Fatalf("new execution: %v %v", nref, err)
	}
	if ok, _ := c2.Exists(ctx, nref.(map[string]any)[RefKey].(map[string]any)["key"].(string)); !ok {
		t.Fatal("not written in c2")
	}
	// A map that rewrote history (c1's shards declared in c2 from the
	// start): the URN is still found in the cell that holds it.
	m3 := &CellMap{Cells: m2.Cells, Placements: []Placement{{Cell: "c2"}}}
	rewritten := &Store{Backend: c2, Locator: Locator{Cells: m3}, CellBackends: map[string]Backend{"c1": c1, "c2": c2}, InlineMax: 16}
	got, err := rewritten.ResolveURN(ctx, rewritten.LogicalURI(c))
	if err != nil || got[RefKey].(map[string]any)["cell"] != "c1" {
		t.Fatalf("URN in another cell: %v %v", got, err)
	}
	// A reference naming a cell the map does not know is refused.
	bad := map[string]any{RefKey: map[string]any{"key": "k.json", "format": "json", "cell": "c9"}}
	if _, err := moved.Resolve(ctx, bad); !errors.Is(err, ErrBadRef) {
		t.Fatalf("unknown cell: %v", err)
	}
}

// bigTable offloads n rows in batches of 256 rows.
func bigTable(t *testing.T, s *Store, c types.ResultCoords, n int) map[string]any {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	k := s.NewSink(context.Background(), c, OffloadOptions{Limit: 0, BatchRows: 256})
	if err := k.Begin(schema, TableMeta{}); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 300 {
		ib, sb := array.NewInt64Builder(arrowMem), array.NewStringBuilder(arrowMem)
		for i := lo; i < min(lo+300, n); i++ {
			ib.Append(int64(i))
			sb.Append(fmt.Sprint("row-", i))
		}
		ia, sa := ib.NewArray(), sb.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{ia, sa}, int64(ia.Len()))
		if err := k.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		ia.Release()
		sa.Release()
	}
	ref, err := k.End()
	if err != nil || !IsRef(ref) {
		t.Fatalf("sink end: %v %v", ref, err)
	}
	return ref.(map[string]any)
}

// A stored table is read batch by batch; the object's digest is checked
// after the last batch; a loop item reads only its batch.
func TestOpenTableAndRow(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	s.Cache = NewCache(1 << 20)
	ref := bigTable(t, s, coords, 5000)
	r := ref[RefKey].(map[string]any)
	if r["rows"] != int64(5000) || ref[ExtractedKey].(map[string]any)["rows"] != int64(5000) {
		t.Fatalf("ref %v", ref)
	}
	tr, err := s.OpenTable(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr.Columns(), []string{"i", "s"}) {
		t.Fatalf("columns %v", tr.Columns())
	}
	batches, next := 0, int64(0)
	for {
		rows, err := tr.NextRows()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		batches++
		for _, row := range rows {
			if row[0] != next || row[1] != fmt.Sprint("row-", next) {
				t.Fatalf("row %d = %v", next, row)
			}
			next++
		}
	}
	tr.Close()
	if next != 5000 || batches < 2 {
		t.Fatalf("%d rows in %d batches", next, batches)
	}
	for _, i := range []int{0, 255, 256, 4999, 1234} {
		v, err := s.Row(ctx, ref, i)
		if err != nil || !reflect.DeepEqual(v, map[string]any{"i": int64(i), "s": fmt.Sprint("row-", i)}) {
			t.Fatalf("Row(%d) = %v, %v", i, v, err)
		}
	}
	if _, err := s.Row(ctx, ref, 5000); !errors.Is(err, ErrFormat) || errors.Is(err, ErrLost) {
		t.Fatalf("row out of range: %v", err)
	}
	if n, err := s.RowCount(ctx, ref); err != nil || n != 5000 {
		t.Fatalf("RowCount = %d, %v", n, err)
	}
}

// A changed object fails the read as a lost result, naming the URI: the
// sequential reader at its end, whole loads before decoding.
func TestLostResults(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	ref := bigTable(t, s, coords, 2000)
	key := ref[RefKey].(map[string]any)["key"].(string)
	data, _ := s.Get(ctx, key)
	tampered := bytes.Clone(data)
	i := bytes.Index(tampered, []byte("row-1999"))
	tampered[i+4] = '8' // same length, still valid Arrow
	if err := s.Put(ctx, key, tampered, ContentTypeFeather); err != nil {
		t.Fatal(err)
	}
	uri := ref[RefKey].(map[string]any)["uri"].(string)
	// Refused by generation before a byte is read.
	for name, f := range map[string]func() error{
		"resolve": func() error { _, err := s.Resolve(ctx, ref); return err },
		"open":    func() error { _, err := s.OpenTable(ctx, ref); return err },
		"row":     func() error { _, err := s.Row(ctx, ref, 1); return err },
	} {
		if err := f(); !errors.Is(err, ErrLost) || !errors.Is(err, ErrGeneration) || !strings.Contains(err.Error(), uri) {
			t.Errorf("%s of a replaced object: %v", name, err)
		}
	}
	// A reference without its generation: refused by its digest.
	noGen := map[string]any{RefKey: maps.Clone(ref[RefKey].(map[string]any))}
	delete(noGen[RefKey].(map[string]any), GenerationKey)
	tr, err := s.OpenTable(ctx, noGen)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = tr.NextRows()
	}
	if !errors.Is(err, ErrLost) || !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), uri) {
		t.Fatalf("tampered, streamed: %v", err)
	}
	if _, err := s.Resolve(ctx, noGen); !errors.Is(err, ErrLost) || !errors.Is(err, ErrDigest) {
		t.Fatalf("tampered, loaded: %v", err)
	}
	// Truncated: not even Arrow.
	if err := s.Put(ctx, key, data[:len(data)/2], ContentTypeFeather); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenTable(ctx, noGen); !errors.Is(err, ErrLost) {
		t.Fatalf("truncated: %v", err)
	}
	// Gone.
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"resolve": func() error { _, err := s.Resolve(ctx, ref); return err },
		"open":    func() error { _, err := s.OpenTable(ctx, ref); return err },
		"row":     func() error { _, err := s.Row(ctx, ref, 1); return err },
	} {
		if err := f(); !errors.Is(err, ErrLost) || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), uri) {
			t.Errorf("%s of a deleted object: %v", name, err)
		}
	}
}

// A sink keeps a small table as a value and streams a large one to the
// tier; both read back the same.
func TestSinkSmallAndLarge(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(4096)
	schema := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: arrow.BinaryTypes.String}}, nil)
	batch := func(lo, n int) arrow.RecordBatch {
		ib, sb := array.NewInt64Builder(arrowMem), array.NewStringBuilder(arrowMem)
		for i := lo; i < lo+n; i++ {
			ib.Append(int64(i))
			sb.Append("x")
		}
		return array.NewRecordBatch(schema, []arrow.Array{ib.NewArray(), sb.NewArray()}, int64(n))
	}
	meta := TableMeta{At: "rows", Envelope: map[string]any{"columns": []any{"b", "a"}, "command": "SELECT"}, RowsAt: "row_count"}
	small := s.NewSink(ctx, coords, OffloadOptions{Limit: -1})
	if err := small.Begin(schema, meta); err != nil {
		t.Fatal(err)
	}
	_ = small.Write(batch(0, 3))
	v, err := small.End()
	want := map[string]any{"rows": []any{map[string]any{"b": int64(0), "a": "x"}, map[string]any{"b": int64(1), "a": "x"}, map[string]any{"b": int64(2), "a": "x"}},
		"columns": []any{"b", "a"}, "command": "SELECT", "row_count": int64(3)}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Fatalf("small: %#v %v", v, err)
	}
	large := s.NewSink(ctx, coords, OffloadOptions{Limit: -1})
	_ = large.Begin(schema, meta)
	for lo := 0; lo < 3000; lo += 500 {
		if err := large.Write(batch(lo, 500)); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := large.End()
	if err != nil || !IsRef(ref) {
		t.Fatalf("large: %v %v", ref, err)
	}
	if ex := ref.(map[string]any)[ExtractedKey].(map[string]any); ex["row_count"] != int64(3000) || ex["command"] != "SELECT" {
		t.Fatalf("extracted %v", ex)
	}
	got, err := s.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	g := got.(map[string]any)
	if g["row_count"] != int64(3000) || g["command"] != "SELECT" || len(g["rows"].([]any)) != 3000 || g["rows"].([]any)[2999].(map[string]any)["b"] != int64(2999) {
		t.Fatalf("resolved %v", g["row_count"])
	}
}

// The cache is bounded in bytes and evicts the least recently used.
func TestCacheLRU(t *testing.T) {
	c := NewCache(100)
	c.Put("a", "A", 40)
	c.Put("b", "B", 40)
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.Put("c", "C", 40) // evicts b
	if _, ok := c.Get("b"); ok {
		t.Fatal("b kept")
	}
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a evicted")
	}
	c.Put("huge", "H", 101)
	if _, ok := c.Get("huge"); ok || c.Bytes() != 80 || c.Len() != 2 {
		t.Fatalf("bytes %d len %d", c.Bytes(), c.Len())
	}
	var nilCache *Cache
	nilCache.Put("x", 1, 1)
	if _, ok := nilCache.Get("x"); ok {
		t.Fatal("nil cache cached")
	}
}

// Resolve refuses to load an object over MaterializeMax.
func TestMaterializeMax(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	ref, err := s.Offload(ctx, coords, sized(5000))
	if err != nil {
		t.Fatal(err)
	}
	s.MaterializeMax = 1000
	if _, err := s.Resolve(ctx, ref); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	// A reference that lies about its size is caught at the object.
	inner := ref.(map[string]any)[RefKey].(map[string]any)
	lie := map[string]any{}
	for k, v := range inner {
		lie[k] = v
	}
	lie["bytes"] = int64(10)
	if _, err := s.Resolve(ctx, map[string]any{RefKey: lie}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("lying size: %v", err)
	}
	b, _ := json.Marshal(lie)
	_ = b
}

// anyReader reads for the tests that are not about ownership
// (owner_test.go is): every execution is its child.
var anyReader = Reader{Execution: "tier-test", IsChild: func(context.Context, string) (bool, error) { return true, nil }}

// A repaired object (MetaRepairs naming the lost generation) stands in
// for the generation its reference records, and is checked against the
// reference's sha256 even when reads check the crc32c; an object without
// the mark, or with it and other bytes, is refused.
func TestRepairedObjectStandsIn(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	s.ReadCheck = ReadCheckCRC32C
	ref := bigTable(t, s, coords, 500)
	inner := ref[RefKey].(map[string]any)
	key, gen := inner["key"].(string), inner[GenerationKey].(int64)
	data, _ := s.Get(ctx, key)
	write := func(body []byte, meta map[string]string) {
		t.Helper()
		w := s.NewWriter(ctx, key, ObjectAttrs{ContentType: ContentTypeFeather, Metadata: meta})
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	repairs := map[string]string{MetaRepairs: strconv.FormatInt(gen, 10)}
	// The same bytes, written again with the mark: read.
	write(data, repairs)
	if v, err := s.Resolve(ctx, ref); err != nil || len(v.([]any)) != 500 {
		t.Fatalf("repaired object: %v", err)
	}
	if n, err := s.RowCount(ctx, ref); err != nil || n != 500 {
		t.Fatalf("repaired object's rows: %d %v", n, err)
	}
	// The same bytes without the mark: refused by generation.
	write(data, nil)
	if _, err := s.Resolve(ctx, ref); !errors.Is(err, ErrGeneration) {
		t.Fatalf("unmarked replacement: %v, want ErrGeneration", err)
	}
	// The mark and other bytes whose crc32c is the same is out of reach of a
	// test; other bytes at all: refused by the sha256, not the crc32c.
	tampered := bytes.Clone(data)
	i := bytes.Index(tampered, []byte("row-499"))
	tampered[i+4] = '8'
	write(tampered, repairs)
	if _, err := s.Resolve(ctx, ref); !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "it records sha256") {
		t.Fatalf("marked replacement with other bytes: %v, want ErrDigest on the sha256", err)
	}
	tr, err := s.OpenTable(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = tr.NextRows()
	}
	if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "it records sha256") {
		t.Fatalf("marked replacement, streamed: %v", err)
	}
}

// The same table streamed twice gives the same bytes: the file's
// metadata is written in key order (a map's order once made every write
// of an envelope with two keys one of two files: a second writer of the
// key then stored a copy, and a repair could not reproduce the sha256).
func TestSameTableSameBytes(t *testing.T) {
	ctx := WithReader(context.Background(), anyReader)
	s := newTestStore(16)
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil)
	sha := map[string]bool{}
	for i := range 8 {
		c := coords
		c.Version = fmt.Sprint("v", i)
		k := s.NewSink(ctx, c, OffloadOptions{Limit: -1})
		if err := k.Begin(schema, TableMeta{At: "rows", RowsAt: "row_count", Envelope: map[string]any{"columns": []any{"i"}, "command": "SELECT"}}); err != nil {
			t.Fatal(err)
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for j := range 5000 {
			b.Append(int64(j))
		}
		a := b.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{a}, 5000)
		if err := k.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		a.Release()
		v, err := k.End()
		if err != nil {
			t.Fatal(err)
		}
		sha[v.(map[string]any)[RefKey].(map[string]any)[DigestKey].(string)] = true
	}
	if len(sha) != 1 {
		t.Fatalf("8 writes of one table gave %d different sha256s", len(sha))
	}
}
