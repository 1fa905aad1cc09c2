package dsl

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The decoder turns the YAML tree into the model, one file per job: the
// document (this file: root keys, metadata, keychain, workbook; NoETL DSL
// spec "Document"), steps.go (NoETL DSL spec "Step"), loops.go, tasks.go
// (NoETL DSL spec "Tasks"), policy.go (task policy, NoETL canonical v10
// retry spec), next.go (next and its arcs), blocks.go (the DSL v2
// set/output/script/cursor blocks and the executor spec), kinds.go (the
// per-kind task keys) and pagination.go (NoETL distributed loop design's
// retry.on_success). The forms of older dialects are rewritten or refused
// in the legacy_*.go files (legacy_retry.go: NoETL event-driven retry
// design). It reports shape problems (wrong types, unknown keys, legacy
// forms) with the line of the offending key; cross-reference rules
// (unknown arc targets, jump labels, kinds, required fields ...) are
// checked on the model by Playbook.validate so that Validate gives the
// same answers for a playbook built in Go.

var rootKeys = []string{"apiVersion", "kind", "metadata", "workload", "workflow", "keychain", "executor", "workbook"}

// ignoredRootKeys are root keys NoETL's playbook model ignores (pydantic's
// default for unknown fields, noetl/core/dsl/engine/models/executor.py
// Playbook): Load warns and keeps their value verbatim in Playbook.Ignored;
// templates do not see them.
var ignoredRootKeys = map[string]string{
	"tracing": "root tracing is not read by NoETL's playbook model (it is ignored there too): kept verbatim and ignored; this engine traces every execution with OpenTelemetry (README \"Observability\")",
	"spec":    "root spec is not read by NoETL's playbook model (it is ignored there too, and templates do not see it: {{ spec.x }} is undefined): kept verbatim and ignored; put inputs in workload and executor settings under executor.spec",
}

func (l *loader) playbook(root *yaml.Node) *Playbook {
	fs, ok := l.fields(root, "", "the playbook document")
	if !ok {
		return nil
	}
	if e, ok := index(fs)["kind"]; ok {
		if d := deref(e.v); d != nil && d.Kind == yaml.ScalarNode && d.Value == "Subscription" {
			// Only this problem: the rest of the document is not a playbook.
			l.errf(e.k, "kind", "kind Subscription is a subscription resource, not a playbook: register it through the subscriptions API instead of running it")
			return nil
		}
	}
	p := &Playbook{}
	for _, e := range fs {
		path := e.key
		switch e.key {
		case "apiVersion":
			if s, ok := l.str(e.v, path, "apiVersion"); ok {
				switch s {
				case APIVersion:
				case "noetl.io/v10":
					// NoETL's models accept v10 as a synonym of v2.
					s = APIVersion
				case LegacyAPIVersion:
					l.warnf(e.k, path, "apiVersion %s is deprecated: loaded as %s (write apiVersion: %s)", s, APIVersion, APIVersion)
					s = APIVersion
				default:
					l.errf(e.k, path, "unsupported apiVersion %q: use %s", s, APIVersion)
				}
				p.APIVersion = s
			}
		case "kind":
			l.choice(&p.Kind, e, path, "kind", false, "kind must be Playbook, got %q", "Playbook")
		case "metadata":
			l.metadata(p, e.v, path)
		case "workload":
			p.Workload = l.dict(e.v, path, "workload")
		case "workflow":
			p.Workflow = l.steps(e.v, path)
		case "keychain":
			p.Keychain = l.keychain(e.v, path)
		case "executor":
			l.executor(p, e.v, path)
		case "workbook":
			p.Workbook = l.workbook(e.v, path)
		case "tracing", "spec":
			l.warnf(e.k, path, "%s", ignoredRootKeys[e.key])
			if p.Ignored == nil {
				p.Ignored = map[string]any{}
			}
			p.Ignored[e.key] = l.value(e.v, path)
		case "vars":
			l.errf(e.k, path, "root vars is not canonical (v10 has no root vars): move static inputs to workload (read them as workload.<name>) and values computed at run time to set (step set or a task policy's then.set with ctx.<name> targets; v10: set_ctx) and read them as ctx.<name>")
		default:
			l.errf(e.k, path, "unknown root key %q (allowed: %s)", e.key, strings.Join(rootKeys, ", "))
		}
	}
	l.renameSteps(p)
	return p
}

// stepName is the identifier a step name that is not one is loaded as:
// every run of characters other than letters, digits and _ becomes one _
// (a leading digit gets a _ prefix), e.g. "tests/fixtures/hello_world" →
// "tests_fixtures_hello_world". NoETL accepts any string as a step name
// (its master regression playbook names steps by catalog path); here a
// step name must be an identifier, because templates read a step's
// result as {{ <name> }} and the name is part of the keys of the
// execution's documents and Cloud Tasks.
func stepName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		if r == '_' || r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = r == '_'
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" {
		return ""
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	return out
}

// renameSteps points the arcs, the entry and final steps and compensate at
// the identifiers of renamed steps (loader.renamed).
func (l *loader) renameSteps(p *Playbook) {
	if len(l.renamed) == 0 {
		return
	}
	re := func(name *string) {
		if n, ok := l.renamed[*name]; ok {
			*name = n
		}
	}
	re(&p.Entry)
	re(&p.FinalStep)
	for _, s := range p.Workflow {
		if s == nil {
			continue
		}
		re(&s.Compensate)
		if s.Next != nil {
			for _, a := range s.Next.Arcs {
				if a != nil {
					re(&a.Step)
				}
			}
		}
	}
}

func (l *loader) metadata(p *Playbook, n *yaml.Node, path string) {
	l.walk(n, path, "metadata", func(e entry, fp string) {
		switch e.key {
		case "name":
			p.Metadata.Name, _ = l.str(e.v, fp, "metadata.name")
		case "path":
			p.Metadata.Path, _ = l.str(e.v, fp, "metadata.path")
		case "version":
			p.Metadata.Version, _ = l.str(e.v, fp, "metadata.version")
		case "description":
			p.Metadata.Description, _ = l.str(e.v, fp, "metadata.description")
		case "labels", "tags", "exposed_in_ui", "exposes_as_mcp", "agent", "capabilities":
			if p.Metadata.Extra == nil {
				p.Metadata.Extra = map[string]any{}
			}
			p.Metadata.Extra[e.key] = l.value(e.v, fp)
		default:
			l.warnf(e.k, fp, "unknown metadata key %q ignored (known: name, path, version, description, labels, tags, exposed_in_ui, exposes_as_mcp, agent, capabilities)", e.key)
		}
	})
}

func (l *loader) keychain(n *yaml.Node, path string) []any {
	items, ok := l.list(n, path, "keychain", "a list of credential declarations like {name: pg, kind: postgres_credential}")
	if !ok {
		return nil
	}
	seen := map[string]int{}
	out := make([]any, 0, len(items))
	for i, item := range items {
		ip := idx(path, i)
		fs, ok := l.fields(item, ip, "a keychain entry")
		if !ok {
			continue
		}
		m := index(fs)
		if e, ok := m["name"]; !ok {
			l.errf(item, join(ip, "name"), "keychain entry needs a name (templates read it as keychain.<name>)")
		} else if s, ok := l.str(e.v, join(ip, "name"), "keychain name"); ok {
			if first, dup := seen[s]; dup {
				l.errf(e.k, join(ip, "name"), "duplicate keychain name %q (first at line %d)", s, first)
			}
			seen[s] = e.k.Line
		}
		out = append(out, l.value(item, ip))
	}
	return out
}

// workbook accepts a mapping name → task or a list of {name, kind, ...}.
func (l *loader) workbook(n *yaml.Node, path string) map[string]*Task {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	out := map[string]*Task{}
	add := func(t *Task, k *yaml.Node) {
		if t == nil || t.Name == "" {
			return
		}
		if first, dup := out[t.Name]; dup {
			l.errf(k, t.Path, "duplicate workbook entry %q (first at line %d)", t.Name, first.Line)
			return
		}
		out[t.Name] = t
	}
	switch d.Kind {
	case yaml.MappingNode:
		fs, _ := l.fields(d, path, "workbook")
		for _, e := range fs {
			ep := join(path, e.key)
			if !isIdent(e.key) {
				l.errf(e.k, ep, "workbook entry name %q must be an identifier (letters, digits, _)", e.key)
			}
			var t *Task
			if hasKey(e.v, "tool") && !hasKey(e.v, "kind") {
				t = l.workbookEntry(e.v, ep, e.key)
			} else {
				t = l.task(e.v, ep, e.key, false, false)
			}
			l.workbookPagination(t)
			add(t, e.k)
		}
	case yaml.SequenceNode:
		for i, item := range d.Content {
			ip := idx(path, i)
			var t *Task
			if hasKey(item, "tool") && !hasKey(item, "kind") {
				t = l.workbookEntry(item, ip, "")
			} else {
				t = l.task(item, ip, "", true, false)
			}
			l.workbookPagination(t)
			if t != nil && t.Name == "" {
				l.errf(item, join(ip, "name"), "workbook entry needs a name")
			}
			add(t, item)
		}
	default:
		l.errf(n, path, "workbook must be a list of {name, tool: {kind, ...}} (NoETL), a list of {name, kind, ...} or a mapping name → task, got %s", describe(d))
	}
	return out
}

// workbookEntry converts NoETL's workbook entry shape {name, desc, tool:
// {kind, ...}, assert: {...}} (WorkbookTask; desc is documentation). label
// is the entry's name in the mapping form ("" in the list form, where name
// gives it).
func (l *loader) workbookEntry(n *yaml.Node, path, label string) *Task {
	fs, ok := l.fields(n, path, "a workbook entry")
	if !ok {
		return nil
	}
	m := index(fs)
	name := label
	if e, ok := m["name"]; ok {
		if s, ok := l.str(e.v, join(path, "name"), "workbook entry name"); ok {
			if label != "" && s != label {
				l.errf(e.k, join(path, "name"), "workbook entry %q is stored under %q", s, label)
			}
			name = s
		}
	}
	te := m["tool"]
	tp := join(path, "tool")
	if d := deref(te.v); d == nil || d.Kind != yaml.MappingNode {
		l.errf(te.k, tp, "a workbook entry's tool must be one task mapping {kind: ..., ...}, got %s", describe(d))
		return nil
	}
	if hasKey(te.v, "name") {
		l.errf(te.k, join(tp, "name"), "the workbook entry is named by its name, beside tool: remove tool.name")
	}
	t := l.task(te.v, tp, name, false, false)
	if t == nil {
		return nil
	}
	t.Path = tp
	if name != "" && !isIdent(name) {
		l.errf(m["name"].k, join(path, "name"), "workbook entry name %q must be an identifier (letters, digits, _)", name)
	}
	for _, e := range fs {
		ep := join(path, e.key)
		switch e.key {
		case "name", "tool", "desc":
			// desc is documentation (NoETL's fixtures write it).
		case "assert":
			a := l.dict(e.v, ep, "assert")
			if t.Assert != nil && a != nil {
				l.errf(e.k, ep, "workbook entry has assert both beside and inside tool: keep one")
				continue
			}
			t.Assert = a
		case "sink":
			l.errf(e.k, ep, "workbook sink is not canonical (there is no special sink): add a storage task after the one that calls this entry")
		default:
			l.errf(e.k, ep, "unknown workbook entry key %q (allowed: name, desc, tool, assert)", e.key)
		}
	}
	return t
}
