// Package template renders the playbook's Jinja2 templates through gonja v2
// (README "The DSL", templates).
//
// Entry points: NewScope builds the names a template sees, Render renders
// one string, RenderValue every string inside a YAML/JSON value, and Truthy
// evaluates a `when:` condition.
//
// Value shapes. Scope values and native results are plain data: nil, bool,
// int (Go int, 64-bit on every supported platform; all integer inputs
// become int), float64, string, []any and map[string]any. See Normalize
// for how other Go types are converted on the way in.
//
// Jinja2 semantics and where they come from:
//
//   - Parsing, filters, tests, `if`/`for`/`set`/`with`/`filter` statements,
//     comparisons and `and`/`or`/`not` are gonja's.
//   - Attribute/item access, method calls, the binary operators (`+`, `-`,
//     `*`, `/`, `//`, `%`, `**`, `~`, `in`), `set` and the global functions
//     are re-implemented by this package (the parse tree is rewritten once
//     per template) to follow Jinja2/Python where gonja differs: an attribute of
//     None/undefined is undefined (as with Jinja2's ChainableUndefined,
//     which the DSL requires), `//` and `%` floor, `/` always gives a
//     float, division by zero and undefined operands are errors, `str %
//     args` formats printf-style, `{% set x.y %}` only works on
//     namespace(), `x in y | f` filters y.
//   - tojson is re-implemented to print exactly what Jinja2 prints
//     (json.dumps with sort_keys, ", "/": " separators, HTML-safe escapes),
//     and format to use Python's printf-style rules; fromjson/from_json,
//     to_json, b64encode and b64decode are added.
//
// Known differences from Jinja2 (gonja limits):
//
//   - gonja has one value for None and undefined: both render as "" in
//     text (Jinja2 prints "None" for None), both take default(...) (Jinja2's
//     default replaces only undefined), `none is defined` is false.
//   - `~` binds tighter than `+`/`-` (Jinja2: looser) and unary minus
//     looser than filters (`-x | abs` is `(-x) | abs`); use parentheses.
//   - The right side of `in` must be a name, literal, or a name with
//     attributes/items/calls and filters (`a in b + c` is a syntax error);
//     `(a in b) | f` is read as `a in (b | f)`.
//   - Slicing undefined (`x[1:]`) is an error, as in Jinja2 with the default
//     Undefined; iterating a number in {% for %} renders nothing instead of
//     failing.
//   - An empty dict literal `{}` is true in `{% if %}` (Truth and Truthy of
//     a native result are exact). Dict literals keep their order when
//     iterated but filters see them with sorted keys.
//   - Some of gonja's Python string methods differ (`'a b'.split()` needs
//     an explicit separator).
//
// Sandbox: there is no loader (include/import/extends/from are not even
// statements, and the loader refuses every name but the template itself),
// macro/call are not available (unbounded recursion), no filter or function
// touches files, the environment or the network, and templates can neither
// reach Go methods or struct fields nor modify the Scope. Work is bounded by
// Limits (see SetLimits).
//
// Performance: parsed templates are cached by their text (sync.Map, reset
// after 4096 entries or 32 MiB of text); a string with neither "{{" nor "{%" is returned
// without parsing. Renders are safe for concurrent use.
package template

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scope is the set of names visible to a template: workload, ctx, iter,
// args, execution_id, keychain, event, outcome, _prev, _task, _attempt, plus
// the dialect's bare names (workload keys, step results by step name, the
// loop iterator and loop_index). Build one with NewScope.
//
// Values must be in the shapes Normalize produces (NewScope does this); a
// Scope is never modified by rendering and may be shared by concurrent
// renders.
type Scope map[string]any

// Error is a template syntax or evaluation error (NoETL DSL spec "Templates": any
// template error is reported with the template text; callers add the step
// and task). Template is the full template text; Path, set by RenderValue,
// locates the string inside the rendered value ("args.input_data.table",
// "items[2]"); Err is the cause (errors.Is(err, ErrLimit) tells a limit
// from a template bug).
type Error struct {
	Template string
	Path     string
	Err      error
}

// maxTemplateInMessage bounds how much of the template Error.Error quotes.
const maxTemplateInMessage = 400

// Error formats as `template "<text>" at <path>: <cause>` (the text is
// quoted with strconv.Quote and cut at 400 bytes; " at <path>" only when
// Path is set), per the NoETL DSL spec "Templates".
//
// A template of several lines whose parse error names a line (the
// template library's "(Line: N Col: M" suffix) is quoted by that line
// alone, as `template line N "<line>"`, so a 100-line shell script
// points at the line that broke; a line holding Go-template markup
// (`{{.Field}}`, as docker and kubectl --format write it) gets the escape
// that keeps it literal.
func (e *Error) Error() string {
	t := e.Template
	var b strings.Builder
	hint := ""
	if n, line, ok := errorLine(e.Template, e.Err); ok {
		b.WriteString("template line ")
		b.WriteString(strconv.Itoa(n))
		b.WriteString(" of ")
		b.WriteString(strconv.Itoa(strings.Count(e.Template, "\n") + 1))
		b.WriteString(" ")
		t = strings.TrimSpace(line)
		if len(t) > maxTemplateInMessage {
			t = t[:maxTemplateInMessage] + "…"
		}
		b.WriteString(strconv.Quote(t))
		if m := goTemplateMarkup.FindString(line); m != "" {
			hint = " (" + m + " is Go-template syntax, as docker and kubectl --format write it: Jinja reads it as an expression; keep it literal with {{ '" + m + "' }} or {% raw %}...{% endraw %})"
		}
	} else {
		if len(t) > maxTemplateInMessage {
			t = t[:maxTemplateInMessage] + "…"
		}
		b.WriteString("template ")
		b.WriteString(strconv.Quote(t))
	}
	if e.Path != "" {
		b.WriteString(" at ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(withoutNoPosition(e.Err.Error()))
	} else {
		b.WriteString("unknown error")
	}
	b.WriteString(hint)
	return b.String()
}

// Line is the 1-based line, within a template of several lines, of the
// line its parse error names (the line Error quotes); 0 when the template
// is one line or the error names none.
func (e *Error) Line() int {
	n, _, ok := errorLine(e.Template, e.Err)
	if !ok {
		return 0
	}
	return n
}

// Column is the 1-based column, within the line Line names (or the
// template, for a one-line template), that the template library's parse
// error gives; 0 when it gives none.
func (e *Error) Column() int {
	if e.Err == nil {
		return 0
	}
	m := errorColumnPattern.FindStringSubmatch(e.Err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[2])
	if m[1] == "0" {
		return 0
	}
	return n
}

// noPosition is the position suffix the template library gives an error
// it knows no position of (a lexer error token: "(Line: 0 Col: 0, near
// "<the lexer's message>")"); withoutNoPosition replaces it by
// ": <the lexer's message>".
var noPosition = regexp.MustCompile(` \(Line: 0 Col: 0, near "(.*)"\)`)

func withoutNoPosition(msg string) string {
	return noPosition.ReplaceAllStringFunc(msg, func(m string) string {
		near := noPosition.FindStringSubmatch(m)[1]
		if near == "" {
			return ""
		}
		return ": " + strings.ToLower(near[:1]) + near[1:]
	})
}

// errorColumnPattern finds the template library's line and column.
var errorColumnPattern = regexp.MustCompile(`\(Line: (\d+) Col: (\d+)`)

// Unwrap returns the cause, so errors.Is(err, ErrLimit) and
// errors.Is(err, ErrSandbox) see through an *Error.
func (e *Error) Unwrap() error { return e.Err }

// hasMarkup reports whether s contains a Jinja2 expression or statement.
func hasMarkup(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%")
}

// Render renders one template string (NoETL DSL spec "Templates"):
//
//   - a string without "{{" and "{%" is returned unchanged (same string,
//     no parsing; "{#" alone does not make a template);
//   - a string that is exactly one {{ expr }} (whitespace around it
//     allowed) renders to the expression's native value: nil (undefined or
//     None), bool, int, float64, string, []any or map[string]any — e.g.
//     "{{ initial_value }}" with workload initial_value: 100 gives int 100,
//     "{{ users }}" the list, "{{ 7 / 2 }}" float64 3.5. Containers are
//     fresh copies, never aliases of the Scope;
//   - any other string renders as text (string) with Jinja2 semantics.
//
// Errors are *Error carrying the template text.
func Render(tmpl string, s Scope) (any, error) {
	v, _, err := render(tmpl, s, nil)
	return v, err
}

// render is Render that also reports whether the result is text. g is the
// budget to render under (nil: a fresh one).
func render(tmpl string, s Scope, g *guard) (v any, text bool, err error) {
	if !hasMarkup(tmpl) {
		return tmpl, true, nil
	}
	cp := compile(tmpl)
	if cp.err != nil {
		return nil, false, &Error{Template: tmpl, Err: cp.err}
	}
	if g == nil {
		g = newGuard()
	}
	if cp.native != nil {
		v, err = cp.evalNative(s, g)
	} else {
		v, err = cp.renderText(s, g)
		text = true
	}
	if err != nil {
		return nil, false, &Error{Template: tmpl, Err: err}
	}
	return v, text, nil
}

// RenderValue renders every string inside v with Render and returns the
// result: maps become fresh map[string]any (keys are not rendered), slices
// fresh []any, other scalars are normalised (Normalize). The first error is
// an *Error whose Path names the string ("" for v itself, then ".key" /
// "[i]" steps without a leading dot: "input_data.temp_table", "[0].url").
// Map entries are rendered in key order and rendering stops at the first
// error, so when several entries fail the one with the smallest key is
// reported. All strings of one RenderValue call share one Limits budget
// (time, allocation).
func RenderValue(v any, s Scope) (any, error) {
	return renderValue(v, s, "", nil)
}

func renderValue(v any, s Scope, path string, g *guard) (any, error) {
	switch x := v.(type) {
	case string:
		if g == nil && hasMarkup(x) {
			g = newGuard()
		}
		out, _, err := render(x, s, g)
		if err != nil {
			var te *Error
			if errors.As(err, &te) && te.Path == "" {
				te.Path = path
			}
			return nil, err
		}
		return out, nil
	case map[string]any:
		if g == nil {
			g = newGuard()
		}
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			r, err := renderValue(x[k], s, joinPath(path, k), g)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		if g == nil {
			g = newGuard()
		}
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValue(e, s, path+"["+strconv.Itoa(i)+"]", g)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case nil, bool, int, float64:
		n, _ := normalize(x, 0)
		return n, nil
	}
	n, changed := normalize(v, 0)
	if !changed {
		return n, nil
	}
	return renderValue(n, s, path, g)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Truthy evaluates a condition (NoETL DSL spec "Step": `when:` of arcs and policy
// rules). tmpl may be a template ("{{ ctx.has_more == true }}") or a bare
// expression without braces ("ctx.has_more == true", "true"); blank is
// false. A native result is judged by Python truthiness (Truth: undefined,
// None, false, 0, "", [] and {} are false). A text result (a template with
// more than one expression or with statements) is false when it is empty
// or, ignoring case and surrounding space, "false", "none", "null" or "0" —
// the words Jinja2 prints for false values — and true otherwise. Errors
// are *Error carrying the caller's template text.
func Truthy(tmpl string, s Scope) (bool, error) {
	return truthy(tmpl, s, nil)
}

// TruthyWithin is Truthy with its own wall-clock budget: the evaluation
// fails with an error wrapping ErrLimit once it has run longer than
// timeout (0 or less: the Limits in force; NoETL observability spec §8.12
// orchestrator.evaluate_when_timeout_ms). The other Limits are those in
// force.
func TruthyWithin(tmpl string, s Scope, timeout time.Duration) (bool, error) {
	if timeout <= 0 {
		return truthy(tmpl, s, nil)
	}
	g := newGuard()
	g.limits.Timeout = timeout
	g.deadline = time.Now().Add(timeout)
	return truthy(tmpl, s, g)
}

func truthy(tmpl string, s Scope, g *guard) (bool, error) {
	t := strings.TrimSpace(tmpl)
	if t == "" {
		return false, nil
	}
	src := tmpl
	if !hasMarkup(t) {
		src = "{{ " + t + " }}"
	}
	v, text, err := render(src, s, g)
	if err != nil {
		var te *Error
		if errors.As(err, &te) {
			te.Template = tmpl
		}
		return false, err
	}
	if text {
		str, _ := v.(string)
		return !textFalse(str), nil
	}
	return Truth(v), nil
}

// Check parses tmpl without rendering it and returns the parse error, if
// any, as an *Error carrying the template text (nil for text without
// markup). The validator calls it on every template of a playbook so an
// unparsable template is rejected before anything runs.
//
// Check is safe on hostile input: a template over Limits.MaxTemplateBytes
// or Limits.MaxNesting is refused (an error wrapping ErrLimit) before it
// is parsed, and parsing is linear in the template's length.
func Check(tmpl string) error {
	if !hasMarkup(tmpl) {
		return nil
	}
	if cp := compile(tmpl); cp.err != nil {
		return &Error{Template: tmpl, Err: cp.err}
	}
	return nil
}

// errorLinePattern finds the template library's position suffix in a
// parse error.
var errorLinePattern = regexp.MustCompile(`\(Line: (\d+) Col: \d+`)

// goTemplateMarkup matches Go-template actions such as {{.ID}} or
// {{ .Repository }}.
var goTemplateMarkup = regexp.MustCompile(`\{\{-?\s*\.[A-Za-z_][A-Za-z0-9_.]*\s*-?\}\}`)

// errorLine returns the 1-based line a parse error names and its text,
// for a template of more than one line; ok is false otherwise.
func errorLine(tmpl string, err error) (int, string, bool) {
	if err == nil || !strings.Contains(tmpl, "\n") {
		return 0, "", false
	}
	m := errorLinePattern.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, "", false
	}
	n, convErr := strconv.Atoi(m[1])
	lines := strings.Split(tmpl, "\n")
	if convErr == nil && n == 0 {
		// The lexer names no line for a character it cannot read: the
		// line is the first whose markup holds that character.
		if c := unexpectedChar.FindStringSubmatch(err.Error()); c != nil {
			ch := c[1] + c[2]
			for i, l := range lines {
				if open := strings.Index(l, "{{"); open >= 0 && strings.Contains(l[open+2:], ch) {
					return i + 1, l, true
				}
			}
		}
	}
	if convErr != nil || n < 1 || n > len(lines) {
		return 0, "", false
	}
	return n, lines[n-1], true
}

// unexpectedChar finds the character of the template lexer's "unexpected
// character" error.
var unexpectedChar = regexp.MustCompile(`(?:unexpected character '(.)'|Unexpected delimiter "(.)")`)
