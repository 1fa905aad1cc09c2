package dsl

import (
	"go.yaml.in/yaml/v3"
)

// This file normalises the list-shaped next of older dialects.

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
