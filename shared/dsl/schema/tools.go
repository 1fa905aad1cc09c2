package schema

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/noetl/gcpengine/shared/dsl"
	"github.com/noetl/gcpengine/shared/toolspec"
)

// taskDefinitions is the tool part of the schema, and the one place that
// knows where a kind's keys come from: each kind's typed spec
// (shared/toolspec: keys, NoETL aliases, types, enumerations, defaults,
// required groups and a doc per key). It returns "Task" (an object whose
// kind, one of dsl.Kinds, selects "Task_<kind>" and the kind's required
// groups), "WorkbookTask" (the same without the required groups: a
// workbook entry may leave them to the tasks that call it) and, per kind,
// "Task_<kind>": the keys every task has (common, the reflected
// CommonTask) plus its spec's keys and aliases.
func taskDefinitions(common *jsonschema.Schema) map[string]*jsonschema.Schema {
	defs := map[string]*jsonschema.Schema{}
	base := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{
			Type:        "object",
			Description: desc,
			Properties: propsOf("kind", &jsonschema.Schema{
				Type:        "string",
				Enum:        strAny(dsl.Kinds),
				Description: "The task kind (NoETL kinds this stack cannot run, e.g. snowflake or container, are rejected with what they need).",
			}),
			Required: []string{"kind"},
		}
	}
	task := base("A task: kind selects the keys it takes (those of every task plus those its tool reads) and the keys it needs.")
	entry := base("A workbook task: as a task, but it may leave the keys its kind needs to the tasks that call it.")
	for _, kind := range dsl.Kinds {
		name := "Task_" + kind
		defs[name] = kindTask(kind, common)
		when := &jsonschema.Schema{Properties: propsOf("kind", &jsonschema.Schema{Const: kind}), Required: []string{"kind"}}
		then := ref(name)
		if req := requiredGroups(kind); len(req) > 0 {
			then = &jsonschema.Schema{AllOf: append([]*jsonschema.Schema{ref(name)}, req...)}
		}
		task.AllOf = append(task.AllOf, &jsonschema.Schema{If: when, Then: then})
		entry.AllOf = append(entry.AllOf, &jsonschema.Schema{If: when, Then: ref(name)})
	}
	defs["Task"] = task
	defs["WorkbookTask"] = entry
	return defs
}

// requiredGroups returns, per required group of kind's spec, a schema
// requiring one of its keys (any spelling), given on the task or under
// its spec (the loader moves a kind's keys from tool.spec to the task).
func requiredGroups(kind string) []*jsonschema.Schema {
	if kind == "workbook" {
		return nil // name is required by Task_workbook itself
	}
	var groups []string
	alts := map[string][]string{}
	for _, f := range toolspec.Fields(kind) {
		if f.Required == "" {
			continue
		}
		if _, seen := alts[f.Required]; !seen {
			groups = append(groups, f.Required)
		}
		alts[f.Required] = append(append(alts[f.Required], f.Key), f.Aliases...)
	}
	var out []*jsonschema.Schema
	for _, g := range groups {
		one := &jsonschema.Schema{Description: fmt.Sprintf("One of %s is required for a %s task.", strings.Join(alts[g], ", "), kind)}
		for _, k := range alts[g] {
			one.AnyOf = append(one.AnyOf, &jsonschema.Schema{Required: []string{k}},
				&jsonschema.Schema{Required: []string{"spec"}, Properties: propsOf("spec", &jsonschema.Schema{Required: []string{k}})})
		}
		out = append(out, one)
	}
	return out
}

// kindTask is the definition of a task of kind: the common task keys,
// then its spec's keys and aliases (a key the loader reads for every task,
// such as timeout or spec, keeps the loader's shape).
func kindTask(kind string, common *jsonschema.Schema) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("kind", &jsonschema.Schema{Const: kind, Description: "The task kind."})
	for k, s := range common.Properties.FromOldest() {
		props.Set(k, s)
	}
	isCommon := map[string]bool{}
	for _, k := range dsl.CommonTaskKeys {
		isCommon[k] = true
	}
	t := &jsonschema.Schema{
		Type:                 "object",
		Properties:           props,
		Required:             []string{"kind"},
		AdditionalProperties: jsonschema.FalseSchema,
		// input and args are the same (DSL v2 and v10 spellings).
		Not: &jsonschema.Schema{Required: []string{"input", "args"}},
	}
	if s, ok := toolspec.Specs()[kind]; ok {
		t.Description = typeDoc(reflect.TypeOf(s), kind)
	}
	if kind == "workbook" {
		// The call may override any key of the entry it calls (checked
		// against that entry's kind by the validator).
		t.AdditionalProperties = jsonschema.TrueSchema
		t.Required = []string{"kind", "name"}
		props.Set("name", &jsonschema.Schema{Extras: map[string]any{"type": []string{"string", "number", "boolean"}},
			Description: "The workbook entry to call (in a list of tasks, also the task's label)."})
		t.Description = "A task that calls a root workbook entry by name; its other keys override the entry's (those the entry's kind reads)."
		return t
	}
	for _, f := range toolspec.Fields(kind) {
		for _, key := range append([]string{f.Key}, f.Aliases...) {
			switch {
			case key == "timeout_ms":
				// The loader keeps it as tool config for a kind that reads it.
				props.Set(key, fieldSchema(f, key))
			case isCommon[key]:
				// The loader reads it for every task (timeout: seconds or a
				// mapping kept for the tool; spec: policy and knobs).
			case key == "script":
				s := &jsonschema.Schema{AllOf: []*jsonschema.Schema{ref("Script")}, Description: f.Doc}
				props.Set(key, s)
			default:
				props.Set(key, fieldSchema(f, key))
			}
		}
	}
	if kind == "postgres" {
		props.Set("with", &jsonschema.Schema{Extras: map[string]any{"type": []string{"object", "null"}},
			Description: "NoETL's legacy spelling of the task's input (loaded as input with a warning)."})
	}
	return t
}

// typeDoc is a kind's description.
func typeDoc(t reflect.Type, kind string) string {
	return fmt.Sprintf("A task of kind %s (its keys: shared/toolspec %s).", kind, t.Name())
}

// templateString is a string holding a template, checked at run time.
func templateString() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `\{\{|\{%`}
}

// fieldSchema is the schema of one key of a kind's spec as the validator
// checks it (toolspec.Check): a template string is checked at run time,
// null is absent, a scalar is converted to the field's scalar type when it
// can be (weak typing: 5 for a string, "true" for a boolean), and a
// literal string of an enumeration matches case-insensitively.
func fieldSchema(f toolspec.Field, key string) *jsonschema.Schema {
	s := &jsonschema.Schema{Description: f.Doc}
	if key != f.Key {
		s.Description = fmt.Sprintf("Alias of %s: %s", f.Key, f.Doc)
	}
	if f.Ignored != "" {
		s.Description += " Accepted for NoETL compatibility, not used here: " + f.Ignored + "."
	}
	if f.Default != "" {
		s.Default = f.Default
	}
	switch f.Type.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		if len(f.Enum) > 0 {
			s.AnyOf = []*jsonschema.Schema{
				{Type: "string", Enum: strAny(f.Enum)},
				{Type: "string", Pattern: foldPattern(f.Enum)},
				templateString(),
				types("number", "boolean", "null"),
			}
			return s
		}
		s.Extras = map[string]any{"type": []string{"string", "number", "boolean", "null"}}
	case reflect.Map:
		s.AnyOf = []*jsonschema.Schema{types("object", "array", "null"), templateString()}
	}
	return s
}

// foldPattern matches any of values, case-insensitively, with surrounding
// blanks (as toolspec compares them), e.g. (?:[Gg][Ee][Tt]).
func foldPattern(values []string) string {
	alts := make([]string, len(values))
	for i, v := range values {
		var b strings.Builder
		for _, r := range v {
			lo, up := strings.ToLower(string(r)), strings.ToUpper(string(r))
			switch {
			case lo != up:
				b.WriteString("[" + up + lo + "]")
			case strings.ContainsRune(`\.+*?()|[]{}^$`, r):
				b.WriteString(`\` + string(r))
			default:
				b.WriteRune(r)
			}
		}
		alts[i] = b.String()
	}
	return `^\s*(?:` + strings.Join(alts, "|") + `)\s*$`
}
