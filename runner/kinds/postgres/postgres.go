// Package postgres implements the `postgres` task kind (NoETL DSL spec "Tasks" and
// "Outcome envelope"; NoETL canonical v10 retry spec §3.2): SQL against PostgreSQL through pgx v5,
// with one bounded connection pool per distinct DSN, reused across attempts
// and tasks; a connection is reset (DISCARD ALL) each time a task releases
// it, so no session state passes from one task to another.
//
// A SQL error is an error outcome with outcome.pg {code, sqlstate} set to the
// SQLSTATE so that task policies can retry on serialization failures and
// deadlocks (40001, 40P01). The tool never retries itself.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/noetl/gcpengine/runner/kinds/internal/sqlsplit"
	"github.com/noetl/gcpengine/runner/kinds/script"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/egress"
	"github.com/noetl/gcpengine/shared/errs"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools/conf"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults used when Options leaves a field zero.
const (
	// DefaultMaxPools bounds the pool cache; the least recently used idle
	// pool is closed when a new DSN would exceed it.
	DefaultMaxPools = 16
	// DefaultMaxConnsPerPool is each pool's pgxpool MaxConns.
	DefaultMaxConnsPerPool int32 = 4
	// DefaultTimeout bounds one attempt (connect + statements) when the
	// attempt timeout is 0.
	DefaultTimeout = 300 * time.Second
	// DefaultConnectTimeout bounds establishing one connection when the
	// DSN sets no connect_timeout.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxRows caps the rows returned by one statement; the result
	// then carries "truncated": true.
	DefaultMaxRows = 100_000
	// DefaultApplicationName is set as application_name unless the DSN
	// sets one.
	DefaultApplicationName = "noetl-gcpengine"
)

// Options configures the tool. The zero value is usable.
type Options struct {
	// MaxPools replaces DefaultMaxPools when > 0.
	MaxPools int
	// MaxConnsPerPool replaces DefaultMaxConnsPerPool when > 0.
	MaxConnsPerPool int32
	// DefaultTimeout replaces DefaultTimeout when > 0.
	DefaultTimeout time.Duration
	// MaxRows replaces DefaultMaxRows when > 0.
	MaxRows int
	// ApplicationName replaces DefaultApplicationName when non-empty.
	ApplicationName string
	// Credentials resolves an `auth` that names a credential (script.go);
	// nil leaves such an auth unresolved (a config error).
	Credentials credentials.Store
	// Scripts loads the SQL of `script:` blocks (script.go).
	Scripts script.Options
	// Egress is the network policy of connections (the runner's); nil:
	// none (tests).
	Egress *egress.Policy
}

// Tool is the postgres task kind. It is safe for concurrent use. Close
// releases its pools.
type Tool struct {
	opts Options

	mu     sync.Mutex
	pools  map[string]*poolEntry
	closed bool
	// barrier records, per DSN, whether the marker table is usable
	// (barrier.go).
	barrier map[string]bool
}

type poolEntry struct {
	pool     *pgxpool.Pool
	users    int
	lastUsed time.Time
}

// New returns a postgres tool configured by opts. Pools are created lazily,
// on the first task that names a DSN.
func New(opts Options) *Tool {
	if opts.MaxPools <= 0 {
		opts.MaxPools = DefaultMaxPools
	}
	if opts.MaxConnsPerPool <= 0 {
		opts.MaxConnsPerPool = DefaultMaxConnsPerPool
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxRows <= 0 {
		opts.MaxRows = DefaultMaxRows
	}
	if opts.ApplicationName == "" {
		opts.ApplicationName = DefaultApplicationName
	}
	return &Tool{opts: opts, pools: map[string]*poolEntry{}, barrier: map[string]bool{}}
}

// Close closes every pool (waiting for connections in use to be returned).
// Attempts after Close fail with error kind "internal".
func (t *Tool) Close() {
	t.mu.Lock()
	pools := t.pools
	t.pools = map[string]*poolEntry{}
	t.closed = true
	t.mu.Unlock()
	for _, e := range pools {
		e.pool.Close()
	}
}

// Exec executes the task's SQL once (tools.Adapt turns Exec into a
// tools.Tool; timeoutS is the attempt timeout in seconds, 0 = default 300 s).
// Configuration (config; pg_dsn may also come from args):
//
//	connection | dsn   postgres URL or keyword/value DSN (or a mapping as auth)
//	auth               mapping {host, port, user|username, password,
//	                   database|dbname, sslmode, ...}; db_host, db_port,
//	                   db_user, db_password, db_name (also at the top level of
//	                   Config) are accepted too; a string auth is used as a DSN
//	                   when it looks like one, else it is an unresolved
//	                   credential name (config error)
//	pg_dsn             fallback DSN, from Config or Args
//	command | sql | query
//	                   the SQL (required)
//	params             list bound as $1..$n (maps and lists are sent as JSON
//	                   text, so `$1::jsonb` works) or a mapping bound as
//	                   pgx named args (@name)
//
// Several statements separated by ';' (and no params) run as one simple-
// protocol query, which PostgreSQL executes in one implicit transaction.
//
// Results follow the shape NoETL's postgres tool hands a later step
// (noetl/tools/postgres/response.py collapse_results_to_last_command: the
// last statement's result is the task's result; and the Rust tool's
// affected_rows): a statement returning rows gives {"status": "success",
// "rows": [{column: value}], "row_count": N, "columns": [names],
// "statement_count": 1, "command": tag} (values: integers int64,
// float/numeric float64 (integral numerics int64), timestamps RFC 3339,
// dates YYYY-MM-DD, bytea base64, json/jsonb decoded, uuid text, others
// text); any other statement (DML, DDL) gives {"status": "success",
// "row_count": rows affected, "affected_rows": the same, "message":
// "Command executed. N rows affected.", "statement_count": 1, "command":
// tag such as "INSERT 0 5"} (DDL affects 0 rows). Several statements give
// the last statement's result with "statement_count": N ("statements": N
// too) and, beside it, each statement's own result under command_0,
// command_1, ... (statementEntry: NoETL's per-statement results, read as
// {{ step.command_0.rows }}); a single statement has no command_0.
// Errors: SQL errors are kind "postgres" with outcome.pg
// {code, sqlstate}, retryable when the SQLSTATE's code is (SQLStateCode:
// 40001, 40P01, class 08, class 53, 57P01-57P03, 57014 statement timeout,
// class XX); failing to connect is kind "postgres", code 08001, retryable;
// a connection lost mid-query is code 08006, retryable; deadline expiry is
// kind "timeout"; missing/invalid connection settings or SQL are kind
// "config". Messages never contain the password.
func (t *Tool) Exec(ctx context.Context, args, config map[string]any, timeoutS float64) types.Outcome {
	return t.ExecBarrier(ctx, args, config, timeoutS, "", nil)
}

// ExecBarrier is Exec with the side-effect barrier (barrier.go): with a
// non-empty barrier key the task's SQL and a marker row holding its result
// and its MAC under macKey (tools.Request.BarrierMAC) commit in one
// transaction, so a re-run of the same attempt after a crash returns the
// recorded result (Outcome.Extra["adopted"] = true) instead of running the
// SQL again; a row whose MAC does not verify (written by someone else:
// user SQL can write the table) is ignored and replaced. A barrier without
// a MAC key is a config error. SQL that cannot run inside a transaction,
// and databases where the marker table cannot be created, run as Exec
// does.
func (t *Tool) ExecBarrier(ctx context.Context, args, config map[string]any, timeoutS float64, barrier string, macKey []byte) types.Outcome {
	if barrier != "" && len(macKey) < 16 {
		return conf.ConfigError("postgres task: the side-effect barrier %q came without its MAC key (tools.Request.BarrierMAC): an engine bug, the task is not run", barrier)
	}
	var spec toolspec.Postgres
	if err := toolspec.Decode(config, &spec); err != nil {
		return conf.ConfigError("%v", err)
	}
	spec, failed := t.prepare(ctx, spec, timeoutS) // auth: <credential> and script: (script.go)
	if failed != nil {
		return *failed
	}
	dsn, password, err := connString(spec, args)
	if err != nil {
		return conf.ConfigError("postgres task: %s", scrub(err.Error(), password))
	}
	sqlText := spec.Command
	if strings.TrimSpace(sqlText) == "" {
		return conf.ConfigError("postgres task: `command` (the SQL) is required")
	}
	stmts := splitSQL(sqlText)
	if len(stmts) == 0 {
		return conf.ConfigError("postgres task: `command` contains no SQL statement")
	}
	params, named, err := bindParams(spec.Params)
	if err != nil {
		return conf.ConfigError("postgres task: %v", err)
	}
	if (len(params) > 0 || named != nil) && len(stmts) > 1 {
		return conf.ConfigError("postgres task: `params` can only be used with a single statement (got %d statements)", len(stmts))
	}

	timeout := t.opts.DefaultTimeout
	if timeoutS > 0 {
		timeout = time.Duration(timeoutS * float64(time.Second))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	pool, release, err := t.pool(rctx, dsn)
	if err != nil {
		return t.failure(ctx, rctx, err, password)
	}
	defer release()

	qargs := params
	if named != nil {
		qargs = []any{named}
	}
	if barrier != "" && transactional(stmts) && t.barrierReady(rctx, pool, dsn) {
		result, adopted, err := t.runBarrier(rctx, pool, results.AttemptObjectFrom(ctx), macKey, stmts, sqlText, qargs)
		if err != nil {
			return t.failure(ctx, rctx, err, password)
		}
		out := types.Outcome{Status: types.StatusOK, Result: result}
		if adopted {
			out.Extra = map[string]any{"adopted": true}
		}
		return out
	}
	var result map[string]any
	if len(stmts) == 1 {
		result, err = t.query(rctx, pool, stmts[0], qargs)
	} else {
		result, err = t.script(rctx, pool, sqlText)
	}
	if err != nil {
		return t.failure(ctx, rctx, err, password)
	}
	return types.Outcome{Status: types.StatusOK, Result: result}
}

// pool returns the cached pool for dsn (creating it), marked in use until
// release is called.
func (t *Tool) pool(ctx context.Context, dsn string) (*pgxpool.Pool, func(), error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, nil, errClosed
	}
	e, ok := t.pools[dsn]
	if !ok {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, nil, &configError{err}
		}
		// One round trip per statement, parameters sent untyped (text) so
		// the server infers their types from the SQL (a rendered string fits
		// a date or jsonb column), no server-side prepared statements (no
		// "cached plan must not change result type" after DDL, and safe
		// behind transaction-pooling proxies).
		if !strings.Contains(dsn, "default_query_exec_mode") {
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		}
		cfg.MaxConns = t.opts.MaxConnsPerPool
		cfg.MinConns = 0
		cfg.MaxConnIdleTime = 5 * time.Minute
		cfg.HealthCheckPeriod = time.Minute
		if cfg.ConnConfig.ConnectTimeout == 0 {
			cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
		}
		if p := t.opts.Egress; p != nil {
			// pgx hands the host name (not its addresses) to the policy,
			// which resolves, checks every address and dials a checked one;
			// unix sockets are refused.
			cfg.ConnConfig.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
			cfg.ConnConfig.DialFunc = p.DialContext
		}
		if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
			cfg.ConnConfig.RuntimeParams["application_name"] = t.opts.ApplicationName
		}
		// A pooled connection goes back clean: nothing one task leaves in
		// its session reaches the next task, whatever its execution.
		cfg.AfterRelease = resetSession
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, nil, &configError{err}
		}
		e = &poolEntry{pool: p}
		t.pools[dsn] = e
	}
	e.users++
	e.lastUsed = time.Now()
	if !ok {
		t.evictLocked()
	}
	return e.pool, func() {
		t.mu.Lock()
		e.users--
		e.lastUsed = time.Now()
		t.mu.Unlock()
	}, nil
}

// ResetTimeout bounds the reset of a released connection (resetSession).
const ResetTimeout = 5 * time.Second

// resetSession is the pools' AfterRelease hook (pgxpool runs it off the
// releasing task's path, before the connection is idle again): it ends
// everything a task can leave in its database session for the next task
// on the connection, another execution's maybe (docs "Security",
// "Executions are strangers"): DISCARD ALL closes cursors, resets the
// session authorization and every setting (search_path, role,
// statement_timeout, custom settings such as set_config('x.y', …,
// false)), deallocates prepared statements, stops listening, releases
// session advisory locks, drops temporary tables and functions, and
// forgets cached plans and sequence state; pgx's own statement caches
// are cleared with them. A connection that cannot be reset is closed.
// What remains of a custom setting (set_config('x.y', …)) is its name,
// with an empty value: PostgreSQL keeps such a placeholder for the
// session's life and lists it nowhere (docs "Security").
// (pgxpool already closes a connection released inside a transaction or
// mid-query.)
func resetSession(c *pgx.Conn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), ResetTimeout)
	defer cancel()
	if err := c.DeallocateAll(ctx); err != nil {
		return false
	}
	if _, err := c.PgConn().Exec(ctx, "DISCARD ALL").ReadAll(); err != nil {
		return false
	}
	return c.PgConn().TxStatus() == 'I'
}

// evictLocked closes least recently used idle pools while over the bound.
func (t *Tool) evictLocked() {
	for len(t.pools) > t.opts.MaxPools {
		var victim string
		var oldest time.Time
		for k, e := range t.pools {
			if e.users == 0 && (victim == "" || e.lastUsed.Before(oldest)) {
				victim, oldest = k, e.lastUsed
			}
		}
		if victim == "" {
			return // every pool is in use; shrink later
		}
		p := t.pools[victim].pool
		delete(t.pools, victim)
		go p.Close()
	}
}

// PoolCount returns the number of cached pools (for tests and metrics).
func (t *Tool) PoolCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pools)
}

var errClosed = errors.New("postgres tool is closed")

// configError marks a failure caused by the connection settings.
type configError struct{ err error }

// Error implements error.
func (e *configError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *configError) Unwrap() error { return e.err }

// querier runs a statement: a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// query runs one statement with the extended protocol.
func (t *Tool) query(ctx context.Context, q querier, sql string, args []any) (map[string]any, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	tm := rows.Conn().TypeMap()
	var out []any
	truncated := false
	for rows.Next() {
		if len(out) >= t.opts.MaxRows {
			truncated = true
			break
		}
		raw := rows.RawValues()
		row := make(map[string]any, len(fds))
		for i, fd := range fds {
			v, err := decodeValue(tm, fd, raw[i])
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", fd.Name, err)
			}
			row[fd.Name] = v
		}
		out = append(out, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	r := shape(fds, out, rows.CommandTag(), truncated)
	r["statement_count"] = int64(1)
	return r, nil
}

// commandKey is the key of statement i's entry in a result: command_0,
// command_1, ... (statementEntry).
func commandKey(i int) string { return "command_" + strconv.Itoa(i) }

// statementEntry is one statement's entry of a result, beside the
// summary (the last statement's result): NoETL's postgres executor keys
// each statement's result by command_<i> (noetl/tools/postgres/
// execution.py, execute_sql_statements_async; the task's data until
// noetl/noetl b2fd0519), which playbooks read as
// {{ step.command_0.rows }}: a statement returning rows gives {status:
// success, rows, row_count, columns}, any other {status: success,
// row_count, message: "Command executed. N rows affected."}. r is the
// statement's shape (shape).
func statementEntry(r map[string]any) map[string]any {
	e := map[string]any{"status": "success", "row_count": r["row_count"]}
	if rows, ok := r["rows"]; ok {
		e["rows"], e["columns"] = rows, r["columns"]
		if r["truncated"] == true {
			e["truncated"] = true
		}
		return e
	}
	e["message"] = fmt.Sprintf("Command executed. %v rows affected.", r["row_count"])
	return e
}

// script runs several statements as one simple-protocol query (one implicit
// transaction) and returns the last statement's result.
func (t *Tool) script(ctx context.Context, pool *pgxpool.Pool, sql string) (map[string]any, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	return t.scriptOn(ctx, conn.Conn(), sql)
}

// scriptOn runs sql as one simple-protocol query on conn (inside the
// connection's transaction, if one is open).
func (t *Tool) scriptOn(ctx context.Context, conn *pgx.Conn, sql string) (map[string]any, error) {
	tm := conn.TypeMap()
	mrr := conn.PgConn().Exec(ctx, sql)
	var last map[string]any
	var entries []map[string]any
	n := 0
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		fds := rr.FieldDescriptions()
		var out []any
		truncated := false
		var decErr error
		for rr.NextRow() {
			if len(out) >= t.opts.MaxRows {
				truncated = true
				continue // drain
			}
			if decErr != nil {
				continue
			}
			raw := rr.Values()
			row := make(map[string]any, len(fds))
			for i, fd := range fds {
				v, err := decodeValue(tm, fd, raw[i])
				if err != nil {
					decErr = fmt.Errorf("statement %d, column %q: %w", n+1, fd.Name, err)
					break
				}
				row[fd.Name] = v
			}
			out = append(out, row)
		}
		tag, err := rr.Close()
		if err != nil {
			mrr.Close()
			return nil, err
		}
		if decErr != nil {
			mrr.Close()
			return nil, decErr
		}
		n++
		last = shape(fds, out, tag, truncated)
		entries = append(entries, statementEntry(last))
	}
	if err := mrr.Close(); err != nil {
		return nil, err
	}
	if last == nil {
		last = map[string]any{"status": "success", "row_count": int64(0), "affected_rows": int64(0),
			"message": "No SQL statements executed", "command": ""}
	}
	last["statements"] = int64(n)
	last["statement_count"] = int64(n)
	for i, e := range entries {
		last[commandKey(i)] = e
	}
	return last, nil
}

// shape builds the result of one statement.
func shape(fds []pgconn.FieldDescription, rows []any, tag pgconn.CommandTag, truncated bool) map[string]any {
	if len(fds) == 0 {
		n := tag.RowsAffected()
		return map[string]any{"status": "success", "row_count": n, "affected_rows": n,
			"message": fmt.Sprintf("Command executed. %d rows affected.", n), "command": tag.String()}
	}
	cols := make([]any, len(fds))
	for i, fd := range fds {
		cols[i] = fd.Name
	}
	if rows == nil {
		rows = []any{}
	}
	r := map[string]any{
		"status":    "success",
		"rows":      rows,
		"row_count": int64(len(rows)),
		"columns":   cols,
		"command":   tag.String(),
	}
	if truncated {
		r["truncated"] = true
	}
	return r
}

// bindParams converts Config["params"]: a list to positional args (maps and
// lists as JSON text, json.Number to int64/float64), a mapping to
// pgx.NamedArgs.
func bindParams(p any) ([]any, pgx.NamedArgs, error) {
	switch x := p.(type) {
	case nil:
		return nil, nil, nil
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			a, err := bindValue(v)
			if err != nil {
				return nil, nil, fmt.Errorf("params[%d]: %v", i, err)
			}
			out[i] = a
		}
		return out, nil, nil
	case map[string]any:
		named := make(pgx.NamedArgs, len(x))
		for k, v := range x {
			a, err := bindValue(v)
			if err != nil {
				return nil, nil, fmt.Errorf("params.%s: %v", k, err)
			}
			named[k] = a
		}
		return nil, named, nil
	default:
		a, err := bindValue(x)
		if err != nil {
			return nil, nil, fmt.Errorf("params: %v", err)
		}
		return []any{a}, nil, nil
	}
}

func bindValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any, []any, map[string]string, []map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	case json.Number:
		n, _ := jsonx.Number(x)
		return n, nil
	case int:
		return int64(x), nil
	default:
		return v, nil
	}
}

// failure classifies an error from connecting or executing.
func (t *Tool) failure(parent, rctx context.Context, err error, password string) types.Outcome {
	msg := scrub(err.Error(), password)
	var cfgErr *configError
	if errors.As(err, &cfgErr) {
		return conf.ConfigError("postgres task: invalid connection settings: %s", msg)
	}
	if errors.Is(err, errClosed) {
		return conf.Fail(types.ErrKindInternal, true, "postgres task: %s", msg)
	}
	if egress.IsRefused(err) {
		return conf.Fail(types.ErrKindForbiddenAddress, false, "postgres task: %s", msg)
	}
	var bt *errBarrierTampered
	if errors.As(err, &bt) {
		return conf.ConfigError("postgres task: %s", msg)
	}
	var br *errBarrierResult
	if errors.As(err, &br) {
		return conf.Fail(types.ErrKindResultLost, false, "postgres task: %s", msg)
	}
	if errors.Is(err, results.ErrQuota) {
		return conf.Fail(types.ErrKindLimit, false, "postgres task: %s", msg)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		m := pgErr.Error()
		if pgErr.Detail != "" {
			m += "; detail: " + pgErr.Detail
		}
		if pgErr.Hint != "" {
			m += "; hint: " + pgErr.Hint
		}
		o := conf.Fail(types.ErrKindPostgres, retryableSQLState(pgErr.Code), "%s", scrub(m, password))
		o.PG = &types.PGOutcome{Code: pgErr.Code, SQLState: pgErr.Code}
		return o
	}
	if errors.Is(parent.Err(), context.Canceled) {
		return conf.Fail(types.ErrKindCanceled, true, "postgres task canceled: %s", msg)
	}
	if rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return conf.Fail(types.ErrKindTimeout, true, "postgres task timeout: %s", msg)
	}
	code := "08006" // connection_failure
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		code = "08001" // sqlclient_unable_to_establish_sqlconnection
	}
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || isConnLost(err) {
		o := conf.Fail(types.ErrKindPostgres, true, "postgres task: connection error: %s", msg)
		o.PG = &types.PGOutcome{Code: code, SQLState: code}
		return o
	}
	// Client-side failures (encoding a parameter, decoding a value, ...).
	return conf.Fail(types.ErrKindPostgres, false, "postgres task: %s", msg)
}

func isConnLost(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unexpected EOF") || strings.Contains(s, "conn closed") ||
		strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}

// SQLStateCode returns the code of an SQLSTATE (PostgreSQL Appendix A,
// by class): the engine's one error taxonomy for PostgreSQL's errors.
//
//	08 connection exception, 57P01-57P03 (shutdown, crash, starting)
//	                                       Unavailable
//	53 insufficient resources              ResourceExhausted
//	40001 serialization failure, 40P01 deadlock
//	                                       FailedPrecondition (contention)
//	57014 query canceled (statement_timeout)
//	                                       DeadlineExceeded
//	23505 unique violation                 AlreadyExists
//	28 invalid authorization, 42501 insufficient privilege
//	                                       PermissionDenied
//	3D000 database, 3F000 schema, 42P01 table, 42703 column, 42883
//	function does not exist                NotFound
//	0A feature not supported               Unimplemented
//	XX internal error                      Internal
//	anything else (syntax, data, other constraints, RAISE)
//	                                       InvalidArgument: the statement
//	                                       fails the same way again
func SQLStateCode(code string) errs.Code {
	switch code {
	case "40001", "40P01":
		return errs.FailedPrecondition
	case "57P01", "57P02", "57P03":
		return errs.Unavailable
	case "57014":
		return errs.DeadlineExceeded
	case "23505":
		return errs.AlreadyExists
	case "42501":
		return errs.PermissionDenied
	case "3D000", "3F000", "42P01", "42703", "42883":
		return errs.NotFound
	}
	switch {
	case strings.HasPrefix(code, "08"):
		return errs.Unavailable
	case strings.HasPrefix(code, "53"):
		return errs.ResourceExhausted
	case strings.HasPrefix(code, "28"):
		return errs.PermissionDenied
	case strings.HasPrefix(code, "0A"):
		return errs.Unimplemented
	case strings.HasPrefix(code, "XX"):
		return errs.Internal
	}
	return errs.InvalidArgument
}

// retryableSQLState reports whether an SQLSTATE denotes a transient
// failure: its code's retry policy (errs.PolicyOf).
func retryableSQLState(code string) bool { return errs.PolicyOf(SQLStateCode(code)).Retry }

// scrub replaces the password in s.
func scrub(s, password string) string {
	if password == "" {
		return s
	}
	s = strings.ReplaceAll(s, password, "********")
	if esc := url.QueryEscape(password); esc != password {
		s = strings.ReplaceAll(s, esc, "********")
	}
	if esc := url.PathEscape(password); esc != password {
		s = strings.ReplaceAll(s, esc, "********")
	}
	return s
}

// connString resolves the DSN and its password (for scrubbing) from the
// task's spec, in order: connection (dsn, connection_string), auth, the
// host/port/database/user/password keys (db_* spellings), then the
// args' db_* keys and pg_dsn.
func connString(spec toolspec.Postgres, args map[string]any) (dsn, password string, err error) {
	if v := spec.Connection; v != nil {
		if m, isMap := conf.Map(v); isMap {
			return dsnFromMap(m)
		}
		if s, isStr := v.(string); isStr && strings.TrimSpace(s) != "" {
			return s, passwordOf(s), nil
		}
		return "", "", fmt.Errorf("`connection` must be a DSN string or a mapping, got %T", v)
	}
	if v := spec.Auth; v != nil {
		switch a := v.(type) {
		case string:
			if looksLikeDSN(a) {
				return a, passwordOf(a), nil
			}
			return "", "", fmt.Errorf("`auth: %s` is a credential name that was not resolved; the worker must resolve it (keychain) into a mapping {host, port, user, password, database}", a)
		default:
			m, isMap := conf.Map(v)
			if !isMap {
				return "", "", fmt.Errorf("`auth` must be a mapping {host, port, user, password, database}, got %T", v)
			}
			if inner, ok := conf.Lookup(m, "dsn", "connection", "connection_string"); ok {
				if s, isStr := inner.(string); isStr && s != "" {
					return s, passwordOf(s), nil
				}
			}
			return dsnFromMap(m)
		}
	}
	if spec.Host != "" || spec.Database != "" || spec.User != "" {
		return dsnFromMap(map[string]any{"host": spec.Host, "port": spec.Port, "dbname": spec.Database, "user": spec.User,
			"password": spec.Password, "search_path": spec.Schema, "sslmode": spec.SSLMode})
	}
	if _, ok := conf.Lookup(args, "db_host", "db_name", "db_user"); ok {
		// NoETL's postgres executor reads the connection fields from the
		// task's with: block (task_with, noetl/tools/postgres/auth.py
		// validate_and_render_connection_params), which Load turns into
		// the task's input.
		return dsnFromMap(args)
	}
	if s, ok := conf.String(args, "pg_dsn"); ok {
		return s, passwordOf(s), nil
	}
	return "", "", errors.New("no connection: set `connection` (a postgres URL or DSN), `auth` {host, port, user, password, database}, or pg_dsn")
}

func looksLikeDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") || strings.Contains(s, "=")
}

// passwordOf extracts the password of a DSN (URL or keyword form) so that
// it can be scrubbed from messages.
func passwordOf(dsn string) string {
	if cfg, err := pgconn.ParseConfig(dsn); err == nil {
		return cfg.Password
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		p, _ := u.User.Password()
		return p
	}
	return ""
}

// dsnKeys maps accepted auth keys to libpq keywords; the first key present
// for a keyword wins.
var dsnKeys = []struct {
	keyword string
	keys    []string
}{
	{"host", []string{"host", "db_host", "hostname", "hostaddr"}},
	{"port", []string{"port", "db_port"}},
	{"user", []string{"user", "username", "db_user", "db_username"}},
	{"password", []string{"password", "db_password"}},
	{"dbname", []string{"database", "dbname", "db_name", "db", "db_database"}},
	{"sslmode", []string{"sslmode", "ssl_mode", "db_sslmode"}},
	{"sslrootcert", []string{"sslrootcert"}},
	{"sslcert", []string{"sslcert"}},
	{"sslkey", []string{"sslkey"}},
	{"connect_timeout", []string{"connect_timeout"}},
	{"application_name", []string{"application_name"}},
	{"options", []string{"options"}},
	{"search_path", []string{"search_path", "schema"}},
}

// dsnFromMap builds a keyword/value DSN from an auth mapping.
func dsnFromMap(m map[string]any) (dsn, password string, err error) {
	var parts []string
	for _, k := range dsnKeys {
		v, ok := conf.String(m, k.keys...)
		if !ok {
			continue
		}
		if k.keyword == "password" {
			password = v
		}
		parts = append(parts, k.keyword+"="+quoteDSN(v))
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "", "", fmt.Errorf("connection mapping has none of host, port, user, password, database (keys: %s)", strings.Join(keys, ", "))
	}
	return strings.Join(parts, " "), password, nil
}

func quoteDSN(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(v) + "'"
}

// splitSQL splits a script on top-level semicolons (sqlsplit.Split): it
// decides between the single-statement path (extended protocol, params
// allowed) and the script path; the server parses the script itself.
func splitSQL(s string) []string { return sqlsplit.Split(s) }
