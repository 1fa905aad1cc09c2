// Package stack is the local GCP stack launcher: one supervisor that starts
// the Pub/Sub and Firestore emulators (gcloud), fake GCS, the Cloud Tasks
// emulator, the fixture services, PostgreSQL and the functions server;
// provisions topics, subscriptions, queues and the results bucket; pushes
// Pub/Sub messages to the functions the way push subscriptions do; and
// takes it all down again on SIGTERM. scripts/up and scripts/down drive it.
package stack

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/emulators/chaos"

	"github.com/noetl/gcpengine/emulators/fixtures"
)

// Names of the resources the stack provisions.
const (
	EventsTopic       = "events"
	CommandsTopic     = "commands"
	EventsDeadTopic   = "events-dead"
	CommandsDeadTopic = "commands-dead"
	RouteSub          = "route"
	// RouteFilter is the route subscription's filter: only batches marked
	// for route (bus.AttrRoute).
	RouteFilter    = `attributes.route = "1"`
	MaterializeSub = "materialize"
	DispatchSub    = "dispatch"
	// ReplaySub is the events topic's replay subscription (pull,
	// retain_acked_messages, read only by `noetl rebuild`; the functions'
	// NOETL_REPLAY_SUBSCRIPTION default and Terraform's events-replay).
	ReplaySub     = "events-replay"
	WorkQueue     = "work"
	TimersQueue   = "timers"
	DefaultBucket = "noetl-results"
	PGDatabase    = "noetl"
	// PGUser is the role playbooks and tests connect as (owner of the
	// noetl database, no superuser); PGSuperuser connects only over the
	// server's socket (postgres.go, pg_hba.conf).
	PGUser             = "noetl"
	PGSuperuser        = "postgres"
	modulePath         = "github.com/noetl/gcpengine"
	ownerEnv           = "NOETL_STACK_OWNER"
	defaultProject     = "noetl-local"
	defaultLocation    = "us-central1"
	defaultPushWorkers = 32
	defaultWorkers     = 200
)

// Port describes one TCP port of the stack and the variable that sets it.
type Port struct {
	Name   string // component, e.g. "Pub/Sub emulator"
	EnvVar string // e.g. "NOETL_PUBSUB_PORT"
	Port   int
}

// Config is everything the supervisor needs, read from the environment by
// LoadConfig. Each field names its variable and default.
type Config struct {
	RepoRoot string // NOETL_REPO_ROOT, default: the module root above the working directory
	StackDir string // NOETL_STACK_DIR, default <repo>/.stack

	Project  string // GOOGLE_CLOUD_PROJECT, default noetl-local
	Location string // NOETL_LOCATION, default us-central1

	PubSubPort    int // NOETL_PUBSUB_PORT, default 8681
	FirestorePort int // NOETL_FIRESTORE_PORT, default 8682
	GCSPort       int // NOETL_GCS_PORT, default 8683
	TasksPort     int // NOETL_TASKS_PORT, default 8684
	FixturesPort  int // NOETL_FIXTURES_PORT, default 8685
	FunctionsPort int // NOETL_FUNCTIONS_PORT, default 8680
	PGPort        int // NOETL_PG_PORT, default 55432
	NATSPort      int // NOETL_NATS_PORT, default 8686 (embedded NATS server with JetStream, nats.go)
	// NATSTaskStoreMB, NATSTaskMemoryMB and NATSTaskConnections are the
	// limits of the NATS account tasks use (nats.go): JetStream file
	// storage and memory (MiB) and connections at once.
	NATSTaskStoreMB     int // NOETL_NATS_TASK_STORE_MB, default 64
	NATSTaskMemoryMB    int // NOETL_NATS_TASK_MEMORY_MB, default 16
	NATSTaskConnections int // NOETL_NATS_TASK_CONNECTIONS, default 64
	// RunnerPort is the runner's port (the data plane, runner.go).
	RunnerPort int // NOETL_RUNNER_PORT, default 8687
	// DataGCSPort and DataPubSubPort are the fake GCS and fake Pub/Sub of
	// user data (the buckets and subscriptions playbooks use): the
	// runner may reach them, never the engine's own emulators.
	DataGCSPort    int // NOETL_DATA_GCS_PORT, default 8688
	DataPubSubPort int // NOETL_DATA_PUBSUB_PORT, default 8689
	// ResultsGatewayPort is the results gateway's port (gateway.go): the
	// signed-URL front of the engine's GCS emulator, the only way the
	// runner reaches results.
	ResultsGatewayPort int // NOETL_RESULTS_GATEWAY_PORT, default 8690
	// KafkaPort and S3Port are the Kafka cluster (kfake) and the S3 store
	// (gofakes3) of user data (kafkas3.go): services authors may reach.
	KafkaPort int // NOETL_KAFKA_PORT, default 8691
	S3Port    int // NOETL_S3_PORT, default 8692
	// RunnerUID is the first host uid of the 65536 uids the runner's user
	// namespace maps (it runs as the first, its tasks as others).
	RunnerUID int // NOETL_RUNNER_UID, default 1610612736 + (RunnerPort mod 8192) × 65536
	// RunnerBin is the runner binary (NOETL_RUNNER_BIN, default
	// <stack>/bin/runner, built by scripts/up).
	RunnerBin string

	ResultsBucket   string // NOETL_RESULTS_BUCKET, default noetl-results
	WorkConcurrency int    // NOETL_WORK_CONCURRENCY, default 200 (max_concurrent_dispatches of both queues)
	// TasksMaxAttempts is the queues' max attempts (NOETL_TASKS_MAX_ATTEMPTS,
	// default 10 on the stack (the deployed default is 30), passed to the
	// functions, which recognise the last attempt by it).
	TasksMaxAttempts int
	PushConcurrency  int // NOETL_PUSH_CONCURRENCY, default 32 (concurrent pushes per subscription)

	PushMaxAttempts int           // NOETL_PUSH_MAX_ATTEMPTS, default 10, 5..100 like a dead-letter policy (then the message is dead-lettered)
	PushMinBackoff  time.Duration // NOETL_PUSH_MIN_BACKOFF, default 200ms
	PushMaxBackoff  time.Duration // NOETL_PUSH_MAX_BACKOFF, default 10s
	// SubscribeTick is how often the stack calls the subscribe function's
	// /tick, as Cloud Scheduler does in GCP (NOETL_SUBSCRIBE_TICK, default
	// 1s; README "Subscriptions").
	SubscribeTick time.Duration

	FunctionsBin string // NOETL_FUNCTIONS_BIN, default <stack>/bin/functions (built if missing)
	Gcloud       string // NOETL_GCLOUD, default gcloud
	PGBinDir     string // NOETL_PG_BIN, default: directory of initdb on PATH, else /usr/lib/postgresql/<newest>/bin

	Fixtures fixtures.Options // NOETL_FIXTURE_FAIL_RATE (0.2), NOETL_FIXTURE_SEED, NOETL_ISO_CODES_DIR
	// Chaos injects delivery faults into the push bridges and the Cloud
	// Tasks emulator (NOETL_DELIVERY_CHAOS: "" off, "1" defaults, or
	// "dup=0.2,delay=500ms,seed=N"; see emulators/chaos).
	Chaos    chaos.Options
	LogLevel slog.Level // NOETL_LOG_LEVEL: debug, info (default), warn, error

	// SigningKey is the HMAC key of the engine's messages (shared/sign):
	// NOETL_SIGNING_KEY, else the key kept in <stack>/signing.key, else a
	// new random one written there (EnsureSecrets).
	SigningKey string
	// DevEgressAllow are the developer's own destinations user code may
	// reach beside the stack's services (NOETL_EGRESS_ALLOW, which
	// scripts/up --allow HOST:PORT adds to; EgressAllow, runner.go).
	DevEgressAllow []string
	// APIToken is the bearer token of the api and emit: NOETL_API_TOKEN,
	// else <stack>/api.token, else a new random one written there
	// (EnsureSecrets). The CLI sends it (.stack/env).
	APIToken string
	// NATSTaskPassword and NATSAdminPassword are the passwords of the
	// NATS users of the tasks' account (NATSTaskUser) and of the
	// operators' (NATSAdminUser): NOETL_NATS_TASK_PASSWORD and
	// NOETL_NATS_ADMIN_PASSWORD, else kept in <stack>/nats-task.password
	// and <stack>/nats-admin.password (EnsureSecrets).
	NATSTaskPassword  string
	NATSAdminPassword string
}

// LoadConfig reads the configuration from getenv (os.Getenv in production).
// An empty NOETL_REPO_ROOT is resolved by walking up from the working
// directory to this module's go.mod.
func LoadConfig(getenv func(string) string) (Config, error) {
	var errs []error
	str := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	num := func(k string, def, lo, hi int) int {
		v := strings.TrimSpace(getenv(k))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s=%q: want an integer between %d and %d", k, v, lo, hi))
			return def
		}
		return n
	}
	dur := func(k string, def time.Duration) time.Duration {
		v := strings.TrimSpace(getenv(k))
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 500ms", k, v))
			return def
		}
		return d
	}

	c := Config{
		RepoRoot:            str("NOETL_REPO_ROOT", ""),
		StackDir:            str("NOETL_STACK_DIR", ""),
		Project:             str("GOOGLE_CLOUD_PROJECT", defaultProject),
		Location:            str("NOETL_LOCATION", defaultLocation),
		PubSubPort:          num("NOETL_PUBSUB_PORT", 8681, 1, 65535),
		FirestorePort:       num("NOETL_FIRESTORE_PORT", 8682, 1, 65535),
		GCSPort:             num("NOETL_GCS_PORT", 8683, 1, 65535),
		TasksPort:           num("NOETL_TASKS_PORT", 8684, 1, 65535),
		FixturesPort:        num("NOETL_FIXTURES_PORT", 8685, 1, 65535),
		FunctionsPort:       num("NOETL_FUNCTIONS_PORT", 8680, 1, 65535),
		PGPort:              num("NOETL_PG_PORT", 55432, 1, 65535),
		NATSPort:            num("NOETL_NATS_PORT", 8686, 1, 65535),
		NATSTaskStoreMB:     num("NOETL_NATS_TASK_STORE_MB", 64, 1, 1<<20),
		NATSTaskMemoryMB:    num("NOETL_NATS_TASK_MEMORY_MB", 16, 1, 1<<20),
		NATSTaskConnections: num("NOETL_NATS_TASK_CONNECTIONS", 64, 1, 100000),
		NATSTaskPassword:    str("NOETL_NATS_TASK_PASSWORD", ""),
		NATSAdminPassword:   str("NOETL_NATS_ADMIN_PASSWORD", ""),
		RunnerPort:          num("NOETL_RUNNER_PORT", 8687, 1, 65535),
		DataGCSPort:         num("NOETL_DATA_GCS_PORT", 8688, 1, 65535),
		ResultsGatewayPort:  num("NOETL_RESULTS_GATEWAY_PORT", 8690, 1, 65535),
		DataPubSubPort:      num("NOETL_DATA_PUBSUB_PORT", 8689, 1, 65535),
		KafkaPort:           num("NOETL_KAFKA_PORT", 8691, 1, 65535),
		S3Port:              num("NOETL_S3_PORT", 8692, 1, 65535),
		RunnerBin:           str("NOETL_RUNNER_BIN", ""),
		ResultsBucket:       str("NOETL_RESULTS_BUCKET", DefaultBucket),
		WorkConcurrency:     num("NOETL_WORK_CONCURRENCY", defaultWorkers, 1, 5000),
		TasksMaxAttempts:    num("NOETL_TASKS_MAX_ATTEMPTS", 10, 1, 1000),
		PushConcurrency:     num("NOETL_PUSH_CONCURRENCY", defaultPushWorkers, 1, 1000),
		PushMaxAttempts:     num("NOETL_PUSH_MAX_ATTEMPTS", 10, 5, 100),
		PushMinBackoff:      dur("NOETL_PUSH_MIN_BACKOFF", 200*time.Millisecond),
		PushMaxBackoff:      dur("NOETL_PUSH_MAX_BACKOFF", 10*time.Second),
		SubscribeTick:       dur("NOETL_SUBSCRIBE_TICK", time.Second),
		FunctionsBin:        str("NOETL_FUNCTIONS_BIN", ""),
		Gcloud:              str("NOETL_GCLOUD", "gcloud"),
		PGBinDir:            str("NOETL_PG_BIN", ""),
		SigningKey:          str("NOETL_SIGNING_KEY", ""),
		APIToken:            str("NOETL_API_TOKEN", ""),
	}
	switch strings.ToLower(str("NOETL_LOG_LEVEL", "info")) {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn", "warning":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		errs = append(errs, fmt.Errorf("NOETL_LOG_LEVEL=%q: want debug, info, warn or error", getenv("NOETL_LOG_LEVEL")))
	}

	fx := fixtures.Options{FailRate: fixtures.DefaultFailRate, Seed: str("NOETL_FIXTURE_SEED", fixtures.DefaultSeed), ISODir: str("NOETL_ISO_CODES_DIR", fixtures.DefaultISODir)}
	if v := strings.TrimSpace(getenv("NOETL_FIXTURE_FAIL_RATE")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			errs = append(errs, fmt.Errorf("NOETL_FIXTURE_FAIL_RATE=%q: want a number between 0 and 1", v))
		} else {
			fx.FailRate = f
		}
	}
	c.Fixtures = fx
	if ch, err := chaos.Parse(getenv(chaos.Env)); err != nil {
		errs = append(errs, err)
	} else {
		c.Chaos = ch
	}

	if c.RepoRoot == "" {
		wd, err := os.Getwd()
		if err == nil {
			c.RepoRoot, err = FindRepoRoot(wd)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot find the repository root (set NOETL_REPO_ROOT): %w", err))
		}
	}
	if c.RepoRoot != "" {
		if abs, err := filepath.Abs(c.RepoRoot); err == nil {
			c.RepoRoot = abs
		}
	}
	if c.StackDir == "" {
		c.StackDir = filepath.Join(c.RepoRoot, ".stack")
	}
	if abs, err := filepath.Abs(c.StackDir); err == nil {
		c.StackDir = abs
	}
	if c.FunctionsBin == "" {
		c.FunctionsBin = filepath.Join(c.StackDir, "bin", "functions")
	}
	if c.RunnerBin == "" {
		c.RunnerBin = filepath.Join(c.StackDir, "bin", "runner")
	}
	c.RunnerUID = num("NOETL_RUNNER_UID", 0x60000000+(c.RunnerPort%8192)*65536, 1000, 1<<31-65536)
	if c.PushMaxBackoff < c.PushMinBackoff {
		errs = append(errs, fmt.Errorf("NOETL_PUSH_MAX_BACKOFF (%v) is below NOETL_PUSH_MIN_BACKOFF (%v)", c.PushMaxBackoff, c.PushMinBackoff))
	}
	seen := map[int]string{}
	for _, p := range c.Ports() {
		if other, dup := seen[p.Port]; dup {
			errs = append(errs, fmt.Errorf("%s and %s are both %d: every port of the stack must differ", other, p.EnvVar, p.Port))
		}
		seen[p.Port] = p.EnvVar
	}
	dev, err := c.devEgressAllow(getenv("NOETL_EGRESS_ALLOW"))
	if err != nil {
		errs = append(errs, err)
	}
	c.DevEgressAllow = dev
	return c, errors.Join(errs...)
}

// FindRepoRoot walks up from dir to the directory whose go.mod declares this
// module.
func FindRepoRoot(dir string) (string, error) {
	for d := dir; ; {
		if isModuleRoot(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod of module %s above %s", modulePath, dir)
		}
		d = parent
	}
}

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// Ports lists the stack's TCP ports in start order.
func (c Config) Ports() []Port {
	return []Port{
		{"Pub/Sub emulator", "NOETL_PUBSUB_PORT", c.PubSubPort},
		{"Firestore emulator", "NOETL_FIRESTORE_PORT", c.FirestorePort},
		{"GCS (fake-gcs-server)", "NOETL_GCS_PORT", c.GCSPort},
		{"results gateway", "NOETL_RESULTS_GATEWAY_PORT", c.ResultsGatewayPort},
		{"Cloud Tasks emulator", "NOETL_TASKS_PORT", c.TasksPort},
		{"fixtures", "NOETL_FIXTURES_PORT", c.FixturesPort},
		{"PostgreSQL", "NOETL_PG_PORT", c.PGPort},
		{"NATS", "NOETL_NATS_PORT", c.NATSPort},
		{"data GCS (fake-gcs-server)", "NOETL_DATA_GCS_PORT", c.DataGCSPort},
		{"data Pub/Sub (pstest)", "NOETL_DATA_PUBSUB_PORT", c.DataPubSubPort},
		{"data Kafka (kfake)", "NOETL_KAFKA_PORT", c.KafkaPort},
		{"data S3 (gofakes3)", "NOETL_S3_PORT", c.S3Port},
		{"runner", "NOETL_RUNNER_PORT", c.RunnerPort},
		{"functions", "NOETL_FUNCTIONS_PORT", c.FunctionsPort},
	}
}

func hostPort(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// FunctionsURL is the base URL of the local functions server.
func (c Config) FunctionsURL() string { return "http://" + hostPort(c.FunctionsPort) }

// FixturesURL is the base URL of the fixture services.
func (c Config) FixturesURL() string { return "http://" + hostPort(c.FixturesPort) }

// PGDSN is the connection string of the stack's noetl database.
func (c Config) PGDSN() string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PGUser, hostPort(c.PGPort), PGDatabase)
}

// LogDir is where every component's log lives.
func (c Config) LogDir() string { return filepath.Join(c.StackDir, "logs") }

// LogPath is the log file of component.
func (c Config) LogPath(component string) string {
	return filepath.Join(c.LogDir(), component+".log")
}

// EnvFile is the shell file (export K='V' lines) the supervisor writes.
func (c Config) EnvFile() string { return filepath.Join(c.StackDir, "env") }

// ReadyFile exists while the whole stack is up.
func (c Config) ReadyFile() string { return filepath.Join(c.StackDir, "ready") }

// PIDFile holds the supervisor's pid.
func (c Config) PIDFile() string { return filepath.Join(c.StackDir, "stack.pid") }

// TraceDir is the directory of the functions' file span exporter
// (NOETL_TRACE_DIR), read by `scripts/noetl trace`.
func (c Config) TraceDir() string { return filepath.Join(c.StackDir, "traces") }

// JWKSFile is the JSON Web Key Set of the Cloud Tasks emulator's OIDC key
// (NOETL_OIDC_JWKS_FILE): execute verifies the tokens of its calls with it.
func (c Config) JWKSFile() string { return filepath.Join(c.StackDir, "oidc", "jwks.json") }

// OIDCKeyFile is the emulator's OIDC private key (PKCS #8 PEM, mode 0600;
// NOETL_OIDC_KEY_FILE): tests mint tokens with it to call execute directly.
func (c Config) OIDCKeyFile() string { return filepath.Join(c.StackDir, "oidc", "key.pem") }

// TasksServiceAccount is the service account of the OIDC tokens the
// stack's Cloud Tasks attach (NOETL_TASKS_SERVICE_ACCOUNT): noetl-tasks,
// as terraform/ names it, in the stack's project.
func (c Config) TasksServiceAccount() string {
	return "noetl-tasks@" + c.Project + ".iam.gserviceaccount.com"
}

// EnvVar is one exported variable of the stack's environment contract.
type EnvVar struct{ Key, Value string }

// Env is the environment contract every client of the stack uses: it is
// written to .stack/env and passed to the functions server.
func (c Config) Env() []EnvVar {
	itoa := strconv.Itoa
	return []EnvVar{
		{"GOOGLE_CLOUD_PROJECT", c.Project},
		{"NOETL_LOCATION", c.Location},
		{"NOETL_REPO_ROOT", c.RepoRoot},
		{"NOETL_STACK_DIR", c.StackDir},
		{"NOETL_PUBSUB_PORT", itoa(c.PubSubPort)},
		{"NOETL_FIRESTORE_PORT", itoa(c.FirestorePort)},
		{"NOETL_GCS_PORT", itoa(c.GCSPort)},
		{"NOETL_TASKS_PORT", itoa(c.TasksPort)},
		{"NOETL_FIXTURES_PORT", itoa(c.FixturesPort)},
		{"NOETL_FUNCTIONS_PORT", itoa(c.FunctionsPort)},
		{"NOETL_PG_PORT", itoa(c.PGPort)},
		{"NOETL_NATS_PORT", itoa(c.NATSPort)},
		{"NATS_URL", c.NATSURL()},
		// The NATS users (nats.go): tasks reach the server only with a
		// credential holding the task user's password; the admin user is
		// for operators, never for tasks.
		{"NOETL_NATS_TASK_USER", NATSTaskUser},
		{"NOETL_NATS_TASK_PASSWORD", c.NATSTaskPassword},
		{"NOETL_NATS_ADMIN_USER", NATSAdminUser},
		{"NOETL_NATS_ADMIN_PASSWORD", c.NATSAdminPassword},
		{"PUBSUB_EMULATOR_HOST", hostPort(c.PubSubPort)},
		{"FIRESTORE_EMULATOR_HOST", hostPort(c.FirestorePort)},
		{"STORAGE_EMULATOR_HOST", "http://" + hostPort(c.GCSPort)},
		{"CLOUDTASKS_EMULATOR_HOST", hostPort(c.TasksPort)},
		{"NOETL_FUNCTIONS_URL", c.FunctionsURL()},
		{"NOETL_FIXTURES_URL", c.FixturesURL()},
		{"NOETL_PG_DSN", c.PGDSN()},
		{"NOETL_RESULTS_BUCKET", c.ResultsBucket},
		{"NOETL_WORK_CONCURRENCY", itoa(c.WorkConcurrency)},
		{"NOETL_TASKS_MAX_ATTEMPTS", itoa(c.TasksMaxAttempts)},
		// The queues' MaxBackoff (QueueSpec).
		{"NOETL_TASKS_MAX_BACKOFF_S", itoa(int(QueueMaxBackoff / time.Second))},
		// Tests may target injected faults at one execution (shared/faults).
		{"NOETL_FAULTS_WORKLOAD", "1"},
		// Short leases on the stack: a dead holder's unit is reclaimed
		// within seconds (deployed defaults: 30 s and 10 s).
		{"NOETL_LEASE_TTL_S", envOr("NOETL_LEASE_TTL_S", "10")},
		{"NOETL_HEARTBEAT_INTERVAL_S", envOr("NOETL_HEARTBEAT_INTERVAL_S", "3")},
		{"NOETL_PUSH_CONCURRENCY", itoa(c.PushConcurrency)},
		// The functions file the last delivery the bridges make in the
		// DLQ, as Terraform sets both from var.push.max_delivery_attempts.
		{"NOETL_PUSH_MAX_DELIVERY_ATTEMPTS", itoa(c.PushMaxAttempts)},
		// Telemetry (README "Observability"): every execution traced, spans
		// in JSON-lines files that `scripts/noetl trace ID` reads; metrics
		// at $NOETL_FUNCTIONS_URL/metrics.
		{"NOETL_TRACE_DIR", c.TraceDir()},
		{"NOETL_TRACING_SAMPLE_RATE", envOr("NOETL_TRACING_SAMPLE_RATE", "1")},
		// Cloud Tasks calls execute with an OIDC token signed by the
		// emulator's key; execute verifies it with the key's JWK set.
		{"NOETL_TASKS_SERVICE_ACCOUNT", c.TasksServiceAccount()},
		{"NOETL_OIDC_JWKS_FILE", c.JWKSFile()},
		{"NOETL_OIDC_KEY_FILE", c.OIDCKeyFile()},
		{"NOETL_SIGNING_KEY", c.SigningKey},
		{"NOETL_API_TOKEN", c.APIToken},
		// The data plane (runner.go): execute calls the runner with ID
		// tokens it mints with its key; user data lives in the data GCS
		// and Pub/Sub; the egress policy of the control plane's http kind.
		{"NOETL_RUNNER_PORT", itoa(c.RunnerPort)},
		{"NOETL_RUNNER_URL", c.RunnerURL()},
		{"NOETL_RUNNER_TOKEN_KEY_FILE", c.RunnerKeyFile()},
		// Result grants: execute signs the runner's URLs with its key,
		// naming the results gateway (gateway.go).
		{"NOETL_RESULTS_GATEWAY_PORT", itoa(c.ResultsGatewayPort)},
		{"NOETL_RESULTS_SIGNING_KEY_FILE", c.ResultsKeyFile()},
		{"NOETL_RESULTS_SIGNED_ENDPOINT", c.ResultsGatewayURL()},
		// A task attempt's quota in the result tier (its write grants'
		// signed length range): smaller on the stack than deployed, so
		// that a red-team case reaches it quickly; a larger table (the
		// results bench's stack flow) needs it raised before scripts/up.
		{"NOETL_RESULT_MAX_OBJECT_MB", envOr("NOETL_RESULT_MAX_OBJECT_MB", "64")},
		{"NOETL_RUNNER_INVOKER", c.RunnerInvoker()},
		{"NOETL_DATA_GCS_PORT", itoa(c.DataGCSPort)},
		{"NOETL_DATA_GCS_URL", c.DataGCSURL()},
		{"NOETL_DATA_PUBSUB_PORT", itoa(c.DataPubSubPort)},
		{"NOETL_DATA_PUBSUB_HOST", hostPort(c.DataPubSubPort)},
		{"NOETL_KAFKA_PORT", itoa(c.KafkaPort)},
		{"NOETL_KAFKA_BROKERS", c.KafkaBrokers()},
		{"NOETL_S3_PORT", itoa(c.S3Port)},
		{"NOETL_S3_URL", c.S3URL()},
		{"NOETL_EGRESS_PROFILE", "local"},
		{"NOETL_EGRESS_ALLOW", strings.Join(c.EgressAllow(), ",")},
		{"NOETL_EGRESS_DENY", strings.Join(c.EgressDeny(), ",")},
		// Access control as in the cloud profile, with the stack's own
		// identities: the roles file (RolesFile) gives the static token
		// admin, and the api and emit accept identity tokens signed with
		// the stack's OIDC key (tests mint them, IdentityDomains).
		{"NOETL_PROFILE", "local"},
		{"NOETL_API_ROLES_FILE", envOr("NOETL_API_ROLES_FILE", c.RolesFile())},
		{"NOETL_API_AUDIENCES", c.FunctionsURL() + "/api," + c.FunctionsURL() + "/emit"},
	}
}

// RolesFile is the stack's roles file (NOETL_API_ROLES_FILE unless the
// environment names another), written by WriteRoles.
func (c Config) RolesFile() string { return filepath.Join(c.StackDir, "roles.yaml") }

// IdentityDomains maps each role to the e-mail domain whose identity
// tokens get it on the stack (the tests mint such tokens with the stack's
// OIDC key, NOETL_OIDC_KEY_FILE): reserved .test names, no real identity.
var IdentityDomains = map[string]string{
	"admin": "admins.noetl.test", "operator": "operators.noetl.test", "runner": "runners.noetl.test", "viewer": "viewers.noetl.test",
}

// WriteRoles writes the stack's roles file (mode 0600): the static token
// is admin; an identity token of <anyone>@<IdentityDomains[role]> has
// that role.
func (c Config) WriteRoles() error {
	var b strings.Builder
	b.WriteString("# The local stack's api roles (NOETL_API_ROLES_FILE), written by scripts/up.\n")
	b.WriteString("# The static token (NOETL_API_TOKEN) is admin; identity tokens signed with the\n")
	b.WriteString("# stack's OIDC key get the role of their e-mail domain.\n")
	for _, role := range []string{"admin", "operator", "runner", "viewer"} {
		extra := ""
		if role == "admin" {
			extra = "token, "
		}
		fmt.Fprintf(&b, "%s: [%s\"*@%s\"]\n", role, extra, IdentityDomains[role])
	}
	return writeFileAtomic(c.RolesFile(), []byte(b.String()), 0o600)
}

// SigningKeyFile and APITokenFile keep the stack's generated secrets
// (mode 0600) so that a restarted stack keeps verifying the messages and
// tasks still in flight and the token the CLI holds stays valid.
func (c Config) SigningKeyFile() string { return filepath.Join(c.StackDir, "signing.key") }

// APITokenFile: see SigningKeyFile.
func (c Config) APITokenFile() string { return filepath.Join(c.StackDir, "api.token") }

// EnsureSecrets fills SigningKey, APIToken and the NATS passwords when
// the environment did not set them: from their files under the stack
// directory, else with 32 random bytes (hex) written to those files (mode
// 0600).
func (c *Config) EnsureSecrets() error {
	for _, s := range []struct {
		v    *string
		path string
	}{{&c.SigningKey, c.SigningKeyFile()}, {&c.APIToken, c.APITokenFile()},
		{&c.NATSTaskPassword, filepath.Join(c.StackDir, "nats-task.password")}, {&c.NATSAdminPassword, filepath.Join(c.StackDir, "nats-admin.password")}} {
		if *s.v != "" {
			continue
		}
		if b, err := os.ReadFile(s.path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
			*s.v = strings.TrimSpace(string(b))
			continue
		}
		var r [32]byte
		if _, err := rand.Read(r[:]); err != nil {
			return err
		}
		*s.v = hex.EncodeToString(r[:])
		if err := writeFileAtomic(s.path, []byte(*s.v+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", s.path, err)
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// EnvFileContent renders Env as `export K='V'` lines.
func (c Config) EnvFileContent() string {
	var b strings.Builder
	b.WriteString("# Written by the stack supervisor (emulators/stack). Source it: . .stack/env\n")
	for _, kv := range c.Env() {
		b.WriteString("export " + kv.Key + "=" + shellQuote(kv.Value) + "\n")
	}
	return b.String()
}

func envOr(k, def string) string {
	if v := strings.TrimSpace(os.Getenv(k)); v != "" {
		return v
	}
	return def
}
