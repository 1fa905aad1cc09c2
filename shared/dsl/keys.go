package dsl

import "sort"

// DocumentKeys returns, for the mappings of a playbook whose keys the
// loader checks, the keys it reads there (sorted copies), by the name of
// the mapping: "root" (with the ignored tracing and spec), "step" (with
// the legacy retry and result it maps), "output", "output.store",
// "output.accumulate", "loop.spec.frame", "then" (a task policy rule's
// action), "retry" (the legacy block, on_error and on_success included)
// and "executor.spec" (the keys it parses; others are spec defaults). The
// JSON Schema's tests (shared/dsl/schema) hold its types to these lists,
// so a key added here without the schema fails them.
func DocumentKeys() map[string][]string {
	with := func(keys []string, more ...string) []string {
		out := append(append([]string(nil), keys...), more...)
		sort.Strings(out)
		return out
	}
	return map[string][]string{
		"root":              with(rootKeys, sortedKeys(ignoredRootKeys)...),
		"step":              with(stepKeys, "retry", "result", "vars"),
		"output":            with(outputKeys),
		"output.store":      with(storeKeys),
		"output.accumulate": with(accumulateKeys),
		"loop.spec.frame":   with(frameKeys),
		"then":              with(thenKeys),
		"retry":             with(legacyRetryKeys),
		"executor.spec":     with(executorSpecKeys),
	}
}
