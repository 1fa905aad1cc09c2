package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// BarrierTable is the table, in the task's database (its default schema),
// where the side-effect barrier records each barriered attempt's result
// (seed 004 §4.4): key text primary key (execution, unit, task position,
// attempt, page), result jsonb, created_at timestamptz. Rows older than
// BarrierRetention are deleted now and then.
const BarrierTable = "noetl_task_barrier"

// BarrierRetention is how long a barrier row is kept (a re-run of an
// attempt comes within the execution's lifetime; Cloud Tasks gives up on a
// unit after its retries).
const BarrierRetention = "7 days"

// nonTransactional matches statements PostgreSQL refuses inside a
// transaction block, and explicit transaction control (the task's own
// transaction): such SQL runs without the barrier.
var nonTransactional = regexp.MustCompile(`(?is)^\s*(begin|start\s+transaction|commit|end|rollback|abort|savepoint|release|prepare\s+transaction|vacuum|cluster|create\s+database|drop\s+database|alter\s+system|create\s+tablespace|drop\s+tablespace|reindex\s+.*concurrently|create\s+(unique\s+)?index\s+concurrently|drop\s+index\s+concurrently|refresh\s+materialized\s+view\s+concurrently)\b`)

// transactional reports whether every statement can run inside one
// transaction block.
func transactional(stmts []string) bool {
	for _, s := range stmts {
		if nonTransactional.MatchString(stripComments(s)) {
			return false
		}
	}
	return true
}

// stripComments drops leading SQL comments (-- and /* */) of a statement.
func stripComments(s string) string {
	for {
		s = strings.TrimSpace(s)
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return ""
			}
			s = s[i+2:]
		default:
			return s
		}
	}
}

// barrierReady creates the barrier table in dsn's database once per tool
// (per DSN) and reports whether it is usable; a database where it cannot
// be created (no CREATE privilege, a read-only replica) runs tasks
// without the barrier, at least once as before.
func (t *Tool) barrierReady(ctx context.Context, pool *pgxpool.Pool, dsn string) bool {
	t.mu.Lock()
	ok, known := t.barrier[dsn]
	t.mu.Unlock()
	if known {
		return ok
	}
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+BarrierTable+` (key text PRIMARY KEY, result jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07") {
		err = nil // created concurrently by another instance
	}
	if err != nil && ctx.Err() != nil {
		return false // undecided: try again on the next task
	}
	ok = err == nil
	if ok {
		// Housekeeping, best effort.
		_, _ = pool.Exec(ctx, `DELETE FROM `+BarrierTable+` WHERE created_at < now() - interval '`+BarrierRetention+`'`)
	}
	t.mu.Lock()
	t.barrier[dsn] = ok
	t.mu.Unlock()
	return ok
}

// runBarrier runs the statements and records their result under key in
// one transaction. When key is recorded already (the attempt committed
// before its process died, or a concurrent run of it committed first) it
// returns that result with adopted true and leaves the database as it was.
func (t *Tool) runBarrier(ctx context.Context, pool *pgxpool.Pool, key string, stmts []string, sqlText string, args []any) (map[string]any, bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Release()
	if res, found, err := recorded(ctx, conn, key); err != nil || found {
		return res, found, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var result map[string]any
	if len(stmts) == 1 {
		result, err = t.query(ctx, tx, stmts[0], args)
	} else {
		result, err = t.scriptOn(ctx, conn.Conn(), sqlText)
	}
	if err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil, false, err
	}
	// The marker's insert waits for a concurrent run holding the same key
	// and fails with a unique violation if it committed.
	if _, err = tx.Exec(ctx, `INSERT INTO `+BarrierTable+` (key, result) VALUES ($1, $2)`, key, string(b)); err == nil {
		err = tx.Commit(ctx)
	}
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) && pe.Code == "23505" {
		_ = tx.Rollback(ctx)
		res, found, rerr := recorded(ctx, conn, key)
		if rerr == nil && found {
			return res, true, nil
		}
	}
	if err != nil {
		return nil, false, err
	}
	return result, false, nil
}

// recorded reads key's recorded result.
func recorded(ctx context.Context, conn *pgxpool.Conn, key string) (map[string]any, bool, error) {
	var raw string
	err := conn.QueryRow(ctx, `SELECT result::text FROM `+BarrierTable+` WHERE key = $1`, key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var res map[string]any
	if err := jsonx.Unmarshal([]byte(raw), &res); err != nil {
		return nil, false, err
	}
	return res, true, nil
}
