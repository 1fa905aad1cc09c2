package postgres

import (
	"context"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/noetl/gcpengine/runner/kinds/internal/pgtest"
	"github.com/noetl/gcpengine/shared/types"
)

// request mirrors the fields of tools.Request that the kind uses (the kind
// packages cannot import package tools, which imports them).
type request struct {
	Args     map[string]any
	Config   map[string]any
	TimeoutS float64
}

func (t *Tool) run(ctx context.Context, r request) types.Outcome {
	return t.Exec(ctx, r.Args, r.Config, r.TimeoutS)
}

// The tests run against a real, throwaway PostgreSQL (15) server started by
// TestMain from the server binaries in $NOETL_PG_BIN (default
// /usr/local/bin, then PATH).

var (
	testDSN  string
	testPort int
)

func TestMain(m *testing.M) { os.Exit(mainWithServer(m)) }

func mainWithServer(m *testing.M) int {
	dsn, port, stop, err := pgtest.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "postgres tool tests need a local PostgreSQL server: %v\n", err)
		return 1
	}
	defer stop()
	testDSN, testPort = dsn, port
	return m.Run()
}

type M = map[string]any
type L = []any

func newTool(t *testing.T, opts Options) *Tool {
	tl := New(opts)
	t.Cleanup(tl.Close)
	return tl
}

func runSQL(t *testing.T, tl *Tool, sql string, params any) types.Outcome {
	t.Helper()
	cfg := M{"connection": testDSN, "command": sql}
	if params != nil {
		cfg["params"] = params
	}
	return tl.run(context.Background(), request{Config: cfg})
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %q error %+v pg %+v", o.Status, o.Error, o.PG)
	}
	return o.Result.(M)
}

// summary is r without its per-statement entries (command_0, ...).
func summary(r M) M {
	out := M{}
	for k, v := range r {
		if !strings.HasPrefix(k, "command_") {
			out[k] = v
		}
	}
	return out
}

func eq(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mismatch\n got: %#v\nwant: %#v", got, want)
	}
}

func TestDDLInsertUpsertSelect(t *testing.T) {
	tl := newTool(t, Options{})
	r := ok(t, runSQL(t, tl, `CREATE TABLE items (
		id int PRIMARY KEY, name text NOT NULL, payload jsonb, price numeric(10,2))`, nil))
	// NoETL's shapes (README "Tool kinds", postgres): DDL and DML give
	// status, row_count, affected_rows, message, statement_count; a single
	// statement has no command_0.
	eq(t, r, M{"status": "success", "row_count": int64(0), "affected_rows": int64(0), "message": "Command executed. 0 rows affected.", "statement_count": int64(1), "command": "CREATE TABLE"})

	r = ok(t, runSQL(t, tl, "INSERT INTO items (id, name, price) VALUES ($1, $2, $3)", L{int64(1), "apple", 9.99}))
	eq(t, r, M{"status": "success", "row_count": int64(1), "affected_rows": int64(1), "message": "Command executed. 1 rows affected.", "statement_count": int64(1), "command": "INSERT 0 1"})

	upsert := `INSERT INTO items (id, name, payload)
		SELECT r.id, r.name, r.payload FROM jsonb_to_recordset($1::jsonb) AS r(id int, name text, payload jsonb)
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, payload = EXCLUDED.payload`
	batch := L{
		M{"id": int64(1), "name": "apple v2", "payload": M{"tags": L{"red", "fruit"}, "n": int64(1)}},
		M{"id": int64(2), "name": "pear", "payload": M{"n": 2.5}},
		M{"id": int64(3), "name": "plum", "payload": nil},
	}
	r = ok(t, runSQL(t, tl, upsert, L{batch}))
	eq(t, r, M{"status": "success", "row_count": int64(3), "affected_rows": int64(3), "message": "Command executed. 3 rows affected.", "statement_count": int64(1), "command": "INSERT 0 3"})
	// Idempotent replay of the same page.
	r = ok(t, runSQL(t, tl, upsert, L{batch}))
	eq(t, r["row_count"], int64(3))

	r = ok(t, runSQL(t, tl, "SELECT id, name, payload, price FROM items WHERE id <= $1 ORDER BY id", L{2}))
	eq(t, r, M{
		"status":          "success",
		"statement_count": int64(1),
		"columns":         L{"id", "name", "payload", "price"},
		"row_count":       int64(2),
		"command":         "SELECT 2",
		"rows": L{
			M{"id": int64(1), "name": "apple v2", "payload": M{"n": int64(1), "tags": L{"red", "fruit"}}, "price": 9.99},
			M{"id": int64(2), "name": "pear", "payload": M{"n": 2.5}, "price": nil},
		},
	})

	// Empty result still has columns and an empty rows list.
	r = ok(t, runSQL(t, tl, "SELECT id FROM items WHERE id < 0", nil))
	eq(t, r, M{"status": "success", "statement_count": int64(1), "columns": L{"id"}, "row_count": int64(0), "command": "SELECT 0", "rows": L{}})

	// INSERT ... RETURNING returns rows.
	r = ok(t, runSQL(t, tl, "INSERT INTO items (id, name) VALUES (10, 'x'), (11, 'y') RETURNING id", nil))
	eq(t, r["rows"], L{M{"id": int64(10)}, M{"id": int64(11)}})
	eq(t, r["command"], "INSERT 0 2")

	// Named params (@name) from a params mapping.
	r = ok(t, runSQL(t, tl, "SELECT name FROM items WHERE id = @id", M{"id": 2}))
	eq(t, r["rows"], L{M{"name": "pear"}})
}

func TestUntypedParamsAndSchemaChange(t *testing.T) {
	tl := newTool(t, Options{MaxConnsPerPool: 1})
	ok(t, runSQL(t, tl, "CREATE TABLE ev (d date, label text, at timestamptz)", nil))
	// Rendered strings and ints fit date/text/timestamptz columns: parameters
	// are sent untyped and the server infers their types.
	ok(t, runSQL(t, tl, "INSERT INTO ev VALUES ($1, $2, $3)", L{"2024-05-06", int64(7), "2024-05-06T01:02:03Z"}))
	r := ok(t, runSQL(t, tl, "SELECT * FROM ev", nil))
	eq(t, r["rows"], L{M{"d": "2024-05-06", "label": "7", "at": "2024-05-06T01:02:03Z"}})
	// The same query text after a schema change sees the new column.
	ok(t, runSQL(t, tl, "ALTER TABLE ev ADD COLUMN extra int DEFAULT 1", nil))
	r = ok(t, runSQL(t, tl, "SELECT * FROM ev", nil))
	eq(t, r["columns"], L{"d", "label", "at", "extra"})
	eq(t, r["rows"].(L)[0].(M)["extra"], int64(1))
}

func TestUniqueViolation(t *testing.T) {
	tl := newTool(t, Options{})
	ok(t, runSQL(t, tl, "CREATE TABLE uniq (id int PRIMARY KEY)", nil))
	ok(t, runSQL(t, tl, "INSERT INTO uniq VALUES ($1)", L{1}))
	o := runSQL(t, tl, "INSERT INTO uniq VALUES ($1)", L{1})
	if o.Status != types.StatusError || o.Error.Kind != "postgres" || o.Error.Retryable {
		t.Fatalf("outcome %+v err %+v", o, o.Error)
	}
	if o.PG == nil || o.PG.Code != "23505" || o.PG.SQLState != "23505" {
		t.Fatalf("pg %+v", o.PG)
	}
	if !strings.Contains(o.Error.Message, "duplicate key") || !strings.Contains(o.Error.Message, "Key (id)=(1) already exists") {
		t.Fatalf("message %q", o.Error.Message)
	}
	m := o.ToMap()
	if m["pg"].(map[string]any)["code"] != "23505" {
		t.Fatalf("ToMap %v", m)
	}
}

const typesQuery = `SELECT 1::int2 AS i2, 2::int4 AS i4, 3000000000::int8 AS i8,
	1.5::float4 AS f4, 2.25::float8 AS f8, 12.34::numeric AS num, 42::numeric AS numi,
	'NaN'::numeric AS numnan, 'héllo'::text AS txt, 'v'::varchar AS vc, true AS b,
	'2024-01-02'::date AS d, '2024-01-02 03:04:05.123+00'::timestamptz AS tstz,
	'2024-01-02 03:04:05'::timestamp AS ts, 'infinity'::timestamptz AS tsinf,
	'\x0102ff'::bytea AS ba, '{"a": [1, 2.5, "s", null], "big": 9007199254740993}'::jsonb AS jb,
	'{"b": 1}'::json AS j, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u,
	ARRAY[1, 2, 3] AS ai, ARRAY['a', NULL] AS at, NULL::text AS nul,
	'1 day 02:00:00'::interval AS iv, '12:34:56'::time AS tm, '192.168.0.1'::inet AS ip,
	'10.0.0.0/8'::cidr AS net, 'x'::"char" AS ch, 'sad'::mood AS enum`

var typesWant = M{
	"i2": int64(1), "i4": int64(2), "i8": int64(3000000000),
	"f4": 1.5, "f8": 2.25, "num": 12.34, "numi": int64(42), "numnan": "NaN",
	"txt": "héllo", "vc": "v", "b": true,
	"d": "2024-01-02", "tstz": "2024-01-02T03:04:05.123Z", "ts": "2024-01-02T03:04:05Z", "tsinf": "infinity",
	"ba": "AQL/", "jb": M{"a": L{int64(1), 2.5, "s", nil}, "big": int64(9007199254740993)}, "j": M{"b": int64(1)},
	"u":  "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
	"ai": L{int64(1), int64(2), int64(3)}, "at": L{"a", nil}, "nul": nil,
	"iv": "1 day 02:00:00", "tm": "12:34:56.000000", "ip": "192.168.0.1", "net": "10.0.0.0/8",
	"ch": "x", "enum": "sad",
}

func TestSelectTypes(t *testing.T) {
	tl := newTool(t, Options{})
	ok(t, runSQL(t, tl, "SET TIME ZONE 'UTC'; CREATE TYPE mood AS ENUM ('sad', 'ok')", nil))
	// Extended protocol (binary format where pgx knows the type).
	r := ok(t, runSQL(t, tl, typesQuery, nil))
	rows := r["rows"].(L)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	got := rows[0].(M)
	for k, want := range typesWant {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("extended %s = %#v, want %#v", k, got[k], want)
		}
	}
	// Simple protocol (script, text format) gives the same values.
	r = ok(t, runSQL(t, tl, "SET TIME ZONE 'UTC';\n"+typesQuery+";", nil))
	eq(t, r["statements"], int64(2))
	got = r["rows"].(L)[0].(M)
	for k, want := range typesWant {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("script %s = %#v, want %#v", k, got[k], want)
		}
	}
}

func TestScriptIsOneTransaction(t *testing.T) {
	tl := newTool(t, Options{})
	r := ok(t, runSQL(t, tl, `
		-- a comment; with a semicolon
		CREATE TABLE script_t (a int, s text);
		INSERT INTO script_t VALUES (1, 'semi;colon'), (2, $$dollar; quoted$$);
		/* block; comment */
		SELECT count(*) AS n FROM script_t;`, nil))
	eq(t, summary(r), M{"status": "success", "rows": L{M{"n": int64(2)}}, "row_count": int64(1), "columns": L{"n"}, "command": "SELECT 1", "statements": int64(3), "statement_count": int64(3)})
	// Each statement's own result, as NoETL's postgres executor keys them
	// (command_<i>; playbooks read {{ step.command_0.rows }}).
	eq(t, r["command_0"], M{"status": "success", "row_count": int64(0), "message": "Command executed. 0 rows affected."})
	eq(t, r["command_1"], M{"status": "success", "row_count": int64(2), "message": "Command executed. 2 rows affected."})
	eq(t, r["command_2"], M{"status": "success", "row_count": int64(1), "rows": L{M{"n": int64(2)}}, "columns": L{"n"}})
	if _, extra := r["command_3"]; extra {
		t.Fatalf("command_3 for a 3-statement script: %v", r)
	}

	r = ok(t, runSQL(t, tl, "INSERT INTO script_t VALUES (3, 'x'); UPDATE script_t SET s = 'y' WHERE a >= 2", nil))
	eq(t, summary(r), M{"status": "success", "row_count": int64(2), "affected_rows": int64(2), "message": "Command executed. 2 rows affected.", "command": "UPDATE 2", "statements": int64(2), "statement_count": int64(2)})

	o := runSQL(t, tl, "INSERT INTO script_t VALUES (4, 'rolled back'); SELECT 1/0", nil)
	if o.Status != types.StatusError || o.PG == nil || o.PG.Code != "22012" || o.Error.Retryable {
		t.Fatalf("err %+v pg %+v", o.Error, o.PG)
	}
	r = ok(t, runSQL(t, tl, "SELECT count(*) AS n FROM script_t", nil))
	eq(t, r["rows"], L{M{"n": int64(3)}})

	o = runSQL(t, tl, "SELECT $1; SELECT 2", L{1})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("params with a script: %+v", o.Error)
	}
}

func TestConnectionSettings(t *testing.T) {
	tl := newTool(t, Options{})
	req := func(cfg M, args M) types.Outcome {
		cfg["command"] = "SELECT current_user AS u, current_database() AS d"
		return tl.run(context.Background(), request{Config: cfg, Args: args})
	}
	want := L{M{"u": "postgres", "d": "postgres"}}
	eq(t, ok(t, req(M{"auth": M{"host": "127.0.0.1", "port": int64(testPort), "user": "postgres",
		"password": "pw with 'quote' and \\", "database": "postgres", "sslmode": "disable"}}, nil))["rows"], want)
	eq(t, ok(t, req(M{"auth": M{"db_host": "127.0.0.1", "db_port": strconv.Itoa(testPort), "db_user": "postgres",
		"db_password": "x", "db_name": "postgres", "sslmode": "disable"}}, nil))["rows"], want)
	eq(t, ok(t, req(M{"db_host": "127.0.0.1", "db_port": testPort, "db_user": "postgres", "db_name": "postgres", "sslmode": "disable"}, nil))["rows"], want)
	eq(t, ok(t, req(M{"dsn": fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", testPort)}, nil))["rows"], want)
	eq(t, ok(t, req(M{"auth": testDSN}, nil))["rows"], want)
	eq(t, ok(t, req(M{}, M{"pg_dsn": testDSN}))["rows"], want)

	o := req(M{}, nil)
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "no connection") {
		t.Fatalf("missing connection: %+v", o.Error)
	}
	o = req(M{"auth": "pg_k8s"}, nil)
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "pg_k8s") {
		t.Fatalf("unresolved credential: %+v", o.Error)
	}
	o = tl.run(context.Background(), request{Config: M{"connection": testDSN}})
	if o.Status != types.StatusError || o.Error.Kind != "config" {
		t.Fatalf("missing command: %+v", o.Error)
	}
}

func TestConnectionErrorRetryableAndPasswordHidden(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	tl := newTool(t, Options{})
	const secret = "Sup3r-Secret-Pw"
	for _, cfg := range []M{
		{"connection": fmt.Sprintf("postgres://app:%s@127.0.0.1:%d/db?sslmode=disable&connect_timeout=2", secret, closedPort)},
		{"auth": M{"host": "127.0.0.1", "port": closedPort, "user": "app", "password": secret, "database": "db", "sslmode": "disable"}},
	} {
		cfg["command"] = "SELECT 1"
		o := tl.run(context.Background(), request{Config: cfg})
		if o.Status != types.StatusError || o.Error.Kind != "postgres" || !o.Error.Retryable || o.PG == nil || o.PG.Code != "08001" {
			t.Fatalf("outcome err %+v pg %+v", o.Error, o.PG)
		}
		if strings.Contains(o.Error.Message, secret) {
			t.Fatalf("password leaked: %q", o.Error.Message)
		}
	}
	// A malformed DSN: config error, password not echoed.
	o := tl.run(context.Background(), request{Config: M{
		"connection": "postgres://app:" + secret + "@127.0.0.1:notaport/db", "command": "SELECT 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "config" || strings.Contains(o.Error.Message, secret) {
		t.Fatalf("bad dsn: %+v", o.Error)
	}
	// Another role through an auth mapping (the test server trusts every
	// password, so a wrong-password 28P01 cannot be provoked here).
	ok(t, runSQL(t, tl, "CREATE ROLE pwuser LOGIN PASSWORD 'right-password'", nil))
	o = tl.run(context.Background(), request{Config: M{
		"auth":    M{"host": "127.0.0.1", "port": testPort, "user": "pwuser", "password": "whatever", "database": "postgres", "sslmode": "disable"},
		"command": "SELECT current_user AS u"}})
	eq(t, ok(t, o)["rows"], L{M{"u": "pwuser"}})
}

func TestTimeout(t *testing.T) {
	tl := newTool(t, Options{})
	start := time.Now()
	o := tl.run(context.Background(), request{TimeoutS: 0.3, Config: M{"connection": testDSN, "command": "SELECT pg_sleep(10)"}})
	if time.Since(start) > 5*time.Second {
		t.Fatalf("timeout took %s", time.Since(start))
	}
	if o.Status != types.StatusError || o.Error.Kind != "timeout" || !o.Error.Retryable {
		t.Fatalf("err %+v pg %+v", o.Error, o.PG)
	}
	// The pool is still usable afterwards.
	ok(t, runSQL(t, tl, "SELECT 1", nil))
}

// activeWith counts the server's backends running a statement that
// contains marker (pg_stat_activity), other than the asking one.
func activeWith(t *testing.T, marker string) int {
	t.Helper()
	c, err := pgx.Connect(context.Background(), testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'", marker).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A task whose context is canceled (a stop interrupting it: shared/worker
// interrupt.go) has its statement canceled on the server, not left
// running on the closed connection: pgx's context handling sets the
// connection's deadline and, as it closes the connection, sends the
// server a cancel request for it (the protocol message pg_cancel_backend
// stands for). The outcome is kind canceled; a timeout stays a timeout.
func TestCancelReachesTheServer(t *testing.T) {
	tl := newTool(t, Options{})
	for _, tc := range []struct {
		name, kind string
		timeoutS   float64
		cancel     bool
	}{
		{name: "canceled", kind: "canceled", cancel: true},
		{name: "timeout", kind: "timeout", timeoutS: 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("cancel_%s_%d", tc.name, time.Now().UnixNano())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan types.Outcome, 1)
			go func() {
				done <- tl.run(ctx, request{TimeoutS: tc.timeoutS, Config: M{"connection": testDSN, "command": "SELECT pg_sleep(60) /* " + marker + " */"}})
			}()
			deadline := time.Now().Add(20 * time.Second)
			for activeWith(t, marker) == 0 { // positive evidence: it runs on the server
				if time.Now().After(deadline) {
					t.Fatal("the statement never showed in pg_stat_activity")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if tc.cancel {
				cancel()
			}
			var o types.Outcome
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the task did not end 20 s after its context")
			}
			if o.Status != types.StatusError || o.Error == nil || string(o.Error.Kind) != tc.kind {
				t.Fatalf("outcome %+v %+v, want kind %s", o.Status, o.Error, tc.kind)
			}
			// The statement no longer runs on the server (with pgx's
			// default it ran on for the whole minute).
			deadline = time.Now().Add(5 * time.Second)
			for activeWith(t, marker) != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the statement still runs on the server 5 s after the task ended")
				}
				time.Sleep(20 * time.Millisecond)
			}
			ok(t, runSQL(t, tl, "SELECT 1", nil)) // the pool is still usable
		})
	}
}

func TestRetryableSQLStates(t *testing.T) {
	tl := newTool(t, Options{})
	o := runSQL(t, tl, `DO $$ BEGIN RAISE EXCEPTION 'boom' USING ERRCODE = '40001'; END $$`, nil)
	if o.Status != types.StatusError || !o.Error.Retryable || o.PG.Code != "40001" {
		t.Fatalf("40001: %+v %+v", o.Error, o.PG)
	}
	for code, want := range map[string]bool{"40001": true, "40P01": true, "08006": true, "53300": true, "57P01": true, "23505": false, "42P01": false, "22012": false} {
		if retryableSQLState(code) != want {
			t.Errorf("retryable(%s) = %v", code, !want)
		}
	}
}

func TestPoolCacheBounded(t *testing.T) {
	tl := newTool(t, Options{MaxPools: 2})
	for i := 0; i < 4; i++ {
		dsn := fmt.Sprintf("%s&application_name=app%d", testDSN, i)
		o := tl.run(context.Background(), request{Config: M{"connection": dsn, "command": "SELECT current_setting('application_name') AS a"}})
		eq(t, ok(t, o)["rows"], L{M{"a": fmt.Sprintf("app%d", i)}})
		o = tl.run(context.Background(), request{Config: M{"connection": dsn, "command": "SELECT 1 AS x"}})
		ok(t, o)
	}
	if n := tl.PoolCount(); n != 2 {
		t.Fatalf("pools = %d, want 2", n)
	}
	tl.Close()
	o := tl.run(context.Background(), request{Config: M{"connection": testDSN, "command": "SELECT 1"}})
	if o.Status != types.StatusError || o.Error.Kind != "internal" {
		t.Fatalf("after close: %+v", o.Error)
	}
}

func TestMaxRows(t *testing.T) {
	tl := newTool(t, Options{MaxRows: 3})
	r := ok(t, runSQL(t, tl, "SELECT g FROM generate_series(1, 10) g", nil))
	eq(t, r["row_count"], int64(3))
	eq(t, r["truncated"], true)
	r = ok(t, runSQL(t, tl, "SELECT 1; SELECT g FROM generate_series(1, 10) g", nil))
	eq(t, r["row_count"], int64(3))
	eq(t, r["truncated"], true)
}

func TestSplitSQL(t *testing.T) {
	cases := map[string][]string{
		"SELECT 1":                          {"SELECT 1"},
		"SELECT 1;":                         {"SELECT 1"},
		" ; ;SELECT 1;\n-- only a comment;": {"SELECT 1"},
		"SELECT 'a;b'; SELECT 2":            {"SELECT 'a;b'", "SELECT 2"},
		"SELECT E'it\\'s;'; SELECT 2":       {"SELECT E'it\\'s;'", "SELECT 2"},
		"SELECT 'it''s;'":                   {"SELECT 'it''s;'"},
		`SELECT "a;b" FROM t`:               {`SELECT "a;b" FROM t`},
		"CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql; SELECT f()": {
			"CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql", "SELECT f()"},
		"SELECT $1::int; SELECT 2":    {"SELECT $1::int", "SELECT 2"},
		"/* a; /* nested; */ b; */ X": {"/* a; /* nested; */ b; */ X"},
		"/* only; */":                 nil,
		"":                            nil,
	}
	for in, want := range cases {
		if got := splitSQL(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitSQL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBindParams(t *testing.T) {
	args, named, err := bindParams(L{M{"a": 1}, L{1, "x"}, 3, "s", nil})
	if err != nil || named != nil {
		t.Fatal(err)
	}
	eq(t, args, L{`{"a":1}`, `[1,"x"]`, int64(3), "s", nil})
	if _, _, err := bindParams(L{M{"c": make(chan int)}}); err == nil {
		t.Fatal("want error for a channel")
	}
}

// TestNumberRule: column numbers follow the engine's one number rule
// (shared/jsonx Number): a float4 is its shortest decimal form (it was
// the widened float32 bits, 0.10000000149011612), NaN and infinities their
// strings, and a Go uint64 beyond int64 (a codec's) the nearest float.
func TestNumberRule(t *testing.T) {
	tl := newTool(t, Options{})
	r := ok(t, runSQL(t, tl, `SELECT 0.1::float4 AS f4, 'Infinity'::float8 AS finf, '-Infinity'::float4 AS f4ninf, 'NaN'::float8 AS fnan`, nil))
	got := r["rows"].(L)[0].(M)
	want := M{"f4": 0.1, "finf": "Infinity", "f4ninf": "-Infinity", "fnan": "NaN"}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v (%T), want %#v", k, got[k], got[k], w)
		}
	}
	for in, w := range map[any]any{uint64(1 << 63): 9223372036854775808.0, uint32(7): int64(7), float32(0.1): 0.1, int8(-1): int64(-1)} {
		if f := friendly(in); !reflect.DeepEqual(f, w) {
			t.Errorf("friendly(%#v) = %#v, want %#v", in, f, w)
		}
	}
}

// TestPooledSessionsComeBackClean: a task that leaves state in its
// database session (a temporary table shadowing a real one, settings,
// search_path, a prepared statement, LISTEN, a session advisory lock, a
// role) leaves nothing of it to the next task on the same pooled
// connection (one connection per pool: the next task gets that very
// backend).
func TestPooledSessionsComeBackClean(t *testing.T) {
	tl := newTool(t, Options{MaxConnsPerPool: 1})
	ok(t, runSQL(t, tl, "DROP TABLE IF EXISTS pool_real; CREATE TABLE pool_real (v text); INSERT INTO pool_real VALUES ('real')", nil))
	poison := ok(t, runSQL(t, tl, `CREATE TEMP TABLE pool_real (v text); INSERT INTO pool_real VALUES ('poisoned');
SET search_path = pg_temp, public;
SET statement_timeout = '77s';
SET default_transaction_read_only = on;
PREPARE poison AS SELECT 'attacker';
LISTEN poison;
SELECT pg_advisory_lock(4242);
SELECT pg_backend_pid() AS pid`, nil))
	pid := poison["rows"].(L)[0].(M)["pid"]
	got := ok(t, runSQL(t, tl, `SELECT pg_backend_pid() AS pid,
  (SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relkind = 'r') AS temp_tables,
  (SELECT v FROM pool_real LIMIT 1) AS real_value,
  current_setting('rt.poison', true) AS setting,
  current_setting('search_path') AS search_path,
  current_setting('statement_timeout') AS statement_timeout,
  current_setting('default_transaction_read_only') AS read_only,
  (SELECT count(*) FROM pg_prepared_statements) AS prepared,
  (SELECT count(*) FROM pg_listening_channels()) AS listening,
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory`, nil))["rows"].(L)[0].(M)
	if got["pid"] != pid {
		t.Fatalf("the second task ran on backend %v, the first on %v: the case proves nothing", got["pid"], pid)
	}
	want := M{"pid": pid, "temp_tables": int64(0), "real_value": "real", "setting": nil, "search_path": `"$user", public`,
		"statement_timeout": "0", "read_only": "off", "prepared": int64(0), "listening": int64(0), "advisory": int64(0)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("session state crossed tasks:\n got %v\nwant %v", got, want)
	}
	// A custom setting's value is reset too (its name stays defined,
	// empty, for the session's life: PostgreSQL keeps placeholders).
	custom := ok(t, runSQL(t, tl, `SELECT set_config('rt.poison', 'attacker', false), pg_backend_pid() AS pid`, nil))["rows"].(L)[0].(M)["pid"]
	after := ok(t, runSQL(t, tl, `SELECT current_setting('rt.poison', true) AS setting, pg_backend_pid() AS pid`, nil))["rows"].(L)[0].(M)
	if after["setting"] != "" || after["pid"] != custom {
		t.Fatalf("after a custom setting: %v (the poisoned backend was %v)", after, custom)
	}
	// pgx's own statement cache was cleared with the server's: a
	// cached-statement query works after the reset.
	ok(t, tl.run(context.Background(), request{Config: M{"connection": testDSN + "&default_query_exec_mode=cache_statement", "command": "SELECT $1::int AS n", "params": L{1}}}))
	ok(t, tl.run(context.Background(), request{Config: M{"connection": testDSN + "&default_query_exec_mode=cache_statement", "command": "SELECT $1::int AS n", "params": L{2}}}))
}
