//go:build cgo

package duckdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noetl/gcpengine/shared/types"
)

type M = map[string]any
type L = []any

func exec(t *testing.T, tl *Tool, cfg M) types.Outcome {
	t.Helper()
	return tl.Exec(context.Background(), nil, cfg, 0)
}

func ok(t *testing.T, o types.Outcome) M {
	t.Helper()
	if o.Status != types.StatusOK {
		t.Fatalf("status %s: %+v", o.Status, o.Error)
	}
	return o.Result.(M)
}

// TestConformanceQuery is duckdb_test.yaml's start step: a three-statement
// :memory: script whose last SELECT returns the 2 users aged 30 or more.
func TestConformanceQuery(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{
		"database": ":memory:",
		"query":    "CREATE TABLE users (id INTEGER, name VARCHAR, age INTEGER);\nINSERT INTO users VALUES (1, 'Alice', 30), (2, 'Bob', 25), (3, 'Charlie',\n35);\nSELECT name, age FROM users WHERE age >= 30 ORDER BY age;\n",
	}))
	want := M{"rows": L{M{"name": "Alice", "age": int64(30)}, M{"name": "Charlie", "age": int64(35)}}, "row_count": int64(2),
		"columns": L{"name", "age"}, "command": "SELECT", "statements": int64(3)}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %#v\nwant %#v", r, want)
	}
	// Every :memory: task starts from an empty database.
	o := exec(t, tl, M{"query": "SELECT * FROM users"})
	if o.Status != types.StatusError || o.Error.Kind != "duckdb" || !strings.Contains(o.Error.Message, "users") {
		t.Fatalf("fresh database expected: %+v", o.Error)
	}
}

func TestCommandsAndParams(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"command": "CREATE TABLE t (a INT); INSERT INTO t VALUES (1), (2), (3)"}))
	if r["row_count"] != int64(3) || r["affected_rows"] != int64(3) || r["command"] != "INSERT" {
		t.Fatalf("%#v", r)
	}
	r = ok(t, exec(t, tl, M{"commands": L{"CREATE TABLE t (a INT, b VARCHAR)", "INSERT INTO t VALUES (1, 'x'), (2, 'y')", "SELECT b FROM t WHERE a = ?"}, "params": L{2}}))
	if !reflect.DeepEqual(r["rows"], L{M{"b": "y"}}) {
		t.Fatalf("%#v", r)
	}
	r = ok(t, exec(t, tl, M{"query": "SELECT $x + 1 AS y, $s AS s, $j AS j", "params": M{"x": 41, "s": "str", "j": M{"k": 1}}}))
	if !reflect.DeepEqual(r["rows"], L{M{"y": int64(42), "s": "str", "j": `{"k":1}`}}) {
		t.Fatalf("%#v", r)
	}
}

func TestValueMapping(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"query": `SELECT 1::TINYINT AS ti, 170141183460469231731687303715884105727::HUGEINT AS big, 5::HUGEINT AS small_huge,
		1.50::DECIMAL(10,2) AS dec, 12.00::DECIMAL(10,2) AS dec_int, 2.5::DOUBLE AS dbl, 'NaN'::DOUBLE AS nan,
		DATE '2024-01-02' AS d, TIME '01:02:03.5' AS tm, TIMESTAMP '2024-01-02 03:04:05' AS ts,
		'6f1a0c2e-0000-4000-8000-000000000001'::UUID AS u, 'ab'::BLOB AS bl, [1, 2] AS lst, {'a': 1, 'b': 'x'} AS st,
		MAP {'k': 1} AS mp, INTERVAL 3 DAY AS iv, NULL AS n, true AS bo`}))
	row := r["rows"].(L)[0].(M)
	want := M{"ti": int64(1), "big": "170141183460469231731687303715884105727", "small_huge": int64(5),
		"dec": 1.5, "dec_int": int64(12), "dbl": 2.5, "nan": "NaN",
		"d": "2024-01-02", "tm": "01:02:03.5", "ts": "2024-01-02T03:04:05Z",
		"u": "6f1a0c2e-0000-4000-8000-000000000001", "bl": "YWI=", "lst": L{int64(1), int64(2)}, "st": M{"a": int64(1), "b": "x"},
		"mp": M{"k": int64(1)}, "iv": M{"months": int64(0), "days": int64(3), "micros": int64(0)}, "n": nil, "bo": true}
	for k, w := range want {
		if !reflect.DeepEqual(row[k], w) {
			t.Errorf("%s = %#v (%T), want %#v", k, row[k], row[k], w)
		}
	}
}

// TestLocalFiles: a database file persists across tasks, and CSV/Parquet
// files are read and written from SQL with the built-in extensions.
func TestLocalFiles(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "people.csv")
	if err := os.WriteFile(csv, []byte("id,name,age\n1,Ann,41\n2,Ben,17\n3,Cy,30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := New(Options{BaseDir: dir})
	defer tl.Close()
	ok(t, exec(t, tl, M{"database": "local.duckdb", "command": "CREATE TABLE people AS SELECT * FROM read_csv('" + csv + "')"}))
	if _, err := os.Stat(filepath.Join(dir, "local.duckdb")); err != nil {
		t.Fatalf("relative database not created under BaseDir: %v", err)
	}
	pq := filepath.Join(dir, "adults.parquet")
	ok(t, exec(t, tl, M{"database": filepath.Join(dir, "local.duckdb"), "command": "COPY (SELECT * FROM people WHERE age >= 18 ORDER BY id) TO '" + pq + "' (FORMAT parquet)"}))
	r := ok(t, exec(t, tl, M{"query": "SELECT name FROM '" + pq + "' ORDER BY id"}))
	if !reflect.DeepEqual(r["rows"], L{M{"name": "Ann"}, M{"name": "Cy"}}) {
		t.Fatalf("%#v", r)
	}
	r = ok(t, exec(t, tl, M{"database": filepath.Join(dir, "local.duckdb"), "read_only": true, "query": "SELECT count(*) AS n FROM people"}))
	if r["rows"].(L)[0].(M)["n"] != int64(3) {
		t.Fatalf("%#v", r)
	}
	o := exec(t, tl, M{"database": filepath.Join(dir, "local.duckdb"), "read_only": true, "command": "DELETE FROM people"})
	if o.Status != types.StatusError {
		t.Fatal("read_only database accepted a DELETE")
	}
	// The file is closed once no task uses it: another handle can open it.
	if n := len(tl.files); n != 0 {
		t.Fatalf("%d database files still open", n)
	}
}

// TestConcurrentFileTasks: tasks on one file share one handle.
func TestConcurrentFileTasks(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.duckdb")
	tl := New(Options{})
	defer tl.Close()
	ok(t, exec(t, tl, M{"database": db, "command": "CREATE TABLE n (i INT)"}))
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := tl.Exec(context.Background(), nil, M{"database": db, "command": "INSERT INTO n VALUES (1)"}, 0)
			if o.Status != types.StatusOK {
				errs <- o.Error.Message
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	r := ok(t, exec(t, tl, M{"database": db, "query": "SELECT count(*) AS c FROM n"}))
	if r["rows"].(L)[0].(M)["c"] != int64(8) {
		t.Fatalf("%#v", r)
	}
}

// TestNoExtensionDownloads: INSTALL/LOAD are rejected before running,
// remote files need an extension that is not there, and the settings
// cannot be switched back on.
func TestNoExtensionDownloads(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	for q, kind := range map[string]string{
		"INSTALL httpfs": "config",
		"INSTALL httpfs FROM 'http://extensions.duckdb.org'": "config",
		"LOAD postgres":        "config",
		"FORCE INSTALL httpfs": "config",
		"SELECT * FROM read_csv('https://example.com/x.csv')": "config",
		"SET autoinstall_known_extensions = true":             "duckdb",
		"SET custom_extension_repository = 'http://x'":        "duckdb",
	} {
		start := time.Now()
		o := exec(t, tl, M{"query": q})
		if o.Status != types.StatusError || string(o.Error.Kind) != kind {
			t.Errorf("%s: %+v", q, o.Error)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("%s took %s (a network attempt?)", q, time.Since(start))
		}
	}
	r := ok(t, exec(t, tl, M{"query": "SELECT extension_name FROM duckdb_extensions() WHERE loaded ORDER BY 1"}))
	var names []string
	for _, row := range r["rows"].(L) {
		names = append(names, row.(M)["extension_name"].(string))
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "json") || !strings.Contains(got, "parquet") || strings.Contains(got, "httpfs") {
		t.Fatalf("loaded extensions %s", got)
	}
}

func TestTimeoutInterrupts(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	start := time.Now()
	o := tl.Exec(context.Background(), nil, M{"query": "SELECT count(*) FROM range(100000000000) a"}, 0.3)
	if o.Status != types.StatusError || o.Error.Kind != "timeout" || !o.Error.Retryable {
		t.Fatalf("%+v", o.Error)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("interrupt took %s", el)
	}
}

func TestErrors(t *testing.T) {
	tl := New(Options{})
	for _, c := range []struct {
		cfg  M
		kind string
	}{
		{M{}, "config"},
		{M{"query": " ; "}, "config"},
		{M{"query": 5}, "config"},
		{M{"query": "SELECT 1", "read_only": "yes"}, "config"},
		{M{"query": "SELECT 1", "database": "/nonexistent/dir/x.duckdb"}, "config"},
		{M{"query": "SELECT 1", "database": "/tmp/a?b"}, "config"},
		{M{"query": "SELEC 1"}, "duckdb"},
		{M{"query": "SELECT 1; SELECT * FROM missing_table"}, "duckdb"},
	} {
		o := exec(t, tl, c.cfg)
		if o.Status != types.StatusError || string(o.Error.Kind) != c.kind {
			t.Errorf("%v: %+v", c.cfg, o.Error)
		}
	}
	if o := exec(t, tl, M{"query": "SELECT 1; SELECT * FROM missing_table"}); !strings.Contains(o.Error.Message, "statement 2") {
		t.Errorf("script error does not name the statement: %s", o.Error.Message)
	}
	tl.Close()
	if o := exec(t, tl, M{"database": filepath.Join(t.TempDir(), "x.duckdb"), "query": "SELECT 1"}); o.Error == nil || o.Error.Kind != "internal" {
		t.Errorf("after Close: %+v", o.Error)
	}
}

func TestMaxRows(t *testing.T) {
	tl := New(Options{MaxRows: 10})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"query": "SELECT * FROM range(25)"}))
	if r["row_count"] != int64(10) || r["truncated"] != true {
		t.Fatalf("%#v", r)
	}
}

func TestAsObjectsFalse(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"query": "SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y' ORDER BY a", "as_objects": false}))
	if !reflect.DeepEqual(r["rows"], L{L{int64(1), "x"}, L{int64(2), "y"}}) || !reflect.DeepEqual(r["columns"], L{"a", "b"}) {
		t.Fatalf("%#v", r)
	}
}

// TestNumberRule: DuckDB's numbers follow the engine's one number rule
// (shared/jsonx Number), like every other kind: a UBIGINT above 2^63-1 is
// the nearest float (it was text here while postgres and templates made it
// a float), a REAL its shortest decimal form (it was the widened float32
// bits, 0.10000000149011612), infinities their strings.
func TestNumberRule(t *testing.T) {
	tl := New(Options{})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"query": `SELECT 18446744073709551615::UBIGINT AS umax, 9223372036854775807::UBIGINT AS ufit,
		0.1::REAL AS real, 'inf'::REAL AS rinf, '-inf'::DOUBLE AS dninf, 3::UTINYINT AS ut, (-2)::SMALLINT AS si`}))
	row := r["rows"].(L)[0].(M)
	want := M{"umax": 18446744073709551615.0, "ufit": int64(9223372036854775807), "real": 0.1, "rinf": "Infinity",
		"dninf": "-Infinity", "ut": int64(3), "si": int64(-2)}
	for k, w := range want {
		if !reflect.DeepEqual(row[k], w) {
			t.Errorf("%s = %#v (%T), want %#v", k, row[k], row[k], w)
		}
	}
}

// TestGCSCredentialRefused: NoETL's gcs_credential (HMAC keys for gs://
// through httpfs) was accepted and silently dropped by the tool, so the
// task ran without the access it asked for; it is a config error naming
// why.
func TestGCSCredentialRefused(t *testing.T) {
	tl := New(Options{})
	o := exec(t, tl, M{"query": "SELECT 1", "gcs_credential": "gcs_hmac"})
	if o.Status != types.StatusError || o.Error.Kind != "config" || !strings.Contains(o.Error.Message, "httpfs") {
		t.Fatalf("gcs_credential: %+v", o)
	}
}

// TestThreadsOption: Options.Threads (NOETL_DUCKDB_THREADS in the runner)
// is the threads setting of every task's database; 0 leaves DuckDB's
// default.
func TestThreadsOption(t *testing.T) {
	tl := New(Options{Threads: 3})
	defer tl.Close()
	r := ok(t, exec(t, tl, M{"query": "SELECT current_setting('threads') AS threads"}))
	if rows := r["rows"].(L); len(rows) != 1 || fmt.Sprint(rows[0].(M)["threads"]) != "3" {
		t.Fatalf("threads with Threads 3: %#v", r)
	}
	def := New(Options{})
	defer def.Close()
	r = ok(t, exec(t, def, M{"query": "SELECT current_setting('threads') AS threads"}))
	if rows := r["rows"].(L); len(rows) != 1 || fmt.Sprint(rows[0].(M)["threads"]) == "3" && runtime.NumCPU() != 3 {
		t.Fatalf("threads by default: %#v", r)
	}
}
