package engine

import (
	"maps"
	"strings"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/types"
)

// Step-result views: how templates see a finished step's result by the
// step's name (NoETL DSL spec "Templates": `{{ fetch_page.data }}`), in the
// shapes NoETL's playbooks read (README "Running NoETL v2 playbooks"). The
// state, the events and the API keep the result as the step produced it;
// only the template scope sees the view. The rules, in order:
//
//  1. A result stored in the results tier (a reference, NoETL result storage RFC) is its
//     full value when the caller resolved it (the worker does), else the
//     reference map with its selected fields (output.select) at the top
//     level (the control plane does not load payloads). Either way the
//     view has `_ref`: the reference itself (NoETL DSL spec "DSL v2 names": a
//     reference is read back explicitly, e.g. by the artifact kind), and
//     `_store`: the name of NoETL's tier for it (StoreName).
//  2. A loop step's result {results: [...]} also reads as `data` (the list
//     of iteration results: `{{ process_users.data }}`).
//  3. An http result {data, status_code, headers, ...} also reads as
//     `body` (the parsed body, NoETL's Rust http tool's name:
//     `{{ fetch_page }}` is {status_code, headers, body}).
//  4. A duckdb query result {rows, columns, row_count, ...} reads as its
//     rows (a list of row mappings: duckdb_test reads `{{ start }}` as the
//     list of users).
//  5. Any other mapping without a `data` key also reads as `data`: the
//     result itself (NoETL's envelope convention: `{{ step.data }}` is the
//     payload, e.g. `{{ run_python_from_file.data }}`).
//
// The kind of a step's result is its last task's (a workbook task: the
// workbook entry's); a loop step is rule 2 whatever its tasks. A step
// whose output block has `as` is also visible by that name.

// RefView is the view key of a stored result's reference (rule 1).
const RefView = "_ref"

// StoreView is the view key of a stored result's tier name (rule 1,
// StoreName).
const StoreView = "_store"

// kvMaxBytes is the size below which NoETL's auto tier picks its KV store
// (noetl/worker/result_handler.py _select_tier: < 1 MiB → kv, else disk).
const kvMaxBytes = 1 << 20

// StoreName is the `_store` of a stored result's view: the name NoETL's
// result handler gives the tier it stored the result in
// (noetl/worker/result_handler.py: `_store` = the tier's value) — the
// output.store kind the step (else its last task) asks for (kv, disk,
// gcs; object is NoETL's former name of disk), and for auto NoETL's size
// rule: kv below 1 MiB, disk above. Here every stored result is in the
// GCS results tier whatever the name says; size is the reference's
// object size in bytes.
func StoreName(pb *dsl.Playbook, step *dsl.Step, ref map[string]any) string {
	kind := ""
	if o := outputOf(step); o != nil && o.Store != nil {
		kind = o.Store.Kind
	}
	switch kind {
	case "object":
		return "disk"
	case "kv", "disk", "gcs":
		return kind
	}
	inner, _ := ref[types.ResultRefKey].(map[string]any)
	if n, ok := toInt64(inner["bytes"]); ok && n >= kvMaxBytes {
		return "disk"
	}
	return "kv"
}

// outputOf is the output block that applies to a step's result: the
// step's, else its last task's.
func outputOf(step *dsl.Step) *dsl.Output {
	if step == nil {
		return nil
	}
	if step.Output != nil {
		return step.Output
	}
	if n := len(step.Tasks); n > 0 && step.Tasks[n-1] != nil {
		return step.Tasks[n-1].Output
	}
	return nil
}

// toInt64 reads a JSON number (int, int64, float64).
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		return int64(x), true
	}
	return 0, false
}

// SelectedKey holds, inside a result reference map, the fields
// output.select kept inline ({as: value}); see the worker's result store.
const SelectedKey = "selected"

// ResultViews returns the template views of raw (step name → result, the
// state's Results) following the rules above. resolved holds, for the
// steps whose result is a reference, the loaded value (nil or a missing
// key: not loaded). raw is never modified; unchanged results are shared.
func ResultViews(pb *dsl.Playbook, raw, resolved map[string]any) map[string]any {
	if len(raw) == 0 {
		return raw
	}
	out := make(map[string]any, len(raw))
	for name, v := range raw {
		var step *dsl.Step
		if pb != nil {
			step = pb.Step(name)
		}
		full, isFull := resolved[name]
		out[name] = ResultView(pb, step, v, full, isFull)
	}
	// output.as: an extra name the result is also visible by (never
	// shadowing a step's own result).
	for name := range raw {
		if pb == nil {
			break
		}
		if step := pb.Step(name); step != nil && step.Output != nil && step.Output.As != "" {
			if _, taken := raw[step.Output.As]; !taken {
				out[step.Output.As] = out[name]
			}
		}
	}
	return out
}

// ResultView is the view of one step's result v (see ResultViews); full is
// the loaded value of a reference when loaded is true.
func ResultView(pb *dsl.Playbook, step *dsl.Step, v, full any, loaded bool) any {
	if types.IsResultRef(v) {
		ref := v.(map[string]any)
		base := full
		if !loaded {
			m := maps.Clone(ref)
			if sel, ok := ref[SelectedKey].(map[string]any); ok {
				for k, x := range sel {
					if _, taken := m[k]; !taken {
						m[k] = x
					}
				}
			}
			base = m
		}
		view := shapeView(pb, step, base)
		if m, ok := view.(map[string]any); ok {
			_, ownRef := m[RefView]
			_, ownStore := m[StoreView]
			if !ownRef || !ownStore {
				m = maps.Clone(m) // never write into a shared result
			}
			if !ownRef {
				m[RefView] = ref
			}
			if !ownStore {
				m[StoreView] = StoreName(pb, step, ref)
			}
			return m
		}
		return view
	}
	return shapeView(pb, step, v)
}

// shapeView applies rules 2-5 to a (loaded) result.
func shapeView(pb *dsl.Playbook, step *dsl.Step, v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if step != nil && step.Loop != nil {
		if res, ok := m["results"].([]any); ok {
			if _, has := m["data"]; !has {
				c := maps.Clone(m)
				c["data"] = res
				return c
			}
		}
		return m
	}
	switch resultKind(pb, step) {
	case "http":
		if _, hasStatus := m["status_code"]; hasStatus {
			if _, has := m["body"]; !has {
				if d, has := m["data"]; has {
					c := maps.Clone(m)
					c["body"] = d
					return c
				}
			}
		}
	case "duckdb":
		if rows, ok := m["rows"].([]any); ok {
			return rows
		}
	}
	if _, has := m["data"]; !has {
		c := maps.Clone(m)
		c["data"] = m
		return c
	}
	return m
}

// resultKind is the kind of the task whose result a step produces: its
// last task's kind, a workbook task's entry kind ("" when unknown).
func resultKind(pb *dsl.Playbook, step *dsl.Step) string {
	if step == nil || len(step.Tasks) == 0 {
		return ""
	}
	t := step.Tasks[len(step.Tasks)-1]
	if t.Kind == "workbook" && pb != nil {
		name := t.Workbook
		if name == "" {
			name, _ = t.Config["name"].(string)
		}
		if wt := pb.Workbook[name]; wt != nil {
			return wt.Kind
		}
	}
	return t.Kind
}

// RefTarget is the value a set target receives (NoETL DSL spec "DSL v2 names": a
// target whose name ends in `_ref` receives a reference object, not
// hydrated data): for such a key, a view carrying `_ref` yields the
// reference; every other value is returned unchanged.
func RefTarget(key string, v any) any {
	if !strings.HasSuffix(key, RefView) {
		return v
	}
	if m, ok := v.(map[string]any); ok {
		if r, ok := m[RefView]; ok && types.IsResultRef(r) {
			return r
		}
	}
	return v
}

// resultViews is the transition's view of the finished steps' results
// (control plane: references stay unloaded).
func (t *transition) resultViews() map[string]any {
	return ResultViews(t.e.PB, t.st.Results, nil)
}

// OutputData is the DSL v2 `output.data` of a task outcome or a step's
// boundary (README "Running NoETL v2 playbooks": output.data is the tool's
// data). For an http result {data, status_code, headers, url, elapsed_ms}
// whose parsed body is a mapping it is that body (NoETL's pipelines read
// output.data.paging, output.data.meta of the JSON body) with NoETL's
// response envelope filling the keys the body does not have: status_code,
// headers, url, elapsed (seconds) and data (the body itself) — NoETL's
// http tool returns {status_code, headers, url, elapsed, data: body} as
// the task's data (noetl/tools/http/response.py), so other playbooks read
// output.data.status_code and output.data.data.<field>. The body's own keys
// win: a body with a data key keeps it. A body that is not a mapping is
// output.data as it is. For every other kind it is the result itself. The
// v10 names (outcome.result, {{ <step> }}) keep the whole http result.
func OutputData(isHTTP bool, result any) any {
	if !isHTTP {
		return result
	}
	m, ok := result.(map[string]any)
	if !ok {
		return result
	}
	if _, hasStatus := m["status_code"]; !hasStatus {
		return result
	}
	body, has := m["data"]
	if !has {
		return result
	}
	bm, isMap := body.(map[string]any)
	if !isMap {
		return body
	}
	out := make(map[string]any, len(bm)+5)
	for k, v := range bm {
		out[k] = v
	}
	env := map[string]any{"data": body}
	for _, k := range []string{"status_code", "headers", "url"} {
		if v, ok := m[k]; ok {
			env[k] = v
		}
	}
	if e, ok := m["elapsed"]; ok {
		env["elapsed"] = e
	} else if ms, ok := toInt64(m["elapsed_ms"]); ok {
		env["elapsed"] = float64(ms) / 1000
	}
	for k, v := range env {
		if _, own := out[k]; !own {
			out[k] = v
		}
	}
	return out
}

// StoredTable reports whether a rendered value stands for a table stored
// in the results tier (README "Architecture": loop.in over a stored result): a
// reference map, or a step-result view carrying one under _ref (the
// control plane's unloaded view, or its data), whose object is a Feather
// table with a recorded row count. It returns the reference and the
// rows.
func StoredTable(v any) (map[string]any, int, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, 0, false
	}
	ref := m
	if !types.IsResultRef(ref) {
		r, ok := m[RefView].(map[string]any)
		if !ok || !types.IsResultRef(r) {
			return nil, 0, false
		}
		ref = r
	}
	inner, _ := ref[types.ResultRefKey].(map[string]any)
	if f, _ := inner["format"].(string); f != types.ResultFormatFeather {
		return nil, 0, false
	}
	n, ok := toInt64(inner["rows"])
	if !ok || n < 0 {
		return nil, 0, false
	}
	return ref, int(n), true
}
