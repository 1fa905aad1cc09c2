package template

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/noetl/gcpengine/shared/errs"
)

// Limits bounds the work of one Render, Truthy or RenderValue call and the
// templates it accepts (NoETL DSL spec "Templates": templates are sandboxed; issue
// 10 item 1: no template may exhaust memory or run past its budget).
//
// How each bound is enforced:
//
//   - Template text: Check, Render, Truthy and RenderValue refuse a
//     template longer than MaxTemplateBytes or nested deeper than
//     MaxNesting (brackets, parentheses and block statements together)
//     before gonja parses it, so parsing is linear and its recursion
//     bounded.
//   - Time: gonja has no cancellation, so the clock is checked
//     cooperatively at the top of every {% for %} iteration, on every
//     filter, test and operator call and on every output write. One call
//     works on values of at most MaxValueBytes, so a render stops shortly
//     after its deadline.
//   - Size: every value a render touches — the input and arguments of
//     filters, tests, operators and method calls, every printed or
//     returned value, compared operands, {% set %} values — is measured
//     by its logical size (the size it would have fully expanded, with
//     shared sub-values counted each time they appear, so
//     [[0] * 100000] * 100000 counts 10^10 elements) and its nesting
//     depth; over MaxValueBytes or 256 levels the render stops. Filters,
//     methods and operators that can build large results from small
//     inputs (center, indent, replace, join, format, tojson, batch,
//     slice, str.center/ljust/rjust/zfill/expandtabs/join/replace/format,
//     `*`, `+`, `~`, `%`, range) are checked against MaxOutputBytes /
//     MaxItems / MaxRange BEFORE they build it, and so are the filters
//     that turn their input into a list (list, map, select, reject,
//     selectattr, rejectattr, unique, sort, dictsort, groupby, reverse,
//     batch, slice: at most MaxItems elements or characters).
//   - Total allocation: the bytes of every value built by a filter,
//     operator, call or literal, of every {% set %} value, of every dict
//     or list a method call copies, and 2 KiB per {% for %} iteration are
//     added up; over MaxAllocBytes the render stops.
//
// A render over budget fails with an *Error wrapping ErrLimit.
type Limits struct {
	// Timeout is the wall-clock budget of one render; zero or negative
	// means no clock (SetLimits turns zero into the default).
	Timeout time.Duration
	// MaxRange is the largest number of elements range() may produce
	// (Jinja2's sandbox uses the same 100000).
	MaxRange int
	// MaxOutputBytes caps the size, in bytes, of a text render, of a
	// {% set %}/{% filter %} block body and of any string a filter,
	// method or operator builds.
	MaxOutputBytes int
	// MaxItems caps the length of any list a filter, method or operator
	// builds.
	MaxItems int
	// MaxTemplateBytes caps the length, in bytes, of a template's text.
	MaxTemplateBytes int
	// MaxNesting caps how deeply brackets, parentheses and block
	// statements may nest in a template.
	MaxNesting int
	// MaxValueBytes caps the logical size, in bytes, of any value a render
	// touches: 16 per scalar or container slot plus string bytes (see
	// Limits above).
	MaxValueBytes int
	// MaxAllocBytes caps the total bytes of the values one render builds.
	MaxAllocBytes int
}

// DefaultLimits are the limits in force until SetLimits is called: 2s per
// render, range() of at most 100000 elements (Jinja2 SandboxedEnvironment's
// MAX_RANGE), 8 MiB of text, lists of at most 1000000 items, templates of
// at most 64 KiB nested at most 64 levels, values of at most 16 MiB
// logical size, 512 MiB built in total (a {% for %} iteration counts 2
// KiB, so about 250000 iterations per render).
var DefaultLimits = Limits{
	Timeout:          2 * time.Second,
	MaxRange:         100_000,
	MaxOutputBytes:   8 << 20,
	MaxItems:         1_000_000,
	MaxTemplateBytes: 64 << 10,
	MaxNesting:       64,
	MaxValueBytes:    16 << 20,
	MaxAllocBytes:    512 << 20,
}

var currentLimits atomic.Pointer[Limits]

func init() {
	l := DefaultLimits
	currentLimits.Store(&l)
}

// SetLimits replaces the Limits used by every later Check, Render,
// RenderValue and Truthy call (renders already running keep theirs; safe
// to call concurrently). Zero or negative fields take the DefaultLimits
// value, except Timeout where a negative value disables the clock.
func SetLimits(l Limits) {
	if l.Timeout == 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxRange, DefaultLimits.MaxRange)
	def(&l.MaxOutputBytes, DefaultLimits.MaxOutputBytes)
	def(&l.MaxItems, DefaultLimits.MaxItems)
	def(&l.MaxTemplateBytes, DefaultLimits.MaxTemplateBytes)
	def(&l.MaxNesting, DefaultLimits.MaxNesting)
	def(&l.MaxValueBytes, DefaultLimits.MaxValueBytes)
	def(&l.MaxAllocBytes, DefaultLimits.MaxAllocBytes)
	currentLimits.Store(&l)
	// Parse results depend on MaxTemplateBytes and MaxNesting.
	cache.Store(&templateCache{})
}

// CurrentLimits returns the Limits in force (DefaultLimits unless
// SetLimits changed them).
func CurrentLimits() Limits { return *currentLimits.Load() }

// ErrLimit is wrapped by the error (an *Error) of a template or render
// that ran out of a Limits budget — template length or nesting, time,
// range size, output, string, list or value size, total allocation — as
// opposed to a template bug; test with errors.Is. Rule: the NoETL DSL spec "Templates"
// (sandboxed), README "Security". Its code is InvalidArgument: the same
// template over the same data hits the same limit, so a step failing with
// it is not retried.
var ErrLimit = errs.Sentinel(errs.InvalidArgument, "template limit exceeded")

// ErrSandbox is wrapped by the error of an attempt to load another
// template (include/import/extends are not statements at all; the loader
// refuses any other name). Rule: the NoETL DSL spec "Templates" (no file
// access). Its code is PermissionDenied: a refusal, never retried.
var ErrSandbox = errs.Sentinel(errs.PermissionDenied, "not allowed in the template sandbox")

// limitWriter collects text output up to the guard's MaxOutputBytes.
type limitWriter struct {
	b strings.Builder
	g *guard
}

func (w *limitWriter) WriteString(s string) (int, error) {
	if w.b.Len()+len(s) > w.g.limits.MaxOutputBytes {
		return 0, w.g.fail(fmt.Errorf("%w: output larger than %d bytes", ErrLimit, w.g.limits.MaxOutputBytes))
	}
	if err := w.g.tick(); err != nil {
		return 0, err
	}
	return w.b.WriteString(s)
}

func (w *limitWriter) Write(p []byte) (int, error) { return w.WriteString(string(p)) }

// rootID is the identifier every template is parsed under.
const rootID = "noetl-template"

// sandboxLoader serves the template's own source and refuses everything
// else, so include/import/extends (which are also not registered) can never
// read a file.
type sandboxLoader struct{ src string }

func (l *sandboxLoader) Read(path string) (io.Reader, error) {
	if path == rootID {
		return strings.NewReader(l.src), nil
	}
	return nil, fmt.Errorf("loading template %q: %w", path, ErrSandbox)
}

func (l *sandboxLoader) Resolve(path string) (string, error) {
	if path == rootID {
		return path, nil
	}
	return "", fmt.Errorf("resolving template %q: %w", path, ErrSandbox)
}

func (l *sandboxLoader) Inherit(from string) (loaders.Loader, error) {
	return nil, fmt.Errorf("loading template %q: %w", from, ErrSandbox)
}

// gonjaConfig is the lexer/parser configuration: Jinja2 defaults, no
// autoescape, undefined values are not errors.
var gonjaConfig = config.New()

// The package's own gonja environment. It is built from copies of gonja's
// builtin sets so nothing registered here leaks into gonja's globals and
// nothing registered there by other packages changes these templates.
var (
	envFilters           *exec.FilterSet
	envTests             *exec.TestSet
	envControlStructures *exec.ControlStructureSet
	envMethods           exec.Methods
	envGlobals           map[string]any
)

// builtinFilterNames lists the gonja v2 builtin filters that are kept.
var builtinFilterNames = []string{
	"abs", "attr", "batch", "capitalize", "center", "default", "d", "dictsort",
	"e", "escape", "filesizeformat", "first", "float", "forceescape", "format",
	"groupby", "indent", "int", "join", "items", "last", "length", "count",
	"list", "lower", "map", "max", "min", "pprint", "random", "rejectattr",
	"reject", "replace", "reverse", "round", "safe", "selectattr", "select",
	"slice", "sort", "string", "striptags", "sum", "title", "trim", "truncate",
	"unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr",
}

var builtinTestNames = []string{
	"boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==",
	"escaped", "even", "false", "filter", "float", "ge", ">=", "gt",
	"greaterthan", ">", "in", "integer", "iterable", "le", "<=", "lower", "lt",
	"lessthan", "<", "mapping", "ne", "!=", "none", "number", "odd", "sameas",
	"sequence", "string", "test", "true", "undefined", "upper",
}

// filterNames are the filters templates may call, sorted (the "did you
// mean" of an unknown filter; the engine's internal ones left out).
var filterNames []string

func init() {
	filters := map[string]exec.FilterFunction{}
	for _, name := range builtinFilterNames {
		if f, ok := builtins.Filters.Get(name); ok {
			filters[name] = f
		}
	}
	for name, f := range extraFilters() {
		filters[name] = f
	}
	for name := range filters {
		filterNames = append(filterNames, name)
	}
	sort.Strings(filterNames)
	filters[filterCheckName] = filterCheck
	filters[filterNewName] = filterNew
	for name, f := range filters {
		filters[name] = recordingFilter(name, f)
	}
	envFilters = exec.NewFilterSet(filters)

	tests := map[string]exec.TestFunction{}
	for _, name := range builtinTestNames {
		if t, ok := builtins.Tests.Get(name); ok {
			tests[name] = t
		}
	}
	for name, t := range tests {
		tests[name] = recordingTest(t)
	}
	envTests = exec.NewTestSet(tests)

	// Statements: no include/import/from/extends/block (no loading), no
	// macro/call (unbounded recursion), no trans. set, with and filter are
	// the package's own so their expressions are rewritten like the rest.
	cs := map[string]parser.ControlStructureParser{
		"set":    setParser,
		"with":   withParser,
		"filter": filterBlockParser,
	}
	for _, name := range []string{"if", "for", "raw", "autoescape", "do", "break", "continue"} {
		if p, ok := controlStructures.All.Get(name); ok {
			cs[name] = p
		}
	}
	envControlStructures = exec.NewControlStructureSet(cs)

	envMethods = exec.Methods{
		Bool:  builtins.Methods.Bool,
		Int:   builtins.Methods.Int,
		Float: builtins.Methods.Float,
		Str:   limitedMethods(builtins.Methods.Str, strMethodNames...),
		Dict:  limitedMethods(builtins.Methods.Dict, "keys", "values", "items", "get", "copy"),
		// list.reverse() reverses the Scope's own slice in place: left out.
		List: limitedMethods(builtins.Methods.List, "append", "copy"),
	}

	envGlobals = map[string]any{
		"range":     rangeFunction,
		"namespace": namespaceFunction,
	}
	for _, name := range []string{"dict", "cycler", "joiner"} {
		if f, ok := builtins.GlobalFunctions.Get(name); ok {
			envGlobals[name] = f
		}
	}
}

// strMethodNames are gonja's Python string methods (all of them; the
// amplifying ones get a pre-check in methodPre).
var strMethodNames = []string{
	"capitalize", "capwords", "casefold", "center", "count", "encode",
	"endswith", "expandtabs", "find", "format", "format_map", "isalnum",
	"isalpha", "isascii", "isdecimal", "isdigit", "islower", "isnumeric",
	"isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
	"lstrip", "partition", "removeprefix", "removesuffix", "replace",
	"rfind", "rjust", "rpartition", "rsplit", "rstrip", "split",
	"splitlines", "startswith", "strip", "swapcase", "title", "upper",
	"zfill",
}

// compiled is a parsed and rewritten template, shared by every render of
// the same text.
type compiled struct {
	tpl    *exec.Template
	loader loaders.Loader
	// native is the single {{ expression }} when the template is exactly
	// one (surrounding whitespace allowed); nil for text templates.
	native *nodes.Output
	err    error
}

// cacheLimit and cacheMaxBytes bound the parse cache (entries, bytes of
// template text); when either is reached the cache starts over (templates
// come from playbooks, so this only trips on abuse).
const (
	cacheLimit    = 4096
	cacheMaxBytes = 32 << 20
)

type templateCache struct {
	m     sync.Map // string -> *compiled
	n     atomic.Int64
	bytes atomic.Int64
}

var cache atomic.Pointer[templateCache]

func init() { cache.Store(&templateCache{}) }

// compile returns the cached compilation of src, parsing it on first use.
// A template over Limits.MaxTemplateBytes is refused without being parsed
// or cached.
func compile(src string) *compiled {
	l := currentLimits.Load()
	if len(src) > l.MaxTemplateBytes {
		return &compiled{err: checkTemplateText(src, *l)}
	}
	c := cache.Load()
	if v, ok := c.m.Load(src); ok {
		return v.(*compiled)
	}
	cp := parse(src, *l)
	if v, loaded := c.m.LoadOrStore(src, cp); loaded {
		return v.(*compiled)
	}
	if c.n.Add(1) > cacheLimit || c.bytes.Add(int64(len(src))) > cacheMaxBytes {
		cache.CompareAndSwap(c, &templateCache{})
	}
	return cp
}

func parse(src string, l Limits) (cp *compiled) {
	cp = &compiled{loader: &sandboxLoader{src: src}}
	defer func() {
		if r := recover(); r != nil {
			cp.err = fmt.Errorf("template parser failed: %v", r)
		}
	}()
	if err := checkTemplateText(src, l); err != nil {
		cp.err = err
		return cp
	}
	env := &exec.Environment{
		Filters:           envFilters,
		Tests:             envTests,
		ControlStructures: envControlStructures,
		Methods:           envMethods,
		Context:           exec.EmptyContext(),
	}
	tpl, err := exec.NewTemplate(rootID, gonjaConfig, cp.loader, env)
	if err != nil {
		cp.err = cleanParseError(err, src)
		return cp
	}
	root := tpl.Root()
	rw := newRewriter()
	rw.template(root)
	if rw.err != nil {
		cp.err = rw.err
		return cp
	}
	cp.tpl = tpl
	cp.native = singleOutput(root)
	return cp
}

// cleanParseError drops gonja's "failed to parse template '<source>'"
// prefix (the caller's *Error already carries the source).
func cleanParseError(err error, src string) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	msg := strings.Replace(err.Error(), "failed to parse template '"+src+"': ", "", 1)
	return errors.New(msg)
}

// singleOutput returns the template's only {{ }} node when the template is
// that node plus whitespace and comments.
func singleOutput(root *nodes.Template) *nodes.Output {
	var out *nodes.Output
	for _, n := range root.Nodes {
		switch t := n.(type) {
		case *nodes.Output:
			if out != nil {
				return nil
			}
			out = t
		case *nodes.Data:
			if strings.TrimSpace(t.Data.Val) != "" {
				return nil
			}
		case *nodes.Comment:
		default:
			return nil
		}
	}
	return out
}

// newContext layers a fresh, writable context over the Scope: templates
// (set, for, method write-backs) write into the top layer only, never into
// the Scope map.
func newContext(s Scope, g *guard) *exec.Context {
	ctx := exec.NewContext(s).Inherit()
	ctx.Set(guardKey, g)
	return ctx
}

func environment(ctx *exec.Context) *exec.Environment {
	return &exec.Environment{
		Filters:           envFilters,
		Tests:             envTests,
		ControlStructures: envControlStructures,
		Methods:           envMethods,
		Context:           ctx,
	}
}

// recovered turns a panic inside gonja into the render's error: the
// guard's limit error for an abort, else a generic failure.
func recovered(g *guard, r any, what string) error {
	if a, ok := r.(abortRender); ok {
		if g.err == nil && a.err != nil {
			g.fail(a.err)
		}
		if g.err != nil {
			return g.err
		}
	}
	return fmt.Errorf("%s: %v", what, r)
}

// evalNative evaluates a single-expression template to a native value.
func (cp *compiled) evalNative(s Scope, g *guard) (result any, err error) {
	g.evalErr = nil
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, recovered(g, r, "template evaluation failed")
		}
	}()
	if err := g.tick(); err != nil {
		return nil, err
	}
	e := &exec.Evaluator{
		Config:      gonjaConfig,
		Environment: environment(newContext(s, g)),
		Loader:      cp.loader,
	}
	out := cp.native
	var v *exec.Value
	if out.Condition != nil {
		c := e.Eval(out.Condition)
		if c.IsError() {
			return nil, limitOr(g, valueErr(c))
		}
		switch {
		case c.IsTrue():
			v = e.Eval(out.Expression)
		case out.Alternative != nil:
			v = e.Eval(out.Alternative)
		default:
			return nil, nil
		}
	} else {
		v = e.Eval(out.Expression)
	}
	if v.IsError() {
		return nil, limitOr(g, valueErr(v))
	}
	if g.err != nil {
		// A limit is hard even when default() swallowed the error.
		return nil, g.err
	}
	// The expression went through noetl:check (rewriter), so the copy is
	// bounded by MaxValueBytes.
	return toNative(v, 0), nil
}

// renderText renders a template to a string.
func (cp *compiled) renderText(s Scope, g *guard) (result string, err error) {
	g.evalErr = nil
	defer func() {
		if r := recover(); r != nil {
			result, err = "", recovered(g, r, "template rendering failed")
		}
	}()
	if err := g.tick(); err != nil {
		return "", err
	}
	w := &limitWriter{g: g}
	r := exec.NewRenderer(environment(newContext(s, g)), w, gonjaConfig, cp.loader, cp.tpl)
	if err := r.Execute(); err != nil {
		return "", limitOr(g, err)
	}
	if g.err != nil {
		return "", g.err
	}
	return w.b.String(), nil
}

// limitOr turns the error gonja reports into the one to show: the guard's
// limit error (which wraps ErrLimit) first, then the filter error gonja's
// message is about, else gonja's message without its generic prefix.
func limitOr(g *guard, err error) error {
	if g.err != nil {
		return g.err
	}
	msg := err.Error()
	if g.evalErr != nil {
		raw := g.evalErr
		if u := errors.Unwrap(raw); u != nil && strings.HasPrefix(raw.Error(), "filter '") {
			raw = u
		}
		if strings.Contains(msg, raw.Error()) {
			return g.evalErr
		}
	}
	if v, ok := err.(*exec.Value); ok {
		return valueErr(v)
	}
	if strings.HasPrefix(msg, "unable to execute template: ") {
		return errors.New(strings.TrimPrefix(msg, "unable to execute template: "))
	}
	return err
}
