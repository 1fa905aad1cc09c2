package dsl

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file reads the step forms of older dialects: the legacy result
// block (loaded as output) and the step keys rejected with their
// canonical rewrite.

// legacyResult reads NoETL's legacy step `result:` block, which older
// fixtures give the keys of today's output block (output_select, store,
// ...: how the step's result is stored and which fields stay inline), as
// the step's output block, with a warning; nil (nothing reported) when the
// block has a key the output block does not know, which stays an error.
func (l *loader) legacyResult(e entry, path string) *Output {
	d := deref(e.v)
	if d == nil || d.Kind != yaml.MappingNode {
		return nil
	}
	fs := l.peekFields(d)
	if len(fs) == 0 {
		return nil
	}
	for _, f := range fs {
		if !oneOf(f.key, outputKeys) {
			return nil
		}
	}
	l.warnf(e.k, path, "step result: {%s} is NoETL's legacy spelling of the step's output block: loaded as output: {%s} (write it so)", strings.Join(keysOf(fs), ", "), strings.Join(keysOf(fs), ", "))
	return l.output(e.v, path)
}

// legacyStepKeys are step keys of older dialects, rejected with the
// canonical rewrite (NoETL DSL spec "Step", canonical step spec §13).
var legacyStepKeys = map[string]string{
	"when":    "step.when is not canonical: put the condition on the incoming arc (next.arcs[].when of the step that routes here), or gate the step with spec.policy.admit.rules",
	"eval":    "step.eval is not canonical (legacy eval is rejected): handle task outcomes with tool[].spec.policy.rules (when → then.do: continue|retry|jump|break|fail)",
	"expr":    "step.expr is not canonical: when is the only conditional keyword; route with next.arcs[].when or gate the step with spec.policy.admit.rules",
	"case":    "step.case is not canonical: route with next.arcs[].when (event.name is in scope, e.g. \"{{ event.name == 'step.failed' }}\") and handle task outcomes with tool[].spec.policy.rules",
	"sink":    "step.sink is not canonical (there is no special sink): add a storage task after the producing one, e.g. tool: [{name: fetch, kind: http, ...}, {name: store, kind: postgres, command: ...}]",
	"save":    "step.save is not canonical (there is no special sink): add a storage task after the producing one, e.g. tool: [{name: fetch, kind: http, ...}, {name: store, kind: postgres, command: ...}]",
	"type":    "step.type is not canonical: declare the action as a task, tool: {kind: <type>, ...}, and move its fields (code, url, command, ...) under tool",
	"name":    "step.name is not canonical: a step is named with step: <name>",
	"with":    "step.with is not canonical: use input (step input, or next.arcs[].set / args on the incoming arc)",
	"data":    "step.data is not canonical: use input (step input, or next.arcs[].set / args on the incoming arc)",
	"result":  "step.result is not canonical: a step's result is its tool's output (read it as {{ <step> }} or output.data); configure storage with output (step.output: {output_select: [...], store: {...}})",
	"outcome": "step.outcome is not canonical: the outcome is the output envelope of a task (output.status, output.data, ...), read in policy rules",
}
