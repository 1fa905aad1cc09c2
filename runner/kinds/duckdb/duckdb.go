//go:build cgo

package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	duckdbdriver "github.com/duckdb/duckdb-go/v2"

	"github.com/noetl/gcpengine/runner/kinds/internal/sqlsplit"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Available reports whether this build has the DuckDB engine (builds
// without cgo have a stub that fails every task with a config error).
const Available = true

// Tool is the duckdb task kind. It is safe for concurrent use. Close
// releases the database files still open.
type Tool struct {
	opts Options

	mu      sync.Mutex
	files   map[string]*fileDB
	closed  bool
	spill   string // the tool's private spill directory (lazily created)
	spillNo int
	pool    *warmPool // workers started ahead of demand (Options.Warm)
	// retiring counts warm workers whose task has its outcome and whose
	// rooms are being torn down after it (closeAfter); Close waits.
	retiring sync.WaitGroup
	// pre is a warm worker's prepared in-memory database (prepare.go);
	// spent are the ones handed out, closed with the tool.
	pre   *prepared
	spent []*prepared
}

// scope is where a task's SQL may touch files.
type scope struct {
	// base resolves relative database paths.
	base string
	// allowed are the directories of allowed_directories (confined).
	allowed []string
	// temp is the spill directory.
	temp string
	// confined: enable_external_access off, allowed_directories set.
	confined bool
	// shared: a database file of a data root (its handle serves tasks).
	shared bool
}

// fileDB is a database file open while at least one attempt uses it.
type fileDB struct {
	db    *sql.DB
	users int
}

// New returns a duckdb tool configured by opts.
func New(opts Options) *Tool {
	opts.defaults()
	return &Tool{opts: opts, files: map[string]*fileDB{}}
}

// Close closes the open database files. Attempts after Close fail with
// error kind "internal".
func (t *Tool) Close() {
	t.mu.Lock()
	files := t.files
	t.files = map[string]*fileDB{}
	t.closed = true
	spill := t.spill
	pool := t.pool
	t.mu.Unlock()
	pool.close()
	t.retiring.Wait()
	t.closePrepared()
	for _, f := range files {
		_ = f.db.Close()
	}
	if spill != "" {
		_ = os.RemoveAll(spill)
	}
}

// Exec runs the task's SQL once; see the package documentation for the
// keys and the result. timeoutS is the attempt timeout (0: default 300 s).
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.DuckDB
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	return t.execSpec(ctx, cfg, timeoutS)
}

// execSpec is Exec of a decoded configuration: in a worker with
// Options.Sandbox (which runs execSpec itself), else here.
func (t *Tool) execSpec(ctx context.Context, cfg toolspec.DuckDB, timeoutS float64) types.Outcome {
	q, err := parseTask(cfg)
	if err != nil {
		return conf.ConfigError("duckdb task: %v", err)
	}
	if t.opts.Sandbox != nil {
		return t.execInWorker(ctx, cfg, q, timeoutS)
	}
	rctx, cancel := context.WithTimeout(ctx, t.timeout(timeoutS))
	defer cancel()
	sc, err := t.scopeOf(ctx)
	if err != nil {
		return conf.Fail(types.ErrKindInternal, true, "duckdb task: %v", err)
	}
	var res any
	// A query's rows stream through the results tier's sink when the
	// engine offers one (stream.go): no row limit, never held whole. In
	// the runner the sink writes the one object execute granted the
	// attempt (runner/server grants.go); without a grant the rows come
	// back in the response, within the row limit.
	var sink tableSink
	if !q.asArrays {
		sink = sinkFrom(ctx)
	}
	err = t.withConn(rctx, sc, q.database, q.readOnly, func(c *sql.Conn) error {
		var err error
		var m map[string]any
		m, res, err = t.runScript(rctx, c, q.statements, q.params, sink)
		if err == nil && res == nil {
			if q.asArrays {
				arrays(m)
			}
			res = m
		}
		return err
	})
	if err != nil {
		return t.failure(ctx, rctx, err)
	}
	return types.Outcome{Status: types.StatusOK, Result: res}
}

func (t *Tool) timeout(timeoutS float64) time.Duration {
	if timeoutS > 0 {
		return time.Duration(timeoutS * float64(time.Second))
	}
	return t.opts.DefaultTimeout
}

// dsn is the DuckDB connection string of path with the tool's settings.
func (t *Tool) dsn(path string, readOnly bool) (string, error) {
	if strings.ContainsAny(path, "?#\x00") {
		return "", &configError{fmt.Errorf("database path %q may not contain '?', '#' or NUL", path)}
	}
	v := url.Values{}
	v.Set("autoinstall_known_extensions", "false")
	v.Set("autoload_known_extensions", "false")
	v.Set("allow_community_extensions", "false")
	v.Set("allow_unsigned_extensions", "false")
	// Repositories and the extension directory point at a path that does
	// not exist, so that no statement can fetch an extension even by
	// accident; LOAD/INSTALL are also rejected before they run.
	v.Set("custom_extension_repository", noExtensions)
	v.Set("autoinstall_extension_repository", noExtensions)
	v.Set("extension_directory", noExtensions)
	if t.opts.MemoryLimit != "" {
		v.Set("memory_limit", t.opts.MemoryLimit)
	}
	if t.opts.Threads > 0 {
		v.Set("threads", strconv.Itoa(t.opts.Threads))
	}
	if readOnly {
		v.Set("access_mode", "READ_ONLY")
	}
	return path + "?" + v.Encode(), nil
}

// scopeOf is the scope of a task: confined to its workspace and the data
// roots when ctx carries a workspace (the runner), else open with a
// private spill directory.
func (t *Tool) scopeOf(ctx context.Context) (scope, error) {
	if ws := sandbox.WorkspaceFrom(ctx); ws != nil {
		allowed := append([]string{ws.Dir}, t.opts.DataRoots...)
		return scope{base: ws.Dir, allowed: allowed, temp: filepath.Join(ws.Dir, ".duckdb_tmp"), confined: true}, nil
	}
	tmp, err := t.spillDir()
	if err != nil {
		return scope{}, err
	}
	return scope{base: t.opts.BaseDir, temp: tmp}, nil
}

// spillDir returns a new private spill directory (mode 0700) under the
// tool's own, created on first use under Options.TempDir.
func (t *Tool) spillDir() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spill == "" {
		d, err := os.MkdirTemp(t.opts.TempDir, "noetl-duckdb-")
		if err != nil {
			return "", fmt.Errorf("spill directory: %w", err)
		}
		t.spill = d
	}
	t.spillNo++
	return filepath.Join(t.spill, strconv.Itoa(t.spillNo)), nil
}

// quote is a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// settings are the statements that configure a new database of scope sc
// before any task SQL runs, ending with lock_configuration (nothing can
// change them afterwards).
func (t *Tool) settings(sc scope) []string {
	out := []string{"SET temp_directory=" + quote(sc.temp)}
	if t.opts.MaxTempBytes > 0 {
		out = append(out, fmt.Sprintf("SET max_temp_directory_size='%dB'", t.opts.MaxTempBytes))
	}
	if sc.confined {
		dirs := make([]string, len(sc.allowed))
		for i, d := range sc.allowed {
			dirs[i] = quote(strings.TrimSuffix(d, "/") + "/")
		}
		out = append(out, "SET allowed_directories=["+strings.Join(dirs, ", ")+"]", "SET enable_external_access=false")
	}
	return append(out, "SET lock_configuration=true")
}

// connector opens a database of dsn configured for sc (settings run on
// its first connection; the settings are the database's, so later
// connections share them).
func (t *Tool) connector(dsn string, sc scope) (*duckdbdriver.Connector, error) {
	var once sync.Once
	var initErr error
	stmts := t.settings(sc)
	return duckdbdriver.NewConnector(dsn, func(ex driver.ExecerContext) error {
		once.Do(func() {
			for _, s := range stmts {
				if _, err := ex.ExecContext(context.Background(), s, nil); err != nil {
					initErr = fmt.Errorf("configure the database (%s): %w", s, err)
					return
				}
			}
		})
		return initErr
	})
}

// within reports whether path (absolute, its directory resolved) is in
// one of dirs.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		d = filepath.Clean(d)
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// noExtensions is where DuckDB is told extensions live: nowhere.
const noExtensions = "/nonexistent/noetl-duckdb-extensions"

// withConn runs fn on a connection to database: a fresh in-memory database
// for ":memory:" (discarded afterwards; a warm worker's prepared one when
// it was made for sc, prepare.go), else the shared handle of the file
// (opened on first use, closed when its last user is done).
func (t *Tool) withConn(ctx context.Context, sc scope, database string, readOnly bool, fn func(*sql.Conn) error) error {
	var db *sql.DB
	var release func()
	if database == MemoryDatabase {
		if c := t.takePrepared(sc); c != nil {
			return fn(c) // a warm worker's: closed with the tool, after the answer
		}
		dsn, err := t.dsn("", false)
		if err != nil {
			return err
		}
		c, err := t.connector(dsn, sc)
		if err != nil {
			return &configError{err}
		}
		db = sql.OpenDB(c)
		release = func() { _ = db.Close() }
	} else {
		var err error
		db, release, err = t.file(sc, database, readOnly)
		if err != nil {
			return err
		}
	}
	defer release()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

// file returns the shared handle of a database file. A confined task's
// file must be in its workspace (a handle of its own, configured like its
// in-memory databases) or in a data root (a handle shared by tasks,
// configured with the data roots only and a spill directory of the tool).
func (t *Tool) file(sc scope, path string, readOnly bool) (*sql.DB, func(), error) {
	o := t.opts
	o.BaseDir = sc.base
	abs, err := o.resolvePath(path)
	if err != nil {
		return nil, nil, &configError{err}
	}
	if sc.confined {
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil {
			return nil, nil, &configError{fmt.Errorf("database %q: directory %s does not exist", path, filepath.Dir(abs))}
		}
		abs = filepath.Join(dir, filepath.Base(abs))
		if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, nil, &pathError{fmt.Errorf("database %q is a symbolic link", path)}
		}
		switch {
		case within(abs, sc.allowed[:1]):
		case within(abs, t.opts.DataRoots):
			tmp, err := t.spillDir()
			if err != nil {
				return nil, nil, err
			}
			sc = scope{base: sc.base, allowed: t.opts.DataRoots, temp: tmp, confined: true, shared: true}
		default:
			return nil, nil, &pathError{fmt.Errorf("database %q is outside the task's workspace and the data roots (NOETL_RUNNER_DATA_ROOTS)", path)}
		}
	}
	key := abs
	if readOnly {
		key += "\x00ro"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, nil, errClosed
	}
	f, ok := t.files[key]
	if !ok {
		if dir := filepath.Dir(abs); dir != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return nil, nil, &configError{fmt.Errorf("database %q: directory %s does not exist", path, dir)}
			}
		}
		dsn, err := t.dsn(abs, readOnly)
		if err != nil {
			return nil, nil, err
		}
		c, err := t.connector(dsn, sc)
		if err != nil {
			return nil, nil, err
		}
		f = &fileDB{db: sql.OpenDB(c)}
		t.files[key] = f
	}
	f.users++
	return f.db, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		f.users--
		if f.users == 0 && t.files[key] == f {
			delete(t.files, key)
			_ = f.db.Close()
		}
	}, nil
}

// runScript runs the statements in order on c (each prepared, checked and
// executed after the previous one, so that later statements see the
// tables earlier ones create) and returns the last statement's result.
// params bind to the last statement. With a sink, the last statement's
// rows stream through it and its result is returned as streamed (the
// sink's value or reference) instead of as the map.
func (t *Tool) runScript(ctx context.Context, c *sql.Conn, stmts []string, params []driver.NamedValue, sink tableSink) (map[string]any, any, error) {
	var last map[string]any
	var streamed any
	for i, s := range stmts {
		var args []driver.NamedValue
		var k tableSink
		if i == len(stmts)-1 {
			args, k = params, sink
		}
		err := c.Raw(func(dc any) error {
			var env map[string]any
			if len(stmts) > 1 {
				env = map[string]any{"statements": int64(len(stmts))}
			}
			r, v, err := t.runOne(ctx, dc, s, args, k, env)
			last, streamed = r, v
			return err
		})
		if err != nil {
			if len(stmts) > 1 {
				return nil, nil, &stmtError{index: i + 1, err: err}
			}
			return nil, nil, err
		}
	}
	if streamed != nil {
		return nil, streamed, nil
	}
	if len(stmts) > 1 {
		last["statements"] = int64(len(stmts))
	}
	return last, nil, nil
}

// runOne prepares, checks and runs one statement on a raw driver
// connection. With a sink, a statement that returns rows streams them
// through it (stream.go) and returns the sink's result as streamed; env
// holds extra fields of that result.
func (t *Tool) runOne(ctx context.Context, dc any, sqlText string, args []driver.NamedValue, sink tableSink, env map[string]any) (map[string]any, any, error) {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, nil, errors.New("duckdb driver connection cannot prepare statements")
	}
	ds, err := pc.PrepareContext(ctx, sqlText)
	if err != nil {
		return nil, nil, err
	}
	defer ds.Close()
	st, ok := ds.(*duckdbdriver.Stmt)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected statement type %T", ds)
	}
	typ, err := st.StatementType()
	if err != nil {
		return nil, nil, err
	}
	if typ == duckdbdriver.STATEMENT_TYPE_LOAD || typ == duckdbdriver.STATEMENT_TYPE_EXTENSION {
		return nil, nil, &configError{fmt.Errorf("INSTALL/LOAD of DuckDB extensions is disabled (no run-time extension downloads); the built-in json, parquet and icu extensions are always available, and PostgreSQL tables are moved with the transfer kind")}
	}
	rows, err := st.QueryContext(ctx, args)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	if kind := statementKind(typ); sink != nil && returnsRows(kind) {
		v, err := t.stream(rows, kind, sink, env)
		return nil, v, err
	}
	m, err := t.collect(rows, statementKind(typ))
	return m, nil, err
}

// statementKind is the upper-case verb reported as "command".
func statementKind(t duckdbdriver.StmtType) string {
	switch t {
	case duckdbdriver.STATEMENT_TYPE_SELECT:
		return "SELECT"
	case duckdbdriver.STATEMENT_TYPE_INSERT:
		return "INSERT"
	case duckdbdriver.STATEMENT_TYPE_UPDATE:
		return "UPDATE"
	case duckdbdriver.STATEMENT_TYPE_DELETE:
		return "DELETE"
	case duckdbdriver.STATEMENT_TYPE_CREATE, duckdbdriver.STATEMENT_TYPE_CREATE_FUNC:
		return "CREATE"
	case duckdbdriver.STATEMENT_TYPE_DROP:
		return "DROP"
	case duckdbdriver.STATEMENT_TYPE_ALTER:
		return "ALTER"
	case duckdbdriver.STATEMENT_TYPE_COPY:
		return "COPY"
	case duckdbdriver.STATEMENT_TYPE_EXPLAIN:
		return "EXPLAIN"
	case duckdbdriver.STATEMENT_TYPE_PRAGMA:
		return "PRAGMA"
	case duckdbdriver.STATEMENT_TYPE_SET, duckdbdriver.STATEMENT_TYPE_VARIABLE_SET:
		return "SET"
	case duckdbdriver.STATEMENT_TYPE_TRANSACTION:
		return "TRANSACTION"
	case duckdbdriver.STATEMENT_TYPE_ATTACH:
		return "ATTACH"
	case duckdbdriver.STATEMENT_TYPE_DETACH:
		return "DETACH"
	case duckdbdriver.STATEMENT_TYPE_CALL:
		return "CALL"
	case duckdbdriver.STATEMENT_TYPE_EXPORT:
		return "EXPORT"
	}
	return "OTHER"
}

// returnsRows tells statements whose result set is data from those whose
// result is a change count (INSERT/UPDATE/DELETE/COPY answer "Count").
func returnsRows(kind string) bool {
	switch kind {
	case "INSERT", "UPDATE", "DELETE", "COPY", "CREATE", "DROP", "ALTER", "SET", "TRANSACTION", "ATTACH", "DETACH":
		return false
	}
	return true
}

// collect reads a statement's result: rows (as mappings) for queries, the
// changed-row count for commands.
func (t *Tool) collect(rows driver.Rows, kind string) (map[string]any, error) {
	cols := rows.Columns()
	types := make([]string, len(cols))
	if tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		for i := range cols {
			types[i] = tn.ColumnTypeDatabaseTypeName(i)
		}
	}
	dest := make([]driver.Value, len(cols))
	var out []any
	truncated := false
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(out) >= t.opts.MaxRows {
			truncated = true
			continue // drain
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			row[c] = friendly(dest[i], types[i])
		}
		out = append(out, row)
	}
	if !returnsRows(kind) {
		var n int64
		if len(out) == 1 && len(cols) == 1 && cols[0] == "Count" {
			if v, ok := out[0].(map[string]any)["Count"].(int64); ok {
				n = v
			}
		}
		return map[string]any{"row_count": n, "affected_rows": n, "command": kind}, nil
	}
	colList := make([]any, len(cols))
	for i, c := range cols {
		colList[i] = c
	}
	if out == nil {
		out = []any{}
	}
	r := map[string]any{"rows": out, "row_count": int64(len(out)), "columns": colList, "command": kind}
	if truncated {
		r["truncated"] = true
	}
	return r, nil
}

var errClosed = errors.New("duckdb tool is closed")

// configError marks a failure caused by the task's configuration.
type configError struct{ err error }

// pathError is a database path a confined task may not use.
type pathError struct{ err error }

func (e *pathError) Error() string { return e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// stmtError names the statement of a script that failed.
type stmtError struct {
	index int
	err   error
}

func (e *stmtError) Error() string { return fmt.Sprintf("statement %d: %v", e.index, e.err) }
func (e *stmtError) Unwrap() error { return e.err }

// failure classifies an error from opening or executing.
func (t *Tool) failure(parent, rctx context.Context, err error) types.Outcome {
	var rf *remoteFailure
	if errors.As(err, &rf) {
		return t.workerFailure(parent, rctx, rf)
	}
	var ce *configError
	if errors.As(err, &ce) {
		return conf.ConfigError("duckdb task: %v", err)
	}
	if errors.Is(err, errClosed) {
		return conf.Fail(types.ErrKindInternal, true, "duckdb task: %v", err)
	}
	var pe *pathError
	if errors.As(err, &pe) {
		return conf.Fail(types.ErrKindForbiddenPath, false, "duckdb task: %v", err)
	}
	if errors.Is(parent.Err(), context.Canceled) {
		return conf.Fail(types.ErrKindCanceled, true, "duckdb task canceled: %v", err)
	}
	if rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return conf.Fail(types.ErrKindTimeout, true, "duckdb task timeout: %v", err)
	}
	var de *duckdbdriver.Error
	if errors.As(err, &de) {
		switch de.Type {
		case duckdbdriver.ErrorTypeInterrupt:
			return conf.Fail(types.ErrKindTimeout, true, "duckdb task interrupted: %v", err)
		case duckdbdriver.ErrorTypeTransaction:
			return conf.Fail(types.ErrKindDuckDB, true, "duckdb task: %v", err)
		case duckdbdriver.ErrorTypeIO:
			// Another process holding the database file's lock is transient.
			return conf.Fail(types.ErrKindDuckDB, strings.Contains(de.Msg, "lock"), "duckdb task: %v", err)
		case duckdbdriver.ErrorTypeMissingExtension, duckdbdriver.ErrorTypeAutoLoad:
			return conf.ConfigError("duckdb task: %v (run-time extension downloads are disabled)", err)
		case duckdbdriver.ErrorTypePermission:
			return conf.Fail(types.ErrKindForbiddenPath, false, "duckdb task: %v (files only in the task's workspace and NOETL_RUNNER_DATA_ROOTS)", err)
		case duckdbdriver.ErrorTypeOutOfMemory:
			return conf.Fail(types.ErrKindLimit, false, "duckdb task: %v (limit: memory NOETL_DUCKDB_MEMORY_MB, spill NOETL_DUCKDB_MAX_TEMP_MB)", err)
		}
	}
	return conf.Fail(types.ErrKindDuckDB, false, "duckdb task: %v", err)
}

// QueryRows runs query (one or more statements; params bind to the last)
// on database and calls fn with the column names and up to batch rows at a
// time (values as in task results), streaming the last statement's rows.
// It is the duckdb source of the transfer kind. Errors are classified by
// Failure.
func (t *Tool) QueryRows(ctx context.Context, database, query string, params any, batch int, fn func(cols []string, rows [][]any) error) error {
	stmts := sqlsplit.Split(query)
	if len(stmts) == 0 {
		return &configError{errors.New("the query contains no SQL statement")}
	}
	args, err := bindParams(params)
	if err != nil {
		return &configError{err}
	}
	if batch <= 0 {
		batch = 1000
	}
	if t.opts.Sandbox != nil {
		return t.queryInWorker(ctx, database, query, params, batch, fn)
	}
	sc, err := t.scopeOf(ctx)
	if err != nil {
		return err
	}
	return t.withConn(ctx, sc, database, false, func(c *sql.Conn) error {
		if len(stmts) > 1 {
			if _, _, err := t.runScript(ctx, c, stmts[:len(stmts)-1], nil, nil); err != nil {
				return err
			}
		}
		return c.Raw(func(dc any) error {
			pc := dc.(driver.ConnPrepareContext)
			ds, err := pc.PrepareContext(ctx, stmts[len(stmts)-1])
			if err != nil {
				return err
			}
			defer ds.Close()
			st := ds.(*duckdbdriver.Stmt)
			if typ, _ := st.StatementType(); typ == duckdbdriver.STATEMENT_TYPE_LOAD {
				return &configError{errors.New("INSTALL/LOAD of DuckDB extensions is disabled")}
			}
			rows, err := st.QueryContext(ctx, args)
			if err != nil {
				return err
			}
			defer rows.Close()
			cols := rows.Columns()
			types := make([]string, len(cols))
			if tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
				for i := range cols {
					types[i] = tn.ColumnTypeDatabaseTypeName(i)
				}
			}
			dest := make([]driver.Value, len(cols))
			var buf [][]any
			for {
				err := rows.Next(dest)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				row := make([]any, len(cols))
				for i := range cols {
					row[i] = friendly(dest[i], types[i])
				}
				buf = append(buf, row)
				if len(buf) >= batch {
					if err := fn(cols, buf); err != nil {
						return err
					}
					buf = nil
				}
			}
			if len(buf) > 0 {
				return fn(cols, buf)
			}
			if cols != nil {
				return fn(cols, nil)
			}
			return nil
		})
	})
}

// Writer appends rows to one table of a database for the transfer kind;
// Close releases it (Commit first to keep the rows).
type Writer struct {
	remote  *writerWorker // the writer runs in a worker (Options.Sandbox)
	t       *Tool
	conn    *sql.Conn
	tx      *sql.Tx
	release func()
	table   string
	cols    []string
	created bool
}

// WriteMode is how Writer treats the table's existing rows.
type WriteMode string

// Write modes (NoETL transfer `mode`).
const (
	// ModeAppend inserts after the existing rows.
	ModeAppend WriteMode = "append"
	// ModeReplace deletes the existing rows first (in the same
	// transaction).
	ModeReplace WriteMode = "replace"
)

// OpenWriter starts a transaction on database for writing rows of cols to
// table. A table that does not exist is created, with column types
// inferred from the first batch (BIGINT, DOUBLE, BOOLEAN, JSON for
// mappings and lists, VARCHAR otherwise). Errors are classified by
// Failure.
func (t *Tool) OpenWriter(ctx context.Context, database, table string, cols []string, mode WriteMode) (*Writer, error) {
	if strings.TrimSpace(table) == "" {
		return nil, &configError{errors.New("target table is required")}
	}
	if len(cols) == 0 {
		return nil, &configError{errors.New("no columns to write")}
	}
	if database == MemoryDatabase {
		return nil, &configError{errors.New("a transfer target needs a database file (an in-memory database ends with the task)")}
	}
	if t.opts.Sandbox != nil {
		return t.openWriterInWorker(ctx, database, table, cols, mode)
	}
	sc, err := t.scopeOf(ctx)
	if err != nil {
		return nil, err
	}
	db, release, err := t.file(sc, database, false)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		release()
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		release()
		return nil, err
	}
	w := &Writer{t: t, conn: conn, tx: tx, release: release, table: table, cols: cols}
	exists, err := w.tableExists(ctx)
	if err != nil {
		w.Close()
		return nil, err
	}
	w.created = exists
	if exists && mode == ModeReplace {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

func (w *Writer) tableExists(ctx context.Context) (bool, error) {
	schema, name := "", w.table
	if s, n, ok := strings.Cut(w.table, "."); ok {
		schema, name = s, n
	}
	q := "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
	args := []any{strings.Trim(name, `"`)}
	if schema != "" {
		q += " AND table_schema = ?"
		args = append(args, strings.Trim(schema, `"`))
	}
	var n int64
	if err := w.tx.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// Write inserts rows (values in column order). Maps and lists are stored
// as JSON text.
func (w *Writer) Write(ctx context.Context, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if w.remote != nil {
		return w.remote.writeRows(rows)
	}
	if !w.created {
		if _, err := w.tx.ExecContext(ctx, createTableSQL(w.table, w.cols, rows)); err != nil {
			return err
		}
		w.created = true
	}
	quoted := make([]string, len(w.cols))
	for i, c := range w.cols {
		quoted[i] = quoteIdent(c)
	}
	const maxParams = 30000
	per := max(1, maxParams/len(w.cols))
	for start := 0; start < len(rows); start += per {
		end := min(start+per, len(rows))
		var b strings.Builder
		b.WriteString("INSERT INTO " + w.table + " (" + strings.Join(quoted, ", ") + ") VALUES ")
		args := make([]any, 0, (end-start)*len(w.cols))
		ph := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(w.cols)), ", ") + ")"
		for i := start; i < end; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString(ph)
			for j := range w.cols {
				var v any
				if j < len(rows[i]) {
					v = rows[i][j]
				}
				a, err := bindValue(v)
				if err != nil {
					return &configError{fmt.Errorf("row %d, column %s: %v", i, w.cols[j], err)}
				}
				args = append(args, a)
			}
		}
		if _, err := w.tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits the rows written so far.
func (w *Writer) Commit() error {
	if w.remote != nil {
		return w.remote.commit()
	}
	if w.tx == nil {
		return errors.New("writer already finished")
	}
	err := w.tx.Commit()
	w.tx = nil
	return err
}

// Close rolls back anything not committed and releases the database.
func (w *Writer) Close() {
	if w.remote != nil {
		w.remote.close()
		w.remote = nil
		return
	}
	if w.tx != nil {
		_ = w.tx.Rollback()
		w.tx = nil
	}
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
	if w.release != nil {
		w.release()
		w.release = nil
	}
}

// Failure classifies an error of QueryRows, OpenWriter or Writer the way
// Exec does (kind config, timeout, canceled, duckdb, internal).
func (t *Tool) Failure(parent, rctx context.Context, err error) types.Outcome {
	return t.failure(parent, rctx, err)
}

// createTableSQL infers column types from the first non-nil value of each
// column.
func createTableSQL(table string, cols []string, rows [][]any) string {
	defs := make([]string, len(cols))
	for j, c := range cols {
		typ := "VARCHAR"
	scan:
		for _, r := range rows {
			if j >= len(r) || r[j] == nil {
				continue
			}
			switch r[j].(type) {
			case bool:
				typ = "BOOLEAN"
			case int, int8, int16, int32, int64, uint8, uint16, uint32:
				typ = "BIGINT"
			case float32, float64:
				typ = "DOUBLE"
			case map[string]any, []any:
				typ = "JSON"
			}
			break scan
		}
		defs[j] = quoteIdent(c) + " " + typ
	}
	return "CREATE TABLE " + table + " (" + strings.Join(defs, ", ") + ")"
}

// quoteIdent quotes a column name for DuckDB.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// driverValue converts the driver's own value types: DECIMAL (int64 when
// integral, else float64), MAP, INTERVAL, UNION and UUID.
func driverValue(v any) (any, bool) {
	switch x := v.(type) {
	case duckdbdriver.Decimal:
		return decimal(x), true
	case *duckdbdriver.Decimal:
		if x == nil {
			return nil, true
		}
		return decimal(*x), true
	case duckdbdriver.OrderedMap:
		return orderedMap(&x), true
	case *duckdbdriver.OrderedMap:
		if x == nil {
			return nil, true
		}
		return orderedMap(x), true
	case duckdbdriver.Map:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(friendly(k, ""))] = friendly(e, "")
		}
		return out, true
	case duckdbdriver.Interval:
		return map[string]any{"months": int64(x.Months), "days": int64(x.Days), "micros": x.Micros}, true
	case duckdbdriver.Union:
		return friendly(x.Value, ""), true
	case duckdbdriver.UUID:
		return uuidString(x[:]), true
	}
	return nil, false
}

func decimal(d duckdbdriver.Decimal) any {
	if d.Value == nil {
		return nil
	}
	q, r := new(big.Int).QuoRem(d.Value, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil), new(big.Int))
	if r.Sign() == 0 && q.IsInt64() {
		return q.Int64()
	}
	return jsonx.Float(d.Float64())
}

func orderedMap(m *duckdbdriver.OrderedMap) map[string]any {
	keys, vals := m.Keys(), m.Values()
	out := make(map[string]any, len(keys))
	for i, k := range keys {
		out[fmt.Sprint(friendly(k, ""))] = friendly(vals[i], "")
	}
	return out
}

// arrays rewrites a result's rows from mappings to lists in column order
// (as_objects: false).
func arrays(res map[string]any) {
	rows, ok := res["rows"].([]any)
	if !ok {
		return
	}
	cols, _ := res["columns"].([]any)
	for i, r := range rows {
		m := r.(map[string]any)
		list := make([]any, len(cols))
		for j, c := range cols {
			list[j] = m[c.(string)]
		}
		rows[i] = list
	}
}
