package toolspec

// DuckDB is the configuration of kind duckdb: SQL in an embedded DuckDB database (noetl-tools DuckdbConfig; local files and :memory: only, no extensions).
// Not yet read through this struct by its tool (the tool still reads its
// configuration map): the keys are the validator's.
type DuckDB struct {
	Query         string `json:"query,omitempty" required:"sql" doc:"The SQL."`
	Command       string `json:"command,omitempty" required:"sql" doc:"The SQL (NoETL's spelling)."`
	Commands      any    `json:"commands,omitempty" required:"sql" doc:"The SQL as a list of statements, or text."`
	Sql           string `json:"sql,omitempty" required:"sql" doc:"The SQL (NoETL's spelling)."`
	Params        any    `json:"params,omitempty" doc:"Bind parameters."`
	Database      string `json:"database,omitempty" doc:"The database file (under the engine's DuckDB directory) or :memory:."`
	DBPath        string `json:"db_path,omitempty" doc:"NoETL's spelling of database."`
	AsObjects     any    `json:"as_objects,omitempty" doc:"Return rows as objects {column: value}."`
	Auth          any    `json:"auth,omitempty" doc:"NoETL: credentials for attached databases."`
	Credentials   any    `json:"credentials,omitempty" doc:"NoETL: credentials for attached databases."`
	GcsCredential any    `json:"gcs_credential,omitempty" doc:"NoETL: HMAC keys for gs:// through httpfs (rejected: no extension downloads here)."`
}

// Kind implements Spec.
func (DuckDB) Kind() string { return "duckdb" }
