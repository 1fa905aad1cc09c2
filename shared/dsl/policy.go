package dsl

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file decodes a task's policy (NoETL canonical v10 retry spec):
// its rules, their when and then.

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
		if l.strField(e, ep, "then", map[string]*string{"do": &th.Do, "backoff": &th.Backoff, "to": &th.To}) {
			if e.key == "backoff" && th.Backoff == "fixed" {
				// NoETL's constant delay (any backoff other than none,
				// linear and exponential waits delay seconds).
				th.Backoff = "none"
			}
			continue
		}
		switch e.key {
		case "attempts":
			th.Attempts, _ = l.integer(e.v, ep, "then.attempts")
		case "delay":
			th.Delay, _ = l.num(e.v, ep, "then.delay (seconds)")
		case "max_delay":
			th.MaxDelay, _ = l.num(e.v, ep, "then.max_delay (seconds)")
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
