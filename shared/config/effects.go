package config

// The effect tests of the settings: which test shows what each
// knob of the registry changes. docs/configuration.md lists them
// (MarkdownTable); TestEveryKnobHasAnEffectTest checks them against the
// module's tests.

// effect names a test that changes a setting and observes what changes.
type effect struct {
	// Test is "dir.TestName" or "dir.TestName/subtest" (dir relative to
	// the module root; a subtest is a t.Run with that literal name).
	Test string
	// Sets is what the test's body must name. Empty: the knob's variable
	// (or an alias) or its Config field — the test sets the setting
	// itself. Otherwise the component option the knob is wired to (the
	// knob's list then also holds a test that names the variable and shows
	// it reaching that option).
	Sets string
}

// effectTests maps each knob of the registry to the tests that show its
// effect (every setting in the configuration table has a test that shows
// its effect). TestEveryKnobHasAnEffectTest checks that each named test
// exists and names the knob (or the option it sets). A knob without such
// a test is in noEffectTest instead.
//
// A knob's tests come in two shapes: one that sets the variable (or the
// Config field) and observes the component's behaviour; or a pair, one
// showing the setting reaching the component's option (Sets empty, e.g.
// shared/wiring.TestDepsWireSettings: config.Parse → NewDeps) and one
// showing what the component does with that option (Sets: the option).
var effectTests = map[string][]effect{
	"GOOGLE_CLOUD_PROJECT": {{Test: telemetrySettings}, {Test: depsWire}, {Test: "shared/telemetry.TestLogHandlerCloudLoggingFields", Sets: "Project"}},

	"NOETL_RETENTION_DAYS":             {{Test: depsWire}, {Test: "shared/store/firestorestore.TestFirestoreExpireAt", Sets: "Retention"}},
	"NOETL_LOCATION":                   {{Test: dispatcher}},
	"NOETL_WORK_QUEUE":                 {{Test: dispatcher}},
	"NOETL_TIMERS_QUEUE":               {{Test: dispatcher}},
	"NOETL_EXECUTE_URL":                {{Test: dispatcher}},
	"NOETL_EVENTS_TOPIC":               {{Test: "shared/wiring.TestBusFromSettings"}},
	"NOETL_COMMANDS_TOPIC":             {{Test: "shared/wiring.TestBusFromSettings"}},
	"NOETL_PUSH_MAX_DELIVERY_ATTEMPTS": {{Test: "shared/wiring.TestAckPermanentFilesTheLastDelivery"}},
	"NOETL_EXECUTE_AUDIENCE":           {{Test: depsWire}, {Test: "shared/tasks/cloudtasks.TestAuthorize", Sets: "Audience"}},
	"NOETL_TASKS_SERVICE_ACCOUNT":      {{Test: depsWire}, {Test: "shared/tasks/cloudtasks.TestAuthorize", Sets: "ServiceAccount"}},
	"NOETL_FUNCTIONS_URL":              {{Test: "shared/config.TestEnvironmentOverrides"}, {Test: "cmd/noetl.TestAPIURLSelection"}},
	"NOETL_REPO_ROOT":                  {{Test: depsWire}, {Test: "shared/catalog.TestLoadConfinedToRoot", Sets: "Root"}},

	// The results tier the functions build (shared/wiring.ResultStore).
	"NOETL_RESULTS_BUCKET":            {{Test: resultStore}},
	"NOETL_RESULT_INLINE_MAX":         {{Test: resultStore}, {Test: "shared/results.TestOffloadInlineVsOverBudget", Sets: "newTestStore"}},
	"NOETL_TENANT":                    {{Test: resultStore}},
	"NOETL_TENANT_PROJECT":            {{Test: resultStore}},
	"NOETL_RESULT_ENV":                {{Test: resultStore}},
	"NOETL_RESULT_CELLS_FILE":         {{Test: resultStore}},
	"NOETL_RESULT_CACHE_MB":           {{Test: resultStore}, {Test: "shared/results.TestCacheLRU", Sets: "NewCache"}},
	"NOETL_RESULT_READ_CHECK":         {{Test: "shared/wiring.TestReadCheckKnobTakesEffect"}},
	"NOETL_RESULT_MATERIALIZE_MAX_MB": {{Test: resultStore}, {Test: "shared/results.TestMaterializeMax", Sets: "MaterializeMax"}},
	"NOETL_RESULT_MAX_OBJECT_MB":      {{Test: "emulators/e2e.TestRedTeamSharedResultBytes"}},

	// The worker's settings (TestDepsWireSettings) and what the worker
	// does with them.
	"NOETL_TASK_ERROR_MAX_BYTES":      {{Test: depsWire}, {Test: "shared/worker.TestOversizeErrorFailsOnceAndIsStored", Sets: "ErrorMax"}},
	"NOETL_TIMEOUTS_TOOL_DEFAULT_MS":  {{Test: depsWire}, {Test: "shared/worker.TestSinkTimeoutAndDefaultConnection", Sets: "ToolTimeout"}},
	"NOETL_TIMEOUTS_SINK_DEFAULT_MS":  {{Test: depsWire}, {Test: "shared/worker.TestSinkTimeoutAndDefaultConnection", Sets: "SinkTimeout"}},
	"NOETL_PG_DSN":                    {{Test: depsWire}, {Test: "shared/worker.TestSinkTimeoutAndDefaultConnection", Sets: "PGDSN"}},
	"NOETL_DLQ_ENABLED":               {{Test: depsWire}, {Test: "shared/dlq.TestExhaustedTaskIsFiled"}},
	"NOETL_HTTP_ALLOW_LINK_LOCAL":     {{Test: depsWire}, {Test: "shared/tools/http.TestAllowLinkLocalSwitch", Sets: "AllowLinkLocal"}},
	"NOETL_LATENCY_PROFILE":           {{Test: "shared/wiring.TestLatencyProfileWrapsTheContracts"}, {Test: "shared/latency.TestDecoratedStoreCommitTakesTheDrawnLatency", Sets: "Store"}},
	"NOETL_EGRESS_PROFILE":            {{Test: depsWire}, {Test: "shared/egress.TestCheckAddr", Sets: "mustPolicy"}},
	"NOETL_LEASE_TTL_S":               {{Test: depsWire}, {Test: "shared/worker.TestLeaseTTLMovesTheWatchdog", Sets: "LeaseTTL"}},
	"NOETL_CONTINUE_UNITS":            {{Test: depsWire}, {Test: "shared/worker.TestStepContinuation", Sets: "ContinueUnits"}},
	"NOETL_CONTINUE_DEFER":            {{Test: depsWire}, {Test: "shared/worker.TestDeferredStepEnds", Sets: "ContinueDefer"}},
	"NOETL_CONTINUE_BUDGET_S":         {{Test: depsWire}, {Test: "shared/worker.TestStepContinuation", Sets: "ContinueBudget"}, {Test: "shared/worker.TestBatchedFanOut", Sets: "ContinueBudget"}},
	"NOETL_HEARTBEAT_INTERVAL_S":      {{Test: depsWire}, {Test: "shared/worker.TestHeartbeatInterval", Sets: "HeartbeatInterval"}},
	"NOETL_DISPATCH_DEADLINE_S":       {{Test: depsWire}, {Test: dispatcher}, {Test: "shared/worker.TestHandOffAfterSetting", Sets: "HandOffAfter"}},
	"NOETL_TIMEOUTS_LOOP_ITEM_MS":     {{Test: depsWire}, {Test: "shared/worker.TestLoopItemTimeoutSetting", Sets: "LoopItemTimeout"}},
	"NOETL_DLQ_RETENTION_DAYS":        {{Test: depsWire}, {Test: "shared/store/firestorestore.TestFirestoreDLQRetention", Sets: "DLQRetention"}},
	"NOETL_TASKS_MAX_ATTEMPTS":        {{Test: "functions/execute.TestDeliveryFromSettings"}, {Test: "shared/worker.TestLostLastAttemptsAreFiledByTheGuard", Sets: "MaxAttempts"}},
	"NOETL_TASKS_MAX_BACKOFF_S":       {{Test: "functions/execute.TestDeliveryFromSettings"}, {Test: "shared/worker.TestLostLastAttemptsAreFiledByTheGuard", Sets: "MaxBackoff"}},
	"NOETL_SUBSCRIBE_URL":             {{Test: "functions/api.TestRegistrarFromSettings"}, {Test: "shared/subscribe.TestRegisterWiresPushAndDeleteUnwires", Sets: "SubscribeURL"}},
	"NOETL_PUSH_SERVICE_ACCOUNT":      {{Test: "functions/api.TestRegistrarFromSettings"}, {Test: "shared/subscribe.TestRegisterWiresPushAndDeleteUnwires", Sets: "PushServiceAccount"}},
	"NOETL_PYTHON":                    {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/python.TestStdinIsEmptyAndConfigErrors", Sets: "Interpreter"}},
	"NOETL_DUCKDB_MAX_TEMP_MB":        {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/duckdb.TestMemoryHogIsLimit", Sets: "MaxTempBytes"}},
	"NOETL_DUCKDB_WARM_WORKERS":       {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/duckdb.TestWarmWorkers", Sets: "Warm"}},
	"NOETL_DUCKDB_THREADS":            {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/duckdb.TestThreadsOption", Sets: "Threads"}},
	"NOETL_RUNNER_WORK_DIR":           {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/duckdb.TestPrivateSpill", Sets: "TempDir"}},
	"NOETL_RUNNER_JWKS_FILE":          {{Test: "runner.TestVerifierFromSettings"}},
	"NOETL_METRICS_PORT":              {{Test: "cmd/local.TestMetricsAddrFromSettings"}, {Test: "cmd/local.TestServeMetrics", Sets: "ServeMetrics"}},
	"NOETL_METRICS_EXPORT_INTERVAL_S": {{Test: "shared/telemetry.TestFromConfigSettings"}, {Test: "shared/telemetry.TestPushIntervalTakesEffect", Sets: "MetricsInterval"}},
	"NOETL_RUNNER_DATA_ROOTS":         {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/duckdb.TestDataRootsAdmit", Sets: "DataRoots"}},
	"NOETL_REPLAY_SUBSCRIPTION":       {{Test: "functions/api.TestReplaySubscriptionFromSettings"}},
	"NOETL_CREDENTIAL_VALUES":         {{Test: "shared/wiring.TestCredentialValuesFromSettings"}},
	"NOETL_SECRETS_ENV_ALLOW":         {{Test: depsWire}, {Test: "shared/tools/allkinds.TestDefaultWiring"}},
	"NOETL_DLQ_HOLD":                  {{Test: depsWire}, {Test: "shared/dlq.TestHoldSettingParksTaskFailures", Sets: "HoldTaskFailures"}},
	"NOETL_EGRESS_ALLOW":              {{Test: depsWire}, {Test: "shared/egress.TestDenyWinsOverAllow", Sets: "mustPolicy"}},
	"NOETL_EGRESS_DENY":               {{Test: depsWire}, {Test: "shared/egress.TestDenyWinsOverAllow", Sets: "mustPolicy"}},

	// The engine's options (shared/wiring.EngineOptions).
	"NOETL_DEFAULT_MAX_IN_FLIGHT":                 {{Test: "shared/wiring.TestDefaultMaxInFlightTakesEffect"}},
	"NOETL_EXECUTION_DEADLINE_S":                  {{Test: engineKnobs + "/NOETL_EXECUTION_DEADLINE_S"}},
	"NOETL_TIMEOUTS_LOOP_TOTAL_MS":                {{Test: engineKnobs + "/NOETL_TIMEOUTS_LOOP_TOTAL_MS"}},
	"NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS": {{Test: engineKnobs + "/NOETL_ORCHESTRATOR_EVALUATE_WHEN_TIMEOUT_MS"}},
	"NOETL_POLICIES_ON_STEP_FAIL":                 {{Test: engineKnobs + "/NOETL_POLICIES_ON_STEP_FAIL"}},
	"NOETL_POLICIES_ON_WHEN_ERROR":                {{Test: engineKnobs + "/NOETL_POLICIES_ON_WHEN_ERROR"}},
	"NOETL_POLICIES_ON_SINK_FAIL":                 {{Test: engineKnobs + "/NOETL_POLICIES_ON_SINK_FAIL"}},
	"NOETL_RETRIES_PLUGIN_MAX_ATTEMPTS":           {{Test: engineRetries}, {Test: defaultRetry, Sets: "TaskRetry"}},
	"NOETL_RETRIES_PLUGIN_BASE_MS":                {{Test: engineRetries}, {Test: defaultRetry, Sets: "TaskRetry"}},
	"NOETL_RETRIES_PLUGIN_MAX_MS":                 {{Test: engineRetries}, {Test: defaultRetry, Sets: "TaskRetry"}},
	"NOETL_RETRIES_SINK_MAX_ATTEMPTS":             {{Test: engineRetries}},
	"NOETL_RETRIES_SINK_BASE_MS":                  {{Test: engineRetries}},
	"NOETL_RETRIES_SINK_MAX_MS":                   {{Test: engineRetries}},

	// The sandbox of the runner's rooms (sandbox.FromConfig) and what each
	// limit does to a command.
	"NOETL_SANDBOX_CPU_S":        {{Test: sandboxConfig}, {Test: "runner/sandbox.TestCPULimit", Sets: "CPUSeconds"}},
	"NOETL_SANDBOX_MEMORY_MB":    {{Test: sandboxConfig}, {Test: "runner/sandbox.TestCgroupLimits", Sets: "MemoryBytes"}, {Test: "runner.TestDuckDBMemoryCap"}},
	"NOETL_SANDBOX_OPEN_FILES":   {{Test: sandboxConfig}, {Test: "runner/sandbox.TestOpenFilesAndProcessLimits", Sets: "OpenFiles"}},
	"NOETL_SANDBOX_PROCESSES":    {{Test: sandboxConfig}, {Test: "runner/sandbox.TestOpenFilesAndProcessLimits", Sets: "Processes"}},
	"NOETL_SANDBOX_CPUS":         {{Test: sandboxConfig}, {Test: "runner/sandbox.TestParentCPUWeight", Sets: "CPUs"}},
	"NOETL_SANDBOX_CGROUP":       {{Test: sandboxConfig}, {Test: "runner/sandbox.TestParentCPUWeight", Sets: "Cgroup"}},
	"NOETL_SANDBOX_DISK_MB":      {{Test: sandboxConfig}, {Test: "runner/sandbox.TestFileSizeLimit", Sets: "FileSizeBytes"}},
	"NOETL_SANDBOX_BASE_UID":     {{Test: sandboxConfig}, {Test: "runner/sandbox.TestBaseUIDAndNamespace", Sets: "BaseUID"}},
	"NOETL_SANDBOX_NO_NAMESPACE": {{Test: sandboxConfig}, {Test: "runner/sandbox.TestBaseUIDAndNamespace", Sets: "NoNamespace"}},
	"NOETL_SANDBOX_POOL_SIZE":    {{Test: sandboxConfig}, {Test: "runner/sandbox.TestPoolWaitsForAFreeIdentity", Sets: "PoolSize"}},
	"NOETL_SANDBOX_WARM_MAX_AGE_S": {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/sandbox.TestPoolDiscardsDeadAndOld", Sets: "MaxAge"},
		{Test: "runner/kinds/duckdb.TestWarmWorkerMaxAge", Sets: "WarmMaxAge"}},
	"NOETL_PYTHON_WARM_INTERPRETERS": {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/python.TestWarmInterpreterServesOneTask", Sets: "Warm"}},
	"NOETL_PYTHON_ZYGOTE":            {{Test: "runner.TestToolOptionsFromSettings"}, {Test: "runner/kinds/python.TestWarmZygote", Sets: "Zygote"}},
	"NOETL_DUCKDB_MEMORY_MB":         {{Test: "runner.TestDuckDBMemoryCap"}},

	// The runner client of the control plane.
	"NOETL_RUNNER_URL":                   {{Test: "shared/wiring.TestRunnerKindsNeedTheRunner"}, {Test: "shared/wiring.TestRunnerTokenKeyMissing"}, {Test: runnerClient}},
	"NOETL_RUNNER_TOKEN_KEY_FILE":        {{Test: "shared/wiring.TestRunnerTokenKeyMissing"}, {Test: runnerClient}},
	"NOETL_RUNNER_AUDIENCE":              {{Test: runnerClient}},
	"NOETL_RUNNER_INVOKER":               {{Test: runnerClient}},
	"NOETL_RESULTS_SIGNING_KEY_FILE":     {{Test: runnerClient}},
	"NOETL_RESULTS_SIGNED_ENDPOINT":      {{Test: runnerClient}},
	"NOETL_RESULTS_GRANT_EXTRA_S":        {{Test: runnerClient}},
	"NOETL_RUNNER_TASK_CONNECTIONS":      {{Test: "emulators/e2e.TestRedTeamSharedConnections"}},
	"NOETL_RUNNER_EXECUTION_CONNECTIONS": {{Test: "emulators/e2e.TestRedTeamSharedConnections"}},

	// Who may call the API.
	"NOETL_API_ROLES":      {{Test: "shared/wiring.TestRolesDefaultClosed"}},
	"NOETL_API_ROLES_FILE": {{Test: "shared/wiring.TestRolesDefaultClosed"}},
	"NOETL_PROFILE":        {{Test: "shared/wiring.TestRolesDefaultClosed"}},
	"NOETL_OIDC_JWKS_FILE": {{Test: "shared/wiring.TestAPIVerifiesTokensWithTheJWKSFile"}},
	"NOETL_API_TOKEN":      {{Test: "shared/wiring.TestAuthenticatorFromSettings"}, {Test: "shared/auth.TestStaticToken", Sets: "Token"}},
	"NOETL_API_AUDIENCES":  {{Test: "shared/wiring.TestAuthenticatorFromSettings"}, {Test: "shared/auth.TestIdentityTokens", Sets: "Audiences"}},
	"NOETL_SIGNING_KEY":    {{Test: "shared/wiring.TestNewDepsNeedsTheSigningKey"}},

	// Telemetry (shared/telemetry.FromConfig) and what it installs.
	"NOETL_TRACING_ENABLED":               {{Test: telemetrySettings}},
	"NOETL_TRACING_SAMPLE_RATE":           {{Test: telemetrySettings}, {Test: "shared/telemetry.TestUnsampledExecutionExportsOnlyOnError", Sets: "SampleRate"}},
	"NOETL_TRACING_FORCE_SAMPLE_ON_ERROR": {{Test: telemetrySettings}, {Test: "shared/telemetry.TestUnsampledExecutionExportsOnlyOnError", Sets: "ForceSampleOnError"}},
	"NOETL_TRACING_EXPORTER":              {{Test: telemetrySettings}, {Test: "shared/telemetry.TestOTLPHTTPExporterDelivers", Sets: "TraceExporters"}},
	"NOETL_TRACING_LIBRARY_SPANS":         {{Test: telemetrySettings}, {Test: "shared/telemetry.TestLibrarySpans", Sets: "LibrarySpans"}},
	"NOETL_TRACE_DIR":                     {{Test: telemetrySettings}, {Test: "shared/telemetry.TestTraceModelFileRoundTrip", Sets: "TraceDir"}},
	"NOETL_TRACING_ENDPOINT":              {{Test: telemetrySettings}, {Test: "shared/telemetry.TestOTLPHTTPExporterDelivers", Sets: "TraceEndpoint"}},
	"NOETL_METRICS_ENABLED":               {{Test: telemetrySettings}},
	"NOETL_METRICS_PATH":                  {{Test: "cmd/local.TestFunctionsHost"}},
	"NOETL_METRICS_EXPORTER":              {{Test: telemetrySettings}, {Test: "shared/telemetry.TestMetricsHandlerServesText", Sets: "MetricsExporter"}},
	"NOETL_LOGGING_LEVEL":                 {{Test: telemetrySettings}, {Test: "shared/telemetry.TestLogHandlerCloudLoggingFields", Sets: "Level"}},
	"NOETL_LOGGING_FORMAT":                {{Test: telemetrySettings}, {Test: "shared/telemetry.TestTextLogFormat", Sets: "Text"}},
	"NOETL_LOG_SOURCE":                    {{Test: telemetrySettings}, {Test: "shared/telemetry.TestLogHandlerGroupsKeepSpecialFieldsTopLevel", Sets: "AddSource"}},
	"NOETL_LOGGING_REDACT_KEYS":           {{Test: "shared/redact.TestSetExtraKeys"}},
}

// Tests several knobs share.
const (
	depsWire          = "shared/wiring.TestDepsWireSettings"
	dispatcher        = "shared/wiring.TestDispatcherFromSettings"
	runnerClient      = "shared/wiring.TestRunnerClientFromSettings"
	resultStore       = "shared/wiring.TestResultStoreFromConfig"
	engineKnobs       = "shared/wiring.TestEngineKnobsTakeEffect"
	engineRetries     = engineKnobs + "/NOETL_RETRIES_PLUGIN_and_SINK"
	defaultRetry      = "shared/worker.TestDefaultRetryPolicy"
	sandboxConfig     = "runner/sandbox.TestFromConfig"
	telemetrySettings = "shared/telemetry.TestFromConfigSettings"
)

// noEffectTest are the knobs that have no test showing their effect yet,
// with what is missing. The list may only shrink: a new knob comes with
// its effect test (maxNoEffectTest, in effects_test.go, is the current
// length).
var noEffectTest = map[string]string{}
