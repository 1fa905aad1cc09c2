package engine

import (
	"maps"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

// Accumulation (output.accumulate, NoETL OutputAccumulate): the results of
// the repeated runs of one task in a unit (retries, pagination jumps) are
// combined into one value bound, as a pipeline variable, under
// AccumulateName, without an explicit storage task.

// AccumulateName is the variable an accumulation is bound to:
// manifest_as, else "<task>_accumulated".
func AccumulateName(task *dsl.Task) string {
	if a := task.Output; a != nil && a.Accumulate != nil && a.Accumulate.ManifestAs != "" {
		return a.Accumulate.ManifestAs
	}
	return task.Name + "_accumulated"
}

// Accumulate folds one attempt's outcome into acc (the value so far, nil
// at first) and reports whether it did: only when accumulation is enabled
// and the outcome's status is wanted (on_success, on_error). Strategies:
// append (default: a list of results), replace (the last result), merge
// (mappings merged, later keys win), concat (the lists found at
// merge_path, a dotted path in each result, concatenated; the result
// itself when it is a list). max_items > 0 keeps at most that many items
// (append, concat). acc is never modified.
func Accumulate(spec *dsl.OutputAccumulate, acc any, out types.Outcome) (any, bool) {
	if spec == nil || !spec.Enabled {
		return acc, false
	}
	ok := out.Status == types.StatusOK
	if (ok && !spec.OnSuccess) || (!ok && !spec.OnError) {
		return acc, false
	}
	v := out.Result
	if !ok && v == nil && out.Error != nil {
		v = map[string]any{"status": "error", "error": map[string]any{"kind": string(out.Error.Kind), "message": out.Error.Message}}
	}
	capped := func(l []any) []any {
		if spec.MaxItems > 0 && len(l) > spec.MaxItems {
			return l[:spec.MaxItems]
		}
		return l
	}
	prev, _ := acc.([]any)
	switch strings.ToLower(spec.Strategy) {
	case "replace":
		return v, true
	case "merge":
		m := map[string]any{}
		if pm, ok := acc.(map[string]any); ok {
			m = maps.Clone(pm)
		}
		if vm, ok := v.(map[string]any); ok {
			for k, x := range vm {
				m[k] = x
			}
		}
		return m, true
	case "concat":
		items := v
		if spec.MergePath != "" {
			items = pathIn(v, spec.MergePath)
		}
		l := append([]any{}, prev...)
		if xs, ok := items.([]any); ok {
			l = append(l, xs...)
		} else if items != nil {
			l = append(l, items)
		}
		return capped(l), true
	default: // append
		return capped(append(append([]any{}, prev...), v)), true
	}
}

// pathIn reads a dotted path of mapping keys inside v (nil when absent).
func pathIn(v any, path string) any {
	for _, k := range strings.Split(strings.TrimPrefix(path, "$."), ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
