package toolspec

// Postgres is the configuration of kind postgres: SQL against a
// PostgreSQL database (noetl-tools PostgresConfig; NoETL's postgres
// executor, noetl/tools/postgres).
type Postgres struct {
	Command    string `json:"command,omitempty" alias:"sql,query,cmd" required:"sql" doc:"The SQL: one statement (params allowed) or a script of statements separated by ';' (run in one implicit transaction)."`
	Commands   any    `json:"commands,omitempty" alias:"queries,cmds" required:"sql" doc:"The SQL as a list of statements (joined with ';'), or as text."`
	CommandB64 string `json:"command_b64,omitempty" alias:"commands_b64,query_b64" required:"sql" doc:"The SQL, base64-encoded UTF-8 text."`
	Script     any    `json:"script,omitempty" required:"sql" doc:"A script block {path | uri | source: {type: file|gcs|http|inline, ...}} whose text is the SQL (it wins over command)."`
	Params     any    `json:"params,omitempty" doc:"Bind parameters of a single statement: a list for $1, $2, ... or a mapping for @name."`
	Auth       any    `json:"auth,omitempty" alias:"credential" doc:"The connection's credential: a credential name (kind postgres) or a mapping {host, port, user, password, database} (or {dsn}); a DSN string is used as is."`
	Connection any    `json:"connection,omitempty" alias:"dsn,connection_string,db_conn_string" doc:"The connection: a postgres URL or keyword DSN, or a mapping {host, port, user, password, database}."`
	Host       string `json:"host,omitempty" alias:"db_host" doc:"The server's host (with port, user, password, database: the connection, when neither connection nor auth is given)."`
	Port       string `json:"port,omitempty" alias:"db_port" doc:"The server's port." default:"5432"`
	Database   string `json:"database,omitempty" alias:"db_name" doc:"The database name."`
	User       string `json:"user,omitempty" alias:"db_user" doc:"The role to connect as."`
	Password   string `json:"password,omitempty" alias:"db_password" doc:"The role's password (prefer auth: a credential name)."`
	Schema     string `json:"schema,omitempty" doc:"The search_path of the connection."`
	SSLMode    string `json:"sslmode,omitempty" alias:"ssl_mode,db_sslmode" enum:"disable,allow,prefer,require,verify-ca,verify-full" doc:"The connection's sslmode (libpq)."`
	AsObjects  any    `json:"as_objects,omitempty" ignored:"rows are always returned as objects {column: value} here (NoETL's as_objects: true)" doc:"NoETL: return rows as objects; rows are always objects here."`
	Pool       any    `json:"pool,omitempty" ignored:"connection pools are sized by the engine (one cached pool per DSN), not per task" doc:"NoETL's per-task pool settings; the engine sizes its pools itself."`
}

// Kind implements Spec.
func (Postgres) Kind() string { return "postgres" }
