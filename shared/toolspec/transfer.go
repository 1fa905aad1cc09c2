package toolspec

import "strings"

// Transfer is the configuration of kind transfer: rows copied from a
// source to a table, in batches, written in one transaction
// (noetl-tools TransferConfig; NoETL's transfer executor).
//
// The source and target blocks stay mappings: each embeds the keys of
// another kind beside its own (a postgres end holds the postgres kind's
// connection keys, an http source the http kind's request keys), read by
// that kind's tool; their type is checked against TransferSourceTypes and
// TransferTargetTypes.
type Transfer struct {
	Source    map[string]any `json:"source,omitempty" required:"source" doc:"The source {type, ...}. type http (https): url | endpoint, method (GET | POST), headers, params, json | body, timeout, data_path | path | json_path (dotted path to the list in the response), auth (an http_bearer/basic/header credential or a headers mapping). type postgres (postgresql): query | sql | command, params and the postgres kind's connection keys. type duckdb: query | sql | command, params, database | db_path | path | connection | db (:memory: default). type result (results, artifact): ref | result_ref | uri, a stored result ({{ step._ref }} or its noetl:// URI). type s3: uri (s3://bucket/key) or bucket + key, auth (an s3 credential), endpoint, region, format (json | jsonl | csv; default from the key's extension), data_path (json)."`
	Target    map[string]any `json:"target,omitempty" required:"target" doc:"The target {type, table, ...}: type postgres (postgresql, with the postgres kind's connection keys) or duckdb (database | db_path | path | connection | db: a file) with table (required); or type s3 (aws_s3): uri (s3://bucket/key) or bucket + key, auth (an s3 credential), endpoint, region, format (json: a list of objects | jsonl (ndjson) | csv: a header row; default from the key's extension), content_type, metadata — the object is written whole at the end (mode replace only, no table). mapping | columns_mapping {target column: source field, dotted for nested fields}; mode; for tables key | upsert_key | conflict_columns | primary_key (upsert conflict columns: a name, a comma-separated list or a list)."`
	ChunkSize any            `json:"chunk_size,omitempty" alias:"batch_size" default:"1000" doc:"Rows per batch (an integer, 1 to 100000)."`
	Mode      string         `json:"mode,omitempty" enum:"append,insert,replace,truncate,overwrite,upsert,merge" default:"append" doc:"How rows are written (wins over target.mode): append (insert), replace (truncate, overwrite: the table is emptied in the same transaction) or upsert (merge; postgres targets only). An s3 target is always replaced whole (its default; append and upsert are refused)."`
	Direction string         `json:"direction,omitempty" enum:"http_to_postgres,http_to_duckdb,postgres_to_postgres,postgres_to_duckdb,duckdb_to_postgres,duckdb_to_duckdb,result_to_postgres,result_to_duckdb,s3_to_postgres,s3_to_duckdb,http_to_s3,postgres_to_s3,duckdb_to_s3,result_to_s3,s3_to_s3" doc:"NoETL: <source type>_to_<target type>; when given it must agree with the ends' types."`
}

// Kind implements Spec.
func (Transfer) Kind() string { return "transfer" }

// TransferSourceTypes maps every spelling of a transfer source's type to
// its canonical name (http, postgres, duckdb, result, s3), read by the
// transfer tool and the validator.
var TransferSourceTypes = map[string]string{
	"http": "http", "https": "http",
	"postgres": "postgres", "postgresql": "postgres",
	"duckdb": "duckdb",
	"result": "result", "results": "result", "artifact": "result",
	"s3": "s3", "aws_s3": "s3",
}

// TransferTargetTypes maps every spelling of a transfer target's type to
// its canonical name (postgres, duckdb, s3).
var TransferTargetTypes = map[string]string{
	"postgres": "postgres", "postgresql": "postgres",
	"duckdb": "duckdb",
	"s3":     "s3", "aws_s3": "s3",
}

// TransferEndType returns the canonical type of a transfer end's type
// spelled s (case and surrounding spaces ignored) among types
// (TransferSourceTypes or TransferTargetTypes); ok is false when s is not
// one of them.
func TransferEndType(types map[string]string, s string) (canonical string, ok bool) {
	canonical, ok = types[strings.ToLower(strings.TrimSpace(s))]
	return canonical, ok
}
