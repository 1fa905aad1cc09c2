package transfer

import (
	"context"
	"errors"
	"sort"

	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/runner/kinds/postgres"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/types"
)

// sink is the target side: it opens its writer on the first batch (when
// the columns are known), maps records to rows and commits at the end.
type sink struct {
	t      *Tool
	p      plan
	pgEnd  postgres.Endpoint
	pg     *postgres.Writer
	dk     *duckdb.Writer
	db     string
	cols   []string // target columns
	fields []string // source field of each target column
	opened bool
	// An s3 target: the object's format, its writer, and the put's result.
	format string
	obj    *objectWriter
	put    map[string]any
}

// sinkError marks an error of the target side.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

// openSink checks the target's dependencies and connection settings
// before anything is read from the source.
func (t *Tool) openSink(rctx, parent context.Context, p plan) (*sink, *types.Outcome) {
	s := &sink{t: t, p: p}
	switch p.dstType {
	case "postgres":
		if t.opts.Postgres == nil {
			o := conf.ConfigError("transfer task: the postgres kind is not available")
			return nil, &o
		}
		e, o := t.opts.Postgres.NewEndpoint(rctx, p.target)
		if o != nil {
			x := prefix(*o, "transfer target")
			return nil, &x
		}
		s.pgEnd = e
	case "duckdb":
		if t.opts.DuckDB == nil {
			o := conf.ConfigError("transfer task: the duckdb kind is not available")
			return nil, &o
		}
		s.db = duckdbPath(p.target)
		if s.db == duckdb.MemoryDatabase {
			o := conf.ConfigError("transfer task: target.database must be a DuckDB file (an in-memory database ends with the task)")
			return nil, &o
		}
	case "s3":
		if t.opts.S3 == nil {
			o := conf.ConfigError("transfer task: the s3 kind is not available")
			return nil, &o
		}
		s.format = p.format
	}
	for _, m := range p.mapping {
		s.cols = append(s.cols, m[0])
		s.fields = append(s.fields, m[1])
	}
	return s, nil
}

// ensure opens the writer once the source columns are known (srcCols nil
// at the end of an empty source: the writer opens only when a mapping
// names the columns, so that replace still empties the table).
func (s *sink) ensure(ctx context.Context, srcCols []string) error {
	if s.opened {
		return nil
	}
	if s.cols == nil {
		if len(srcCols) == 0 {
			return nil
		}
		s.cols = append([]string(nil), srcCols...)
		s.fields = s.cols
	}
	var err error
	switch s.p.dstType {
	case "postgres":
		s.pg, err = s.t.opts.Postgres.OpenWriter(ctx, s.pgEnd, s.p.table, s.cols, postgres.WriteMode(s.p.mode), s.p.key)
	case "duckdb":
		s.dk, err = s.t.opts.DuckDB.OpenWriter(ctx, s.db, s.p.table, s.cols, duckdb.WriteMode(s.p.mode))
	case "s3":
		s.obj, err = newObjectWriter(ctx, s.format, s.cols)
	}
	if err != nil {
		return &sinkError{err}
	}
	s.opened = true
	return nil
}

// project maps records to rows in target column order.
func (s *sink) project(recs []map[string]any) [][]any {
	out := make([][]any, len(recs))
	for i, r := range recs {
		row := make([]any, len(s.fields))
		for j, f := range s.fields {
			row[j] = lookupPath(r, f)
		}
		out[i] = row
	}
	return out
}

func (s *sink) write(ctx context.Context, rows [][]any) error {
	var err error
	switch {
	case s.pg != nil:
		err = s.pg.Write(ctx, rows)
	case s.dk != nil:
		err = s.dk.Write(ctx, rows)
	case s.obj != nil:
		err = s.obj.write(rows)
	}
	if err != nil {
		return &sinkError{err}
	}
	return nil
}

func (s *sink) commit(ctx context.Context) error {
	var err error
	switch {
	case s.pg != nil:
		err = s.pg.Commit(ctx)
	case s.dk != nil:
		err = s.dk.Commit()
	case s.p.dstType == "s3":
		err = s.putObject(ctx)
	}
	if err != nil {
		return &sinkError{err}
	}
	return nil
}

func (s *sink) close() {
	if s.pg != nil {
		s.pg.Close()
	}
	if s.dk != nil {
		s.dk.Close()
	}
	if s.obj != nil {
		s.obj.close()
	}
}

// columns are the written columns (the table's own names for postgres).
func (s *sink) columns() []string {
	if s.pg != nil {
		return s.pg.Columns()
	}
	return s.cols
}

// classify returns the outcome of a target error (isSink false for other
// errors).
func (s *sink) classify(parent, rctx context.Context, err error) (types.Outcome, bool) {
	var se *sinkError
	if !errors.As(err, &se) {
		return types.Outcome{}, false
	}
	var oe *outcomeError
	switch {
	case errors.As(se.err, &oe):
		o := prefix(oe.o, "transfer target")
		o.Result = nil
		return o, true
	case s.p.dstType == "s3" && sandbox.WorkspaceFrom(rctx).Full():
		return prefix(conf.Fail(types.ErrKindLimit, false, "the object being written filled the task's disk (NOETL_SANDBOX_DISK_MB): %v", se.err), "transfer target"), true
	case s.p.dstType == "s3":
		return prefix(conf.Fail(types.ErrKindTransfer, false, "%v", se.err), "transfer target"), true
	}
	switch s.p.dstType {
	case "postgres":
		return prefix(s.t.opts.Postgres.Failure(parent, rctx, s.pgEnd, se.err), "transfer target"), true
	default:
		return prefix(s.t.opts.DuckDB.Failure(parent, rctx, se.err), "transfer target"), true
	}
}

// records turns SQL rows into records keyed by column.
func records(cols []string, rows [][]any) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		m := make(map[string]any, len(cols))
		for j, c := range cols {
			if j < len(r) {
				m[c] = r[j]
			}
		}
		out[i] = m
	}
	return out
}

// recordColumns is the sorted key set of a record (the http source's
// columns when no mapping is given).
func recordColumns(r map[string]any) []string {
	out := make([]string, 0, len(r))
	for k := range r {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
