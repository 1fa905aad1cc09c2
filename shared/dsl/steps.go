package dsl

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file decodes a step (NoETL DSL spec "Step"): its keys, its spec
// block and its step policy.

var stepKeys = []string{"step", "desc", "spec", "loop", "input", "args", "tool", "set", "set_ctx", "output", "next", "compensate"}

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
