package config

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/noetl/gcpengine/shared/egress"
)

// Kind is the type of a knob's value and how its text is parsed.
type Kind string

const (
	// KindString is any text (an Enum or a check may restrict it).
	KindString Kind = "string"
	// KindInt is a base-10 integer.
	KindInt Kind = "int"
	// KindBool is true|false|1|0 (strconv.ParseBool).
	KindBool Kind = "bool"
	// KindFloat is a decimal number.
	KindFloat Kind = "float"
	// KindSeconds is an integer number of seconds (a time.Duration field).
	KindSeconds Kind = "seconds"
	// KindMillis is an integer number of milliseconds (a time.Duration
	// field).
	KindMillis Kind = "milliseconds"
	// KindList is a comma-separated list in the environment and a YAML
	// sequence (or comma-separated string) in the file.
	KindList Kind = "list"
)

// Knob declares one configuration value.
type Knob struct {
	// Path is the YAML path in the NOETL_CONFIG file, dot-separated
	// (e.g. "retries.plugin.max_attempts").
	Path string
	// Env is the environment variable (NOETL_*, or GOOGLE_CLOUD_PROJECT).
	Env string
	// Aliases are older environment variables still read when Env is
	// unset (e.g. NOETL_LOG_LEVEL for NOETL_LOGGING_LEVEL).
	Aliases []string
	Kind    Kind
	// Default is the default as text, parsed like an environment value.
	Default string
	// DefaultDoc describes a derived default (shown instead of Default).
	DefaultDoc string
	// Enum lists the allowed values of a string knob (case-insensitive;
	// the value is stored lower-cased) — empty for free text.
	Enum []string
	// Min and Max bound numeric knobs (ints, floats, seconds,
	// milliseconds in their own unit) when HasMin / HasMax.
	Min, Max       float64
	HasMin, HasMax bool
	// Secret knobs are never echoed in errors or documentation.
	Secret bool
	// Deploy marks knobs that terraform/ must set on every function
	// (terraform/terraform_test.go checks it).
	Deploy bool
	// Doc is one line of documentation.
	Doc string
	// Source is the rule the knob comes from (e.g. "NoETL observability spec §8.12").
	Source string

	field func(*Config) any
	check func(any) error
}

// Knobs returns the registry: every knob, in documentation order.
func Knobs() []Knob { return slices.Clone(registry) }

// ByEnv returns the knob whose environment variable (or alias) is env.
func ByEnv(env string) (Knob, bool) {
	for _, k := range registry {
		if k.Env == env || slices.Contains(k.Aliases, env) {
			return k, true
		}
	}
	return Knob{}, false
}

// ByPath returns the knob at YAML path p.
func ByPath(p string) (Knob, bool) {
	for _, k := range registry {
		if k.Path == p {
			return k, true
		}
	}
	return Knob{}, false
}

// lookupEnv returns the variable that is set (Env first, then aliases).
func (k Knob) lookupEnv(lookup func(string) (string, bool)) (name, raw string, ok bool) {
	for _, n := range append([]string{k.Env}, k.Aliases...) {
		if v, ok := lookup(n); ok && v != "" {
			return n, v, true
		}
	}
	return "", "", false
}

// parse converts text to the knob's Go value.
func (k Knob) parse(raw string) (any, error) {
	s := strings.TrimSpace(raw)
	switch k.Kind {
	case KindString:
		if len(k.Enum) > 0 {
			return strings.ToLower(s), nil
		}
		return s, nil
	case KindInt, KindSeconds, KindMillis:
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", raw)
		}
		switch k.Kind {
		case KindSeconds:
			return time.Duration(n) * time.Second, nil
		case KindMillis:
			return time.Duration(n) * time.Millisecond, nil
		}
		return n, nil
	case KindBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean (true or false)", raw)
		}
		return b, nil
	case KindFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", raw)
		}
		return f, nil
	case KindList:
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("knob %s has unknown kind %q", k.Env, k.Kind)
}

// validate applies the knob's range, enum and check.
func (k Knob) validate(v any) error {
	var num float64
	isNum := true
	switch x := v.(type) {
	case int:
		num = float64(x)
	case float64:
		num = x
	case time.Duration:
		if k.Kind == KindMillis {
			num = float64(x / time.Millisecond)
		} else {
			num = float64(x / time.Second)
		}
	default:
		isNum = false
	}
	if isNum {
		if k.HasMin && num < k.Min {
			return fmt.Errorf("%v is below the minimum %v", num, k.Min)
		}
		if k.HasMax && num > k.Max {
			return fmt.Errorf("%v is above the maximum %v", num, k.Max)
		}
	}
	if s, ok := v.(string); ok && len(k.Enum) > 0 && !slices.Contains(k.Enum, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(k.Enum, ", "))
	}
	if k.check != nil {
		return k.check(v)
	}
	return nil
}

// set stores v (of the knob's Go type) in c.
func (k Knob) set(c *Config, v any) {
	switch p := k.field(c).(type) {
	case *string:
		*p = v.(string)
	case *int:
		*p = v.(int)
	case *bool:
		*p = v.(bool)
	case *float64:
		*p = v.(float64)
	case *time.Duration:
		*p = v.(time.Duration)
	case *[]string:
		*p = v.([]string)
	default:
		panic(fmt.Sprintf("config: knob %s points at %T", k.Env, p))
	}
}

// get returns the knob's current value in c.
func (k Knob) get(c *Config) any {
	switch p := k.field(c).(type) {
	case *string:
		return *p
	case *int:
		return *p
	case *bool:
		return *p
	case *float64:
		return *p
	case *time.Duration:
		return *p
	case *[]string:
		return *p
	}
	return nil
}

func rangeOf(k Knob, lo, hi float64) Knob {
	k.Min, k.Max, k.HasMin, k.HasMax = lo, hi, true, true
	return k
}

func atLeast(k Knob, lo float64) Knob {
	k.Min, k.HasMin = lo, true
	return k
}

var (
	resourceName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$`) // Pub/Sub topic/subscription ids
	queueName    = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)
	routeEdge    = regexp.MustCompile(`^route_edge:[A-Za-z_][A-Za-z0-9_.-]*$`)
)

func nonEmpty(v any) error {
	if strings.TrimSpace(v.(string)) == "" {
		return errors.New("must not be empty")
	}
	return nil
}

func pubsubName(v any) error {
	if !resourceName.MatchString(v.(string)) {
		return fmt.Errorf("%q is not a valid Pub/Sub name (a letter, then 2-254 of letters, digits, - _ . ~ + %%)", v)
	}
	return nil
}

func cloudTasksQueueName(v any) error {
	if !queueName.MatchString(v.(string)) {
		return fmt.Errorf("%q is not a valid Cloud Tasks queue id (1-100 letters, digits, hyphens)", v)
	}
	return nil
}

// checkURL accepts absolute http(s) URLs.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// urlItems checks that every item of a list is an absolute http(s) URL.
func urlItems(v any) error {
	for _, s := range v.([]string) {
		if err := checkURL(s); err != nil {
			return err
		}
	}
	return nil
}

// signingKeys checks NOETL_SIGNING_KEY without echoing it: empty (the
// functions then refuse to start) or comma-separated keys of at least 32
// bytes (shared/sign MinKeyLen).
func signingKeys(v any) error {
	if strings.TrimSpace(v.(string)) == "" {
		return nil
	}
	for i, k := range strings.Split(v.(string), ",") {
		if n := len(strings.TrimSpace(k)); n < 32 {
			return fmt.Errorf("key %d is %d bytes, want at least 32 (e.g. `openssl rand -hex 32`)", i+1, n)
		}
	}
	return nil
}

// egressItems checks every item of a list is an egress rule (host,
// host:port, address, CIDR, with :port).
func egressItems(v any) error {
	for _, s := range v.([]string) {
		if _, err := egress.ParseRule(s); err != nil {
			return err
		}
	}
	return nil
}

// absPaths checks every item of a list is an absolute path.
func absPaths(v any) error {
	for _, s := range v.([]string) {
		if !filepath.IsAbs(s) {
			return fmt.Errorf("%q is not an absolute path", s)
		}
	}
	return nil
}

func optionalURL(v any) error {
	if v.(string) == "" {
		return nil
	}
	return checkURL(v.(string))
}

func optionalEmail(v any) error {
	s := v.(string)
	if s == "" {
		return nil
	}
	if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
		return fmt.Errorf("%q is not a service account email", s)
	}
	return nil
}

func onStepFail(v any) error {
	s := v.(string)
	if s == "halt" || s == "continue" || routeEdge.MatchString(s) {
		return nil
	}
	return fmt.Errorf("%q is not halt, continue or route_edge:<step>", s)
}

// traceExporters checks the items of NOETL_TRACING_EXPORTER.
func traceExporters(v any) error {
	for _, e := range v.([]string) {
		switch strings.ToLower(e) {
		case "otlp", "gcp", "file", "none":
		default:
			return fmt.Errorf("%q is not one of otlp, gcp, file, none", e)
		}
	}
	return nil
}

// otlpEndpoint accepts "" and http(s):// or grpc(s):// URLs with a host.
func otlpEndpoint(v any) error {
	s := v.(string)
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc" && u.Scheme != "grpcs") {
		return fmt.Errorf("%q is not http(s)://host:port[/path] or grpc(s)://host:port", s)
	}
	return nil
}

func metricsPath(v any) error {
	if !strings.HasPrefix(v.(string), "/") {
		return fmt.Errorf("%q must start with /", v)
	}
	return nil
}

func noEmptyItems(v any) error {
	if len(v.([]string)) == 0 {
		return errors.New("must list at least one key")
	}
	return nil
}

const (
	seed812  = "NoETL observability spec §8.12"
	designV2 = "README \"Architecture\""
	issue7   = "README \"Resilience\""
	issue13  = "README \"Security\""
)

// registry is every knob. Keep in documentation order.
var registry = []Knob{
	// Google Cloud resources.
	{Path: "gcp.project", Env: "GOOGLE_CLOUD_PROJECT", Kind: KindString, Default: "noetl-local", Deploy: true, check: nonEmpty,
		Doc: "project of topics, queues, Firestore and the bucket", Source: designV2, field: func(c *Config) any { return &c.Project }},
	{Path: "gcp.location", Env: "NOETL_LOCATION", Kind: KindString, Default: "us-central1", Deploy: true, check: nonEmpty,
		Doc: "region of the Cloud Tasks queues", Source: designV2, field: func(c *Config) any { return &c.Location }},
	{Path: "pubsub.events_topic", Env: "NOETL_EVENTS_TOPIC", Kind: KindString, Default: "events", Deploy: true, check: pubsubName,
		Doc: "topic of the event log", Source: designV2, field: func(c *Config) any { return &c.EventsTopic }},
	{Path: "pubsub.commands_topic", Env: "NOETL_COMMANDS_TOPIC", Kind: KindString, Default: "commands", Deploy: true, check: pubsubName,
		Doc: "topic of bulk fan-out to dispatch", Source: designV2, field: func(c *Config) any { return &c.CommandsTopic }},
	{Path: "pubsub.replay_subscription", Env: "NOETL_REPLAY_SUBSCRIPTION", Kind: KindString, Default: "events-replay", Deploy: true, check: pubsubName,
		Doc: "pull subscription of the events topic that keeps acknowledged messages and that nothing consumes: `noetl rebuild` seeks it to rebuild an execution's event read model", Source: "README \"Repair\"", field: func(c *Config) any { return &c.ReplaySubscription }},
	rangeOf(Knob{Path: "executions.retention_days", Env: "NOETL_RETENTION_DAYS", Kind: KindInt, Default: "30", Deploy: true,
		Doc: "days an ended execution's record, event read model and results are kept (the `expire_at` of its documents; `noetl gc` deletes its results after as long); Terraform's `retention_days`", Source: "README \"Repair\"", field: func(c *Config) any { return &c.RetentionDays }}, 1, 3650),
	rangeOf(Knob{Path: "pubsub.max_delivery_attempts", Env: "NOETL_PUSH_MAX_DELIVERY_ATTEMPTS", Kind: KindInt, Default: "10", Deploy: true,
		Doc: "deliveries of a push message before its dead-letter topic (the subscriptions' dead-letter policy); the last one is filed in the DLQ", Source: "README \"Resilience\"", field: func(c *Config) any { return &c.PushMaxDeliveryAttempts }}, 5, 100),
	{Path: "tasks.work_queue", Env: "NOETL_WORK_QUEUE", Kind: KindString, Default: "work", Deploy: true, check: cloudTasksQueueName,
		Doc: "queue of immediate units", Source: designV2, field: func(c *Config) any { return &c.WorkQueue }},
	{Path: "tasks.timers_queue", Env: "NOETL_TIMERS_QUEUE", Kind: KindString, Default: "timers", Deploy: true, check: cloudTasksQueueName,
		Doc: "queue of delayed units (retries, lease reclaim, timeouts)", Source: designV2, field: func(c *Config) any { return &c.TimersQueue }},
	rangeOf(Knob{Path: "tasks.max_attempts", Env: "NOETL_TASKS_MAX_ATTEMPTS", Kind: KindInt, Default: "30", Deploy: true,
		Doc: "attempts of a Cloud Task (the queues' retry config); execute files the last one in the DLQ (X-CloudTasks-TaskRetryCount)", Source: "README \"Resilience\"", field: func(c *Config) any { return &c.TasksMaxAttempts }}, 1, 1000),
	rangeOf(Knob{Path: "tasks.max_backoff_s", Env: "NOETL_TASKS_MAX_BACKOFF_S", Kind: KindSeconds, Default: "60", Deploy: true,
		Doc: "largest backoff between two attempts of a Cloud Task (the queues' retry config): a failed delivery's guard files its unit in the DLQ when no later attempt reached execute after that long per remaining attempt", Source: "README \"The soak\"", field: func(c *Config) any { return &c.TasksMaxBackoff }}, 1, 3600),
	{Path: "tasks.functions_url", Env: "NOETL_FUNCTIONS_URL", Kind: KindString, Default: "http://127.0.0.1:8680", check: optionalURL,
		Doc: "base URL of the local functions host", Source: designV2, field: func(c *Config) any { return &c.FunctionsURL }},
	{Path: "tasks.execute_url", Env: "NOETL_EXECUTE_URL", Kind: KindString, DefaultDoc: "`$NOETL_FUNCTIONS_URL/execute`", Deploy: true, check: optionalURL,
		Doc: "Cloud Task target (the execute function's URL)", Source: designV2, field: func(c *Config) any { return &c.ExecuteURL }},
	{Path: "tasks.execute_audience", Env: "NOETL_EXECUTE_AUDIENCE", Kind: KindString, DefaultDoc: "`$NOETL_EXECUTE_URL`", Deploy: true,
		Doc: "audience of the OIDC token of Cloud Tasks calls to execute", Source: "README \"Security\"", field: func(c *Config) any { return &c.ExecuteAudience }},
	{Path: "tasks.service_account", Env: "NOETL_TASKS_SERVICE_ACCOUNT", Kind: KindString, Default: "", Deploy: true, check: optionalEmail,
		Doc: "service account email of the OIDC token Cloud Tasks attaches (empty: no token)", Source: "README \"Security\"", field: func(c *Config) any { return &c.TasksServiceAccount }},
	{Path: "tasks.oidc_jwks_file", Env: "NOETL_OIDC_JWKS_FILE", Kind: KindString, Default: "",
		Doc: "JSON Web Key Set verifying the OIDC tokens of Cloud Tasks calls instead of Google's certificates (the local stack's emulator key; empty in GCP)", Source: "README \"Security\"", field: func(c *Config) any { return &c.OIDCJWKSFile }},
	{Path: "subscriptions.subscribe_url", Env: "NOETL_SUBSCRIBE_URL", Kind: KindString, DefaultDoc: "`$NOETL_FUNCTIONS_URL/subscribe`", Deploy: true, check: optionalURL,
		Doc: "the subscribe function's URL: a registered subscription's Pub/Sub subscription pushes to `<url>/push/<name>`", Source: "README \"Running NoETL v2 playbooks\"", field: func(c *Config) any { return &c.SubscribeURL }},
	{Path: "subscriptions.push_service_account", Env: "NOETL_PUSH_SERVICE_ACCOUNT", Kind: KindString, Default: "", Deploy: true, check: optionalEmail,
		Doc: "service account email of the OIDC token Pub/Sub attaches to pushes to the subscribe function (empty: no token)", Source: "README \"Running NoETL v2 playbooks\"", field: func(c *Config) any { return &c.PushServiceAccount }},
	{Path: "results.bucket", Env: "NOETL_RESULTS_BUCKET", Kind: KindString, Default: "noetl-results", Deploy: true, check: nonEmpty,
		Doc: "GCS bucket of large results", Source: "NoETL result storage RFC", field: func(c *Config) any { return &c.ResultsBucket }},
	rangeOf(Knob{Path: "results.inline_max", Env: "NOETL_RESULT_INLINE_MAX", Kind: KindInt, Default: "65536",
		Doc: "largest result (JSON bytes) kept inline; larger ones go to the bucket", Source: "NoETL result storage RFC", field: func(c *Config) any { return &c.ResultInlineMax }}, 0, 900000),
	{Path: "results.tenant", Env: "NOETL_TENANT", Kind: KindString, Default: "",
		Doc: "tenant of result URIs and object keys (empty: `default`)", Source: "NoETL result storage RFC §4", field: func(c *Config) any { return &c.Tenant }},
	{Path: "results.project", Env: "NOETL_TENANT_PROJECT", Kind: KindString, Default: "",
		Doc: "project of result URIs and object keys (empty: `default`)", Source: "NoETL result storage RFC §4", field: func(c *Config) any { return &c.TenantProject }},
	{Path: "results.env", Env: "NOETL_RESULT_ENV", Kind: KindString, Default: "",
		Doc: "the `env=` segment of result object keys, e.g. `prod` (empty: `default`)", Source: "NoETL result storage RFC §4", field: func(c *Config) any { return &c.ResultEnv }},
	{Path: "results.cells_file", Env: "NOETL_RESULT_CELLS_FILE", Kind: KindString, Default: "",
		Doc: "the deployment's cell map, a YAML file of cells (name, bucket, region) and placement epochs; references written under one placement resolve after the map moves a shard (empty: one cell, the results bucket; `GET /cells` shows it)", Source: "NoETL result storage RFC §4", field: func(c *Config) any { return &c.ResultCellsFile }},
	rangeOf(Knob{Path: "results.cache_mb", Env: "NOETL_RESULT_CACHE_MB", Kind: KindInt, Default: "64",
		Doc: "MiB of loaded results an instance keeps (an LRU bounded in bytes; 0: no cache)", Source: "NoETL result storage RFC \"Caches and stores\"", field: func(c *Config) any { return &c.ResultCacheMB }}, 0, 8192),
	{Path: "results.read_check", Env: "NOETL_RESULT_READ_CHECK", Kind: KindString, Default: "crc32c", Enum: []string{"crc32c", "sha256"}, // results.ReadChecks (runtime TestResultStoreFromConfig; effect: TestReadCheckKnobTakesEffect)
		Doc: "the digest of its reference a read of a stored result checks: `crc32c` (Cloud Storage's own checksum, in hardware; reads open exactly the object generation the reference records, so only a storage, transfer or truncation fault can change the bytes read, and the CRC detects those) or `sha256` (cryptographic, about 3× slower on large tables on a 2-core machine, scripts/bench results); reads of a repaired object check the sha256 either way; a mismatch fails the step with `result_lost`", Source: "NoETL result storage RFC \"repair\"", field: func(c *Config) any { return &c.ResultReadCheck }},
	rangeOf(Knob{Path: "results.materialize_max_mb", Env: "NOETL_RESULT_MATERIALIZE_MAX_MB", Kind: KindInt, Default: "256",
		Doc: "largest stored result (MiB) a template, python code or a loop plan may load whole; larger ones are streamed (loop.in, transfer, artifact) or fail with `result_too_large`", Source: "NoETL result storage RFC §5", field: func(c *Config) any { return &c.ResultMaterializeMaxMB }}, 1, 4096),
	rangeOf(Knob{Path: "results.max_object_mb", Env: "NOETL_RESULT_MAX_OBJECT_MB", Kind: KindInt, Default: "4096",
		Doc: "largest object (MiB) one task attempt stores in the result tier: the runner's write grants sign it as a length range (`x-goog-content-length-range`, which Cloud Storage and the stack's gateway enforce), the runner stops a table or a barriered postgres result at it; over it the task fails with error kind `limit` naming this setting (the local stack sets 64)", Source: issue13, field: func(c *Config) any { return &c.ResultMaxObjectMB }}, 1, 1<<20),
	rangeOf(Knob{Path: "tasks.error_max_bytes", Env: "NOETL_TASK_ERROR_MAX_BYTES", Kind: KindInt, Default: "8192",
		Doc: "size (bytes) of a task's error message as the engine keeps it (attempt record, events, state, logs): a longer one is cut with a note `… [truncated by the engine: N bytes in all; the full text is stored as noetl://…]`, its full text (up to 16 MiB) stored in the result tier", Source: issue13, field: func(c *Config) any { return &c.TaskErrorMaxBytes }}, 1024, 1<<20),
	{Path: "catalog.repo_root", Env: "NOETL_REPO_ROOT", Kind: KindString, Default: ".", Deploy: true, check: nonEmpty,
		Doc: "base of relative playbook paths in `POST /executions`", Source: designV2, field: func(c *Config) any { return &c.RepoRoot }},

	// Engine.
	rangeOf(Knob{Path: "engine.lease_ttl_s", Env: "NOETL_LEASE_TTL_S", Kind: KindSeconds, Default: "30", Deploy: true,
		Doc: "lease of one unit of work, renewed by the heartbeat", Source: issue7, field: func(c *Config) any { return &c.LeaseTTL }}, 5, 1800),
	rangeOf(Knob{Path: "engine.heartbeat_interval_s", Env: "NOETL_HEARTBEAT_INTERVAL_S", Kind: KindSeconds, Default: "10", Deploy: true,
		Doc: "how often a running unit renews its lease (shorter than the lease)", Source: "NoETL observability spec §8.5", field: func(c *Config) any { return &c.HeartbeatInterval }}, 1, 600),
	rangeOf(Knob{Path: "engine.dispatch_deadline_s", Env: "NOETL_DISPATCH_DEADLINE_S", Kind: KindSeconds, Default: "600", Deploy: true,
		Doc: "Cloud Tasks dispatch deadline of a unit; longer work hands off to a new unit", Source: issue7, field: func(c *Config) any { return &c.DispatchDeadline }}, 15, 1800),
	rangeOf(Knob{Path: "engine.continue_units", Env: "NOETL_CONTINUE_UNITS", Kind: KindInt, Default: "16",
		Doc: "step continuation: how many next units one execute invocation may run after its own, right after its commit, when a step's end releases exactly one unit (the invocation's own Cloud Task is the safety net of the run; a unit it gives up gets a net delayed by the lease); 0 disables it", Source: designV2, field: func(c *Config) any { return &c.ContinueUnits }}, 0, 10000),
	rangeOf(Knob{Path: "engine.continue_budget_s", Env: "NOETL_CONTINUE_BUDGET_S", Kind: KindSeconds, Default: "60",
		Doc: "step continuation and batched fan-out: wall time after which an execute invocation starts no more continued units and no more inline iterations of its loop batch (the next one becomes a Cloud Task of its own; shorter than `NOETL_DISPATCH_DEADLINE_S`), so one execution cannot hold an instance", Source: designV2, field: func(c *Config) any { return &c.ContinueBudget }}, 1, 1800),
	rangeOf(Knob{Path: "engine.continue_defer", Env: "NOETL_CONTINUE_DEFER", Kind: KindInt, Default: "16",
		Doc: "deferred step ends: inside a chain (step continuation), how many ends of units run without a lease (read-only steps: running one twice is harmless) one commit may carry; such an end whose next unit is read-only too is applied in memory and committed with a later end, in one write of the execution document (a crash runs those read-only units again from the last commit); 0: every end commits on its own", Source: designV2, field: func(c *Config) any { return &c.ContinueDefer }}, 0, 1000),
	rangeOf(Knob{Path: "engine.execution_deadline_s", Env: "NOETL_EXECUTION_DEADLINE_S", Kind: KindSeconds, Default: "0",
		Doc: "execution deadline when the playbook sets no `executor.spec.timeout_s` (0: none)", Source: issue7, field: func(c *Config) any { return &c.ExecutionDeadline }}, 0, 30*24*3600),
	rangeOf(Knob{Path: "engine.default_max_in_flight", Env: "NOETL_DEFAULT_MAX_IN_FLIGHT", Kind: KindInt, Default: "10",
		Doc: "parallel loop `max_in_flight` when unset", Source: designV2, field: func(c *Config) any { return &c.DefaultMaxInFlight }}, 1, 10000),
	{Path: "tools.python", Env: "NOETL_PYTHON", Kind: KindString, Default: "",
		Doc: "interpreter of python tasks (empty: `/usr/bin/python3` when it exists — it sees Debian's python3-psycopg2 and python3-psycopg — else `python3` on PATH)", Source: designV2, field: func(c *Config) any { return &c.PythonBin }},
	rangeOf(Knob{Path: "tools.python_warm_interpreters", Env: "NOETL_PYTHON_WARM_INTERPRETERS", Kind: KindInt, Default: "2",
		Doc: "python interpreters the runner keeps started ahead of demand, each in a room of its own (uid, control group, root, network, seccomp filter, workspace) with the runner's modules imported, waiting on a pipe for one task's code and inputs and never reused: it is destroyed after its task and replaced in the background (0: every task starts its own interpreter)", Source: issue13, field: func(c *Config) any { return &c.PythonWarm }}, 0, 64),
	{Path: "tools.python_zygote", Env: "NOETL_PYTHON_ZYGOTE", Kind: KindBool, Default: "true",
		Doc: "fork the warm python interpreters from one interpreter started once with the runner's modules imported (a zygote, root only; it never runs a task): each child builds its own room (uid, control group, namespaces, root, network, limits, seccomp filter) before its task's code arrives, which makes replacing a used interpreter about 4.5 ms of CPU instead of about 35; its children share the zygote's memory layout, and a new zygote replaces it every 256 children (false: exec each interpreter through the sandbox's helper)", Source: issue13, field: func(c *Config) any { return &c.PythonZygote }},
	{Path: "tools.pg_dsn", Env: "NOETL_PG_DSN", Kind: KindString, Default: "", Secret: true,
		Doc: "PostgreSQL connection of postgres tasks that name none", Source: designV2, field: func(c *Config) any { return &c.PGDSN }},
	{Path: "tools.http_allow_link_local", Env: "NOETL_HTTP_ALLOW_LINK_LOCAL", Kind: KindBool, Default: "false",
		Doc: "let http tasks call link-local addresses (169.254.0.0/16, fe80::/10: the metadata server), in the control plane and the runner; `NOETL_EGRESS_ALLOW` is the general knob", Source: "README \"Security\"", field: func(c *Config) any { return &c.HTTPAllowLinkLocal }},
	{Path: "tools.secrets_env_allow", Env: "NOETL_SECRETS_ENV_ALLOW", Kind: KindList, Default: "",
		Doc: "environment variables of the functions that the secrets kind's `env` provider may read: names, or prefixes ending in `*` (empty: `NOETL_SECRET_*`); anything else is refused (error kind `config`)", Source: "docs \"Tools\"", field: func(c *Config) any { return &c.SecretsEnvAllow }},
	atLeast(Knob{Path: "sandbox.cpu_s", Env: "NOETL_SANDBOX_CPU_S", Kind: KindInt, Default: "300",
		Doc: "CPU seconds of a sandboxed (python, shell, duckdb) task process (RLIMIT_CPU; 0: unlimited); a task over it fails with error kind `limit` (cpu)", Source: issue13, field: func(c *Config) any { return &c.Sandbox.CPUSeconds }}, 0),
	atLeast(Knob{Path: "sandbox.memory_mb", Env: "NOETL_SANDBOX_MEMORY_MB", Kind: KindInt, Default: "1024",
		Doc: "memory (MiB) of a sandboxed task's processes together: its control group's limit (swap included), a task over it is killed and fails with error kind `limit` (memory); without control groups, each process's address space is limited to 4× it (0: unlimited)", Source: issue13, field: func(c *Config) any { return &c.Sandbox.MemoryMB }}, 0),
	atLeast(Knob{Path: "sandbox.open_files", Env: "NOETL_SANDBOX_OPEN_FILES", Kind: KindInt, Default: "256",
		Doc: "open files of a sandboxed task process (RLIMIT_NOFILE; 0: unlimited)", Source: "README \"Security\"", field: func(c *Config) any { return &c.Sandbox.OpenFiles }}, 0),
	atLeast(Knob{Path: "sandbox.processes", Env: "NOETL_SANDBOX_PROCESSES", Kind: KindInt, Default: "64",
		Doc: "processes of a sandboxed task at once (its control group's pids.max, and RLIMIT_NPROC of its dedicated uid; 0: unlimited); a task whose fork fails at it fails with error kind `limit` (processes)", Source: issue13, field: func(c *Config) any { return &c.Sandbox.Processes }}, 0),
	atLeast(Knob{Path: "sandbox.disk_mb", Env: "NOETL_SANDBOX_DISK_MB", Kind: KindInt, Default: "512",
		Doc: "size (MiB) of a runner task's private workspace (a tmpfs: its working directory and /tmp, DuckDB's spill files) and largest file it may write; a task that fills it fails with error kind `limit` (disk)", Source: issue13, field: func(c *Config) any { return &c.Sandbox.DiskMB }}, 1),
	rangeOf(Knob{Path: "sandbox.cpus", Env: "NOETL_SANDBOX_CPUS", Kind: KindFloat, Default: "1",
		Doc: "CPU share of a sandboxed task (its control group's CPU quota, in CPUs; 0: none): a CPU hog is throttled, tasks beside it keep their share", Source: issue13, field: func(c *Config) any { return &c.Sandbox.CPUs }}, 0, 256),
	{Path: "sandbox.cgroup", Env: "NOETL_SANDBOX_CGROUP", Kind: KindString, Default: "",
		Doc: "parent control group of the runner's task groups: a cgroup v2 directory, or comma-separated v1 controller directories (memory, pids, cpu) (empty: the runner's own groups; none usable: rlimits only)", Source: issue13, field: func(c *Config) any { return &c.Sandbox.Cgroup }},
	rangeOf(Knob{Path: "sandbox.base_uid", Env: "NOETL_SANDBOX_BASE_UID", Kind: KindInt, Default: "1879048192",
		Doc: "first uid of the pool of dedicated task uids (when the sandbox runs as root, of its user namespace: the runner uses 1000); the range must belong to no one else", Source: "README \"Security\"", field: func(c *Config) any { return &c.Sandbox.BaseUID }}, 1, 1<<31),
	rangeOf(Knob{Path: "sandbox.pool_size", Env: "NOETL_SANDBOX_POOL_SIZE", Kind: KindInt, Default: "1024",
		Doc: "dedicated task uids (tasks that run at once as root beyond it wait)", Source: "README \"Security\"", field: func(c *Config) any { return &c.Sandbox.PoolSize }}, 1, 1<<20),
	rangeOf(Knob{Path: "sandbox.warm_max_age_s", Env: "NOETL_SANDBOX_WARM_MAX_AGE_S", Kind: KindInt, Default: "600",
		Doc: "seconds a warm sandbox (a python interpreter, `NOETL_PYTHON_WARM_INTERPRETERS`; a duckdb worker, `NOETL_DUCKDB_WARM_WORKERS`) waits for its task before it is destroyed and replaced (its network's allowed hosts were resolved when it started); one that died while waiting is replaced too. A warm sandbox serves one task whatever its age", Source: issue13, field: func(c *Config) any { return &c.Sandbox.WarmMaxAgeS }}, 1, 86400),
	{Path: "sandbox.no_namespace", Env: "NOETL_SANDBOX_NO_NAMESPACE", Kind: KindBool, Default: "false",
		Doc: "run sandboxed commands without a PID namespace (debugging only: descendants may then outlive a task)", Source: "README \"Security\"", field: func(c *Config) any { return &c.Sandbox.NoNamespace }},
	{Path: "runner.data_roots", Env: "NOETL_RUNNER_DATA_ROOTS", Kind: KindList, Default: "", check: absPaths,
		Doc: "absolute host directories runner tasks may read and write besides their workspace: DuckDB's allowed directories (and where `database:` files may live), bound read-write into python and shell tasks", Source: issue13, field: func(c *Config) any { return &c.Sandbox.DataRoots }},
	{Path: "runner.url", Env: "NOETL_RUNNER_URL", Kind: KindString, Default: "", Deploy: true, check: optionalURL,
		Doc: "base URL of the runner, the process that runs python, shell, duckdb, postgres, transfer, gcs, nats and subscription tasks (empty: those kinds fail with a config error; user code never runs in the control plane)", Source: issue13, field: func(c *Config) any { return &c.Runner.URL }},
	{Path: "runner.audience", Env: "NOETL_RUNNER_AUDIENCE", Kind: KindString, DefaultDoc: "`$NOETL_RUNNER_URL`", Deploy: true,
		Doc: "audience of the ID tokens execute sends to the runner and the runner accepts (the runner's URL)", Source: issue13, field: func(c *Config) any { return &c.Runner.Audience }},
	{Path: "runner.invoker", Env: "NOETL_RUNNER_INVOKER", Kind: KindString, DefaultDoc: "`noetl-execute@$GOOGLE_CLOUD_PROJECT.iam.gserviceaccount.com`", Deploy: true, check: optionalEmail,
		Doc: "service account whose ID tokens the runner accepts (execute's; the local stack's execute mints its tokens for it)", Source: issue13, field: func(c *Config) any { return &c.Runner.Invoker }},
	{Path: "runner.token_key_file", Env: "NOETL_RUNNER_TOKEN_KEY_FILE", Kind: KindString, Default: "",
		Doc: "PEM RSA key execute signs its runner tokens with (the local stack; empty: Google ID tokens from the metadata server)", Source: issue13, field: func(c *Config) any { return &c.Runner.TokenKeyFile }},
	{Path: "runner.jwks_file", Env: "NOETL_RUNNER_JWKS_FILE", Kind: KindString, Default: "",
		Doc: "JWK set the runner verifies execute's tokens with (the local stack; empty: Google's certificates)", Source: issue13, field: func(c *Config) any { return &c.Runner.JWKSFile }},
	{Path: "runner.results_key_file", Env: "NOETL_RESULTS_SIGNING_KEY_FILE", Kind: KindString, Default: "",
		Doc: "PEM RSA key execute signs the runner's result grants (V4 signed URLs of the objects a task may read and write) with (the local stack; empty: execute's service account signs through the IAM Credentials API, which needs `roles/iam.serviceAccountTokenCreator` on itself)", Source: "README \"Stored results and the runner\"", field: func(c *Config) any { return &c.Runner.ResultsKeyFile }},
	{Path: "runner.results_endpoint", Env: "NOETL_RESULTS_SIGNED_ENDPOINT", Kind: KindString, Default: "", check: optionalURL,
		Doc: "base URL of the object store the runner's signed URLs name (empty: `https://storage.googleapis.com`; the local stack: its signed-URL gateway)", Source: "README \"Stored results and the runner\"", field: func(c *Config) any { return &c.Runner.ResultsEndpoint }},
	rangeOf(Knob{Path: "runner.results_grant_extra_s", Env: "NOETL_RESULTS_GRANT_EXTRA_S", Kind: KindSeconds, Default: "900",
		Doc: "how long a result grant outlives its attempt's timeout (seconds)", Source: "README \"Stored results and the runner\"", field: func(c *Config) any { return &c.Runner.ResultsGrantExtra }}, 60, 86400),
	rangeOf(Knob{Path: "runner.task_connections", Env: "NOETL_RUNNER_TASK_CONNECTIONS", Kind: KindInt, Default: "16",
		Doc: "connections one python or shell task holds open at once through its forwarders and proxy tunnels (0: unbounded); beyond it a connection is refused (PostgreSQL clients get an error naming this setting, SQLSTATE 53300)", Source: issue13, field: func(c *Config) any { return &c.Runner.TaskConnections }}, 0, 100000),
	rangeOf(Knob{Path: "runner.execution_connections", Env: "NOETL_RUNNER_EXECUTION_CONNECTIONS", Kind: KindInt, Default: "32",
		Doc: "connections the tasks of one execution hold open at once through one runner instance (0: unbounded); beyond it a connection is refused naming this setting", Source: issue13, field: func(c *Config) any { return &c.Runner.ExecutionConnections }}, 0, 100000),
	{Path: "runner.work_dir", Env: "NOETL_RUNNER_WORK_DIR", Kind: KindString, DefaultDoc: "`$TMPDIR/noetl-runner`",
		Doc: "directory of the runner's per-task working directories (private to the runner's uid)", Source: issue13, field: func(c *Config) any { return &c.Runner.WorkDir }},
	{Path: "egress.profile", Env: "NOETL_EGRESS_PROFILE", Kind: KindString, Default: "cloud", Enum: []string{"cloud", "local"},
		Doc: "network policy of user code: `cloud` also refuses private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) unless allowed; `local` allows them. Loopback, link-local, the metadata server, unspecified and multicast addresses (and their IPv4-mapped, NAT64 and 6to4 forms) are refused in both unless allowed", Source: issue13, field: func(c *Config) any { return &c.Egress.Profile }},
	{Path: "egress.allow", Env: "NOETL_EGRESS_ALLOW", Kind: KindList, Default: "", check: egressItems,
		Doc: "destinations user code may reach despite the policy: `host`, `host:port`, `CIDR` or `CIDR:port` (`[v6]:port`); the local stack lists its PostgreSQL, NATS, data GCS, data Pub/Sub, fixture API and results gateway, then the developer's own destinations (`scripts/up --allow HOST:PORT`, or this variable in scripts/up's environment)", Source: issue13, field: func(c *Config) any { return &c.Egress.Allow }},
	{Path: "egress.deny", Env: "NOETL_EGRESS_DENY", Kind: KindList, Default: "", check: egressItems,
		Doc: "destinations refused whatever `NOETL_EGRESS_ALLOW` says (the engine's own endpoints: the local stack lists its functions host, its Firestore, Pub/Sub, GCS and Cloud Tasks emulators and the runner); a rule on a loopback address also refuses its port on every other loopback and the unspecified address", Source: issue13, field: func(c *Config) any { return &c.Egress.Deny }},
	atLeast(Knob{Path: "duckdb.memory_mb", Env: "NOETL_DUCKDB_MEMORY_MB", Kind: KindInt, Default: "1024",
		Doc: "DuckDB `memory_limit` of one duckdb task (MiB): where DuckDB starts to spill. In the runner a duckdb task runs in a worker process whose control group holds its memory (`NOETL_SANDBOX_MEMORY_MB`, kind `limit` beyond it), and this is capped at three quarters of that", Source: issue13, field: func(c *Config) any { return &c.DuckDB.MemoryMB }}, 16),
	rangeOf(Knob{Path: "duckdb.threads", Env: "NOETL_DUCKDB_THREADS", Kind: KindInt, Default: "2",
		Doc: "DuckDB `threads` of one duckdb task", Source: issue13, field: func(c *Config) any { return &c.DuckDB.Threads }}, 1, 256),
	atLeast(Knob{Path: "duckdb.max_temp_mb", Env: "NOETL_DUCKDB_MAX_TEMP_MB", Kind: KindInt, Default: "1024",
		Doc: "DuckDB `max_temp_directory_size` of one duckdb task (MiB; its spill directory is inside the task's own)", Source: issue13, field: func(c *Config) any { return &c.DuckDB.MaxTempMB }}, 0),
	rangeOf(Knob{Path: "duckdb.warm_workers", Env: "NOETL_DUCKDB_WARM_WORKERS", Kind: KindInt, Default: "1",
		Doc: "duckdb workers the runner keeps started ahead of demand, each in a room of its own (uid, control group, root, seccomp filter, workspace) waiting for one task and never reused, with a fresh in-memory database already open and configured for that task: a duckdb task that finds one pays neither the room's set-up nor opening its database; each idle one holds about 65 MiB resident, about 7 MiB of it its own (the rest the binary's pages, shared) (0: every task starts its own)", Source: issue13, field: func(c *Config) any { return &c.DuckDB.WarmWorkers }}, 0, 64),
	{Path: "api.roles_file", Env: "NOETL_API_ROLES_FILE", Kind: KindString, Default: "",
		Doc: "file mapping api principals to roles (`role: [principal, ...]`; empty and no `NOETL_API_ROLES`: in the local profile every authenticated caller is admin, in the cloud profile the api and emit refuse to serve)", Source: "README \"Security\", README \"Security\"", field: func(c *Config) any { return &c.API.RolesFile }},
	{Path: "api.roles", Env: "NOETL_API_ROLES", Kind: KindString, Default: "",
		Doc: "the roles file's YAML given inline (Terraform sets it from `api_roles`); exclusive with `NOETL_API_ROLES_FILE`", Source: "README \"Security\"", field: func(c *Config) any { return &c.API.Roles }},
	{Path: "api.token", Env: "NOETL_API_TOKEN", Kind: KindString, Default: "", Secret: true,
		Doc: "static bearer token the api accepts (empty: none)", Source: "README \"Security\"", field: func(c *Config) any { return &c.API.Token }},
	{Path: "api.audiences", Env: "NOETL_API_AUDIENCES", Kind: KindList, Default: "", Deploy: true, check: urlItems,
		Doc: "audiences of the Google identity tokens the api and emit accept (their URLs; empty: identity tokens are refused)", Source: "README \"Security\"", field: func(c *Config) any { return &c.API.Audiences }},
	{Path: "security.profile", Env: "NOETL_PROFILE", Kind: KindString, Enum: []string{"local", "cloud"}, Deploy: true,
		DefaultDoc: "`cloud` when `K_SERVICE` is set (Cloud Run and Cloud Functions gen2 set it), else `local`",
		Doc:        "where the functions run: `cloud` makes the api and emit refuse to serve without roles and keeps credential values in Secret Manager", Source: "README \"Security\"", field: func(c *Config) any { return &c.Profile }},
	{Path: "security.credential_values", Env: "NOETL_CREDENTIAL_VALUES", Kind: KindString, Enum: []string{"secretmanager", "firestore"},
		DefaultDoc: "`secretmanager` in the cloud profile, else `firestore`",
		Doc:        "where credential values live: one Secret Manager secret `noetl-cred-<name>` each, or sealed (AES-256-GCM under the signing key) in Firestore `credential_values`; metadata and grants are in Firestore `credentials` either way", Source: "README \"Security\"", field: func(c *Config) any { return &c.CredentialValues }},
	{Path: "security.signing_key", Env: "NOETL_SIGNING_KEY", Kind: KindString, Default: "", Secret: true, check: signingKeys,
		Doc: "HMAC-SHA256 keys (comma-separated, each ≥ 32 bytes; the first signs) of every event batch and unit the functions produce; route, materialize, dispatch and execute refuse unsigned or forged ones; required by every function (Secret Manager in GCP, generated by the local stack)", Source: "README \"Security\"", field: func(c *Config) any { return &c.SigningKey }},

	// Seed 000 §8.12.
	rangeOf(Knob{Path: "orchestrator.evaluate_when_timeout_ms", Env: "NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS", Kind: KindMillis, Default: "100",
		Doc: "wall-clock budget of one `when` the engine evaluates (an arc's, an admission rule's, a task policy rule's); a `when` over it is an evaluation error (`NOETL_POLICIES_ON_WHEN_ERROR` for an arc; a policy rule's fails its task)", Source: seed812, field: func(c *Config) any { return &c.Orchestrator.EvaluateWhenTimeout }}, 1, 60000),
	rangeOf(Knob{Path: "retries.plugin.max_attempts", Env: "NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS", Kind: KindInt, Default: "6",
		Doc: "attempts of a task without a retry policy whose error is retryable by classification (HTTP 408, 429, 5xx, network errors, timeouts, PostgreSQL 40001, 40P01, 08xxx); other errors fail at once. A playbook's own `spec.policy` wins (`rules: [{else: {then: {do: fail}}}]` fails at once)", Source: seed812, field: func(c *Config) any { return &c.Retries.Plugin.MaxAttempts }}, 1, 100),
	rangeOf(Knob{Path: "retries.plugin.base_ms", Env: "NOETL_RETRIES_PLUGIN_BASE_MS", Kind: KindMillis, Default: "200",
		Doc: "first backoff of those retries: attempt n+1 waits a full-jitter draw from [0, min(max, base·2^(n-1))), deterministic from the unit's idempotency key and the attempt", Source: seed812, field: func(c *Config) any { return &c.Retries.Plugin.Base }}, 1, 3600000),
	rangeOf(Knob{Path: "retries.plugin.max_ms", Env: "NOETL_RETRIES_PLUGIN_MAX_MS", Kind: KindMillis, Default: "30000",
		Doc: "cap of those backoffs", Source: seed812, field: func(c *Config) any { return &c.Retries.Plugin.Max }}, 1, 3600000),
	rangeOf(Knob{Path: "retries.sink.max_attempts", Env: "NOETL_RETRIES_SINK_MAX_ATTEMPTS", Kind: KindInt, Default: "8",
		Doc: "attempts of a sink (a side-effecting postgres, duckdb, gcs or transfer task) without a retry policy whose error is retryable (under `NOETL_POLICIES_ON_SINK_FAIL=retry`)", Source: seed812, field: func(c *Config) any { return &c.Retries.Sink.MaxAttempts }}, 1, 100),
	rangeOf(Knob{Path: "retries.sink.base_ms", Env: "NOETL_RETRIES_SINK_BASE_MS", Kind: KindMillis, Default: "200",
		Doc: "first backoff of sink retries (full jitter, as `NOETL_RETRIES_PLUGIN_BASE_MS`)", Source: seed812, field: func(c *Config) any { return &c.Retries.Sink.Base }}, 1, 3600000),
	rangeOf(Knob{Path: "retries.sink.max_ms", Env: "NOETL_RETRIES_SINK_MAX_MS", Kind: KindMillis, Default: "60000",
		Doc: "largest backoff of sink retries", Source: seed812, field: func(c *Config) any { return &c.Retries.Sink.Max }}, 1, 3600000),
	rangeOf(Knob{Path: "timeouts.tool_default_ms", Env: "NOETL_TIMEOUTS_TOOL_DEFAULT_MS", Kind: KindMillis, Default: "30000",
		Doc: "tool timeout when the task sets none (`timeout_ms`)", Source: seed812, field: func(c *Config) any { return &c.Timeouts.ToolDefault }}, 1, 86400000),
	rangeOf(Knob{Path: "timeouts.sink_default_ms", Env: "NOETL_TIMEOUTS_SINK_DEFAULT_MS", Kind: KindMillis, Default: "30000",
		Doc: "timeout of a sink (a side-effecting postgres, duckdb, gcs or transfer task) that sets none", Source: seed812, field: func(c *Config) any { return &c.Timeouts.SinkDefault }}, 1, 86400000),
	rangeOf(Knob{Path: "timeouts.loop_item_ms", Env: "NOETL_TIMEOUTS_LOOP_ITEM_MS", Kind: KindMillis, Default: "0",
		Doc: "budget of one loop iteration when its loop sets no `loop.spec.item_timeout_s` (0: none; NoETL observability spec suggests 30000, but an iteration's delayed retries count against it)", Source: seed812, field: func(c *Config) any { return &c.Timeouts.LoopItem }}, 0, 86400000),
	rangeOf(Knob{Path: "timeouts.loop_total_ms", Env: "NOETL_TIMEOUTS_LOOP_TOTAL_MS", Kind: KindMillis, Default: "0",
		Doc: "budget of a whole loop step run when its loop sets no `loop.spec.timeout_s` (0: none); over it the step fails with kind `timeout`", Source: issue7, field: func(c *Config) any { return &c.Timeouts.LoopTotal }}, 0, 30*86400000),
	{Path: "dlq.enabled", Env: "NOETL_DLQ_ENABLED", Kind: KindBool, Default: "true",
		Doc: "file exhausted and fatal task failures in the DLQ (`dlq` collection) with the seed's fields; false: such a task fails its step without an entry. Units whose deliveries are exhausted and poison messages are always filed (nothing else keeps them)", Source: seed812, field: func(c *Config) any { return &c.DLQ.Enabled }},
	{Path: "dlq.hold", Env: "NOETL_DLQ_HOLD", Kind: KindBool, Default: "false",
		Doc: "a task failure filed in the DLQ holds its step run (or iteration) parked until an operator replays it (`noetl dlq replay ID [--patch spec.url=…]`: from the failed task, as a fresh attempt) or discards it (the step then fails with kind `dead_lettered`); false: the step fails at once and the entry is the record (status `done`). A playbook's `executor.spec.dlq_hold: true|false` wins", Source: "NoETL observability spec §8.6, §8.13 A", field: func(c *Config) any { return &c.DLQ.Hold }},
	rangeOf(Knob{Path: "dlq.retention_days", Env: "NOETL_DLQ_RETENTION_DAYS", Kind: KindInt, Default: "30", Deploy: true,
		Doc: "days a DLQ entry is kept (its `expire_at`)", Source: seed812, field: func(c *Config) any { return &c.DLQ.RetentionDays }}, 1, 3650),
	{Path: "tracing.enabled", Env: "NOETL_TRACING_ENABLED", Kind: KindBool, Default: "true",
		Doc: "export spans", Source: seed812, field: func(c *Config) any { return &c.Tracing.Enabled }},
	rangeOf(Knob{Path: "tracing.sample_rate", Env: "NOETL_TRACING_SAMPLE_RATE", Kind: KindFloat, Default: "0.1",
		Doc: "share of executions traced (`workload.trace=true` forces one)", Source: seed812, field: func(c *Config) any { return &c.Tracing.SampleRate }}, 0, 1),
	{Path: "tracing.force_sample_on_error", Env: "NOETL_TRACING_FORCE_SAMPLE_ON_ERROR", Kind: KindBool, Default: "true",
		Doc: "keep the spans of failed executions", Source: seed812, field: func(c *Config) any { return &c.Tracing.ForceSampleOnError }},
	{Path: "tracing.exporter", Env: "NOETL_TRACING_EXPORTER", Kind: KindList, DefaultDoc: "`file` when `NOETL_TRACE_DIR` is set, plus `otlp` when `NOETL_TRACING_ENDPOINT` is", Deploy: true, check: traceExporters,
		Doc: "span exporters, comma-separated: `otlp`, `gcp` (Cloud Trace), `file` (JSON lines under `NOETL_TRACE_DIR`), or `none`", Source: seed812, field: func(c *Config) any { return &c.Tracing.Exporter }},
	{Path: "tracing.library_spans", Env: "NOETL_TRACING_LIBRARY_SPANS", Kind: KindBool, Default: "false",
		Doc: "also record the spans of the Google Cloud client libraries (Firestore, Pub/Sub, Cloud Tasks, Cloud Storage calls)", Source: "README \"Observability\"", field: func(c *Config) any { return &c.Tracing.LibrarySpans }},
	{Path: "tracing.dir", Env: "NOETL_TRACE_DIR", Kind: KindString, Default: "",
		Doc: "directory of the `file` span exporter, read by `noetl trace` (the local stack: `.stack/traces`)", Source: "README \"Security\"", field: func(c *Config) any { return &c.Tracing.Dir }},
	{Path: "tracing.endpoint", Env: "NOETL_TRACING_ENDPOINT", Kind: KindString, Default: "", check: otlpEndpoint,
		Doc: "OTLP endpoint of the `otlp` exporter: `http(s)://host:port[/path]` (OTLP/HTTP, `/v1/traces` added when there is no path) or `grpc(s)://host:port` (OTLP/gRPC)", Source: seed812, field: func(c *Config) any { return &c.Tracing.Endpoint }},
	{Path: "metrics.enabled", Env: "NOETL_METRICS_ENABLED", Kind: KindBool, Default: "true",
		Doc: "record NoETL observability spec §8.1 metrics", Source: seed812, field: func(c *Config) any { return &c.Metrics.Enabled }},
	rangeOf(Knob{Path: "metrics.port", Env: "NOETL_METRICS_PORT", Kind: KindInt, Default: "0",
		Doc: "a loopback port on which the local functions host also serves the Prometheus endpoint (0: only on its own port, `NOETL_FUNCTIONS_PORT`; the seed's 9090 would collide between stacks on one machine; Cloud Functions serve one port, use the `gcp` exporter there)", Source: seed812, field: func(c *Config) any { return &c.Metrics.Port }}, 0, 65535),
	{Path: "metrics.path", Env: "NOETL_METRICS_PATH", Kind: KindString, Default: "/metrics", check: metricsPath,
		Doc: "path of the Prometheus endpoint of the local functions host", Source: seed812, field: func(c *Config) any { return &c.Metrics.Path }},
	{Path: "metrics.exporter", Env: "NOETL_METRICS_EXPORTER", Kind: KindString, Default: "prometheus", Enum: []string{"prometheus", "gcp", "none"}, Deploy: true,
		Doc: "metric exporter: Prometheus endpoint or Cloud Monitoring", Source: "README \"Security\"", field: func(c *Config) any { return &c.Metrics.Exporter }},
	rangeOf(Knob{Path: "metrics.export_interval_s", Env: "NOETL_METRICS_EXPORT_INTERVAL_S", Kind: KindSeconds, Default: "60",
		Doc: "how often the `gcp` metric exporter pushes (seconds)", Source: "README \"Observability\"", field: func(c *Config) any { return &c.Metrics.ExportInterval }}, 5, 3600),
	{Path: "logging.level", Env: "NOETL_LOGGING_LEVEL", Aliases: []string{"NOETL_LOG_LEVEL"}, Kind: KindString, Default: "info", Enum: []string{"debug", "info", "warn", "error"},
		Doc: "least severe log level written", Source: seed812, field: func(c *Config) any { return &c.Logging.Level }},
	{Path: "logging.format", Env: "NOETL_LOGGING_FORMAT", Kind: KindString, Default: "json", Enum: []string{"json", "text"},
		Doc: "log line format: `json` (Cloud Logging's structured lines) or `text` (slog's key=value lines, for a terminal)", Source: seed812, field: func(c *Config) any { return &c.Logging.Format }},
	{Path: "logging.source", Env: "NOETL_LOG_SOURCE", Kind: KindBool, Default: "false",
		Doc: "add each log line's source location (`logging.googleapis.com/sourceLocation`)", Source: "README \"Observability\"", field: func(c *Config) any { return &c.Logging.Source }},
	{Path: "logging.redact_keys", Env: "NOETL_LOGGING_REDACT_KEYS", Kind: KindList, Default: "",
		Doc: "more keys whose values are masked in logs, events, traces and API responses, besides the built-in ones (NoETL observability spec §8.9's password, token, authorization, secret, key, auth, api_key, bearer, credential, and more: `shared/redact`); matched as the built-ins are (case-insensitive, a whole key or its last `_` segments)", Source: "NoETL observability spec §8.9, §8.12", field: func(c *Config) any { return &c.Logging.RedactKeys }},
	{Path: "policies.on_step_fail", Env: "NOETL_POLICIES_ON_STEP_FAIL", Kind: KindString, Default: "halt", check: onStepFail,
		Doc: "what a failed step that no arc handles does, when the playbook's `executor.spec.policy.on_step_fail` says nothing: `halt` (stop the other branches, the execution fails), `continue` (route on along its success arcs) or `route_edge:<step>` (run that step with `failed_step` and `error`)", Source: "NoETL observability spec §8.8, §8.12", field: func(c *Config) any { return &c.Policies.OnStepFail }},
	{Path: "policies.on_sink_fail", Env: "NOETL_POLICIES_ON_SINK_FAIL", Kind: KindString, Default: "retry", Enum: []string{"retry", "fail_step", "async_ignore"},
		Doc: "what a sink (a side-effecting postgres, duckdb, gcs or transfer task) without its own policy does when it fails: `retry` its retryable errors with `NOETL_RETRIES_SINK_*`, then fail the step; `fail_step` at once; `async_ignore`: record the failure (`task.failed`) and go on", Source: "NoETL observability spec §8.8, §8.12", field: func(c *Config) any { return &c.Policies.OnSinkFail }},
	{Path: "policies.on_when_error", Env: "NOETL_POLICIES_ON_WHEN_ERROR", Kind: KindString, Default: "treat_as_false", Enum: []string{"treat_as_false", "fail_step"},
		Doc: "what an arc `when` that fails to evaluate (or runs out of its budget) means, when the playbook's `executor.spec.policy.on_when_error` says nothing: `treat_as_false` (the arc does not match; the error is in `next.evaluated` and a `when_eval_error` log line) or `fail_step`", Source: "NoETL observability spec §8.8, §8.12", field: func(c *Config) any { return &c.Policies.OnWhenError }},

	// Benchmarks on the local stack.
	{Path: "latency.profile", Env: "NOETL_LATENCY_PROFILE", Kind: KindString, Default: "off", Enum: []string{"off", "gcp"},
		Doc: "per-operation latency added to the functions' cloud calls, so that the local stack's benchmarks predict a deployment: `gcp` waits, before each Firestore read and commit, Pub/Sub publish (→ push), Cloud Tasks create (→ dispatch), result-tier GCS read and write and runner (Cloud Run) request, a draw from a log-normal fitted to a published or estimated median and p99 (docs/benchmarks.md \"The gcp latency profile\"); `off` wraps nothing. Never set it on a deployment", Source: "docs/benchmarks.md", field: func(c *Config) any { return &c.LatencyProfile }},
}
