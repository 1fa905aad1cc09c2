package toolspec

// DuckDB is the configuration of kind duckdb: SQL in an embedded DuckDB
// database (noetl-tools DuckdbConfig; local files and :memory: only, no
// extension downloads: no ATTACH of PostgreSQL, no gs:// through httpfs).
type DuckDB struct {
	Query         any    `json:"query,omitempty" alias:"command,sql" required:"sql" doc:"The SQL: one statement or several separated by ';' (run in order on one connection), or a list of such texts."`
	Commands      any    `json:"commands,omitempty" required:"sql" doc:"The SQL as a list of statements (NoETL's shape), or as text; read when query is not given."`
	Params        any    `json:"params,omitempty" doc:"Bind parameters of the last statement: a list bound to ? / $1.., or a mapping bound to $name (mappings and lists as JSON text)."`
	Database      string `json:"database,omitempty" alias:"db_path,path,db" default:":memory:" doc:"The database: :memory: (a fresh database discarded after the task) or a file path (created when missing; relative to the task's workspace in the runner)."`
	ReadOnly      bool   `json:"read_only,omitempty" default:"false" doc:"Open the database file read-only."`
	AsObjects     *bool  `json:"as_objects,omitempty" default:"true" doc:"Rows as objects {column: value}; false: rows as lists of values in column order."`
	Auth          any    `json:"auth,omitempty" ignored:"no database is attached here (no extensions: a PostgreSQL table reaches DuckDB through the transfer kind)" doc:"NoETL: credentials of attached databases."`
	Credentials   any    `json:"credentials,omitempty" ignored:"no database is attached here (no extensions: a PostgreSQL table reaches DuckDB through the transfer kind)" doc:"NoETL: credentials of attached databases."`
	GcsCredential any    `json:"gcs_credential,omitempty" doc:"NoETL: HMAC keys for gs:// through DuckDB's httpfs extension; refused here (no extension downloads: copy the object with the gcs kind and read the local file)."`
}

// Kind implements Spec.
func (DuckDB) Kind() string { return "duckdb" }
