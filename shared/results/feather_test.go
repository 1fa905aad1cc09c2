package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func featherSchema(t *testing.T, data []byte) *arrow.Schema {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not an Arrow IPC file: %v", err)
	}
	defer r.Close()
	return r.Schema()
}

func fieldByName(t *testing.T, s *arrow.Schema, name string) arrow.Field {
	t.Helper()
	fs, ok := s.FieldsByName(name)
	if !ok || len(fs) != 1 {
		t.Fatalf("no field %q in %v", name, s)
	}
	return fs[0]
}

func TestFeatherRoundTripTypes(t *testing.T) {
	rows := []map[string]any{
		{"i": int64(1), "f": 1.5, "b": true, "s": "a", "big": int64(1<<62 + 1)},
		{"i": int64(-2), "f": 0.0, "b": false, "s": "", "big": int64(-1 << 63)},
		{"i": int64(3), "f": -2.25e300, "b": true, "s": "ünï\x00code", "big": int64(0)},
	}
	data, err := EncodeFeather(rows)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("ARROW1")) || !bytes.HasSuffix(data, []byte("ARROW1")) {
		t.Fatal("missing Arrow file magic")
	}
	s := featherSchema(t, data)
	wantTypes := map[string]arrow.DataType{
		"i": arrow.PrimitiveTypes.Int64, "big": arrow.PrimitiveTypes.Int64, "f": arrow.PrimitiveTypes.Float64,
		"b": arrow.FixedWidthTypes.Boolean, "s": arrow.BinaryTypes.String,
	}
	for name, typ := range wantTypes {
		f := fieldByName(t, s, name)
		if !arrow.TypeEqual(f.Type, typ) || f.Nullable {
			t.Errorf("field %s: %s nullable=%v, want %s not nullable", name, f.Type, f.Nullable, typ)
		}
	}
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	if want := []string{"b", "big", "f", "i", "s"}; !reflect.DeepEqual(names, want) {
		t.Errorf("column order %v, want %v", names, want)
	}

	got, err := DecodeFeather(data)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]any, len(rows))
	for i, r := range rows {
		want[i] = r
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
	}
}

func TestFeatherGoNumberTypes(t *testing.T) {
	rows := []any{
		map[string]any{"a": 1, "b": int32(2), "c": uint8(3), "d": json.Number("4"), "e": float32(0.5), "f": json.Number("2.5"), "g": uint64(1 << 63)},
		map[string]any{"a": int8(-1), "b": int16(-2), "c": uint16(6), "d": uint32(7), "e": 1.25, "f": 3.0, "g": 1.0},
	}
	tab, ok := AsTable(rows)
	if !ok {
		t.Fatal("not tabular")
	}
	data, err := EncodeFeather(tab)
	if err != nil {
		t.Fatal(err)
	}
	s := featherSchema(t, data)
	for _, n := range []string{"a", "b", "c", "d"} {
		if f := fieldByName(t, s, n); !arrow.TypeEqual(f.Type, arrow.PrimitiveTypes.Int64) {
			t.Errorf("%s: %s, want int64", n, f.Type)
		}
	}
	for _, n := range []string{"e", "f", "g"} {
		if f := fieldByName(t, s, n); !arrow.TypeEqual(f.Type, arrow.PrimitiveTypes.Float64) {
			t.Errorf("%s: %s, want float64", n, f.Type)
		}
	}
	got, err := DecodeFeather(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"a": int64(1), "b": int64(2), "c": int64(3), "d": int64(4), "e": 0.5, "f": 2.5, "g": float64(1 << 63)},
		map[string]any{"a": int64(-1), "b": int64(-2), "c": int64(6), "d": int64(7), "e": 1.25, "f": 3.0, "g": 1.0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestFeatherNulls(t *testing.T) {
	rows := []map[string]any{
		{"i": int64(1), "s": nil, "b": true, "all_null": nil},
		{"i": nil, "s": "x", "f": 2.5},                     // b and all_null missing
		{"s": "y", "b": false, "f": nil, "only_here": "z"}, // i missing
	}
	data, err := EncodeFeather(rows)
	if err != nil {
		t.Fatal(err)
	}
	s := featherSchema(t, data)
	for name, typ := range map[string]arrow.DataType{
		"i": arrow.PrimitiveTypes.Int64, "s": arrow.BinaryTypes.String, "b": arrow.FixedWidthTypes.Boolean,
		"f": arrow.PrimitiveTypes.Float64, "all_null": arrow.Null, "only_here": arrow.BinaryTypes.String,
	} {
		f := fieldByName(t, s, name)
		if !arrow.TypeEqual(f.Type, typ) || !f.Nullable {
			t.Errorf("field %s: %s nullable=%v, want nullable %s", name, f.Type, f.Nullable, typ)
		}
	}
	got, err := DecodeFeather(data)
	if err != nil {
		t.Fatal(err)
	}
	// Every row carries every column; absent keys come back as nil.
	want := []any{
		map[string]any{"i": int64(1), "s": nil, "b": true, "f": nil, "all_null": nil, "only_here": nil},
		map[string]any{"i": nil, "s": "x", "b": nil, "f": 2.5, "all_null": nil, "only_here": nil},
		map[string]any{"i": nil, "s": "y", "b": false, "f": nil, "all_null": nil, "only_here": "z"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestFeatherMixedColumn(t *testing.T) {
	rows := []map[string]any{
		{"m": int64(1), "n": int64(10)},
		{"m": "a \"quoted\" <str>"},
		{"m": 2.5, "n": 10.5},
		{"m": true, "n": nil},
		{"m": nil, "n": int64(1 << 60)},
	}
	data, err := EncodeFeather(rows)
	if err != nil {
		t.Fatal(err)
	}
	s := featherSchema(t, data)
	for _, name := range []string{"m", "n"} {
		f := fieldByName(t, s, name)
		enc, _ := f.Metadata.GetValue(MetaEncoding)
		if !arrow.TypeEqual(f.Type, arrow.BinaryTypes.String) || !f.Nullable || enc != MetaEncodingJSON {
			t.Errorf("field %s: %s nullable=%v encoding=%q, want nullable utf8 json", name, f.Type, f.Nullable, enc)
		}
	}
	// The stored cells are the JSON encodings (what pyarrow sees).
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.RecordBatch(0)
	if err != nil {
		t.Fatal(err)
	}
	col := rec.Column(0).(*array.String) // "m"
	if col.Value(0) != "1" || col.Value(1) != `"a \"quoted\" \u003cstr\u003e"` || col.Value(2) != "2.5" || col.Value(3) != "true" || !col.IsNull(4) {
		t.Errorf("stored m cells: %v", col)
	}
	r.Close()

	got, err := DecodeFeather(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"m": int64(1), "n": int64(10)},
		map[string]any{"m": "a \"quoted\" <str>", "n": nil},
		map[string]any{"m": 2.5, "n": 10.5},
		map[string]any{"m": true, "n": nil},
		map[string]any{"m": nil, "n": int64(1 << 60)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestFeatherDeterministic(t *testing.T) {
	rows := benchRows(500)
	a, err := EncodeFeather(rows)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		b, err := EncodeFeather(rows)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("EncodeFeather is not deterministic")
		}
	}
}

func TestFeatherForeignTypes(t *testing.T) {
	// A file another writer (pyarrow) could produce: narrower ints, float32,
	// large_string, a list column.
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString},
		{Name: "lst", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}, nil)
	b := array.NewRecordBuilder(arrowMem, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{7, 0}, []bool{true, false})
	b.Field(1).(*array.Float32Builder).AppendValues([]float32{0.5, 1.5}, nil)
	b.Field(2).(*array.LargeStringBuilder).AppendValues([]string{"x", "y"}, nil)
	lb := b.Field(3).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Int64Builder)
	lb.Append(true)
	vb.AppendValues([]int64{1, 2}, nil)
	lb.Append(true)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFeather(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"i32": int64(7), "f32": 0.5, "ls": "x", "lst": []any{int64(1), int64(2)}},
		map[string]any{"i32": nil, "f32": 1.5, "ls": "y", "lst": []any{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestAsTable(t *testing.T) {
	yes := []any{
		[]any{map[string]any{"a": 1}},
		[]map[string]any{{"a": "x"}, {"b": nil}},
		[]any{map[string]any{"a": 1}, map[string]any{}},
		[]any{map[string]any{"a": []any{1}}},                    // a list column
		[]any{map[string]any{"a": map[string]any{"b": 1}}},      // a struct column
		[]any{map[string]any{"a": 1}, map[string]any{"a": "x"}}, // a JSON-text column
	}
	for _, v := range yes {
		if _, ok := AsTable(v); !ok {
			t.Errorf("AsTable(%v) = false", v)
		}
	}
	no := []any{
		nil, "s", map[string]any{"a": 1}, []any{}, []map[string]any{},
		[]any{map[string]any{}, map[string]any{}},     // no columns
		[]any{map[string]any{"a": 1}, "x"},            // non-map row
		[]any{map[string]any{"a": []any{math.NaN()}}}, // not JSON
		[]any{map[string]any{"a": struct{}{}}},        // foreign type
		[]any{1, 2, 3},                                // scalars
		[]map[string]string{{"a": "b"}},               // typed maps: JSON path
	}
	for _, v := range no {
		if _, ok := AsTable(v); ok {
			t.Errorf("AsTable(%#v) = true", v)
		}
	}
}

func TestDecodeFeatherGarbage(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("ARROW1"), []byte(`{"a":1}`), bytes.Repeat([]byte{0xff}, 100)} {
		if _, err := DecodeFeather(data); !errors.Is(err, ErrFormat) {
			t.Errorf("DecodeFeather(%q) err = %v, want ErrFormat", data, err)
		}
	}
}
