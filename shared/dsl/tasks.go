package dsl

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file decodes a step's tasks (NoETL DSL spec "Tasks"): the task
// shapes of tool and a task's keys and spec.

// taskKeys are the keys that make a one-key list item a task rather than
// a {label: {kind: ...}} item.
var taskKeys = commonKeySet

// tools normalises the three NoETL task shapes plus NoETL canonical v10 retry spec's label maps:
//
//	tool: {kind: python, ...}            → one task "<step>_task"
//	tool: [{name: a, kind: ...}, ...]    → labels from name
//	tool: [{kind: ...}, ...]             → labels task_0, task_1, ...
//	tool: [{a: {kind: ...}}, ...]        → labels from the single key
func (l *loader) tools(stepName string, n *yaml.Node, path string) []*Task {
	d := deref(n)
	if isNull(d) {
		l.errf(n, path, "tool is empty: give a task {kind: ..., ...} or a list of tasks (or drop tool for a routing-only step)")
		return nil
	}
	switch d.Kind {
	case yaml.ScalarNode:
		l.errf(n, path, "tool: %s is not canonical: write the task as a mapping, tool: {kind: %s, ...}, with its fields (code, url, command, ...) under tool", clip(d.Value), clip(d.Value))
		return nil
	case yaml.MappingNode:
		fs, _ := l.fields(d, path, "tool")
		m := index(fs)
		_, hasKind := m["kind"]
		_, hasType := m["type"]
		if !hasKind && !hasType && len(fs) > 0 && allLabelled(fs) {
			// Mapping of label → task (ordered as written).
			var out []*Task
			for _, e := range fs {
				if t := l.task(e.v, join(path, e.key), e.key, false, false); t != nil {
					out = append(out, t)
				}
			}
			return out
		}
		if t := l.task(d, path, stepName+"_task", true, true); t != nil {
			return []*Task{t}
		}
		return nil
	case yaml.SequenceNode:
		if len(d.Content) == 0 {
			l.errf(n, path, "tool must list at least one task (or drop tool for a routing-only step)")
			return nil
		}
		var out []*Task
		for i, item := range d.Content {
			ip := idx(path, i)
			di := deref(item)
			if di == nil || di.Kind != yaml.MappingNode {
				l.errf(item, ip, "a task must be a mapping like {name: x, kind: python, ...}, got %s", describe(di))
				continue
			}
			if len(di.Content) == 2 {
				k, v := deref(di.Content[0]), deref(di.Content[1])
				if k != nil && k.Kind == yaml.ScalarNode && !taskKeys[k.Value] && v != nil && v.Kind == yaml.MappingNode && !looksLikeUnquotedTemplate(v) {
					if t := l.task(v, join(ip, k.Value), k.Value, false, false); t != nil {
						out = append(out, t)
					}
					continue
				}
			}
			if t := l.task(item, ip, fmt.Sprintf("task_%d", i), true, false); t != nil {
				out = append(out, t)
			}
		}
		return out
	}
	l.errf(n, path, "tool must be a task mapping or a list of tasks, got %s", describe(d))
	return nil
}

// describeValue names the shape of a converted value for messages ("a
// list [a, b]", "the string \"x\"").
func describeValue(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return "a list [" + clip(strings.Join(parts, ", ")) + "]"
	case string:
		return fmt.Sprintf("the string %q", clip(x))
	}
	return fmt.Sprintf("%T", v)
}

// hasKey reports whether n is a mapping with the given literal key.
func hasKey(n *yaml.Node, key string) bool {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(d.Content); i += 2 {
		if k := deref(d.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return true
		}
	}
	return false
}

func allLabelled(fs []entry) bool {
	for _, e := range fs {
		if taskKeys[e.key] || actionKeys[e.key] {
			return false
		}
		v := deref(e.v)
		if v == nil || v.Kind != yaml.MappingNode {
			return false
		}
		if !hasKey(v, "kind") {
			return false
		}
	}
	return true
}

// task converts one task mapping. label is the default label; when
// nameIsLabel the task's own `name` overrides it (list items). In the single
// mapping form (single) `name` is the label too, except for kind workbook
// where `name` always names the workbook entry to call.
func (l *loader) task(n *yaml.Node, path, label string, nameIsLabel, single bool) *Task {
	fs, ok := l.fields(n, path, "a task")
	if !ok {
		return nil
	}
	d := deref(n)
	t := &Task{Name: label, Line: nodeLine(d), Path: path}
	m := index(fs)
	if e, ok := m["kind"]; ok {
		t.Kind, _ = l.str(e.v, join(path, "kind"), "kind")
	} else if e, ok := m["type"]; ok {
		l.errf(e.k, join(path, "type"), "task.type is the legacy spelling: rename it to kind (one of %s)", strings.Join(Kinds, ", "))
		if s, ok := l.str(e.v, join(path, "type"), "type"); ok {
			t.Kind = s
		}
	} else {
		l.errf(d, join(path, "kind"), "task needs a kind (one of %s)", strings.Join(Kinds, ", "))
	}
	if single && t.Kind == "workbook" {
		nameIsLabel = false
	}
	config := map[string]any{}
	fromSpec := map[string]string{}
	var retry *entry
	input := ""
	withSeen := false // a postgres with: block was merged into t.Input
	var specEntry *entry
	for _, e := range fs {
		if e.key == "spec" {
			e := e
			specEntry = &e
		}
	}
	if specEntry != nil {
		// Parsed first: NoETL accepts kind keys under tool.spec (e.g.
		// url, method, params, code, input), which the loop below checks
		// against the same keys at the top level.
		l.taskSpec(t, specEntry.v, join(path, "spec"), config, fromSpec, &input)
	}
	for _, e := range fs {
		e := e
		ep := join(path, e.key)
		if where, dup := fromSpec[e.key]; dup {
			l.errf(e.k, ep, "%s is given both here and as %s: keep one", e.key, where)
			continue
		}
		switch e.key {
		case "kind":
		case "type":
			if _, ok := m["kind"]; ok {
				config["type"] = l.value(e.v, ep)
			}
		case "name":
			s, ok := l.str(e.v, ep, "task name")
			if !ok {
				continue
			}
			if nameIsLabel {
				t.Name = s
			} else {
				config["name"] = s
			}
			if t.Kind == "workbook" {
				t.Workbook = s
			}
		case "args", "input":
			if withSeen {
				// with: came first: merge the input under it.
				in := l.input(nil, &input, e, path, "task")
				for _, k := range sortedKeys(in) {
					if _, dup := t.Input[k]; dup {
						l.errf(e.k, join(ep, k), "%s is given both in with and in %s: keep it in %s", k, e.key, e.key)
						continue
					}
					t.Input[k] = in[k]
				}
				continue
			}
			t.Input = l.input(t.Input, &input, e, path, "task")
		case "spec":
		case "set":
			t.Set = l.assignments(e.v, ep, "tool set", setTask)
		case "output":
			o := l.output(e.v, ep)
			if o != nil && t.Output != nil {
				// output_select came first.
				o.Select = append(t.Output.Select, o.Select...)
			}
			t.Output = o
		case "output_select":
			sel := l.selects(e.v, ep)
			if t.Output == nil {
				t.Output = &Output{Line: e.k.Line, Path: ep}
			}
			t.Output.Select = append(t.Output.Select, sel...)
		case "assert":
			t.Assert = l.dict(e.v, ep, "assert")
		case "script":
			if !kindReads(t.Kind, "script") {
				l.errf(e.k, ep, "task key script is not read by kind %s (only python and postgres load a script)", t.Kind)
				continue
			}
			t.Script = l.script(e.v, ep)
		case "timeout":
			if dv := deref(e.v); dv != nil && dv.Kind == yaml.MappingNode {
				config["timeout"] = l.value(e.v, ep)
			} else if f, ok := l.num(e.v, ep, "timeout (seconds)"); ok {
				t.TimeoutS = f
			}
		case "timeout_ms":
			// The task's timeout, unless the kind reads timeout_ms itself
			// (subscription's poll wait).
			if kindOwnKey(t.Kind, "timeout_ms") {
				config["timeout_ms"] = l.value(e.v, ep)
			} else if f, ok := l.num(e.v, ep, "timeout_ms (milliseconds)"); ok {
				t.TimeoutS = f / 1000
			}
		case "retry":
			retry = &e
		case "with":
			if t.Kind != "postgres" {
				l.errf(e.k, ep, "task key with is not read by kind %s: the values a task receives are its input (tool.input: {...}; v10: args)", t.Kind)
				continue
			}
			// NoETL's postgres executor renders its SQL and connection
			// fields with task_with, the task's with: block
			// (noetl/tools/postgres/executor.py): the task's input here.
			l.warnf(e.k, ep, "postgres with: is NoETL's legacy spelling of the task's input (the values its SQL templates and connection fields db_host, db_port, db_user, db_password, db_name read): loaded as input (write input: {...})")
			w := l.dict(e.v, ep, "with")
			if len(w) > 0 && t.Input == nil {
				t.Input = map[string]any{}
			}
			for _, k := range sortedKeys(w) {
				if _, dup := t.Input[k]; dup {
					l.errf(e.k, join(ep, k), "%s is given both in with and in input: keep it in input", k)
					continue
				}
				t.Input[k] = w[k]
			}
			withSeen = true
		default:
			if msg, ok := IgnoredTaskKeys[e.key]; ok && !kindReads(t.Kind, e.key) {
				l.warnf(e.k, ep, "%s", msg)
				continue
			}
			if !kindReads(t.Kind, e.key) {
				if msg := misplacedTaskKey(e.key); msg != "" {
					l.errf(e.k, ep, "%s", msg)
					continue
				}
				l.errf(e.k, ep, "%s", unknownKeyMessage(t.Kind, e.key))
				continue
			}
			if why := ignoredKey(t.Kind, e.key); why != "" {
				l.warnf(e.k, ep, "%s %s is accepted but not used: %s", t.Kind, e.key, why)
			}
			config[e.key] = l.value(e.v, ep)
		}
	}
	if t.Kind == "http" {
		if ep, ok := config["endpoint"]; ok {
			if _, both := config["url"]; both {
				l.errf(d, join(path, "endpoint"), "http task has both url and endpoint (endpoint is NoETL's spelling of url): keep one")
			} else {
				config["url"] = ep
			}
			delete(config, "endpoint")
		}
	}
	if t.Kind == "python" {
		if libs, ok := config["libs"]; ok {
			switch libs.(type) {
			case map[string]any, nil:
			default:
				// NoETL's python executor imports only a mapping alias →
				// module and ignores anything else with a warning
				// (noetl/tools/python/executor.py: "'libs' must be a
				// dict"); fixtures list pip names there
				// ([psycopg2-binary]), which are not importable modules.
				l.warnf(d, join(path, "libs"), "python libs as %s is ignored (NoETL ignores it too: it imports only a mapping alias → module, e.g. libs: {pd: pandas}); packages are not installed at run time: use the modules the interpreter has", describeValue(libs))
				delete(config, "libs")
			}
		}
	}
	if t.Kind == "workbook" && t.Workbook != "" {
		config["name"] = t.Workbook
	}
	if len(config) > 0 {
		t.Config = config
	}
	if retry != nil {
		rules, pg, ok := l.legacyRetry(retry.v, join(path, "retry"))
		if ok && (rules != nil || pg != nil) {
			switch {
			case t.Policy != nil:
				l.errf(retry.k, join(path, "retry"), "task has both a legacy retry block and spec.policy: move the retry into spec.policy.rules and drop retry")
			case pg != nil:
				// Rewritten by the enclosing step (stepPagination).
				if l.pending == nil {
					l.pending = map[*Task]*successRetry{}
				}
				l.pending[t] = pg
			default:
				t.Policy = &Policy{Rules: rules}
			}
		}
	}
	return t
}

// taskSpec reads tool.spec: policy, timeout, and the kind keys and input
// that NoETL also accepts there (moved to config / t.Input; fromSpec
// records them so the same key at the top level is reported); the other
// keys stay in t.Spec verbatim.
func (l *loader) taskSpec(t *Task, n *yaml.Node, path string, config map[string]any, fromSpec map[string]string, input *string) {
	l.walk(n, path, "task spec", func(e entry, ep string) {
		switch e.key {
		case "policy":
			t.Policy = l.taskPolicy(e.v, ep)
		case "timeout":
			if dv := deref(e.v); dv != nil && dv.Kind == yaml.MappingNode {
				if t.Spec == nil {
					t.Spec = map[string]any{}
				}
				t.Spec["timeout"] = l.value(e.v, ep)
			} else if f, ok := l.num(e.v, ep, "spec.timeout (seconds)"); ok {
				t.TimeoutS = f
			}
		case "args", "input":
			t.Input = l.input(t.Input, input, e, path, "task spec")
			fromSpec["args"], fromSpec["input"] = "spec."+e.key, "spec."+e.key
		case "set", "set_ctx", "set_iter":
			l.errf(e.k, ep, "%s must not live under spec (DSL v2: set is a first-class field): move it to the task (tool set) or to a policy rule's then", e.key)
		default:
			if knownKind(t.Kind) && t.Kind != "workbook" && !commonKeySet[e.key] && kindReads(t.Kind, e.key) && e.key != "script" {
				config[e.key] = l.value(e.v, ep)
				fromSpec[e.key] = "spec." + e.key
				return
			}
			if t.Spec == nil {
				t.Spec = map[string]any{}
			}
			t.Spec[e.key] = l.value(e.v, ep)
		}
	})
}
