package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchRows returns n rows × 5 columns: id int64, name string, score
// float64, active bool, note string-or-nil (nullable).
func benchRows(n int) []map[string]any {
	rows := make([]map[string]any, n)
	for i := range rows {
		var note any
		if i%3 != 0 {
			note = fmt.Sprintf("note for row %d", i)
		}
		rows[i] = map[string]any{
			"id":     int64(i),
			"name":   fmt.Sprintf("name-%06d", i),
			"score":  float64(i) * 0.25,
			"active": i%2 == 0,
			"note":   note,
		}
	}
	return rows
}

func benchStore() *Store {
	return &Store{Backend: NewMemory(), Now: func() time.Time { return time.Unix(0, 0) }}
}

func benchTable(n int) []any {
	rows := benchRows(n)
	v := make([]any, n)
	for i, r := range rows {
		v[i] = r
	}
	return v
}

// BenchmarkOffloadFeather: Offload of a 10k rows × 5 columns table (JSON
// ≈ 1 MB) to the in-memory backend: budget check, Arrow Feather encode,
// extracted block, Put.
func BenchmarkOffloadFeather(b *testing.B) {
	ctx := context.Background()
	s := benchStore()
	v := benchTable(10000)
	coords := coords
	b.ReportAllocs()
	var size int64
	for b.Loop() {
		ref, err := s.Offload(ctx, coords, v)
		if err != nil || ref == nil {
			b.Fatal(err)
		}
		size = ref.(map[string]any)[RefKey].(map[string]any)["bytes"].(int64)
	}
	b.ReportMetric(float64(size), "object-bytes")
}

// BenchmarkResolveFeather: Resolve of the same table's reference (Get from
// memory + Feather decode into []any of maps).
func BenchmarkResolveFeather(b *testing.B) {
	ctx := context.Background()
	s := benchStore()
	ref, err := s.Offload(ctx, coords, benchTable(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Resolve(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOffloadJSON: Offload of the same rows made non-tabular (one
// nested field), for comparison with the Feather path.
func BenchmarkOffloadJSON(b *testing.B) {
	ctx := context.Background()
	s := benchStore()
	v := map[string]any{"rows": benchTable(10000)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Offload(ctx, coords, v); err != nil {
			b.Fatal(err)
		}
	}
}

// streamBenchBatches is 1,000,000 rows × 5 columns in record batches of
// 8192 rows (the duckdb kind's batch), built once.
func streamBenchBatches(b *testing.B) (*arrow.Schema, []arrow.RecordBatch) {
	b.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "active", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var recs []arrow.RecordBatch
	for lo := 0; lo < 1_000_000; lo += 8192 {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := lo; i < min(lo+8192, 1_000_000); i++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(i))
			rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%07d", i))
			rb.Field(2).(*array.Float64Builder).Append(float64(i) * 0.25)
			rb.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
			if i%3 == 0 {
				rb.Field(4).(*array.StringBuilder).AppendNull()
			} else {
				rb.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("note for row %d", i))
			}
		}
		recs = append(recs, rb.NewRecordBatch())
		rb.Release()
	}
	return schema, recs
}

// BenchmarkSinkStream: 1M rows × 5 columns streamed through a Sink into
// the in-memory bucket (scripts/bench results compares it with raw IPC).
func BenchmarkSinkStream(b *testing.B) {
	schema, recs := streamBenchBatches(b)
	s := benchStore()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		k := s.NewSink(ctx, coords, OffloadOptions{Limit: -1})
		if err := k.Begin(schema, TableMeta{}); err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := k.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := k.End(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTableStream: the same table read back batch by batch through
// OpenTable (digest checked).
func BenchmarkTableStream(b *testing.B) {
	schema, recs := streamBenchBatches(b)
	s := benchStore()
	ctx := WithReader(context.Background(), Reader{Execution: coords.ExecutionID})
	k := s.NewSink(ctx, coords, OffloadOptions{Limit: -1})
	_ = k.Begin(schema, TableMeta{})
	for _, r := range recs {
		_ = k.Write(r)
	}
	ref, err := k.End()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tr, err := s.OpenTable(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		tr.Close()
	}
}
