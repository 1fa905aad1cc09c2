package results

// The Feather codec, decoding side: Arrow columns back into the engine's
// values (int64, float64, bool, string, nil, map[string]any, []any), for
// the tier's own files and for files other Arrow implementations wrote.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// isJSONField reports whether f's utf8 values are JSON text (MetaEncoding).
func isJSONField(f arrow.Field) bool {
	v, ok := f.Metadata.GetValue(MetaEncoding)
	return ok && v == MetaEncodingJSON
}

// columnValues returns the values of an Arrow column (its field f) as the
// engine's values: integers as int64 (a uint64 above MaxInt64 as float64),
// floats as float64 (NaN and ±Inf as "NaN", "Infinity", "-Infinity"), bool, string (utf8, large utf8, string views; a
// noetl.encoding=json column parsed back), binary as base64 text, struct
// as map[string]any (every field present, nulls as nil), list (also large,
// fixed-size and list views) as []any, map as map[string]any (keys as
// text), dictionary-encoded values as their decoded values, null as nil;
// other types (timestamps, dates, decimals, ...) through their Arrow JSON
// form. Errors wrap ErrFormat.
func columnValues(col arrow.Array, f arrow.Field) ([]any, error) {
	n := col.Len()
	out := make([]any, n)
	switch a := col.(type) {
	case *array.Null:
	case *array.Int64:
		for i := range out {
			if a.IsValid(i) {
				out[i] = a.Value(i)
			}
		}
	case *array.Float64:
		for i := range out {
			if a.IsValid(i) {
				out[i] = finite(a.Value(i))
			}
		}
	case *array.Boolean:
		for i := range out {
			if a.IsValid(i) {
				out[i] = a.Value(i)
			}
		}
	case *array.String:
		jsonCol := isJSONField(f)
		for i := range out {
			if !a.IsValid(i) {
				continue
			}
			if jsonCol {
				var v any
				if err := jsonx.Unmarshal([]byte(a.Value(i)), &v); err != nil {
					return nil, fmt.Errorf("%w: feather column %q row %d: %v", ErrFormat, f.Name, i, err)
				}
				out[i] = v
				continue
			}
			out[i] = a.Value(i)
		}
	case *array.LargeString:
		for i := range out {
			if a.IsValid(i) {
				out[i] = a.Value(i)
			}
		}
	case *array.StringView:
		for i := range out {
			if a.IsValid(i) {
				out[i] = a.Value(i)
			}
		}
	case *array.Int8, *array.Int16, *array.Int32, *array.Uint8, *array.Uint16, *array.Uint32:
		for i := range out {
			if col.IsValid(i) {
				out[i] = scalarValue(col.GetOneForMarshal(i))
			}
		}
	case *array.Uint64:
		for i := range out {
			if a.IsValid(i) {
				if u := a.Value(i); u <= math.MaxInt64 {
					out[i] = int64(u)
				} else {
					out[i] = float64(u)
				}
			}
		}
	case *array.Float32:
		for i := range out {
			if a.IsValid(i) {
				out[i] = finite(jsonx.Widen32(a.Value(i))) // a float32 cell as JSON would give it back
			}
		}
	case *array.Binary:
		for i := range out {
			if a.IsValid(i) {
				out[i] = base64.StdEncoding.EncodeToString(a.Value(i))
			}
		}
	case *array.LargeBinary:
		for i := range out {
			if a.IsValid(i) {
				out[i] = base64.StdEncoding.EncodeToString(a.Value(i))
			}
		}
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		kids := make([][]any, a.NumField())
		for k := range kids {
			v, err := columnValues(a.Field(k), st.Field(k))
			if err != nil {
				return nil, err
			}
			kids[k] = v
		}
		for i := range out {
			if !a.IsValid(i) {
				continue
			}
			m := make(map[string]any, len(kids))
			for k, vals := range kids {
				m[st.Field(k).Name] = vals[i]
			}
			out[i] = m
		}
	case *array.Map:
		keys, err := columnValues(a.Keys(), arrow.Field{Name: "key"})
		if err != nil {
			return nil, err
		}
		items, err := columnValues(a.Items(), a.DataType().(*arrow.MapType).ItemField())
		if err != nil {
			return nil, err
		}
		for i := range out {
			if !a.IsValid(i) {
				continue
			}
			lo, hi := a.ValueOffsets(i)
			m := make(map[string]any, hi-lo)
			for j := lo; j < hi; j++ {
				m[fmt.Sprint(keys[j])] = items[j]
			}
			out[i] = m
		}
	case array.ListLike:
		var ef arrow.Field
		if lt, ok := a.DataType().(arrow.ListLikeType); ok {
			ef = lt.ElemField()
		}
		vals, err := columnValues(a.ListValues(), ef)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if !a.IsValid(i) {
				continue
			}
			lo, hi := a.ValueOffsets(i)
			l := make([]any, hi-lo)
			copy(l, vals[lo:hi])
			out[i] = l
		}
	case *array.Dictionary:
		vt := a.DataType().(*arrow.DictionaryType).ValueType
		dict, err := columnValues(a.Dictionary(), arrow.Field{Name: f.Name, Type: vt, Metadata: f.Metadata})
		if err != nil {
			return nil, err
		}
		for i := range out {
			if a.IsValid(i) {
				out[i] = dict[a.GetValueIndex(i)]
			}
		}
	default:
		for i := range out {
			if !col.IsValid(i) {
				continue
			}
			v, err := viaJSON(col.GetOneForMarshal(i))
			if err != nil {
				return nil, fmt.Errorf("%w: feather column %q (%s) row %d: %v", ErrFormat, f.Name, col.DataType(), i, err)
			}
			out[i] = v
		}
	}
	return out, nil
}

// finite returns f, or for NaN and ±Inf (which JSON cannot hold) the
// strings "NaN", "Infinity", "-Infinity" (as the duckdb and postgres
// kinds give them).
func finite(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// viaJSON converts a value through its JSON form (jsonx numbers).
func viaJSON(x any) (any, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var v any
	err = jsonx.Unmarshal(b, &v)
	return v, err
}

// batchMaps returns a record batch's rows as maps holding every column
// (nulls as nil), appended to dst.
func batchMaps(dst []any, rec arrow.RecordBatch) ([]any, error) {
	fields := rec.Schema().Fields()
	n := int(rec.NumRows())
	cols := make([][]any, len(fields))
	for ci, f := range fields {
		v, err := columnValues(rec.Column(ci), f)
		if err != nil {
			return nil, err
		}
		cols[ci] = v
	}
	for i := 0; i < n; i++ {
		m := make(map[string]any, len(fields))
		for ci, f := range fields {
			m[f.Name] = cols[ci][i]
		}
		dst = append(dst, m)
	}
	return dst, nil
}

// batchRowsOf returns a record batch's rows as positional values (one
// []any per row, in schema order), appended to dst.
func batchRowsOf(dst [][]any, rec arrow.RecordBatch) ([][]any, error) {
	fields := rec.Schema().Fields()
	n := int(rec.NumRows())
	cols := make([][]any, len(fields))
	for ci, f := range fields {
		v, err := columnValues(rec.Column(ci), f)
		if err != nil {
			return nil, err
		}
		cols[ci] = v
	}
	flat := make([]any, n*len(fields)) // one allocation for the batch's cells
	for i := 0; i < n; i++ {
		row := flat[i*len(fields) : (i+1)*len(fields) : (i+1)*len(fields)]
		for ci := range fields {
			row[ci] = cols[ci][i]
		}
		dst = append(dst, row)
	}
	return dst, nil
}
