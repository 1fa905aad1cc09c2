package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// This file is the PostgreSQL side of the transfer kind: reading a query's
// rows in batches and writing rows into a table, over the tool's pools and
// with its value mapping and error classification.

// Endpoint is a PostgreSQL connection for the transfer kind, from the
// connection keys Exec reads (connection | dsn | auth | db_* | pg_dsn).
type Endpoint struct {
	dsn, password string
}

// NewEndpoint resolves the connection settings of a block that holds a
// postgres connection among keys of its own (a transfer's source or
// target: auth naming a credential is resolved through
// Options.Credentials; connection, dsn, host... as a postgres task reads
// them, toolspec.DecodePart). The error is a classified outcome.
func (t *Tool) NewEndpoint(ctx context.Context, block map[string]any) (Endpoint, *types.Outcome) {
	var spec toolspec.Postgres
	if err := toolspec.DecodePart(block, &spec); err != nil {
		o := conf.ConfigError("%v", err)
		return Endpoint{}, &o
	}
	spec.Script = nil
	spec, failed := t.prepare(ctx, spec, 0)
	if failed != nil {
		return Endpoint{}, failed
	}
	dsn, password, err := connString(spec, nil)
	if err != nil {
		o := conf.ConfigError("postgres: %s", scrub(err.Error(), password))
		return Endpoint{}, &o
	}
	return Endpoint{dsn: dsn, password: password}, nil
}

// Failure classifies an error of QueryRows or a Writer like Exec (SQL
// errors kind "postgres" with outcome.pg, connection errors retryable,
// deadline "timeout"), without the endpoint's password.
func (t *Tool) Failure(parent, rctx context.Context, e Endpoint, err error) types.Outcome {
	return t.failure(parent, rctx, err, e.password)
}

// QueryRows runs one statement (params as in Exec) and calls fn with the
// column names and up to batch rows at a time, values mapped as in Exec
// results, streaming: at most one batch is in memory. fn is called once
// with no rows when the result is empty.
func (t *Tool) QueryRows(ctx context.Context, e Endpoint, query string, params any, batch int, fn func(cols []string, rows [][]any) error) error {
	stmts := splitSQL(query)
	if len(stmts) != 1 {
		return &configError{fmt.Errorf("a transfer source query must be one statement, got %d", len(stmts))}
	}
	args, named, err := bindParams(params)
	if err != nil {
		return &configError{err}
	}
	if named != nil {
		args = []any{named}
	}
	if batch <= 0 {
		batch = 1000
	}
	pool, release, err := t.pool(ctx, e.dsn)
	if err != nil {
		return err
	}
	defer release()
	rows, err := pool.Query(ctx, stmts[0], args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	tm := rows.Conn().TypeMap()
	cols := make([]string, len(fds))
	for i, fd := range fds {
		cols[i] = fd.Name
	}
	var buf [][]any
	sent := false
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]any, len(fds))
		for i, fd := range fds {
			v, err := decodeValue(tm, fd, raw[i])
			if err != nil {
				return fmt.Errorf("column %q: %w", fd.Name, err)
			}
			row[i] = v
		}
		buf = append(buf, row)
		if len(buf) >= batch {
			if err := fn(cols, buf); err != nil {
				return err
			}
			buf, sent = nil, true
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(buf) > 0 || !sent {
		return fn(cols, buf)
	}
	return nil
}

// WriteMode is how a Writer treats the table's rows (NoETL transfer
// `mode`).
type WriteMode string

// Write modes.
const (
	// ModeAppend adds the rows (COPY).
	ModeAppend WriteMode = "append"
	// ModeReplace empties the table first (TRUNCATE, in the transaction).
	ModeReplace WriteMode = "replace"
	// ModeUpsert inserts with ON CONFLICT (key columns) DO UPDATE.
	ModeUpsert WriteMode = "upsert"
)

// Writer loads rows into one existing table inside one transaction:
// append and replace stream every batch into one COPY … FROM STDIN, upsert
// sends multi-row INSERTs … ON CONFLICT. Nothing is visible until Commit,
// and Close without Commit rolls back (a retried transfer never leaves
// half a load behind).
type Writer struct {
	conn    *pgxpool.Conn
	tx      pgx.Tx
	release func()
	table   string
	cols    []string    // actual column names
	udts    []string    // column types (information_schema udt_name)
	upsert  []string    // conflict columns (upsert)
	cp      *copyStream // the COPY of append and replace (nil until the first Write)
	buf     []byte      // copyRows' encoding buffer
}

// OpenWriter begins a transaction for writing columns cols (names matched
// case-insensitively against the table's columns) into table ("name" or
// "schema.name"). The table must exist. mode replace truncates it; upsert
// needs conflict columns: key, or else the table's primary key.
func (t *Tool) OpenWriter(ctx context.Context, e Endpoint, table string, cols []string, mode WriteMode, key []string) (*Writer, error) {
	schema, name, err := splitTable(table)
	if err != nil {
		return nil, &configError{err}
	}
	if len(cols) == 0 {
		return nil, &configError{errors.New("no columns to write")}
	}
	pool, release, err := t.pool(ctx, e.dsn)
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		release()
		return nil, err
	}
	w := &Writer{conn: conn, release: release, table: quoteIdent(schema) + "." + quoteIdent(name)}
	if schema == "" {
		w.table = quoteIdent(name)
	}
	fail := func(err error) (*Writer, error) {
		w.Close()
		return nil, err
	}
	colTypes, pk, err := tableColumns(ctx, conn.Conn(), schema, name)
	if err != nil {
		return fail(err)
	}
	if len(colTypes) == 0 {
		return fail(&configError{fmt.Errorf("target table %s does not exist (create it first, e.g. in a postgres step)", table)})
	}
	for _, c := range cols {
		actual, ok := colTypes.lookup(c)
		if !ok {
			return fail(&configError{fmt.Errorf("target table %s has no column %q", table, c)})
		}
		w.cols = append(w.cols, actual)
		w.udts = append(w.udts, colTypes[actual])
	}
	if mode == ModeUpsert {
		if len(key) == 0 {
			key = pk
		}
		if len(key) == 0 {
			return fail(&configError{fmt.Errorf("upsert into %s needs conflict columns: set `key` (the table has no primary key)", table)})
		}
		for _, k := range key {
			actual, ok := colTypes.lookup(k)
			if !ok {
				return fail(&configError{fmt.Errorf("upsert key column %q is not a column of %s", k, table)})
			}
			w.upsert = append(w.upsert, actual)
		}
	}
	if w.tx, err = conn.Begin(ctx); err != nil {
		return fail(err)
	}
	if mode == ModeReplace {
		if _, err := w.tx.Exec(ctx, "TRUNCATE TABLE "+w.table); err != nil {
			return fail(err)
		}
	}
	return w, nil
}

// Columns returns the table's column names the writer writes, in order.
func (w *Writer) Columns() []string { return w.cols }

// Write writes rows (values in column order): into the writer's COPY …
// FROM STDIN (CSV, one for all calls: a row the server refuses may fail a
// later Write or Commit), or, for upsert, multi-row INSERTs … ON
// CONFLICT. Every
// value is sent as text and read by its column type's input function
// (COPY's, or `$n::text::<type>`), so JSON numbers fit integer and
// numeric columns, strings fit dates and timestamps, and mappings/lists
// fit json/jsonb; lists for array columns become array literals.
func (w *Writer) Write(ctx context.Context, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if len(w.upsert) == 0 {
		return w.copyRows(ctx, rows)
	}
	quoted := make([]string, len(w.cols))
	for i, c := range w.cols {
		quoted[i] = quoteIdent(c)
	}
	suffix := ""
	if len(w.upsert) > 0 {
		var keys, sets []string
		isKey := map[string]bool{}
		for _, k := range w.upsert {
			keys = append(keys, quoteIdent(k))
			isKey[k] = true
		}
		for _, c := range w.cols {
			if !isKey[c] {
				sets = append(sets, quoteIdent(c)+" = EXCLUDED."+quoteIdent(c))
			}
		}
		if len(sets) == 0 {
			suffix = " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO NOTHING"
		} else {
			suffix = " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ")
		}
	}
	const maxParams = 65535
	per := max(1, maxParams/len(w.cols))
	for start := 0; start < len(rows); start += per {
		end := min(start+per, len(rows))
		var b strings.Builder
		b.WriteString("INSERT INTO " + w.table + " (" + strings.Join(quoted, ", ") + ") VALUES ")
		args := make([]any, 0, (end-start)*len(w.cols))
		n := 0
		for i := start; i < end; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for j := range w.cols {
				if j > 0 {
					b.WriteString(", ")
				}
				n++
				b.WriteString("$" + strconv.Itoa(n) + "::text::" + typeRef(w.udts[j]))
				var v any
				if j < len(rows[i]) {
					v = rows[i][j]
				}
				s, err := textValue(v, w.udts[j])
				if err != nil {
					return &configError{fmt.Errorf("row %d, column %s: %v", i, w.cols[j], err)}
				}
				args = append(args, s)
			}
			b.WriteByte(')')
		}
		b.WriteString(suffix)
		if _, err := w.tx.Exec(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// copyStream is the writer's one COPY … FROM STDIN, fed batch by batch
// through a pipe while the server parses what came before.
type copyStream struct {
	pw   *io.PipeWriter
	done chan struct{} // closed when the COPY ended
	err  error         // its outcome (read after done)
}

var (
	// errCopyAborted ends a COPY whose writer was closed without a commit.
	errCopyAborted = errors.New("postgres: transfer aborted")
	// errCopyEnded fails a write after the COPY ended.
	errCopyEnded = errors.New("postgres: the COPY had ended")
)

// copyRows sends rows into the writer's COPY (started by the first call;
// CSV format: a NULL is an empty unquoted field, every other value a
// quoted field, so an empty string stays an empty string). The batch is
// encoded whole first (its size is the caller's chunk), so a value that
// cannot be encoded fails before any of it is sent. A row the server
// refuses fails this call or a later one, or Commit.
func (w *Writer) copyRows(ctx context.Context, rows [][]any) error {
	buf := w.buf[:0]
	for i, row := range rows {
		for j := range w.cols {
			if j > 0 {
				buf = append(buf, ',')
			}
			var v any
			if j < len(row) {
				v = row[j]
			}
			s, err := textValue(v, w.udts[j])
			if err != nil {
				return &configError{fmt.Errorf("row %d, column %s: %v", i, w.cols[j], err)}
			}
			if s == nil {
				continue
			}
			str, _ := s.(string)
			buf = append(buf, '"')
			if strings.IndexByte(str, '"') >= 0 {
				str = strings.ReplaceAll(str, `"`, `""`)
			}
			buf = append(buf, str...)
			buf = append(buf, '"')
		}
		buf = append(buf, '\n')
	}
	w.buf = buf
	if w.cp == nil {
		quoted := make([]string, len(w.cols))
		for i, c := range w.cols {
			quoted[i] = quoteIdent(c)
		}
		sql := "COPY " + w.table + " (" + strings.Join(quoted, ", ") + ") FROM STDIN WITH (FORMAT csv)"
		pr, pw := io.Pipe()
		cs := &copyStream{pw: pw, done: make(chan struct{})}
		conn := w.tx.Conn().PgConn()
		go func() {
			defer close(cs.done)
			_, cs.err = conn.CopyFrom(ctx, pr, sql)
			// Writes after the COPY ended (the server refused a row) fail.
			pr.CloseWithError(cmp.Or(cs.err, errCopyEnded))
		}()
		w.cp = cs
	}
	if _, err := w.cp.pw.Write(buf); err != nil {
		<-w.cp.done
		return cmp.Or(w.cp.err, err)
	}
	return nil
}

// endCopy ends the writer's COPY, if any: the rows are in once it
// returns nil.
func (w *Writer) endCopy() error {
	cs := w.cp
	if cs == nil {
		return nil
	}
	w.cp = nil
	_ = cs.pw.Close()
	<-cs.done
	return cs.err
}

// Commit commits the rows written.
func (w *Writer) Commit(ctx context.Context) error {
	if w.tx == nil {
		return errors.New("writer already finished")
	}
	if err := w.endCopy(); err != nil {
		return err // Close rolls the transaction back
	}
	err := w.tx.Commit(ctx)
	w.tx = nil
	return err
}

// Close rolls back anything not committed and returns the connection.
func (w *Writer) Close() {
	if cs := w.cp; cs != nil { // the COPY is abandoned: the server discards it
		w.cp = nil
		cs.pw.CloseWithError(errCopyAborted)
		<-cs.done
	}
	if w.tx != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = w.tx.Rollback(ctx)
		cancel()
		w.tx = nil
	}
	if w.conn != nil {
		w.conn.Release()
		w.conn = nil
	}
	if w.release != nil {
		w.release()
		w.release = nil
	}
}

// columnTypes maps a table's column names to their udt_name.
type columnTypes map[string]string

// lookup finds a column by exact name, else case-insensitively.
func (c columnTypes) lookup(name string) (string, bool) {
	if _, ok := c[name]; ok {
		return name, true
	}
	for k := range c {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// tableColumns reads the column types and primary key of the table
// (schema "" resolves through the search_path, like the INSERT will).
func tableColumns(ctx context.Context, c *pgx.Conn, schema, name string) (columnTypes, []string, error) {
	target := quoteIdent(name)
	if schema != "" {
		target = quoteIdent(schema) + "." + target
	}
	rows, err := c.Query(ctx, `SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
	      WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, target)
	if err != nil {
		return nil, nil, err
	}
	out := columnTypes{}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			rows.Close()
			return nil, nil, err
		}
		out[col] = typ
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	var pk []string
	prows, err := c.Query(ctx, `SELECT a.attname FROM pg_index i
	       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
	      WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, target)
	if err != nil {
		return nil, nil, err
	}
	for prows.Next() {
		var col string
		if err := prows.Scan(&col); err != nil {
			prows.Close()
			return nil, nil, err
		}
		pk = append(pk, col)
	}
	prows.Close()
	return out, pk, prows.Err()
}

// splitTable splits "schema.name" (either part may be double-quoted).
func splitTable(table string) (schema, name string, err error) {
	table = strings.TrimSpace(table)
	if table == "" {
		return "", "", errors.New("target table is required")
	}
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return "", "", fmt.Errorf("target table %q: want name or schema.name", table)
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, `"`) && strings.HasSuffix(p, `"`) && len(p) >= 2 {
			p = strings.ReplaceAll(p[1:len(p)-1], `""`, `"`)
		} else {
			p = strings.ToLower(p)
		}
		if p == "" {
			return "", "", fmt.Errorf("target table %q: empty name", table)
		}
		parts[i] = p
	}
	if len(parts) == 2 {
		return parts[0], parts[1], nil
	}
	return "", parts[0], nil
}

// quoteIdent quotes an identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// typeRef is a type name usable after `::` (array types "_int4" →
// "int4[]"; names needing quotes are quoted).
func typeRef(udt string) string {
	if base, ok := strings.CutPrefix(udt, "_"); ok {
		return typeRef(base) + "[]"
	}
	for _, r := range udt {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return quoteIdent(udt)
		}
	}
	return udt
}

// textValue renders v as the text a `::text::<udt>` cast parses: nil is
// NULL; strings as is; integers and floats in decimal; booleans
// true/false; lists for array columns as array literals; other mappings
// and lists as JSON.
func textValue(v any, udt string) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a number", x)
		}
	case []any:
		if strings.HasPrefix(udt, "_") {
			return arrayLiteral(x)
		}
		b, err := json.Marshal(x)
		return string(b), err
	case map[string]any:
		b, err := json.Marshal(x)
		return string(b), err
	}
	return conf.Stringify(v), nil
}

// arrayLiteral renders a list as a PostgreSQL array literal.
func arrayLiteral(list []any) (string, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		switch x := e.(type) {
		case nil:
			b.WriteString("NULL")
		case []any:
			s, err := arrayLiteral(x)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		default:
			s, err := textValue(x, "")
			if err != nil {
				return "", err
			}
			str, _ := s.(string)
			b.WriteByte('"')
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(str))
			b.WriteByte('"')
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}
