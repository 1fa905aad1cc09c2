package dsl

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file normalises NoETL distributed loop design's legacy `retry.on_success` (pagination and
// polling by re-calling an http task) into the canonical jump pipeline the
// worker runs (NoETL canonical v10 retry spec §7: "pagination streams: do: jump back to
// fetch_page until do: break").
//
// Accepted (step-level retry, or retry inside the http task):
//
//	retry:
//	  on_success:
//	    while: "{{ response.paging.hasMore }}"  # required, one expression
//	    max_attempts: 100                       # calls in all (default 100)
//	    next_call:                              # optional (none = polling)
//	      params:  {page: "{{ response.paging.page + 1 }}"}
//	      headers: {X-Cursor: "{{ response.next }}"}
//	      url: "{{ response.links.next }}"
//	    collect: append                         # or {strategy: append|replace|collect,
//	    merge_path: data                        #     path: data.items, into: x}
//	  on_error: {...}                           # optional, NoETL event-driven retry design keys
//
// In while and next_call, `response` and its alias `page` name the decoded
// body of the call just made (outcome.result.data) and `iteration` the
// 1-based number of that call, as in NoETL.
//
// Generated, for the http task T of step S (label C = "<S>_collect" for a
// step-level block, "<T>_collect" for a task-level one):
//
//   - T.params[k] (and T.headers[k], T.url) for each next_call entry read
//     the value the previous call computed, falling back to the original:
//     "{{ iter.k | default(<original>) }}" (params; iter['k'] when k is not
//     an identifier), "{{ iter._headers['k'] | default(<original>) }}",
//     "{{ iter._url | default(<original>) }}"; an original that is mixed
//     text becomes "{% if REF is defined %}{{ REF }}{% else %}<original>{%
//     endif %}", a missing one "{{ REF }}" (nil: the tool skips it);
//   - T.spec.policy.rules =
//     1. when "{{ outcome.status == 'ok' and (iter._iteration | default(1))
//     < MAX and (WHILE) }}" → {do: jump, to: T, set_iter: {<next_call
//     params>, _headers: {...}, _url: ..., _collected: ACC, _iteration:
//     "{{ (iter._iteration | default(1)) + 1 }}"}};
//     2. when "{{ outcome.status == 'ok' }}" → {do: continue, set_iter:
//     {_collected: ACC}};
//     3. the on_error rules (legacyRetry without its "ok → continue"), or
//     {else: {then: {do: fail}}} without on_error;
//   - a noop task C right after T: config {result: "{{ iter._collected }}"}
//     (so C's result, and the step's when C is last, is the collected
//     value, and the next task's _prev), with the single rule {else: {then:
//     {do: continue, set_iter: {<every key above>: null}}}} that clears the
//     pagination state for a later re-entry.
//
// With P = outcome.result.data followed by ['seg'] for each segment of the
// collect path, ACC is:
//
//	append  "{{ (iter._collected | default([])) + P if (P is sequence and
//	        P is not string and P is not mapping) else (iter._collected |
//	        default([])) + ([P] | reject('none') | list) }}"
//	        (lists are concatenated, another value is appended, null is
//	        skipped — NoETL's append)
//	replace "{{ P }}" (the last call's value)
//	collect "{{ (iter._collected | default([])) + [P] }}" (one entry per
//	        call: the body, or the value at path)
//
// Forms that cannot be mapped are rejected with the rewrite hint: a step
// block on a step without exactly one task, a task that is not http or has
// its own spec.policy, a while that is not one expression (or uses an
// inline if), next_call keys other than params/headers/url, a params or
// headers that is not a mapping, a next_call entry whose original value is
// a list or mapping, a reserved iter key, strategy merge, per_iteration, and
// on_success in a workbook entry.

// successRetry is a parsed retry.on_success block.
type successRetry struct {
	key      *yaml.Node // the on_success key (problem lines)
	path     string     // YAML path of on_success
	line     int
	while    string // the condition as written
	maxCalls int    // max_attempts: calls in all
	params   []nameValue
	headers  []nameValue
	url      any
	hasURL   bool
	strategy string   // append | replace | collect
	collect  []string // collect path segments
	errRules []*Rule  // error handling (nil: else → fail)
	errDesc  string
}

// nameValue is one next_call entry, in source order.
type nameValue struct {
	name  string
	value any
}

// successNames are the names NoETL binds in on_success's while and
// next_call templates, and what they become in task policy.
var successNames = map[string]string{
	"response":  "outcome.result.data",
	"page":      "outcome.result.data",
	"iteration": "(iter._iteration | default(1))",
}

// reservedIter are the iter keys the rewrite uses itself.
var reservedIter = map[string]bool{"_collected": true, "_iteration": true, "_headers": true, "_url": true, "index": true, "parent": true}

// successHint is the rejection message for an on_success form that
// cannot be mapped, with the canonical rewrite.
func successHint(reason string) string {
	return "retry.on_success (pagination/polling by re-calling the task) cannot be normalised (" + reason + "): rewrite it as task policy in the same step, e.g. tool: [{name: fetch_page, kind: http, ..., params: {page: \"{{ iter.page | default(1) }}\"}, spec: {policy: {rules: [{when: \"{{ outcome.status == 'ok' and outcome.result.data.paging.hasMore }}\", then: {do: jump, to: fetch_page, set_iter: {page: \"{{ (iter.page | default(1)) + 1 }}\", items: \"{{ (iter.items | default([])) + outcome.result.data.data }}\"}}}, {when: \"{{ outcome.status == 'error' }}\", then: {do: fail}}, {else: {then: {do: continue, set_iter: {items: \"{{ (iter.items | default([])) + outcome.result.data.data }}\"}}}}]}}}, {name: collect, kind: noop, result: \"{{ iter.items }}\"}]"
}

// successRetry parses an on_success block; nil after reporting a problem.
func (l *loader) successRetry(e entry, path string) *successRetry {
	fs, ok := l.fields(e.v, path, "retry.on_success")
	if !ok {
		return nil
	}
	pg := &successRetry{key: e.k, path: path, line: e.k.Line, maxCalls: 100, strategy: "append"}
	good := true
	bad := func(n *yaml.Node, p, reason string) {
		l.errf(n, p, "%s", successHint(reason))
		good = false
	}
	setPath := func(n *yaml.Node, p string) {
		s, ok := l.str(n, p, "collect path")
		if !ok {
			good = false
			return
		}
		pg.collect = nil
		for _, seg := range strings.Split(s, ".") {
			if seg == "" {
				l.errf(n, p, "collect path %q has an empty segment", s)
				good = false
				return
			}
			pg.collect = append(pg.collect, seg)
		}
	}
	setStrategy := func(n *yaml.Node, p string) {
		s, ok := l.str(n, p, "collect strategy")
		if !ok {
			good = false
			return
		}
		switch s {
		case "append", "replace", "collect":
			pg.strategy = s
		default:
			bad(n, p, fmt.Sprintf("collect strategy %q: only append, replace and collect map to task policy", s))
		}
	}
	m := index(fs)
	for _, f := range fs {
		fp := join(path, f.key)
		switch f.key {
		case "while":
			w, ok := l.template(f.v, fp, "on_success.while")
			if !ok {
				good = false
				continue
			}
			pg.while = w
		case "max_attempts", "max_iterations":
			if i, ok := l.integer(f.v, fp, f.key); !ok {
				good = false
			} else if i < 1 {
				l.errf(f.k, fp, "%s must be at least 1, got %d", f.key, i)
				good = false
			} else {
				pg.maxCalls = i
			}
		case "next_call":
			if !l.walk(f.v, fp, "next_call", func(ne entry, np string) {
				switch ne.key {
				case "params", "headers":
					d := deref(ne.v)
					if d == nil || d.Kind != yaml.MappingNode {
						bad(ne.v, np, fmt.Sprintf("next_call.%s must be a mapping, got %s", ne.key, describe(d)))
						return
					}
					pfs, _ := l.fields(d, np, "next_call."+ne.key)
					for _, pe := range pfs {
						nv := nameValue{name: pe.key, value: l.value(pe.v, join(np, pe.key))}
						switch nv.value.(type) {
						case map[string]any, []any:
							bad(pe.k, join(np, pe.key), fmt.Sprintf("next_call.%s.%s is a list or mapping", ne.key, pe.key))
							continue
						}
						if ne.key == "params" {
							pg.params = append(pg.params, nv)
						} else {
							pg.headers = append(pg.headers, nv)
						}
					}
				case "url":
					pg.url, pg.hasURL = l.value(ne.v, np), true
					if _, ok := pg.url.(string); !ok {
						bad(ne.v, np, "next_call.url must be a string")
					}
				default:
					bad(ne.k, np, fmt.Sprintf("next_call.%s: only params, headers and url can be carried to the next call", ne.key))
				}
			}) {
				good = false
			}
		case "collect":
			d := deref(f.v)
			if d != nil && d.Kind == yaml.ScalarNode {
				setStrategy(f.v, fp)
				continue
			}
			if !l.walk(f.v, fp, "collect", func(ce entry, cp string) {
				switch ce.key {
				case "strategy":
					setStrategy(ce.v, cp)
				case "path", "merge_path":
					setPath(ce.v, cp)
				case "into":
					l.warnf(ce.k, cp, "collect.into is not bound as a name: the items collected so far are iter._collected, and the collected result is the step's (or the next task's _prev)")
				default:
					l.errf(ce.k, cp, "unknown collect key %q (allowed: strategy, path, merge_path, into)", ce.key)
					good = false
				}
			}) {
				good = false
			}
		case "merge_path", "path":
			if c, ok := m["collect"]; ok && (hasKey(c.v, "path") || hasKey(c.v, "merge_path")) {
				l.errf(f.k, fp, "collect path given twice: keep collect.path")
				good = false
				continue
			}
			setPath(f.v, fp)
		case "per_iteration":
			bad(f.k, fp, "per_iteration side effects: add a task after the fetch instead (e.g. a postgres insert of _prev.data)")
		default:
			l.errf(f.k, fp, "unknown on_success key %q (allowed: while, max_attempts, next_call, collect, merge_path)", f.key)
			good = false
		}
	}
	if _, ok := m["while"]; !ok {
		l.errf(e.k, join(path, "while"), "retry.on_success needs while: the condition to call again, e.g. while: \"{{ response.paging.hasMore }}\"")
		good = false
	}
	if !good {
		return nil
	}
	return pg
}

// stepPagination applies a step-level on_success block to the step's
// single http task.
func (l *loader) stepPagination(s *Step, pg *successRetry) {
	if len(s.Tasks) != 1 {
		l.errf(pg.key, pg.path, "%s", successHint(fmt.Sprintf("a step-level on_success repeats the step's single task, and this step has %d", len(s.Tasks))))
		return
	}
	t := s.Tasks[0]
	switch {
	case l.pending[t] != nil:
		l.errf(pg.key, pg.path, "the step and its task both have retry.on_success: keep one")
		delete(l.pending, t)
		return
	case t.Policy != nil:
		l.errf(pg.key, pg.path, "%s", successHint(fmt.Sprintf("task %q has its own spec.policy", t.Name)))
		return
	}
	l.paginate(s, 0, pg, s.Name+"_collect")
}

// taskPagination applies the task-level on_success blocks of s's tasks.
func (l *loader) taskPagination(s *Step) {
	done := false
	for i := 0; i < len(s.Tasks); i++ {
		t := s.Tasks[i]
		pg := l.pending[t]
		if pg == nil {
			continue
		}
		delete(l.pending, t)
		if done {
			l.errf(pg.key, pg.path, "%s", successHint("only one task of a step can repeat itself with on_success (they would share iter)"))
			continue
		}
		done = true
		if l.paginate(s, i, pg, t.Name+"_collect") {
			i++
		}
	}
}

// workbookPagination rejects on_success in a workbook entry (its calling
// step is unknown, so no noop can be added).
func (l *loader) workbookPagination(t *Task) {
	if t == nil || l.pending[t] == nil {
		return
	}
	pg := l.pending[t]
	delete(l.pending, t)
	l.errf(pg.key, pg.path, "%s", successHint("in a workbook entry: put the retry on the calling step"))
}

// paginate rewrites s.Tasks[at] (see the file comment) and inserts the
// collecting noop after it; false after reporting a problem.
func (l *loader) paginate(s *Step, at int, pg *successRetry, label string) bool {
	t := s.Tasks[at]
	fail := func(reason string) bool {
		l.errf(pg.key, pg.path, "%s", successHint(reason))
		return false
	}
	if t.Kind != "http" {
		return fail(fmt.Sprintf("task %q is kind %s: only an http call is repeated with next_call", t.Name, t.Kind))
	}
	w := rewriteNames(pg.while, successNames)
	expr, ok := exprOf(w)
	if !ok || !hasMarkup(w) {
		return fail(fmt.Sprintf("while %q is not one {{ expression }}", clip(pg.while)))
	}
	if hasWord(expr, "if") {
		return fail("while uses an inline if/else, which cannot be combined with the other conditions")
	}
	reserved := func(k string) bool {
		return reservedIter[k] || (s.Loop != nil && k == s.Loop.Iterator)
	}
	cfg := map[string]any{}
	for k, v := range t.Config {
		cfg[k] = v
	}
	setIter := map[string]any{}
	reset := map[string]any{"_collected": nil, "_iteration": nil}
	var carried []string
	if len(pg.params) > 0 {
		key := "params"
		if _, ok := cfg["params"]; !ok {
			if _, ok := cfg["query"]; ok {
				key = "query"
			}
		}
		params := map[string]any{}
		if cur, ok := cfg[key]; ok && cur != nil {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return fail(fmt.Sprintf("task %q %s is not a mapping", t.Name, key))
			}
			for k, v := range m {
				params[k] = v
			}
		}
		for _, nv := range pg.params {
			if reserved(nv.name) {
				return fail(fmt.Sprintf("next_call param %q clashes with the iter key iter.%s", nv.name, nv.name))
			}
			ref := iterRef("iter", nv.name)
			orig, present := params[nv.name]
			v, ok := wrapOriginal(orig, present, ref)
			if !ok {
				return fail(fmt.Sprintf("task %q %s.%s is a list or mapping", t.Name, key, nv.name))
			}
			params[nv.name] = v
			setIter[nv.name] = rewriteValue(nv.value)
			reset[nv.name] = nil
			carried = append(carried, key+"."+nv.name+" ← "+ref)
		}
		cfg[key] = params
	}
	if len(pg.headers) > 0 {
		headers := map[string]any{}
		if cur, ok := cfg["headers"]; ok && cur != nil {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return fail(fmt.Sprintf("task %q headers is not a mapping", t.Name))
			}
			for k, v := range m {
				headers[k] = v
			}
		}
		next := map[string]any{}
		for _, nv := range pg.headers {
			ref := iterRef("iter._headers", nv.name)
			orig, present := headers[nv.name]
			v, ok := wrapOriginal(orig, present, ref)
			if !ok {
				return fail(fmt.Sprintf("task %q headers.%s is a list or mapping", t.Name, nv.name))
			}
			headers[nv.name] = v
			next[nv.name] = rewriteValue(nv.value)
			carried = append(carried, "headers."+nv.name+" ← "+ref)
		}
		cfg["headers"] = headers
		setIter["_headers"] = next
		reset["_headers"] = nil
	}
	if pg.hasURL {
		orig, present := cfg["url"]
		v, ok := wrapOriginal(orig, present, "iter._url")
		if !ok {
			return fail(fmt.Sprintf("task %q url is not a string", t.Name))
		}
		cfg["url"] = v
		setIter["_url"] = rewriteValue(pg.url)
		reset["_url"] = nil
		carried = append(carried, "url ← iter._url")
	}

	acc := collectTemplate(pg.strategy, pg.collect)
	jumpIter := map[string]any{"_collected": acc, "_iteration": "{{ (iter._iteration | default(1)) + 1 }}"}
	for k, v := range setIter {
		jumpIter[k] = v
	}
	mk := func(when string, th Then) *Rule {
		return &Rule{When: when, Then: th, Line: pg.line, Path: pg.path}
	}
	rules := []*Rule{
		mk(WhenOutcome(OutcomeOK, fmt.Sprintf("(iter._iteration | default(1)) < %d and (%s)", pg.maxCalls, expr)),
			Then{Do: "jump", To: t.Name, Set: iterSet(jumpIter, pg.line, pg.path)}),
		mk(WhenOutcome(OutcomeOK, ""), Then{Do: "continue", Set: iterSet(map[string]any{"_collected": acc}, pg.line, pg.path)}),
	}
	errDesc := "else → fail"
	if len(pg.errRules) > 0 {
		rules = append(rules, pg.errRules...)
		errDesc = pg.errDesc
	} else {
		rules = append(rules, &Rule{Else: true, Then: Then{Do: "fail"}, Line: pg.line, Path: pg.path})
	}

	labels := map[string]bool{}
	for _, o := range s.Tasks {
		if o != nil {
			labels[o.Name] = true
		}
	}
	name := label
	for i := 2; labels[name]; i++ {
		name = label + "_" + strconv.Itoa(i)
	}
	noop := &Task{
		Name: name, Kind: "noop", Line: pg.line, Path: pg.path,
		Config: map[string]any{"result": "{{ iter._collected }}"},
		Policy: &Policy{Rules: []*Rule{{Else: true, Then: Then{Do: "continue", Set: iterSet(reset, pg.line, pg.path)}, Line: pg.line, Path: pg.path}}},
	}

	t.Config = cfg
	t.Policy = &Policy{Rules: rules}
	tasks := make([]*Task, 0, len(s.Tasks)+1)
	tasks = append(tasks, s.Tasks[:at+1]...)
	tasks = append(tasks, noop)
	tasks = append(tasks, s.Tasks[at+1:]...)
	s.Tasks = tasks

	if len(carried) == 0 {
		carried = []string{"none: the same call is repeated (polling)"}
	}
	where := "the step's result"
	if at+2 < len(s.Tasks) {
		where = fmt.Sprintf("the _prev of task %q", s.Tasks[at+2].Name)
	}
	l.warnf(pg.key, pg.path, "legacy retry.on_success is deprecated: normalised to a jump pipeline: task %q gets spec.policy.rules [ok and call < %d and while → jump to %q (set_iter: next_call values, _collected, _iteration); ok → continue (set_iter: _collected); %s]; it reads the next call from iter (%s); the added noop task %q returns the collected items (%s%s), which become %s; in while/next_call, response and page are outcome.result.data and iteration is the call number",
		t.Name, pg.maxCalls, t.Name, errDesc, strings.Join(carried, ", "), name, pg.strategy, pathNote(pg.collect), where)
	return true
}

func pathNote(path []string) string {
	if len(path) == 0 {
		return " of each response body"
	}
	return " of response." + strings.Join(path, ".")
}

// iterSet turns a generated set_iter map into iter assignments, in key
// order (deterministic).
func iterSet(m map[string]any, line int, path string) []Assignment {
	out := make([]Assignment, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, Assignment{Scope: ScopeIter, Key: k, Value: m[k], Line: line, Path: path})
	}
	return out
}

// collectTemplate is the set_iter template accumulating the collected
// value (see the file comment).
func collectTemplate(strategy string, path []string) string {
	p := "outcome.result.data"
	for _, seg := range path {
		p += "[" + jinjaString(seg) + "]"
	}
	const acc = "(iter._collected | default([]))"
	switch strategy {
	case "replace":
		return "{{ " + p + " }}"
	case "collect":
		return "{{ " + acc + " + [" + p + "] }}"
	}
	return "{{ " + acc + " + " + p + " if (" + p + " is sequence and " + p + " is not string and " + p + " is not mapping) else " + acc + " + ([" + p + "] | reject('none') | list) }}"
}

// iterRef is the template reference to key under base (attribute syntax
// for identifiers, item syntax otherwise).
func iterRef(base, key string) string {
	if isIdent(key) && base == "iter" {
		return base + "." + key
	}
	return base + "[" + jinjaString(key) + "]"
}

// jinjaString quotes s as a Jinja2 string literal.
func jinjaString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// wrapOriginal makes a task field read ref when it is set and keep its
// original value otherwise. ok is false for a list or mapping original.
func wrapOriginal(orig any, present bool, ref string) (any, bool) {
	if !present || orig == nil {
		return "{{ " + ref + " }}", true
	}
	lit := ""
	switch v := orig.(type) {
	case bool:
		lit = strconv.FormatBool(v)
	case int:
		lit = strconv.Itoa(v)
	case float64:
		lit = strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.ContainsAny(lit, ".eE") {
			lit += ".0"
		}
	case string:
		t := strings.TrimSpace(v)
		switch e, ok := exprOf(t); {
		case !hasMarkup(v):
			lit = jinjaString(v)
		case ok && strings.HasPrefix(t, "{{") && !hasWord(e, "if"):
			lit = "(" + e + ")"
		default:
			return "{% if " + ref + " is defined %}{{ " + ref + " }}{% else %}" + v + "{% endif %}", true
		}
	default:
		return nil, false
	}
	return "{{ " + ref + " | default(" + lit + ") }}", true
}

// rewriteValue rewrites the NoETL on_success names in a next_call value.
func rewriteValue(v any) any {
	if s, ok := v.(string); ok {
		return rewriteNames(s, successNames)
	}
	return v
}

// hasMarkup reports whether s contains a Jinja2 expression or statement.
func hasMarkup(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%")
}

// exprOf returns the expression of a template that is exactly one
// "{{ expr }}" (whitespace control allowed), or s itself when s has no
// markup (a bare expression, as Truthy accepts it).
func exprOf(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !hasMarkup(t) && !strings.Contains(t, "}}") {
		return t, t != ""
	}
	if !strings.HasPrefix(t, "{{") || !strings.HasSuffix(t, "}}") || len(t) < 4 {
		return "", false
	}
	inner := t[2 : len(t)-2]
	inner = strings.TrimPrefix(inner, "-")
	inner = strings.TrimSuffix(inner, "-")
	if strings.Contains(inner, "{{") || strings.Contains(inner, "}}") || strings.Contains(inner, "{%") || strings.Contains(inner, "%}") {
		return "", false
	}
	inner = strings.TrimSpace(inner)
	return inner, inner != ""
}

// hasWord reports whether the expression uses the identifier w outside
// string literals.
func hasWord(expr, w string) bool {
	found := false
	_, _ = scanExpr(expr, 0, "", func(word string, _, _ int) string {
		if word == w {
			found = true
		}
		return word
	})
	return found
}

// rewriteNames replaces the free identifiers of names (not attributes, not
// keyword arguments, not inside string literals) in the expressions and
// statements of template s; text outside {{ }} / {% %} is kept.
func rewriteNames(s string, names map[string]string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		j := strings.Index(s[i:], "{")
		if j < 0 || i+j+1 >= len(s) {
			b.WriteString(s[i:])
			break
		}
		j += i
		var closer string
		switch s[j+1] {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		case '#':
			end := strings.Index(s[j+2:], "#}")
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			b.WriteString(s[i : j+2+end+2])
			i = j + 2 + end + 2
			continue
		default:
			b.WriteString(s[i : j+1])
			i = j + 1
			continue
		}
		b.WriteString(s[i : j+2])
		text, end := scanExpr(s, j+2, closer, func(word string, start, stop int) string {
			if repl, ok := names[word]; ok && !afterDot(s, start) && !isKwarg(s, stop) {
				return repl
			}
			return word
		})
		b.WriteString(text)
		i = end
	}
	return b.String()
}

// scanExpr walks an expression from start until closer (or the end when
// closer is ""), calling f for each identifier (outside string literals)
// and collecting the text with each identifier replaced by f's result. It
// returns that text and the index where closer starts (or len(s)).
func scanExpr(s string, start int, closer string, f func(word string, start, stop int) string) (string, int) {
	var b strings.Builder
	k := start
	var quote byte
	for k < len(s) {
		c := s[k]
		if quote != 0 {
			b.WriteByte(c)
			if c == '\\' && k+1 < len(s) {
				b.WriteByte(s[k+1])
				k += 2
				continue
			}
			if c == quote {
				quote = 0
			}
			k++
			continue
		}
		if closer != "" && strings.HasPrefix(s[k:], closer) {
			break
		}
		if c == '\'' || c == '"' {
			quote = c
			b.WriteByte(c)
			k++
			continue
		}
		if c >= '0' && c <= '9' {
			// A number, including exponents like 1e5 (not identifiers).
			e := k
			for e < len(s) && (isWordByte(s[e]) || s[e] == '.') {
				e++
			}
			b.WriteString(s[k:e])
			k = e
			continue
		}
		if c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') {
			e := k
			for e < len(s) && isWordByte(s[e]) {
				e++
			}
			b.WriteString(f(s[k:e], k, e))
			k = e
			continue
		}
		b.WriteByte(c)
		k++
	}
	return b.String(), k
}

func isWordByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// afterDot reports whether the identifier at start follows a '.' (an
// attribute, not a name).
func afterDot(s string, start int) bool {
	for k := start - 1; k >= 0; k-- {
		switch s[k] {
		case ' ', '\t', '\n', '\r':
			continue
		case '.':
			return true
		}
		return false
	}
	return false
}

// isKwarg reports whether the identifier ending at stop is a keyword
// argument name (followed by '=' but not '==').
func isKwarg(s string, stop int) bool {
	for k := stop; k < len(s); k++ {
		switch s[k] {
		case ' ', '\t', '\n', '\r':
			continue
		case '=':
			return k+1 >= len(s) || s[k+1] != '='
		}
		return false
	}
	return false
}
