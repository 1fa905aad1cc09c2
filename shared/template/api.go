// Package template renders the playbook's Jinja2 templates through gonja v2
// (../shared/DSL.md "Templates").
package template

// Scope is the set of names visible to a template: workload, ctx, iter,
// args, execution_id, keychain, event, outcome, _prev, _task, _attempt, plus
// the dialect's bare names (workload keys, step results by step name, the
// loop iterator and loop_index). Build one with NewScope.
type Scope map[string]any
