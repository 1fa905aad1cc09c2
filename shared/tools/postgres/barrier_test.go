package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/noetl/gcpengine/shared/sign"
)

// testSigner derives the barrier MAC keys of the tests, as the engine
// does from its signing key.
var testSigner, _ = sign.New([]byte("barrier-test-signing-key-0123456789"))

func bkey(barrier string) []byte { return testSigner.BarrierKey(barrier) }

func countRows(t *testing.T, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testDSN)
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

func TestBarrierRunsAnAttemptOnce(t *testing.T) {
	tl := newTool(t, Options{})
	ctx := context.Background()
	if out := tl.run(ctx, request{Config: M{"connection": testDSN, "command": "CREATE TABLE barrier_once (v int)"}}); out.Status != "ok" {
		t.Fatalf("create: %+v", out.Error)
	}
	insert := M{"connection": testDSN, "command": "INSERT INTO barrier_once SELECT g FROM generate_series(1, $1::int) g", "params": L{3}}
	first := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/0.1.0", bkey("exec/unit/0.1.0"))
	if first.Status != "ok" || first.Extra["adopted"] != nil {
		t.Fatalf("first run: %+v %v", first.Error, first.Extra)
	}
	// A re-run of the same attempt (its process died after the commit)
	// adopts the recorded result and inserts nothing.
	again := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/0.1.0", bkey("exec/unit/0.1.0"))
	if again.Status != "ok" || again.Extra["adopted"] != true {
		t.Fatalf("re-run: %+v %v", again.Error, again.Extra)
	}
	if got, want := again.Result.(map[string]any)["row_count"], first.Result.(map[string]any)["row_count"]; got != want {
		t.Errorf("adopted row_count %v (%T), want %v (%T)", got, got, want, want)
	}
	if n := countRows(t, "barrier_once"); n != 3 {
		t.Fatalf("%d rows after a re-run, want 3", n)
	}
	// Another attempt (a retry, another page) runs.
	if out := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/0.2.0", bkey("exec/unit/0.2.0")); out.Status != "ok" || out.Extra["adopted"] != nil {
		t.Fatalf("next attempt: %+v %v", out.Error, out.Extra)
	}
	if n := countRows(t, "barrier_once"); n != 6 {
		t.Fatalf("%d rows after a second attempt, want 6", n)
	}
	// A script (several statements) is barriered as a whole.
	script := M{"connection": testDSN, "command": "INSERT INTO barrier_once VALUES (10); INSERT INTO barrier_once VALUES (11)"}
	for range 2 {
		if out := tl.ExecBarrier(ctx, nil, script, 0, "exec/unit/1.1.0", bkey("exec/unit/1.1.0")); out.Status != "ok" {
			t.Fatalf("script: %+v", out.Error)
		}
	}
	if n := countRows(t, "barrier_once"); n != 8 {
		t.Fatalf("%d rows after a script and its re-run, want 8", n)
	}
}

func TestBarrierFailedAttemptLeavesNothing(t *testing.T) {
	tl := newTool(t, Options{})
	ctx := context.Background()
	tl.run(ctx, request{Config: M{"connection": testDSN, "command": "CREATE TABLE barrier_fail (v int PRIMARY KEY)"}})
	// The second statement fails: the first one is rolled back with it,
	// and nothing is recorded, so the attempt can run again.
	bad := M{"connection": testDSN, "command": "INSERT INTO barrier_fail VALUES (1); INSERT INTO barrier_fail VALUES (1)"}
	if out := tl.ExecBarrier(ctx, nil, bad, 0, "exec/unit/fail", bkey("exec/unit/fail")); out.Status != "error" {
		t.Fatalf("duplicate key did not fail: %+v", out)
	}
	if n := countRows(t, "barrier_fail"); n != 0 {
		t.Fatalf("%d rows after a failed attempt, want 0", n)
	}
	good := M{"connection": testDSN, "command": "INSERT INTO barrier_fail VALUES (1)"}
	if out := tl.ExecBarrier(ctx, nil, good, 0, "exec/unit/fail", bkey("exec/unit/fail")); out.Status != "ok" || out.Extra["adopted"] != nil {
		t.Fatalf("re-run after a failure: %+v %v", out.Error, out.Extra)
	}
}

func TestBarrierConcurrentRunsCommitOnce(t *testing.T) {
	tl := newTool(t, Options{})
	ctx := context.Background()
	tl.run(ctx, request{Config: M{"connection": testDSN, "command": "CREATE TABLE barrier_race (v int)"}})
	insert := M{"connection": testDSN, "command": "INSERT INTO barrier_race SELECT 1 FROM pg_sleep(0.05)"}
	var wg sync.WaitGroup
	adopted := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/race", bkey("exec/unit/race"))
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
	if n := countRows(t, "barrier_race"); n != 1 || ran != 1 {
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
	out := tl.ExecBarrier(context.Background(), nil, M{"connection": testDSN, "command": "VACUUM"}, 0, "exec/unit/vacuum", bkey("exec/unit/vacuum"))
	if out.Status != "ok" {
		t.Fatalf("VACUUM with a barrier key: %+v", out.Error)
	}
}

// exec runs SQL on the test database outside the tool (another playbook's
// SQL, a tamperer).
func exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// The attack of README "Security": another execution writes a barrier row under the
// victim's (predictable) key; the victim's attempt must run its SQL, not
// adopt "FORGED BY ANOTHER PLAYBOOK", and its record must replace the
// forged row (the primary key is taken) so that a re-run adopts the real
// result. A row with a MAC under another barrier's key, a row without a
// MAC (made before rows carried one) and a real row whose result was
// changed afterwards are not adopted either.
func TestBarrierForgedRowIsIgnored(t *testing.T) {
	tl := newTool(t, Options{})
	ctx := context.Background()
	tl.run(ctx, request{Config: M{"connection": testDSN, "command": "CREATE TABLE barrier_forged (v text)"}})
	// The table exists once a barriered task ran in this database.
	tl.ExecBarrier(ctx, nil, M{"connection": testDSN, "command": "SELECT 1"}, 0, "warm/up", bkey("warm/up"))
	insert := M{"connection": testDSN, "command": "INSERT INTO barrier_forged VALUES ('real')"}
	forged := `{"rows": [{"note": "FORGED BY ANOTHER PLAYBOOK"}], "row_count": 1, "command": "INSERT"}`
	for name, forge := range map[string]func(key string){
		"no mac": func(key string) {
			exec(t, `INSERT INTO noetl_task_barrier (key, result) VALUES ($1, $2::jsonb)`, key, forged)
		},
		"made-up mac": func(key string) {
			exec(t, `INSERT INTO noetl_task_barrier (key, result, mac) VALUES ($1, $2::jsonb, 'v1=AAAA')`, key, forged)
		},
		"other key's mac": func(key string) {
			exec(t, `INSERT INTO noetl_task_barrier (key, result, mac) VALUES ($1, $2::jsonb, $3)`, key, forged, rowMAC(bkey("other/unit/0.1.0"), key, forged))
		},
	} {
		key := "victim-exec/" + name + "/0.1.0"
		forge(key)
		before := countRows(t, "barrier_forged")
		out := tl.ExecBarrier(ctx, nil, insert, 0, key, bkey(key))
		if out.Status != "ok" || out.Extra["adopted"] != nil {
			t.Fatalf("%s: the victim adopted the forged row: %+v %v %v", name, out.Error, out.Extra, out.Result)
		}
		if strings.Contains(fmt.Sprint(out.Result), "FORGED") || countRows(t, "barrier_forged") != before+1 {
			t.Fatalf("%s: the victim's SQL did not run (result %v)", name, out.Result)
		}
		// The real record took the forged row's place: a re-run adopts it.
		again := tl.ExecBarrier(ctx, nil, insert, 0, key, bkey(key))
		if again.Status != "ok" || again.Extra["adopted"] != true || strings.Contains(fmt.Sprint(again.Result), "FORGED") || countRows(t, "barrier_forged") != before+1 {
			t.Fatalf("%s: re-run after the real record: %+v %v %v", name, again.Error, again.Extra, again.Result)
		}
	}
	// A real record whose result is changed afterwards is not adopted.
	key := "victim-exec/tampered/0.1.0"
	if out := tl.ExecBarrier(ctx, nil, insert, 0, key, bkey(key)); out.Status != "ok" {
		t.Fatal(out.Error)
	}
	exec(t, `UPDATE noetl_task_barrier SET result = $2::jsonb WHERE key = $1`, key, forged)
	before := countRows(t, "barrier_forged")
	if out := tl.ExecBarrier(ctx, nil, insert, 0, key, bkey(key)); out.Status != "ok" || out.Extra["adopted"] != nil || countRows(t, "barrier_forged") != before+1 {
		t.Fatalf("tampered record: %+v %v", out.Error, out.Extra)
	}
	// A barrier without its MAC key is refused before any SQL runs.
	before = countRows(t, "barrier_forged")
	if out := tl.ExecBarrier(ctx, nil, insert, 0, "no/key", nil); out.Status != "error" || out.Error.Kind != "config" || countRows(t, "barrier_forged") != before {
		t.Fatalf("no MAC key: %+v", out)
	}
}

// A table made before rows carried a MAC gains the column.
func TestBarrierAddsMACColumn(t *testing.T) {
	exec(t, `DROP TABLE IF EXISTS noetl_task_barrier`)
	exec(t, `CREATE TABLE noetl_task_barrier (key text PRIMARY KEY, result jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
	tl := newTool(t, Options{})
	ctx := context.Background()
	out := tl.ExecBarrier(ctx, nil, M{"connection": testDSN, "command": "SELECT 42 AS n"}, 0, "old/table/1", bkey("old/table/1"))
	if out.Status != "ok" {
		t.Fatal(out.Error)
	}
	if again := tl.ExecBarrier(ctx, nil, M{"connection": testDSN, "command": "SELECT 42 AS n"}, 0, "old/table/1", bkey("old/table/1")); again.Extra["adopted"] != true {
		t.Fatalf("re-run on a migrated table: %+v %v", again.Error, again.Extra)
	}
}
