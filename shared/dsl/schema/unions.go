package schema

import (
	"reflect"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"

	"github.com/noetl/gcpengine/shared/dsl"
)

// This file holds the field types whose YAML value has more than one shape
// (a scalar, a list or a mapping) and the scalar types with loader-specific
// rules. Reflection does not know them: mapType gives each one its schema,
// inline (the scalar rules) or as a reference to a definition built by
// unionDefinitions.

// Text is a field the loader reads as text: any YAML scalar but null (a
// number or a boolean is read as its text).
type Text string

// Mapping is a field the loader reads as a mapping of any keys and values
// (null is an empty mapping).
type Mapping map[string]any

// Patch is a v10 set_ctx / set_iter block: a mapping of non-empty names
// to values (null is empty).
type Patch map[string]any

// StepSet is a step's or an arc's set block: targets ctx.<name>,
// step.<name> or a bare name (written to ctx, with a warning) to values.
type StepSet map[string]any

// TaskSet is a tool item's or a policy rule's set block: targets
// ctx.<name>, iter.<name>, step.<name> or a bare name (a variable of the
// step run) to values.
type TaskSet map[string]any

// Tool is a step's task pipeline: one task, a list of tasks (each a task
// or a one-key {label: task}), or a mapping label → task.
type Tool struct{}

// TaskRef is one workbook task (kind discriminates its keys, tools.go).
type TaskRef struct{}

// Next is a step's routing: the canonical {spec, arcs} block or a legacy
// form (a step name, a list of names/arcs/branches, or one {step} arc).
type Next struct{}

// ArcItem is an entry of next.arcs: an arc mapping or a bare step name.
type ArcItem struct{}

// ArcTargets is the target(s) of a legacy next branch: a step name, an
// arc, or a list of them.
type ArcTargets struct{}

// LegacyRetry is the legacy retry: true, a number of attempts or a block.
type LegacyRetry struct{}

// LoopIn is loop.in: a template rendering to a list, or a literal list.
type LoopIn struct{}

// LoopMode is a loop mode: sequential, parallel or cursor (async and sync
// are deprecated spellings).
type LoopMode string

// MaxInFlight is loop.spec.max_in_flight: an integer ≥ 1 or a template
// rendering to one.
type MaxInFlight struct{}

// FrameCount is an integer frame field (≥ 1) or a template.
type FrameCount struct{}

// FrameSeconds is a duration frame field in seconds (> 0) or a template.
type FrameSeconds struct{}

// Select is output.select / output_select: a list of field paths or
// {path, as} mappings (a mapping is ignored with a warning).
type Select struct{}

// Collect is retry.on_success.collect: a strategy or a {strategy, path}
// block.
type Collect struct{}

// CollectStrategy is append, replace or collect.
type CollectStrategy string

// Timeout is a timeout in seconds (≥ 0) or a mapping kept for the tool
// (e.g. {connect: 5, read: 15}).
type Timeout struct{}

// Workbook is the root workbook: a list of entries or a mapping name →
// entry.
type Workbook struct{}

// AdmitRule is one step admission rule.
type AdmitRule struct{}

// TaskRule is one task policy rule.
type TaskRule struct{}

// setSegment is one segment of a set target's key (shared/dsl setKeyRE).
const setSegment = `[A-Za-z_][A-Za-z0-9_-]*`

// templateRE matches a string holding template markup.
const templateRE = `\{\{`

// identPattern is an identifier (letters, digits, _).
const identPattern = `^[A-Za-z_][A-Za-z0-9_]*$`

// ref returns a reference to the definition name.
func ref(name string) *jsonschema.Schema { return &jsonschema.Schema{Ref: "#/$defs/" + name} }

// types returns a schema accepting the JSON types listed.
func types(ts ...string) *jsonschema.Schema {
	if len(ts) == 1 {
		return &jsonschema.Schema{Type: ts[0]}
	}
	return &jsonschema.Schema{Extras: map[string]any{"type": ts}}
}

// anyOf returns a schema matching any of ss.
func anyOf(ss ...*jsonschema.Schema) *jsonschema.Schema { return &jsonschema.Schema{AnyOf: ss} }

// uint64p returns a pointer to n.
func uint64p(n uint64) *uint64 { return &n }

// setTargets is the schema of a set block whose targets have the scopes
// listed (or are bare names).
func setTargets(scopes ...string) *jsonschema.Schema {
	key := `^(?:(?:` + strings.Join(scopes, "|") + `)\.` + setSegment + `(?:\.` + setSegment + `)*|` + setSegment + `)$`
	return anyOf(&jsonschema.Schema{Type: "object", PropertyNames: &jsonschema.Schema{Pattern: key}}, types("null"))
}

// mapType is the Reflector's Mapper: the schema of each type of this file
// (nil for the others, which are reflected).
func mapType(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeFor[Text]():
		return types("string", "number", "boolean")
	case reflect.TypeFor[Mapping]():
		return types("object", "null")
	case reflect.TypeFor[Patch]():
		return anyOf(&jsonschema.Schema{Type: "object", PropertyNames: &jsonschema.Schema{MinLength: uint64p(1)}}, types("null"))
	case reflect.TypeFor[StepSet]():
		return setTargets(dsl.ScopeCtx, dsl.ScopeStep)
	case reflect.TypeFor[TaskSet]():
		return setTargets(dsl.ScopeCtx, dsl.ScopeIter, dsl.ScopeStep)
	case reflect.TypeFor[LoopIn]():
		return anyOf(&jsonschema.Schema{Type: "string", Pattern: templateRE}, types("array"))
	case reflect.TypeFor[LoopMode]():
		return &jsonschema.Schema{Type: "string", Enum: []any{"sequential", "parallel", "cursor", "async", "sync"}}
	case reflect.TypeFor[MaxInFlight]():
		return anyOf(&jsonschema.Schema{Type: "integer", Minimum: "1"},
			&jsonschema.Schema{Type: "string", Pattern: `^\s*\+?0*[1-9][0-9]*\s*$|` + templateRE})
	case reflect.TypeFor[FrameCount]():
		return anyOf(&jsonschema.Schema{Type: "integer", Minimum: "1"}, &jsonschema.Schema{Type: "string", Pattern: templateRE})
	case reflect.TypeFor[FrameSeconds]():
		return anyOf(&jsonschema.Schema{Type: "number", ExclusiveMinimum: "0"}, &jsonschema.Schema{Type: "string", Pattern: templateRE})
	case reflect.TypeFor[CollectStrategy]():
		return &jsonschema.Schema{Type: "string", Enum: []any{"append", "replace", "collect"}}
	case reflect.TypeFor[Timeout]():
		return anyOf(&jsonschema.Schema{Type: "number", Minimum: "0"}, types("object"))
	case reflect.TypeFor[TaskRef]():
		return ref("WorkbookTask")
	}
	for _, u := range unions {
		if t == u.t {
			return ref(u.name)
		}
	}
	return nil
}

// union is a type of this file whose schema is a definition.
type union struct {
	name string
	t    reflect.Type
	// def builds the definition.
	def func() *jsonschema.Schema
}

// unions lists the definitions of the union types.
var unions = []union{
	{"Tool", reflect.TypeFor[Tool](), func() *jsonschema.Schema {
		labelled := func(one bool) *jsonschema.Schema {
			s := &jsonschema.Schema{Type: "object", MinProperties: uint64p(1), AdditionalProperties: ref("Task"),
				PropertyNames: &jsonschema.Schema{Not: &jsonschema.Schema{Enum: strAny(dsl.CommonTaskKeys)}}}
			if one {
				s.MaxProperties = uint64p(1)
				s.Description = "A one-key list item {label: {kind: ..., ...}}: the key is the task's label."
			} else {
				s.Description = "A mapping label → task, in the order written."
			}
			return s
		}
		return &jsonschema.Schema{
			Description: "The step's task pipeline: one task {kind: ..., ...} (labelled <step>_task), a list of tasks (labelled by name, else task_<i>), a list of {label: task} or a mapping label → task.",
			AnyOf: []*jsonschema.Schema{
				ref("Task"),
				{Type: "array", MinItems: uint64p(1), Items: anyOf(ref("Task"), labelled(true))},
				labelled(false),
			},
		}
	}},
	{"Next", reflect.TypeFor[Next](), func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Description: "The step's outgoing arcs: {spec: {mode, on_no_match}, arcs: [...]}. Legacy forms, normalised with a warning: a step name, {step: x, ...}, or a list of step names, arcs and {when, then}/{else} branches.",
			AnyOf: []*jsonschema.Schema{
				ref("NextBlock"),
				ref("Arc"),
				types("string", "number", "boolean"),
				{Type: "array", Items: anyOf(types("string", "number", "boolean"), ref("Arc"), ref("LegacyBranch"))},
				types("null"),
			},
		}
	}},
	{"ArcItem", reflect.TypeFor[ArcItem](), func() *jsonschema.Schema {
		return anyOf(ref("Arc"), types("string", "number", "boolean"))
	}},
	{"ArcTargets", reflect.TypeFor[ArcTargets](), func() *jsonschema.Schema {
		return anyOf(ref("Arc"), types("string", "number", "boolean"), &jsonschema.Schema{Type: "array", Items: ref("ArcItem")})
	}},
	{"LegacyRetry", reflect.TypeFor[LegacyRetry](), func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Description: "Legacy retry (normalised to task policy rules with a warning): true, a number of attempts, or a block.",
			AnyOf:       []*jsonschema.Schema{types("boolean"), {Type: "integer", Minimum: "0"}, ref("RetryBlock")},
		}
	}},
	{"Select", reflect.TypeFor[Select](), func() *jsonschema.Schema {
		return &jsonschema.Schema{
			Description: "Fields kept inline when the result is stored by reference: a list of dotted field paths (e.g. [status, data.count]) or of {path, as}. A mapping selects nothing (ignored with a warning).",
			AnyOf: []*jsonschema.Schema{
				{Type: "array", Items: anyOf(types("string", "number", "boolean"), ref("SelectEntry"))},
				types("object", "null"),
			},
		}
	}},
	{"Collect", reflect.TypeFor[Collect](), func() *jsonschema.Schema {
		return anyOf(&jsonschema.Schema{Type: "string", Enum: []any{"append", "replace", "collect"}}, ref("CollectBlock"))
	}},
	{"Workbook", reflect.TypeFor[Workbook](), func() *jsonschema.Schema {
		entry := func(named bool) *jsonschema.Schema {
			s := anyOf(ref("WorkbookEntry"), ref("WorkbookTask"))
			if named {
				s = &jsonschema.Schema{AllOf: []*jsonschema.Schema{s, {Required: []string{"name"}}}}
			}
			return s
		}
		return &jsonschema.Schema{
			Description: "Named tasks that kind: workbook tasks call: a list of {name, tool: {kind, ...}} (NoETL) or of {name, kind, ...}, or a mapping name → task.",
			AnyOf: []*jsonschema.Schema{
				{Type: "array", Items: entry(true)},
				{Type: "object", PropertyNames: &jsonschema.Schema{Pattern: identPattern}, AdditionalProperties: entry(false)},
				types("null"),
			},
		}
	}},
	{"AdmitRule", reflect.TypeFor[AdmitRule](), func() *jsonschema.Schema { return rule("AdmitThen") }},
	{"TaskRule", reflect.TypeFor[TaskRule](), func() *jsonschema.Schema { return rule("Then") }},
}

// rule is the schema of a policy rule whose action is the definition
// then: {when, then} or {else: {then}} (also {else: {<then keys>}} and
// NoETL's else: null beside then, normalised with a warning).
func rule(then string) *jsonschema.Schema {
	act := anyOf(ref(then), types("null"))
	props := jsonschema.NewProperties()
	props.Set("when", &jsonschema.Schema{Extras: map[string]any{"type": []string{"string", "number", "boolean"}}, Description: "The guard, a template, e.g. \"{{ output.status == 'error' }}\"."})
	props.Set("then", &jsonschema.Schema{AnyOf: act.AnyOf, Description: "The action when the guard holds."})
	elseProps := jsonschema.NewProperties()
	elseProps.Set("then", act)
	props.Set("else", &jsonschema.Schema{
		Description: "The catch-all rule's action: {else: {then: {...}}}.",
		AnyOf: []*jsonschema.Schema{
			{Type: "object", Properties: elseProps, Required: []string{"then"}, AdditionalProperties: jsonschema.FalseSchema},
			{AllOf: []*jsonschema.Schema{ref(then), {Type: "object", MinProperties: uint64p(1)}}},
			types("null"),
		},
	})
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           props,
		AdditionalProperties: jsonschema.FalseSchema,
		AnyOf: []*jsonschema.Schema{
			{Required: []string{"when", "then"}, Not: req("else")},
			{Required: []string{"else"}, Properties: propsOf("else", types("object")), Not: anyOf(req("when"), req("then"))},
			{Required: []string{"else", "then"}, Properties: propsOf("else", types("null")), Not: req("when")},
		},
	}
}

// propsOf returns properties holding the one property key: s.
func propsOf(key string, s *jsonschema.Schema) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := jsonschema.NewProperties()
	p.Set(key, s)
	return p
}

// strAny converts ss for an enum.
func strAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// req requires the keys ks.
func req(ks ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: ks} }

// notTogether forbids each pair of keys given together (the loader's
// "keep one" errors).
func notTogether(pairs ...[2]string) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	for _, p := range pairs {
		s.AnyOf = append(s.AnyOf, req(p[0], p[1]))
	}
	return &jsonschema.Schema{Not: s}
}

// JSONSchemaExtend requires in or collection (or a cursor), and iterator
// or element, and forbids a key given twice (in and collection, iterator
// and element, a deprecated mode or max_in_flight beside spec's).
func (Loop) JSONSchemaExtend(s *jsonschema.Schema) {
	inSpec := func(top, key string) *jsonschema.Schema {
		return &jsonschema.Schema{Required: []string{top, "spec"}, Properties: propsOf("spec", req(key))}
	}
	s.AllOf = append(s.AllOf, anyOf(req("in"), req("collection"), req("cursor")), anyOf(req("iterator"), req("element")),
		notTogether([2]string{"in", "collection"}, [2]string{"iterator", "element"}),
		&jsonschema.Schema{Not: anyOf(inSpec("mode", "mode"), inSpec("concurrency", "max_in_flight"), inSpec("max_in_flight", "max_in_flight"))})
}

// JSONSchemaExtend forbids input and args together, and output with the
// legacy result block.
func (Step) JSONSchemaExtend(s *jsonschema.Schema) {
	s.Not = notTogether([2]string{"input", "args"}, [2]string{"output", "result"}).Not
}

// JSONSchemaExtend states the action's rules: retry takes attempts ≥ 1,
// jump needs to, and to is only for jump.
func (Then) JSONSchemaExtend(s *jsonschema.Schema) {
	do := func(v string) *jsonschema.Schema {
		return &jsonschema.Schema{Required: []string{"do"}, Properties: propsOf("do", &jsonschema.Schema{Const: v})}
	}
	s.AllOf = append(s.AllOf,
		&jsonschema.Schema{If: do("retry"), Then: &jsonschema.Schema{Properties: propsOf("attempts", &jsonschema.Schema{Minimum: "1"})}},
		&jsonschema.Schema{If: do("jump"), Then: req("to")},
		&jsonschema.Schema{If: &jsonschema.Schema{Required: []string{"to"}, Properties: propsOf("to", &jsonschema.Schema{Not: &jsonschema.Schema{Const: ""}})}, Then: do("jump")},
	)
}

// JSONSchemaExtend forbids retry_when with retry_on or retry_on_status,
// and backoff or backoff_seconds with initial_delay.
func (RetryBlock) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AllOf = append(s.AllOf, notTogether([2]string{"retry_when", "retry_on"}, [2]string{"retry_when", "retry_on_status"},
		[2]string{"backoff", "initial_delay"}, [2]string{"backoff_seconds", "initial_delay"}))
}

// JSONSchemaExtend allows the metadata keys the loader ignores with a
// warning.
func (Metadata) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows the keychain entry's other keys (kept verbatim).
func (KeychainEntry) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows the executor keys the loader ignores with a
// warning.
func (Executor) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows the spec defaults.
func (ExecutorSpec) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows the spec defaults.
func (StepSpec) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows the loop spec's other keys (kept verbatim).
func (LoopSpec) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows the loop policy's other keys (ignored with a
// warning).
func (LoopPolicy) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
}

// JSONSchemaExtend allows tool knobs (kept verbatim) and forbids set
// blocks, which are first-class task fields.
func (TaskSpec) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AdditionalProperties = jsonschema.TrueSchema
	for _, k := range []string{"set", "set_ctx", "set_iter"} {
		s.Properties.Set(k, &jsonschema.Schema{Not: jsonschema.TrueSchema, Description: k + " does not belong under spec: move it to the task (set) or to a policy rule's then."})
	}
}

// JSONSchemaExtend requires when with then, or else.
func (LegacyBranch) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AnyOf = []*jsonschema.Schema{{Required: []string{"when", "then"}}, {Required: []string{"else"}}}
}

// JSONSchemaExtend lists the cursor kinds this stack runs
// (dsl.CursorKinds).
func (Cursor) JSONSchemaExtend(s *jsonschema.Schema) {
	if k, ok := s.Properties.Get("kind"); ok {
		k.Enum = strAny(dsl.CursorKinds)
	}
}

// JSONSchemaExtend lists the store kinds this stack has a tier for
// (dsl.StoreTiers).
func (Store) JSONSchemaExtend(s *jsonschema.Schema) {
	if k, ok := s.Properties.Get("kind"); ok {
		kinds := make([]string, 0, len(dsl.StoreTiers))
		for kind := range dsl.StoreTiers {
			kinds = append(kinds, kind)
		}
		sort.Strings(kinds)
		k.Enum = strAny(kinds)
	}
}

// JSONSchemaExtend forbids when and cond together, and args with its
// deprecated spellings.
func (Arc) JSONSchemaExtend(s *jsonschema.Schema) {
	s.Not = notTogether([2]string{"when", "cond"}, [2]string{"args", "data"}, [2]string{"args", "with"}, [2]string{"args", "input"}).Not
}
