// Package dsl loads, normalises and validates NoETL playbooks
// (apiVersion noetl.io/v2, kind Playbook) into the model below
// (../shared/DSL.md is the contract; seed 003 gives task policy).
//
// The model is the normalised form: every step has a labelled task list,
// `next` is always a list of arcs with a mode, policy rules are parsed, and
// every node remembers its YAML line so later errors can point at it.
// Template strings are kept verbatim (rendering happens in shared/template at
// run time).
package dsl

// Playbook is a validated, normalised playbook.
type Playbook struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   Metadata       `json:"metadata"`
	Workload   map[string]any `json:"workload,omitempty"`
	Keychain   []any          `json:"keychain,omitempty"`
	Executor   map[string]any `json:"executor,omitempty"`
	// Workbook holds named task templates (kind: workbook calls them).
	Workbook map[string]*Task `json:"workbook,omitempty"`
	Workflow []*Step          `json:"workflow"`
	// Warnings are non-fatal findings (deprecated forms that were normalised).
	Warnings []Problem `json:"-"`
	// Source is the original YAML text.
	Source string `json:"-"`

	byName map[string]*Step
}

// Metadata is the playbook's metadata block.
type Metadata struct {
	Name        string `json:"name"`
	Path        string `json:"path,omitempty"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
}

// Step returns the step with the given name, or nil.
func (p *Playbook) Step(name string) *Step {
	if p.byName == nil {
		p.byName = map[string]*Step{}
		for _, s := range p.Workflow {
			p.byName[s.Name] = s
		}
	}
	return p.byName[name]
}

// Step is one Petri-net transition of the workflow.
type Step struct {
	Name string `json:"step"`
	Desc string `json:"desc,omitempty"`
	Line int    `json:"-"`
	// Admit is step.spec.policy.admit (nil = always admitted).
	Admit *Policy `json:"admit,omitempty"`
	// TimeoutS is step.spec.policy.lifecycle.timeout_s (0 = engine default).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// FailureMode is step.spec.policy.failure.mode: "fail_fast" (default) or
	// "best_effort" (a loop keeps going and records failed iterations).
	FailureMode string `json:"failure_mode,omitempty"`
	Loop        *Loop  `json:"loop,omitempty"`
	// Args is the dialect's step-level args, merged under each task's args.
	Args map[string]any `json:"args,omitempty"`
	// Tasks is the normalised pipeline (may be empty for a routing-only step).
	Tasks []*Task `json:"tasks,omitempty"`
	// SetCtx is the dialect's step-level ctx patch applied after success.
	SetCtx map[string]any `json:"set_ctx,omitempty"`
	// Next holds the outgoing arcs; Mode is "exclusive" (default) or "inclusive".
	Next *Next `json:"next,omitempty"`
}

// Loop is a step's loop block.
type Loop struct {
	In       any    `json:"in"` // template string or literal list
	Iterator string `json:"iterator"`
	// Mode is "sequential" (default) or "parallel".
	Mode string `json:"mode"`
	// MaxInFlight bounds concurrently running iterations (parallel mode;
	// sequential is always 1). 0 means the engine default.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// AllowSetCtx is the opt-in for set_ctx on a parallel loop
	// (loop.spec.allow_set_ctx: true).
	AllowSetCtx bool `json:"allow_set_ctx,omitempty"`
	Line        int  `json:"-"`
}

// Next is a step's routing block.
type Next struct {
	Mode string `json:"mode"` // "exclusive" | "inclusive"
	Arcs []*Arc `json:"arcs"`
}

// Arc is one outgoing edge. When is a template (empty = always). On names
// the boundary events the arc listens to; empty means step.done and loop.done
// (a success), and legacy/explicit arcs may name "step.failed".
type Arc struct {
	Step string         `json:"step"`
	When string         `json:"when,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	Line int            `json:"-"`
}

// Task is one labelled entry of a step pipeline.
type Task struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // noop | http | python | postgres | playbook | workbook
	Line int    `json:"-"`
	// Args are the task's args (templated values), before step args merge.
	Args map[string]any `json:"args,omitempty"`
	// Config holds every other kind-specific field verbatim (url, method,
	// params, headers, body, code, libs, command, auth, connection, path, ...).
	Config map[string]any `json:"config,omitempty"`
	// Policy is task.spec.policy (nil = default: ok→continue, error→fail).
	Policy *Policy `json:"policy,omitempty"`
	// TimeoutS is task.spec.timeout / timeout (seconds; 0 = tool default).
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// Policy is an ordered list of rules; the first match wins (seed 003 §2).
type Policy struct {
	Rules []*Rule `json:"rules"`
}

// Rule is one policy rule. Else rules have Else=true and no When.
type Rule struct {
	When string `json:"when,omitempty"`
	Else bool   `json:"else,omitempty"`
	Then Then   `json:"then"`
	Line int    `json:"-"`
}

// Then is a rule's action (seed 003 §2, DSL.md "Task policy").
type Then struct {
	// Do is continue | retry | jump | break | fail (task policy); for admit
	// policies Allow is used instead.
	Do       string         `json:"do,omitempty"`
	Attempts int            `json:"attempts,omitempty"` // total attempts for retry
	Backoff  string         `json:"backoff,omitempty"`  // none | linear | exponential
	Delay    float64        `json:"delay,omitempty"`    // seconds
	MaxDelay float64        `json:"max_delay,omitempty"`
	To       string         `json:"to,omitempty"` // jump target task label
	SetIter  map[string]any `json:"set_iter,omitempty"`
	SetCtx   map[string]any `json:"set_ctx,omitempty"`
	Allow    *bool          `json:"allow,omitempty"`
}

// Problem is one validation finding with its YAML line (1-based; 0 when
// unknown) and a path like "workflow[2].tool.kind".
type Problem struct {
	Line    int    `json:"line"`
	Path    string `json:"path"`
	Message string `json:"message"`
}
