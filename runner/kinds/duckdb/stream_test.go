//go:build cgo

package duckdb

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// With the results tier's sink, a query's rows stream into the tier: a
// small result is the same value as without it, a large one (beyond
// MaxRows, which no longer truncates it) a reference whose table reads
// back as the rows the non-streamed result gives.
func TestStreamedQuery(t *testing.T) {
	tl := New(Options{MaxRows: 100})
	defer tl.Close()
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 4096}
	coords := types.ResultCoords{ExecutionID: "ex", Step: "q", Attempt: 1}
	ctx := results.WithSinks(context.Background(), func() *results.Sink {
		return rs.NewSink(context.Background(), coords, results.OffloadOptions{Limit: -1})
	})
	query := func(n int) M {
		return M{"query": `CREATE TABLE t AS SELECT i::INTEGER AS id, 'name ' || i AS name, i / 4 AS q, i % 2 = 0 AS even,
			DATE '2024-01-01' + i::INTEGER AS born, [i, i + 1] AS pair, {'k': i} AS obj, (i * 1.5)::DECIMAL(10,2) AS dec,
			CASE WHEN i = 3 THEN 'NaN'::DOUBLE END AS nan FROM range(` + itoa(n) + `) r(i); SELECT * FROM t ORDER BY id`}
	}
	// Small: the same value as the plain tool gives.
	plain := ok(t, exec(t, tl, query(5)))
	o := tl.Exec(ctx, nil, query(5), 0)
	if o.Status != types.StatusOK || !reflect.DeepEqual(o.Result, map[string]any(plain)) {
		t.Fatalf("small streamed:\n got %#v\nwant %#v", o.Result, plain)
	}
	// Large: a reference, all 20000 rows (MaxRows is 100).
	o = tl.Exec(ctx, nil, query(20000), 0)
	if o.Status != types.StatusOK || !results.IsRef(o.Result) {
		t.Fatalf("large: %+v", o)
	}
	ref := o.Result.(map[string]any)
	if ex := ref[results.ExtractedKey].(map[string]any); ex["row_count"] != int64(20000) || ex["command"] != "SELECT" || ex["statements"] != int64(2) {
		t.Fatalf("extracted %v", ex)
	}
	v, err := rs.Resolve(results.WithReader(context.Background(), results.Reader{Execution: "ex"}), ref)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)
	if got["row_count"] != int64(20000) || !reflect.DeepEqual(got["columns"], plain["columns"]) || len(got["rows"].([]any)) != 20000 {
		t.Fatalf("resolved: %v rows, %v", got["row_count"], got["columns"])
	}
	for i := 0; i < 5; i++ {
		if !reflect.DeepEqual(got["rows"].([]any)[i], plain["rows"].([]any)[i]) {
			t.Fatalf("row %d:\n got %#v\nwant %#v", i, got["rows"].([]any)[i], plain["rows"].([]any)[i])
		}
	}
	// as_objects: false keeps the plain path.
	if o := tl.Exec(ctx, nil, M{"query": "SELECT 1 AS a", "as_objects": false}, 0); results.IsRef(o.Result) || o.Status != types.StatusOK {
		t.Fatalf("as_objects false: %+v", o)
	}
}

func itoa(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// A query's rows are produced as they are read (the driver's streaming
// result, third_party/duckdb-go patch 1): an error the query meets after
// its first rows fails the task (kind duckdb, not a truncated result),
// and a query interrupted by the task's timeout mid-stream fails with
// kind timeout.
func TestStreamedQueryErrorsMidStream(t *testing.T) {
	// One thread: the range is scanned in order, so the error comes after
	// the first 150,000 rows have streamed. With several threads one may
	// start past 150,000 and fail the query before any row (DuckDB then
	// reports the other pipelines' "Interrupted!"), which is not the case
	// this test is about.
	tl := New(Options{Threads: 1})
	defer tl.Close()
	rs := &results.Store{Backend: results.NewMemory(), InlineMax: 4096}
	coords := types.ResultCoords{ExecutionID: "ex", Step: "q", Attempt: 1}
	ctx := results.WithSinks(context.Background(), func() *results.Sink {
		return rs.NewSink(context.Background(), coords, results.OffloadOptions{Limit: -1})
	})
	o := tl.Exec(ctx, nil, M{"query": `SELECT CASE WHEN i < 150000 THEN i ELSE error('boom at ' || i) END AS v FROM range(300000) t(i)`}, 0)
	if o.Status == types.StatusOK || o.Error == nil || !strings.Contains(o.Error.Message, "boom at") {
		t.Fatalf("a query failing after its first rows: %+v %v", o.Error, results.IsRef(o.Result))
	}
	o = tl.Exec(ctx, nil, M{"query": `SELECT sum(a.i * b.i) OVER (ORDER BY a.i) AS s FROM range(100000000) a(i), range(1000) b(i)`}, 1)
	if o.Status == types.StatusOK || o.Error == nil || o.Error.Kind != "timeout" {
		t.Fatalf("a long streamed query under a 1 s timeout: %+v", o.Error)
	}
}
