package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/results"
)

// The side-effect barrier's records (NoETL result storage RFC §4.4; docs
// "Security", "Executions are strangers") live in the task's own
// database, in the schema BarrierSchema, qualified in every statement (a
// same-named table or function earlier in the search path is never
// used), and are reached only through three functions of that schema:
//
//	noetl_barrier.attempts (key text PRIMARY KEY, digest text NOT NULL,
//	                        mac text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())
//	noetl_barrier.lookup(key) → (digest, mac)     the record of one key, locked
//	noetl_barrier.record(key, digest, mac, replace) → bool
//	                                               insert (or, with replace, update) it
//	noetl_barrier.expire() → bigint                delete records older than BarrierRetention
//
// A record holds no result: key is an opaque name of the attempt
// ("k1=" + base64url(HMAC-SHA256(k, "noetl barrier row")) under the
// attempt's own barrier key k, which the engine derives from its signing
// key: nobody else can name another attempt's record), digest is the hex
// SHA-256 of the attempt's result as stored in the result tier (the
// attempt's results.AttemptObject, which only its execution's grants
// reach), and mac is "v2=" + base64url(HMAC-SHA256(k, key ‖ 0x00 ‖
// digest)). A record is adopted only when its mac verifies and the
// stored result matches its digest.
//
// The functions are SECURITY DEFINER with search_path pg_catalog,
// pg_temp. Provisioned by an operator (BarrierSetupSQL: the local stack
// does it), the schema, table and functions belong to the role
// BarrierRole, and playbook roles get only USAGE on the schema and
// EXECUTE on the functions: a playbook's SQL can neither read the table
// nor attach a trigger, rule or policy to it, nor alter or empty it
// (every such statement needs ownership: permission denied). Where no
// operator provisioned it, the engine creates the same objects with the
// task's own credential (the task's role then owns them, and what that
// credential can still do is said in the docs); before every use it
// checks them (barrierFacts): owned by BarrierRole or by the task's own
// role, no trigger, rule, extra constraint, index, column default or
// function, row-level security off, the functions' definitions the
// engine's. A barrier that fails the check fails the task (kind config)
// before its SQL runs.
const (
	// BarrierSchema is the barrier's schema.
	BarrierSchema = "noetl_barrier"
	// BarrierTable is the barrier's table, qualified.
	BarrierTable = BarrierSchema + ".attempts"
	// BarrierRole is the role that owns a provisioned barrier
	// (BarrierSetupSQL).
	BarrierRole = "noetl_barrier"
	// BarrierRetention is how long a barrier record is kept (a re-run of
	// an attempt comes within the execution's lifetime; Cloud Tasks gives
	// up on a unit after its retries).
	BarrierRetention = "7 days"
)

// barrierObjectsSQL creates the barrier's objects in the current role
// (the schema must exist). The function bodies are compared by md5 in
// barrierFacts: change them only with barrierFunctions.
const barrierObjectsSQL = `CREATE TABLE IF NOT EXISTS noetl_barrier.attempts (key text PRIMARY KEY, digest text NOT NULL, mac text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE OR REPLACE FUNCTION noetl_barrier.lookup(k text) RETURNS TABLE (digest text, mac text)
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  AS $noetl$` + lookupBody + `$noetl$;
CREATE OR REPLACE FUNCTION noetl_barrier.record(k text, d text, m text, replace boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  AS $noetl$` + recordBody + `$noetl$;
CREATE OR REPLACE FUNCTION noetl_barrier.expire() RETURNS bigint
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  AS $noetl$` + expireBody + `$noetl$;
REVOKE ALL ON TABLE noetl_barrier.attempts FROM PUBLIC;
REVOKE ALL ON FUNCTION noetl_barrier.lookup(text), noetl_barrier.record(text, text, text, boolean), noetl_barrier.expire() FROM PUBLIC;
`

const (
	lookupBody = ` SELECT a.digest, a.mac FROM noetl_barrier.attempts a WHERE a.key = k FOR UPDATE `
	recordBody = `
BEGIN
  IF replace THEN
    UPDATE noetl_barrier.attempts SET digest = d, mac = m, created_at = now() WHERE key = k;
  ELSE
    INSERT INTO noetl_barrier.attempts (key, digest, mac) VALUES (k, d, m) ON CONFLICT DO NOTHING;
  END IF;
  RETURN FOUND;
END `
	expireBody = ` WITH gone AS (DELETE FROM noetl_barrier.attempts WHERE created_at < now() - interval '` + BarrierRetention + `' RETURNING 1) SELECT count(*) FROM gone `
)

// barrierFunctions are the barrier's functions as barrierFacts reports
// them: name, SECURITY DEFINER, settings, md5 of the body.
var barrierFunctions = []string{
	fnFact("expire", expireBody),
	fnFact("lookup", lookupBody),
	fnFact("record", recordBody),
}

func fnFact(name, body string) string {
	return fmt.Sprintf(`%s t {"search_path=pg_catalog, pg_temp"} %x`, name, md5.Sum([]byte(body)))
}

// barrierColumns are the table's columns as barrierFacts reports them.
var barrierColumns = []string{"key text", "digest text", "mac text", "created_at timestamp with time zone now()"}

// BarrierSetupSQL is what an operator runs once per database, as a
// superuser (or a role that may create roles and is a member of
// BarrierRole), so that the barrier belongs to BarrierRole and no
// playbook role owns it (docs "Security"): it creates the role (NOLOGIN,
// when missing), its schema, table and functions, and grants every role
// USAGE on the schema and EXECUTE on the functions. It is idempotent.
func BarrierSetupSQL() string {
	return `DO $noetl$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '` + BarrierRole + `') THEN
    CREATE ROLE ` + BarrierRole + ` NOLOGIN NOINHERIT;
  END IF;
  IF EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = '` + BarrierSchema + `' AND nspowner <> '` + BarrierRole + `'::regrole) THEN
    RAISE NOTICE 'dropping schema ` + BarrierSchema + `, made by another role than ` + BarrierRole + `';
    DROP SCHEMA ` + BarrierSchema + ` CASCADE;
  END IF;
END $noetl$;
BEGIN;
CREATE SCHEMA IF NOT EXISTS ` + BarrierSchema + ` AUTHORIZATION ` + BarrierRole + `;
SET LOCAL ROLE ` + BarrierRole + `;
` + barrierObjectsSQL + `GRANT USAGE ON SCHEMA ` + BarrierSchema + ` TO PUBLIC;
GRANT EXECUTE ON FUNCTION noetl_barrier.lookup(text), noetl_barrier.record(text, text, text, boolean), noetl_barrier.expire() TO PUBLIC;
COMMIT;
`
}

// barrierFactsSQL reads what barrierFacts checks, and the record of key
// $1, in one statement: the facts come from the catalogs, every operator
// and function qualified (the search path may be anyone's); the record
// through noetl_barrier.lookup.
const barrierFactsSQL = `SELECT pg_catalog.pg_get_userbyid(n.nspowner), pg_catalog.pg_get_userbyid(c.relowner), c.relkind::text, c.relrowsecurity,
  (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) x.rel),
  (SELECT pg_catalog.count(*) FROM pg_catalog.pg_rewrite r WHERE r.ev_class OPERATOR(pg_catalog.=) x.rel),
  (SELECT pg_catalog.count(*) FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) x.rel AND k.contype OPERATOR(pg_catalog.<>) 'p' AND k.contype OPERATOR(pg_catalog.<>) 'n'),
  (SELECT pg_catalog.count(*) FROM pg_catalog.pg_index i WHERE i.indrelid OPERATOR(pg_catalog.=) x.rel),
  ARRAY(SELECT pg_catalog.concat_ws(' ', a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), pg_catalog.pg_get_expr(d.adbin, d.adrelid))
        FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid AND d.adnum OPERATOR(pg_catalog.=) a.attnum
        WHERE a.attrelid OPERATOR(pg_catalog.=) x.rel AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped ORDER BY a.attnum),
  ARRAY(SELECT pg_catalog.concat_ws(' ', p.proname, CASE WHEN p.prosecdef THEN 't' ELSE 'f' END, p.proconfig::text, pg_catalog.md5(p.prosrc))
        FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) x.nsp ORDER BY p.proname),
  ARRAY(SELECT DISTINCT pg_catalog.pg_get_userbyid(p.proowner) FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) x.nsp),
  (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class o WHERE o.relnamespace OPERATOR(pg_catalog.=) x.nsp AND o.relkind OPERATOR(pg_catalog.<>) 'i'),
  CURRENT_USER, f.digest, f.mac
FROM (SELECT 'noetl_barrier'::pg_catalog.regnamespace::pg_catalog.oid AS nsp, 'noetl_barrier.attempts'::pg_catalog.regclass::pg_catalog.oid AS rel) x
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.nsp
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) x.rel
LEFT JOIN noetl_barrier.lookup($1) f ON true`

// barrierFacts is what barrierFactsSQL reads.
type barrierFacts struct {
	schemaOwner, tableOwner, relkind string
	rowSecurity                      bool
	triggers, rules, constraints     int64
	indexes                          int64
	columns, functions, fnOwners     []string
	relations                        int64
	user                             string
	digest, mac                      *string
}

// check returns why the barrier's objects cannot be trusted, or nil:
// every object belongs to BarrierRole, or every one to the task's own
// role, and they are exactly the engine's.
func (f barrierFacts) check() error {
	owner := f.schemaOwner
	if owner != BarrierRole && owner != f.user {
		return fmt.Errorf("schema %s belongs to role %q, neither %s nor this task's role %q", BarrierSchema, owner, BarrierRole, f.user)
	}
	if f.tableOwner != owner || len(f.fnOwners) != 1 || f.fnOwners[0] != owner {
		return fmt.Errorf("the objects of schema %s belong to roles %q (table) and %v (functions), not all to its owner %q", BarrierSchema, f.tableOwner, f.fnOwners, owner)
	}
	var why []string
	if f.relkind != "r" {
		why = append(why, fmt.Sprintf("%s is a relation of kind %q, not a table", BarrierTable, f.relkind))
	}
	if f.rowSecurity {
		why = append(why, "row-level security is enabled on it")
	}
	if f.triggers > 0 {
		why = append(why, fmt.Sprintf("%d trigger(s) on it", f.triggers))
	}
	if f.rules > 0 {
		why = append(why, fmt.Sprintf("%d rule(s) on it", f.rules))
	}
	if f.constraints > 0 || f.indexes != 1 {
		why = append(why, fmt.Sprintf("%d constraint(s) and %d index(es) where the engine makes its primary key only", f.constraints, f.indexes))
	}
	if !slices.Equal(f.columns, barrierColumns) {
		why = append(why, fmt.Sprintf("columns %q, not the engine's %q", f.columns, barrierColumns))
	}
	if !slices.Equal(f.functions, barrierFunctions) {
		why = append(why, fmt.Sprintf("functions %q, not the engine's %q", f.functions, barrierFunctions))
	}
	if f.relations != 1 {
		why = append(why, fmt.Sprintf("%d relations in schema %s, want its table only", f.relations, BarrierSchema))
	}
	if len(why) > 0 {
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// errBarrierTampered fails a barriered task whose barrier cannot be
// trusted (kind config: the database's owner must repair it).
type errBarrierTampered struct{ why error }

func (e *errBarrierTampered) Error() string {
	return fmt.Sprintf("the side-effect barrier %s cannot be trusted: %v; the task's SQL did not run (repair: drop schema %s and let the engine or an operator's postgres.BarrierSetupSQL make it again; docs \"Security\")", BarrierTable, e.why, BarrierSchema)
}

// errBarrierResult fails a re-run of an attempt that committed but whose
// result cannot be read back (kind result_lost: the side effect must not
// run again, and nothing else can give its result).
type errBarrierResult struct{ why string }

func (e *errBarrierResult) Error() string {
	return "the attempt committed before, but its result " + e.why + "; its SQL is not run again"
}

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

// barrierReady makes sure the barrier's objects exist in dsn's database
// once per tool (per DSN): when schema noetl_barrier is missing the
// engine creates it with the task's credential (the task's role then
// owns it; docs "Security" say what that credential can still do), and
// expires old records. It reports whether the barrier is usable; a
// database where it cannot be created (no CREATE privilege, a read-only
// replica) runs tasks without the barrier, at least once as before.
// Whether existing objects can be trusted is checked on every use
// (barrierFacts).
func (t *Tool) barrierReady(ctx context.Context, pool *pgxpool.Pool, dsn string) bool {
	t.mu.Lock()
	ok, known := t.barrier[dsn]
	t.mu.Unlock()
	if known {
		return ok
	}
	var exists bool
	err := pool.QueryRow(ctx, `SELECT pg_catalog.to_regnamespace('`+BarrierSchema+`') IS NOT NULL`).Scan(&exists)
	if err == nil && !exists {
		err = createBarrier(ctx, pool)
	}
	if err != nil && ctx.Err() != nil {
		return false // undecided: try again on the next task
	}
	ok = err == nil
	if ok {
		// Housekeeping, best effort.
		_, _ = pool.Exec(ctx, `SELECT `+BarrierSchema+`.expire()`)
	}
	t.mu.Lock()
	t.barrier[dsn] = ok
	t.mu.Unlock()
	return ok
}

// createBarrier creates the barrier's schema and objects with the pool's
// credential, in one transaction (a concurrent creator's schema is
// taken as made).
func createBarrier(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "BEGIN; CREATE SCHEMA IF NOT EXISTS "+BarrierSchema+"; "+barrierObjectsSQL+" COMMIT;", pgx.QueryExecModeSimpleProtocol)
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P06" || pe.Code == "42P07" || pe.Code == "XX000") {
		return nil // created concurrently by another instance
	}
	return err
}

// Versions of a barrier record's key and mac.
const (
	keyVersion = "k1="
	macVersion = "v2="
)

// rowKey is the opaque name of the record of the attempt whose barrier
// key is macKey.
func rowKey(macKey []byte) string {
	h := hmac.New(sha256.New, macKey)
	h.Write([]byte("noetl barrier row"))
	return keyVersion + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// rowMAC is the mac of a barrier record: its key and the result's digest.
func rowMAC(macKey []byte, key, digest string) string {
	h := hmac.New(sha256.New, macKey)
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(digest))
	return macVersion + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// verified reports whether mac is key's and digest's under macKey.
func verified(macKey []byte, key string, digest, mac *string) bool {
	if digest == nil || mac == nil || len(macKey) == 0 {
		return false
	}
	return hmac.Equal([]byte(*mac), []byte(rowMAC(macKey, key, *digest)))
}

// digestOf is the hex SHA-256 of b.
func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// runBarrier runs the statements and records them under the attempt's
// barrier key (authenticated with macKey) in one transaction: the result
// goes to the attempt's object in the result tier (obj) before the
// commit, the record holds its digest. When the attempt has a record
// whose mac verifies (it committed before its process died, or a
// concurrent run of it committed first) it returns the stored result
// with adopted true and leaves the database as it was. A record that
// does not verify is replaced by the attempt's.
func (t *Tool) runBarrier(ctx context.Context, pool *pgxpool.Pool, obj results.AttemptObject, macKey []byte, stmts []string, sqlText string, args []any) (map[string]any, bool, error) {
	key := rowKey(macKey)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var f barrierFacts
	err = tx.QueryRow(ctx, barrierFactsSQL, key).Scan(&f.schemaOwner, &f.tableOwner, &f.relkind, &f.rowSecurity, &f.triggers, &f.rules,
		&f.constraints, &f.indexes, &f.columns, &f.functions, &f.fnOwners, &f.relations, &f.user, &f.digest, &f.mac)
	if errors.Is(err, pgx.ErrNoRows) {
		err = &errBarrierTampered{errors.New("its table is missing")}
	}
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42883" || pe.Code == "42P01" || pe.Code == "3F000") {
			err = &errBarrierTampered{fmt.Errorf("its functions are missing or changed: %s", pe.Message)}
		}
		return nil, false, err
	}
	if err := f.check(); err != nil {
		return nil, false, &errBarrierTampered{err}
	}
	if verified(macKey, key, f.digest, f.mac) {
		_ = tx.Rollback(ctx)
		res, err := adopt(ctx, obj, *f.digest)
		return res, err == nil, err
	}
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
	digest := digestOf(b)
	mac := rowMAC(macKey, key, digest)
	// The insert waits for a concurrent run holding the same key; a
	// record already there (committed by that run, or forged) is left
	// alone.
	var inserted bool
	if err := tx.QueryRow(ctx, `SELECT `+BarrierSchema+`.record($1, $2, $3, false)`, key, digest, mac).Scan(&inserted); err != nil {
		return nil, false, err
	}
	if !inserted {
		var d, m *string
		if err := tx.QueryRow(ctx, `SELECT digest, mac FROM `+BarrierSchema+`.lookup($1)`, key).Scan(&d, &m); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, err
		}
		if verified(macKey, key, d, m) {
			// A concurrent run of this attempt committed first: its
			// result stands, this run's SQL is rolled back.
			_ = tx.Rollback(ctx)
			res, err := adopt(ctx, obj, *d)
			return res, err == nil, err
		}
		// A record this engine did not write: replace it.
		if err := tx.QueryRow(ctx, `SELECT `+BarrierSchema+`.record($1, $2, $3, true)`, key, digest, mac).Scan(&inserted); err != nil {
			return nil, false, err
		}
	}
	// The result is stored before the commit: a committed record always
	// has its result (a failed commit leaves an object the next run
	// replaces).
	if obj != nil {
		if err := obj.Put(ctx, b); err != nil {
			return nil, false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, false, err
	}
	return result, false, nil
}

// adopt reads the result of a committed attempt back from its object and
// checks it against the record's digest.
func adopt(ctx context.Context, obj results.AttemptObject, digest string) (map[string]any, error) {
	if obj == nil {
		return nil, &errBarrierResult{"was not kept (the runner had no result grant for it)"}
	}
	b, err := obj.Get(ctx)
	if errors.Is(err, results.ErrNotFound) {
		return nil, &errBarrierResult{"is gone from the result tier"}
	}
	if err != nil {
		return nil, err
	}
	if digestOf(b) != digest {
		return nil, &errBarrierResult{"in the result tier does not match its record's digest"}
	}
	var res map[string]any
	if err := jsonx.Unmarshal(b, &res); err != nil {
		return nil, &errBarrierResult{"cannot be decoded: " + err.Error()}
	}
	return res, nil
}
