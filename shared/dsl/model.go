// Package dsl loads, normalises and validates NoETL playbooks
// (apiVersion noetl.io/v2, kind Playbook) into the model below
// (../shared/DSL.md is the contract; seed 003 gives task policy).
//
// The model is the normalised form: every step has a labelled task list,
// `next` is always a list of arcs with a mode, policy rules are parsed, and
// every node remembers its YAML line so later errors can point at it.
// Template strings are kept verbatim (rendering happens in shared/template at
// run time).
//
// Entry points: Load / LoadFile parse YAML into a *Playbook (or return a
// *ValidationError listing every problem with its line); Playbook.Validate
// re-checks a model built or edited in Go; Lint analyses a loaded playbook
// as a Petri net (unreachable steps, livelocks, unconditional cycles,
// trapped jump cycles, missing default arcs, fan-in after an inclusive
// fan-out) and returns warnings with lines (lint.go). See load.go for the
// accepted shapes and the legacy forms that are normalised (with a
// warning) or rejected (with the canonical rewrite in the message), and
// pagination.go for the rewrite of seed 002's retry.on_success.
package dsl

// Playbook is a validated, normalised playbook (DSL.md "Document").
type Playbook struct {
	// APIVersion is always "noetl.io/v2" after Load (v1 is normalised).
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
	// Executor holds the executor defaults verbatim (incl. executor.spec).
	Executor map[string]any `json:"executor,omitempty"`
	// Workbook holds named task templates (kind: workbook calls them).
	Workbook map[string]*Task `json:"workbook,omitempty"`
	// Workflow is the ordered list of steps; the entry step is "start".
	Workflow []*Step `json:"workflow"`
	// Warnings are non-fatal findings (deprecated forms that were normalised).
	Warnings []Problem `json:"-"`
	// Source is the original YAML text.
	Source string `json:"-"`

	byName map[string]*Step
	// lines maps a YAML path ("workflow[2].tool[0].url") to its 1-based line.
	lines map[string]int
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
}

// LineOf returns the 1-based source line of a YAML path such as
// "workflow[2].tool[0].url" (the line of its key), falling back to the
// nearest enclosing node that exists; 0 when unknown (e.g. a playbook built
// in Go). Use it to point run-time template errors at the source.
func (p *Playbook) LineOf(path string) int {
	return lineIn(p.lines, path)
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

// Step is one Petri-net transition of the workflow (DSL.md "Step").
type Step struct {
	// Name is the unique step name (an identifier); "start" is the entry.
	Name string `json:"step"`
	// Desc is free text.
	Desc string `json:"desc,omitempty"`
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
	// Args is the dialect's step-level args, merged under each task's args.
	Args map[string]any `json:"args,omitempty"`
	// Tasks is the normalised pipeline (may be empty for a routing-only step).
	Tasks []*Task `json:"tasks,omitempty"`
	// SetCtx is the dialect's step-level ctx patch applied after success.
	SetCtx map[string]any `json:"set_ctx,omitempty"`
	// Next holds the outgoing arcs; Mode is "exclusive" (default) or "inclusive".
	// Nil when the step has no next (it ends its branch).
	Next *Next `json:"next,omitempty"`
	// Spec holds step.spec keys other than policy, verbatim (spec layering:
	// effective task spec = merge(executor.spec, step.spec, loop.spec,
	// task.spec), inner wins).
	Spec map[string]any `json:"spec,omitempty"`
}

// Loop is a step's loop block (DSL.md "Loops").
type Loop struct {
	// In is a template string rendering to a list, or a literal list.
	In any `json:"in"`
	// Iterator is the name each element is bound to (iter.<iterator>, and
	// bare in the dialect).
	Iterator string `json:"iterator"`
	// Mode is "sequential" (default) or "parallel".
	Mode string `json:"mode"`
	// MaxInFlight bounds concurrently running iterations (parallel mode;
	// sequential is always 1). 0 means the engine default.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// AllowSetCtx is the opt-in for set_ctx on a parallel loop
	// (loop.spec.allow_set_ctx: true).
	AllowSetCtx bool `json:"allow_set_ctx,omitempty"`
	// Spec holds loop.spec keys other than mode, max_in_flight and
	// allow_set_ctx, verbatim (e.g. policy.exec).
	Spec map[string]any `json:"spec,omitempty"`
	// Line is the 1-based line of the loop mapping.
	Line int `json:"-"`
	// Path is the loop's YAML path, e.g. "workflow[1].loop".
	Path string `json:"-"`
}

// Next is a step's routing block (next: {spec: {mode}, arcs: [...]}; legacy
// list/string forms are normalised into it).
type Next struct {
	// Mode is "exclusive" (first matching arc) or "inclusive" (all).
	Mode string `json:"mode"`
	// Arcs are evaluated in order on the step's boundary event.
	Arcs []*Arc `json:"arcs"`
}

// Arc is one outgoing edge (DSL.md "Step": next.arcs[]). When is a template
// (empty = always). Args become the target step's args (the token).
type Arc struct {
	// Step is the target step's name.
	Step string `json:"step"`
	// When is the guard template (empty = always).
	When string `json:"when,omitempty"`
	// On names the boundary event the arc listens to: "" (default: the
	// step's success, i.e. step.done, or loop.done for a loop step),
	// "step.done", "step.failed", "loop.done" or "any" (every boundary
	// event; filter with event.name in When).
	On string `json:"on,omitempty"`
	// Args become the target step's args (templated, rendered at routing).
	Args map[string]any `json:"args,omitempty"`
	// Line is the 1-based line of the arc.
	Line int `json:"-"`
	// Path is the arc's YAML path, e.g. "workflow[0].next.arcs[1]".
	Path string `json:"-"`
}

// Task is one labelled entry of a step pipeline (DSL.md "Tasks"), or one
// workbook entry. Name is the label: the list item's name, the label key of
// a `- label: {kind: ...}` item, "<step>_task" for a single mapping, or
// "task_<i>" for an unnamed list item.
type Task struct {
	// Name is the task's label, unique within its step (jump targets,
	// events, {{ <label> }} results).
	Name string `json:"name"`
	// Kind is noop | http | python | postgres | playbook | workbook.
	Kind string `json:"kind"`
	// Line is the 1-based line of the task's mapping.
	Line int `json:"-"`
	// Path is the task's YAML path, e.g. "workflow[2].tool[0]",
	// "workflow[2].tool" (single mapping) or "workbook.fetch".
	Path string `json:"-"`
	// Workbook is, for kind workbook, the name of the root workbook entry
	// to call (also kept as Config["name"]).
	Workbook string `json:"workbook,omitempty"`
	// Args are the task's args (templated values), before step args merge.
	Args map[string]any `json:"args,omitempty"`
	// Config holds every other kind-specific field verbatim (url, method,
	// params, headers, body, code, libs, command, auth, connection, path, ...).
	Config map[string]any `json:"config,omitempty"`
	// Policy is task.spec.policy (nil = default: ok→continue, error→fail).
	Policy *Policy `json:"policy,omitempty"`
	// TimeoutS is task.spec.timeout / timeout (seconds; 0 = tool default).
	// A mapping timeout such as {connect: 5, read: 15} is kept verbatim in
	// Spec["timeout"] (task.spec.timeout) or Config["timeout"] (timeout).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Spec holds task.spec keys other than policy and a numeric timeout,
	// verbatim (tool-internal knobs, seed 003 "task.spec").
	Spec map[string]any `json:"spec,omitempty"`
}

// Policy is an ordered list of rules; the first match wins (seed 003 §2).
type Policy struct {
	// Rules in order; an Else rule matches anything.
	Rules []*Rule `json:"rules"`
}

// Rule is one policy rule. Else rules have Else=true and no When.
type Rule struct {
	// When is the guard template (empty for Else rules).
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

// Then is a rule's action (seed 003 §2, DSL.md "Task policy").
type Then struct {
	// Do is continue | retry | jump | break | fail (task policy); for admit
	// policies Allow is used instead.
	// Load defaults a missing do to "continue".
	Do       string  `json:"do,omitempty"`
	Attempts int     `json:"attempts,omitempty"`  // total attempts for retry (Load default 3)
	Backoff  string  `json:"backoff,omitempty"`   // none | linear | exponential ("" = none)
	Delay    float64 `json:"delay,omitempty"`     // seconds
	MaxDelay float64 `json:"max_delay,omitempty"` // cap on a computed delay (0 = none)
	To       string  `json:"to,omitempty"`        // jump target task label
	// SetIter patches the iteration-local iter state (always safe).
	SetIter map[string]any `json:"set_iter,omitempty"`
	// SetCtx patches the execution ctx (rejected in parallel loops unless
	// loop.spec.allow_set_ctx).
	SetCtx map[string]any `json:"set_ctx,omitempty"`
	// Allow is the admission decision (admit rules only).
	Allow *bool `json:"allow,omitempty"`
}

// Problem is one validation finding with its YAML line (1-based; 0 when
// unknown) and a path like "workflow[2].tool.kind". Errors and warnings
// share the type (see ValidationError, Playbook.Warnings and Lint).
type Problem struct {
	// Line is the 1-based line of the offending key (0 = unknown).
	Line int `json:"line"`
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
