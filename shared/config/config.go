// Package config reads the engine's runtime configuration: every knob is
// declared once in a registry (Knobs: name, environment variable, YAML
// path, type, default, validation, documentation and the rule it comes
// from), read from an optional YAML file (NOETL_CONFIG=path) and then from
// NOETL_* environment variables (the environment wins), and validated
// before use: a bad value is an error naming the variable (or the file,
// line and YAML path), never a silent default (NoETL observability spec §8.12, §8.14
// "Config validation on startup"). Defaults match the local emulator stack
// (emulators/stack). docs/configuration.md's table is generated from the registry
// (TestConfigurationDoc).
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is the process configuration shared by all functions. Field
// comments name the environment variable; Knobs documents each one.
type Config struct {
	Project  string // GOOGLE_CLOUD_PROJECT, default "noetl-local"
	Location string // NOETL_LOCATION, default "us-central1"
	// EventsTopic carries the event log.
	EventsTopic string // NOETL_EVENTS_TOPIC, default "events"
	// CommandsTopic carries bulk fan-out from execute/route to dispatch.
	CommandsTopic string // NOETL_COMMANDS_TOPIC, default "commands"
	// ReplaySubscription is the pull subscription of the events topic
	// that keeps acknowledged messages (retain_acked_messages) and that
	// nothing consumes: `noetl rebuild` seeks it to rebuild an execution's
	// event read model (shared/replay).
	ReplaySubscription string // NOETL_REPLAY_SUBSCRIPTION, default "events-replay"
	// RetentionDays is how long an ended execution's record, its event
	// read model and its results are kept (the expire_at TTL of its
	// documents; the results GC deletes its results after as long).
	RetentionDays int // NOETL_RETENTION_DAYS, default 30
	// PushMaxDeliveryAttempts is the dead-letter policy's delivery
	// attempts of the push subscriptions (the last delivery is final).
	PushMaxDeliveryAttempts int    // NOETL_PUSH_MAX_DELIVERY_ATTEMPTS, default 10
	WorkQueue               string // NOETL_WORK_QUEUE, default "work"
	TimersQueue             string // NOETL_TIMERS_QUEUE, default "timers"
	// TasksMaxAttempts is the queues' max_attempts: a delivery whose
	// X-CloudTasks-TaskRetryCount is TasksMaxAttempts-1 is the last one.
	TasksMaxAttempts int // NOETL_TASKS_MAX_ATTEMPTS, default 30
	// TasksMaxBackoff is the queues' largest backoff between two attempts:
	// a failed delivery arms a guard that files its unit in the DLQ if no
	// later attempt reaches execute (worker.Delivery.MaxBackoff).
	TasksMaxBackoff time.Duration // NOETL_TASKS_MAX_BACKOFF_S, default 60s
	// FunctionsURL is the base URL of the local functions host.
	FunctionsURL string // NOETL_FUNCTIONS_URL, default "http://127.0.0.1:8680"
	// ExecuteURL is the Cloud Task target; in the cloud each gen2 function
	// has its own URL, so it is set apart from FunctionsURL.
	ExecuteURL string // NOETL_EXECUTE_URL, default FunctionsURL + "/execute"
	// ExecuteAudience is the audience of the OIDC token Cloud Tasks
	// attaches to calls of execute (and that execute verifies).
	ExecuteAudience string // NOETL_EXECUTE_AUDIENCE, default ExecuteURL
	// TasksServiceAccount is the email of the service account whose OIDC
	// token Cloud Tasks attaches ("" = no token: the local stack).
	TasksServiceAccount string // NOETL_TASKS_SERVICE_ACCOUNT, default ""
	// SubscribeURL is the subscribe function's URL: registered
	// subscriptions push to SubscribeURL + "/push/<name>".
	SubscribeURL string // NOETL_SUBSCRIBE_URL, default FunctionsURL + "/subscribe"
	// PushServiceAccount is the email whose OIDC token Pub/Sub attaches
	// to pushes to the subscribe function ("" = no token: the stack).
	PushServiceAccount string // NOETL_PUSH_SERVICE_ACCOUNT, default ""
	// OIDCJWKSFile is a JSON Web Key Set that verifies the OIDC tokens of
	// Cloud Tasks calls instead of Google's certificates: the local
	// stack's Cloud Tasks emulator key ("" = Google's, in GCP).
	OIDCJWKSFile string // NOETL_OIDC_JWKS_FILE, default ""
	// ResultsBucket is the GCS bucket of over-budget results.
	ResultsBucket string // NOETL_RESULTS_BUCKET, default "noetl-results"
	// ResultInlineMax is the largest JSON result (bytes) kept inline in
	// events and state; larger ones go to the results tier (NoETL result storage RFC).
	ResultInlineMax int // NOETL_RESULT_INLINE_MAX, default 65536
	// Tenant and TenantProject name the deployment's tenant and project
	// in result URIs and object keys ("" = "default"; NoETL result
	// storage RFC §4).
	Tenant        string // NOETL_TENANT, default ""
	TenantProject string // NOETL_TENANT_PROJECT, default ""
	// ResultEnv is the env= segment of result object keys ("" = "default").
	ResultEnv string // NOETL_RESULT_ENV, default ""
	// ResultCellsFile is the deployment's cell map (YAML: cells and
	// placement epochs, results.LoadCellMap); "" = one cell, the results
	// bucket.
	ResultCellsFile string // NOETL_RESULT_CELLS_FILE, default ""
	// ResultCacheMB bounds the instance's cache of loaded results
	// (MiB; 0 = no cache).
	ResultCacheMB int // NOETL_RESULT_CACHE_MB, default 64
	// ResultReadCheck is the digest reads of stored results check
	// (results.ParseReadCheck: "sha256" or "crc32c").
	ResultReadCheck string // NOETL_RESULT_READ_CHECK, default "crc32c"
	// ResultMaterializeMaxMB is the largest stored result (MiB) a
	// template, python code or a loop plan may load whole.
	ResultMaterializeMaxMB int // NOETL_RESULT_MATERIALIZE_MAX_MB, default 256
	// ResultMaxObjectMB is the largest object one task attempt writes to
	// the result tier (MiB): the runner's write grants sign it as a
	// length range.
	ResultMaxObjectMB int // NOETL_RESULT_MAX_OBJECT_MB, default 4096
	// TaskErrorMaxBytes is the size of a task's error message as the
	// engine keeps it; a longer one is cut with a note and its full text
	// stored in the result tier.
	TaskErrorMaxBytes int // NOETL_TASK_ERROR_MAX_BYTES, default 8192
	// RepoRoot resolves playbook paths given to the api (POST {path}).
	RepoRoot string // NOETL_REPO_ROOT, default "."
	// LeaseTTL bounds how long an execute call holds a unit's lease
	// without renewing it.
	LeaseTTL time.Duration // NOETL_LEASE_TTL_S, default 30s
	// HeartbeatInterval is how often a running unit renews its lease.
	HeartbeatInterval time.Duration // NOETL_HEARTBEAT_INTERVAL_S, default 10s
	// DispatchDeadline is the Cloud Tasks dispatch deadline of a unit:
	// a unit that would outlive it hands off to a new unit.
	DispatchDeadline time.Duration // NOETL_DISPATCH_DEADLINE_S, default 600s
	// ContinueUnits is how many next units one execute invocation may run
	// after its own when a step's end releases exactly one (step
	// continuation; 0 disables it), and ContinueBudget the wall time after
	// which it starts no more.
	ContinueUnits  int           // NOETL_CONTINUE_UNITS, default 16
	ContinueBudget time.Duration // NOETL_CONTINUE_BUDGET_S, default 60s
	// ContinueDefer is how many ends of units run without a lease one
	// commit may carry inside a chain (deferred step ends; 0: each end
	// commits on its own).
	ContinueDefer int // NOETL_CONTINUE_DEFER, default 16
	// ExecutionDeadline bounds an execution's wall-clock time when the
	// playbook sets no executor.spec.timeout_s (0 = none).
	ExecutionDeadline time.Duration // NOETL_EXECUTION_DEADLINE_S, default 0
	// DefaultMaxInFlight is a parallel loop's max_in_flight when unset.
	DefaultMaxInFlight int // NOETL_DEFAULT_MAX_IN_FLIGHT, default 10
	// PythonBin is the interpreter for python tasks.
	PythonBin string // NOETL_PYTHON, default "" (automatic: /usr/bin/python3, else python3 on PATH)
	// PythonWarm is how many python interpreters the runner keeps
	// started ahead of demand, each in a room of its own, never reused.
	PythonWarm int // NOETL_PYTHON_WARM_INTERPRETERS, default 2
	// PythonZygote forks the warm python interpreters from a zygote
	// (an interpreter started once, runner/sandbox Zygote) instead of
	// exec'ing each.
	PythonZygote bool // NOETL_PYTHON_ZYGOTE, default true
	// PGDSN is the default PostgreSQL connection for postgres tasks that
	// name no connection (workload pg_dsn wins over it).
	PGDSN string // NOETL_PG_DSN, default ""
	// HTTPAllowLinkLocal lets http tasks call link-local addresses
	// (169.254.0.0/16, fe80::/10: the metadata server).
	HTTPAllowLinkLocal bool // NOETL_HTTP_ALLOW_LINK_LOCAL, default false
	// SecretsEnvAllow are the environment variables the secrets kind's
	// env provider may read in the control plane: names, or prefixes
	// ending in '*' (empty: the kind's default, NOETL_SECRET_*).
	SecretsEnvAllow []string // NOETL_SECRETS_ENV_ALLOW
	// Sandbox bounds python task processes.
	Sandbox SandboxConfig
	// Runner is the boundary to the runner (shared/runnerclient): where it is,
	// how execute authenticates to it and how it verifies execute.
	Runner RunnerConfig
	// Egress is the network policy of user code (shared/egress).
	Egress EgressConfig
	// DuckDB configures the runner's duckdb kind per task.
	DuckDB DuckDBConfig
	// API is the api function's access control.
	API APIConfig
	// SigningKey holds the HMAC keys of the engine's messages
	// (shared/sign; "" = unset: the functions refuse to start).
	SigningKey string // NOETL_SIGNING_KEY
	// Profile is where the functions run: ProfileCloud (GCP: the api
	// refuses to serve without roles, credential values live in Secret
	// Manager) or ProfileLocal (the emulator stack). Unset, it is cloud
	// when K_SERVICE is set (Cloud Run and Cloud Functions gen2 set it
	// on every instance), else local.
	Profile string // NOETL_PROFILE
	// CredentialValues is where credential values are kept:
	// "secretmanager" (one Secret Manager secret per credential) or
	// "firestore" (sealed in the emulator's Firestore). Unset: Secret
	// Manager in the cloud profile, Firestore locally.
	CredentialValues string // NOETL_CREDENTIAL_VALUES
	// LatencyProfile names the latency profile the functions add to
	// their cloud calls on the local stack (shared/latency): "off" or
	// "gcp".
	LatencyProfile string // NOETL_LATENCY_PROFILE

	Orchestrator OrchestratorConfig
	Retries      RetriesConfig
	Timeouts     TimeoutsConfig
	DLQ          DLQConfig
	Tracing      TracingConfig
	Metrics      MetricsConfig
	Logging      LoggingConfig
	Policies     PoliciesConfig

	// File is the YAML file the configuration was read from ("" = none).
	File string
}

// SandboxConfig holds the limits and identities of the runner's
// sandboxed commands (python, shell; runner/sandbox); 0 means no limit.
type SandboxConfig struct {
	CPUSeconds int     // NOETL_SANDBOX_CPU_S, default 300
	MemoryMB   int     // NOETL_SANDBOX_MEMORY_MB, default 1024
	OpenFiles  int     // NOETL_SANDBOX_OPEN_FILES, default 256
	Processes  int     // NOETL_SANDBOX_PROCESSES, default 64
	DiskMB     int     // NOETL_SANDBOX_DISK_MB, default 512
	CPUs       float64 // NOETL_SANDBOX_CPUS, default 1
	// Cgroup is where task control groups are created ("" = the
	// process's own).
	Cgroup string // NOETL_SANDBOX_CGROUP
	// BaseUID and PoolSize are the dedicated task uids.
	BaseUID  int // NOETL_SANDBOX_BASE_UID, default 1879048192
	PoolSize int // NOETL_SANDBOX_POOL_SIZE, default 1024
	// NoNamespace disables the PID namespace of commands.
	NoNamespace bool // NOETL_SANDBOX_NO_NAMESPACE, default false
	// WarmMaxAgeS is how long a warm sandbox (python interpreter, duckdb
	// worker) waits for its task before it is replaced.
	WarmMaxAgeS int // NOETL_SANDBOX_WARM_MAX_AGE_S, default 600
	// DataRoots are host directories tasks may read and write besides
	// their workspace (duckdb's allowed directories, binds of python
	// and shell tasks).
	DataRoots []string // NOETL_RUNNER_DATA_ROOTS
}

// RunnerConfig is the boundary between the control plane and the runner
// (README "Architecture").
type RunnerConfig struct {
	// URL is the runner's base URL ("" = the runner kinds fail with a
	// config error: user code never runs in the control plane).
	URL string // NOETL_RUNNER_URL
	// Audience is the audience of execute's ID tokens for the runner.
	Audience string // NOETL_RUNNER_AUDIENCE, default URL
	// Invoker is the service account whose ID tokens the runner accepts
	// (execute's); execute's locally minted tokens carry it.
	Invoker string // NOETL_RUNNER_INVOKER, default noetl-execute@<project>.iam.gserviceaccount.com
	// TokenKeyFile is the PEM key execute mints its runner tokens with on
	// the local stack ("" = Google ID tokens from the metadata server).
	TokenKeyFile string // NOETL_RUNNER_TOKEN_KEY_FILE
	// JWKSFile is the JWK set the runner verifies tokens with on the
	// local stack ("" = Google's certificates).
	JWKSFile string // NOETL_RUNNER_JWKS_FILE
	// WorkDir is where the runner creates each task's private directory.
	WorkDir string // NOETL_RUNNER_WORK_DIR, default <tmp>/noetl-runner
	// ResultsKeyFile is the PEM key execute signs result grants with on
	// the local stack ("" = execute's service account through IAM).
	ResultsKeyFile string // NOETL_RESULTS_SIGNING_KEY_FILE
	// ResultsEndpoint is the base URL the signed URLs name ("" = Cloud
	// Storage; the local stack: its signed-URL gateway).
	ResultsEndpoint string // NOETL_RESULTS_SIGNED_ENDPOINT
	// ResultsGrantExtra is how long a grant outlives its attempt's
	// timeout.
	ResultsGrantExtra time.Duration // NOETL_RESULTS_GRANT_EXTRA_S, default 900 s
	// TaskConnections bounds the connections one task holds open at once
	// through its network namespace's forwarders and proxy tunnels (0:
	// unbounded).
	TaskConnections int // NOETL_RUNNER_TASK_CONNECTIONS, default 16
	// ExecutionConnections bounds the connections the tasks of one
	// execution hold open at once through one runner instance (0:
	// unbounded).
	ExecutionConnections int // NOETL_RUNNER_EXECUTION_CONNECTIONS, default 32
}

// EgressConfig is the network policy of user code (shared/egress).
type EgressConfig struct {
	// Profile is "cloud" (private ranges refused unless allowed) or
	// "local" (private ranges allowed).
	Profile string // NOETL_EGRESS_PROFILE, default cloud
	// Allow lists the destinations allowed despite the policy: host,
	// host:port, CIDR or CIDR with :port.
	Allow []string // NOETL_EGRESS_ALLOW
	// Deny lists destinations refused whatever Allow says (the engine's
	// own endpoints).
	Deny []string // NOETL_EGRESS_DENY
}

// DuckDBConfig bounds the runner's duckdb tasks (per task).
type DuckDBConfig struct {
	// MemoryMB is DuckDB's memory_limit per task.
	MemoryMB int // NOETL_DUCKDB_MEMORY_MB, default 1024
	// Threads is DuckDB's threads per task.
	Threads int // NOETL_DUCKDB_THREADS, default 2
	// MaxTempMB is DuckDB's max_temp_directory_size per task.
	MaxTempMB int // NOETL_DUCKDB_MAX_TEMP_MB, default 1024
	// WarmWorkers is how many duckdb workers the runner keeps started
	// ahead of demand, each in a room of its own, never reused.
	WarmWorkers int // NOETL_DUCKDB_WARM_WORKERS, default 1
}

// APIConfig is the api function's access control.
type APIConfig struct {
	// RolesFile maps principals to roles ("" = every authenticated caller
	// is an admin).
	RolesFile string // NOETL_API_ROLES_FILE
	// Token is a static bearer token accepted by the api ("" = none).
	Token string // NOETL_API_TOKEN
	// Audiences are the audiences of the Google identity tokens accepted
	// (the api's and emit's URLs; empty = identity tokens are refused).
	Audiences []string // NOETL_API_AUDIENCES
	// Roles is a roles document (the roles file's YAML) given inline, as
	// Terraform sets it; exclusive with RolesFile.
	Roles string // NOETL_API_ROLES
}

// Profiles (Config.Profile).
const (
	// ProfileCloud: deployed on GCP. The api and emit refuse to serve
	// without roles (NOETL_API_ROLES_FILE or NOETL_API_ROLES), and
	// credential values default to Secret Manager.
	ProfileCloud = "cloud"
	// ProfileLocal: the local emulator stack and tests.
	ProfileLocal = "local"
)

// OrchestratorConfig is NoETL observability spec §8.12 "orchestrator".
type OrchestratorConfig struct {
	// EvaluateWhenTimeout is the budget of one `when` evaluation. (The
	// seed's route_after_all_sinks and render_args_server_side are how the
	// engine always works — a unit's tasks, sinks included, end before its
	// boundary event is routed, and route renders arc args — so they are
	// no knobs.)
	EvaluateWhenTimeout time.Duration // NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS, default 100ms
}

// Backoff is one retry budget: attempts and exponential backoff bounds
// (NoETL observability spec §8.4).
type Backoff struct {
	MaxAttempts int
	Base        time.Duration
	Max         time.Duration
}

// RetriesConfig is NoETL observability spec §8.12 "retries".
type RetriesConfig struct {
	Plugin Backoff // NOETL_RETRIES_PLUGIN_*: 6 attempts, 200ms..30s
	Sink   Backoff // NOETL_RETRIES_SINK_*: 8 attempts, 200ms..60s
}

// TimeoutsConfig is NoETL observability spec §8.12 "timeouts" (README "Resilience").
type TimeoutsConfig struct {
	ToolDefault time.Duration // NOETL_TIMEOUTS_TOOL_DEFAULT_MS, default 30s
	SinkDefault time.Duration // NOETL_TIMEOUTS_SINK_DEFAULT_MS, default 30s
	LoopItem    time.Duration // NOETL_TIMEOUTS_LOOP_ITEM_MS, default 0 (none)
	LoopTotal   time.Duration // NOETL_TIMEOUTS_LOOP_TOTAL_MS, default 0 (none)
}

// Retention returns RetentionDays as a duration.
func (c *Config) Retention() time.Duration {
	return time.Duration(c.RetentionDays) * 24 * time.Hour
}

// DLQConfig is NoETL observability spec §8.12 "dlq".
type DLQConfig struct {
	Enabled       bool // NOETL_DLQ_ENABLED, default true
	RetentionDays int  // NOETL_DLQ_RETENTION_DAYS, default 30
	// Hold parks the unit of a filed task failure for a replay.
	Hold bool // NOETL_DLQ_HOLD, default false
}

// TracingConfig is NoETL observability spec §8.12 "tracing".
type TracingConfig struct {
	Enabled            bool     // NOETL_TRACING_ENABLED, default true
	SampleRate         float64  // NOETL_TRACING_SAMPLE_RATE, default 0.1
	ForceSampleOnError bool     // NOETL_TRACING_FORCE_SAMPLE_ON_ERROR, default true
	Exporter           []string // NOETL_TRACING_EXPORTER: otlp|gcp|file|none (a list), default derived
	// LibrarySpans also records the Google Cloud client libraries' spans.
	LibrarySpans bool   // NOETL_TRACING_LIBRARY_SPANS, default false
	Endpoint     string // NOETL_TRACING_ENDPOINT, default ""
	Dir          string // NOETL_TRACE_DIR: the file exporter's directory, default ""
}

// MetricsConfig is NoETL observability spec §8.12 "metrics".
type MetricsConfig struct {
	Enabled  bool   // NOETL_METRICS_ENABLED, default true
	Port     int    // NOETL_METRICS_PORT, default 0 (the functions host's own port)
	Path     string // NOETL_METRICS_PATH, default "/metrics"
	Exporter string // NOETL_METRICS_EXPORTER: prometheus|gcp|none, default prometheus
	// ExportInterval is how often the gcp exporter pushes.
	ExportInterval time.Duration // NOETL_METRICS_EXPORT_INTERVAL_S, default 60 s
}

// LoggingConfig is NoETL observability spec §8.12 "logging".
type LoggingConfig struct {
	Level      string   // NOETL_LOGGING_LEVEL: debug|info|warn|error, default info
	Format     string   // NOETL_LOGGING_FORMAT: json|text, default json
	RedactKeys []string // NOETL_LOGGING_REDACT_KEYS, comma-separated (added to the built-in list)
	// Source adds each line's source location.
	Source bool // NOETL_LOG_SOURCE, default false
}

// PoliciesConfig is NoETL observability spec §8.12 "policies" (NoETL observability spec §8.8).
type PoliciesConfig struct {
	OnStepFail  string // NOETL_POLICIES_ON_STEP_FAIL: halt|continue|route_edge:<step>, default halt
	OnSinkFail  string // NOETL_POLICIES_ON_SINK_FAIL: retry|fail_step|async_ignore, default retry
	OnWhenError string // NOETL_POLICIES_ON_WHEN_ERROR: treat_as_false|fail_step, default treat_as_false
}

// FileEnv names the environment variable holding the YAML file path.
const FileEnv = "NOETL_CONFIG"

// LoadE reads the configuration: defaults, then the YAML file named by
// NOETL_CONFIG (if set), then the environment. It returns an *Error
// listing every invalid value when any value is invalid.
func LoadE() (Config, error) {
	return Parse(osLookup, os.ReadFile)
}

// Load is LoadE for callers that cannot handle an error: it panics with
// the validation error instead of falling back to a default. New code
// (and shared/wiring) should call LoadE and fail the cold start.
func Load() Config {
	c, err := LoadE()
	if err != nil {
		panic(err)
	}
	return c
}

func osLookup(k string) (string, bool) { return os.LookupEnv(k) }

// Parse builds a Config from lookup (environment variables; an empty value
// counts as unset) and readFile (used for the NOETL_CONFIG file). Errors
// are *Error.
func Parse(lookup func(string) (string, bool), readFile func(string) ([]byte, error)) (Config, error) {
	var c Config
	errs := &Error{}
	for _, k := range registry {
		v, err := k.parse(k.Default)
		if err != nil { // a registry bug: caught by TestDefaultsValid
			errs.add(k, "default", err.Error())
			continue
		}
		k.set(&c, v)
	}
	if path, ok := lookup(FileEnv); ok && path != "" {
		c.File = path
		b, err := readFile(path)
		if err != nil {
			errs.Problems = append(errs.Problems, Problem{Env: FileEnv, Origin: FileEnv + "=" + path, Message: err.Error()})
		} else {
			applyYAML(&c, path, b, errs)
		}
	}
	for _, k := range registry {
		name, raw, ok := k.lookupEnv(lookup)
		if !ok {
			continue
		}
		v, err := k.parse(raw)
		if err == nil {
			err = k.validate(v)
		}
		if err != nil {
			shown := raw
			if k.Secret {
				shown = "***"
			}
			errs.add(k, name+"="+shown, err.Error())
			continue
		}
		k.set(&c, v)
	}
	derive(&c)
	if c.Profile == "" {
		c.Profile = ProfileLocal
		if v, ok := lookup("K_SERVICE"); ok && v != "" {
			c.Profile = ProfileCloud
		}
	}
	if c.CredentialValues == "" {
		c.CredentialValues = "firestore"
		if c.Profile == ProfileCloud {
			c.CredentialValues = "secretmanager"
		}
	}
	crossCheck(&c, errs)
	if len(errs.Problems) > 0 {
		return c, errs
	}
	return c, nil
}

// derive fills the defaults that depend on other knobs.
func derive(c *Config) {
	if c.ExecuteURL == "" {
		c.ExecuteURL = strings.TrimSuffix(c.FunctionsURL, "/") + "/execute"
	}
	if c.ExecuteAudience == "" {
		c.ExecuteAudience = c.ExecuteURL
	}
	if c.SubscribeURL == "" {
		c.SubscribeURL = strings.TrimSuffix(c.FunctionsURL, "/") + "/subscribe"
	}
	if c.Runner.Audience == "" {
		c.Runner.Audience = c.Runner.URL
	}
	if c.Runner.Invoker == "" {
		c.Runner.Invoker = "noetl-execute@" + c.Project + ".iam.gserviceaccount.com"
	}
	if c.Runner.WorkDir == "" {
		c.Runner.WorkDir = filepath.Join(os.TempDir(), "noetl-runner")
	}
}

// crossCheck validates relations between knobs.
func crossCheck(c *Config, errs *Error) {
	rel := func(env string, msg string, args ...any) {
		k, _ := ByEnv(env)
		errs.Problems = append(errs.Problems, Problem{Env: env, Path: k.Path, Origin: "relation", Message: fmt.Sprintf(msg, args...)})
	}
	if c.HeartbeatInterval >= c.LeaseTTL {
		rel("NOETL_HEARTBEAT_INTERVAL_S", "heartbeat interval %s must be shorter than NOETL_LEASE_TTL_S %s", c.HeartbeatInterval, c.LeaseTTL)
	}
	if c.ContinueBudget >= c.DispatchDeadline {
		rel("NOETL_CONTINUE_BUDGET_S", "continuation budget %s must be shorter than NOETL_DISPATCH_DEADLINE_S %s (an invocation must answer before its dispatch deadline)", c.ContinueBudget, c.DispatchDeadline)
	}
	if c.LeaseTTL >= c.DispatchDeadline {
		rel("NOETL_LEASE_TTL_S", "lease TTL %s must be shorter than NOETL_DISPATCH_DEADLINE_S %s (a unit must not be redelivered while its lease holds)", c.LeaseTTL, c.DispatchDeadline)
	}
	if c.Retries.Plugin.Base > c.Retries.Plugin.Max {
		rel("NOETL_RETRIES_PLUGIN_BASE_MS", "base backoff %s exceeds NOETL_RETRIES_PLUGIN_MAX_MS %s", c.Retries.Plugin.Base, c.Retries.Plugin.Max)
	}
	if c.Retries.Sink.Base > c.Retries.Sink.Max {
		rel("NOETL_RETRIES_SINK_BASE_MS", "base backoff %s exceeds NOETL_RETRIES_SINK_MAX_MS %s", c.Retries.Sink.Base, c.Retries.Sink.Max)
	}
	if c.Timeouts.LoopTotal > 0 && c.Timeouts.LoopItem > c.Timeouts.LoopTotal {
		rel("NOETL_TIMEOUTS_LOOP_ITEM_MS", "loop item budget %s exceeds NOETL_TIMEOUTS_LOOP_TOTAL_MS %s", c.Timeouts.LoopItem, c.Timeouts.LoopTotal)
	}
	if c.API.RolesFile != "" && c.API.Roles != "" {
		rel("NOETL_API_ROLES", "set either NOETL_API_ROLES (the roles inline) or NOETL_API_ROLES_FILE, not both")
	}
	if err := checkURL(c.ExecuteURL); err != nil {
		rel("NOETL_EXECUTE_URL", "%s (derived from NOETL_FUNCTIONS_URL when unset)", err)
	}
}

// QueuePath returns projects/P/locations/L/queues/name.
func (c Config) QueuePath(name string) string {
	return "projects/" + c.Project + "/locations/" + c.Location + "/queues/" + name
}

// Problem is one invalid value.
type Problem struct {
	// Env is the knob's environment variable.
	Env string
	// Path is the knob's YAML path.
	Path string
	// Origin says where the value came from: "NOETL_X=value" for the
	// environment, "file.yaml:12" for the file, "relation" for a check
	// between knobs.
	Origin string
	// Message says what is wrong with the value.
	Message string
}

// String renders the problem as one line, its origin first:
// "NOETL_X=value: message", "file.yaml:12: path (NOETL_X): message", or
// "NOETL_X: message" for a check between knobs.
func (p Problem) String() string {
	switch {
	case p.Env == FileEnv:
		return p.Origin + ": " + p.Message
	case strings.HasPrefix(p.Origin, p.Env+"="):
		return p.Origin + ": " + p.Message
	case p.Origin == "relation" || p.Origin == "":
		return p.Env + ": " + p.Message
	default:
		return p.Origin + ": " + p.Path + " (" + p.Env + "): " + p.Message
	}
}

// Error lists every invalid configuration value.
type Error struct{ Problems []Problem }

// Error returns "config: " and the problems' lines (Problem.String)
// joined by "; ".
func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "config: " + strings.Join(parts, "; ")
}

func (e *Error) add(k Knob, origin, msg string) {
	e.Problems = append(e.Problems, Problem{Env: k.Env, Path: k.Path, Origin: origin, Message: msg})
}
