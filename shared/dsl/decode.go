package dsl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file turns the YAML tree into the model (NoETL DSL spec "Document", "Step",
// "Tasks"; NoETL canonical v10 retry spec for task policy; NoETL event-driven retry design for legacy retry; NoETL distributed loop design's
// retry.on_success is in pagination.go; DSL v2 set/output/script/cursor
// blocks and the executor spec are in v2.go, the per-kind task keys in
// kinds.go). It reports
// shape problems (wrong types, unknown keys, legacy forms) with the line of
// the offending key; cross-reference rules (unknown arc targets, jump
// labels, kinds, required fields ...) are checked on the model by
// Playbook.validate so that Validate gives the same answers for a playbook
// built in Go.

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

// ---- steps ----------------------------------------------------------------

// legacyResult reads NoETL's legacy step `result:` block, which older
// fixtures give the keys of today's output block (output_select, store,
// ...: how the step's result is stored and which fields stay inline), as
// the step's output block, with a warning; nil (nothing reported) when the
// block has a key the output block does not know, which stays an error.
func (l *loader) legacyResult(e entry, path string) *Output {
	d := deref(e.v)
	if d == nil || d.Kind != yaml.MappingNode {
		return nil
	}
	fs := l.peekFields(d)
	if len(fs) == 0 {
		return nil
	}
	for _, f := range fs {
		if !oneOf(f.key, outputKeys) {
			return nil
		}
	}
	l.warnf(e.k, path, "step result: {%s} is NoETL's legacy spelling of the step's output block: loaded as output: {%s} (write it so)", strings.Join(keysOf(fs), ", "), strings.Join(keysOf(fs), ", "))
	return l.output(e.v, path)
}

var stepKeys = []string{"step", "desc", "spec", "loop", "input", "args", "tool", "set", "set_ctx", "output", "next", "compensate"}

// legacyStepKeys are step keys of older dialects, rejected with the
// canonical rewrite (NoETL DSL spec "Step", canonical step spec §13).
var legacyStepKeys = map[string]string{
	"when":    "step.when is not canonical: put the condition on the incoming arc (next.arcs[].when of the step that routes here), or gate the step with spec.policy.admit.rules",
	"eval":    "step.eval is not canonical (legacy eval is rejected): handle task outcomes with tool[].spec.policy.rules (when → then.do: continue|retry|jump|break|fail)",
	"expr":    "step.expr is not canonical: when is the only conditional keyword; route with next.arcs[].when or gate the step with spec.policy.admit.rules",
	"case":    "step.case is not canonical: route with next.arcs[].when (event.name is in scope, e.g. \"{{ event.name == 'step.failed' }}\") and handle task outcomes with tool[].spec.policy.rules",
	"sink":    "step.sink is not canonical (there is no special sink): add a storage task after the producing one, e.g. tool: [{name: fetch, kind: http, ...}, {name: store, kind: postgres, command: ...}]",
	"save":    "step.save is not canonical (there is no special sink): add a storage task after the producing one, e.g. tool: [{name: fetch, kind: http, ...}, {name: store, kind: postgres, command: ...}]",
	"type":    "step.type is not canonical: declare the action as a task, tool: {kind: <type>, ...}, and move its fields (code, url, command, ...) under tool",
	"name":    "step.name is not canonical: a step is named with step: <name>",
	"with":    "step.with is not canonical: use input (step input, or next.arcs[].set / args on the incoming arc)",
	"data":    "step.data is not canonical: use input (step input, or next.arcs[].set / args on the incoming arc)",
	"result":  "step.result is not canonical: a step's result is its tool's output (read it as {{ <step> }} or output.data); configure storage with output (step.output: {output_select: [...], store: {...}})",
	"outcome": "step.outcome is not canonical: the outcome is the output envelope of a task (output.status, output.data, ...), read in policy rules",
}

// ctxTargets lists assignments as "ctx.a: ..., ctx.b: ..." for messages.
func ctxTargets(as []Assignment) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = "ctx." + a.Key + ": ..."
	}
	return strings.Join(parts, ", ")
}

// misplacedTaskKey is the error for a step key, or a legacy key, written
// on a task: the canonical rewrite in one message (never "move it to the
// step" when the step would reject it in turn); "" for other keys.
func misplacedTaskKey(key string) string {
	const rules = "tool.spec.policy.rules: [{when: \"{{ output.status == 'error' }}\", then: {do: retry, attempts: 3}}, {else: {then: {do: continue}}}] (do: continue | retry | jump | break | fail)"
	switch key {
	case "next", "loop", "desc", "compensate":
		return fmt.Sprintf("%s is a step key, not a task key: move it to the step, beside tool:", key)
	case "eval", "case":
		return fmt.Sprintf("task %s is not canonical (legacy %s is rejected): decide on this task's outcome with its policy rules, %s; route to other steps with the step's next.arcs[].when (event.name is in scope)", key, key, rules)
	case "expr":
		return "task expr is not canonical (when is the only conditional keyword): a condition on this task's outcome is a policy rule, " + rules
	case "when":
		return "task when is not canonical: to run the step only under a condition, guard the arc that leads to it (next.arcs[].when of the routing step) or gate it with the step's spec.policy.admit.rules; to act on this task's outcome, use " + rules
	case "sink", "save":
		return fmt.Sprintf("task %s is not canonical (there is no special sink): add a storage task after this one in the step's tool list, e.g. tool: [{name: fetch, kind: http, ...}, {name: store, kind: postgres, command: ...}]", key)
	case "vars", "set_ctx", "set_iter":
		return fmt.Sprintf("task %s is not canonical: write the values with the task's set (DSL v2: set: {ctx.x: ..., iter.y: ...}) or a policy rule's then.set", key)
	case "result", "outcome":
		return fmt.Sprintf("task %s is not canonical: a task's result is its output (read it as output.data in its policy rules, {{ <label> }} in later tasks); storage goes in the task's output block, output: {store: {...}, select: [...]}", key)
	case "data":
		return "task data is not canonical: the values a task receives are its input, tool.input: {...} (v10: args)"
	}
	return ""
}

// actionKeys are task fields that old dialects put directly on the step.
var actionKeys = map[string]bool{
	"code": true, "code_b64": true, "url": true, "endpoint": true, "method": true, "params": true,
	"headers": true, "body": true, "json": true, "payload": true, "command": true, "commands": true,
	"sql": true, "query": true, "path": true, "auth": true, "credentials": true, "connection": true,
	"libs": true, "timeout": true, "version": true, "workload": true, "kind": true, "return_step": true,
}

func (l *loader) steps(n *yaml.Node, path string) []*Step {
	d := deref(n)
	if isNull(d) {
		l.errf(n, path, "workflow must be a non-empty list of steps")
		return nil
	}
	if d.Kind != yaml.SequenceNode {
		hint := ""
		if d.Kind == yaml.MappingNode {
			hint = ": write each step as a list item, - step: <name> with its keys under it (workflow: [{step: start, tool: {...}}, ...]), not a mapping name → step"
		}
		l.errf(n, path, "workflow must be a list of steps, got %s%s", describe(d), hint)
		return nil
	}
	if len(d.Content) == 0 {
		l.errf(n, path, "workflow must be a non-empty list of steps")
		return nil
	}
	out := make([]*Step, 0, len(d.Content))
	for i, item := range d.Content {
		if s := l.step(item, idx(path, i)); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (l *loader) step(n *yaml.Node, path string) *Step {
	if d := deref(n); d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
		l.errf(n, path, "a step must be a mapping like {step: %s, tool: {...}, next: {...}}, got %s", clip(d.Value), describe(d))
		return nil
	}
	fs, ok := l.fields(n, path, "a step")
	if !ok {
		return nil
	}
	s := &Step{Line: nodeLine(deref(n)), Path: path}
	m := index(fs)
	if e, ok := m["step"]; ok {
		s.Name, _ = l.str(e.v, join(path, "step"), "step name")
		if s.Name != "" && !isIdent(s.Name) {
			if id := stepName(s.Name); id != "" {
				if l.renamed == nil {
					l.renamed = map[string]string{}
				}
				for orig, other := range l.renamed {
					if other == id && orig != s.Name {
						l.errf(e.k, join(path, "step"), "step names %q and %q are both loaded as %q (a step name must be an identifier: letters, digits, _): rename one", orig, s.Name, id)
					}
				}
				l.warnf(e.k, join(path, "step"), "step name %q is not an identifier (letters, digits, _): loaded as %q, the name templates read its result by ({{ %s }}) and events and the API show; arcs to %q follow it", s.Name, id, id, s.Name)
				l.renamed[s.Name] = id
				s.Name = id
			}
		}
	}
	legacyAction := false
	if _, ok := m["type"]; ok {
		legacyAction = true
	}
	if e, ok := m["tool"]; ok {
		if d := deref(e.v); d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
			legacyAction = true
		}
	}
	var retry *entry
	var legacyOut *Output
	input := ""
	for _, e := range fs {
		e := e
		ep := join(path, e.key)
		switch e.key {
		case "step":
		case "desc":
			s.Desc, _ = l.str(e.v, ep, "desc")
		case "compensate":
			s.Compensate, _ = l.str(e.v, ep, "compensate")
		case "spec":
			l.stepSpec(s, e.v, ep)
		case "loop":
			s.Loop = l.loop(e.v, ep)
		case "args", "input":
			s.Input = l.input(s.Input, &input, e, path, "step")
		case "tool":
			s.Tasks = l.tools(s.Name, e.v, ep)
		case "set":
			s.Set = append(s.Set, l.assignments(e.v, ep, "step set", setStep)...)
		case "set_ctx":
			s.Set = append(s.Set, l.patch(e.v, ep, "set_ctx", ScopeCtx)...)
		case "vars":
			// NoETL's legacy step vars (still accepted by NoETL's v10
			// parser, which only refuses root vars: noetl/core/dsl/engine/
			// parser/validation.py): values computed when the step
			// completes, read as vars.<name>. Loaded as set_ctx, whose
			// values templates read as ctx.<name> and, for these
			// playbooks, vars.<name> (template.ScopeParams.Ctx).
			as := l.patch(e.v, ep, "vars", ScopeCtx)
			if len(as) > 0 {
				l.warnf(e.k, ep, "step vars is NoETL's legacy spelling of set_ctx: loaded as set: {%s} (evaluated when the step completes, with the step's result in scope as {{ %s }}); read the values as ctx.<name> (vars.<name> also resolves)", ctxTargets(as), s.Name)
			}
			s.Set = append(s.Set, as...)
		case "output":
			s.Output = l.output(e.v, ep)
		case "next":
			s.Next = l.next(e.v, ep)
		case "retry":
			retry = &e
		case "result":
			if o := l.legacyResult(e, ep); o != nil {
				legacyOut = o
				continue
			}
			l.errf(e.k, ep, "%s", legacyStepKeys[e.key])
		default:
			if msg, ok := legacyStepKeys[e.key]; ok {
				l.errf(e.k, ep, "%s", msg)
			} else if actionKeys[e.key] {
				if !legacyAction {
					l.errf(e.k, ep, "unknown step key %q: task fields go under tool, e.g. tool: {kind: ..., %s: ...}", e.key, e.key)
				}
			} else {
				hint := ""
				if best := nearest(e.key, stepKeys); best != "" {
					hint = fmt.Sprintf(": did you mean %q?", best)
				}
				l.errf(e.k, ep, "unknown step key %q%s (allowed: %s)", e.key, hint, strings.Join(stepKeys, ", "))
			}
		}
	}
	if legacyOut != nil {
		if s.Output != nil {
			l.errf(m["result"].k, join(path, "result"), "step has both output and the legacy result block (NoETL's older spelling of output): keep output")
		} else {
			s.Output = legacyOut
		}
	}
	l.checkAssignments(s.Set)
	if retry != nil {
		l.stepRetry(s, retry, join(path, "retry"))
	}
	l.taskPagination(s)
	return s
}

func (l *loader) stepSpec(s *Step, n *yaml.Node, path string) {
	l.walk(n, path, "step spec", func(e entry, ep string) {
		if e.key != "policy" {
			if s.Spec == nil {
				s.Spec = map[string]any{}
			}
			s.Spec[e.key] = l.value(e.v, ep)
			return
		}
		l.walk(e.v, ep, "step spec.policy", func(pe entry, pp string) {
			switch pe.key {
			case "admit":
				afs, ok := l.fields(pe.v, pp, "spec.policy.admit")
				if !ok {
					return
				}
				am := index(afs)
				for _, ae := range afs {
					ap := join(pp, ae.key)
					switch ae.key {
					case "rules":
						s.Admit = &Policy{Rules: l.rules(ae.v, ap, true)}
					case "mode":
						l.choice(nil, ae, ap, "admit.mode", false, "admit.mode must be exclusive or inclusive, got %q", "exclusive", "inclusive")
					default:
						l.errf(ae.k, ap, "unknown admit key %q (allowed: rules, mode)", ae.key)
					}
				}
				if _, ok := am["rules"]; !ok {
					l.errf(pe.k, join(pp, "rules"), "spec.policy.admit needs rules: [{when: ..., then: {allow: true}}, {else: {then: {allow: false}}}]")
				}
			case "lifecycle":
				l.walk(pe.v, pp, "spec.policy.lifecycle", func(le entry, lp string) {
					switch le.key {
					case "timeout_s":
						if f, ok := l.num(le.v, lp, "lifecycle.timeout_s"); ok {
							s.TimeoutS = f
						}
					case "deadline_s":
						l.warnf(le.k, lp, "lifecycle.deadline_s is not supported yet: ignored")
					default:
						l.errf(le.k, lp, "unknown lifecycle key %q (allowed: timeout_s)", le.key)
					}
				})
			case "failure":
				l.walk(pe.v, pp, "spec.policy.failure", func(fe entry, fp string) {
					if fe.key == "mode" {
						s.FailureMode, _ = l.str(fe.v, fp, "failure.mode")
					} else {
						l.errf(fe.k, fp, "unknown failure key %q (allowed: mode)", fe.key)
					}
				})
			case "emit", "tracing", "quotas", "compensation":
				l.warnf(pe.k, pp, "spec.policy.%s is a reserved placeholder: ignored", pe.key)
			case "rules", "retry":
				l.errf(pe.k, pp, "task control actions are not allowed in step.spec.policy: put them on the task, tool[].spec.policy.rules")
			default:
				l.errf(pe.k, pp, "unknown step policy key %q (allowed: admit, lifecycle, failure)", pe.key)
			}
		})
	})
}

func (l *loader) loop(n *yaml.Node, path string) *Loop {
	fs, ok := l.fields(n, path, "loop")
	if !ok {
		return nil
	}
	lp := &Loop{Line: nodeLine(deref(n)), Path: path}
	if isNull(n) {
		lp.Line = l.lineFor(n, path)
	}
	m := index(fs)
	if _, ok := m["in"]; ok {
		if e, ok := m["collection"]; ok {
			l.errf(e.k, join(path, "collection"), "loop has both in and collection: keep in")
		}
	}
	if _, ok := m["iterator"]; ok {
		if e, ok := m["element"]; ok {
			l.errf(e.k, join(path, "element"), "loop has both iterator and element: keep iterator")
		}
	}
	setMode := func(e entry, p string) {
		mode, ok := l.str(e.v, p, "loop mode")
		if !ok {
			return
		}
		switch mode {
		case "async":
			l.warnf(e.k, p, "loop mode async is deprecated: normalised to parallel")
			mode = "parallel"
		case "sync":
			l.warnf(e.k, p, "loop mode sync is deprecated: normalised to sequential")
			mode = "sequential"
		}
		lp.Mode = mode
	}
	for _, e := range fs {
		ep := join(path, e.key)
		switch e.key {
		case "in", "collection":
			if e.key == "collection" {
				if _, both := m["in"]; both {
					continue
				}
				l.warnf(e.k, ep, "loop.collection is deprecated: normalised to loop.in")
			}
			d := deref(e.v)
			if d != nil && (d.Kind == yaml.MappingNode || isNull(d)) {
				l.errf(e.v, ep, "loop.in must be a template string or a list, got %s%s", describe(d), templateHint(d))
				continue
			}
			if d != nil && d.Kind == yaml.ScalarNode && !strings.Contains(d.Value, "{{") {
				l.errf(e.v, ep, "loop.in must be a list or a template rendering to a list, e.g. in: \"{{ workload.%s }}\"; got the plain string %q", clip(d.Value), clip(d.Value))
				continue
			}
			lp.In = l.value(e.v, ep)
		case "cursor":
			lp.Cursor = l.cursor(e.v, ep)
		case "iterator", "element":
			if e.key == "element" {
				if _, both := m["iterator"]; both {
					continue
				}
				l.warnf(e.k, ep, "loop.element is deprecated: normalised to loop.iterator")
			}
			lp.Iterator, _ = l.str(e.v, ep, "loop.iterator")
		case "mode":
			if sm, ok := m["spec"]; ok && hasKey(sm.v, "mode") {
				l.errf(e.k, ep, "loop has both mode and spec.mode: keep spec.mode")
				continue
			}
			l.warnf(e.k, ep, "loop.mode is deprecated: write loop.spec.mode")
			setMode(e, ep)
		case "concurrency", "max_in_flight":
			if sm, ok := m["spec"]; ok && hasKey(sm.v, "max_in_flight") {
				l.errf(e.k, ep, "loop has both %s and spec.max_in_flight: keep spec.max_in_flight", e.key)
				continue
			}
			l.warnf(e.k, ep, "loop.%s is deprecated: write loop.spec.max_in_flight", e.key)
			l.maxInFlight(lp, e, ep)
		case "spec":
			l.walk(e.v, ep, "loop.spec", func(se entry, sp string) {
				switch se.key {
				case "mode":
					setMode(se, sp)
				case "max_in_flight":
					l.maxInFlight(lp, se, sp)
				case "allow_set_ctx":
					lp.AllowSetCtx, _ = l.boolean(se.v, sp, "allow_set_ctx")
				case "policy":
					l.walk(se.v, sp, "loop.spec.policy", func(pe entry, pp string) {
						if pe.key != "exec" {
							l.warnf(pe.k, pp, "loop.spec.policy.%s is not part of NoETL's loop policy (it has exec only): ignored", pe.key)
							return
						}
						l.choice(&lp.Exec, pe, pp, "loop.spec.policy.exec", false, "loop.spec.policy.exec must be distributed or local, got %q", "distributed", "local")
					})
				case "frame":
					lp.Frame = l.frame(se.v, sp)
				default:
					if lp.Spec == nil {
						lp.Spec = map[string]any{}
					}
					lp.Spec[se.key] = l.value(se.v, sp)
				}
			})
		default:
			l.errf(e.k, ep, "unknown loop key %q (allowed: in, cursor, iterator, spec)", e.key)
		}
	}
	if lp.Mode == "" {
		lp.Mode = "sequential"
	}
	if lp.Cursor != nil && lp.Frame == nil {
		lp.Frame = defaultFrame()
	}
	return lp
}

// ---- tasks ----------------------------------------------------------------

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

func (l *loader) taskPolicy(n *yaml.Node, path string) *Policy {
	if d := deref(n); d != nil && d.Kind == yaml.SequenceNode {
		l.errf(n, path, "spec.policy must be an object with a rules list: spec: {policy: {rules: [...]}}")
		return nil
	}
	fs, ok := l.fields(n, path, "spec.policy")
	if !ok {
		return nil
	}
	p := &Policy{}
	m := index(fs)
	if _, ok := m["rules"]; !ok {
		l.errf(deref(n), join(path, "rules"), "spec.policy needs rules: a list of {when: ..., then: {do: ...}} and an optional {else: {then: {...}}}")
	}
	for _, e := range fs {
		ep := join(path, e.key)
		switch e.key {
		case "rules":
			p.Rules = l.rules(e.v, ep, false)
		case "mode", "on_unmatched", "before", "after", "finally":
			l.warnf(e.k, ep, "spec.policy.%s is a reserved placeholder: ignored", e.key)
		default:
			l.errf(e.k, ep, "unknown policy key %q (allowed: rules)", e.key)
		}
	}
	return p
}

// rules converts a rule list (NoETL canonical v10 retry spec §2). admit selects step admission
// rules (then.allow) instead of task rules (then.do).
func (l *loader) rules(n *yaml.Node, path string, admit bool) []*Rule {
	items, _ := l.list(n, path, "rules", "a list of {when: ..., then: {...}} / {else: {then: {...}}}")
	var out []*Rule
	sawElse := false
	for i, item := range items {
		ip := idx(path, i)
		fs, ok := l.fields(item, ip, "a rule")
		if !ok {
			continue
		}
		r := &Rule{Line: nodeLine(deref(item)), Path: ip}
		m := index(fs)
		_, hasWhen := m["when"]
		_, hasThen := m["then"]
		elseE, hasElse := m["else"]
		for _, e := range fs {
			if e.key != "when" && e.key != "then" && e.key != "else" {
				hint := ""
				if e.key == "do" || e.key == "allow" {
					hint = ": put it under then"
				}
				l.errf(e.k, join(ip, e.key), "unknown rule key %q (a rule is {when: ..., then: {...}} or {else: {then: {...}}})%s", e.key, hint)
			}
		}
		switch {
		case hasElse && hasThen && !hasWhen && isNull(elseE.v):
			// `- else:` with then: at the same indentation (NoETL's
			// v10_canonical_example): NoETL's PolicyRule model reads it as
			// a rule without when, i.e. the catch-all.
			r.Else = true
			l.warnf(elseE.k, join(ip, "else"), "else: with no value and then: beside it (then is indented as a sibling of else): read as {else: {then: {...}}}; indent then under else")
			r.Then = l.then(m["then"].v, join(ip, "then"), admit)
		case hasElse:
			r.Else = true
			if hasWhen {
				l.errf(elseE.k, join(ip, "else"), "a rule has either when or else, not both")
			}
			if hasThen {
				l.errf(m["then"].k, join(ip, "then"), "in an else rule, then goes under else: {else: {then: {...}}}")
			}
			efs, ok := l.fields(elseE.v, join(ip, "else"), "else")
			if !ok {
				break
			}
			em := index(efs)
			if _, ok := em["then"]; !ok && len(efs) > 0 && allThenKeys(efs, admit) {
				// NoETL fixtures write {else: {do: continue}}; NoETL's
				// task_sequence expects {else: {then: {...}}}.
				l.warnf(elseE.k, join(ip, "else"), "else without then (%s directly under else): read as {else: {then: {%s: ...}}}; write the then", strings.Join(keysOf(efs), ", "), strings.Join(keysOf(efs), ": ..., "))
				r.Then = l.then(elseE.v, join(ip, "else"), admit)
				break
			}
			for _, e := range efs {
				if e.key != "then" {
					l.errf(e.k, join(ip, "else."+e.key), "unknown else key %q: write {else: {then: {...}}}", e.key)
				}
			}
			if te, ok := em["then"]; ok {
				r.Then = l.then(te.v, join(ip, "else.then"), admit)
			} else {
				l.errf(elseE.k, join(ip, "else.then"), "else needs then: {else: {then: {...}}}")
			}
		default:
			if !hasWhen {
				l.errf(deref(item), join(ip, "when"), "rule needs when (or use {else: {then: {...}}})")
			} else {
				r.When, _ = l.template(m["when"].v, join(ip, "when"), "when")
			}
			if !hasThen {
				l.errf(deref(item), join(ip, "then"), "rule needs then")
			} else {
				r.Then = l.then(m["then"].v, join(ip, "then"), admit)
			}
		}
		if sawElse {
			l.warnf(item, ip, "rule is unreachable: it follows an else rule")
		}
		if r.Else {
			sawElse = true
		}
		out = append(out, r)
	}
	return out
}

// thenKeys are the keys of a task rule's then; admitThenKeys of an admit
// rule's.
var (
	thenKeys      = []string{"do", "attempts", "backoff", "delay", "max_delay", "to", "set", "set_iter", "set_ctx"}
	admitThenKeys = []string{"allow"}
)

// allThenKeys reports whether every entry is a then key (the {else: {do:
// ...}} shorthand).
func allThenKeys(fs []entry, admit bool) bool {
	keys := thenKeys
	if admit {
		keys = admitThenKeys
	}
	for _, e := range fs {
		if !oneOf(e.key, keys) {
			return false
		}
	}
	return true
}

func (l *loader) then(n *yaml.Node, path string, admit bool) Then {
	var th Then
	fs, ok := l.fields(n, path, "then")
	if !ok {
		return th
	}
	m := index(fs)
	for _, e := range fs {
		ep := join(path, e.key)
		if admit {
			switch e.key {
			case "allow":
				if b, ok := l.boolean(e.v, ep, "then.allow"); ok {
					th.Allow = &b
				}
			case "do", "attempts", "backoff", "delay", "max_delay", "to", "set", "set_iter", "set_ctx":
				l.errf(e.k, ep, "admit rules only decide allow: true|false; %s belongs to task policy (tool[].spec.policy.rules)", e.key)
			default:
				l.errf(e.k, ep, "unknown admit then key %q (allowed: allow)", e.key)
			}
			continue
		}
		switch e.key {
		case "do":
			th.Do, _ = l.str(e.v, ep, "then.do")
		case "attempts":
			th.Attempts, _ = l.integer(e.v, ep, "then.attempts")
		case "backoff":
			th.Backoff, _ = l.str(e.v, ep, "then.backoff")
			if th.Backoff == "fixed" {
				// NoETL's constant delay (any backoff other than none,
				// linear and exponential waits delay seconds).
				th.Backoff = "none"
			}
		case "delay":
			th.Delay, _ = l.num(e.v, ep, "then.delay (seconds)")
		case "max_delay":
			th.MaxDelay, _ = l.num(e.v, ep, "then.max_delay (seconds)")
		case "to":
			th.To, _ = l.str(e.v, ep, "then.to")
		case "set":
			th.Set = append(th.Set, l.assignments(e.v, ep, "then.set", setTask)...)
		case "set_iter":
			th.Set = append(th.Set, l.patch(e.v, ep, "then.set_iter", ScopeIter)...)
		case "set_ctx":
			th.Set = append(th.Set, l.patch(e.v, ep, "then.set_ctx", ScopeCtx)...)
		case "allow":
			l.errf(e.k, ep, "then.allow is only valid in step admission rules (spec.policy.admit.rules)")
		default:
			l.errf(e.k, ep, "unknown then key %q (allowed: %s)", e.key, strings.Join(thenKeys, ", "))
		}
	}
	l.checkAssignments(th.Set)
	if admit {
		return th
	}
	if _, ok := m["do"]; !ok {
		th.Do = "continue"
	}
	if th.Do == "retry" {
		if _, ok := m["attempts"]; !ok {
			th.Attempts = 3
			l.warnf(deref(n), join(path, "attempts"), "retry without attempts: defaulting to attempts: 3")
		}
		if _, ok := m["backoff"]; !ok {
			th.Backoff = "none"
		}
	} else {
		for _, k := range []string{"attempts", "backoff"} {
			if e, ok := m[k]; ok {
				l.warnf(e.k, join(path, k), "then.%s only applies to do: retry: ignored for do: %s", k, th.Do)
			}
		}
	}
	return th
}

// ---- next -----------------------------------------------------------------

const nextRewrite = "next: {spec: {mode: exclusive}, arcs: [{step: <name>, when: \"{{ ... }}\"}]}"

func (l *loader) next(n *yaml.Node, path string) *Next {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	switch d.Kind {
	case yaml.ScalarNode:
		l.warnf(n, path, "next: <step> is deprecated: normalised to %s", nextRewrite)
		return &Next{Mode: "exclusive", OnNoMatch: "complete", Line: d.Line, Arcs: []*Arc{{Step: d.Value, Line: d.Line, Path: path}}}
	case yaml.SequenceNode:
		return l.legacyNext(d, path)
	case yaml.MappingNode:
	default:
		l.errf(n, path, "next must be a mapping {spec: {mode: ...}, arcs: [...]}, got %s", describe(d))
		return nil
	}
	fs, _ := l.fields(d, path, "next")
	m := index(fs)
	if _, ok := m["step"]; ok {
		if _, ok := m["arcs"]; !ok {
			l.warnf(d, path, "next: {step: ...} is deprecated: normalised to %s", nextRewrite)
			if a := l.arc(d, path); a != nil {
				return &Next{Mode: "exclusive", OnNoMatch: "complete", Line: d.Line, Arcs: []*Arc{a}}
			}
			return nil
		}
	}
	nx := &Next{Mode: "exclusive", OnNoMatch: "complete", Line: d.Line}
	for _, e := range fs {
		ep := join(path, e.key)
		switch e.key {
		case "spec":
			l.walk(e.v, ep, "next.spec", func(se entry, sp string) {
				switch se.key {
				case "mode":
					nx.Mode, _ = l.str(se.v, sp, "next.spec.mode")
				case "on_no_match":
					l.choice(&nx.OnNoMatch, se, sp, "next.spec.on_no_match", false, "next.spec.on_no_match must be complete or quiet, got %q", "complete", "quiet")
				case "policy":
					// Routing hints placeholder (canonical step spec §5.5).
				default:
					l.errf(se.k, sp, "unknown next.spec key %q (allowed: mode, on_no_match, policy)", se.key)
				}
			})
		case "arcs":
			items, _ := l.list(e.v, ep, "next.arcs", "a list of {step: ..., when: ..., set: ...}")
			for i, item := range items {
				if a := l.arc(item, idx(ep, i)); a != nil {
					nx.Arcs = append(nx.Arcs, a)
				}
			}
		default:
			l.errf(e.k, ep, "unknown next key %q (allowed: spec, arcs)", e.key)
		}
	}
	return nx
}

// legacyNext normalises a list-shaped next: [x], [{step: x, when: ...}] and
// the older [{when: ..., then: [...]}, {else: [...]}].
func (l *loader) legacyNext(d *yaml.Node, path string) *Next {
	nx := &Next{Mode: "exclusive", OnNoMatch: "complete", Line: d.Line}
	conditional := false
	for i, item := range d.Content {
		ip := idx(path, i)
		di := deref(item)
		if di != nil && di.Kind == yaml.MappingNode {
			fs, _ := l.fields(di, ip, "a next entry")
			m := index(fs)
			_, hasThen := m["then"]
			elseE, hasElse := m["else"]
			if hasThen || hasElse {
				conditional = true
				when := ""
				targets := elseE
				tp := join(ip, "else")
				if hasThen {
					targets, tp = m["then"], join(ip, "then")
					if w, ok := m["when"]; ok {
						when, _ = l.template(w.v, join(ip, "when"), "when")
					} else {
						l.errf(di, join(ip, "when"), "a legacy next entry with then needs when")
					}
				}
				for _, e := range fs {
					if e.key != "when" && e.key != "then" && e.key != "else" {
						l.errf(e.k, join(ip, e.key), "unknown key %q in a legacy next entry (allowed: when, then, else)", e.key)
					}
				}
				arcs := l.arcList(targets.v, tp)
				if len(arcs) > 1 {
					l.errf(targets.k, tp, "cannot normalise a legacy next branch with %d targets under exclusive routing: rewrite as %s with one arc per target", len(arcs), nextRewrite)
				}
				for _, a := range arcs {
					if when != "" {
						if a.When != "" {
							l.errf(targets.k, tp, "cannot combine the branch's when with the arc's own when: rewrite as %s", nextRewrite)
						}
						a.When = when
					}
					nx.Arcs = append(nx.Arcs, a)
				}
				continue
			}
		}
		if a := l.arc(item, ip); a != nil {
			nx.Arcs = append(nx.Arcs, a)
		}
	}
	if !conditional && len(nx.Arcs) > 1 {
		guarded := false
		for _, a := range nx.Arcs {
			if a.When != "" {
				guarded = true
			}
		}
		if !guarded {
			nx.Mode = "inclusive"
		}
	}
	l.warnf(d, path, "next as a list is deprecated: normalised to next: {spec: {mode: %s}, arcs: [...]} (%s routing)", nx.Mode, nx.Mode)
	return nx
}

func (l *loader) arcList(n *yaml.Node, path string) []*Arc {
	d := deref(n)
	if d != nil && d.Kind == yaml.SequenceNode {
		var out []*Arc
		for i, item := range d.Content {
			if a := l.arc(item, idx(path, i)); a != nil {
				out = append(out, a)
			}
		}
		return out
	}
	if a := l.arc(n, path); a != nil {
		return []*Arc{a}
	}
	return nil
}

func (l *loader) arc(n *yaml.Node, path string) *Arc {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
		return &Arc{Step: d.Value, Line: d.Line, Path: path}
	}
	fs, ok := l.fields(n, path, "an arc")
	if !ok {
		return nil
	}
	a := &Arc{Line: nodeLine(d), Path: path}
	m := index(fs)
	if _, ok := m["step"]; !ok {
		l.errf(d, join(path, "step"), "arc needs step: <target step name>")
	}
	for _, e := range fs {
		ep := join(path, e.key)
		switch e.key {
		case "step":
			a.Step, _ = l.str(e.v, ep, "arc step")
		case "when":
			a.When, _ = l.template(e.v, ep, "arc when")
		case "args":
			a.Args = l.dict(e.v, ep, "arc args")
		case "set":
			a.Set = l.assignments(e.v, ep, "arc set", setStep)
		case "on":
			on, _ := l.str(e.v, ep, "arc on")
			a.On = ArcOn(on)
		case "data", "with", "input":
			if _, ok := m["args"]; ok {
				l.errf(e.k, ep, "arc has both args and %s: keep args", e.key)
				continue
			}
			l.warnf(e.k, ep, "arc %s is deprecated: normalised to args (DSL v2: write the values with the arc's set, e.g. set: {ctx.x: ...}, and read them in the target's input)", e.key)
			a.Args = l.dict(e.v, ep, "arc "+e.key)
		case "spec":
			l.warnf(e.k, ep, "arc spec is a reserved placeholder: ignored")
		case "cond":
			// NoETL's Arc model ignores unknown keys, so a cond there
			// leaves the arc unguarded; its author meant a guard.
			if _, both := m["when"]; both {
				l.errf(e.k, ep, "arc has both when and cond (cond is not a NoETL arc key): keep when")
				continue
			}
			c, ok := l.str(e.v, ep, "arc cond")
			if !ok {
				continue
			}
			if !strings.Contains(c, "{{") {
				c = "{{ " + c + " }}"
			}
			a.When = c
			l.warnf(e.k, ep, "arc cond is not a NoETL arc key (NoETL ignores it, leaving the arc unguarded): read as its guard, when: %q (write when)", c)
		default:
			l.errf(e.k, ep, "unknown arc key %q (allowed: step, when, set, args, on)", e.key)
		}
	}
	return a
}

// ---- legacy retry (NoETL event-driven retry design) ----------------------------------------------

var legacyRetryKeys = []string{"max_attempts", "initial_delay", "backoff_multiplier", "max_delay", "jitter", "retry_when", "stop_when", "retry_on", "retry_on_status", "backoff", "backoff_seconds", "on_error", "on_success"}

// retryOnKinds maps the error names of a legacy retry_on list to this
// engine's error kinds (outcome.error.kind): NoETL fixtures write
// connection_error for what the http tool reports as connection.
var retryOnKinds = map[string][]string{
	"connection_error": {"connection_error", "connection"},
	"connection":       {"connection", "connection_error"},
	"timeout_error":    {"timeout_error", "timeout"},
}

// retryOnWhen is the retry condition of a legacy retry_on (error kinds)
// and retry_on_status (HTTP statuses) list: an error outcome whose kind or
// HTTP status is listed.
func retryOnWhen(kinds []string, statuses []int) string {
	var conds []string
	if len(kinds) > 0 {
		var quoted []string
		seen := map[string]bool{}
		for _, k := range kinds {
			names := retryOnKinds[k]
			if names == nil {
				names = []string{k}
			}
			for _, n := range names {
				if !seen[n] {
					seen[n] = true
					quoted = append(quoted, "'"+n+"'")
				}
			}
		}
		conds = append(conds, "outcome.error.kind in ["+strings.Join(quoted, ", ")+"]")
	}
	if len(statuses) > 0 {
		parts := make([]string, len(statuses))
		for i, c := range statuses {
			parts[i] = strconv.Itoa(c)
		}
		conds = append(conds, "outcome.http.status in ["+strings.Join(parts, ", ")+"]")
	}
	return WhenOutcome(OutcomeError, "("+strings.Join(conds, " or ")+")")
}

// stepRetry applies a step-level legacy retry block to the step's tasks
// that have no policy of their own.
func (l *loader) stepRetry(s *Step, e *entry, path string) {
	rules, pg, ok := l.legacyRetry(e.v, path)
	if ok && pg != nil {
		l.stepPagination(s, pg)
		return
	}
	if !ok || rules == nil {
		return
	}
	if len(s.Tasks) == 0 {
		l.warnf(e.k, path, "legacy retry on a step without tasks has no effect: ignored")
		return
	}
	for _, t := range s.Tasks {
		if t.Policy != nil {
			l.warnf(e.k, path, "task %q has its own spec.policy: the legacy step retry is not applied to it", t.Name)
			continue
		}
		cp := make([]*Rule, len(rules))
		for i, r := range rules {
			rr := *r
			cp[i] = &rr
		}
		t.Policy = &Policy{Rules: cp}
	}
}

// legacyRetry normalises NoETL event-driven retry design's retry forms (true, N, or a mapping with
// max_attempts, initial_delay, backoff_multiplier, max_delay, jitter,
// retry_when, stop_when; also NoETL distributed loop design's on_error) into task policy rules:
//
//	ok              → continue            (legacy retries only failures)
//	stop_when       → fail                (Legacy: user's expression)
//	retry_when      → retry attempts/backoff/delay/max_delay
//	                  (Legacy; default "{{ outcome.status == 'error' }}")
//	else            → fail
//
// Without retry_when/stop_when it is the single rule error → retry. rules is
// nil when the block disables retry; ok is false on a problem.
//
// A block with on_success (NoETL distributed loop design pagination/polling) returns no rules but
// a *successRetry (see pagination.go) holding the parsed on_success and the
// error rules above minus "ok → continue" (nil when the block has no error
// retry settings: errors then fail the task, as in NoETL); the caller
// rewrites the task pipeline with it.
func (l *loader) legacyRetry(n *yaml.Node, path string) ([]*Rule, *successRetry, bool) {
	d := deref(n)
	line := l.lineFor(d, path)
	cfg := struct {
		attempts  int
		delay     float64
		mult      float64
		maxDelay  float64
		retryWhen string
		stopWhen  string
		// retryOn and retryStatus are the legacy retry_on (error kinds)
		// and retry_on_status (HTTP statuses) lists.
		retryOn     []string
		retryStatus []int
		jitter      bool
	}{attempts: 3, delay: 1.0, mult: 2.0, maxDelay: 60}
	var pg *successRetry
	errCfg := false
	fromLists := false // retry_when built from retry_on / retry_on_status
	if d == nil || d.Kind != yaml.MappingNode {
		switch {
		case d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!bool":
			b, _ := l.boolean(d, path, "retry")
			if !b {
				l.warnf(d, path, "retry: false has no effect: remove it")
				return nil, nil, true
			}
		case d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!int":
			i, ok := l.integer(d, path, "retry")
			if !ok {
				return nil, nil, false
			}
			if i < 0 {
				l.errf(d, path, "retry attempts must be at least 0, got %d", i)
				return nil, nil, false
			}
			if i == 0 {
				l.warnf(d, path, "retry: 0 has no effect: remove it")
				return nil, nil, true
			}
			cfg.attempts = i
		default:
			l.errf(n, path, "retry must be true, a number of attempts or a mapping {max_attempts, initial_delay, backoff_multiplier, max_delay, retry_when}, got %s", describe(d))
			return nil, nil, false
		}
	} else {
		ok := true
		// number stores e's number in *dst when it is at least min
		// (math.SmallestNonzeroFloat64 for "> 0"; bound is the rule as
		// the error states it), else fails the block.
		number := func(e entry, ep string, dst *float64, min float64, bound string) {
			if f, good := l.num(e.v, ep, e.key); good && f >= min {
				*dst = f
			} else {
				if good {
					l.errf(e.k, ep, "%s must be %s", e.key, bound)
				}
				ok = false
			}
		}
		var apply func(n *yaml.Node, path string)
		apply = func(n *yaml.Node, path string) {
			fs, good := l.fields(n, path, "retry")
			if !good {
				ok = false
				return
			}
			for _, e := range fs {
				ep := join(path, e.key)
				if e.key != "on_success" {
					errCfg = true
				}
				switch e.key {
				case "max_attempts":
					if i, good := l.integer(e.v, ep, "max_attempts"); good {
						if i < 1 {
							l.errf(e.k, ep, "max_attempts must be at least 1, got %d", i)
							ok = false
						}
						cfg.attempts = i
					} else {
						ok = false
					}
				case "initial_delay":
					number(e, ep, &cfg.delay, 0, "≥ 0")
				case "backoff_multiplier":
					number(e, ep, &cfg.mult, math.SmallestNonzeroFloat64, "> 0")
				case "max_delay":
					number(e, ep, &cfg.maxDelay, 0, "≥ 0")
				case "jitter":
					// Full jitter on the delay, drawn deterministically
					// from the unit and the attempt (engine.JitteredBackoff).
					if b, good := l.boolean(e.v, ep, "jitter"); good {
						cfg.jitter = b
					} else {
						ok = false
					}
				case "retry_on":
					// NoETL fixtures: retry_on: [timeout, connection_error].
					items, good := l.list(e.v, ep, "retry_on", "a list of error kinds, e.g. [timeout, connection_error]")
					for i, it := range items {
						if k, good := l.str(it, idx(ep, i), "a retry_on error kind"); good && isIdent(k) {
							cfg.retryOn = append(cfg.retryOn, k)
						} else {
							if good {
								l.errf(it, idx(ep, i), "retry_on error kind %q must be an identifier, e.g. timeout, connection_error, rate_limit, server_error", clip(k))
							}
							ok = false
						}
					}
					if !good {
						ok = false
					}
				case "retry_on_status":
					// NoETL fixtures: retry_on_status: [429, 500, 502, 503, 504].
					items, good := l.list(e.v, ep, "retry_on_status", "a list of HTTP statuses, e.g. [429, 503]")
					for i, it := range items {
						if c, good := l.integer(it, idx(ep, i), "a retry_on_status HTTP status"); good {
							cfg.retryStatus = append(cfg.retryStatus, c)
						} else {
							ok = false
						}
					}
					if !good {
						ok = false
					}
				case "backoff", "backoff_seconds":
					// NoETL fixtures: backoff: 5 / backoff_seconds: 2, the
					// seconds before the first retry.
					if _, both := index(fs)["initial_delay"]; both {
						l.errf(e.k, ep, "retry has both %s and initial_delay (the seconds before the first retry): keep initial_delay", e.key)
						ok = false
						continue
					}
					number(e, ep, &cfg.delay, 0, "≥ 0 seconds")
				case "retry_when":
					cfg.retryWhen, _ = l.template(e.v, ep, "retry_when")
				case "stop_when":
					cfg.stopWhen, _ = l.template(e.v, ep, "stop_when")
				case "on_error":
					if !strings.HasSuffix(path, ".on_error") { // one level only
						apply(e.v, ep)
					} else {
						l.errf(e.k, ep, "unexpected nested on_error")
						ok = false
					}
				case "on_success":
					if strings.HasSuffix(path, ".on_error") {
						l.errf(e.k, ep, "unexpected on_success inside on_error: put it beside on_error, under retry")
						ok = false
						continue
					}
					if pg = l.successRetry(e, ep); pg == nil {
						ok = false
					}
				default:
					l.errf(e.k, ep, "unknown retry key %q (legacy retry knows %s; prefer task policy: tool[].spec.policy.rules)", e.key, strings.Join(legacyRetryKeys, ", "))
					ok = false
				}
			}
		}
		apply(d, path)
		if !ok {
			return nil, nil, false
		}
		if len(cfg.retryOn) > 0 || len(cfg.retryStatus) > 0 {
			if cfg.retryWhen != "" {
				l.errf(d, path, "retry has both retry_when and retry_on/retry_on_status: keep one (retry_on lists error kinds, retry_on_status HTTP statuses)")
				return nil, nil, false
			}
			cfg.retryWhen = retryOnWhen(cfg.retryOn, cfg.retryStatus)
			fromLists = true
		}
	}
	backoff := "exponential"
	switch {
	case cfg.mult == 1:
		backoff = "none"
	case cfg.mult != 2:
		l.warnf(d, path, "legacy backoff_multiplier %g is approximated by backoff: exponential (delay * 2^(attempt-1))", cfg.mult)
	}
	retry := Then{Do: "retry", Attempts: cfg.attempts, Backoff: backoff, Delay: cfg.delay, MaxDelay: cfg.maxDelay, Jitter: cfg.jitter}
	mk := func(when string, legacy bool, th Then) *Rule {
		return &Rule{When: when, Then: th, Legacy: legacy, Line: line, Path: path}
	}
	isError := WhenOutcome(OutcomeError, "")
	if pg != nil {
		switch {
		case !errCfg:
		case cfg.retryWhen == "" && cfg.stopWhen == "":
			pg.errRules = []*Rule{mk(isError, false, retry)}
			pg.errDesc = fmt.Sprintf("error → retry (attempts %d, backoff %s, delay %g, max_delay %g)", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
		default:
			if cfg.stopWhen != "" {
				pg.errRules = append(pg.errRules, mk(cfg.stopWhen, true, Then{Do: "fail"}))
			}
			if cfg.retryWhen != "" {
				pg.errRules = append(pg.errRules, mk(cfg.retryWhen, true, retry))
			} else {
				pg.errRules = append(pg.errRules, mk(isError, false, retry))
			}
			pg.errRules = append(pg.errRules, &Rule{Else: true, Then: Then{Do: "fail"}, Line: line, Path: path})
			pg.errDesc = fmt.Sprintf("stop_when → fail, retry_when → retry (attempts %d, backoff %s, delay %g, max_delay %g; legacy names), else → fail", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
		}
		return nil, pg, true
	}
	msg := fmt.Sprintf("legacy retry is deprecated: normalised to task policy spec.policy.rules [error → {do: retry, attempts: %d, backoff: %s, delay: %g, max_delay: %g}]", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
	if cfg.retryWhen == "" && cfg.stopWhen == "" {
		l.warnf(d, path, "%s", msg)
		return []*Rule{mk(isError, false, retry)}, nil, true
	}
	rules := []*Rule{mk(WhenOutcome(OutcomeOK, ""), false, Then{Do: "continue"})}
	if cfg.stopWhen != "" {
		rules = append(rules, mk(cfg.stopWhen, true, Then{Do: "fail"}))
	}
	if cfg.retryWhen != "" {
		rules = append(rules, mk(cfg.retryWhen, true, retry))
	} else {
		rules = append(rules, mk(isError, false, retry))
	}
	rules = append(rules, &Rule{Else: true, Then: Then{Do: "fail"}, Line: line, Path: path})
	if fromLists && cfg.stopWhen == "" {
		l.warnf(d, path, "legacy retry is deprecated: normalised to task policy spec.policy.rules: [{when: \"{{ outcome.status == 'ok' }}\", then: {do: continue}}, {when: \"%s\", then: {do: retry, attempts: %d, backoff: %s, delay: %g, max_delay: %g}}, {else: {then: {do: fail}}}]", cfg.retryWhen, cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
		return rules, nil, true
	}
	l.warnf(d, path, "legacy retry is deprecated: normalised to task policy spec.policy.rules [ok → continue, stop_when → fail, retry_when → retry (attempts %d, backoff %s, delay %g, max_delay %g), else → fail]; retry_when/stop_when are kept verbatim and the worker provides their legacy names (status_code, error, success, result, data, attempt); canonical form: when: \"{{ outcome.status == 'error' and outcome.http.status >= 500 }}\"", cfg.attempts, backoff, cfg.delay, cfg.maxDelay)
	return rules, nil, true
}
