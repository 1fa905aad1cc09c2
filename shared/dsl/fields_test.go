package dsl

import "testing"

// TestFieldReaderMessages pins the reports of the shared field readers
// (ident, nonNegativeInt, strField, choiceOf) in each block that reads through them:
// the same path and the whole message the blocks wrote before they shared
// the readers.
func TestFieldReaderMessages(t *testing.T) {
	out := func(o string) string {
		return hdr + "  - step: start\n    tool:\n      kind: noop\n      output: " + o + "\n"
	}
	task := func(tool string) string { return hdr + "  - step: start\n    tool: " + tool + "\n" }
	then := func(th string) string {
		return hdr + "  - step: start\n    tool:\n      kind: noop\n      spec:\n        policy:\n          rules:\n            - when: x\n              then: " + th + "\n"
	}
	for _, c := range []struct {
		name, src string
		line      int
		path, msg string
	}{
		{"output.scope", out("{scope: forever}"), 9, "workflow[0].tool.output.scope", `output.scope must be step, execution, workflow or permanent, got "forever"`},
		{"accumulate.strategy", out("{accumulate: {strategy: sum}}"), 9, "workflow[0].tool.output.accumulate.strategy", `accumulate.strategy must be append, replace, merge or concat, got "sum"`},
		{"output.as", out("{as: 1x}"), 9, "workflow[0].tool.output.as", `output.as "1x" must be an identifier`},
		{"output.preview_max_bytes", out("{preview_max_bytes: -2}"), 9, "workflow[0].tool.output.preview_max_bytes", "output.preview_max_bytes must be ≥ 0, got -2"},
		{"output.preview_max_bytes type", out("{preview_max_bytes: x}"), 9, "workflow[0].tool.output.preview_max_bytes", "output.preview_max_bytes must be an integer"},
		{"output.store.inline_max_bytes", out("{store: {inline_max_bytes: -3}}"), 9, "workflow[0].tool.output.store.inline_max_bytes", "output.store.inline_max_bytes must be ≥ 0, got -3"},
		{"accumulate.manifest_as", out("{accumulate: {manifest_as: a-b}}"), 9, "workflow[0].tool.output.accumulate.manifest_as", `accumulate.manifest_as "a-b" must be an identifier`},
		{"accumulate.max_items", out("{accumulate: {max_items: -1}}"), 9, "workflow[0].tool.output.accumulate.max_items", "accumulate.max_items must be ≥ 0, got -1"},
		{"script.source.region", task("{kind: python, script: {uri: x, source: {type: s3, region: [a]}}}"), 7, "workflow[0].tool.script.source.region", "script.source.region must be a string"},
		{"script.source.method", task("{kind: python, script: {uri: x, source: {type: http, method: {a: 1}}}}"), 7, "workflow[0].tool.script.source.method", "script.source.method must be a string"},
		{"then.to", then("{do: jump, to: [a]}"), 13, "workflow[0].tool.spec.policy.rules[0].then.to", "then.to must be a string"},
		{"then.backoff", then("{do: retry, backoff: {a: 1}}"), 13, "workflow[0].tool.spec.policy.rules[0].then.backoff", "then.backoff must be a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			find(t, loadErr(t, c.src).Problems, c.line, c.path, c.msg)
		})
	}
}
