package dsl

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file decodes a step's loop block.

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
				case "chunk_size", "batch":
					l.chunkSize(lp, m, se, sp)
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
