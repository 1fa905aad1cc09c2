// Package dsl loads, normalises and validates NoETL playbooks
// (apiVersion noetl.io/v2, kind Playbook) into the model below
// (the DSL contract, README "The DSL"; NoETL canonical v10 retry spec gives task policy).
//
// The model is the normalised form: every step has a labelled task list,
// `next` is always a list of arcs with a mode, policy rules are parsed, and
// every node remembers its YAML line so later errors can point at it.
// Template strings are kept verbatim (rendering happens in shared/template at
// run time); Load parses every one of them (template.Check) so a template
// that cannot parse is a validation error, and warns about names no scope
// defines (templates.go).
//
// Two naming dialects normalise to the same model (NoETL DSL spec "DSL v2
// names"; NoETL's noetl_dsl_refactoring_spec.md): the v10 names (args,
// outcome, set_ctx, set_iter, arc args) and the DSL v2 names (input, output,
// set with ctx./iter./step. targets). Step.Input and Task.Input hold both
// args and input; every set_ctx, set_iter and set becomes a list of
// Assignment (Step.Set, Task.Set, Then.Set, Arc.Set); Arc.Args stays the v10
// token. Templates may read outcome or output: they are the same envelope.
//
// Entry points: Load / LoadFile parse YAML into a *Playbook (or return a
// *ValidationError listing every problem with its line); Playbook.Validate
// re-checks a model built or edited in Go; Lint analyses a loaded playbook
// as a Petri net (unreachable steps, livelocks, unconditional cycles,
// trapped jump cycles, missing default arcs, fan-in after an inclusive
// fan-out that no join absorbs) and returns warnings with lines (lint.go).
// Static fan-out/reduce joins are computed by Load (Step.JoinOf, joins.go);
// the per-kind task keys are in kinds.go. See load.go for the
// accepted shapes and the legacy forms that are normalised (with a
// warning) or rejected (with the canonical rewrite in the message), and
// pagination.go for the rewrite of NoETL distributed loop design's retry.on_success.
package dsl

import (
	"go.yaml.in/yaml/v3"

	"fmt"
	"strconv"
	"strings"
	"time"
)

// Playbook is a validated, normalised playbook (NoETL DSL spec "Document").
type Playbook struct {
	// APIVersion is always "noetl.io/v2" after Load (v1 and NoETL's
	// "noetl.io/v10" are normalised).
	APIVersion string `json:"apiVersion"`
	// Kind is always "Playbook".
	Kind string `json:"kind"`
	// Metadata is the metadata block (name is required).
	Metadata Metadata `json:"metadata"`
	// Workload holds the defaults deep-merged with the request payload
	// (immutable during the run; templates read workload.<key>).
	Workload map[string]any `json:"workload,omitempty"`
	// Keychain holds the credential declarations, verbatim: a list of
	// mappings, each with a unique name (read-only as keychain.<name>).
	Keychain []any `json:"keychain,omitempty"`
	// Executor holds the executor block verbatim (incl. executor.spec;
	// the keys below are also parsed into Entry, FinalStep and
	// NoNextIsError).
	Executor map[string]any `json:"executor,omitempty"`
	// Entry is the name of the entry step, the one the initial token
	// targets (NoETL workflow_entry_routing_termination.md §2):
	// executor.spec.entry_step when given (it must name a step), else the
	// step named "start", else the first step of Workflow. Upstream's
	// default is workflow[0]; this engine prefers a step named start
	// (NoETL DSL spec), which is the same step in every NoETL fixture.
	Entry string `json:"entry"`
	// FinalStep is executor.spec.final_step ("" = none): a step run once
	// after the execution is quiescent (no runnable token, no step run in
	// flight, no join waiting), never reached by an arc (Load rejects an
	// arc to it) and not the entry. When it ends, the execution ends; if
	// it fails, the execution fails (§7 of the same document). Its token
	// carries no args; it reads the results of the steps that ran.
	FinalStep string `json:"final_step,omitempty"`
	// NoNextIsError is executor.spec.no_next_is_error (default false, §5.2):
	// when true, a step that succeeded (step.done, or loop.done for a loop)
	// whose next has arcs of which none matches fails the execution (error
	// kind "routing", message naming the step and event) instead of ending
	// the branch. A step without next is not affected (it is a leaf), nor a
	// step whose next.spec.on_no_match is "quiet"; a failed step without a
	// matching arc fails the execution either way.
	NoNextIsError bool `json:"no_next_is_error,omitempty"`
	// Ignored holds the root keys NoETL's playbook model ignores (tracing,
	// spec), verbatim; the engine does not read them either.
	Ignored map[string]any `json:"ignored,omitempty"`
	// Workbook holds named task templates (kind: workbook calls them).
	Workbook map[string]*Task `json:"workbook,omitempty"`
	// Workflow is the ordered list of steps.
	Workflow []*Step `json:"workflow"`
	// Warnings are non-fatal findings (deprecated forms that were
	// normalised, template names no scope defines, ...).
	Warnings []Problem `json:"-"`
	// Source is the original YAML text.
	Source string `json:"-"`

	byName map[string]*Step
	// lines maps a YAML path ("workflow[2].tool[0].url") to its 1-based line.
	lines map[string]int
	// scalars maps the YAML path of a scalar value to where the value
	// itself is written (templatePosition).
	scalars map[string]scalarPos
}

// scalarPos is where a scalar value is written: its 1-based line and
// column (of a block scalar: its | or > indicator) and its style.
type scalarPos struct {
	line, column int
	style        yaml.Style
}

// Metadata is the playbook's metadata block.
type Metadata struct {
	// Name identifies the playbook (required).
	Name string `json:"name"`
	// Path is the catalog path, e.g. "tests/fixtures/playbooks/hello_world".
	Path string `json:"path,omitempty"`
	// Version is the catalog version, as written.
	Version string `json:"version,omitempty"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// Extra holds the other metadata keys NoETL knows (labels, tags,
	// exposed_in_ui, exposes_as_mcp, agent, capabilities), verbatim; the
	// engine does not read them.
	Extra map[string]any `json:"extra,omitempty"`
}

// LineOf returns the 1-based source line of a YAML path such as
// "workflow[2].tool[0].url" (the line of its key), falling back to the
// nearest enclosing node that exists; 0 when unknown (e.g. a playbook built
// in Go). Use it to point run-time template errors at the source.
func (p *Playbook) LineOf(path string) int {
	return lineIn(p.lines, path)
}

// EntryStep returns the name of the entry step (NoETL DSL spec "DSL v2 names",
// NoETL workflow_entry_routing_termination.md §2): Entry when set (Load
// sets it from executor.spec.entry_step, else to the default below), else
// the step named "start", else the first step; "" for an empty workflow.
func (p *Playbook) EntryStep() string {
	if p.Entry != "" {
		return p.Entry
	}
	if p.Step("start") != nil {
		return "start"
	}
	for _, s := range p.Workflow {
		if s != nil && s.Name != "" {
			return s.Name
		}
	}
	return ""
}

// Step returns the step with the given name, or nil.
func (p *Playbook) Step(name string) *Step {
	if p.byName == nil {
		p.byName = map[string]*Step{}
		for _, s := range p.Workflow {
			if s != nil {
				if _, dup := p.byName[s.Name]; !dup {
					p.byName[s.Name] = s
				}
			}
		}
	}
	return p.byName[name]
}

// Step is one Petri-net transition of the workflow (NoETL DSL spec "Step").
type Step struct {
	// Name is the unique step name (an identifier).
	Name string `json:"step"`
	// Desc is free text.
	Desc string `json:"desc,omitempty"`
	// Compensate names the step that undoes this one (NoETL observability spec §8.7
	// pattern B): with executor.spec.policy.rollback: on_fail, a failing
	// execution runs the compensating steps of its completed steps
	// backwards, once each, before it ends failed.
	Compensate string `json:"compensate,omitempty"`
	// Line is the 1-based line of the step's mapping (0 if built in Go).
	Line int `json:"-"`
	// Path is the step's YAML path, e.g. "workflow[2]" (empty if built in Go).
	Path string `json:"-"`
	// Admit is step.spec.policy.admit (nil = always admitted).
	Admit *Policy `json:"admit,omitempty"`
	// TimeoutS is step.spec.policy.lifecycle.timeout_s (0 = engine default).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// FailureMode is step.spec.policy.failure.mode: "fail_fast" (default) or
	// "best_effort" (a loop keeps going and records failed iterations).
	FailureMode string `json:"failure_mode,omitempty"`
	// Loop makes the step run its tasks once per element (nil = no loop).
	Loop *Loop `json:"loop,omitempty"`
	// Input is the step's input: DSL v2 step `input` or the v10 dialect's
	// step `args` (one of the two; both is an error). Templated values,
	// rendered for each task and merged under the task's own Input; the
	// keys are in scope as input.<key> (and args.<key>) and, in the
	// dialect, bare.
	Input map[string]any `json:"input,omitempty"`
	// Tasks is the normalised pipeline (may be empty for a routing-only step).
	Tasks []*Task `json:"tasks,omitempty"`
	// Set is the step-level set, applied in order after the step (or its
	// composite tool) completes successfully and before its arcs are
	// evaluated (NoETL DSL spec "DSL v2 names": step completes → step set → arc
	// conditions → chosen arc's set → target scheduled); for a loop step,
	// once, when the loop ends. From DSL v2 `set` and the v10 dialect's
	// step `set_ctx` (each key becomes a ctx Assignment). Templates here
	// read output (the step's result envelope) and the step's result by
	// its name.
	Set []Assignment `json:"set,omitempty"`
	// Output is the step-level output block (nil = none): NoETL fixtures
	// put output.store / output_select / accumulate here as well as on
	// the tool; it applies to the step's result (its last task's result,
	// or the loop's {results: [...]}), the task-level Task.Output to each
	// task's own result.
	Output *Output `json:"output,omitempty"`
	// Next holds the outgoing arcs; Mode is "exclusive" (default) or
	// "inclusive". Nil when the step has no next: its success ends its
	// branch, except that Load gives a step without next an implicit arc
	// to the step named "end" when the playbook has one (see Arc.Implicit).
	Next *Next `json:"next,omitempty"`
	// JoinOf is non-empty when the step is the join (reduce) of an
	// inclusive fan-out, computed by Load with NoETL's fan-out/reduce
	// planner rule (joins.go): the names of the upstream steps whose
	// tokens it waits for, in workflow order. The engine runs a join step
	// once, when each of these steps has either sent its token here or
	// can no longer send one (it finished or failed without taking its
	// arc here, or it is neither running, scheduled nor reachable by arcs
	// from a running or scheduled step); the tokens' args are merged in
	// JoinOf order (later wins). Empty for every other step, which runs
	// once per arriving token.
	JoinOf []string `json:"join_of,omitempty"`
	// Spec holds step.spec keys other than policy, verbatim (spec layering:
	// effective task spec = merge(executor.spec, step.spec, loop.spec,
	// task.spec), inner wins).
	Spec map[string]any `json:"spec,omitempty"`
}

// Assignment scopes (Assignment.Scope): the targets a set may write
// (NoETL noetl_dsl_refactoring_spec.md §6.2).
const (
	// ScopeCtx is the execution-wide mutable state, read as ctx.<key>.
	ScopeCtx = "ctx"
	// ScopeIter is the current loop iteration's state (isolated per
	// iteration, also in parallel loops), read as iter.<key>.
	ScopeIter = "iter"
	// ScopeStep is the current step run's state, read as step.<key>; it
	// exists from the step's first task to its arcs and is dropped when the
	// step run ends.
	ScopeStep = "step"
	// ScopeVar is a bare target (no scope prefix) of a composite tool
	// item's set or of a task policy's then.set: a variable of the current
	// step run, read by its bare name ({{ fetch_result }}) by the later
	// tasks of the pipeline (NoETL's task_sequence running context). At
	// step and arc level a bare target is normalised to ctx with a warning.
	ScopeVar = "var"
)

// Assignment is one target of a set (DSL v2 `set: {ctx.x: "{{ ... }}"}`),
// or one key of a v10 set_ctx / set_iter block (Scope ctx / iter). All the
// values of one block render against the scope as it was before the block;
// they are then applied in order.
type Assignment struct {
	// Scope is ScopeCtx, ScopeIter, ScopeStep or ScopeVar.
	Scope string `json:"scope"`
	// Key is the target without its scope, e.g. "page" for iter.page. Dots
	// separate nested fields: ctx.a.b writes field b of the map ctx.a
	// (created when missing), as NoETL's set does.
	Key string `json:"key"`
	// Value is the value to write: a template string rendered at run time
	// (native values stay native), or a literal.
	Value any `json:"value"`
	// Line is the 1-based line of the target's key (0 if built in Go).
	Line int `json:"-"`
	// Path is the YAML path of the target, e.g. "workflow[0].set.ctx.x".
	Path string `json:"-"`
}

// Target renders the assignment's target as written in DSL v2, e.g.
// "ctx.page" (a ScopeVar target is its bare key).
func (a Assignment) Target() string {
	if a.Scope == ScopeVar || a.Scope == "" {
		return a.Key
	}
	return a.Scope + "." + a.Key
}

// SetOf returns the assignments of one scope as a map key → value (later
// assignments to the same key win; dotted keys are kept as one key), nil
// when there are none. It eases porting code written for the former
// set_ctx / set_iter maps.
func SetOf(as []Assignment, scope string) map[string]any {
	var out map[string]any
	for _, a := range as {
		if a.Scope != scope {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[a.Key] = a.Value
	}
	return out
}

// Loop is a step's loop block (NoETL DSL spec "Loops"; NoETL's Loop / LoopSpec /
// CursorSpec / FramePolicy models).
type Loop struct {
	// In is a template string rendering to a list, or a literal list (nil
	// for a cursor loop).
	In any `json:"in,omitempty"`
	// Cursor is loop.cursor, the pull-model source of a cursor loop (nil
	// for a collection loop). Exactly one of In and Cursor is set.
	Cursor *Cursor `json:"cursor,omitempty"`
	// Iterator is the name each element is bound to (iter.<iterator>, and
	// bare in the dialect); for a cursor loop, each claimed row (a map of
	// the claim's RETURNING columns).
	Iterator string `json:"iterator"`
	// Mode is "sequential" (default), "parallel" or "cursor" (only with
	// Cursor, and Cursor only with it).
	Mode string `json:"mode"`
	// MaxInFlight bounds concurrently running iterations (parallel) or
	// cursor workers (cursor; each claims frames until the cursor is
	// drained); sequential is always 1. 0 means the engine default, or
	// that MaxInFlightTemplate gives it.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// MaxInFlightTemplate is loop.spec.max_in_flight written as a template
	// (e.g. "{{ workload.max_in_flight }}"), rendered once when the loop
	// starts, before any iteration is dispatched; the result must be an
	// integer ≥ 1 (a numeric string is converted), else the step fails
	// (error kind "loop"). Empty when the value is a literal integer
	// (MaxInFlight) or absent.
	MaxInFlightTemplate string `json:"max_in_flight_template,omitempty"`
	// ChunkSize is loop.spec.chunk_size (alias loop.spec.batch), NoETL's
	// distributed-loop batch size: the number of items a batch may carry.
	// 0 when not given (the engine then picks one, engine.BatchSize). The
	// loader rejects a value that is not a positive integer.
	ChunkSize int `json:"chunk_size,omitempty"`
	// AllowSetCtx is the opt-in for ctx targets (set_ctx, set ctx.*) on a
	// parallel or cursor loop (loop.spec.allow_set_ctx: true).
	AllowSetCtx bool `json:"allow_set_ctx,omitempty"`
	// Exec is loop.spec.policy.exec, NoETL's placement intent (iterator.md:
	// "server may ignore"): "distributed" (iterations may run on different
	// workers, one unit of work each — what this engine does for parallel
	// and cursor loops), "local" (keep the iterations of one step run on
	// one worker) or "" (not given).
	Exec string `json:"exec,omitempty"`
	// Frame is loop.spec.frame (cursor loops; nil = defaults, see Frame).
	Frame *Frame `json:"frame,omitempty"`
	// Spec holds loop.spec keys other than mode, max_in_flight, chunk_size, batch,
	// allow_set_ctx, policy and frame, verbatim.
	Spec map[string]any `json:"spec,omitempty"`
	// Line is the 1-based line of the loop mapping.
	Line int `json:"-"`
	// Path is the loop's YAML path, e.g. "workflow[1].loop".
	Path string `json:"-"`
}

// Cursor is a cursor loop's source (NoETL CursorSpec; the cursor-loop
// design): a claim statement that atomically leases up to
// __frame_max_rows work rows and returns them, or none when the cursor is
// drained. The loop ends (loop.done) when every worker's claim came back
// empty and no claimed row is still running.
type Cursor struct {
	// Kind is the claim driver; only "postgres" runs here (mysql,
	// snowflake, redis and nats_stream need services this stack has not).
	Kind string `json:"kind"`
	// Auth names the credential of the claim connection (like tool auth;
	// a template).
	Auth string `json:"auth"`
	// Claim is the claim statement, a template rendered before each claim
	// with the step's scope plus __frame_max_rows (Frame.MaxRows); its
	// RETURNING columns become the row bound to the iterator.
	Claim string `json:"claim"`
	// Options holds loop.cursor.options verbatim (driver specific).
	Options map[string]any `json:"options,omitempty"`
	// Line is the 1-based line of the cursor mapping.
	Line int `json:"-"`
	// Path is the cursor's YAML path, e.g. "workflow[1].loop.cursor".
	Path string `json:"-"`
}

// Frame is a cursor loop's frame policy (loop.spec.frame; NoETL
// FramePolicy, whose defaults Load fills in): the bounded batch a cursor
// worker claims and processes before claiming again.
type Frame struct {
	// MaxRows is the most rows one claim leases (default 1; ≥ 1), exposed
	// to the claim template as __frame_max_rows.
	MaxRows int `json:"max_rows"`
	// MaxSeconds is how long a worker may hold a frame before committing
	// (default 30; > 0).
	MaxSeconds float64 `json:"max_seconds"`
	// MaxBytes bounds the serialised output of one frame (default
	// 67108864; ≥ 1).
	MaxBytes int `json:"max_bytes"`
	// LeaseSeconds is the frame lease (default 120; > 0).
	LeaseSeconds float64 `json:"lease_seconds"`
	// HeartbeatSeconds is the heartbeat interval while a frame runs
	// (default 30; > 0).
	HeartbeatSeconds float64 `json:"heartbeat_seconds"`
	// RowConcurrency is how many rows of one frame run at once (default 1).
	RowConcurrency int `json:"row_concurrency"`
	// Process is "row" (default: the pipeline runs once per claimed row,
	// the row bound to the iterator) or "frame" (once per frame, with
	// frame.rows).
	Process string `json:"process"`
	// VerifyIPC is NoETL's evidence switch (default false; not used here).
	VerifyIPC bool `json:"verify_ipc,omitempty"`
	// RetryMode is "whole_frame" (the only mode): a failed frame is
	// claimed again as a whole.
	RetryMode string `json:"retry_mode"`
	// MaxAttempts is how many times a frame may be claimed (default 3).
	MaxAttempts int `json:"max_attempts"`
	// Templates holds the numeric fields written as templates (field name
	// as in YAML, e.g. "lease_seconds" → "{{ workload.lease }}"): rendered
	// with the step's scope when the loop starts, the result replacing the
	// field (which holds the default until then); a result that is not a
	// number in the field's range fails the step (error kind "loop").
	Templates map[string]string `json:"templates,omitempty"`
}

// Next is a step's routing block (next: {spec: {mode, on_no_match}, arcs:
// [...]}; legacy list/string forms are normalised into it).
type Next struct {
	// Mode is "exclusive" (first matching arc) or "inclusive" (all).
	Mode string `json:"mode"`
	// OnNoMatch is next.spec.on_no_match, what happens when the step
	// succeeded and no arc matches (NoETL NextSpec; Load defaults it to
	// "complete"): "complete" (the branch ends; when nothing else is
	// running or scheduled the execution completes — with
	// executor.spec.no_next_is_error it fails instead) or "quiet" (the
	// branch ends silently and never counts as an error — for branches
	// that are expected to stop, e.g. one of several parallel workers).
	OnNoMatch string `json:"on_no_match,omitempty"`
	// Arcs are evaluated in order on the step's boundary event.
	Arcs []*Arc `json:"arcs"`
	// Line is the 1-based line of the next block (0 when built in Go).
	Line int `json:"-"`
}

// Arc is one outgoing edge (NoETL DSL spec "Step": next.arcs[]). When is a template
// (empty = always).
type Arc struct {
	// Step is the target step's name.
	Step string `json:"step"`
	// When is the guard template (empty = always).
	When string `json:"when,omitempty"`
	// On names the boundary event the arc listens to: "" (default: the
	// step's success, i.e. step.done, or loop.done for a loop step),
	// "step.done", "step.failed", "loop.done" or "any" (every boundary
	// event; filter with event.name in When).
	On ArcOn `json:"on,omitempty"`
	// Args become the target step's args (the v10 token; templated,
	// rendered at routing).
	Args map[string]any `json:"args,omitempty"`
	// Set is the arc's set (DSL v2 next.arcs[].set): applied in order only
	// when this arc is taken, after the step-level set, before the target
	// is scheduled. Templates read the same names as When.
	Set []Assignment `json:"set,omitempty"`
	// Implicit marks the arc Load adds to a step that has no next when the
	// playbook has a step named "end" and the step is not that step
	// (NoETL's implicit end routing, noetl/noetl c294deb5: "steps without
	// next: automatically route to end"): an unguarded success arc to
	// "end", so end runs after every leaf branch (once per arriving token,
	// or once for all of them when end is a join). A step that fails still
	// fails the execution (upstream's failure routing to end is not
	// adopted). Line and Path are the step's.
	Implicit bool `json:"implicit,omitempty"`
	// Line is the 1-based line of the arc.
	Line int `json:"-"`
	// Path is the arc's YAML path, e.g. "workflow[0].next.arcs[1]".
	Path string `json:"-"`
}

// Task is one labelled entry of a step pipeline (NoETL DSL spec "Tasks"), or one
// workbook entry. Name is the label: the list item's name, the label key of
// a `- label: {kind: ...}` item, "<step>_task" for a single mapping, or
// "task_<i>" for an unnamed list item.
type Task struct {
	// Name is the task's label, unique within its step (jump targets,
	// events, {{ <label> }} results).
	Name string `json:"name"`
	// Kind is one of Kinds (kinds.go).
	Kind string `json:"kind"`
	// Line is the 1-based line of the task's mapping.
	Line int `json:"-"`
	// Path is the task's YAML path, e.g. "workflow[2].tool[0]",
	// "workflow[2].tool" (single mapping), "workbook.fetch" or
	// "workbook[0].tool" (an upstream {name, tool: {...}} entry).
	Path string `json:"-"`
	// Workbook is, for kind workbook, the name of the root workbook entry
	// to call (also kept as Config["name"]).
	Workbook string `json:"workbook,omitempty"`
	// Input is the task's input: DSL v2 `input` or the v10 `args` (also
	// when written under tool.spec). Templated values, rendered before the
	// task runs, merged over the step's Input; in scope as input.<key>,
	// args.<key> and, in the dialect, bare; python receives them as
	// variables and as input_data.
	Input map[string]any `json:"input,omitempty"`
	// Config holds every other kind-specific field verbatim (url, method,
	// params, headers, body, code, libs, command, auth, ...): the keys of
	// KindKeys[Kind]. Keys that NoETL accepts under tool.spec (e.g. url,
	// method, params, code) are moved here; http endpoint becomes url.
	Config map[string]any `json:"config,omitempty"`
	// Script is the task's script: block (python and postgres; nil =
	// none): where the code or SQL comes from instead of code/command.
	Script *Script `json:"script,omitempty"`
	// Set is the composite tool item's set (DSL v2 tool[].set): applied in
	// order right after each attempt of the task, before its policy rules
	// are evaluated (NoETL task_sequence order: attempt → tool set → the
	// matching rule's then.set → its action); templates read output (this
	// attempt's envelope).
	Set []Assignment `json:"set,omitempty"`
	// Output is the task's output block (tool.output; nil = defaults).
	Output *Output `json:"output,omitempty"`
	// Assert holds the task's assert block verbatim (NoETL workbook
	// contracts: {expects: [input names], returns: [result fields]}); the
	// engine does not check it.
	Assert map[string]any `json:"assert,omitempty"`
	// Policy is task.spec.policy (nil = default: ok→continue, error→fail).
	Policy *Policy `json:"policy,omitempty"`
	// TimeoutS is task.spec.timeout / timeout (seconds; 0 = tool default).
	// A mapping timeout such as {connect: 5, read: 15} is kept verbatim in
	// Spec["timeout"] (task.spec.timeout) or Config["timeout"] (timeout).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Spec holds task.spec keys other than policy, a numeric timeout and
	// the kind keys moved to Config, verbatim (tool-internal knobs, seed
	// 003 "task.spec").
	Spec map[string]any `json:"spec,omitempty"`
}

// Script is a task's script: block (python and postgres; NoETL
// noetl/core/script and noetl-tools PythonScript): the code (python) or SQL
// (postgres) is loaded from Source at run time instead of code/command.
type Script struct {
	// URI locates the script (a template): a file path for "file", a
	// gs://bucket/object URI for "gcs", a URL for "http" (unless Endpoint
	// is given); unused for "inline".
	URI string `json:"uri,omitempty"`
	// Source is script.source.type: "inline" (default when code is
	// given), "file", "http", "gcs" or "s3" (an S3-compatible object
	// store: AWS S3, or Cloud Storage's XML API with HMAC keys).
	Source string `json:"source"`
	// Code is script.source.code, the inline script.
	Code string `json:"code,omitempty"`
	// Endpoint is script.source.endpoint, the URL an http source GETs
	// (falls back to URI).
	Endpoint string `json:"endpoint,omitempty"`
	// Method is script.source.method for http (default GET).
	Method string `json:"method,omitempty"`
	// Auth is script.source.auth, a credential name for gcs/http/s3.
	Auth string `json:"auth,omitempty"`
	// Region is script.source.region, the region of an s3 source (default
	// the credential's, else us-east-1).
	Region string `json:"region,omitempty"`
	// TimeoutS is script.source.timeout, the fetch timeout in seconds (0 =
	// tool default).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Line is the 1-based line of the script block.
	Line int `json:"-"`
	// Path is the script's YAML path, e.g. "workflow[1].tool.script".
	Path string `json:"-"`
}

// Output is an output block (tool.output or step.output; NoETL ToolOutput
// and result_storage.md): where a result is stored, which fields stay inline
// for routing, and how results accumulate.
type Output struct {
	// Store is output.store (nil = kind auto with the defaults).
	Store *OutputStore `json:"store,omitempty"`
	// Select lists the fields kept inline when the result is stored by
	// reference (output.select, output.output_select and a tool's
	// output_select, in that order): {{ <step>.<As> }} stays readable while
	// the full value is behind <step>._ref.
	Select []OutputSelect `json:"select,omitempty"`
	// Accumulate is output.accumulate (nil = none).
	Accumulate *OutputAccumulate `json:"accumulate,omitempty"`
	// InlineMaxBytes is output.inline_max_bytes (or output.store's): the
	// largest result, in bytes of its JSON, kept inline; a larger one goes
	// to the store tier. nil = the engine's default (NoETL: 65536); 0 =
	// always by reference.
	InlineMaxBytes *int `json:"inline_max_bytes,omitempty"`
	// PreviewMaxBytes is output.preview_max_bytes (nil = default 1024): the
	// size of the preview kept with a reference.
	PreviewMaxBytes *int `json:"preview_max_bytes,omitempty"`
	// Scope is output.scope, the lifetime of a stored result: "step",
	// "execution" (default), "workflow" or "permanent".
	Scope string `json:"scope,omitempty"`
	// As is output.as, an extra name the result is also visible by.
	As string `json:"as,omitempty"`
	// Line is the 1-based line of the output block.
	Line int `json:"-"`
	// Path is the block's YAML path, e.g. "workflow[0].tool.output".
	Path string `json:"-"`
}

// Result tiers of this stack (OutputStore.Tier).
const (
	// TierAuto keeps a result inline up to InlineMaxBytes and stores a
	// larger one in the GCS results tier (NoETL result storage RFC).
	TierAuto = "auto"
	// TierInline keeps the result inline in the execution's state and
	// events, whatever its size (bounded by the engine's hard limits).
	TierInline = "inline"
	// TierGCS stores the result in the GCS results tier (Arrow Feather or
	// JSON objects under the results bucket) when it is larger than
	// InlineMaxBytes; with inline_max_bytes 0, always.
	TierGCS = "gcs"
)

// OutputStore is output.store (NoETL OutputStore). Kind is as written; Tier
// is where this stack keeps the result (StoreTiers maps the kinds; kinds
// with no tier here are rejected by Load).
type OutputStore struct {
	// Kind is the NoETL store kind as written: auto (default), memory,
	// eventlog, kv, disk, object, gcs (mapped), s3, db, duckdb (rejected).
	Kind string `json:"kind"`
	// Tier is TierAuto, TierInline or TierGCS (StoreTiers[Kind]).
	Tier string `json:"tier"`
	// Driver is output.store.driver, verbatim (not used by this stack).
	Driver string `json:"driver,omitempty"`
	// Bucket is output.store.bucket ("" = the results bucket).
	Bucket string `json:"bucket,omitempty"`
	// Prefix is output.store.prefix, a key prefix under the bucket.
	Prefix string `json:"prefix,omitempty"`
	// TTL is output.store.ttl as written, e.g. "2h", "1d", "forever"
	// (ParseTTL): how long after it is written the stored result may be
	// deleted, once its execution has ended (it never outlives the
	// execution's record).
	TTL string `json:"ttl,omitempty"`
	// Compression is the Feather buffer codec: none (default), lz4 or
	// zstd (gzip, NoETL's spelling, is read as zstd). JSON results are
	// stored uncompressed.
	Compression string `json:"compression,omitempty"`
	// Credential names the keychain/credential for the store.
	Credential string `json:"credential,omitempty"`
}

// OutputSelect is one selected field: Path in the result (dotted, with
// [i] indexes; a leading "$." is dropped) and the name As it is exposed
// under (default: the last segment of Path without its index).
type OutputSelect struct {
	// Path is the field's dotted path in the result, e.g. data.items[0].id.
	Path string `json:"path"`
	// As is the name the field stays readable under, e.g. {{ start.id }}.
	As string `json:"as"`
}

// OutputAccumulate is output.accumulate (NoETL OutputAccumulate): results
// of repeated runs of a task (retries, pagination jumps) combined without
// an explicit storage task.
type OutputAccumulate struct {
	// Enabled turns accumulation on (default false).
	Enabled bool `json:"enabled"`
	// Strategy is append (default), replace, merge or concat.
	Strategy string `json:"strategy"`
	// MergePath is the dotted path of the array concat extracts.
	MergePath string `json:"merge_path,omitempty"`
	// ManifestAs is the variable name the accumulated value is bound to.
	ManifestAs string `json:"manifest_as,omitempty"`
	// OnSuccess accumulates successful results (default true).
	OnSuccess bool `json:"on_success"`
	// OnError accumulates error responses (default false).
	OnError bool `json:"on_error"`
	// MaxItems bounds the accumulated items (0 = unbounded).
	MaxItems int `json:"max_items,omitempty"`
}

// Policy is an ordered list of rules; the first match wins (NoETL canonical v10 retry spec §2).
type Policy struct {
	// Rules in order; an Else rule matches anything.
	Rules []*Rule `json:"rules"`
}

// Rule is one policy rule. Else rules have Else=true and no When.
type Rule struct {
	// When is the guard template (empty for Else rules). Task rules read
	// the attempt's envelope as output (DSL v2) or outcome (v10): status,
	// data (outcome.result), ref, error, meta and the kind helpers http, pg,
	// py; admit rules read the step's scope.
	When string `json:"when,omitempty"`
	// Else marks the catch-all {else: {then: ...}} rule.
	Else bool `json:"else,omitempty"`
	// Then is the action taken when the rule matches.
	Then Then `json:"then"`
	// Legacy marks a rule normalised from a seed-001 step `retry:` block
	// whose When is the user's retry_when/stop_when kept verbatim: the
	// evaluator must also expose the legacy names status_code,
	// error, success, result, data and attempt (derived from outcome).
	Legacy bool `json:"legacy,omitempty"`
	// Line is the 1-based line of the rule (of the retry block if Legacy).
	Line int `json:"-"`
	// Path is the rule's YAML path, e.g.
	// "workflow[0].tool.spec.policy.rules[1]" (or "workflow[0].retry" for
	// rules normalised from a legacy retry block).
	Path string `json:"-"`
}

// Then is a rule's action (NoETL canonical v10 retry spec §2, the NoETL DSL spec "Task policy").
type Then struct {
	// Do is continue | retry | jump | break | fail (task policy); for admit
	// policies Allow is used instead.
	// Load defaults a missing do to "continue".
	Do       string  `json:"do,omitempty"`
	Attempts int     `json:"attempts,omitempty"`  // total attempts for retry (Load default 3)
	Backoff  string  `json:"backoff,omitempty"`   // none | linear | exponential ("" = none; NoETL's "fixed" is loaded as none)
	Delay    float64 `json:"delay,omitempty"`     // seconds
	MaxDelay float64 `json:"max_delay,omitempty"` // cap on a computed delay (0 = none)
	// Jitter applies full jitter to the delay (legacy retry `jitter: true`,
	// and the engine's default policy); exponential and linear backoffs
	// are always jittered (engine.JitteredBackoff).
	Jitter bool   `json:"jitter,omitempty"`
	To     string `json:"to,omitempty"` // jump target task label
	// Set is the rule's set (DSL v2 then.set, v10 then.set_iter and
	// then.set_ctx), applied in order when the rule matches (after the
	// task's own Set), before the action; templates read output/outcome.
	// ctx targets are rejected in parallel and cursor loops unless
	// loop.spec.allow_set_ctx.
	Set []Assignment `json:"set,omitempty"`
	// Allow is the admission decision (admit rules only).
	Allow *bool `json:"allow,omitempty"`
}

// Problem is one validation finding with its YAML line (1-based; 0 when
// unknown) and a path like "workflow[2].tool.kind". Errors and warnings
// share the type (see ValidationError, Playbook.Warnings and Lint).
type Problem struct {
	// Line is the 1-based line of the offending key (0 = unknown).
	Line int `json:"line"`
	// Column is the 1-based column (in runes) of a YAML syntax error (0 =
	// not given: the problem is about the key at Line).
	Column int `json:"column,omitempty"`
	// Excerpt is the source line a YAML syntax error is on (FormatProblems
	// shows it with a caret under Column).
	Excerpt string `json:"excerpt,omitempty"`
	// Path locates the node, e.g. "workflow[2].tool[0].kind" ("" = the
	// whole document, e.g. a YAML syntax error).
	Path string `json:"path"`
	// Message says what is wrong and, for legacy forms, the rewrite.
	Message string `json:"message"`
	// Severity is SeverityWarning or SeverityInfo for warnings (Load's
	// warnings and Lint's findings); empty for errors (ValidationError).
	Severity string `json:"severity,omitempty"`
	// Code names the kind of a Lint finding (one of the Lint* constants,
	// e.g. LintNoTerminal); empty for errors and for Load's deprecation
	// warnings.
	Code string `json:"code,omitempty"`
}

// ParseTTL reads output.store.ttl: a Go duration ("90m", "2h30m"), a
// number of days ("7d"), or "forever" / "" (0: no ttl, the result lives
// as long as its execution's record). Errors name the accepted forms.
func ParseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "forever", "none", "0":
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(d, 64); err == nil && n > 0 && n <= 36500 {
			return time.Duration(n * 24 * float64(time.Hour)), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%q is not a duration (want e.g. 90m, 2h, 7d or forever)", s)
}
