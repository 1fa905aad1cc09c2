//go:build cgo

package duckdb

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/results"
)

// streamBatch is how many rows go in one record batch handed to the sink.
const streamBatch = 8192

// colKind is how a column's values become Arrow values.
type colKind uint8

const (
	colInt colKind = iota
	colFloat
	colBool
	colString
	colJSON // any other type: its value as the result map gives it, JSON text
)

// kindOfType maps a DuckDB column type name to its Arrow form.
func kindOfType(name string) colKind {
	switch strings.ToUpper(name) {
	case "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UINTEGER", "USMALLINT", "UTINYINT", "INT8", "INT4", "INT2", "INT1":
		return colInt
	case "DOUBLE", "FLOAT", "REAL", "FLOAT8", "FLOAT4":
		return colFloat
	case "BOOLEAN", "BOOL":
		return colBool
	case "VARCHAR", "TEXT", "STRING":
		return colString
	}
	return colJSON
}

// stream reads a query's rows into the results tier's sink, streamBatch
// rows at a time as Arrow record batches (README "Architecture": a large query result
// is never held whole, and has no row limit). Integers, floats, booleans
// and text keep their Arrow types; every other type is stored as JSON
// text of the value the non-streamed result holds (friendly), so both
// read back the same. The result is {rows, columns, row_count, command}
// (plus env) — the value itself when small, else its reference.
func (t *Tool) stream(rows driver.Rows, kind string, sink tableSink, env map[string]any) (any, error) {
	cols := rows.Columns()
	typeNames := make([]string, len(cols))
	if tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		for i := range cols {
			typeNames[i] = tn.ColumnTypeDatabaseTypeName(i)
		}
	}
	kinds := make([]colKind, len(cols))
	fields := make([]arrow.Field, len(cols))
	colList := make([]any, len(cols))
	for i, c := range cols {
		kinds[i] = kindOfType(typeNames[i])
		colList[i] = c
		f := arrow.Field{Name: c, Nullable: true}
		switch kinds[i] {
		case colInt:
			f.Type = arrow.PrimitiveTypes.Int64
		case colFloat:
			f.Type = arrow.PrimitiveTypes.Float64
		case colBool:
			f.Type = arrow.FixedWidthTypes.Boolean
		case colString:
			f.Type = arrow.BinaryTypes.String
		default:
			f.Type = arrow.BinaryTypes.String
			f.Metadata = arrow.NewMetadata([]string{results.MetaEncoding}, []string{results.MetaEncodingJSON})
		}
		fields[i] = f
	}
	schema := arrow.NewSchema(fields, nil)
	envelope := map[string]any{"columns": colList, "command": kind}
	for k, v := range env {
		envelope[k] = v
	}
	if err := sink.Begin(schema, results.TableMeta{At: "rows", Envelope: envelope, RowsAt: "row_count"}); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			sink.Abort()
		}
	}()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	dest := make([]driver.Value, len(cols))
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		n = 0
		return sink.Write(rec)
	}
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for i, v := range dest {
			if err := appendCell(b.Field(i), kinds[i], v, typeNames[i]); err != nil {
				return nil, err
			}
		}
		if n++; n == streamBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	v, err := sink.End()
	ok = err == nil
	return v, err
}

// appendCell appends one driver value to a column builder.
func appendCell(b array.Builder, k colKind, v any, typeName string) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch k {
	case colInt:
		if i, ok := friendly(v, typeName).(int64); ok {
			b.(*array.Int64Builder).Append(i)
			return nil
		}
	case colFloat:
		switch x := v.(type) {
		case float64:
			b.(*array.Float64Builder).Append(x)
			return nil
		case float32:
			b.(*array.Float64Builder).Append(float64(x))
			return nil
		}
	case colBool:
		if x, ok := v.(bool); ok {
			b.(*array.BooleanBuilder).Append(x)
			return nil
		}
	case colString:
		if x, ok := v.(string); ok {
			b.(*array.StringBuilder).Append(x)
			return nil
		}
	}
	// Everything else, and a value of an unexpected Go type, as the JSON
	// text of its friendly form.
	js, err := jsonText(friendly(v, typeName))
	if err != nil {
		return err
	}
	if k != colJSON {
		// A typed column got a value it cannot hold: keep the row readable.
		b.AppendNull()
		return nil
	}
	b.(*array.StringBuilder).Append(js)
	return nil
}

// jsonText is the JSON encoding of a friendly value.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
