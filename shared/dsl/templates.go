package dsl

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/template"
)

// This file finds every template of a playbook: Validate parses each one
// (template.Check: a template that cannot parse is an error with its
// line), and Load warns about names no scope defines (LintUnknownName).
// Python code (code, code_b64, an inline script) is not a template: the
// worker passes it verbatim. Workload values are data (never rendered).

// templateSite is one template string of the model.
type templateSite struct {
	text string
	path string
	line int
	// extra are names defined only at this site (legacy rule names, the
	// cursor's __frame_max_rows).
	extra []string
}

// scopeRoots are the names every template may read (NoETL DSL spec "Templates",
// "DSL v2 names"): the scopes, the boundary envelopes in both spellings,
// the pipeline names and the dialect's loop index.
var scopeRoots = []string{
	"workload", "ctx", "iter", "step", "args", "input", "output", "outcome",
	"execution_id", "keychain", "event", "_prev", "_task", "_attempt",
	"loop_index", "input_data", "job", "result",
}

// legacyRuleNames are the names a rule normalised from a seed-001 retry
// block may read (Rule.Legacy).
var legacyRuleNames = []string{"status_code", "error", "success", "result", "data", "attempt"}

// cursorNames are the names a cursor claim may read besides the step's
// scope (noetl-server FrameSpec: the claim's LIMIT).
var cursorNames = []string{"__frame_max_rows"}

// noCode are config keys holding source code, passed verbatim.
var noCode = map[string]bool{"code": true, "code_b64": true}

// templateSites lists every template string of the playbook, in document
// order.
func (p *Playbook) templateSites() []templateSite {
	var out []templateSite
	add := func(s, path string, line int, extra ...string) {
		if strings.Contains(s, "{{") || strings.Contains(s, "{%") {
			out = append(out, templateSite{text: s, path: path, line: line, extra: extra})
		}
	}
	var value func(v any, path string, line int, extra ...string)
	value = func(v any, path string, line int, extra ...string) {
		switch x := v.(type) {
		case string:
			add(x, path, line, extra...)
		case map[string]any:
			for _, k := range sortedKeys(x) {
				value(x[k], join(path, k), line, extra...)
			}
		case []any:
			for i, e := range x {
				value(e, idx(path, i), line, extra...)
			}
		}
	}
	sets := func(as []Assignment, path string, line int) {
		for _, a := range as {
			ap := a.Path
			if ap == "" {
				ap = join(path, a.Target())
			}
			value(a.Value, ap, line)
		}
	}
	rules := func(pol *Policy, path string, line int) {
		if pol == nil {
			return
		}
		for k, r := range pol.Rules {
			if r == nil {
				continue
			}
			rp := ruleIn(r, path, k)
			var extra []string
			if r.Legacy {
				extra = legacyRuleNames
			}
			add(r.When, join(rp, "when"), r.Line, extra...)
			sets(r.Then.Set, thenPath(r, rp)+".set", r.Line)
		}
	}
	task := func(t *Task, tp string) {
		value(t.Input, join(tp, "input"), t.Line)
		for _, k := range sortedKeys(t.Config) {
			if !noCode[k] {
				value(t.Config[k], join(tp, k), t.Line)
			}
		}
		if sc := t.Script; sc != nil {
			add(sc.URI, join(tp, "script.uri"), t.Line)
			add(sc.Endpoint, join(tp, "script.source.endpoint"), t.Line)
		}
		sets(t.Set, join(tp, "set"), t.Line)
		rules(t.Policy, join(tp, "spec.policy"), t.Line)
	}
	for _, name := range sortedKeys(p.Workbook) {
		if t := p.Workbook[name]; t != nil {
			tp := t.Path
			if tp == "" {
				tp = "workbook." + name
			}
			task(t, tp)
		}
	}
	for i, s := range p.Workflow {
		if s == nil {
			continue
		}
		sp := stepPath(s, i)
		rules(s.Admit, sp+".spec.policy.admit", s.Line)
		if lp := s.Loop; lp != nil {
			lpp := lp.Path
			if lpp == "" {
				lpp = sp + ".loop"
			}
			value(lp.In, join(lpp, "in"), lp.Line)
			add(lp.MaxInFlightTemplate, join(lpp, "spec.max_in_flight"), lp.Line)
			if lp.Frame != nil {
				for _, k := range sortedKeys(lp.Frame.Templates) {
					add(lp.Frame.Templates[k], join(lpp, "spec.frame."+k), lp.Line)
				}
			}
			if c := lp.Cursor; c != nil {
				add(c.Claim, join(lpp, "cursor.claim"), lp.Line, cursorNames...)
				add(c.Auth, join(lpp, "cursor.auth"), lp.Line)
			}
		}
		value(s.Input, sp+".input", s.Line)
		for j, t := range s.Tasks {
			if t == nil {
				continue
			}
			tp := taskPath(t, sp, j)
			task(t, tp)
		}
		sets(s.Set, sp+".set", s.Line)
		if s.Next != nil {
			for k, a := range s.Next.Arcs {
				if a == nil {
					continue
				}
				ap := a.Path
				if ap == "" || a.Implicit {
					ap = fmt.Sprintf("%s.next.arcs[%d]", sp, k)
				}
				add(a.When, join(ap, "when"), a.Line)
				value(a.Args, join(ap, "args"), a.Line)
				sets(a.Set, join(ap, "set"), a.Line)
			}
		}
	}
	return out
}

// templateProblems parses every template (template.Check) and reports the
// ones that do not parse.
func (v *validator) templates() {
	for _, site := range v.p.templateSites() {
		if err := template.Check(site.text); err != nil {
			before := len(v.problems)
			v.add(site.path, site.line, "template does not parse: %v", err)
			var te *template.Error
			if errors.As(err, &te) {
				if line, col, ex := v.p.templatePosition(site.path, site.text, te); line > 0 {
					q := &v.problems[before]
					q.Line, q.Column, q.Excerpt = line, col, ex
				}
			}
		}
	}
}

// templatePosition finds where in the YAML source the parse error te of
// the template text at path is: for a literal block scalar (|) the line of
// the template's line te names (the block's lines follow its indicator's
// line); for a value written on one line, that line. The column and the
// source line come with it when the source line shows the template's text
// unchanged at that place (no escapes before it); line 0 when the path's
// value is not found or the template's line cannot be placed (a folded or
// multi-line flow scalar).
func (p *Playbook) templatePosition(path, text string, te *template.Error) (line, col int, excerpt string) {
	pos, ok := p.scalars[path]
	if !ok {
		return 0, 0, ""
	}
	src := []byte(p.Source)
	n, c := te.Line(), te.Column()
	tline := text // the template's line the error is on
	switch {
	case pos.style&yaml.LiteralStyle != 0:
		if n == 0 {
			if strings.Count(strings.TrimRight(text, "\n"), "\n") > 0 {
				return 0, 0, "" // a line of several the error does not name
			}
			n = 1
		}
		line = pos.line + n
		tline = strings.Split(text, "\n")[n-1]
	case pos.style&yaml.FoldedStyle != 0 || strings.Contains(text, "\n"):
		return 0, 0, ""
	default:
		line = pos.line
	}
	excerpt = sourceLine(src, line)
	if c > 0 && tline != "" {
		// The column when the source line holds the template's line as
		// written (plain, or quoted without escapes before the error).
		if i := strings.Index(excerpt, tline); i >= 0 && strings.Index(excerpt[i+1:], tline) < 0 {
			col = len([]rune(excerpt[:i])) + c
		} else if prefix := []rune(tline); c-1 <= len(prefix) {
			if i := strings.Index(excerpt, string(prefix[:c-1])); i >= 0 && c > 1 {
				col = len([]rune(excerpt[:i])) + c
			}
		}
	}
	return line, col, excerpt
}

// knownNames are the bare names some scope of the playbook defines: the
// scope roots, workload keys, step names, task labels, loop iterators,
// input and arc args keys, bare set targets (ScopeVar) and output names.
func (p *Playbook) knownNames() map[string]bool {
	known := map[string]bool{}
	for _, n := range scopeRoots {
		known[n] = true
	}
	for k := range p.Workload {
		known[k] = true
	}
	task := func(t *Task) {
		known[t.Name] = true
		for k := range t.Input {
			known[k] = true
		}
		for _, a := range t.Set {
			if a.Scope == ScopeVar {
				known[strings.SplitN(a.Key, ".", 2)[0]] = true
			}
		}
		if t.Policy != nil {
			for _, r := range t.Policy.Rules {
				if r == nil {
					continue
				}
				for _, a := range r.Then.Set {
					if a.Scope == ScopeVar {
						known[strings.SplitN(a.Key, ".", 2)[0]] = true
					}
				}
			}
		}
		if o := t.Output; o != nil {
			if o.As != "" {
				known[o.As] = true
			}
			if o.Accumulate != nil && o.Accumulate.ManifestAs != "" {
				known[o.Accumulate.ManifestAs] = true
			}
		}
	}
	for name, t := range p.Workbook {
		known[name] = true
		if t != nil {
			task(t)
		}
	}
	for _, s := range p.Workflow {
		if s == nil {
			continue
		}
		known[s.Name] = true
		if s.Loop != nil && s.Loop.Iterator != "" {
			known[s.Loop.Iterator] = true
		}
		for k := range s.Input {
			known[k] = true
		}
		for _, t := range s.Tasks {
			if t != nil {
				task(t)
			}
		}
		if s.Output != nil && s.Output.As != "" {
			known[s.Output.As] = true
		}
		if s.Next != nil {
			for _, a := range s.Next.Arcs {
				if a != nil {
					for k := range a.Args {
						known[k] = true
					}
				}
			}
		}
	}
	return known
}

// unknownNames warns about template names no scope defines (one warning
// per template and name).
func (p *Playbook) unknownNames() []Problem {
	known := p.knownNames()
	var out []Problem
	for _, site := range p.templateSites() {
		names, err := template.Names(site.text)
		if err != nil {
			continue // reported by Validate
		}
		var missing []string
		for _, n := range names {
			if !known[n] && !oneOf(n, site.extra) {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			continue
		}
		sort.Strings(missing)
		line := lineIn(p.lines, site.path)
		if line == 0 {
			line = site.line
		}
		quoted := make([]string, len(missing))
		for i, n := range missing {
			quoted[i] = strconv.Quote(n)
		}
		what := "the name " + quoted[0] + ", which no scope defines"
		if len(missing) > 1 {
			what = "the names " + strings.Join(quoted, ", ") + ", which no scope defines"
		}
		out = append(out, Problem{Line: line, Path: site.path, Severity: SeverityWarning, Code: LintUnknownName,
			Message: fmt.Sprintf("template %s reads %s (not a scope, workload key, step name, task label, loop iterator, input key or set target): it renders empty", clipTemplate(site.text), what)})
	}
	return out
}

func clipTemplate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return strconv.Quote(s)
}
