package results

// Streamed results: a tool that produces a table (a query's rows, a
// stored table read back) hands it to a Sink batch by batch instead of
// building the whole value. A small table comes back as an ordinary
// value; a large one is streamed into the tier as it arrives and comes
// back as a reference, so no process ever holds it whole.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/noetl/gcpengine/shared/types"
)

// TableMeta says how a streamed table sits in its result.
type TableMeta struct {
	// At is the field of the result holding the table ("" : the result is
	// the table, a list of rows).
	At string
	// Envelope holds the result's other fields (with At; at most 4 KiB of
	// JSON).
	Envelope map[string]any
	// RowsAt names an Envelope field set to the row count at the end.
	RowsAt string
}

// Sink receives one task's table result (Store.NewSink, SinkFrom). Call
// Begin once, Write for every batch, then End (or Abort). Not safe for
// concurrent use.
type Sink struct {
	s     *Store
	ctx   context.Context
	c     types.ResultCoords
	opts  OffloadOptions
	limit int64

	schema *arrow.Schema
	meta   TableMeta
	env    *envelope
	buf    []arrow.RecordBatch
	bytes  int64
	out    *objectOut
	tw     *TableWriter
	done   bool
}

// NewSink returns a sink for a table result of coordinates c: the table
// stays in memory while its record batches hold at most opts' inline
// budget of bytes (Limit < 0: the Store's InlineMax), and is streamed to
// the tier as Feather from then on.
func (s *Store) NewSink(ctx context.Context, c types.ResultCoords, opts OffloadOptions) *Sink {
	limit := int64(opts.Limit)
	if limit < 0 {
		limit = int64(s.InlineMax)
		if limit <= 0 {
			limit = DefaultInlineMax
		}
	}
	return &Sink{s: s, ctx: ctx, c: c, opts: opts, limit: limit}
}

// Begin declares the table's schema and place in the result. Errors: a
// second Begin, an envelope over 4 KiB or not JSON.
func (k *Sink) Begin(schema *arrow.Schema, m TableMeta) error {
	if k.schema != nil || k.done {
		return errors.New("results: sink: Begin called twice")
	}
	if m.At != "" {
		b, err := json.Marshal(m.Envelope)
		if err != nil || len(b) > envelopeMax {
			return fmt.Errorf("results: sink: the envelope of %q must be at most %d bytes of JSON", m.At, envelopeMax)
		}
		env := &envelope{at: m.At, fields: m.Envelope}
		if env.fields == nil {
			env.fields = map[string]any{}
		}
		k.env = env
	}
	k.schema, k.meta = schema, m
	return nil
}

// Write adds a batch (the caller keeps its reference).
func (k *Sink) Write(rec arrow.RecordBatch) error {
	if k.schema == nil || k.done {
		return errors.New("results: sink: Write outside Begin..End")
	}
	if k.tw != nil {
		return k.tw.Write(rec)
	}
	rec.Retain()
	k.buf = append(k.buf, rec)
	k.bytes += recBytes(rec)
	if k.bytes <= k.limit {
		return nil
	}
	return k.spill()
}

// spill opens the object and writes the buffered batches to it.
func (k *Sink) spill() error {
	if k.s.Backend == nil {
		return errors.New("results: sink: Store has no Backend")
	}
	if k.c.ExecutionID == "" || k.c.Step == "" {
		return fmt.Errorf("%w: a sink needs ExecutionID and Step", ErrBadURI)
	}
	out, err := k.s.create(k.ctx, k.c, FormatFeather, ContentTypeFeather, k.opts)
	if err != nil {
		return err
	}
	md := map[string]string{}
	if k.env != nil {
		for i, key := range k.env.metadata().Keys() {
			md[key] = k.env.metadata().Values()[i]
		}
		if k.meta.RowsAt != "" {
			md[MetaRowsAt] = k.meta.RowsAt
		}
	}
	tw, err := NewTableWriter(out, k.schema, WriteOptions{Compression: k.opts.Compression, Metadata: md, BatchRows: k.batchRows()})
	if err != nil {
		out.abort()
		return err
	}
	k.out, k.tw = out, tw
	for _, rec := range k.buf {
		if err := tw.Write(rec); err != nil {
			return err
		}
		rec.Release()
	}
	k.buf, k.bytes = nil, 0
	return nil
}

// batchRows is the rows per record batch of the file: the options' when
// set, else the producer's first batch's row count when it is a batch
// size the file may have (256 to 65536 rows, at most 4 × TargetBatchBytes)
// — a producer that hands batches of one size (the duckdb kind's 8192)
// then has them written as they come, without re-cutting (copying) them —,
// else 0 (about TargetBatchBytes per batch).
func (k *Sink) batchRows() int {
	if k.opts.BatchRows > 0 || len(k.buf) == 0 {
		return k.opts.BatchRows
	}
	first := k.buf[0]
	if n := int(first.NumRows()); n == clampBatchRows(n) && recBytes(first) <= 4*TargetBatchBytes {
		return n
	}
	return 0
}

// End finishes the table and returns the task's result: the value itself
// (rows as maps, in the envelope when At is set) when it stayed small,
// else the reference map of the stored object (as Offload returns it; its
// extracted block holds the row count and columns).
func (k *Sink) End() (any, error) {
	if k.schema == nil || k.done {
		return nil, errors.New("results: sink: End without Begin")
	}
	k.done = true
	if k.tw == nil {
		rows := []any{}
		var err error
		for _, rec := range k.buf {
			if err == nil {
				rows, err = batchMaps(rows, rec)
			}
			rec.Release()
		}
		k.buf = nil
		if err != nil {
			return nil, err
		}
		return k.value(rows), nil
	}
	if err := k.tw.Close(); err != nil {
		k.out.abort()
		return nil, err
	}
	n := k.tw.Rows()
	ref, err := k.out.finish(k.ctx, n)
	if errors.Is(err, ErrExists) {
		// Another delivery of this unit stored the table first; the
		// stream cannot be written again elsewhere, so the result is
		// the object there (once.go).
		same, t, terr := k.s.sameBytes(k.ctx, k.out, n)
		switch {
		case terr != nil:
			return nil, fmt.Errorf("results: adopt %s: %w", k.out.uri, terr)
		case same != nil:
			ref, err = same, nil
		default:
			ref, extracted, err := k.s.adoptTable(k.ctx, k.out, t)
			if err != nil {
				return nil, err
			}
			return map[string]any{RefKey: ref, ExtractedKey: extracted}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	var env map[string]any
	if k.env != nil {
		env = k.env.fields
	}
	return map[string]any{RefKey: ref, ExtractedKey: tableExtracted(n, k.schema, k.meta.At, k.meta.RowsAt, env)}, nil
}

// tableExtracted is the extracted block of a stored table of n rows: its
// row count and column names, or, for a table at field at of a result
// with the other fields env, Extract of those fields (rowsAt set to n)
// and <at>_count.
func tableExtracted(n int64, schema *arrow.Schema, at, rowsAt string, env map[string]any) map[string]any {
	if at == "" {
		cols := make([]any, schema.NumFields())
		for i, f := range schema.Fields() {
			cols[i] = f.Name
		}
		return map[string]any{"rows": n, "columns": cols}
	}
	fields := make(map[string]any, len(env)+1)
	for key, v := range env {
		fields[key] = v
	}
	if rowsAt != "" {
		fields[rowsAt] = n
	}
	extracted := Extract(fields)
	extracted[at+"_count"] = n
	return extracted
}

// value assembles the result around rows.
func (k *Sink) value(rows []any) any {
	if k.env == nil {
		return rows
	}
	return fileMeta{at: k.meta.At, env: k.env.fields, rowsAt: k.meta.RowsAt}.value(rows)
}

// Abort discards the table (an object being written is abandoned).
func (k *Sink) Abort() {
	k.done = true
	for _, rec := range k.buf {
		rec.Release()
	}
	k.buf = nil
	if k.tw != nil {
		k.tw.Abort()
		k.out.abort()
	}
}

// recBytes is the size of a batch's buffers.
func recBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, c := range rec.Columns() {
		walk(c.Data())
	}
	return n
}

type sinkKey struct{}

// SinkFactory makes the sink of one task's table result.
type SinkFactory func() *Sink

// WithSinks returns ctx carrying f: tools that produce tables (SinkFrom)
// stream them through the sinks it makes instead of building them whole.
func WithSinks(ctx context.Context, f SinkFactory) context.Context {
	return context.WithValue(ctx, sinkKey{}, f)
}

// SinkFrom returns a new sink from ctx's factory (false: none; the tool
// builds its result as a value).
func SinkFrom(ctx context.Context) (*Sink, bool) {
	f, ok := ctx.Value(sinkKey{}).(SinkFactory)
	if !ok || f == nil {
		return nil, false
	}
	k := f()
	return k, k != nil
}

// Destination is where a sink streams its table once it spills: the
// object's coordinates (tenant and project filled in), physical key,
// cell and bucket ("" for a backend without one), and the result's store
// settings. The control plane signs a write grant for Key from it when a
// runner kind produces the table (shared/runnerclient).
type Destination struct {
	Coords  types.ResultCoords
	Key     string
	Cell    Cell
	Bucket  string
	Options OffloadOptions
	// Locator is the sink's Store's locator (its Cells map included).
	Locator Locator
}

// Destination returns where k streams its table (Destination).
func (k *Sink) Destination() Destination {
	c := k.s.Defaulted(k.c)
	cell, _ := k.s.Place(c)
	return Destination{Coords: c, Key: k.s.PhysicalKey(c, FormatFeather), Cell: cell, Bucket: k.s.BucketOf(cell.Name),
		Options: k.opts, Locator: k.s.Locator}
}

type storeKey struct{}

// WithStore returns ctx carrying s: the tier a tool reads stored results
// from for this request only (the runner: a Store over the request's
// grants), in place of the one it was built with (StoreFrom).
func WithStore(ctx context.Context, s *Store) context.Context {
	return context.WithValue(ctx, storeKey{}, s)
}

// StoreFrom returns the Store ctx carries (WithStore), else def.
func StoreFrom(ctx context.Context, def *Store) *Store {
	if s, ok := ctx.Value(storeKey{}).(*Store); ok && s != nil {
		return s
	}
	return def
}
