package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/noetl/gcpengine/shared/display"
)

// APIVersion is the canonical playbook apiVersion (NoETL DSL spec "Document").
const APIVersion = "noetl.io/v2"

// LegacyAPIVersion is accepted with a deprecation warning and normalised to
// APIVersion.
const LegacyAPIVersion = "noetl.io/v1"

// ValidationError is returned by Load when a playbook cannot be accepted.
// Problems holds every problem found (never only the first), sorted by line;
// Warnings holds the non-fatal findings collected on the way. Error() lists
// each problem as "file:line: path: message", one per line (FormatProblems).
type ValidationError struct {
	// File names the source (Load's name, or "<input>").
	File string
	// Problems are the errors, sorted by line (at least one).
	Problems []Problem
	// Warnings are the non-fatal findings collected before giving up.
	Warnings []Problem
}

// Error lists every problem, one per line, as "file:line: path: message".
func (e *ValidationError) Error() string {
	return strings.TrimSuffix(FormatProblems(e.File, e.Problems), "\n")
}

// FormatProblems renders problems one per line as "file:line: path: message"
// (":line" is omitted when the line is unknown, "path: " when the problem is
// about the whole document); a YAML syntax error is "file:line:column:
// message" followed by its source line and a caret under the column, each
// indented by four blanks.
func FormatProblems(file string, ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(display.Escape(file))
		if p.Line > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(p.Line))
			if p.Column > 0 {
				b.WriteString(":")
				b.WriteString(strconv.Itoa(p.Column))
			}
		}
		b.WriteString(": ")
		b.WriteString(p.String())
		b.WriteString("\n")
		if p.Excerpt != "" {
			b.WriteString("    " + p.Excerpt + "\n")
			if p.Column > 0 {
				b.WriteString("    " + caret(p.Excerpt, p.Column) + "\n")
			}
		}
	}
	return b.String()
}

// caret is a line that puts "^" under the column'th rune (1-based) of
// line, keeping the line's tabs so that it lines up.
func caret(line string, column int) string {
	var b strings.Builder
	for i, r := range []rune(line) {
		if i >= column-1 {
			break
		}
		if r == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String() + "^"
}

// sourceLine returns the 1-based line n of src without its line break
// ("" past the end).
func sourceLine(src []byte, n int) string {
	lines := strings.Split(string(src), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n-1], "\r")
}

// String renders the problem as "path: message" (or just the message when
// the path is empty).
func (p Problem) String() string {
	if p.Path == "" {
		return display.Escape(p.Message)
	}
	return display.Escape(p.Path + ": " + p.Message)
}

// LoadFile reads and loads the playbook at path (see Load); the file name is
// used in problem messages.
func LoadFile(path string) (*Playbook, error) { return loadFile(path, Load) }

// loadFile reads the file at path and gives it to load under its name.
func loadFile[T any](path string, load func(src []byte, name string) (T, error)) (T, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		var none T
		return none, fmt.Errorf("dsl: %w", err)
	}
	return load(src, path)
}

// Load parses a playbook (YAML, one document), normalises it into the model
// and validates it (NoETL DSL spec; NoETL event-driven retry design and the NoETL canonical v10 retry spec; NoETL's DSL v2). name labels
// the source in problem messages. On any problem it returns a nil playbook
// and a *ValidationError listing all of them with their lines (a YAML syntax
// error is one such problem); deprecated forms that could be normalised are
// reported in Playbook.Warnings instead. Load never panics.
//
// Accepted shapes (NoETL DSL spec "Document", "Step", "Tasks", "DSL v2 names"):
//   - root keys apiVersion (noetl.io/v2; NoETL's noetl.io/v10 is the same;
//     v1 warns), kind (Playbook; a kind Subscription resource gets one
//     problem saying it is not a playbook), metadata (name required; labels,
//     tags and NoETL's other known keys kept in Metadata.Extra), workload,
//     workflow, keychain, executor (spec.entry_step, final_step,
//     no_next_is_error parsed), workbook (a list of NoETL's {name, tool:
//     {...}, assert}, a list of {name, kind, ...}, or a mapping name →
//     task), tracing and spec (kept in Playbook.Ignored, with a warning);
//     anything else, and root vars, is an error;
//   - step keys step, desc, spec, loop, input | args, tool, set, set_ctx,
//     output, next (and legacy retry);
//   - tool: a single mapping (label "<step>_task"; its name, if any, is the
//     label except for kind workbook), a list of {name, kind, ...}, unnamed
//     list items (task_0, task_1, ...), list items {label: {kind, ...}}
//     (NoETL canonical v10 retry spec), or a mapping of label → task; a task has the keys of
//     CommonTaskKeys and those its kind reads (KindKeys; NoETL's kind keys
//     and input are also accepted under tool.spec);
//   - loop: {in | cursor, iterator, spec: {mode, max_in_flight (integer or
//     template), allow_set_ctx, policy: {exec}, frame}};
//   - next: {spec: {mode, on_no_match}, arcs: [{step, when, set, args,
//     on}]};
//   - policy rules {when, then: {do, attempts, backoff, delay, max_delay,
//     to, set, set_iter, set_ctx}} and {else: {then: {...}}}.
//
// After parsing, Load sets Playbook.Entry, adds the implicit arcs to "end"
// (Arc.Implicit), validates (Validate, which parses every template) and,
// for a valid playbook, computes the joins (Step.JoinOf) and the warnings;
// Prepare does the same normalisations for a playbook built in Go.
//
// Legacy forms normalised with a warning: next as a string, {step: x}, a
// list of steps/arcs, or [{when, then}, {else}]; step/task retry: (NoETL event-driven retry design:
// true, N, {max_attempts, initial_delay, backoff_multiplier, max_delay,
// jitter, retry_when, stop_when, on_error}) → task policy rules;
// retry.on_success (NoETL distributed loop design pagination/polling of an http task: while,
// max_attempts, next_call {params, headers, url}, collect append|replace|
// collect with path/merge_path) → a jump pipeline plus a collecting noop
// task (pagination.go documents exactly what is generated); loop.mode,
// loop.collection/element/concurrency, mode async/sync; arc data/with/input;
// else: {do: ...} without then; a bare set target at step or arc level
// (written to ctx); tool keys NoETL itself ignores (IgnoredTaskKeys,
// dropped). Forms of NoETL's own fixtures, accepted and mapped with a
// warning: root tracing and spec (ignored, as NoETL's model does); step
// names that are not identifiers (loaded as stepName gives them; arcs
// follow); retry retry_on / retry_on_status / backoff / backoff_seconds; a
// mapping output_select (ignored, it selects nothing in NoETL); the step
// result: block of output keys (the step's output); postgres with: (its
// input); arc cond (its when); else: null beside then (the else rule);
// python libs that are not a mapping (ignored). Legacy forms rejected with
// the canonical rewrite: step when, eval, expr, case, sink, save, type,
// vars, name, with/data, result (other than output keys), outcome; the
// same keys on a task (misplacedTaskKey: the rewrite in one message); tool:
// <kind string>; task type:; set under spec; the retry.on_success forms
// pagination.go cannot map.
//
// Load's warnings include a few workflow checks (steps unreachable from
// the entry step, shadowed names, empty steps, template names no scope
// defines); Lint runs the full static analysis.
func Load(src []byte, name string) (pb *Playbook, err error) {
	l := newLoader(name)
	defer func() {
		if r := recover(); r != nil {
			pb, err = nil, l.panicked(r, "playbook")
		}
	}()
	p := l.load(src)
	if p != nil {
		p.lines, p.scalars = l.lines, l.scalars
		p.Source = string(src) // validate quotes lines of it
		l.finish(p)
		structural := map[string]bool{}
		for _, q := range l.problems {
			structural[q.Path] = true
		}
		for _, q := range p.validate() {
			if !structural[q.Path] {
				l.problems = append(l.problems, q)
			}
		}
		if len(l.problems) == 0 {
			p.computeJoins()
			l.warnings = append(l.warnings, p.lint()...)
		}
	}
	if len(l.problems) > 0 {
		return nil, l.rejected()
	}
	p.Warnings = sortProblems(dedup(l.warnings))
	p.Source = string(src)
	return p, nil
}

// newLoader starts a load of the source called name ("<input>" when
// empty).
func newLoader(name string) *loader {
	file := name
	if file == "" {
		file = "<input>"
	}
	return &loader{file: file, lines: map[string]int{}, scalars: map[string]scalarPos{}, budget: maxValueNodes, active: map[*yaml.Node]bool{}}
}

// rejected is the ValidationError of a load that found problems.
func (l *loader) rejected() *ValidationError {
	return &ValidationError{File: l.file, Problems: sortProblems(dedup(l.problems)), Warnings: sortProblems(dedup(l.warnings))}
}

// panicked reports the panic r of a load of a <what> as one more problem
// and returns the load's ValidationError.
func (l *loader) panicked(r any, what string) *ValidationError {
	l.problems = append(l.problems, Problem{Message: fmt.Sprintf("internal error while loading the %s: %v", what, r)})
	return &ValidationError{File: l.file, Problems: sortProblems(l.problems), Warnings: sortProblems(l.warnings)}
}

// finish applies the normalisations that need the whole playbook: the
// default entry step (Playbook.Entry) and the implicit arcs to "end"
// (Arc.Implicit).
func (l *loader) finish(p *Playbook) { p.routing() }

// Prepare applies to a playbook built or edited in Go what Load does after
// parsing: it sets Entry when empty (EntryStep), gives every step without
// next (other than "end" and the final step) the implicit arc to the step
// named "end" when there is one (Arc.Implicit), and computes Step.JoinOf.
// It is idempotent; call Validate first (Prepare assumes a valid graph and
// ignores arcs to unknown steps).
func (p *Playbook) Prepare() {
	p.routing()
	p.computeJoins()
}

func (p *Playbook) routing() {
	if p.Entry == "" {
		p.Entry = p.EntryStep()
	}
	if p.Step("end") == nil || p.FinalStep == "end" {
		// With final_step: end, end already runs once after everything.
		return
	}
	for i, s := range p.Workflow {
		if s == nil || s.Next != nil || s.Name == "end" || s.Name == "" || s.Name == p.FinalStep {
			continue
		}
		sp := stepPath(s, i)
		s.Next = &Next{Mode: "exclusive", OnNoMatch: "complete", Line: s.Line, Arcs: []*Arc{{Step: "end", Implicit: true, Line: s.Line, Path: sp}}}
	}
}

// maxValueNodes bounds the YAML nodes visited while converting values, so an
// alias bomb ("billion laughs") is reported instead of exhausting memory.
const maxValueNodes = 1 << 20

// loader holds the state of one Load: collected problems and warnings, the
// path→line index and the alias-expansion guards.
type loader struct {
	file     string
	src      []byte
	problems []Problem
	warnings []Problem
	lines    map[string]int
	scalars  map[string]scalarPos
	budget   int
	overrun  bool
	active   map[*yaml.Node]bool
	// pending holds task-level retry.on_success blocks until the enclosing
	// step rewrites its pipeline (stepPagination / taskPagination).
	pending map[*Task]*successRetry
	// renamed maps a step name that is not an identifier to the
	// identifier it is loaded as (stepName); arcs, the entry and final
	// steps and compensate follow it (renameSteps).
	renamed map[string]string
}

var (
	yamlLineRE      = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

func (l *loader) load(src []byte) *Playbook {
	root := l.document(src, "playbook", "workflow")
	if root == nil {
		return nil
	}
	return l.playbook(root)
}

// document decodes src, which must hold one YAML document of a <what>
// (whose last required key is last), records its lines (walkLines) and
// returns its root node; nil when there is none (empty, or a syntax error).
// A second document and syntax errors are reported as problems.
func (l *loader) document(src []byte, what, last string) *yaml.Node {
	l.src = src
	empty := Problem{Line: 1, Message: fmt.Sprintf("empty document: a %s needs apiVersion, kind, metadata and %s", what, last)}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.problems = append(l.problems, empty)
		} else {
			l.syntax(err)
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.problems = append(l.problems, Problem{Line: extra.Line, Message: "more than one YAML document: a file holds exactly one " + what})
	} else if !errors.Is(err, io.EOF) {
		l.syntax(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			l.problems = append(l.problems, empty)
			return nil
		}
		root = root.Content[0]
	}
	l.walkLines(root, "")
	return root
}

// parserProblems are the YAML library's parser (not scanner) error texts.
// go.yaml.in/yaml/v3 v3.0.6 (like gopkg.in/yaml.v3 v3.0.1 before it)
// reports their line 0-based (it increments only scanner errors), so syntax
// adds one to point at the right 1-based line.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found undefined tag handle",
}

func isParserProblem(msg string) bool {
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// syntax turns a YAML library (go.yaml.in/yaml/v3) error into a Problem with its 1-based line.
// A scanner or parser error (*yaml.SyntaxError, third_party/yaml) names
// where the problem is — line, column and the line itself — and what was
// being read there, as PyYAML does ("while parsing a block mapping that
// starts at line 2, column 5"); at the end of the file it points at the
// start of that construct instead.
func (l *loader) syntax(err error) {
	var se *yaml.SyntaxError
	if errors.As(err, &se) {
		msg := "YAML syntax error: " + se.Problem
		line, col := se.Line, se.Column
		if se.Context != "" && (se.ContextLine != line || se.ContextColumn != col) {
			msg += fmt.Sprintf(" (%s that starts at line %d, column %d)", se.Context, se.ContextLine, se.ContextColumn)
			if strings.TrimSpace(sourceLine(l.src, line)) == "" {
				line, col = se.ContextLine, se.ContextColumn
			}
		}
		// The marks count characters, as Column and the caret do.
		l.problems = append(l.problems, Problem{Line: line, Column: col, Excerpt: sourceLine(l.src, line), Message: msg})
		return
	}
	msg := err.Error()
	for _, part := range strings.Split(msg, "\n") {
		part = strings.TrimSpace(part)
		if part == "" || part == "yaml: unmarshal errors:" {
			continue
		}
		line := 0
		if m := yamlLineRE.FindStringSubmatch(part); m != nil {
			line, _ = strconv.Atoi(m[1])
			part = m[2]
			if isParserProblem(part) {
				line++
			}
		} else if m := unknownAnchorRE.FindStringSubmatch(part); m != nil {
			line = 1
			for i, text := range strings.Split(string(l.src), "\n") {
				if strings.Contains(text, "*"+m[1]) {
					line = i + 1
					break
				}
			}
		} else if strings.HasPrefix(part, "yaml: ") {
			// The YAML library omits the line when it is the first one.
			line = 1
		} else if strings.HasPrefix(part, "line ") {
			if i := strings.Index(part, ":"); i > 0 {
				line, _ = strconv.Atoi(strings.TrimPrefix(part[:i], "line "))
				part = strings.TrimSpace(part[i+1:])
			}
		}
		part = strings.TrimPrefix(part, "yaml: ")
		l.problems = append(l.problems, Problem{Line: line, Message: "YAML syntax error: " + part})
	}
}

// walkLines records the line of every path in the literal tree (the line of
// the key for mapping entries), without following aliases.
func (l *loader) walkLines(n *yaml.Node, path string) {
	if n == nil {
		return
	}
	if _, ok := l.lines[path]; !ok {
		l.lines[path] = n.Line
	}
	if _, ok := l.scalars[path]; !ok && n.Kind == yaml.ScalarNode {
		l.scalars[path] = scalarPos{line: n.Line, column: n.Column, style: n.Style}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				continue
			}
			p := join(path, k.Value)
			if _, ok := l.lines[p]; !ok {
				l.lines[p] = k.Line
			}
			l.walkLines(v, p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			l.walkLines(c, idx(path, i))
		}
	}
}

// ---- problems -------------------------------------------------------------

// lineFor picks the line for a problem at path: the recorded line of that
// path (the line of its key), else of its nearest recorded ancestor (for a
// missing key: the enclosing key), else the node's own line.
func (l *loader) lineFor(n *yaml.Node, path string) int {
	if ln := lineIn(l.lines, path); ln > 0 {
		return ln
	}
	if n != nil {
		return n.Line
	}
	return 0
}

func (l *loader) errf(n *yaml.Node, path, format string, args ...any) {
	l.problems = append(l.problems, Problem{Line: l.lineFor(n, path), Path: path, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) warnf(n *yaml.Node, path, format string, args ...any) {
	l.warnings = append(l.warnings, Problem{Line: l.lineFor(n, path), Path: path, Message: fmt.Sprintf(format, args...), Severity: SeverityWarning})
}

func sortProblems(ps []Problem) []Problem {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
	return ps
}

func dedup(ps []Problem) []Problem {
	seen := map[Problem]bool{}
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ---- paths ----------------------------------------------------------------

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func idx(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// lineIn looks path up in lines, walking up to the nearest recorded ancestor.
func lineIn(lines map[string]int, path string) int {
	if lines == nil {
		return 0
	}
	for {
		if ln, ok := lines[path]; ok {
			return ln
		}
		if path == "" {
			return 0
		}
		path = parentPath(path)
	}
}

// ---- YAML node helpers ----------------------------------------------------

// entry is one key/value of a mapping node.
type entry struct {
	key  string
	k, v *yaml.Node
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 64 {
			return nil
		}
		n = n.Alias
	}
	return n
}

// nodeLine is n's line, 0 for nil.
func nodeLine(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func describe(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		}
		return fmt.Sprintf("the string %q", clip(n.Value))
	}
	return "an unsupported node"
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// looksLikeUnquotedTemplate reports whether n is what YAML makes of an
// unquoted `{{ expr }}`: a flow mapping whose only key is a mapping.
func looksLikeUnquotedTemplate(n *yaml.Node) bool {
	n = deref(n)
	return n != nil && n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Kind == yaml.MappingNode
}

const quoteHint = " (an unquoted {{ ... }} is parsed as a YAML mapping: quote the template, e.g. \"{{ expr }}\")"

// templateHint is quoteHint when n looks like an unquoted template, else "".
func templateHint(n *yaml.Node) string {
	if looksLikeUnquotedTemplate(n) {
		return quoteHint
	}
	return ""
}

// fields returns the entries of a mapping node, following aliases and `<<`
// merge keys (explicit keys win). It reports non-mappings (null counts as
// empty), non-string keys and duplicate keys. ok is false when n is not a
// mapping.
func (l *loader) fields(n *yaml.Node, path, what string) ([]entry, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		l.errf(n, path, "%s must be a mapping, got %s", what, describe(n))
		return nil, false
	}
	if !l.spend(len(n.Content)/2+1, n, path) {
		return nil, false
	}
	var out, merged []entry
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			hint := ""
			if k.Kind == yaml.MappingNode {
				hint = quoteHint
			}
			l.errf(k, path, "mapping keys must be strings, got %s%s", describe(k), hint)
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, l.mergeEntries(v, path)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			l.problems = append(l.problems, Problem{Line: k.Line, Path: join(path, k.Value), Message: fmt.Sprintf("duplicate key %q (first at line %d)", k.Value, first)})
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, entry{key: k.Value, k: k, v: v})
	}
	for _, e := range merged {
		if _, ok := seen[e.key]; !ok {
			seen[e.key] = e.k.Line
			out = append(out, e)
		}
	}
	return out, true
}

func (l *loader) mergeEntries(v *yaml.Node, path string) []entry {
	var targets []*yaml.Node
	if d := deref(v); d != nil && d.Kind == yaml.SequenceNode {
		targets = d.Content
	} else {
		targets = []*yaml.Node{v}
	}
	var out []entry
	for _, t := range targets {
		d := deref(t)
		if d == nil || d.Kind != yaml.MappingNode {
			l.errf(t, path, "a << merge key needs a mapping (or a list of mappings), got %s", describe(t))
			continue
		}
		if l.active[d] {
			l.errf(t, path, "recursive << merge")
			continue
		}
		l.active[d] = true
		fs, _ := l.fields(d, path, "a merged mapping")
		delete(l.active, d)
		// Later merge sources do not override earlier ones.
		for _, e := range fs {
			dup := false
			for _, o := range out {
				if o.key == e.key {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, e)
			}
		}
	}
	return out
}

// peekFields returns the literal entries of the mapping n without
// reporting anything (for messages about a mapping that is then ignored).
func (l *loader) peekFields(n *yaml.Node) []entry {
	var out []entry
	for i := 0; n != nil && n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k != nil && k.Kind == yaml.ScalarNode {
			out = append(out, entry{key: k.Value, k: k, v: n.Content[i+1]})
		}
	}
	return out
}

// walk calls f with each entry of the mapping n (see fields: aliases and
// merge keys followed, problems reported) and the entry's path; false when
// n is not a mapping (f is not called).
func (l *loader) walk(n *yaml.Node, path, what string, f func(e entry, ep string)) bool {
	fs, ok := l.fields(n, path, what)
	if !ok {
		return false
	}
	for _, e := range fs {
		f(e, join(path, e.key))
	}
	return true
}

// mapping returns the mapping n (aliases followed), or nil: for null, and
// for anything else (an unquoted {{ ... }} included), reported as "<what>
// must be <shape>, got ...".
func (l *loader) mapping(n *yaml.Node, path, what, shape string) *yaml.Node {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind != yaml.MappingNode || looksLikeUnquotedTemplate(d) {
		l.errf(n, path, "%s must be %s, got %s%s", what, shape, describe(d), templateHint(d))
		return nil
	}
	return d
}

// list returns the items of the sequence n (aliases followed); ok is false
// for null, and for anything else, reported as "<what> must be <shape>,
// got ...".
func (l *loader) list(n *yaml.Node, path, what, shape string) ([]*yaml.Node, bool) {
	d := deref(n)
	if isNull(d) {
		return nil, false
	}
	if d.Kind != yaml.SequenceNode {
		l.errf(n, path, "%s must be %s, got %s%s", what, shape, describe(d), listHint(d, what))
		return nil, false
	}
	return d.Content, true
}

// listHint completes the error for a mapping (or scalar) where a list is
// expected with both forms: a single entry must still be a list item.
func listHint(d *yaml.Node, what string) string {
	switch {
	case d.Kind == yaml.MappingNode && !looksLikeUnquotedTemplate(d):
		first := "..."
		if len(d.Content) > 0 && d.Content[0].Kind == yaml.ScalarNode {
			first = d.Content[0].Value + ": ..."
		}
		return fmt.Sprintf(": a single entry is still a list item, write %s: [{%s}] (or \"- %s\" on its own line) instead of %s: {%s}", what, first, first, what, first)
	case d.Kind == yaml.ScalarNode:
		return fmt.Sprintf(": write %s: [%s] for one entry", what, clip(d.Value))
	}
	return templateHint(d)
}

// choice reads e's value as a string (what names it in a type error),
// stores it in *dst (when dst is not nil) and, unless it is one of allowed,
// reports format at e's key with the value (clipped to 40 characters when
// clipped; %[1]q to show it twice) as its operand. It returns str's result.
func (l *loader) choice(dst *string, e entry, path, what string, clipped bool, format string, allowed ...string) (string, bool) {
	v, ok := l.str(e.v, path, what)
	if !ok {
		return v, false
	}
	if !oneOf(v, allowed) {
		shown := v
		if clipped {
			shown = clip(v)
		}
		l.errf(e.k, path, format, shown)
	}
	if dst != nil {
		*dst = v
	}
	return v, true
}

func index(fs []entry) map[string]entry {
	m := make(map[string]entry, len(fs))
	for _, e := range fs {
		m[e.key] = e
	}
	return m
}

// spend charges k visited nodes to the budget shared by value conversion and
// structural parsing; false (reported once) when the budget is exhausted.
func (l *loader) spend(k int, n *yaml.Node, path string) bool {
	l.budget -= k
	if l.budget >= 0 {
		return true
	}
	if !l.overrun {
		l.overrun = true
		l.errf(n, path, "document too large: more than %d YAML nodes after alias expansion", maxValueNodes)
	}
	return false
}

// value converts a node into plain Go data: map[string]any, []any, string,
// int, float64, bool or nil. Templates stay verbatim strings.
func (l *loader) value(n *yaml.Node, path string) any {
	if n == nil || !l.spend(1, n, path) {
		return nil
	}
	switch n.Kind {
	case yaml.AliasNode:
		// Containers guard themselves against cycles (below).
		return l.value(n.Alias, path)
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return l.value(n.Content[0], path)
		}
		return nil
	case yaml.ScalarNode:
		return l.scalar(n, path)
	case yaml.SequenceNode:
		if l.active[n] {
			l.errf(n, path, "recursive alias")
			return nil
		}
		l.active[n] = true
		defer delete(l.active, n)
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			out = append(out, l.value(c, idx(path, i)))
		}
		return out
	case yaml.MappingNode:
		if looksLikeUnquotedTemplate(n) {
			l.errf(n, path, "unexpected mapping%s", quoteHint)
			return nil
		}
		if l.active[n] {
			l.errf(n, path, "recursive alias")
			return nil
		}
		l.active[n] = true
		defer delete(l.active, n)
		fs, _ := l.fields(n, path, "a mapping")
		out := make(map[string]any, len(fs))
		for _, e := range fs {
			out[e.key] = l.value(e.v, join(path, e.key))
		}
		return out
	}
	return nil
}

func (l *loader) scalar(n *yaml.Node, path string) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			l.errf(n, path, "invalid %s value %q", strings.TrimPrefix(n.ShortTag(), "!!"), clip(n.Value))
			return n.Value
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return n.Value
		}
		return v
	}
	return n.Value
}

// dict converts a node that must be a mapping (null = empty → nil).
func (l *loader) dict(n *yaml.Node, path, what string) map[string]any {
	if l.mapping(n, path, what, "a mapping") == nil {
		return nil
	}
	m, _ := l.value(n, path).(map[string]any)
	return m
}

// str reads a scalar as text. Null and non-scalars are reported.
func (l *loader) str(n *yaml.Node, path, what string) (string, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" {
		l.errf(n, path, "%s must be a string, got %s%s", what, describe(d), templateHint(d))
		return "", false
	}
	return d.Value, true
}

// template reads a `when`-like scalar. Booleans become "{{ true }}" /
// "{{ false }}" (a bare "false" string would be truthy).
func (l *loader) template(n *yaml.Node, path, what string) (string, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode {
		switch d.ShortTag() {
		case "!!bool":
			var b bool
			if err := d.Decode(&b); err == nil {
				return "{{ " + strconv.FormatBool(b) + " }}", true
			}
		case "!!int", "!!float":
			return "{{ " + d.Value + " }}", true
		}
	}
	s, ok := l.str(n, path, what)
	if ok && !strings.Contains(s, "{{") && !strings.Contains(s, "{%") {
		l.warnf(n, path, "%s %q has no {{ }}: it is a constant non-empty string, so always true; write \"{{ %s }}\"", what, clip(s), clip(s))
	}
	return s, ok
}

func (l *loader) num(n *yaml.Node, path, what string) (float64, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && (d.ShortTag() == "!!int" || d.ShortTag() == "!!float") {
		var f float64
		if err := d.Decode(&f); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	}
	l.errf(n, path, "%s must be a number, got %s", what, describe(d))
	return 0, false
}

func (l *loader) integer(n *yaml.Node, path, what string) (int, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!int" {
		var i int
		if err := d.Decode(&i); err == nil {
			return i, true
		}
	}
	l.errf(n, path, "%s must be an integer, got %s", what, describe(d))
	return 0, false
}

func (l *loader) boolean(n *yaml.Node, path, what string) (bool, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && d.ShortTag() == "!!bool" {
		var b bool
		if err := d.Decode(&b); err == nil {
			return b, true
		}
	}
	l.errf(n, path, "%s must be true or false, got %s", what, describe(d))
	return false, false
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func isIdent(s string) bool { return identRE.MatchString(s) }

func keysOf(fs []entry) []string {
	out := make([]string, len(fs))
	for i, e := range fs {
		out[i] = e.key
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
