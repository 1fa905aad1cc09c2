package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// BarrierTable is the table, in the task's database (its default schema),
// where the side-effect barrier records each barriered attempt's result
// (NoETL result storage RFC §4.4): key text primary key (execution, unit, task position,
// attempt, page), result jsonb, mac text, created_at timestamptz. Rows
// older than BarrierRetention are deleted now and then.
//
// User SQL can write this table (it is in the task's own database), and
// barrier keys are predictable, so a row proves nothing by itself (issue
// 13 item 7): mac is "v1=" + base64url(HMAC-SHA256(k, key ‖ 0x00 ‖
// result)) under the barrier's own key k (tools.Request.BarrierMAC,
// derived by the engine from its signing key: sign.Signer.BarrierKey),
// over the row's result as PostgreSQL prints it (result::text). A row is
// adopted only when its mac verifies; a forged row (or one written before
// rows carried a mac) is ignored, the attempt runs, and its record
// replaces the forged row in the same transaction as its SQL.
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
// (per DSN), adds the mac column to a table made before it existed, and
// reports whether it is usable; a database where it cannot be created (no
// CREATE privilege, a read-only replica) runs tasks without the barrier,
// at least once as before.
func (t *Tool) barrierReady(ctx context.Context, pool *pgxpool.Pool, dsn string) bool {
	t.mu.Lock()
	ok, known := t.barrier[dsn]
	t.mu.Unlock()
	if known {
		return ok
	}
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+BarrierTable+` (key text PRIMARY KEY, result jsonb NOT NULL, mac text, created_at timestamptz NOT NULL DEFAULT now())`)
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07") {
		err = nil // created concurrently by another instance
	}
	if err == nil {
		_, err = pool.Exec(ctx, `ALTER TABLE `+BarrierTable+` ADD COLUMN IF NOT EXISTS mac text`)
		if err != nil && errors.As(err, &pe) && (pe.Code == "42701" || pe.Code == "23505") {
			err = nil // added concurrently
		}
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

// macVersion prefixes a barrier row's mac.
const macVersion = "v1="

// rowMAC is the mac of a barrier row: key and the result's text.
func rowMAC(macKey []byte, key, result string) string {
	h := hmac.New(sha256.New, macKey)
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(result))
	return macVersion + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// verified reports whether mac is key's and result's under macKey.
func verified(macKey []byte, key, result string, mac *string) bool {
	if mac == nil || len(macKey) == 0 {
		return false
	}
	return hmac.Equal([]byte(*mac), []byte(rowMAC(macKey, key, result)))
}

// runBarrier runs the statements and records their result under key,
// authenticated with macKey, in one transaction. When key holds a row
// whose mac verifies (the attempt committed before its process died, or
// a concurrent run of it committed first) it returns that result with
// adopted true and leaves the database as it was. Rows that do not verify
// are ignored; the attempt's record takes their place.
func (t *Tool) runBarrier(ctx context.Context, pool *pgxpool.Pool, key string, macKey []byte, stmts []string, sqlText string, args []any) (map[string]any, bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Release()
	if res, found, err := recorded(ctx, conn, key, macKey, false); err != nil || found {
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
	// The mac covers the result as PostgreSQL will print it back.
	var text string
	if err := tx.QueryRow(ctx, `SELECT $1::jsonb::text`, string(b)).Scan(&text); err != nil {
		return nil, false, err
	}
	mac := rowMAC(macKey, key, text)
	// The insert waits for a concurrent run holding the same key; a row
	// already there (committed by that run, or forged) leaves it alone.
	tag, err := tx.Exec(ctx, `INSERT INTO `+BarrierTable+` (key, result, mac) VALUES ($1, $2::jsonb, $3) ON CONFLICT (key) DO NOTHING`, key, text, mac)
	if err != nil {
		return nil, false, err
	}
	if tag.RowsAffected() == 0 {
		res, found, err := recorded(ctx, tx, key, macKey, true)
		if err != nil {
			return nil, false, err
		}
		if found {
			// A concurrent run of this attempt committed first: its
			// result stands, this run's SQL is rolled back.
			return res, true, tx.Rollback(ctx)
		}
		// A row this engine did not write: replace it.
		if _, err := tx.Exec(ctx, `UPDATE `+BarrierTable+` SET result = $2::jsonb, mac = $3, created_at = now() WHERE key = $1`, key, text, mac); err != nil {
			return nil, false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, false, err
	}
	return result, false, nil
}

// recorded reads key's recorded result: the first row under key whose mac
// verifies under macKey (forUpdate locks the rows, inside a transaction).
func recorded(ctx context.Context, q querier, key string, macKey []byte, forUpdate bool) (map[string]any, bool, error) {
	sql := `SELECT result::text, mac FROM ` + BarrierTable + ` WHERE key = $1`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	rows, err := q.Query(ctx, sql, key)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var raw string
		var mac *string
		if err := rows.Scan(&raw, &mac); err != nil {
			return nil, false, err
		}
		if !verified(macKey, key, raw, mac) {
			continue // forged, or written before rows carried a mac
		}
		var res map[string]any
		if err := jsonx.Unmarshal([]byte(raw), &res); err != nil {
			return nil, false, err
		}
		return res, true, nil
	}
	return nil, false, rows.Err()
}
