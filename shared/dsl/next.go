package dsl

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file decodes a step's next: its spec and arcs.

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
