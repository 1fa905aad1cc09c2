package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/types"
)

// ratioSchema is the table of the ratio figures: 5 columns (id int64,
// name string, score float64, active bool, note nullable string).
var ratioSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	{Name: "active", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// ratioBatches builds n rows of ratioSchema as record batches of per rows
// (the size a producer such as the duckdb kind hands the tier).
func ratioBatches(n, per int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		b := array.NewRecordBuilder(memory.DefaultAllocator, ratioSchema)
		id := b.Field(0).(*array.Int64Builder)
		name := b.Field(1).(*array.StringBuilder)
		score := b.Field(2).(*array.Float64Builder)
		active := b.Field(3).(*array.BooleanBuilder)
		note := b.Field(4).(*array.StringBuilder)
		for i := lo; i < hi; i++ {
			id.Append(int64(i))
			name.Append(fmt.Sprintf("name-%07d", i))
			score.Append(float64(i) * 0.25)
			active.Append(i%2 == 0)
			if i%3 == 0 {
				note.AppendNull()
			} else {
				note.Append(fmt.Sprintf("note for row %d", i))
			}
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// countWriter hands the raw IPC baseline's bytes to a buffer (memory, as
// the in-memory bucket holds them).
type countWriter struct{ buf *bytes.Buffer }

func (c countWriter) Write(p []byte) (int, error) { return c.buf.Write(p) }

// ipcWrite writes the batches as an Arrow IPC file into memory with
// arrow-go alone (no re-cutting, no hashing, no object store).
func ipcWrite(recs []arrow.RecordBatch, buf *bytes.Buffer) error {
	w, err := ipc.NewFileWriter(countWriter{buf}, ipc.WithSchema(ratioSchema))
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return err
		}
	}
	return w.Close()
}

// ipcRead reads an Arrow IPC file from memory batch by batch with
// arrow-go's file reader (no object store, no digest), touching every
// column's length.
func ipcRead(data []byte) (int64, error) {
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var n int64
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return n, err
		}
		for _, c := range rec.Columns() {
			_ = c.Len()
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n, nil
}

// tierWrite streams the batches through the tier's sink (re-cut into
// the tier's batches, sha256, the backend's writer) and returns the
// reference.
func tierWrite(ctx context.Context, s *results.Store, c types.ResultCoords, recs []arrow.RecordBatch) (any, error) {
	k := s.NewSink(ctx, c, results.OffloadOptions{Limit: -1})
	if err := k.Begin(ratioSchema, results.TableMeta{}); err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := k.Write(r); err != nil {
			k.Abort()
			return nil, err
		}
	}
	return k.End()
}

// tierRead reads the reference's table batch by batch through the tier
// (the generation the reference records, the digest s.ReadCheck names
// checked at the end).
func tierRead(ctx context.Context, s *results.Store, ref any) (int64, error) {
	tr, err := s.OpenTable(ctx, ref)
	if err != nil {
		return 0, err
	}
	defer tr.Close()
	var n int64
	for {
		rec, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		for _, c := range rec.Columns() {
			_ = c.Len()
		}
		n += rec.NumRows()
		rec.Release()
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// measureRatios times runs rounds of raw IPC and tier writes and reads of
// the same batches, interleaved (a busy neighbour slows both alike), and
// compares their medians. Each round reads the tier's object twice: with
// s's read check (read_ratio_vs_ipc; the default, crc32c) and with the
// sha256 check (read_ratio_vs_ipc_sha256).
func measureRatios(ctx context.Context, s *results.Store, rows, per, runs int) (map[string]any, error) {
	shaStore := *s
	shaStore.ReadCheck = results.ReadCheckSHA256
	recs := ratioBatches(rows, per)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	ctx = results.WithReader(ctx, results.Reader{Execution: "bench"})
	var ipcW, tierW, ipcR, tierR, tierRS []float64
	var ipcBytes, tierBytes int64
	for i := range runs {
		var buf bytes.Buffer // a fresh buffer, as the bucket holds a new object
		c := types.ResultCoords{ExecutionID: "bench", Step: fmt.Sprintf("ratio%d", i), Attempt: 1}
		runtime.GC()
		t0 := time.Now()
		if err := ipcWrite(recs, &buf); err != nil {
			return nil, fmt.Errorf("ipc write: %w", err)
		}
		ipcW = append(ipcW, time.Since(t0).Seconds())
		ipcBytes = int64(buf.Len())
		runtime.GC()
		t0 = time.Now()
		ref, err := tierWrite(ctx, s, c, recs)
		if err != nil {
			return nil, fmt.Errorf("tier write: %w", err)
		}
		tierW = append(tierW, time.Since(t0).Seconds())
		inner, _ := ref.(map[string]any)[results.RefKey].(map[string]any)
		if inner == nil {
			return nil, fmt.Errorf("tier write: the table stayed inline")
		}
		tierBytes, _ = inner["bytes"].(int64)
		runtime.GC()
		t0 = time.Now()
		n, err := ipcRead(buf.Bytes())
		if err != nil || n != int64(rows) {
			return nil, fmt.Errorf("ipc read: %d rows, %v", n, err)
		}
		ipcR = append(ipcR, time.Since(t0).Seconds())
		runtime.GC()
		t0 = time.Now()
		n, err = tierRead(ctx, s, ref)
		if err != nil || n != int64(rows) {
			return nil, fmt.Errorf("tier read: %d rows, %v", n, err)
		}
		tierR = append(tierR, time.Since(t0).Seconds())
		runtime.GC()
		t0 = time.Now()
		n, err = tierRead(ctx, &shaStore, ref)
		if err != nil || n != int64(rows) {
			return nil, fmt.Errorf("tier read (sha256): %d rows, %v", n, err)
		}
		tierRS = append(tierRS, time.Since(t0).Seconds())
		if err := s.Delete(ctx, inner["key"].(string)); err != nil {
			return nil, fmt.Errorf("delete: %w", err)
		}
	}
	mib := func(b int64, s float64) float64 { return round(float64(b)/(1<<20)/s, 1) }
	iw, tw, ir, tr, trs := median(ipcW), median(tierW), median(ipcR), median(tierR), median(tierRS)
	check := s.ReadCheck
	if check == "" {
		check = results.ReadCheckCRC32C
	}
	return map[string]any{
		"rows": rows, "columns": 5, "producer_batch_rows": per, "runs": runs,
		"ipc_bytes": ipcBytes, "tier_bytes": tierBytes,
		"ipc_write_mib_s": mib(ipcBytes, iw), "tier_write_mib_s": mib(tierBytes, tw),
		"ipc_read_mib_s": mib(ipcBytes, ir), "tier_read_mib_s": mib(tierBytes, tr),
		"ipc_write_s": round(iw, 4), "tier_write_s": round(tw, 4), "ipc_read_s": round(ir, 4), "tier_read_s": round(tr, 4),
		"read_check": string(check), "tier_read_sha256_s": round(trs, 4), "tier_read_sha256_mib_s": mib(tierBytes, trs),
		// rows per second of the tier over rows per second of raw IPC
		"write_ratio_vs_ipc": round(iw/tw, 3),
		"read_ratio_vs_ipc":  round(ir/tr, 3),
		// the same with reads checking the sha256 (NOETL_RESULT_READ_CHECK=sha256)
		"read_ratio_vs_ipc_sha256": round(ir/trs, 3),
	}, nil
}
