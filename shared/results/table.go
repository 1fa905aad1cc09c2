package results

// Streaming reads of stored tables: a consumer that iterates (loop items,
// transfer, artifact copies, the api) reads one record batch at a time,
// and a loop iteration reads only the batch of its row.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// tailBytes is how much of a file's end OpenTable reads at once to find
// its footer.
const tailBytes = 64 << 10

// TableReader reads a stored table batch by batch (Store.OpenTable). It
// holds one batch at a time. The object's bytes are hashed as they are
// read and checked against the reference's digest (Store.ReadCheck) when
// the last batch has been read: Next then returns the ErrLost/ErrDigest error instead of
// io.EOF (a consumer that wrote rows somewhere must discard them — the
// transfer kind's target is one transaction, rolled back). Not safe for
// concurrent use.
type TableReader struct {
	ref     Ref
	schema  *arrow.Schema
	meta    fileMeta
	sr      *streamReader
	body    io.ReadCloser
	hr      hashedBody // body, hashed into v as it is read
	v       *verifier
	tail    []byte // the object from its footer to its end (hashed last)
	rows    int64
	done    bool
	json    []any // a JSON result's rows (format json)
	jsonCol []string
}

// OpenTable opens the table a reference names for sequential reading.
// Feather objects are streamed (one GET from the first byte to the
// footer, after reading the footer's position from the object's end);
// JSON objects holding a list of maps (or a map with such a list under
// rows/data/results/items/records) are loaded whole, within
// MaterializeMax. Errors: ErrBadRef; ErrForbidden for a reference the
// context's Reader may not load (Authorize, before any read); ErrLost (with ErrNotFound, ErrFormat)
// for a missing or undecodable object; ErrFormat (not lost) for a JSON
// result that is not a table; the backend's error.
func (s *Store) OpenTable(ctx context.Context, v any) (*TableReader, error) {
	ref, err := s.ParseRef(v)
	if err != nil {
		return nil, err
	}
	if err := AuthorizeRef(ctx, ref); err != nil {
		return nil, err
	}
	if ref.Format == FormatJSON {
		return s.openJSONTable(ctx, ref)
	}
	o, repaired, err := s.openRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	size := o.Size()
	tstart := max(0, size-tailBytes)
	tail := make([]byte, size-tstart)
	if _, err := o.ReadAt(tail, tstart); err != nil && !errors.Is(err, io.EOF) {
		return nil, lostOr(ref, err)
	}
	fstart, err := footerStart(tail, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLost, ref.Name(), err)
	}
	if fstart < tstart {
		tail = make([]byte, size-fstart)
		if _, err := o.ReadAt(tail, fstart); err != nil && !errors.Is(err, io.EOF) {
			return nil, lostOr(ref, err)
		}
	} else {
		tail = tail[fstart-tstart:]
	}
	body, err := o.NewReader(ctx, 0, fstart)
	if err != nil {
		return nil, lostOr(ref, err)
	}
	vf := s.verifierOf(ref, repaired)
	hr := hashBody(body, vf)
	sr, err := newStreamReader(hr)
	if err != nil {
		hr.Close(body)
		return nil, fmt.Errorf("%w: %s: %w", ErrLost, ref.Name(), err)
	}
	return &TableReader{ref: ref, schema: sr.rd.Schema(), meta: sr.meta, sr: sr, body: body, hr: hr, v: vf, tail: tail}, nil
}

func (s *Store) openJSONTable(ctx context.Context, ref Ref) (*TableReader, error) {
	data, err := s.fetch(ctx, ref)
	if err != nil {
		return nil, err
	}
	var v any
	if err := jsonx.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: %s: %w: json: %v", ErrLost, ref.Name(), ErrFormat, err)
	}
	t, ok := scanTable(v, nil)
	if !ok {
		if t, _, ok = splitEnvelope(v); !ok {
			return nil, fmt.Errorf("%w: %s is not a table (a list of mappings)", ErrFormat, ref.Name())
		}
	}
	rows := make([]any, len(t.rows))
	for i, r := range t.rows {
		rows[i] = r
	}
	cols := make([]string, len(t.cols))
	for i, c := range t.cols {
		cols[i] = c.name
	}
	return &TableReader{ref: ref, json: rows, jsonCol: cols, done: false}, nil
}

// Schema is the table's Arrow schema (nil for a JSON result).
func (r *TableReader) Schema() *arrow.Schema { return r.schema }

// Columns are the table's column names, in order.
func (r *TableReader) Columns() []string {
	if r.schema == nil {
		return slices.Clone(r.jsonCol)
	}
	out := make([]string, r.schema.NumFields())
	for i, f := range r.schema.Fields() {
		out[i] = f.Name
	}
	return out
}

// Meta is how the table sits in its result (the file's envelope
// metadata), for copying it through a Sink.
func (r *TableReader) Meta() TableMeta {
	m := TableMeta{At: r.meta.at, RowsAt: r.meta.rowsAt, Envelope: r.meta.env}
	if m.At != "" && m.Envelope == nil {
		m.Envelope = map[string]any{}
	}
	return m
}

// Rows is the number of rows read so far.
func (r *TableReader) Rows() int64 { return r.rows }

// Next returns the next record batch (the caller releases it) and io.EOF
// after the last, once the object's digest has been checked. JSON
// results have no batches: use NextMaps or NextRows.
func (r *TableReader) Next() (arrow.RecordBatch, error) {
	if r.sr == nil {
		return nil, fmt.Errorf("%w: %s is stored as JSON, not as record batches", ErrFormat, r.ref.Name())
	}
	if r.done {
		return nil, io.EOF
	}
	rec, err := r.sr.next()
	if errors.Is(err, io.EOF) {
		r.done = true
		if err := r.finish(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLost, r.ref.Name(), err)
	}
	r.rows += rec.NumRows()
	return rec, nil
}

// finish reads the rest of the object's body and checks its digest.
func (r *TableReader) finish() error {
	if _, err := io.Copy(io.Discard, r.hr); err != nil {
		return lostOr(r.ref, err)
	}
	r.hr.Close(r.body) // v has every byte of the body
	r.v.Write(r.tail)
	return r.v.check()
}

// jsonBatch is how many rows NextMaps/NextRows give at once for a JSON
// result.
const jsonBatch = 4096

// NextMaps returns the next batch of rows as maps holding every column
// (see columnValues for the values), io.EOF after the last.
func (r *TableReader) NextMaps() ([]any, error) {
	if r.sr == nil {
		if len(r.json) == 0 {
			return nil, io.EOF
		}
		n := min(jsonBatch, len(r.json))
		out := r.json[:n]
		r.json, r.rows = r.json[n:], r.rows+int64(n)
		return out, nil
	}
	rec, err := r.Next()
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return batchMaps(make([]any, 0, rec.NumRows()), rec)
}

// NextRows returns the next batch of rows as positional values in
// Columns order, io.EOF after the last.
func (r *TableReader) NextRows() ([][]any, error) {
	if r.sr == nil {
		maps, err := r.NextMaps()
		if err != nil {
			return nil, err
		}
		out := make([][]any, len(maps))
		for i, m := range maps {
			row := make([]any, len(r.jsonCol))
			for ci, c := range r.jsonCol {
				row[ci] = m.(map[string]any)[c]
			}
			out[i] = row
		}
		return out, nil
	}
	rec, err := r.Next()
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return batchRowsOf(make([][]any, 0, rec.NumRows()), rec)
}

// Close releases the reader (reading stops; no digest check).
func (r *TableReader) Close() {
	if r.sr != nil {
		r.sr.close()
		r.hr.Close(r.body)
		r.sr = nil
	}
	r.json = nil
}

// windowReader serves ReadAt from a read-ahead window over an Object,
// so that reading one record batch (its message, then each buffer) costs
// one ranged read.
type windowReader struct {
	o    Object
	off  int64
	buf  []byte
	size int64
	pos  int64 // Read/Seek position
}

func (w *windowReader) Read(p []byte) (int, error) {
	n, err := w.ReadAt(p, w.pos)
	w.pos += int64(n)
	return n, err
}

const readWindow = 1 << 20

func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= w.size {
		return 0, io.EOF
	}
	if off >= w.off && off+int64(len(p)) <= w.off+int64(len(w.buf)) {
		return copy(p, w.buf[off-w.off:]), nil
	}
	n := max(int64(len(p)), readWindow)
	n = min(n, w.size-off)
	buf := make([]byte, n)
	got, err := w.o.ReadAt(buf, off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		return 0, err
	}
	w.off, w.buf = off, buf
	c := copy(p, buf)
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (w *windowReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekEnd:
		w.pos = w.size + off
	case io.SeekStart:
		w.pos = off
	case io.SeekCurrent:
		w.pos += off
	}
	return w.pos, nil
}

// Row returns row i (0-based) of the table a Feather reference names,
// as a map holding every column, reading only the record batch that
// holds it (the file's MetaBatchRows; a file without it, from another
// tool, is scanned from its first batch). Batches read are kept in the
// Store's Cache. Errors: ErrForbidden (Authorize, before any read or
// Cache lookup); ErrBadRef (also for a JSON reference: load it
// with Resolve); ErrLost for a missing or undecodable object; an i out of
// range (ErrFormat, not lost).
func (s *Store) Row(ctx context.Context, v any, i int) (any, error) {
	ref, err := s.ParseRef(v)
	if err != nil {
		return nil, err
	}
	if err := AuthorizeRef(ctx, ref); err != nil {
		return nil, err
	}
	if ref.Format != FormatFeather {
		return nil, fmt.Errorf("%w: %s: rows are read by index from Feather tables only", ErrBadRef, ref.Name())
	}
	if i < 0 {
		return nil, fmt.Errorf("%w: %s: row %d", ErrFormat, ref.Name(), i)
	}
	info, err := s.tableInfo(ctx, ref)
	if err != nil {
		return nil, err
	}
	if int64(i) >= info.rows {
		return nil, fmt.Errorf("%w: %s has %d rows, not row %d", ErrFormat, ref.Name(), info.rows, i)
	}
	b, at := 0, i
	if info.batchRows > 0 {
		b, at = i/info.batchRows, i%info.batchRows
	} else {
		for b = 0; b < len(info.counts) && at >= int(info.counts[b]); b++ {
			at -= int(info.counts[b])
		}
	}
	rows, err := s.batch(ctx, ref, b)
	if err != nil {
		return nil, err
	}
	if at >= len(rows) {
		return nil, fmt.Errorf("%w: %s: batch %d has %d rows, not row %d", ErrLost, ref.Name(), b, len(rows), at)
	}
	return rows[at], nil
}

// tableLayout is where a stored table's rows are.
type tableLayout struct {
	rows      int64
	batchRows int
	counts    []int64       // rows per batch, for files without MetaBatchRows
	schema    *arrow.Schema // the file's schema (with its envelope metadata)
}

var (
	layoutMu sync.Mutex
	layouts  = map[string]tableLayout{} // by key#sha256: immutable
)

// tableInfo reads (once per object and process) a table's layout from
// its footer (and, for foreign files, its batches' row counts).
func (s *Store) tableInfo(ctx context.Context, ref Ref) (tableLayout, error) {
	ck := ref.Key + "#" + ref.SHA256
	layoutMu.Lock()
	l, ok := layouts[ck]
	layoutMu.Unlock()
	if ok {
		return l, nil
	}
	fr, closeFn, err := s.fileReader(ctx, ref)
	if err != nil {
		return l, err
	}
	defer closeFn()
	meta, err := metaOf(fr.Schema())
	if err != nil {
		return l, fmt.Errorf("%w: %s: %w", ErrLost, ref.Name(), err)
	}
	l.batchRows, l.schema = meta.batchRows, fr.Schema()
	n := fr.NumRecords()
	switch {
	case n == 0:
	case meta.batchRows > 0:
		last, err := fr.RecordBatch(n - 1)
		if err != nil {
			return l, fmt.Errorf("%w: %s: %v", ErrLost, ref.Name(), err)
		}
		l.rows = int64(meta.batchRows)*int64(n-1) + last.NumRows()
		last.Release()
	default:
		for bi := 0; bi < n; bi++ {
			rec, err := fr.RecordBatch(bi)
			if err != nil {
				return l, fmt.Errorf("%w: %s: %v", ErrLost, ref.Name(), err)
			}
			l.counts = append(l.counts, rec.NumRows())
			l.rows += rec.NumRows()
			rec.Release()
		}
	}
	layoutMu.Lock()
	if len(layouts) > 4096 {
		clear(layouts)
	}
	layouts[ck] = l
	layoutMu.Unlock()
	return l, nil
}

// fileReader opens a random-access reader of a Feather object.
func (s *Store) fileReader(ctx context.Context, ref Ref) (*ipc.FileReader, func(), error) {
	o, _, err := s.openRef(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	fr, err := ipc.NewFileReader(&windowReader{o: o, size: o.Size(), off: -1}, ipc.WithAllocator(arrowMem))
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, nil, lostOr(ref, err)
		}
		return nil, nil, fmt.Errorf("%w: %s: %w: %v", ErrLost, ref.Name(), ErrFormat, err)
	}
	return fr, func() { fr.Close() }, nil
}

// batch returns the rows of record batch b of a stored table (cached).
func (s *Store) batch(ctx context.Context, ref Ref, b int) ([]any, error) {
	ck := ref.Key + "#" + ref.SHA256 + "#batch" + strconv.Itoa(b)
	if s.Cache != nil {
		if v, ok := s.Cache.Get(ck); ok {
			return v.([]any), nil
		}
	}
	fr, closeFn, err := s.fileReader(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	if b >= fr.NumRecords() {
		return nil, fmt.Errorf("%w: %s: no batch %d", ErrLost, ref.Name(), b)
	}
	rec, err := fr.RecordBatch(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: batch %d: %v", ErrLost, ref.Name(), b, err)
	}
	rows, err := batchMaps(make([]any, 0, rec.NumRows()), rec)
	rec.Release()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrLost, ref.Name(), err)
	}
	if s.Cache != nil {
		s.Cache.Put(ck, rows, SizeOf(rows))
	}
	return rows, nil
}

// RowCount returns the rows of the table a reference names: its "rows"
// field when recorded, else read from the file's footer. Only for a
// reader that may load it (ErrForbidden).
func (s *Store) RowCount(ctx context.Context, v any) (int64, error) {
	ref, err := s.ParseRef(v)
	if err != nil {
		return 0, err
	}
	if err := AuthorizeRef(ctx, ref); err != nil {
		return 0, err
	}
	if ref.Rows > 0 || ref.Format != FormatFeather {
		return ref.Rows, nil
	}
	l, err := s.tableInfo(ctx, ref)
	return l.rows, err
}
