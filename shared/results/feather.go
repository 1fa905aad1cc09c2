package results

// The Feather codec, encoding side: which values are tables, the Arrow
// type of each column (inferred, nested where consistent), and building
// record batches from rows. decode.go reads them back; stream.go writes
// and reads whole files batch by batch.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/types"
)

// Stored formats and their object content types (NoETL result storage RFC §5).
const (
	// FormatFeather is "$ref.format" (and the key extension) of a tabular
	// result stored as Arrow Feather v2 (the Arrow IPC file format).
	FormatFeather = types.ResultFormatFeather
	// FormatJSON is "$ref.format" (and the key extension) of any other
	// over-budget result, stored as its JSON encoding.
	FormatJSON = "json"
	// ContentTypeFeather is the object content type of FormatFeather.
	ContentTypeFeather = "application/vnd.apache.arrow.file"
	// ContentTypeJSON is the object content type of FormatJSON.
	ContentTypeJSON = "application/json"
)

// Arrow metadata written into Feather files.
const (
	// MetaEncoding is the field metadata key marking a column (or a
	// nested field) whose utf8 values are JSON encodings (value
	// MetaEncodingJSON): its values were not of one consistent type
	// (e.g. 1 and "a", or maps and lists), and decoding parses each cell
	// back with ints kept as int64.
	MetaEncoding = "noetl.encoding"
	// MetaEncodingJSON is the MetaEncoding value of a JSON-cell column.
	MetaEncodingJSON = "json"
	// MetaEnvelope is the schema metadata key holding, as JSON, the other
	// fields of a result whose table is one of its fields (e.g. a duckdb
	// result {rows, columns, row_count, command}): the file alone gives
	// back the whole result.
	MetaEnvelope = "noetl.envelope"
	// MetaAt is the schema metadata key naming the field of the result
	// the table is (with MetaEnvelope; absent when the result is the
	// table itself).
	MetaAt = "noetl.at"
)

// ErrFormat is returned (wrapped) when a stored object cannot be decoded in
// its declared format (corrupt or foreign file).
var ErrFormat = errs.Sentinel(errs.Internal, "results: bad stored object")

var arrowMem = memory.NewGoAllocator() // GC-managed: decoded strings may alias buffers safely

// maxDepth bounds how deeply nested values become Arrow struct/list types;
// deeper values are stored as JSON text.
const maxDepth = 16

// vkind is the inferred kind of a column or nested field.
type vkind uint8

const (
	kNone   vkind = iota // no non-null value seen
	kInt                 // int64
	kFloat               // float64
	kBool                // bool
	kString              // utf8
	kStruct              // struct of fields
	kList                // list of one element type
	kJSON                // inconsistent: utf8 JSON cells
)

// vtype is the inferred type of a column or a nested field, built by
// merging every value seen.
type vtype struct {
	kind     vkind
	nulls    bool // a null value, or a row/map without the key
	present  int  // values seen (including nulls), for missing-key detection
	values   int  // non-null values seen (a struct's maps: its fields' count)
	strBytes int  // total bytes of string values (builder sizing)
	// struct: fields in order of first appearance (sorted when the
	// schema is made), by name.
	fields []*vfield
	index  map[string]int
	elem   *vtype // list element
}

type vfield struct {
	name string
	t    *vtype
}

// AsTable reports whether v is tabular and returns its rows (the same maps,
// not copies). Tabular (NoETL result storage RFC §5) means: a non-empty []any whose
// elements are all map[string]any, or a non-empty []map[string]any, where
// at least one row has a key and every cell is JSON data (nil, bool,
// string, a Go integer or float — finite —, json.Number, map[string]any,
// []any, []map[string]any). Rows need not share a key set: the columns
// are the union of keys, a missing key reads as null. Cells of one
// column that are maps become an Arrow struct, lists an Arrow list, when
// their types agree; a column (or nested field) whose values disagree is
// stored as JSON text (per column, EncodeFeather).
func AsTable(v any) ([]map[string]any, bool) {
	t, ok := scanTable(v, nil)
	return t.rows, ok
}

// table is a scanned tabular value: its rows and its columns in schema
// order.
type table struct {
	rows []map[string]any
	cols []*vfield
}

// scanTable checks v is tabular (see AsTable) and infers its columns in
// the same pass. order, when non-empty, gives the column order (the
// producer's: a query's columns); columns it does not list follow in
// ascending name order. Without order every column is in ascending name
// order (a Go map keeps no order), so the same rows give the same bytes.
func scanTable(v any, order []string) (table, bool) {
	var rows []map[string]any
	switch x := v.(type) {
	case []map[string]any:
		rows = x
	case []any:
		rows = make([]map[string]any, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return table{}, false
			}
			rows[i] = m
		}
	default:
		return table{}, false
	}
	if len(rows) == 0 {
		return table{}, false
	}
	root := &vtype{kind: kStruct, index: map[string]int{}}
	for _, r := range rows {
		for k, c := range r {
			if !root.mergeField(k, c, 1) {
				return table{}, false
			}
		}
	}
	if len(root.fields) == 0 {
		return table{}, false
	}
	n := len(rows)
	for _, f := range root.fields {
		f.t.finish(n)
	}
	cols := orderFields(root.fields, order)
	return table{rows: rows, cols: cols}, true
}

// orderFields returns fields in the given order, the rest sorted by name.
func orderFields(fields []*vfield, order []string) []*vfield {
	out := make([]*vfield, 0, len(fields))
	by := make(map[string]*vfield, len(fields))
	for _, f := range fields {
		by[f.name] = f
	}
	for _, name := range order {
		if f, ok := by[name]; ok {
			out = append(out, f)
			delete(by, name)
		}
	}
	rest := make([]*vfield, 0, len(by))
	for _, f := range fields {
		if _, ok := by[f.name]; ok {
			rest = append(rest, f)
		}
	}
	slices.SortFunc(rest, func(a, b *vfield) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return append(out, rest...)
}

// mergeField merges value v of key k into the struct type t.
func (t *vtype) mergeField(k string, v any, depth int) bool {
	i, seen := t.index[k]
	if !seen {
		i = len(t.fields)
		t.index[k] = i
		t.fields = append(t.fields, &vfield{name: k, t: &vtype{}})
	}
	return t.fields[i].t.merge(v, depth)
}

// merge merges one value into t; false when v is not JSON data at all
// (a channel, a NaN): the whole value is then not tabular.
func (t *vtype) merge(v any, depth int) bool {
	if l, ok := v.([]map[string]any); ok {
		a := make([]any, len(l))
		for i, m := range l {
			a[i] = m
		}
		v = a
	}
	t.present++
	if v == nil {
		t.nulls = true
		return true
	}
	t.values++
	if t.kind == kJSON {
		return jsonable(v)
	}
	var k vkind
	switch x := v.(type) {
	case string:
		k = kString
		t.strBytes += len(x)
	case bool:
		k = kBool
	case map[string]any:
		if depth > maxDepth {
			return t.toJSON(v)
		}
		if t.kind != kNone && t.kind != kStruct {
			return t.toJSON(v)
		}
		if t.kind == kNone {
			t.kind, t.index = kStruct, map[string]int{}
		}
		for fk, fv := range x {
			if !t.mergeField(fk, fv, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if depth > maxDepth {
			return t.toJSON(v)
		}
		if t.kind != kNone && t.kind != kList {
			return t.toJSON(v)
		}
		if t.kind == kNone {
			t.kind, t.elem = kList, &vtype{}
		}
		for _, e := range x {
			if !t.elem.merge(e, depth+1) {
				return false
			}
		}
		return true
	default:
		sk, ok := scalarKind(v)
		if !ok {
			return false
		}
		k = sk
	}
	switch {
	case t.kind == kNone:
		t.kind = k
	case t.kind != k:
		return t.toJSON(v)
	}
	return true
}

// toJSON turns t into a JSON-text field (inconsistent values).
func (t *vtype) toJSON(v any) bool {
	t.kind, t.fields, t.index, t.elem = kJSON, nil, nil, nil
	return jsonable(v)
}

// finish settles t after every value was merged: n is how many values
// the parent had (rows, or maps of a struct), so fewer present values
// means some lacked the key (nullable). A struct that collected no field
// becomes JSON.
func (t *vtype) finish(n int) {
	if t.present < n {
		t.nulls = true
	}
	switch t.kind {
	case kStruct:
		if len(t.fields) == 0 {
			t.kind = kJSON
			return
		}
		// Struct children are merged once per non-null map value.
		for _, f := range t.fields {
			f.t.finish(t.values)
		}
		t.fields = orderFields(t.fields, nil)
	case kList:
		t.elem.finish(t.elem.present)
	}
}

// scalarKind classifies a scalar cell; ok false for non-data values.
func scalarKind(v any) (vkind, bool) {
	switch x := v.(type) {
	case string:
		return kString, true
	case bool:
		return kBool, true
	case int64, int, int32, int16, int8, uint8, uint16, uint32:
		return kInt, true
	case float64:
		return kFloat, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return kFloat, !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case uint:
		return uintKind(uint64(x)), true
	case uint64:
		return uintKind(x), true
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return kInt, true
		}
		f, err := x.Float64()
		return kFloat, err == nil && !math.IsInf(f, 0)
	}
	return kNone, false
}

// jsonable reports whether v is JSON data (for JSON-text cells).
func jsonable(v any) bool {
	switch x := v.(type) {
	case nil, string, bool:
		return true
	case map[string]any:
		for _, e := range x {
			if !jsonable(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !jsonable(e) {
				return false
			}
		}
		return true
	case []map[string]any:
		for _, e := range x {
			if !jsonable(e) {
				return false
			}
		}
		return true
	}
	_, ok := scalarKind(v)
	return ok
}

// uintKind: a uint64 above MaxInt64 becomes a float, as a JSON round trip
// (jsonx) would make it.
func uintKind(u uint64) vkind {
	if u <= math.MaxInt64 {
		return kInt
	}
	return kFloat
}

// asInt64 returns an integer cell as int64 (ok false for anything else).
func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	}
	return 0, false
}

// asFloat64 returns a float cell as float64 (ok false for anything else).
func asFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return jsonx.Widen32(x), true // as JSON would give it back
	case uint:
		return float64(x), uint64(x) > math.MaxInt64
	case uint64:
		return float64(x), x > math.MaxInt64
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return 0, false
		}
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// scalarValue returns a scalar cell normalised to int64, float64, bool,
// string or nil; other values are returned as they are.
func scalarValue(v any) any {
	switch kind, _ := scalarKind(v); kind {
	case kInt:
		i, _ := asInt64(v)
		return i
	case kFloat:
		f, _ := asFloat64(v)
		return f
	}
	return v
}

// arrowType is the Arrow type of an inferred type, and its field
// metadata (MetaEncoding for JSON text).
func (t *vtype) arrowType() (arrow.DataType, arrow.Metadata) {
	switch t.kind {
	case kNone:
		return arrow.Null, arrow.Metadata{}
	case kInt:
		return arrow.PrimitiveTypes.Int64, arrow.Metadata{}
	case kFloat:
		return arrow.PrimitiveTypes.Float64, arrow.Metadata{}
	case kBool:
		return arrow.FixedWidthTypes.Boolean, arrow.Metadata{}
	case kString:
		return arrow.BinaryTypes.String, arrow.Metadata{}
	case kStruct:
		fs := make([]arrow.Field, len(t.fields))
		for i, f := range t.fields {
			fs[i] = f.t.field(f.name)
		}
		return arrow.StructOf(fs...), arrow.Metadata{}
	case kList:
		et, md := t.elem.arrowType()
		return arrow.ListOfField(arrow.Field{Name: "item", Type: et, Nullable: t.elem.nulls || t.elem.kind == kNone, Metadata: md}), arrow.Metadata{}
	}
	return arrow.BinaryTypes.String, arrow.NewMetadata([]string{MetaEncoding}, []string{MetaEncodingJSON})
}

// field is the Arrow field of an inferred type.
func (t *vtype) field(name string) arrow.Field {
	typ, md := t.arrowType()
	return arrow.Field{Name: name, Type: typ, Nullable: t.nulls || t.kind == kNone, Metadata: md}
}

// schemaOf is the Arrow schema of a scanned table, with the envelope
// metadata when the table is a field of a larger result.
func schemaOf(cols []*vfield, env *envelope) *arrow.Schema {
	fs := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fs[i] = c.t.field(c.name)
	}
	return arrow.NewSchema(fs, env.metadata())
}

// appendValue appends one value of inferred type t to builder b (nil and
// absent values as null).
func appendValue(b array.Builder, t *vtype, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch t.kind {
	case kNone:
		b.AppendNull()
	case kInt:
		i, _ := asInt64(v)
		b.(*array.Int64Builder).Append(i)
	case kFloat:
		f, ok := asFloat64(v)
		if !ok { // an int in a float column cannot happen (it is JSON), but be safe
			i, _ := asInt64(v)
			f = float64(i)
		}
		b.(*array.Float64Builder).Append(f)
	case kBool:
		b.(*array.BooleanBuilder).Append(v.(bool))
	case kString:
		b.(*array.StringBuilder).Append(v.(string))
	case kStruct:
		sb := b.(*array.StructBuilder)
		m, _ := v.(map[string]any)
		sb.Append(true)
		for i, f := range t.fields {
			appendValue(sb.FieldBuilder(i), f.t, m[f.name])
		}
	case kList:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder()
		switch l := v.(type) {
		case []any:
			for _, e := range l {
				appendValue(vb, t.elem, e)
			}
		case []map[string]any:
			for _, e := range l {
				appendValue(vb, t.elem, e)
			}
		}
	default:
		b.(*array.StringBuilder).BinaryBuilder.Append(appendJSON(nil, v))
	}
}

// appendJSON appends the JSON encoding of a value (normalised scalars
// keep int64 digits).
func appendJSON(dst []byte, v any) []byte {
	switch x := scalarValue(v).(type) {
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case bool:
		return strconv.AppendBool(dst, x)
	case nil:
		return append(dst, "null"...)
	case float64, string:
		b, _ := json.Marshal(x) // finite float or string: cannot fail
		return append(dst, b...)
	}
	b, err := json.Marshal(v)
	if err != nil { // checked by jsonable; keep the cell readable anyway
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// buildBatch builds one record batch of rows[lo:hi] of a scanned table.
// Scalar columns take a fast path; nested ones go through appendValue.
func buildBatch(schema *arrow.Schema, cols []*vfield, rows []map[string]any) arrow.RecordBatch {
	n := len(rows)
	arrs := make([]arrow.Array, len(cols))
	for ci, c := range cols {
		name, t := c.name, c.t
		nullable := schema.Field(ci).Nullable
		switch t.kind {
		case kNone:
			arrs[ci] = array.NewNull(n)
		case kInt:
			vals, valid := make([]int64, n), validity(n, nullable)
			for i, r := range rows {
				if v, ok := asInt64(r[name]); ok {
					vals[i] = v
				} else {
					valid[i] = false
				}
			}
			b := array.NewInt64Builder(arrowMem)
			b.AppendValues(vals, valid)
			arrs[ci] = b.NewArray()
			b.Release()
		case kFloat:
			vals, valid := make([]float64, n), validity(n, nullable)
			for i, r := range rows {
				if v, ok := asFloat64(r[name]); ok {
					vals[i] = v
				} else {
					valid[i] = false
				}
			}
			b := array.NewFloat64Builder(arrowMem)
			b.AppendValues(vals, valid)
			arrs[ci] = b.NewArray()
			b.Release()
		case kBool:
			vals, valid := make([]bool, n), validity(n, nullable)
			for i, r := range rows {
				if v, ok := r[name].(bool); ok {
					vals[i] = v
				} else {
					valid[i] = false
				}
			}
			b := array.NewBooleanBuilder(arrowMem)
			b.AppendValues(vals, valid)
			arrs[ci] = b.NewArray()
			b.Release()
		case kString:
			b := array.NewStringBuilder(arrowMem)
			b.Reserve(n)
			for _, r := range rows {
				if s, ok := r[name].(string); ok {
					b.Append(s)
				} else {
					b.AppendNull()
				}
			}
			arrs[ci] = b.NewArray()
			b.Release()
		default:
			b := array.NewBuilder(arrowMem, schema.Field(ci).Type)
			b.Reserve(n)
			for _, r := range rows {
				appendValue(b, t, r[name])
			}
			arrs[ci] = b.NewArray()
			b.Release()
		}
	}
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// validity returns a validity slice of n trues, or nil (all valid) when the
// column is not nullable.
func validity(n int, nullable bool) []bool {
	if !nullable {
		return nil
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = true
	}
	return v
}

// batchRows is how many rows of a scanned table go in one record batch:
// about TargetBatchBytes of estimated data, at least 1024 rows.
func batchRows(t table) int {
	per := 0
	for _, c := range t.cols {
		per += 9 + c.t.strBytes/max(1, len(t.rows))
		if c.t.kind >= kStruct {
			per += 64
		}
	}
	return max(1024, TargetBatchBytes/max(1, per))
}

// TargetBatchBytes is the size the tier aims its record batches at (4 MiB
// of column data): a reader holds one batch at a time.
const TargetBatchBytes = 4 << 20

// envelope is the rest of a result whose table is one of its fields.
type envelope struct {
	at     string
	fields map[string]any
}

func (e *envelope) metadata() *arrow.Metadata {
	if e == nil {
		return nil
	}
	b, err := json.Marshal(e.fields)
	if err != nil {
		b = []byte("{}")
	}
	md := arrow.NewMetadata([]string{MetaAt, MetaEnvelope}, []string{e.at, string(b)})
	return &md
}

// envelopeMax is the largest JSON encoding of an envelope (the result's
// other fields, kept in the file's metadata and the reference).
const envelopeMax = 4096

// tableFieldKeys are the fields of a result, in order of preference, that
// may hold its table (duckdb/postgres rows, http data, loop results,
// python data/items).
var tableFieldKeys = []string{"rows", "data", "results", "items", "records"}

// splitEnvelope finds, in a map result, a tabular field with small
// siblings: the table is stored as Feather and the siblings (at most
// envelopeMax bytes of JSON) as its envelope. order is the map's
// "columns" list when it has one (a query's column order).
func splitEnvelope(v any) (table, *envelope, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return table{}, nil, false
	}
	for _, k := range tableFieldKeys {
		inner, ok := m[k]
		if !ok {
			continue
		}
		var order []string
		if cs, ok := m["columns"].([]any); ok {
			for _, c := range cs {
				if s, ok := c.(string); ok {
					order = append(order, s)
				}
			}
		}
		t, ok := scanTable(inner, order)
		if !ok {
			continue
		}
		rest := make(map[string]any, len(m)-1)
		for rk, rv := range m {
			if rk != k {
				rest[rk] = rv
			}
		}
		b, err := json.Marshal(rest)
		if err != nil || len(b) > envelopeMax {
			return table{}, nil, false
		}
		return t, &envelope{at: k, fields: rest}, true
	}
	return table{}, nil, false
}

// EncodeFeather encodes a table (see AsTable) as an Arrow Feather v2 file,
// uncompressed, columns in ascending name order (so the same rows always
// give the same bytes), in record batches of about TargetBatchBytes.
// Column types are inferred:
//
//   - only ints → int64, only floats → float64, only bools → bool, only
//     strings → utf8;
//   - maps whose fields agree → struct (the union of their keys, each
//     typed by these rules); lists whose elements agree → list;
//   - a column (or nested field) with nil cells or rows without the key
//     is nullable (otherwise not); one with no non-nil value → null;
//   - a column or nested field mixing types (including int with float, a
//     map with a list) → utf8 holding each cell's JSON encoding, field
//     metadata noetl.encoding=json, nil cells null — lossless,
//     DecodeFeather parses it back.
//
// It returns the file bytes. Errors: rows is not tabular (wrapping
// ErrFormat), or Arrow failed.
func EncodeFeather(rows []map[string]any) ([]byte, error) {
	t, ok := scanTable(rows, nil)
	if !ok {
		return nil, fmt.Errorf("%w: not a table (want rows of JSON cells, at least one column)", ErrFormat)
	}
	var buf bytesWriter
	if _, err := writeTable(&buf, t, nil, ""); err != nil {
		return nil, err
	}
	return buf.b, nil
}

// bytesWriter is a minimal growing buffer (io.Writer).
type bytesWriter struct{ b []byte }

func (w *bytesWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
