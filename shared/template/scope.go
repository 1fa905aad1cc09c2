package template

// ScopeParams are the inputs of NewScope (NoETL DSL spec "Templates", names in
// scope). Every field is optional; values may be any Go data and are
// normalised (Normalize).
type ScopeParams struct {
	// Workload is the execution's workload (playbook defaults deep-merged
	// with the request payload): `workload` and, bare, each of its keys.
	Workload map[string]any
	// Ctx is the execution context: `ctx`.
	Ctx map[string]any
	// Iter is the loop iteration's own variables (set_iter, parent, ...):
	// `iter`.
	Iter map[string]any
	// Args is the step's token/arguments: `args` and, bare, each key.
	Args map[string]any
	// ExecutionID is `execution_id`.
	ExecutionID string
	// Keychain holds resolved credentials: `keychain`.
	Keychain map[string]any
	// Results maps a finished step's name to its result: bare `<step>`.
	Results map[string]any
	// Iterator is the loop's iterator name ("" outside loops): Item is bound
	// to it bare and as iter.<Iterator>.
	Iterator string
	// Item is the current loop element.
	Item any
	// LoopIndex is the 0-based iteration index: `loop_index` and
	// `iter.index`; nil outside loops.
	LoopIndex *int
	// Extra adds names: the reserved event, outcome, _prev, _task and
	// _attempt, and any other name (bound above all bare names). Entries
	// named like a dedicated field (workload, ctx, iter, args,
	// execution_id, job, keychain, loop_index) are ignored.
	Extra map[string]any
}

// reservedNames are the Scope names the dialect's bare names never
// override (NoETL DSL spec "Templates").
var reservedNames = map[string]bool{
	"workload": true, "ctx": true, "iter": true, "args": true,
	"execution_id": true, "job": true, "keychain": true, "event": true, "outcome": true,
	"_prev": true, "_task": true, "_attempt": true, "loop_index": true,
}

// extraReserved are the reserved names whose values come from
// ScopeParams.Extra.
var extraReserved = []string{"event", "outcome", "_prev", "_task", "_attempt"}

// NewScope builds the names a template sees (NoETL DSL spec "Templates"):
//
//   - reserved names, which always win: workload, ctx, iter, args, keychain
//     (maps, empty when not given), execution_id (string), job (the map
//     {uuid, execution_id, id}, each the execution id: NoETL's render
//     context defines job so, noetl/core/dsl/engine/executor/state.py
//     get_render_context, and playbooks pass {{ job.execution_id }} to
//     child playbooks and SQL), loop_index (int,
//     only inside a loop), and event, outcome, _prev, _task, _attempt when
//     Extra has them;
//   - iter holds Iter's keys, then iter.<Iterator> = Item and iter.index =
//     *LoopIndex (these two win over Iter's keys);
//   - bare names underneath, highest first: Extra's other keys; the loop
//     iterator bound to Item; Args keys; step results by step name;
//     workload keys; vars, the ctx map again (NoETL's legacy step vars
//     are loaded as set_ctx and read as vars.<name>).
//
// All values are normalised (Normalize; shared with the inputs when no
// conversion was needed, never modified).
func NewScope(p ScopeParams) Scope {
	workload := normalizeMap(p.Workload)
	results := normalizeMap(p.Results)
	args := normalizeMap(p.Args)
	s := make(Scope, len(workload)+len(results)+len(args)+len(p.Extra)+16)
	ctx := orEmpty(normalizeMap(p.Ctx))

	// vars is NoETL's legacy name of the values a step's vars block
	// computes, loaded as ctx (dsl: step vars → set_ctx): the lowest bare
	// name, so a workload key, step, argument or iterator named vars wins.
	s["vars"] = ctx
	for k, v := range workload {
		if !reservedNames[k] {
			s[k] = v
		}
	}
	for k, v := range results {
		if !reservedNames[k] {
			s[k] = v
		}
	}
	for k, v := range args {
		if !reservedNames[k] {
			s[k] = v
		}
	}
	var item any
	if p.Iterator != "" {
		item = Normalize(p.Item)
		if !reservedNames[p.Iterator] {
			s[p.Iterator] = item
		}
	}
	for k, v := range p.Extra {
		if !reservedNames[k] {
			s[k] = Normalize(v)
		}
	}

	s["workload"] = orEmpty(workload)
	s["ctx"] = ctx
	s["args"] = orEmpty(args)
	s["keychain"] = orEmpty(normalizeMap(p.Keychain))
	s["execution_id"] = p.ExecutionID
	s["job"] = map[string]any{"uuid": p.ExecutionID, "execution_id": p.ExecutionID, "id": p.ExecutionID}

	iter := make(map[string]any, len(p.Iter)+2)
	for k, v := range normalizeMap(p.Iter) {
		iter[k] = v
	}
	if p.Iterator != "" {
		iter[p.Iterator] = item
	}
	if p.LoopIndex != nil {
		iter["index"] = *p.LoopIndex
		s["loop_index"] = *p.LoopIndex
	}
	s["iter"] = iter

	for _, k := range extraReserved {
		if v, ok := p.Extra[k]; ok {
			s[k] = Normalize(v)
		}
	}
	return s
}

func normalizeMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := normalize(m, 0)
	return out.(map[string]any)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
