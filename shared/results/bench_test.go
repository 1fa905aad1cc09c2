package results

import (
	"context"
	"fmt"
	"testing"
	"time"
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
