package results

// Feather files written and read batch by batch: a writer never holds
// more than one record batch, a sequential reader holds one batch at a
// time, and a random-access reader (loop items) reads only the batch that
// holds the row it wants.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
)

// MetaBatchRows is the schema metadata key holding the row count of every
// record batch but the last (decimal): a reader finds the batch of row i
// as i / batch_rows without reading the others.
const MetaBatchRows = "noetl.batch_rows"

// MetaRowsAt is the schema metadata key naming an envelope field that
// holds the table's row count, filled in when the file is read (the
// count is known only once the table is written).
const MetaRowsAt = "noetl.rows_at"

// Compression codecs of output.store.compression.
const (
	CompressionNone = ""
	CompressionLZ4  = "lz4"
	CompressionZstd = "zstd"
)

// ErrCompression is returned (wrapped) for an unknown compression name
// (code InvalidArgument).
var ErrCompression = errs.Sentinel(errs.InvalidArgument, "results: unknown compression (want lz4 or zstd)")

// compressionOption maps a compression name to the IPC writer option.
func compressionOption(c string) (ipc.Option, bool, error) {
	switch c {
	case CompressionNone, "none":
		return nil, false, nil
	case CompressionLZ4, "lz4_frame":
		return ipc.WithLZ4(), true, nil
	case CompressionZstd:
		return ipc.WithZstd(), true, nil
	}
	return nil, false, fmt.Errorf("%w: %q", ErrCompression, c)
}

// clampBatchRows bounds a batch's row count.
func clampBatchRows(n int) int { return min(max(n, 256), 65536) }

// TableWriter writes an Arrow IPC file (Feather v2) to w one record batch
// at a time, re-cut into batches of exactly BatchRows rows (but the
// last), so that MetaBatchRows holds. It holds at most one batch of rows.
// Close writes the footer; nothing after a failed call is usable.
type TableWriter struct {
	fw        *ipc.FileWriter
	schema    *arrow.Schema
	batchRows int
	pending   []arrow.RecordBatch // slices making up the next batch
	pendingN  int
	rows      int64
}

// WriteOptions tune a TableWriter.
type WriteOptions struct {
	// Compression is "", "lz4" or "zstd" (Arrow IPC buffer compression).
	Compression string
	// BatchRows is the rows per batch (clamped to [256, 65536]); 0 picks
	// it from the schema (about TargetBatchBytes per batch).
	BatchRows int
	// Metadata adds schema metadata (the envelope keys).
	Metadata map[string]string
}

// NewTableWriter starts a Feather file of schema on w. The schema's own
// metadata is kept; MetaBatchRows and opts.Metadata are added.
func NewTableWriter(w io.Writer, schema *arrow.Schema, opts WriteOptions) (*TableWriter, error) {
	br := opts.BatchRows
	if br <= 0 {
		br = TargetBatchBytes / estimateRowBytes(schema)
	}
	br = clampBatchRows(br)
	md := schema.Metadata()
	keys, vals := append([]string{}, md.Keys()...), append([]string{}, md.Values()...)
	add := func(k, v string) {
		for i, x := range keys {
			if x == k {
				vals[i] = v
				return
			}
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	add(MetaBatchRows, strconv.Itoa(br))
	// In key order: the same table gives the same bytes (and sha256) on
	// every write — what a second writer of the key compares (once.go)
	// and what a repair must reproduce (shared/operations/gc repair.go).
	for _, k := range slices.Sorted(maps.Keys(opts.Metadata)) {
		add(k, opts.Metadata[k])
	}
	nmd := arrow.NewMetadata(keys, vals)
	s := arrow.NewSchema(schema.Fields(), &nmd)
	wopts := []ipc.Option{ipc.WithSchema(s), ipc.WithAllocator(arrowMem)}
	if o, ok, err := compressionOption(opts.Compression); err != nil {
		return nil, err
	} else if ok {
		wopts = append(wopts, o, ipc.WithCompressConcurrency(1))
	}
	fw, err := ipc.NewFileWriter(w, wopts...)
	if err != nil {
		return nil, fmt.Errorf("results: feather writer: %w", err)
	}
	return &TableWriter{fw: fw, schema: s, batchRows: br}, nil
}

// estimateRowBytes guesses a row's size from its types (strings 32 bytes,
// nested 64).
func estimateRowBytes(s *arrow.Schema) int {
	n := 0
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING_VIEW:
			n += 36
		case arrow.STRUCT, arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
			n += 64
		default:
			n += 9
		}
	}
	return max(n, 1)
}

// Schema is the file's schema (with the writer's metadata).
func (t *TableWriter) Schema() *arrow.Schema { return t.schema }

// BatchRows is the rows of every batch but the last.
func (t *TableWriter) BatchRows() int { return t.batchRows }

// Rows is the number of rows written so far.
func (t *TableWriter) Rows() int64 { return t.rows }

// Write appends rec's rows (its schema's fields must match the writer's).
// The caller keeps its reference to rec.
func (t *TableWriter) Write(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(t.schema) && !sameFields(rec.Schema(), t.schema) {
		return fmt.Errorf("results: feather write: batch schema %s differs from the file's %s", rec.Schema(), t.schema)
	}
	n := int(rec.NumRows())
	for off := 0; off < n; {
		take := min(n-off, t.batchRows-t.pendingN)
		var part arrow.RecordBatch
		if off == 0 && take == n {
			rec.Retain()
			part = rec
		} else {
			part = rec.NewSlice(int64(off), int64(off+take))
		}
		t.pending = append(t.pending, part)
		t.pendingN += take
		off += take
		if t.pendingN == t.batchRows {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

// flush writes the pending slices as one batch.
func (t *TableWriter) flush() error {
	if t.pendingN == 0 {
		return nil
	}
	var rec arrow.RecordBatch
	if len(t.pending) == 1 {
		rec = t.pending[0]
	} else {
		cols := make([]arrow.Array, t.schema.NumFields())
		for ci := range cols {
			parts := make([]arrow.Array, len(t.pending))
			for i, p := range t.pending {
				parts[i] = p.Column(ci)
			}
			c, err := array.Concatenate(parts, arrowMem)
			if err != nil {
				return fmt.Errorf("results: feather write: %w", err)
			}
			cols[ci] = c
		}
		for _, p := range t.pending {
			p.Release()
		}
		rec = array.NewRecordBatch(t.schema, cols, int64(t.pendingN))
		for _, c := range cols {
			c.Release()
		}
	}
	t.pending, t.rows = t.pending[:0], t.rows+int64(t.pendingN)
	t.pendingN = 0
	out := array.NewRecordBatch(t.schema, rec.Columns(), rec.NumRows()) // the file's schema (metadata)
	rec.Release()
	err := t.fw.Write(out)
	out.Release()
	if err != nil {
		return fmt.Errorf("results: feather write: %w", err)
	}
	return nil
}

// Close writes the last batch and the footer.
func (t *TableWriter) Close() error {
	if err := t.flush(); err != nil {
		_ = t.fw.Close()
		return err
	}
	if err := t.fw.Close(); err != nil {
		return fmt.Errorf("results: feather close: %w", err)
	}
	return nil
}

// Abort releases what the writer holds without finishing the file.
func (t *TableWriter) Abort() {
	for _, p := range t.pending {
		p.Release()
	}
	t.pending, t.pendingN = nil, 0
}

// writeTable writes a scanned table to w as a Feather file (see
// EncodeFeather), with env's metadata when the table is a field of a
// larger result. It returns the rows written.
func writeTable(w io.Writer, t table, env *envelope, compression string) (int64, error) {
	schema := schemaOf(t.cols, env)
	br := clampBatchRows(batchRows(t))
	tw, err := NewTableWriter(w, schema, WriteOptions{Compression: compression, BatchRows: br})
	if err != nil {
		return 0, err
	}
	for lo := 0; lo < len(t.rows); lo += br {
		rec := buildBatch(tw.Schema(), t.cols, t.rows[lo:min(lo+br, len(t.rows))])
		err := tw.Write(rec)
		rec.Release()
		if err != nil {
			tw.Abort()
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	return tw.Rows(), nil
}

// fileMeta is what a file's schema metadata says about the result.
type fileMeta struct {
	batchRows int            // MetaBatchRows (0: unknown, a foreign file)
	at        string         // MetaAt ("" : the result is the table)
	env       map[string]any // MetaEnvelope
	rowsAt    string         // MetaRowsAt
}

func metaOf(s *arrow.Schema) (fileMeta, error) {
	var m fileMeta
	md := s.Metadata()
	if v, ok := md.GetValue(MetaBatchRows); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return m, fmt.Errorf("%w: feather metadata %s=%q", ErrFormat, MetaBatchRows, v)
		}
		m.batchRows = n
	}
	m.at, _ = md.GetValue(MetaAt)
	m.rowsAt, _ = md.GetValue(MetaRowsAt)
	if v, ok := md.GetValue(MetaEnvelope); ok && m.at != "" {
		var env map[string]any
		if err := jsonx.Unmarshal([]byte(v), &env); err != nil {
			return m, fmt.Errorf("%w: feather metadata %s: %v", ErrFormat, MetaEnvelope, err)
		}
		m.env = env
	}
	return m, nil
}

// value assembles the result a file holds from its rows.
func (m fileMeta) value(rows []any) any {
	if m.at == "" {
		return rows
	}
	out := make(map[string]any, len(m.env)+2)
	for k, v := range m.env {
		out[k] = v
	}
	if m.rowsAt != "" {
		out[m.rowsAt] = int64(len(rows))
	}
	out[m.at] = rows
	return out
}

// DecodeFeather decodes an Arrow IPC file (Feather v2) into rows: a []any of
// map[string]any, one map per row holding every column (null cells as nil).
// Cell values are as columnValues gives them (int64, float64, bool,
// string, nil, map[string]any for structs, []any for lists; JSON-text
// columns parsed back). Strings may share memory with data, which must not
// be modified afterwards. Errors wrap ErrFormat.
func DecodeFeather(data []byte) ([]any, error) {
	_, rows, err := decodeFile(data)
	return rows, err
}

// decodeFile decodes a whole Feather file held in memory: its metadata
// and rows.
func decodeFile(data []byte) (fileMeta, []any, error) {
	r, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(arrowMem))
	if err != nil {
		return fileMeta{}, nil, fmt.Errorf("%w: feather: %v", ErrFormat, err)
	}
	defer r.Close()
	meta, err := metaOf(r.Schema())
	if err != nil {
		return meta, nil, err
	}
	rows := []any{}
	for bi := 0; bi < r.NumRecords(); bi++ {
		rec, err := r.RecordBatch(bi)
		if err != nil {
			return meta, nil, fmt.Errorf("%w: feather batch %d: %v", ErrFormat, bi, err)
		}
		rows, err = batchMaps(rows, rec)
		rec.Release()
		if err != nil {
			return meta, nil, err
		}
	}
	return meta, rows, nil
}

// footerStart returns where an Arrow IPC file's footer begins, given the
// file's last bytes tail (at least the 10-byte trailer) and its size.
func footerStart(tail []byte, size int64) (int64, error) {
	if len(tail) < 10 || !bytes.Equal(tail[len(tail)-6:], []byte("ARROW1")) {
		return 0, fmt.Errorf("%w: feather: no Arrow file trailer", ErrFormat)
	}
	n := int64(binary.LittleEndian.Uint32(tail[len(tail)-10 : len(tail)-6]))
	start := size - 10 - n
	if n <= 0 || start < 8 {
		return 0, fmt.Errorf("%w: feather: bad footer size %d", ErrFormat, n)
	}
	return start, nil
}

// streamReader reads the record batches of a Feather file sequentially
// from r, which yields the file from its first byte up to its footer
// (a file's messages are an IPC stream after the 8-byte magic).
type streamReader struct {
	rd   *ipc.Reader
	meta fileMeta
	rows int64
}

func newStreamReader(r io.Reader) (*streamReader, error) {
	var magic [8]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || !bytes.Equal(magic[:6], []byte("ARROW1")) {
		return nil, fmt.Errorf("%w: feather: no Arrow file magic", ErrFormat)
	}
	rd, err := ipc.NewReader(r, ipc.WithAllocator(arrowMem))
	if err != nil {
		return nil, fmt.Errorf("%w: feather: %v", ErrFormat, err)
	}
	meta, err := metaOf(rd.Schema())
	if err != nil {
		rd.Release()
		return nil, err
	}
	return &streamReader{rd: rd, meta: meta}, nil
}

// next returns the next batch (the caller releases it), io.EOF after the
// last.
func (s *streamReader) next() (arrow.RecordBatch, error) {
	if s.rd.Next() {
		rec := s.rd.RecordBatch()
		rec.Retain()
		s.rows += rec.NumRows()
		return rec, nil
	}
	if err := s.rd.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: feather: %v", ErrFormat, err)
	}
	return nil, io.EOF
}

func (s *streamReader) close() { s.rd.Release() }

// encodeJSON writes v's JSON encoding to w (no trailing newline).
func encodeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// copyBuffer copies r to both w and h (the bytes read and their hash).
func copyBuffer(w io.Writer, h io.Writer, r io.Reader) (int64, error) {
	return io.Copy(io.MultiWriter(w, h), r)
}
