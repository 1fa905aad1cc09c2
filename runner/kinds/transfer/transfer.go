// Package transfer implements the `transfer` task kind: it moves rows from
// a source (http, postgres, duckdb, a stored result, an s3 object) to a
// target table (postgres, duckdb) or an s3 object, in batches, with
// NoETL's source/target/mapping shape:
//
//	kind: transfer
//	source:
//	  type: http                  # http | postgres | duckdb | result | s3 (also `tool:` or `kind:`)
//	  url: "{{ api_url }}"        # http: url (or endpoint), method, headers,
//	  method: GET                 #   params, body/json, data_path, auth
//	target:
//	  type: postgres              # postgres | duckdb | s3
//	  auth: "{{ pg_auth }}"       # postgres: auth | connection | dsn
//	  table: public.http_to_postgres_transfer
//	  mapping:                    # target column: source field
//	    user_id: userId
//	    post_id: id
//	chunk_size: 1000              # rows per batch (also batch_size)
//
// A stored result (README "Architecture") is a source too: `source: {type: result,
// ref: "{{ big._ref }}"}` (or its noetl:// URI) streams a table from the
// results tier batch by batch into the target, never holding it whole.
//
//	mode: append                  # append | replace | upsert (also under target)
//
// An s3 end is an object of an S3-compatible store, read or written with
// the s3 kind (its credential, endpoint and egress policy): `{type: s3,
// uri: s3://bucket/key, auth: <s3 credential>, format: json | jsonl |
// csv}` (the format defaults from the key's extension). An s3 target is
// written whole at the end (mode replace, its only mode): json a list of
// objects, jsonl one object a line, csv a header row then one row a
// record, the keys or columns being the target columns in order.
//
// The postgres and duckdb ends use the postgres and duckdb kinds' own
// connections, value mapping and error classification. DuckDB reads a
// PostgreSQL table through this kind (postgres → duckdb), never through a
// DuckDB extension.
package transfer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/noetl/gcpengine/runner/kinds/duckdb"
	"github.com/noetl/gcpengine/runner/kinds/postgres"
	"github.com/noetl/gcpengine/runner/kinds/s3"
	"github.com/noetl/gcpengine/shared/credentials"
	"github.com/noetl/gcpengine/shared/results"
	"github.com/noetl/gcpengine/shared/tools/conf"
	httptool "github.com/noetl/gcpengine/shared/tools/http"
	"github.com/noetl/gcpengine/shared/toolspec"
	"github.com/noetl/gcpengine/shared/types"
)

// Defaults.
const (
	// DefaultChunkSize is the batch size when the task sets none.
	DefaultChunkSize = 1000
	// MaxChunkSize bounds chunk_size.
	MaxChunkSize = 100_000
	// DefaultTimeout bounds one attempt when the attempt timeout is 0.
	DefaultTimeout = 600 * time.Second
)

// Options are the kinds the transfer kind drives. Nil members make the
// directions that need them fail with kind "config".
type Options struct {
	Postgres *postgres.Tool
	DuckDB   *duckdb.Tool
	HTTP     *httptool.Tool
	// Credentials resolves a source/target `auth` that names a
	// credential (postgres: through Postgres's own store; http: its
	// headers).
	Credentials credentials.Store
	// DefaultTimeout replaces DefaultTimeout when > 0.
	DefaultTimeout time.Duration
	// Results reads stored results (source type result).
	Results *results.Store
	// S3 reads objects (source type s3).
	S3 *s3.Tool
}

// Tool is the transfer task kind. It is safe for concurrent use.
type Tool struct{ opts Options }

// New returns a transfer tool over the given kinds.
func New(opts Options) *Tool {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	return &Tool{opts: opts}
}

// Exec runs one transfer (tools.Adapt turns Exec into a tools.Tool).
//
// The configuration is decoded into toolspec.Transfer. Keys read. Top level: source, target (mappings, required), chunk_size |
// batch_size (rows per batch, default 1000, at most 100000), mode (append
// | replace | upsert; default append), direction (optional, e.g.
// "http_to_postgres"; must agree with the types). source for type http: url |
// endpoint, method (GET | POST), headers, params, json | body, timeout,
// data_path (dotted path to the list in the response, e.g. "data" or
// "results.items"), auth (an http_bearer/basic/header credential name or
// a headers mapping); for postgres: query | sql | command, params, and
// the connection keys of the postgres kind (auth | connection | dsn |
// db_*); for duckdb: query | sql | command, params, database | db_path |
// path | connection (":memory:" default). target: table (required), mapping
// {target column: source field, dotted for nested fields} (default: the
// source's columns, for http the sorted keys of the first record), mode,
// key (upsert conflict columns; postgres default the primary key), and for
// postgres the connection keys, for duckdb database | db_path | path |
// connection (a file).
//
// Directions: every source (http, postgres, duckdb, result, s3) to every
// target (postgres, duckdb, s3). A table target is written in one
// transaction (replace empties it in the same transaction), committed
// only when every batch was written, so a failed attempt leaves the table
// as it was and a retry starts clean; an s3 target (uri | bucket + key,
// format, auth, endpoint, region, content_type, metadata; no table, mode
// replace only) is encoded into a file in the task's workspace (its
// disk limit bounds the object: kind "limit") and put whole at the end, so
// a failed attempt leaves the object as it was.
//
// Result: {"status": "success", "direction": "http_to_postgres",
// "source_type", "target_type", "mode", "rows_transferred",
// "chunks_processed", "target_table", "columns": [target columns]} plus
// "records_fetched" for http and s3 sources; an s3 target has
// "target_uri", "format", "size" (bytes) and "etag" instead of
// "target_table". Errors: configuration problems are kind
// "config"; the http source's failures are the http kind's (kinds
// rate_limit, auth, not_found, client_error, server_error with the status,
// retryable for 408/429/5xx; "connection", "timeout");
// database failures are the postgres/duckdb kinds' (kind "postgres" with
// outcome.pg, or "duckdb"); s3 failures the s3 kind's (not_found, auth,
// forbidden, forbidden_address, storage); the deadline is kind "timeout".
func (t *Tool) Exec(ctx context.Context, _, config map[string]any, timeoutS float64) types.Outcome {
	var cfg toolspec.Transfer
	if err := toolspec.Decode(config, &cfg); err != nil {
		return conf.ConfigError("%v", err)
	}
	p, err := parse(cfg)
	if err != nil {
		return conf.ConfigError("transfer task: %v", err)
	}
	timeout := t.opts.DefaultTimeout
	if timeoutS > 0 {
		timeout = time.Duration(timeoutS * float64(time.Second))
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	res := map[string]any{
		"direction":   p.srcType + "_to_" + p.dstType,
		"source_type": p.srcType,
		"target_type": p.dstType,
		"mode":        string(p.mode),
	}
	if p.dstType == "s3" {
		res["target_uri"], res["format"] = p.object, p.format
	} else {
		res["target_table"] = p.table
	}
	sink, out := t.openSink(rctx, ctx, p)
	if out != nil {
		return *out
	}
	defer sink.close()
	var rows, chunks int64
	// emit writes one batch of records; cols are the source's columns
	// (used when there is no mapping).
	emit := func(cols []string, recs []map[string]any) error {
		if err := sink.ensure(rctx, cols); err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		if err := sink.write(rctx, sink.project(recs)); err != nil {
			return err
		}
		rows += int64(len(recs))
		chunks++
		return nil
	}
	write := func(cols []string, batch [][]any) error { return emit(cols, records(cols, batch)) }
	switch p.srcType {
	case "http":
		fetched, o := t.fromHTTP(rctx, ctx, p, emit, sink)
		if o != nil {
			return *o
		}
		res["records_fetched"] = fetched
	case "postgres":
		if t.opts.Postgres == nil {
			return conf.ConfigError("transfer task: the postgres kind is not available")
		}
		e, o := t.opts.Postgres.NewEndpoint(rctx, p.source)
		if o != nil {
			return prefix(*o, "transfer source")
		}
		if err := t.opts.Postgres.QueryRows(rctx, e, p.query, p.source["params"], p.chunk, write); err != nil {
			if o, isSink := sink.classify(ctx, rctx, err); isSink {
				return o
			}
			return prefix(t.opts.Postgres.Failure(ctx, rctx, e, err), "transfer source")
		}
	case "result":
		if o := t.fromResult(rctx, ctx, p, write, sink); o != nil {
			return *o
		}
	case "s3":
		fetched, o := t.fromS3(rctx, ctx, p, emit, sink)
		if o != nil {
			return *o
		}
		res["records_fetched"] = fetched
	case "duckdb":
		if t.opts.DuckDB == nil {
			return conf.ConfigError("transfer task: the duckdb kind is not available")
		}
		db := duckdbPath(p.source)
		if err := t.opts.DuckDB.QueryRows(rctx, db, p.query, p.source["params"], p.chunk, write); err != nil {
			if o, isSink := sink.classify(ctx, rctx, err); isSink {
				return o
			}
			return prefix(t.opts.DuckDB.Failure(ctx, rctx, err), "transfer source")
		}
	}
	if err := sink.ensure(rctx, nil); err != nil {
		o, _ := sink.classify(ctx, rctx, err)
		return o
	}
	if err := sink.commit(rctx); err != nil {
		o, _ := sink.classify(ctx, rctx, err)
		return o
	}
	res["status"] = "success"
	res["rows_transferred"] = rows
	res["chunks_processed"] = chunks
	cols := make([]any, len(sink.columns()))
	for i, c := range sink.columns() {
		cols[i] = c
	}
	res["columns"] = cols
	if sink.put != nil {
		res["size"], res["etag"] = sink.put["size"], sink.put["etag"]
	}
	return types.Outcome{Status: types.StatusOK, Result: res}
}

// plan is a parsed transfer.
type plan struct {
	srcType, dstType string
	source, target   map[string]any
	query            string
	table            string
	mapping          [][2]string // target column, source field (sorted by column)
	mode             string
	chunk            int
	key              []string
	// An s3 target: the object's URI and format (json, jsonl or csv).
	object, format string
}

// parse checks a transfer's configuration and plans it. The source and
// target blocks are read by key: they embed other kinds' keys (see
// toolspec.Transfer).
func parse(cfg toolspec.Transfer) (plan, error) {
	var p plan
	src, dst := cfg.Source, cfg.Target
	if src == nil {
		return p, errors.New("`source` (a mapping with type) is required")
	}
	if dst == nil {
		return p, errors.New("`target` (a mapping with type and table) is required")
	}
	p.source, p.target = src, dst
	st, _ := conf.String(src, "type", "tool", "kind")
	dt, _ := conf.String(dst, "type", "tool", "kind")
	p.srcType, p.dstType = strings.ToLower(strings.TrimSpace(st)), strings.ToLower(strings.TrimSpace(dt))
	if c, ok := toolspec.TransferEndType(toolspec.TransferSourceTypes, p.srcType); ok {
		p.srcType = c
	}
	if c, ok := toolspec.TransferEndType(toolspec.TransferTargetTypes, p.dstType); ok {
		p.dstType = c
	}
	switch p.srcType {
	case "http", "postgres", "duckdb", "result", "s3":
	case "":
		return p, errors.New("source.type is required (http, postgres, duckdb, result or s3)")
	case "snowflake":
		return p, errors.New("source.type snowflake needs a Snowflake account, which this engine does not reach (http, postgres, duckdb, result or s3)")
	default:
		return p, fmt.Errorf("source.type %q is not supported (http, postgres, duckdb, result or s3)", st)
	}
	switch p.dstType {
	case "postgres", "duckdb", "s3":
	case "":
		return p, errors.New("target.type is required (postgres, duckdb or s3)")
	case "snowflake":
		return p, errors.New("target.type snowflake needs a Snowflake account, which this engine does not reach (postgres, duckdb or s3)")
	default:
		return p, fmt.Errorf("target.type %q is not supported (postgres, duckdb or s3)", dt)
	}
	if d := cfg.Direction; d != "" {
		want := p.srcType + "_to_" + p.dstType
		if strings.ToLower(strings.TrimSpace(d)) != want {
			return p, fmt.Errorf("direction %q contradicts source.type and target.type (%s)", d, want)
		}
	}
	if p.srcType == "result" {
		if _, ok := conf.Lookup(src, "ref", "result_ref", "uri"); !ok {
			return p, errors.New("source.ref (a stored result: {{ step._ref }} or its noetl:// URI) is required for a result source")
		}
	} else if p.srcType == "s3" {
		if _, ok := conf.Lookup(src, "uri", "bucket"); !ok {
			return p, errors.New("source.uri (s3://bucket/key) is required for an s3 source")
		}
		if _, err := objectFormat(src, ""); err != nil {
			return p, fmt.Errorf("source.%v", err)
		}
	} else if p.srcType != "http" {
		q, ok := conf.String(src, "query", "sql", "command")
		if !ok || strings.TrimSpace(q) == "" {
			return p, fmt.Errorf("source.query (the SQL that reads the rows) is required for a %s source", p.srcType)
		}
		p.query = q
	}
	if p.dstType == "s3" {
		if _, ok := conf.Lookup(dst, "table"); ok {
			return p, errors.New("target.table does not apply to an s3 target: name the object with target.uri (s3://bucket/key)")
		}
		uri, err := s3Object(dst)
		if err != nil {
			return p, fmt.Errorf("target: %v", err)
		}
		p.object, p.table = uri, uri
		if p.format, err = objectFormat(dst, uri); err != nil {
			return p, fmt.Errorf("target.%v", err)
		}
	} else {
		table, ok := conf.String(dst, "table")
		if !ok || strings.TrimSpace(table) == "" {
			return p, errors.New("target.table is required")
		}
		p.table = strings.TrimSpace(table)
	}
	if _, ok := conf.Lookup(dst, "query"); ok {
		return p, errors.New("target.query (a custom INSERT) is not supported; name the table and a mapping")
	}
	if mv, ok := conf.Lookup(dst, "mapping", "columns_mapping"); ok {
		m, isMap := conf.Map(mv)
		if !isMap || len(m) == 0 {
			return p, errors.New("target.mapping must be a non-empty mapping of target column to source field")
		}
		for col, f := range m {
			fs, isStr := f.(string)
			if !isStr || strings.TrimSpace(fs) == "" || strings.TrimSpace(col) == "" {
				return p, fmt.Errorf("target.mapping.%s must name a source field", col)
			}
			p.mapping = append(p.mapping, [2]string{col, strings.TrimSpace(fs)})
		}
		sort.Slice(p.mapping, func(i, j int) bool { return p.mapping[i][0] < p.mapping[j][0] })
	}
	p.mode = "append"
	explicit := false
	if m, ok := conf.String(dst, "mode"); ok {
		p.mode, explicit = m, true
	}
	if m := cfg.Mode; m != "" {
		p.mode, explicit = m, true
	}
	p.mode = strings.ToLower(strings.TrimSpace(p.mode))
	if p.dstType == "s3" {
		// An object is written whole: the default, and the only mode.
		switch {
		case !explicit || p.mode == "replace" || p.mode == "truncate" || p.mode == "overwrite":
			p.mode = "replace"
		default:
			return p, fmt.Errorf("mode %q does not apply to an s3 target: the object is written whole (mode replace, the default for s3)", p.mode)
		}
	}
	switch p.mode {
	case "append", "insert":
		p.mode = "append"
	case "replace", "truncate", "overwrite":
		p.mode = "replace"
	case "upsert", "merge":
		p.mode = "upsert"
		if p.dstType == "duckdb" {
			return p, errors.New("mode upsert is supported for postgres targets only")
		}
	default:
		return p, fmt.Errorf("mode %q is not supported (append, replace or upsert)", p.mode)
	}
	keys := []string{"key", "upsert_key", "conflict_columns", "primary_key"}
	if p.dstType == "s3" {
		// An s3 target's key is its object's; it has no conflict columns.
		if _, ok := conf.Lookup(dst, keys[1:]...); ok {
			return p, errors.New("target.upsert_key does not apply to an s3 target (the object is written whole)")
		}
		keys = nil
	}
	if kv, ok := conf.Lookup(dst, keys...); ok {
		switch k := kv.(type) {
		case string:
			for _, s := range strings.Split(k, ",") {
				if s = strings.TrimSpace(s); s != "" {
					p.key = append(p.key, s)
				}
			}
		case []any:
			for _, e := range k {
				s, isStr := e.(string)
				if !isStr {
					return p, errors.New("target.key must be a column name or a list of names")
				}
				p.key = append(p.key, s)
			}
		default:
			return p, errors.New("target.key must be a column name or a list of names")
		}
	}
	p.chunk = DefaultChunkSize
	if v := cfg.ChunkSize; v != nil {
		n, isNum := toInt(v)
		if !isNum || n < 1 || n > MaxChunkSize {
			return p, fmt.Errorf("chunk_size must be an integer between 1 and %d, got %v", MaxChunkSize, v)
		}
		p.chunk = n
	}
	return p, nil
}

func toInt(v any) (int, bool) {
	d, ok := conf.Seconds(v)
	if !ok {
		return 0, false
	}
	f := d.Seconds()
	if f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// duckdbPath is the database of a duckdb endpoint.
func duckdbPath(m map[string]any) string {
	if s, ok := conf.String(m, "database", "db_path", "path", "connection", "db"); ok {
		return strings.TrimSpace(s)
	}
	return duckdb.MemoryDatabase
}

// prefix names the side of the transfer in an error message.
func prefix(o types.Outcome, side string) types.Outcome {
	if o.Error != nil {
		e := *o.Error
		e.Message = side + ": " + e.Message
		o.Error = &e
	}
	return o
}

// lookupPath reads a dotted field of a record.
func lookupPath(rec map[string]any, path string) any {
	if v, ok := rec[path]; ok {
		return v
	}
	var cur any = rec
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}
