// Package duckdb implements the `duckdb` task kind: SQL on DuckDB
// (github.com/duckdb/duckdb-go/v2, the DuckDB project's Go binding, linked
// statically with DuckDB's prebuilt library through cgo), on a fresh
// in-memory database or on a database file, with local files (CSV,
// Parquet, JSON) readable from SQL.
//
// No extension is ever downloaded at run time: autoinstall and autoload are
// off, the extension repositories and directory point nowhere, the
// configuration is locked (SET of those settings fails), and INSTALL/LOAD
// statements are rejected before they run. The statically linked json,
// parquet, icu and core_functions extensions are always available. A
// PostgreSQL table reaches DuckDB through the transfer kind (postgres →
// duckdb), not through DuckDB's postgres extension.
//
// Task configuration (rendered; decoded into toolspec.DuckDB, which also
// accepts NoETL's auth and credentials without using them, and refuses
// its gcs_credential: no httpfs extension here):
//
//	query | command | sql | commands
//	            the SQL: one statement or several separated by ';' (run in
//	            order on one connection; each statement is prepared after
//	            the previous one ran, so later statements see the tables
//	            earlier ones created); commands may also be a list of
//	            strings (NoETL's shape)
//	database | db_path | path | db
//	            ":memory:" (default: a fresh database discarded after the
//	            task) or a database file path (created when missing;
//	            relative paths resolve against the task's workspace in the
//	            runner, else Options.BaseDir)
//	read_only   open the file read-only (bool)
//	params      a list bound to ?/$1.. or a mapping bound to $name in the
//	            last statement (maps and lists as JSON text)
//	as_objects  false: rows are lists of values in column order instead
//	            of mappings (default true)
//
// Result (the last statement's): a query gives {"rows": [{column: value}],
// "row_count": N, "columns": [names], "command": "SELECT"} — NoETL's shape;
// INSERT/UPDATE/DELETE/COPY/CREATE give {"row_count": changed rows,
// "affected_rows": the same, "command": verb}; a script adds "statements":
// N. Values: numbers by the engine's number rule (shared/jsonx Number):
// integers int64 (a UBIGINT above 2^63-1 float64), floats float64 (REAL
// by its shortest decimal form; NaN/±Infinity as text); HUGEINT/UHUGEINT
// beyond int64 exact as text, DECIMAL int64 when integral else float64,
// DATE "YYYY-MM-DD", TIME "hh:mm:ss[.ffffff]", timestamps RFC 3339, UUID
// text, BLOB base64, INTERVAL {"months", "days", "micros"}, LIST/ARRAY
// lists, STRUCT and MAP mappings (map keys as text), ENUM text. At most
// Options.MaxRows rows per result ("truncated": true beyond).
//
// Errors: SQL errors are kind "duckdb" (retryable only for transaction
// conflicts and a database file locked by another process); INSTALL/LOAD,
// a missing extension, a missing SQL text or a bad database path are kind
// "config"; the deadline is kind "timeout" (the query is interrupted); a
// cancelled ctx is kind "canceled".
//
// Confinement (the runner: a task whose context carries a workspace,
// runner/sandbox): the database has enable_external_access off and
// allowed_directories set to the workspace and Options.DataRoots, so SQL
// reads and writes files (read_csv, COPY, ATTACH, glob) only there — not
// /proc, not the engine's files, not another task's workspace, not a URL;
// `database:` files must be there too (a database in a data root is
// shared by tasks and opened with the data roots only); it spills into
// the workspace (temp_directory) up to Options.MaxTempBytes, with
// Options.MemoryLimit and Options.Threads; the configuration is locked
// after that. A path outside is kind "forbidden_path"; running out of
// memory or spill space is kind "limit". Outside the runner (tests, a
// single-process tool) files are not confined, and spill goes to a
// private directory of the tool (never a shared, world-writable one).
//
// The engine needs cgo. A build without cgo (CGO_ENABLED=0) compiles a
// stub whose every task fails with kind "config" naming the reason; the
// constant Available tells which build this is.
package duckdb

import (
	"database/sql/driver"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/noetl/gcpengine/runner/kinds/internal/sqlsplit"
	"github.com/noetl/gcpengine/runner/sandbox"
	"github.com/noetl/gcpengine/shared/jsonx"
	"github.com/noetl/gcpengine/shared/toolspec"
)

// MemoryDatabase names the in-memory database.
const MemoryDatabase = ":memory:"

// Defaults used when Options leaves a field zero.
const (
	// DefaultTimeout bounds one attempt when the attempt timeout is 0.
	DefaultTimeout = 300 * time.Second
	// DefaultMaxRows caps the rows returned by one statement.
	DefaultMaxRows = 100_000
)

// Options configures the tool. The zero value is usable.
type Options struct {
	// BaseDir resolves relative database paths (default: the working
	// directory).
	BaseDir string
	// TempDir is where the tool creates its private spill directory
	// (default os.TempDir()); a task with a workspace spills there.
	TempDir string
	// MemoryLimit is DuckDB's memory_limit, e.g. "512MB" (default DuckDB's
	// own, 80% of RAM).
	MemoryLimit string
	// MaxTempBytes is DuckDB's max_temp_directory_size (0: DuckDB's
	// default, 90% of the disk).
	MaxTempBytes int64
	// DataRoots are the directories a confined task (one whose context
	// carries a workspace: the runner's) may read and write besides its
	// workspace, and where its database files may live
	// (NOETL_RUNNER_DATA_ROOTS).
	DataRoots []string
	// Threads is DuckDB's threads setting (0: DuckDB's default, the number
	// of cores).
	Threads int
	// DefaultTimeout replaces DefaultTimeout when > 0.
	DefaultTimeout time.Duration
	// MaxRows replaces DefaultMaxRows when > 0.
	MaxRows int
	// Sandbox, when set, runs every task (Exec, and the transfer kind's
	// QueryRows and OpenWriter) in a worker process of its own in that
	// sandbox (worker.go): the engine's executable started as the
	// duckdb worker under the task's uid, control group (its memory and
	// CPU limits), seccomp filter, root and an empty network namespace,
	// so that no author SQL runs in the caller's process (the runner).
	// Nil: tasks run in the caller's process (tests, single-process
	// tools).
	Sandbox *sandbox.Sandbox
	// Warm is how many workers are kept started ahead of demand (with
	// Sandbox and Workspaces), each in a room of its own with a
	// workspace of its own, waiting for one task and never reused: a
	// task that finds one does not pay for the room's set-up. Started on
	// the first task; killed by Close.
	Warm int
	// WarmMaxAge replaces a warm worker that waited longer (warm.go;
	// 0: DefaultWarmMaxAge); one that died while waiting is replaced too.
	WarmMaxAge time.Duration
	// Workspaces makes a warm worker's workspace (the runner: a tmpfs of
	// NOETL_SANDBOX_DISK_MB, as every task's); the task's own workspace
	// goes unused.
	Workspaces func() (*sandbox.Workspace, error)
}

func (o *Options) defaults() {
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
}

// resolvePath makes a database path absolute.
func (o *Options) resolvePath(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", errors.New("empty database path")
	}
	if !filepath.IsAbs(p) {
		base := o.BaseDir
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return "", err
			}
			base = wd
		}
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}

// task is a parsed task configuration.
type task struct {
	database   string
	readOnly   bool
	asArrays   bool
	statements []string
	params     []driver.NamedValue
}

// parseTask reads the keys of the package documentation from the task's
// decoded spec.
func parseTask(cfg toolspec.DuckDB) (task, error) {
	var q task
	if cfg.GcsCredential != nil {
		return q, errors.New("`gcs_credential` reads gs:// objects through DuckDB's httpfs extension, which this engine does not download (local files and :memory: only): copy the object with a gcs task and read the local file")
	}
	q.database = strings.TrimSpace(cfg.Database)
	if q.database == "" || strings.EqualFold(q.database, "memory") {
		q.database = MemoryDatabase
	}
	if cfg.AsObjects != nil {
		q.asArrays = !*cfg.AsObjects
	}
	q.readOnly = cfg.ReadOnly
	var texts []string
	v := cfg.Query
	if v == nil {
		v = cfg.Commands
	}
	if v == nil {
		return q, errors.New("`query` (or `command`, the SQL) is required")
	}
	switch x := v.(type) {
	case string:
		texts = []string{x}
	case []any:
		for i, e := range x {
			s, isStr := e.(string)
			if !isStr {
				return q, fmt.Errorf("commands[%d] must be a string, got %T", i, e)
			}
			texts = append(texts, s)
		}
	default:
		return q, fmt.Errorf("`query` must be a string (or a list of strings), got %T", v)
	}
	for _, t := range texts {
		q.statements = append(q.statements, sqlsplit.Split(t)...)
	}
	if len(q.statements) == 0 {
		return q, errors.New("the query contains no SQL statement")
	}
	params, err := bindParams(cfg.Params)
	if err != nil {
		return q, err
	}
	q.params = params
	return q, nil
}

// bindParams converts `params`: a list to positional values, a mapping to
// named values ($name).
func bindParams(p any) ([]driver.NamedValue, error) {
	switch x := p.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]driver.NamedValue, len(x))
		for i, v := range x {
			a, err := bindValue(v)
			if err != nil {
				return nil, fmt.Errorf("params[%d]: %v", i, err)
			}
			out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]driver.NamedValue, len(keys))
		for i, k := range keys {
			a, err := bindValue(x[k])
			if err != nil {
				return nil, fmt.Errorf("params.%s: %v", k, err)
			}
			out[i] = driver.NamedValue{Name: k, Ordinal: i + 1, Value: a}
		}
		return out, nil
	default:
		a, err := bindValue(x)
		if err != nil {
			return nil, fmt.Errorf("params: %v", err)
		}
		return []driver.NamedValue{{Ordinal: 1, Value: a}}, nil
	}
}

// bindValue converts one parameter to a type the driver binds: maps and
// lists as JSON text, json.Number to int64/float64, int to int64.
func bindValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, float64, time.Time, []byte:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		n, _ := jsonx.Number(x)
		return n, nil
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	return fmt.Sprint(v), nil
}

// friendly converts a value produced by the driver into nil, bool, string,
// int64, float64, []any or map[string]any (see the package documentation).
// typeName is the column's DuckDB type name (DATE, TIME, UUID, ...).
func friendly(v any, typeName string) any {
	if r, ok := driverValue(v); ok {
		return r
	}
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case *big.Int:
		// HUGEINT/UHUGEINT: exact, as text beyond int64 (a 128-bit SQL
		// type, not a Go number: the duckdb kind's own choice).
		if x == nil {
			return nil
		}
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		n, _ := jsonx.Number(x) // the engine's number rule
		return n
	case time.Time:
		switch {
		case typeName == "DATE":
			return x.Format(time.DateOnly)
		case strings.HasPrefix(typeName, "TIME") && !strings.HasPrefix(typeName, "TIMESTAMP"):
			return x.Format("15:04:05.999999")
		}
		return x.Format(time.RFC3339Nano)
	case []byte:
		if typeName == "UUID" && len(x) == 16 {
			return uuidString(x)
		}
		return base64.StdEncoding.EncodeToString(x)
	case [16]byte:
		return uuidString(x[:])
	case []any:
		elem := elementType(typeName)
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = friendly(e, elem)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = friendly(e, "")
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(friendly(k, ""))] = friendly(e, "")
		}
		return out
	case fmt.Stringer:
		return x.String()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = friendly(rv.Index(i).Interface(), "")
		}
		return out
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return friendly(rv.Elem().Interface(), typeName)
	}
	return fmt.Sprint(v)
}

// elementType is the element type of a LIST/ARRAY type name ("INTEGER[]").
func elementType(t string) string {
	if i := strings.LastIndexByte(t, '['); i > 0 {
		return t[:i]
	}
	return ""
}

func uuidString(x []byte) string {
	var buf [36]byte
	hex.Encode(buf[0:8], x[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], x[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], x[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], x[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], x[10:16])
	return string(buf[:])
}
