package schema

// This file is the playbook document as it is written (YAML), one Go type
// per mapping the loader reads (shared/dsl decode.go and the decoder files it names,
// pagination.go; the task kinds' keys are tools.go's): the JSON Schema is reflected from these types
// (Generate), their doc comments become its descriptions, and
// TestDocumentKeysMatchLoader checks that each type's keys are exactly the
// keys the loader reads at that place. A type whose loader rejects unknown
// keys has additionalProperties false; the few mappings where the loader
// only warns (metadata, executor) or keeps unknown keys verbatim (the spec
// blocks) allow them. Fields typed Text accept any YAML scalar but null,
// because the loader reads them as text (metadata.version: 1 is "1").
// Union shapes (a field that may be a string, a list or a mapping) are the
// types of unions.go.

// Playbook is a NoETL playbook (apiVersion noetl.io/v2, kind Playbook).
type Playbook struct {
	// apiVersion: noetl.io/v2 (NoETL's noetl.io/v10 is the same; the legacy noetl.io/v1 is loaded with a warning).
	APIVersion string `json:"apiVersion" jsonschema:"required,enum=noetl.io/v2,enum=noetl.io/v10,enum=noetl.io/v1"`
	// kind: Playbook (a kind Subscription resource is not a playbook).
	Kind string `json:"kind" jsonschema:"required,enum=Playbook"`
	// The metadata block; name is required.
	Metadata Metadata `json:"metadata" jsonschema:"required"`
	// Default inputs, deep-merged with the request payload; read-only during the run as workload.<key>.
	Workload Mapping `json:"workload,omitempty"`
	// The ordered list of steps (at least one); the entry step is executor.spec.entry_step, else the step named start, else the first.
	Workflow []Step `json:"workflow" jsonschema:"required,minItems=1"`
	// Credential declarations, each a mapping with a unique name (read-only as keychain.<name>).
	Keychain []KeychainEntry `json:"keychain,omitempty" jsonschema:"nullable"`
	// The executor block: profile, version, requires and spec (entry_step, final_step, no_next_is_error and spec defaults layered under step and task spec).
	Executor *Executor `json:"executor,omitempty" jsonschema:"nullable"`
	// Named task templates that tasks of kind workbook call: a list of {name, tool: {kind, ...}} (NoETL), a list of {name, kind, ...} or a mapping name → task.
	Workbook Workbook `json:"workbook,omitempty"`
	// Ignored, as NoETL's playbook model ignores it (loaded with a warning); this engine traces every execution with OpenTelemetry.
	Tracing any `json:"tracing,omitempty"`
	// Ignored, as NoETL's playbook model ignores it (loaded with a warning; templates do not see it): put inputs in workload and executor settings under executor.spec.
	Spec any `json:"spec,omitempty"`
}

// Metadata is the playbook's metadata block. Keys other than those below
// are ignored with a warning.
type Metadata struct {
	// The playbook's name (required).
	Name Text `json:"name" jsonschema:"required"`
	// The catalog path, e.g. tests/fixtures/playbooks/hello_world.
	Path Text `json:"path,omitempty"`
	// The catalog version, as written.
	Version Text `json:"version,omitempty"`
	// Free text.
	Description Text `json:"description,omitempty"`
	// NoETL labels, kept verbatim (not read by the engine).
	Labels any `json:"labels,omitempty"`
	// NoETL tags, kept verbatim (not read by the engine).
	Tags any `json:"tags,omitempty"`
	// NoETL UI flag, kept verbatim (not read by the engine).
	ExposedInUI any `json:"exposed_in_ui,omitempty"`
	// NoETL MCP flag, kept verbatim (not read by the engine).
	ExposesAsMCP any `json:"exposes_as_mcp,omitempty"`
	// NoETL agent metadata, kept verbatim (not read by the engine).
	Agent any `json:"agent,omitempty"`
	// NoETL capabilities, kept verbatim (not read by the engine).
	Capabilities any `json:"capabilities,omitempty"`
}

// KeychainEntry is one credential declaration (kept verbatim; name is
// required and unique).
type KeychainEntry struct {
	// The name templates read it by, keychain.<name>.
	Name Text `json:"name" jsonschema:"required"`
}

// Executor is the executor block (unknown keys are ignored with a
// warning).
type Executor struct {
	// Placement profile: local, distributed or auto.
	Profile string `json:"profile,omitempty" jsonschema:"enum=local,enum=distributed,enum=auto"`
	// NoETL executor version, kept verbatim.
	Version any `json:"version,omitempty"`
	// NoETL executor requirements, kept verbatim.
	Requires any `json:"requires,omitempty"`
	// Entry and termination settings; other keys are defaults layered under step.spec and task spec.
	Spec *ExecutorSpec `json:"spec,omitempty" jsonschema:"nullable"`
}

// ExecutorSpec is executor.spec: the entry and termination keys below;
// any other key is a spec default (merged under step.spec, loop.spec and
// task spec, inner wins).
type ExecutorSpec struct {
	// The step the initial token targets (it must exist).
	EntryStep Text `json:"entry_step,omitempty"`
	// A step run once after the execution is quiescent, never reached by an arc.
	FinalStep Text `json:"final_step,omitempty"`
	// When true, a step that succeeded and whose arcs all failed to match fails the execution.
	NoNextIsError bool `json:"no_next_is_error,omitempty"`
	// Execution policy (e.g. rollback: on_fail runs the compensating steps).
	Policy any `json:"policy,omitempty"`
}

// Step is one step of the workflow: a labelled task pipeline (tool), its
// inputs, loop, set, output and outgoing arcs (next).
type Step struct {
	// The unique step name: an identifier (letters, digits, _); templates read its result as {{ <name> }}. Another string is loaded as the identifier it maps to, with a warning.
	Step Text `json:"step" jsonschema:"required"`
	// Free text.
	Desc Text `json:"desc,omitempty"`
	// The step that undoes this one (run backwards on failure with executor.spec.policy.rollback: on_fail).
	Compensate Text `json:"compensate,omitempty"`
	// Step spec: policy (admit, lifecycle, failure) and spec defaults for its tasks.
	Spec *StepSpec `json:"spec,omitempty" jsonschema:"nullable"`
	// Run the step's tasks once per element of in (or per claimed row of a cursor).
	Loop *Loop `json:"loop,omitempty" jsonschema:"nullable"`
	// The step's input (DSL v2): templated values merged under each task's input, in scope as input.<key>. Give input or args, not both.
	Input Mapping `json:"input,omitempty"`
	// The v10 spelling of input.
	Args Mapping `json:"args,omitempty"`
	// The task pipeline: one task {kind, ...}, a list of tasks, a list of {label: {kind, ...}} or a mapping label → task.
	Tool Tool `json:"tool,omitempty"`
	// Assignments applied after the step succeeds, before its arcs: targets ctx.<name> or step.<name> (a bare name is written to ctx with a warning).
	Set StepSet `json:"set,omitempty"`
	// The v10 spelling of set with ctx targets: each key is written to ctx.<key>.
	SetCtx Patch `json:"set_ctx,omitempty"`
	// NoETL's legacy step vars: loaded as set_ctx with a warning (each key is written to ctx.<key> when the step completes); templates read the values as ctx.<key> or vars.<key>.
	Vars Patch `json:"vars,omitempty"`
	// The step's output block (storage of its result, inline fields, accumulation).
	Output *Output `json:"output,omitempty" jsonschema:"nullable"`
	// Outgoing arcs: {spec: {mode, on_no_match}, arcs: [...]}; the legacy forms (a step name, a list, {step: x}) are normalised with a warning.
	Next Next `json:"next,omitempty"`
	// Legacy retry (true, a number of attempts or a block), normalised to task policy rules with a warning; prefer tool.spec.policy.rules.
	Retry LegacyRetry `json:"retry,omitempty"`
	// NoETL's legacy spelling of the step's output block (loaded as output with a warning); only output keys are accepted.
	Result *Output `json:"result,omitempty" jsonschema:"nullable"`
}

// StepSpec is step.spec: policy, plus any spec default for the step's
// tasks (kept verbatim).
type StepSpec struct {
	// Step policy: admit, lifecycle and failure (task control actions belong to tool[].spec.policy).
	Policy *StepPolicy `json:"policy,omitempty" jsonschema:"nullable"`
}

// StepPolicy is step.spec.policy.
type StepPolicy struct {
	// Admission gate evaluated before the step runs.
	Admit *Admit `json:"admit,omitempty"`
	// Step lifecycle limits.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty" jsonschema:"nullable"`
	// Failure handling.
	Failure *Failure `json:"failure,omitempty" jsonschema:"nullable"`
	// Reserved placeholder (ignored with a warning).
	Emit any `json:"emit,omitempty"`
	// Reserved placeholder (ignored with a warning).
	Tracing any `json:"tracing,omitempty"`
	// Reserved placeholder (ignored with a warning).
	Quotas any `json:"quotas,omitempty"`
	// Reserved placeholder (ignored with a warning).
	Compensation any `json:"compensation,omitempty"`
}

// Admit is step.spec.policy.admit: rules deciding allow: true|false.
type Admit struct {
	// Admission rules, first match wins: [{when: ..., then: {allow: true}}, {else: {then: {allow: false}}}].
	Rules []AdmitRule `json:"rules" jsonschema:"required,nullable"`
	// exclusive or inclusive.
	Mode string `json:"mode,omitempty" jsonschema:"enum=exclusive,enum=inclusive"`
}

// Lifecycle is step.spec.policy.lifecycle.
type Lifecycle struct {
	// The step's timeout in seconds (0 = engine default).
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"minimum=0"`
	// Not supported yet (ignored with a warning).
	DeadlineS any `json:"deadline_s,omitempty"`
}

// Failure is step.spec.policy.failure.
type Failure struct {
	// fail_fast (default) or best_effort (a loop keeps going and records failed iterations).
	Mode string `json:"mode,omitempty" jsonschema:"enum=fail_fast,enum=best_effort"`
}

// AdmitThen is an admission rule's decision.
type AdmitThen struct {
	// Admit the step (true) or skip it (false).
	Allow bool `json:"allow,omitempty"`
}

// Loop is a step's loop block: a collection (in) or a cursor, the name
// each element is bound to, and the loop spec.
type Loop struct {
	// A template rendering to a list (e.g. "{{ workload.items }}"), or a literal list.
	In LoopIn `json:"in,omitempty"`
	// Deprecated spelling of in (normalised with a warning).
	Collection LoopIn `json:"collection,omitempty"`
	// A cursor (pull-model) source instead of in; needs spec.mode: cursor.
	Cursor *Cursor `json:"cursor,omitempty"`
	// The name each element is bound to (iter.<iterator>): an identifier.
	Iterator Text `json:"iterator,omitempty"`
	// Deprecated spelling of iterator (normalised with a warning).
	Element Text `json:"element,omitempty"`
	// Deprecated: write spec.mode.
	Mode LoopMode `json:"mode,omitempty"`
	// Deprecated: write spec.max_in_flight.
	Concurrency MaxInFlight `json:"concurrency,omitempty"`
	// Deprecated: write spec.max_in_flight.
	MaxInFlight MaxInFlight `json:"max_in_flight,omitempty"`
	// The loop spec: mode, max_in_flight, chunk_size, allow_set_ctx, policy, frame.
	Spec *LoopSpec `json:"spec,omitempty" jsonschema:"nullable"`
}

// LoopSpec is loop.spec; keys other than those below are kept verbatim.
type LoopSpec struct {
	// sequential (default), parallel or cursor (async and sync are deprecated spellings of parallel and sequential).
	Mode LoopMode `json:"mode,omitempty"`
	// Concurrently running iterations (parallel) or cursor workers: an integer ≥ 1 or a template rendering to one.
	MaxInFlight MaxInFlight `json:"max_in_flight,omitempty"`
	// Allow ctx targets in set blocks of a parallel or cursor loop.
	AllowSetCtx bool `json:"allow_set_ctx,omitempty"`
	// Items per batch of a distributed loop (NoETL's chunk_size): a positive integer. One Cloud Task runs a lane's batch of items; without it the size is automatic from the tool kinds (noop 50, read-only 8, side-effecting 1).
	ChunkSize int `json:"chunk_size,omitempty" jsonschema:"minimum=1"`
	// Alias of chunk_size (give one of them).
	Batch int `json:"batch,omitempty" jsonschema:"minimum=1"`
	// NoETL's placement intent: exec distributed or local (other keys are ignored with a warning).
	Policy *LoopPolicy `json:"policy,omitempty" jsonschema:"nullable"`
	// A cursor loop's frame policy.
	Frame *Frame `json:"frame,omitempty" jsonschema:"nullable"`
}

// LoopPolicy is loop.spec.policy.
type LoopPolicy struct {
	// distributed or local.
	Exec string `json:"exec,omitempty" jsonschema:"enum=distributed,enum=local"`
}

// Cursor is loop.cursor, a cursor loop's source: a claim statement that
// leases up to {{ __frame_max_rows }} rows and returns them.
type Cursor struct {
	// The claim driver: postgres (the only one this stack runs; mysql, snowflake, redis and nats_stream need services it does not have).
	Kind string `json:"kind,omitempty"`
	// The credential of the claim connection.
	Auth Text `json:"auth" jsonschema:"required"`
	// The claim statement (a template); its RETURNING columns become the row bound to the iterator.
	Claim Text `json:"claim" jsonschema:"required"`
	// Driver options, verbatim.
	Options Mapping `json:"options,omitempty"`
}

// Frame is loop.spec.frame, a cursor loop's frame policy (NoETL
// FramePolicy); a numeric field may be a template rendered when the loop
// starts.
type Frame struct {
	// Rows one claim leases (default 1).
	MaxRows FrameCount `json:"max_rows,omitempty"`
	// Seconds a worker may hold a frame (default 30).
	MaxSeconds FrameSeconds `json:"max_seconds,omitempty"`
	// Bound on the serialised output of one frame (default 67108864).
	MaxBytes FrameCount `json:"max_bytes,omitempty"`
	// The frame lease in seconds (default 120).
	LeaseSeconds FrameSeconds `json:"lease_seconds,omitempty"`
	// Heartbeat interval in seconds (default 30).
	HeartbeatSeconds FrameSeconds `json:"heartbeat_seconds,omitempty"`
	// Rows of one frame run at once (default 1).
	RowConcurrency FrameCount `json:"row_concurrency,omitempty"`
	// row (default: the pipeline runs per claimed row) or frame (once per frame).
	Process string `json:"process,omitempty" jsonschema:"enum=row,enum=frame"`
	// NoETL's evidence switch (not used here).
	VerifyIPC bool `json:"verify_ipc,omitempty"`
	// whole_frame (the only mode).
	RetryMode string `json:"retry_mode,omitempty" jsonschema:"enum=whole_frame"`
	// How many times a frame may be claimed (default 3).
	MaxAttempts FrameCount `json:"max_attempts,omitempty"`
}

// NextBlock is the canonical next block: routing mode and arcs.
type NextBlock struct {
	// Routing spec: mode and on_no_match.
	Spec *NextSpec `json:"spec,omitempty" jsonschema:"nullable"`
	// Arcs evaluated in order on the step's boundary event (an arc may be written as a bare step name).
	Arcs []ArcItem `json:"arcs,omitempty" jsonschema:"nullable"`
}

// NextSpec is next.spec.
type NextSpec struct {
	// exclusive (default: the first matching arc) or inclusive (every matching arc).
	Mode string `json:"mode,omitempty" jsonschema:"enum=exclusive,enum=inclusive"`
	// When the step succeeded and no arc matches: complete (default) or quiet.
	OnNoMatch string `json:"on_no_match,omitempty" jsonschema:"enum=complete,enum=quiet"`
	// Routing hints placeholder (ignored).
	Policy any `json:"policy,omitempty"`
}

// Arc is one outgoing edge: the target step, its guard and what it
// writes.
type Arc struct {
	// The target step's name.
	Step Text `json:"step" jsonschema:"required"`
	// The guard, a template (empty = always), e.g. "{{ ctx.has_more }}".
	When Text `json:"when,omitempty"`
	// The target step's args (the v10 token; templated).
	Args Mapping `json:"args,omitempty"`
	// Assignments applied only when this arc is taken: ctx.<name> or step.<name>.
	Set StepSet `json:"set,omitempty"`
	// The boundary event the arc listens to: step.done (default for a step), step.failed, loop.done or any.
	On string `json:"on,omitempty" jsonschema:"enum=step.done,enum=step.failed,enum=loop.done,enum=any"`
	// Deprecated spelling of args (normalised with a warning).
	Data Mapping `json:"data,omitempty"`
	// Deprecated spelling of args (normalised with a warning).
	With Mapping `json:"with,omitempty"`
	// Deprecated spelling of args (normalised with a warning).
	Input Mapping `json:"input,omitempty"`
	// Reserved placeholder (ignored with a warning).
	Spec any `json:"spec,omitempty"`
	// Not a NoETL arc key: read as the arc's when, with a warning.
	Cond Text `json:"cond,omitempty"`
}

// LegacyBranch is an entry of the legacy list-shaped next: {when, then:
// targets} or {else: targets}.
type LegacyBranch struct {
	// The branch's guard.
	When Text `json:"when,omitempty"`
	// The targets when the guard holds.
	Then ArcTargets `json:"then,omitempty"`
	// The targets otherwise.
	Else ArcTargets `json:"else,omitempty"`
}

// TaskSpec is a task's spec: policy and timeout, the task's input, the
// kind keys NoETL also accepts here (moved to the task), and tool knobs
// kept verbatim. set does not belong here.
type TaskSpec struct {
	// The task's policy: ordered rules deciding continue, retry, jump, break or fail.
	Policy *TaskPolicy `json:"policy,omitempty"`
	// Timeout in seconds, or a mapping such as {connect: 5, read: 15} kept for the tool.
	Timeout Timeout `json:"timeout,omitempty"`
	// The task's input (as tool.input).
	Input Mapping `json:"input,omitempty"`
	// The v10 spelling of input.
	Args Mapping `json:"args,omitempty"`
}

// TaskPolicy is a task's spec.policy.
type TaskPolicy struct {
	// Ordered rules, first match wins: {when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 3}} and a final {else: {then: {do: continue}}}.
	Rules []TaskRule `json:"rules" jsonschema:"required,nullable"`
	// Reserved placeholder (ignored with a warning).
	Mode any `json:"mode,omitempty"`
	// Reserved placeholder (ignored with a warning).
	OnUnmatched any `json:"on_unmatched,omitempty"`
	// Reserved placeholder (ignored with a warning).
	Before any `json:"before,omitempty"`
	// Reserved placeholder (ignored with a warning).
	After any `json:"after,omitempty"`
	// Reserved placeholder (ignored with a warning).
	Finally any `json:"finally,omitempty"`
}

// Then is a task rule's action.
type Then struct {
	// continue (default), retry, jump, break or fail.
	Do string `json:"do,omitempty" jsonschema:"enum=continue,enum=retry,enum=jump,enum=break,enum=fail"`
	// Total attempts for retry (default 3).
	Attempts int `json:"attempts,omitempty"`
	// none, linear or exponential (NoETL's fixed is loaded as none).
	Backoff string `json:"backoff,omitempty" jsonschema:"enum=none,enum=linear,enum=exponential,enum=fixed"`
	// Seconds before a retry.
	Delay float64 `json:"delay,omitempty" jsonschema:"minimum=0"`
	// Cap on a computed delay, in seconds.
	MaxDelay float64 `json:"max_delay,omitempty" jsonschema:"minimum=0"`
	// The jump target: a task label of this step.
	To Text `json:"to,omitempty"`
	// Assignments applied when the rule matches: ctx.<name>, iter.<name>, step.<name> or a bare variable of the step run.
	Set TaskSet `json:"set,omitempty"`
	// The v10 spelling of set with iter targets.
	SetIter Patch `json:"set_iter,omitempty"`
	// The v10 spelling of set with ctx targets.
	SetCtx Patch `json:"set_ctx,omitempty"`
}

// RetryBlock is the legacy retry block (NoETL event-driven retry design),
// normalised to task policy rules with a warning.
type RetryBlock struct {
	// Total attempts (default 3).
	MaxAttempts int `json:"max_attempts,omitempty" jsonschema:"minimum=1"`
	// Seconds before the first retry (default 1).
	InitialDelay float64 `json:"initial_delay,omitempty" jsonschema:"minimum=0"`
	// Delay multiplier (default 2).
	BackoffMultiplier float64 `json:"backoff_multiplier,omitempty" jsonschema:"exclusiveMinimum=0"`
	// Cap on the delay in seconds (default 60).
	MaxDelay float64 `json:"max_delay,omitempty" jsonschema:"minimum=0"`
	// Ignored (task policy is deterministic).
	Jitter bool `json:"jitter,omitempty"`
	// Retry condition (legacy names status_code, error, success, result, data, attempt are in scope).
	RetryWhen Text `json:"retry_when,omitempty"`
	// Stop condition (fails the task).
	StopWhen Text `json:"stop_when,omitempty"`
	// Error kinds to retry, e.g. [timeout, connection_error].
	RetryOn []Text `json:"retry_on,omitempty" jsonschema:"nullable"`
	// HTTP statuses to retry, e.g. [429, 503].
	RetryOnStatus []int `json:"retry_on_status,omitempty" jsonschema:"nullable"`
	// Seconds before the first retry (NoETL fixtures' spelling of initial_delay).
	Backoff float64 `json:"backoff,omitempty" jsonschema:"minimum=0"`
	// Seconds before the first retry (NoETL fixtures' spelling of initial_delay).
	BackoffSeconds float64 `json:"backoff_seconds,omitempty" jsonschema:"minimum=0"`
	// Error retry settings (the same keys, one level).
	OnError *RetryBlock `json:"on_error,omitempty" jsonschema:"nullable"`
	// Pagination or polling by re-calling an http task (rewritten to a jump pipeline).
	OnSuccess *OnSuccess `json:"on_success,omitempty"`
}

// OnSuccess is retry.on_success (NoETL distributed loop design):
// pagination or polling of an http task.
type OnSuccess struct {
	// The condition to call again, one {{ expression }} (response, page and iteration are in scope).
	While Text `json:"while" jsonschema:"required"`
	// Calls in all (default 100).
	MaxAttempts int `json:"max_attempts,omitempty" jsonschema:"minimum=1"`
	// Calls in all (alias of max_attempts).
	MaxIterations int `json:"max_iterations,omitempty" jsonschema:"minimum=1"`
	// What the next call changes: params, headers, url.
	NextCall *NextCall `json:"next_call,omitempty" jsonschema:"nullable"`
	// How results combine: append (default), replace or collect, or {strategy, path}.
	Collect Collect `json:"collect,omitempty"`
	// The path of the array to collect.
	MergePath Text `json:"merge_path,omitempty"`
	// The path of the array to collect.
	Path Text `json:"path,omitempty"`
}

// NextCall is on_success.next_call.
type NextCall struct {
	// Query parameters of the next call (templates).
	Params map[string]any `json:"params,omitempty"`
	// Headers of the next call (templates).
	Headers map[string]any `json:"headers,omitempty"`
	// The next call's URL (a template).
	URL string `json:"url,omitempty"`
}

// CollectBlock is on_success.collect as a mapping.
type CollectBlock struct {
	// append, replace or collect.
	Strategy CollectStrategy `json:"strategy,omitempty"`
	// The path of the array to collect.
	Path Text `json:"path,omitempty"`
	// The path of the array to collect.
	MergePath Text `json:"merge_path,omitempty"`
	// Not bound as a name (ignored with a warning).
	Into any `json:"into,omitempty"`
}

// Output is an output block (tool.output or step.output): where a result
// is stored, which fields stay inline, how results accumulate.
type Output struct {
	// Where the result is stored.
	Store *Store `json:"store,omitempty" jsonschema:"nullable"`
	// Fields kept inline when the result is stored by reference: [status, data.count] or [{path, as}].
	Select Select `json:"select,omitempty"`
	// Alias of select.
	OutputSelect Select `json:"output_select,omitempty"`
	// How results of repeated runs combine.
	Accumulate *Accumulate `json:"accumulate,omitempty" jsonschema:"nullable"`
	// The largest result kept inline, in bytes of its JSON (default 65536; 0 = always by reference).
	InlineMaxBytes int `json:"inline_max_bytes,omitempty" jsonschema:"minimum=0"`
	// Size of the preview kept with a reference (default 1024).
	PreviewMaxBytes int `json:"preview_max_bytes,omitempty" jsonschema:"minimum=0"`
	// Lifetime of a stored result: step, execution (default), workflow or permanent.
	Scope string `json:"scope,omitempty" jsonschema:"enum=step,enum=execution,enum=workflow,enum=permanent"`
	// An extra name the result is also visible by (an identifier).
	As Text `json:"as,omitempty"`
}

// Store is output.store.
type Store struct {
	// auto (default), memory, eventlog (inline), kv, disk, object, gcs (GCS results tier); s3, db and duckdb need services this stack does not have.
	Kind string `json:"kind,omitempty"`
	// Kept verbatim (not used by this stack).
	Driver Text `json:"driver,omitempty"`
	// Not used (warning): the bucket derives from the result's URI.
	Bucket Text `json:"bucket,omitempty"`
	// Not used (warning): the key derives from the result's URI.
	Prefix Text `json:"prefix,omitempty"`
	// How long the stored result is kept: a duration (90m, 2h), days (7d) or forever.
	TTL Text `json:"ttl,omitempty"`
	// Feather codec: none (default), lz4 or zstd (gzip is read as zstd).
	Compression string `json:"compression,omitempty" jsonschema:"enum=none,enum=lz4,enum=zstd,enum=gzip"`
	// The credential of the store.
	Credential Text `json:"credential,omitempty"`
	// As output.inline_max_bytes (give it once).
	InlineMaxBytes int `json:"inline_max_bytes,omitempty" jsonschema:"minimum=0"`
}

// SelectEntry is one selected field as a mapping.
type SelectEntry struct {
	// The field's dotted path, e.g. data.items[0].id.
	Path Text `json:"path,omitempty"`
	// The name it stays readable under (default: the path's last segment).
	As Text `json:"as,omitempty"`
}

// Accumulate is output.accumulate.
type Accumulate struct {
	// Turn accumulation on (default false).
	Enabled bool `json:"enabled,omitempty"`
	// append (default), replace, merge or concat.
	Strategy string `json:"strategy,omitempty" jsonschema:"enum=append,enum=replace,enum=merge,enum=concat"`
	// The dotted path of the array concat extracts.
	MergePath Text `json:"merge_path,omitempty"`
	// The variable name the accumulated value is bound to.
	ManifestAs Text `json:"manifest_as,omitempty"`
	// Accumulate successful results (default true).
	OnSuccess bool `json:"on_success,omitempty"`
	// Accumulate error responses (default false).
	OnError bool `json:"on_error,omitempty"`
	// Bound on the accumulated items (0 = unbounded).
	MaxItems int `json:"max_items,omitempty" jsonschema:"minimum=0"`
}

// Script is a python or postgres task's script block: the code or SQL is
// loaded from source at run time.
type Script struct {
	// A file path (file), gs://bucket/object (gcs) or URL (http).
	URI Text `json:"uri,omitempty"`
	// Where the script comes from.
	Source *ScriptSource `json:"source,omitempty" jsonschema:"nullable"`
}

// ScriptSource is script.source.
type ScriptSource struct {
	// inline (default when code is given), file, http or gcs.
	Type string `json:"type,omitempty" jsonschema:"enum=inline,enum=file,enum=http,enum=gcs"`
	// The inline script.
	Code Text `json:"code,omitempty"`
	// The URL an http source GETs (falls back to uri).
	Endpoint Text `json:"endpoint,omitempty"`
	// The HTTP method of an http source (default GET).
	Method Text `json:"method,omitempty"`
	// A credential name for gcs or http.
	Auth Text `json:"auth,omitempty"`
	// Alias of auth.
	Credential Text `json:"credential,omitempty"`
	// The fetch timeout in seconds.
	Timeout float64 `json:"timeout,omitempty" jsonschema:"minimum=0"`
}

// WorkbookEntry is NoETL's workbook entry shape: a name and one task under
// tool.
type WorkbookEntry struct {
	// The entry's name (an identifier), called by kind: workbook tasks.
	Name Text `json:"name,omitempty"`
	// Documentation.
	Desc any `json:"desc,omitempty"`
	// The task (its name is the entry's, beside tool).
	Tool TaskRef `json:"tool" jsonschema:"required"`
	// NoETL workbook contract {expects, returns}, kept verbatim.
	Assert Mapping `json:"assert,omitempty"`
}

// CommonTask holds the task keys the loader reads for every kind; each
// kind adds the keys its tool reads (tools.go).
type CommonTask struct {
	// The task's label, unique in its step (jump targets, {{ <label> }} results); for kind workbook in a single-task tool, the workbook entry to call.
	Name Text `json:"name,omitempty"`
	// Read as tool config when kind is given (the legacy spelling of kind otherwise, which is an error).
	Type any `json:"type,omitempty"`
	// The task's input (DSL v2): templated values rendered before it runs, merged over the step's input.
	Input Mapping `json:"input,omitempty"`
	// The v10 spelling of input.
	Args Mapping `json:"args,omitempty"`
	// Task spec: policy, timeout, input and tool knobs.
	Spec *TaskSpec `json:"spec,omitempty" jsonschema:"nullable"`
	// Timeout in seconds, or a mapping such as {connect: 5, read: 15} kept for the tool.
	Timeout Timeout `json:"timeout,omitempty"`
	// Timeout in milliseconds.
	TimeoutMS float64 `json:"timeout_ms,omitempty"`
	// Legacy retry, normalised to spec.policy.rules with a warning.
	Retry LegacyRetry `json:"retry,omitempty"`
	// Assignments applied after each attempt, before the policy rules: ctx.<name>, iter.<name>, step.<name> or a bare variable of the step run.
	Set TaskSet `json:"set,omitempty"`
	// The task's output block.
	Output *Output `json:"output,omitempty" jsonschema:"nullable"`
	// Fields kept inline (appended to output.select); a mapping is ignored with a warning.
	OutputSelect Select `json:"output_select,omitempty"`
	// NoETL workbook contract {expects, returns}, kept verbatim.
	Assert Mapping `json:"assert,omitempty"`
	// Not read by any kind (dropped with a warning): give the step a loop instead.
	Iterator any `json:"iterator,omitempty"`
}
