package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
)

// Stored formats and their object content types (seed 004 §5).
const (
	// FormatFeather is "$ref.format" (and the key extension) of a tabular
	// result stored as Arrow Feather v2 (the Arrow IPC file format).
	FormatFeather = "feather"
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
	// MetaEncoding is the field metadata key marking a column whose utf8
	// values are JSON encodings (value MetaEncodingJSON): the column held
	// values of more than one scalar type (e.g. 1 and "a"), and decoding
	// parses each cell back with ints kept as int64.
	MetaEncoding = "noetl.encoding"
	// MetaEncodingJSON is the MetaEncoding value of a JSON-cell column.
	MetaEncodingJSON = "json"
)

// ErrFormat is returned (wrapped) when a stored object cannot be decoded in
// its declared format (corrupt or foreign file).
var ErrFormat = errs.Sentinel(errs.Internal, "results: bad stored object")

var arrowMem = memory.NewGoAllocator() // GC-managed: decoded strings may alias buffers safely

// Scalar kinds of a tabular cell, as bits of a column's kind set.
const (
	kInt uint8 = 1 << iota
	kFloat
	kBool
	kString
)

// AsTable reports whether v is tabular and returns its rows (the same maps,
// not copies). Tabular (seed 004 §5) means: a non-empty []any whose
// elements are all map[string]any, or a non-empty []map[string]any, where
// every cell value is a scalar — nil, bool, string, a Go integer
// (int…int64, uint…uint64), float32/float64 (finite) or json.Number — and at
// least one row has a key. Rows need not share a key set: the columns are
// the union of keys, a missing key reads as null.
func AsTable(v any) ([]map[string]any, bool) {
	t, ok := scanTable(v)
	return t.rows, ok
}

// table is a scanned tabular value: its rows and its columns in ascending
// name order.
type table struct {
	rows []map[string]any
	cols []*colInfo
}

// scanTable checks v is tabular (see AsTable) and collects its columns in
// the same pass.
func scanTable(v any) (table, bool) {
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
	index := map[string]int{}
	var cols []*colInfo
	for _, r := range rows {
		for k, v := range r {
			kind, ok := kindOf(v)
			if !ok {
				return table{}, false
			}
			i, seen := index[k]
			if !seen {
				i = len(cols)
				index[k] = i
				cols = append(cols, &colInfo{name: k})
			}
			c := cols[i]
			c.present++
			c.kinds |= kind
			if kind == 0 {
				c.nulls = true
			} else if kind == kString {
				c.strBytes += len(v.(string))
			}
		}
	}
	if len(cols) == 0 {
		return table{}, false
	}
	slices.SortFunc(cols, func(a, b *colInfo) int { return strings.Compare(a.name, b.name) })
	return table{rows: rows, cols: cols}, true
}

// kindOf classifies a tabular cell: its kind bit (0 for nil) and whether
// it is a scalar at all. It does not allocate.
func kindOf(v any) (uint8, bool) {
	switch x := v.(type) {
	case nil:
		return 0, true
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
	return 0, false
}

// uintKind: a uint64 above MaxInt64 becomes a float, as a JSON round trip
// (jsonx) would make it.
func uintKind(u uint64) uint8 {
	if u <= math.MaxInt64 {
		return kInt
	}
	return kFloat
}

// asInt64 returns a kInt cell as int64 (ok false for anything else).
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

// asFloat64 returns a kFloat cell as float64 (ok false for anything else).
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
// string or nil.
func scalarValue(v any) any {
	switch kind, _ := kindOf(v); kind {
	case kInt:
		i, _ := asInt64(v)
		return i
	case kFloat:
		f, _ := asFloat64(v)
		return f
	}
	return v
}

type colInfo struct {
	name     string
	kinds    uint8
	present  int // rows with the key
	nulls    bool
	strBytes int
}

// EncodeFeather encodes a table (see AsTable) as an Arrow Feather v2 file:
// one record batch, uncompressed, columns in ascending name order (so the
// same rows always give the same bytes). Column types are inferred:
//
//   - only ints → int64, only floats → float64, only bools → bool, only
//     strings → utf8;
//   - a column that also has nil cells or rows without the key is nullable
//     (otherwise not);
//   - a column with no non-nil value → the Arrow null type;
//   - a column mixing scalar types (including int with float) → utf8 holding
//     each cell's JSON encoding, field metadata noetl.encoding=json, nil
//     cells null — lossless, DecodeFeather parses it back.
//
// It returns the file bytes. Errors: rows is not tabular (wrapping
// ErrFormat), or Arrow failed.
func EncodeFeather(rows []map[string]any) ([]byte, error) {
	t, ok := scanTable(rows)
	if !ok {
		return nil, fmt.Errorf("%w: not a table (want rows of scalar cells, at least one column)", ErrFormat)
	}
	return encodeFeather(t)
}

func encodeFeather(t table) ([]byte, error) {
	rows, cols, n := t.rows, t.cols, len(t.rows)
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for ci, c := range cols {
		nullable := c.nulls || c.present < n
		f := arrow.Field{Name: c.name, Nullable: nullable}
		switch c.kinds {
		case 0:
			f.Type, f.Nullable = arrow.Null, true
			arrs[ci] = array.NewNull(n)
		case kInt:
			f.Type = arrow.PrimitiveTypes.Int64
			vals, valid := make([]int64, n), validity(n, nullable)
			for i, r := range rows {
				if v, ok := asInt64(r[c.name]); ok {
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
			f.Type = arrow.PrimitiveTypes.Float64
			vals, valid := make([]float64, n), validity(n, nullable)
			for i, r := range rows {
				if v, ok := asFloat64(r[c.name]); ok {
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
			f.Type = arrow.FixedWidthTypes.Boolean
			vals, valid := make([]bool, n), validity(n, nullable)
			for i, r := range rows {
				if v, ok := r[c.name].(bool); ok {
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
			f.Type = arrow.BinaryTypes.String
			b := array.NewStringBuilder(arrowMem)
			b.Reserve(n)
			b.ReserveData(c.strBytes)
			for _, r := range rows {
				if s, ok := r[c.name].(string); ok {
					b.Append(s)
				} else {
					b.AppendNull()
				}
			}
			arrs[ci] = b.NewArray()
			b.Release()
		default: // mixed scalar types
			f.Type = arrow.BinaryTypes.String
			f.Metadata = arrow.NewMetadata([]string{MetaEncoding}, []string{MetaEncodingJSON})
			b := array.NewStringBuilder(arrowMem)
			b.Reserve(n)
			var tmp []byte
			for _, r := range rows {
				v := scalarValue(r[c.name])
				if v == nil {
					b.AppendNull()
					continue
				}
				tmp = appendScalarJSON(tmp[:0], v)
				b.BinaryBuilder.Append(tmp)
			}
			arrs[ci] = b.NewArray()
			b.Release()
		}
		fields[ci] = f
	}

	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	defer rec.Release()
	var buf bytes.Buffer
	buf.Grow(featherSizeHint(n, cols))
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(arrowMem))
	if err != nil {
		return nil, fmt.Errorf("results: feather writer: %w", err)
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("results: feather write: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("results: feather close: %w", err)
	}
	return buf.Bytes(), nil
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

func featherSizeHint(n int, cols []*colInfo) int {
	size := 1024
	for _, c := range cols {
		size += 8*n + n/8 + c.strBytes + 64
	}
	return size
}

// appendScalarJSON appends the JSON encoding of a normalised scalar
// (int64, float64, bool, string).
func appendScalarJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case bool:
		return strconv.AppendBool(dst, x)
	}
	b, _ := json.Marshal(v) // float64 (finite) or string: cannot fail
	return append(dst, b...)
}

// DecodeFeather decodes an Arrow IPC file (Feather v2) into rows: a []any of
// map[string]any, one map per row holding every column (null cells as nil).
// Cell values are int64 (all integer types), float64 (float16/32/64), bool,
// string (utf8, large utf8; a noetl.encoding=json column is parsed back to
// its int64/float64/bool/string value) or nil; other Arrow types are
// converted through their JSON form. Strings may share memory with data,
// which must not be modified afterwards. Errors wrap ErrFormat.
func DecodeFeather(data []byte) ([]any, error) {
	r, err := ipc.NewMappedFileReader(data, ipc.WithAllocator(arrowMem))
	if err != nil {
		return nil, fmt.Errorf("%w: feather: %v", ErrFormat, err)
	}
	defer r.Close()
	fields := r.Schema().Fields()
	var rows []any
	for bi := 0; bi < r.NumRecords(); bi++ {
		rec, err := r.RecordBatch(bi)
		if err != nil {
			return nil, fmt.Errorf("%w: feather batch %d: %v", ErrFormat, bi, err)
		}
		n := int(rec.NumRows())
		base := len(rows)
		for i := 0; i < n; i++ {
			rows = append(rows, make(map[string]any, len(fields)))
		}
		for ci, f := range fields {
			if err := decodeColumn(f, rec.Column(ci), rows[base:]); err != nil {
				rec.Release()
				return nil, err
			}
		}
		rec.Release()
	}
	if rows == nil {
		rows = []any{}
	}
	return rows, nil
}

func decodeColumn(f arrow.Field, col arrow.Array, rows []any) error {
	name := f.Name
	set := func(i int, v any) { rows[i].(map[string]any)[name] = v }
	switch a := col.(type) {
	case *array.Null:
		for i := range rows {
			set(i, nil)
		}
	case *array.Int64:
		for i := range rows {
			if a.IsNull(i) {
				set(i, nil)
			} else {
				set(i, a.Value(i))
			}
		}
	case *array.Float64:
		for i := range rows {
			if a.IsNull(i) {
				set(i, nil)
			} else {
				set(i, a.Value(i))
			}
		}
	case *array.Boolean:
		for i := range rows {
			if a.IsNull(i) {
				set(i, nil)
			} else {
				set(i, a.Value(i))
			}
		}
	case *array.String:
		jsonCol := false
		if v, ok := f.Metadata.GetValue(MetaEncoding); ok && v == MetaEncodingJSON {
			jsonCol = true
		}
		for i := range rows {
			switch {
			case a.IsNull(i):
				set(i, nil)
			case jsonCol:
				var v any
				if err := jsonx.Unmarshal([]byte(a.Value(i)), &v); err != nil {
					return fmt.Errorf("%w: feather column %q row %d: %v", ErrFormat, name, i, err)
				}
				set(i, v)
			default:
				set(i, a.Value(i))
			}
		}
	case *array.LargeString:
		for i := range rows {
			if a.IsNull(i) {
				set(i, nil)
			} else {
				set(i, a.Value(i))
			}
		}
	case *array.Int8, *array.Int16, *array.Int32, *array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64,
		*array.Float16, *array.Float32:
		for i := range rows {
			if col.IsNull(i) {
				set(i, nil)
				continue
			}
			x := col.GetOneForMarshal(i)
			if _, ok := kindOf(x); ok {
				set(i, scalarValue(x))
				continue
			}
			// Float16 marshals as float16.Num: go through JSON.
			v, err := viaJSON(x)
			if err != nil {
				return fmt.Errorf("%w: feather column %q row %d: %v", ErrFormat, name, i, err)
			}
			set(i, v)
		}
	default:
		for i := range rows {
			if col.IsNull(i) {
				set(i, nil)
				continue
			}
			v, err := viaJSON(col.GetOneForMarshal(i))
			if err != nil {
				return fmt.Errorf("%w: feather column %q (%s) row %d: %v", ErrFormat, name, col.DataType(), i, err)
			}
			set(i, v)
		}
	}
	return nil
}

func viaJSON(x any) (any, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var v any
	err = jsonx.Unmarshal(b, &v)
	return v, err
}
