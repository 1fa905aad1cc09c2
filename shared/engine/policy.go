package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/template"
	"github.com/noetl/gcpengine/shared/types"
)

// Task policy (NoETL canonical v10 retry spec §2, the NoETL DSL spec "Task policy"): after every task
// attempt the first matching rule of task.spec.policy decides what the
// pipeline does. These functions are pure: the worker runs the tool and
// gives them the outcome and the template scope; they decide.

// DefaultRetryAttempts is the total attempts of a `do: retry` without
// `attempts` (NoETL DSL spec "Task policy").
const DefaultRetryAttempts = 3

// Decision is the policy's verdict on one task attempt.
type Decision struct {
	// Action is what the pipeline does next.
	Action types.Action
	// Rule is the index of the matched rule, -1 for the default decision
	// (no policy, or no rule matched).
	Rule int
	// Then is the matched rule's action block (patches, retry shape, jump
	// target); for the default decision of a task without a policy, the
	// deployment's retry budget (Options.DecideTask), else zero.
	Then dsl.Then
	// Default says why a task without a policy got its decision
	// (DefaultRetryable, DefaultFatal, DefaultIgnored; "" for a rule's
	// decision and an ok outcome).
	Default string
}

// DecideTask evaluates task's policy on out (NoETL DSL spec "Task policy"): the
// first matching rule wins; without a policy ok→continue and error→fail; a
// policy where nothing matched and without else: continue. sc is the task
// scope with outcome/output, _prev, _task and _attempt bound (see
// PolicyExtra). A `when` that cannot be evaluated is an error: the caller
// fails the task with it (never guesses).
func DecideTask(task *dsl.Task, out types.Outcome, sc template.Scope) (Decision, error) {
	return Options{}.decideRules(task, out, sc)
}

// decideRules is DecideTask with the `when` budget of o.
func (o Options) decideRules(task *dsl.Task, out types.Outcome, sc template.Scope) (Decision, error) {
	if task.Policy == nil || len(task.Policy.Rules) == 0 {
		if out.Status == types.StatusOK {
			return Decision{Action: types.ActContinue, Rule: -1}, nil
		}
		return Decision{Action: types.ActFail, Rule: -1}, nil
	}
	for i, r := range task.Policy.Rules {
		if !r.Else {
			hit, err := template.TruthyWithin(r.When, sc, o.WhenTimeout)
			if err != nil {
				return Decision{}, fmt.Errorf("task %s policy rule %d: %w", task.Name, i, err)
			}
			if !hit {
				continue
			}
		}
		d := Decision{Action: types.Action(r.Then.Do), Rule: i, Then: r.Then}
		if d.Action == "" {
			d.Action = types.ActContinue
		}
		return d, nil
	}
	return Decision{Action: types.ActContinue, Rule: -1}, nil
}

// HasLegacyRules reports whether a task's policy was normalised from a
// NoETL event-driven retry design retry block, whose conditions read the legacy names (see
// LegacyNames).
func HasLegacyRules(task *dsl.Task) bool {
	if task.Policy == nil {
		return false
	}
	for _, r := range task.Policy.Rules {
		if r.Legacy {
			return true
		}
	}
	return false
}

// PolicyExtra returns the names a policy rule sees besides the task scope
// (NoETL DSL spec "Task policy"): outcome (and its DSL v2 name output, with
// output.data = the result, for http the parsed body: OutputData), _task
// (results of the unit's finished tasks by label), _attempt, and _prev
// when the pipeline has one. legacy adds NoETL event-driven retry design's names (LegacyNames).
func PolicyExtra(out types.Outcome, c Cursor, legacy bool) map[string]any {
	om := out.ToMap()
	output := map[string]any{}
	for k, v := range om {
		output[k] = v
	}
	output["data"] = OutputData(out.HTTP != nil, out.Result) // h-conf: http output.data is the body (views.go)
	if types.IsResultRef(out.Result) {
		// DSL v2 output.ref: the result-tier reference of a stored
		// result ({uri, key, bucket, ...}, NoETL result storage RFC §4.2); undefined for an
		// inline result.
		output["ref"] = out.Result.(map[string]any)[types.ResultRefKey]
	}
	m := map[string]any{
		"outcome":  om,
		"output":   output,
		"_task":    c.TaskResults,
		"_attempt": c.Attempt,
	}
	if c.HasPrev {
		m["_prev"] = c.Prev
	}
	if legacy {
		LegacyNames(m, out, c.Attempt)
	}
	return m
}

// SetExtra is PolicyExtra for a composite tool item's own set (DSL v2
// tool[].set, applied after a successful attempt): there `output` is the
// task's data, as NoETL's task sequence evaluates a tool item's set
// (noetl-tools task_sequence.rs: the set context's output is the tool's
// result data) — output.count is the result's count, output.rows a
// postgres result's rows, output.data a result's own data field — with
// the envelope's keys (status, data, error, meta, ref and the kind helpers
// http, pg, py) filling the names the result does not have (so
// output.data of a result without a data field is the result itself, and
// output.status is "ok" unless the result has a status). A result that is
// not a mapping leaves output the envelope. An http task keeps the
// envelope's keys first (its output.data is the body, whose own data
// field is output.data.data). Policy rules keep the envelope
// (PolicyExtra). DSL notes: "output in a tool item's set".
func SetExtra(out types.Outcome, c Cursor, legacy bool) map[string]any {
	m := PolicyExtra(out, c, legacy)
	env, _ := m["output"].(map[string]any)
	data, ok := env["data"].(map[string]any)
	if !ok {
		return m
	}
	o := make(map[string]any, len(data)+len(env))
	if out.HTTP != nil {
		// An http task's data is NoETL's response envelope around the
		// body (OutputData: output.data is the body, whose own data field
		// reads as output.data.data), as in both NoETL runtimes: the
		// envelope's keys win.
		for k, v := range data {
			o[k] = v
		}
		for k, v := range env {
			o[k] = v
		}
		m["output"] = o
		return m
	}
	for k, v := range env {
		o[k] = v
	}
	for k, v := range data {
		o[k] = v
	}
	m["output"] = o
	return m
}

// LegacyNames adds the names NoETL event-driven retry design's retry_when / stop_when expressions
// use (status_code, error, success, result, data, attempt), derived from
// the outcome.
func LegacyNames(m map[string]any, out types.Outcome, attempt int) {
	m["success"] = out.Status == types.StatusOK
	m["result"] = out.Result
	m["attempt"] = attempt
	m["error"] = nil
	if out.Error != nil {
		m["error"] = out.Error.Message
	}
	m["status_code"] = nil
	if out.HTTP != nil {
		m["status_code"] = out.HTTP.Status
	}
	if r, ok := out.Result.(map[string]any); ok {
		m["data"] = r["data"]
	}
}

// Backoff returns the delay before attempt+1 of a `do: retry` (NoETL DSL spec
// "Task policy"): none = delay, linear = delay*attempt, exponential =
// delay*2^(attempt-1), capped by max_delay when set. Seconds in the
// playbook, a Duration here.
func Backoff(t dsl.Then, attempt int) time.Duration {
	d := t.Delay
	switch t.Backoff {
	case "linear":
		d = t.Delay * float64(attempt)
	case "exponential":
		d = t.Delay * math.Pow(2, float64(attempt-1))
	}
	if t.MaxDelay > 0 && d > t.MaxDelay {
		d = t.MaxDelay
	}
	if d <= 0 {
		return 0
	}
	return time.Duration(d * float64(time.Second))
}

// EvalAdmit evaluates an admission policy (NoETL DSL spec "Step": spec.policy.
// admit): the first matching rule's allow decides; without a match the
// step is admitted. It returns the decision and the matched rule (-1).
func EvalAdmit(p *dsl.Policy, sc template.Scope) (bool, int, error) {
	return Options{}.EvalAdmit(p, sc)
}

// EvalAdmit is the package's EvalAdmit with the `when` budget of o.
func (o Options) EvalAdmit(p *dsl.Policy, sc template.Scope) (bool, int, error) {
	for i, r := range p.Rules {
		hit := r.Else
		if !r.Else {
			v, err := template.TruthyWithin(r.When, sc, o.WhenTimeout)
			if err != nil {
				return false, i, err
			}
			hit = v
		}
		if hit {
			if r.Then.Allow == nil {
				return true, i, nil
			}
			return *r.Then.Allow, i, nil
		}
	}
	return true, -1, nil
}
