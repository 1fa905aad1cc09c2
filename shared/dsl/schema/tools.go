package schema

import (
	"fmt"

	"github.com/invopop/jsonschema"

	"github.com/noetl/gcpengine/shared/dsl"
)

// taskDefinitions is the tool part of the schema, and the one place that
// knows where a kind's keys come from: "Task" (an object whose kind, one
// of dsl.Kinds, selects the definition "Task_<kind>") and, per kind, the
// keys every task has (common, the reflected CommonTask) plus the keys its
// tool reads. Today those are the per-kind key table dsl.KindKeys, which
// says which keys a kind reads but not their types (each is described,
// not typed); when each tool kind owns a typed spec struct, this function
// reflects that struct instead.
func taskDefinitions(common *jsonschema.Schema) map[string]*jsonschema.Schema {
	defs := map[string]*jsonschema.Schema{}
	task := &jsonschema.Schema{
		Type:        "object",
		Description: "A task: kind selects the keys it takes (those of every task plus those its tool reads).",
		Properties: propsOf("kind", &jsonschema.Schema{
			Type:        "string",
			Enum:        strAny(dsl.Kinds),
			Description: "The task kind (NoETL kinds this stack cannot run, e.g. snowflake or container, are rejected with what they need).",
		}),
		Required: []string{"kind"},
	}
	for _, kind := range dsl.Kinds {
		name := "Task_" + kind
		defs[name] = kindTask(kind, common)
		task.AllOf = append(task.AllOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: propsOf("kind", &jsonschema.Schema{Const: kind}), Required: []string{"kind"}},
			Then: ref(name),
		})
	}
	defs["Task"] = task
	return defs
}

// kindKeyNotes describes the kind keys whose meaning the loader gives
// (the others are passed to the tool as written).
var kindKeyNotes = map[string]string{
	"http.endpoint": "NoETL's spelling of url (give one of them).",
	"python.libs":   "A mapping alias → module to import (e.g. {pd: pandas}); a list of package names is ignored with a warning.",
}

// kindTask is the definition of a task of kind.
func kindTask(kind string, common *jsonschema.Schema) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("kind", &jsonschema.Schema{Const: kind, Description: "The task kind."})
	for k, s := range common.Properties.FromOldest() {
		props.Set(k, s)
	}
	for _, k := range dsl.KindKeys[kind] {
		// A kind key is passed to the tool as written (a kind that reads
		// timeout_ms takes it as config, not as the task's timeout).
		s := &jsonschema.Schema{}
		if k == "script" {
			s.AllOf = []*jsonschema.Schema{ref("Script")}
		}
		s.Description = kindKeyNotes[kind+"."+k]
		if s.Description == "" {
			s.Description = fmt.Sprintf("Read by the %s tool.", kind)
		}
		props.Set(k, s)
	}
	t := &jsonschema.Schema{
		Type:                 "object",
		Description:          fmt.Sprintf("A task of kind %s.", kind),
		Properties:           props,
		Required:             []string{"kind"},
		AdditionalProperties: jsonschema.FalseSchema,
		// input and args are the same (DSL v2 and v10 spellings).
		Not: &jsonschema.Schema{Required: []string{"input", "args"}},
	}
	switch kind {
	case "postgres":
		props.Set("with", &jsonschema.Schema{Extras: map[string]any{"type": []string{"object", "null"}},
			Description: "NoETL's legacy spelling of the task's input (loaded as input with a warning)."})
	case "workbook":
		// The call may override any key of the entry it calls (checked
		// against that entry's kind by the validator).
		t.AdditionalProperties = jsonschema.TrueSchema
		t.Required = []string{"kind", "name"}
		props.Set("name", &jsonschema.Schema{Extras: map[string]any{"type": []string{"string", "number", "boolean"}},
			Description: "The workbook entry to call (in a list of tasks, also the task's label)."})
		t.Description = "A task that calls a root workbook entry by name; its other keys override the entry's."
	}
	return t
}
