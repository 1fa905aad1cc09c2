package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

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
	first := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/0.1.0")
	if first.Status != "ok" || first.Extra["adopted"] != nil {
		t.Fatalf("first run: %+v %v", first.Error, first.Extra)
	}
	// A re-run of the same attempt (its process died after the commit)
	// adopts the recorded result and inserts nothing.
	again := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/0.1.0")
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
	if out := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/0.2.0"); out.Status != "ok" || out.Extra["adopted"] != nil {
		t.Fatalf("next attempt: %+v %v", out.Error, out.Extra)
	}
	if n := countRows(t, "barrier_once"); n != 6 {
		t.Fatalf("%d rows after a second attempt, want 6", n)
	}
	// A script (several statements) is barriered as a whole.
	script := M{"connection": testDSN, "command": "INSERT INTO barrier_once VALUES (10); INSERT INTO barrier_once VALUES (11)"}
	for range 2 {
		if out := tl.ExecBarrier(ctx, nil, script, 0, "exec/unit/1.1.0"); out.Status != "ok" {
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
	if out := tl.ExecBarrier(ctx, nil, bad, 0, "exec/unit/fail"); out.Status != "error" {
		t.Fatalf("duplicate key did not fail: %+v", out)
	}
	if n := countRows(t, "barrier_fail"); n != 0 {
		t.Fatalf("%d rows after a failed attempt, want 0", n)
	}
	good := M{"connection": testDSN, "command": "INSERT INTO barrier_fail VALUES (1)"}
	if out := tl.ExecBarrier(ctx, nil, good, 0, "exec/unit/fail"); out.Status != "ok" || out.Extra["adopted"] != nil {
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
			out := tl.ExecBarrier(ctx, nil, insert, 0, "exec/unit/race")
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
	out := tl.ExecBarrier(context.Background(), nil, M{"connection": testDSN, "command": "VACUUM"}, 0, "exec/unit/vacuum")
	if out.Status != "ok" {
		t.Fatalf("VACUUM with a barrier key: %+v", out.Error)
	}
}
