package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/sign"
	"github.com/noetl/gcpengine/shared/types"
)

// testSigner derives the barrier MAC keys of the tests, as the engine
// does from its signing key.
var testSigner, _ = sign.New([]byte("barrier-test-signing-key-0123456789"))

func bkey(barrier string) []byte { return testSigner.BarrierKey(barrier) }

// attempts are the result-tier objects of the tests' barriered attempts,
// by barrier key (the runner's are in the tier, one per attempt).
var attempts sync.Map

// attemptOf returns the object of a barrier key.
func attemptOf(barrier string) *results.MemoryAttempt {
	o, _ := attempts.LoadOrStore(barrier, &results.MemoryAttempt{})
	return o.(*results.MemoryAttempt)
}

// runBarriered runs cfg behind barrier with its object in ctx.
func runBarriered(tl *Tool, cfg M, barrier string) types.Outcome {
	ctx := results.WithAttemptObject(context.Background(), attemptOf(barrier))
	return tl.ExecBarrier(ctx, nil, cfg, 0, barrier, bkey(barrier))
}

// dbName is the database freshDB makes for a test.
func dbName(t *testing.T) string {
	return "b_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
}

// freshDB creates a database of its own for a test and returns its DSN
// (as the superuser) and a DSN builder for another user.
func freshDB(t *testing.T) (string, func(user string) string) {
	t.Helper()
	name := dbName(t)
	exec(t, testDSN, "DROP DATABASE IF EXISTS "+name)
	exec(t, testDSN, "CREATE DATABASE "+name)
	dsn := strings.Replace(testDSN, "/postgres?", "/"+name+"?", 1)
	return dsn, func(user string) string { return strings.Replace(dsn, "//postgres@", "//"+user+"@", 1) }
}

func countRows(t *testing.T, dsn, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// exec runs SQL on a database outside the tool (set-up, another
// playbook's SQL, a tamperer); it returns the error's SQLSTATE when want
// is set and fails on any error otherwise.
func exec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	if err := tryExec(dsn, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func tryExec(dsn, sql string, args ...any) error {
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if len(args) == 0 {
		_, err = conn.Exec(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	} else {
		_, err = conn.Exec(context.Background(), sql, args...)
	}
	return err
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestBarrierRunsAnAttemptOnce(t *testing.T) {
	dsn, _ := freshDB(t)
	tl := newTool(t, Options{})
	exec(t, dsn, "CREATE TABLE barrier_once (v int)")
	insert := M{"connection": dsn, "command": "INSERT INTO barrier_once SELECT g FROM generate_series(1, $1::int) g RETURNING v", "params": L{3}}
	first := runBarriered(tl, insert, "exec/unit/0.1.0")
	if first.Status != "ok" || first.Extra["adopted"] != nil {
		t.Fatalf("first run: %+v %v", first.Error, first.Extra)
	}
	// The record holds no result: its key is opaque, and the result is
	// the attempt's object in the tier.
	row := pgxRow(t, dsn, "SELECT key, digest, mac FROM "+BarrierTable)
	if strings.Contains(fmt.Sprint(row), "exec/unit") || len(row) != 3 || !strings.HasPrefix(row[0].(string), keyVersion) {
		t.Fatalf("barrier record %v", row)
	}
	if attemptOf("exec/unit/0.1.0").Puts() != 1 {
		t.Fatal("the result was not stored in the attempt's object")
	}
	// A re-run of the same attempt (its process died after the commit)
	// adopts the recorded result and inserts nothing.
	again := runBarriered(tl, insert, "exec/unit/0.1.0")
	if again.Status != "ok" || again.Extra["adopted"] != true {
		t.Fatalf("re-run: %+v %v", again.Error, again.Extra)
	}
	if got, want := fmt.Sprint(again.Result), fmt.Sprint(first.Result); got != want {
		t.Errorf("adopted %v, want %v", got, want)
	}
	if got, want := again.Result.(M)["row_count"], first.Result.(M)["row_count"]; got != want {
		t.Errorf("adopted row_count %v (%T), want %v (%T)", got, got, want, want)
	}
	if n := countRows(t, dsn, "barrier_once"); n != 3 {
		t.Fatalf("%d rows after a re-run, want 3", n)
	}
	// Another attempt (a retry, another page) runs.
	if out := runBarriered(tl, insert, "exec/unit/0.2.0"); out.Status != "ok" || out.Extra["adopted"] != nil {
		t.Fatalf("next attempt: %+v %v", out.Error, out.Extra)
	}
	if n := countRows(t, dsn, "barrier_once"); n != 6 {
		t.Fatalf("%d rows after a second attempt, want 6", n)
	}
	// A script (several statements) is barriered as a whole.
	script := M{"connection": dsn, "command": "INSERT INTO barrier_once VALUES (10); INSERT INTO barrier_once VALUES (11)"}
	for range 2 {
		if out := runBarriered(tl, script, "exec/unit/1.1.0"); out.Status != "ok" {
			t.Fatalf("script: %+v", out.Error)
		}
	}
	if n := countRows(t, dsn, "barrier_once"); n != 8 {
		t.Fatalf("%d rows after a script and its re-run, want 8", n)
	}
}

func pgxRow(t *testing.T, dsn, sql string) []any {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("%s: no row", sql)
	}
	v, err := rows.Values()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBarrierFailedAttemptLeavesNothing(t *testing.T) {
	dsn, _ := freshDB(t)
	tl := newTool(t, Options{})
	exec(t, dsn, "CREATE TABLE barrier_fail (v int PRIMARY KEY)")
	// The second statement fails: the first one is rolled back with it,
	// and nothing is recorded, so the attempt can run again.
	bad := M{"connection": dsn, "command": "INSERT INTO barrier_fail VALUES (1); INSERT INTO barrier_fail VALUES (1)"}
	if out := runBarriered(tl, bad, "exec/unit/fail"); out.Status != "error" {
		t.Fatalf("duplicate key did not fail: %+v", out)
	}
	if n := countRows(t, dsn, "barrier_fail"); n != 0 {
		t.Fatalf("%d rows after a failed attempt, want 0", n)
	}
	good := M{"connection": dsn, "command": "INSERT INTO barrier_fail VALUES (1)"}
	if out := runBarriered(tl, good, "exec/unit/fail"); out.Status != "ok" || out.Extra["adopted"] != nil {
		t.Fatalf("re-run after a failure: %+v %v", out.Error, out.Extra)
	}
}

func TestBarrierConcurrentRunsCommitOnce(t *testing.T) {
	dsn, _ := freshDB(t)
	tl := newTool(t, Options{})
	exec(t, dsn, "CREATE TABLE barrier_race (v int)")
	insert := M{"connection": dsn, "command": "INSERT INTO barrier_race SELECT 1 FROM pg_sleep(0.05)"}
	var wg sync.WaitGroup
	adopted := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := runBarriered(tl, insert, "exec/unit/race")
			if out.Status != "ok" {
				t.Errorf("concurrent run: %+v", out.Error)
			}
			adopted <- out.Extra["adopted"] == true
		}()
	}
	wg.Wait()
	close(adopted)
	ran := 0
	for a := range adopted {
		if !a {
			ran++
		}
	}
	if n := countRows(t, dsn, "barrier_race"); n != 1 || ran != 1 {
		t.Fatalf("%d rows, %d runs not adopted; want 1 and 1", n, ran)
	}
}

func TestBarrierSkipsNonTransactionalSQL(t *testing.T) {
	for sql, want := range map[string]bool{
		"INSERT INTO t VALUES (1)":                     true,
		"-- load\nUPDATE t SET v = 1":                  true,
		"BEGIN; INSERT INTO t VALUES (1); COMMIT":      false,
		"VACUUM ANALYZE t":                             false,
		"/* c */ CREATE INDEX CONCURRENTLY i ON t (v)": false,
		"CREATE INDEX i ON t (v)":                      true,
		"create database x":                            false,
		"ENDPOINT_TABLE_INSERT":                        true,
	} {
		if got := transactional(splitSQL(sql)); got != want {
			t.Errorf("transactional(%q) = %v, want %v", sql, got, want)
		}
	}
	// Such SQL still runs (without the barrier, at least once).
	tl := newTool(t, Options{})
	out := runBarriered(tl, M{"connection": testDSN, "command": "VACUUM"}, "exec/unit/vacuum")
	if out.Status != "ok" {
		t.Fatalf("VACUUM with a barrier key: %+v", out.Error)
	}
}

// Records another playbook writes (forged: no valid mac under the
// attempt's key) are ignored and replaced; a committed record whose
// stored result was changed or removed afterwards fails the re-run with
// result_lost (the side effect is not run again); a barrier without its
// MAC key is refused before any SQL runs.
func TestBarrierForgedRecordIsIgnored(t *testing.T) {
	dsn, _ := freshDB(t)
	tl := newTool(t, Options{})
	exec(t, dsn, "CREATE TABLE barrier_forged (v text)")
	insert := M{"connection": dsn, "command": "INSERT INTO barrier_forged VALUES ('real') RETURNING v"}
	runBarriered(tl, M{"connection": dsn, "command": "SELECT 1"}, "warm/up") // the barrier exists
	for name, mac := range map[string]func(key string) string{
		"made-up mac":     func(string) string { return "v2=AAAA" },
		"other key's mac": func(key string) string { return rowMAC(bkey("other/unit/0.1.0"), key, digestOf([]byte("{}"))) },
	} {
		barrier := "victim-exec/" + name + "/0.1.0"
		key := rowKey(bkey(barrier))
		exec(t, dsn, "INSERT INTO "+BarrierTable+" (key, digest, mac) VALUES ($1, $2, $3)", key, digestOf([]byte("{}")), mac(key))
		attemptOf(barrier).Set([]byte(`{"rows": [{"v": "FORGED"}]}`))
		before := countRows(t, dsn, "barrier_forged")
		out := runBarriered(tl, insert, barrier)
		if out.Status != "ok" || out.Extra["adopted"] != nil || strings.Contains(fmt.Sprint(out.Result), "FORGED") || countRows(t, dsn, "barrier_forged") != before+1 {
			t.Fatalf("%s: the victim adopted the forged record: %+v %v %v", name, out.Error, out.Extra, out.Result)
		}
		again := runBarriered(tl, insert, barrier)
		if again.Status != "ok" || again.Extra["adopted"] != true || strings.Contains(fmt.Sprint(again.Result), "FORGED") || countRows(t, dsn, "barrier_forged") != before+1 {
			t.Fatalf("%s: re-run after the real record: %+v %v %v", name, again.Error, again.Extra, again.Result)
		}
	}
	for name, tamper := range map[string][]byte{"changed": []byte(`{"rows": [{"v": "FORGED"}]}`), "gone": nil} {
		barrier := "victim-exec/tampered-" + name + "/0.1.0"
		if out := runBarriered(tl, insert, barrier); out.Status != "ok" {
			t.Fatal(out.Error)
		}
		attemptOf(barrier).Set(tamper)
		before := countRows(t, dsn, "barrier_forged")
		out := runBarriered(tl, insert, barrier)
		if out.Status != "error" || out.Error.Kind != "result_lost" || countRows(t, dsn, "barrier_forged") != before {
			t.Fatalf("stored result %s: %+v %v (want result_lost, the SQL not run again)", name, out.Error, out.Result)
		}
	}
	// Without the result's object (no grant), the attempt runs and a
	// re-run fails with result_lost rather than run its SQL again.
	ctx := context.Background()
	if out := tl.ExecBarrier(ctx, nil, insert, 0, "no/object", bkey("no/object")); out.Status != "ok" {
		t.Fatal(out.Error)
	}
	before := countRows(t, dsn, "barrier_forged")
	if out := tl.ExecBarrier(ctx, nil, insert, 0, "no/object", bkey("no/object")); out.Status != "error" || out.Error.Kind != "result_lost" || countRows(t, dsn, "barrier_forged") != before {
		t.Fatalf("re-run without the object: %+v", out)
	}
	if out := tl.ExecBarrier(ctx, nil, insert, 0, "no/key", nil); out.Status != "error" || out.Error.Kind != "config" || countRows(t, dsn, "barrier_forged") != before {
		t.Fatalf("no MAC key: %+v", out)
	}
}

// A provisioned barrier (BarrierSetupSQL, as the local stack does)
// belongs to the role noetl_barrier: a playbook role that owns its
// database runs barriered tasks, and can neither read the records nor
// attach anything to the table, alter, empty or replace it, nor call the
// functions to read a record it cannot name.
func TestBarrierProvisionedIsNotThePlaybooks(t *testing.T) {
	super, as := freshDB(t)
	exec(t, testDSN, `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'player') THEN CREATE ROLE player LOGIN; END IF; END $$`)
	exec(t, super, "ALTER DATABASE "+dbName(t)+" OWNER TO player; ALTER SCHEMA public OWNER TO player")
	// A self-made barrier left by an earlier engine is replaced.
	exec(t, super, "CREATE SCHEMA noetl_barrier; CREATE TABLE noetl_barrier.attempts (key text)")
	exec(t, super, BarrierSetupSQL())
	exec(t, super, BarrierSetupSQL()) // idempotent
	player := as("player")
	tl := newTool(t, Options{})
	exec(t, player, "CREATE TABLE side (v text)")
	insert := M{"connection": player, "command": "INSERT INTO side VALUES ('x') RETURNING v"}
	if out := runBarriered(tl, insert, "prov/unit/0.1.0"); out.Status != "ok" {
		t.Fatalf("barriered task as the database's owner: %+v", out.Error)
	}
	if out := runBarriered(tl, insert, "prov/unit/0.1.0"); out.Extra["adopted"] != true || countRows(t, super, "side") != 1 {
		t.Fatalf("re-run: %+v %v", out.Error, out.Extra)
	}
	for _, q := range []string{
		"SELECT * FROM " + BarrierTable,
		"CREATE FUNCTION public.spy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$; CREATE TRIGGER spy BEFORE INSERT ON " + BarrierTable + " FOR EACH ROW EXECUTE FUNCTION public.spy()",
		"CREATE RULE spy AS ON INSERT TO " + BarrierTable + " DO ALSO NOTIFY spy",
		"CREATE POLICY hide ON " + BarrierTable + " USING (false)",
		"ALTER TABLE " + BarrierTable + " ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE " + BarrierTable + " ADD COLUMN extra text",
		"TRUNCATE " + BarrierTable,
		"DELETE FROM " + BarrierTable,
		"DROP TABLE " + BarrierTable,
		"DROP SCHEMA " + BarrierSchema + " CASCADE",
		"CREATE TABLE " + BarrierSchema + ".shadow (v text)",
		"CREATE OR REPLACE FUNCTION " + BarrierSchema + ".lookup(k text) RETURNS TABLE (digest text, mac text) LANGUAGE sql AS $$ SELECT 'a', 'b' $$",
		"ALTER FUNCTION " + BarrierSchema + ".record(text, text, text, boolean) SECURITY INVOKER",
	} {
		if got := sqlstate(tryExec(player, q)); got != "42501" {
			t.Errorf("as the playbook's role: %s: SQLSTATE %q, want 42501 (insufficient privilege)", q, got)
		}
	}
	// The functions answer only for a key one can name.
	if n := countRowsQ(t, player, "SELECT * FROM "+BarrierSchema+".lookup('prov/unit/0.1.0')"); n != 0 {
		t.Errorf("lookup by the barrier's plain name found %d records", n)
	}
}

func countRowsQ(t *testing.T, dsn, q string) int {
	t.Helper()
	return countRows(t, dsn, "("+q+") q")
}

// A barrier the task's own role made (no operator provisioned one) is
// checked before every use: a trigger, a rule, row-level security, an
// extra column default or a changed function fails the task with kind
// config before its SQL runs; a same-named table earlier in the search
// path (the "$user" schema, a temporary table) is never written.
func TestBarrierTamperingIsRefused(t *testing.T) {
	dsn, _ := freshDB(t)
	tl := newTool(t, Options{})
	exec(t, dsn, "CREATE TABLE side (v text); CREATE TABLE spy_log (what text); CREATE FUNCTION spy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO public.spy_log VALUES ('trigger'); RETURN NEW; END $$")
	insert := M{"connection": dsn, "command": "INSERT INTO side VALUES ('x')"}
	if out := runBarriered(tl, insert, "tamper/warm"); out.Status != "ok" {
		t.Fatal(out.Error)
	}
	// Shadows: the "$user" schema (postgres) and pg_temp hold same-named
	// tables; the barrier still writes its own.
	exec(t, dsn, "CREATE SCHEMA postgres; CREATE TABLE postgres.attempts (key text, digest text, mac text); CREATE TABLE public.attempts (key text, digest text, mac text)")
	if out := runBarriered(tl, insert, "tamper/shadow"); out.Status != "ok" || countRows(t, dsn, "postgres.attempts")+countRows(t, dsn, "public.attempts") != 0 {
		t.Fatalf("shadowed: %+v", out.Error)
	}
	for name, tamper := range map[string][2]string{
		"trigger":  {"CREATE TRIGGER spy BEFORE INSERT ON " + BarrierTable + " FOR EACH ROW EXECUTE FUNCTION public.spy()", "DROP TRIGGER spy ON " + BarrierTable},
		"rule":     {"CREATE RULE spy AS ON INSERT TO " + BarrierTable + " DO ALSO INSERT INTO public.spy_log VALUES ('rule')", "DROP RULE spy ON " + BarrierTable},
		"rls":      {"ALTER TABLE " + BarrierTable + " ENABLE ROW LEVEL SECURITY", "ALTER TABLE " + BarrierTable + " DISABLE ROW LEVEL SECURITY"},
		"default":  {"ALTER TABLE " + BarrierTable + " ALTER COLUMN mac SET DEFAULT 'x'", "ALTER TABLE " + BarrierTable + " ALTER COLUMN mac DROP DEFAULT"},
		"function": {"CREATE OR REPLACE FUNCTION " + BarrierSchema + ".expire() RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ SELECT 0::bigint $$", ""},
		"relation": {"CREATE VIEW " + BarrierSchema + ".peek AS SELECT * FROM " + BarrierTable, "DROP VIEW " + BarrierSchema + ".peek"},
	} {
		exec(t, dsn, tamper[0])
		before := countRows(t, dsn, "side")
		out := runBarriered(tl, insert, "tamper/"+name)
		if out.Status != "error" || out.Error.Kind != "config" || !strings.Contains(out.Error.Message, "cannot be trusted") || countRows(t, dsn, "side") != before {
			t.Errorf("%s: %+v (want kind config, the SQL not run)", name, out.Error)
		}
		if tamper[1] != "" {
			exec(t, dsn, tamper[1])
		} else {
			exec(t, dsn, "DROP SCHEMA "+BarrierSchema+" CASCADE")
			tl = newTool(t, Options{}) // a new runner makes it again
		}
		if out := runBarriered(tl, insert, "tamper/"+name+"/after"); out.Status != "ok" {
			t.Errorf("%s: after the repair: %+v", name, out.Error)
		}
	}
	if n := countRows(t, dsn, "spy_log"); n != 0 {
		t.Errorf("the tamperer's code ran %d times in a barrier transaction", n)
	}
}
